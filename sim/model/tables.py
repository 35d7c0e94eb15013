"""The model as the compiled kernels see it: typed, flat tables built once per model.

:func:`constants` turns a :class:`sim.model.Model` into the fields of
:class:`sim.kernels.equations.Tables` (the model keeps them as :attr:`~sim.model.Model.kernel`,
built with it), :func:`tables` into the record; the work arrays the kernels write are a
:class:`sim.kernels.equations.Data` apart (:func:`sim.kernels.equations.data`), one per
evaluator, so that a model can be shared by threads and processes.  Array types and ranks are the same for every model
(integers int64, reals float64, tuples over the body groups padded to
:data:`sim.kernels.equations.GROUPS`), so one compilation of the kernels serves every robot
with up to four body groups.
"""
import numpy as np

from sim.kernels.bodies import Group
from sim.kernels.equations import GROUPS, Tables
from sim.model.types import DENSE_UNION

KINDS = ("point", "dot", "ddot", "angle")


def _markers(model):
    """``marker_body, body_q, body_v, qf_idx, D, E, p0, R_BM, cols``.

    A marker's shape functions ``D``, ``E`` (3, n_f of its body) are nonzero only on the
    elastic coordinates of its node (6 of a beam's): the kernels keep those columns only, with
    their elastic index (-1: padding) and their column of ``v`` (-1: none).
    """
    n_m = len(model.markers)
    body_q = np.array([s for s, _ in model.q_index], dtype=np.int64)
    body_v = np.array([s for _, s in model.q_index], dtype=np.int64)
    used = [np.flatnonzero(np.any(m.D != 0, axis=0) | np.any(m.E != 0, axis=0)) if m.body >= 0
            else np.zeros(0, dtype=np.int64) for m in model.markers]
    nf = max((u.size for u in used), default=0)
    qf_idx = np.full((n_m, nf), -1, dtype=np.int64)
    cols = np.full((n_m, 6 + nf), -1, dtype=np.int64)
    D, E = np.zeros((n_m, 3, nf)), np.zeros((n_m, 3, nf))
    for k, m in enumerate(model.markers):
        if m.body < 0:
            continue
        u = used[k]
        qf_idx[k, :u.size] = u
        cols[k, :6] = body_v[m.body] + np.arange(6)
        cols[k, 6:6 + u.size] = body_v[m.body] + 6 + u
        D[k, :, :u.size], E[k, :, :u.size] = m.D[:, u], m.E[:, u]
    p0 = np.array([m.p_BM_B for m in model.markers], dtype=float).reshape(-1, 3)
    R_BM = np.array([m.R_BM for m in model.markers], dtype=float).reshape(-1, 3, 3)
    return (np.array([m.body for m in model.markers], dtype=np.int64), body_q, body_v, qf_idx, D, E, p0, R_BM,
            cols)


def _rows(model):
    """``kinds, row, mi, mj, ai, aj``: the primitives of all rows (joints, then actuators)."""
    present = [(k, model.rows[name]) for k, name in enumerate(KINDS) if model.rows[name]["row"].size]
    kinds = (np.concatenate([np.full(t["row"].size, k, dtype=np.int64) for k, t in present]) if present
             else np.zeros(0, dtype=np.int64))
    return (kinds, *(np.concatenate([t[f] for _, t in present]).astype(np.int64) if present
                     else np.zeros(0, dtype=np.int64) for f in ("row", "mi", "mj", "ai", "aj")))


def _sparse_T(group):
    """The nonzeros of a body group's second moments ``T`` (n_b, 3, 3, n+1, n+1) (the pattern of
    all the group's bodies, :attr:`sim.model.BodyGroup.second_index`): ``T_nz`` (nnz, 4), row
    ``(k, l, c, a)`` standing for ``T[:, l, k, c, a]``, ``T_val`` (n_b, nnz); and the
    antisymmetric parts of their elastic blocks that the velocity Jacobian reads, ``W_nz`` (nw,
    2) rows ``(f, e)`` and ``W_val`` (n_b, nw, 3): ``T[2, 1] - T[1, 2]``, ``T[0, 2] - T[2, 0]``,
    ``T[1, 0] - T[0, 1]`` at ``[f + 1, e + 1]`` where one of them is nonzero in some body."""
    index, value = group.second_index, np.asarray(group.second_value, dtype=float)
    n = group.n_f + 1
    Tnz = np.ascontiguousarray(index[:, [1, 0, 2, 3]], dtype=np.int64)
    if len(value) * 9 * n * n <= DENSE_UNION:       # small bodies: dense arrays, fewer numpy calls
        T = np.zeros((3, 3, len(value), n, n))
        T[index[:, 0], index[:, 1], :, index[:, 2], index[:, 3]] = value.T
        W = np.stack([T[2, 1] - T[1, 2], T[0, 2] - T[2, 0], T[1, 0] - T[0, 1]], axis=-1)[:, 1:, 1:]
        at = np.ascontiguousarray(np.argwhere(np.any(W != 0, axis=(0, 3))), dtype=np.int64)
        return Tnz, np.ascontiguousarray(value), at, np.ascontiguousarray(W[:, at[:, 0], at[:, 1]])
    # Each body's T[k, l] on the elastic places (a, c) where some (k, l) off the diagonal has one.
    k, l, a, c = index.T
    at = (k != l) & (a > 0) & (c > 0)
    places = np.sort(a[at] * n + c[at])
    places = places[np.r_[True, places[1:] != places[:-1]]] if places.size else places
    where = np.searchsorted(places, a[at] * n + c[at])
    T = np.zeros((3, 3, len(value), places.size))
    T[k[at], l[at], :, where] = value[:, at].T
    W = np.stack([T[2, 1] - T[1, 2], T[0, 2] - T[2, 0], T[1, 0] - T[0, 1]], axis=-1)     # (n_b, nw, 3)
    keep = np.any(W != 0, axis=(0, 2))
    Wnz = np.stack([places[keep] // n - 1, places[keep] % n - 1], axis=1).astype(np.int64)
    return Tnz, np.ascontiguousarray(value), Wnz, np.ascontiguousarray(W[:, keep])


# The fields of an empty group (no bodies), in field order.
_EMPTY = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros((0, 3, 1)),
          np.zeros((0, 4), dtype=np.int64), np.zeros((0, 0)), np.zeros((0, 2), dtype=np.int64), np.zeros((0, 0, 3)),
          np.zeros((0, 3, 3)),
          np.zeros((0, 3, 0)), np.zeros((0, 0, 0)), np.zeros((0, 0, 0)), np.zeros((0, 0), dtype=np.int64))


def _groups(model):
    """The ``groups`` field: a :class:`sim.kernels.bodies.Group` per body group, padded with
    empty ones to a multiple of :data:`sim.kernels.equations.GROUPS`."""
    dense = lambda g, f: np.ascontiguousarray(getattr(g, f), dtype=float)     # noqa: E731
    groups = [Group(g.q_start.astype(np.int64), g.v_start.astype(np.int64), dense(g, "mass"),
                    dense(g, "first_moment"), *_sparse_T(g),
                    *(dense(g, f) for f in ("rot_inertia", "rot_coupling", "mass_ff", "stiffness_ff")),
                    np.ascontiguousarray(g.ff, dtype=np.int64))
              for g in model.body_groups]
    return tuple(groups) + (Group(*_EMPTY),) * (-len(groups) % GROUPS)


def stretched(model):
    """Indices of the bodies with geometric stiffening."""
    return [b for b, body in enumerate(model.bodies) if body.stretch_k.size]


def _stretch(model):
    """The ``st_*`` fields: the stiffened bodies' elastic starts in ``q`` and ``v``, counts, and
    their per-element tables (:func:`sim.kernels.stretch.compact`, the bodies') padded to the most elements
    and coordinates per element."""
    bodies = stretched(model)
    tables = [(model.bodies[b].stretch_index, model.bodies[b].stretch_A, model.bodies[b].stretch_G) for b in bodies]
    n_e = max((model.bodies[b].stretch_k.size for b in bodies), default=0)
    m = max((t[0].shape[1] for t in tables), default=0)
    idx, A = np.zeros((len(bodies), n_e, m), dtype=np.int64), np.zeros((len(bodies), n_e, m))
    k, G = np.zeros((len(bodies), n_e)), np.zeros((len(bodies), n_e, m, m))
    for i, (b, (ix, a, g)) in enumerate(zip(bodies, tables)):
        e, f = ix.shape
        idx[i, :e, :f], A[i, :e, :f], k[i, :e], G[i, :e, :f, :f] = ix, a, model.bodies[b].stretch_k, g
    return (np.array([model.q_index[b][0] + 7 for b in bodies], dtype=np.int64),
            np.array([model.q_index[b][1] + 6 for b in bodies], dtype=np.int64),
            np.array([model.bodies[b].n_f for b in bodies], dtype=np.int64), idx, A, k, G)


def compliant(model):
    """Boolean (n_a,): actuators that are springs rather than constraints."""
    return np.array([a.stiffness is not None for a in model.actuators], dtype=bool)


def _lumped(model):
    """The ``sp_*``, ``ca_*`` and ``angle`` fields: springs (markers, stiffness, damping, home
    deflections), compliant actuators (indices, stiffness, damping), angle flags (n_a,)."""
    t = model.spring_tables if model.springs else dict(
        mi=np.zeros(0), mj=np.zeros(0), K=np.zeros((0, 6, 6)), C=np.zeros((0, 6, 6)), d_home=np.zeros((0, 6)))
    idx = np.flatnonzero(compliant(model)).astype(np.int64)
    acts = model.actuators
    return (np.asarray(t["mi"], dtype=np.int64), np.asarray(t["mj"], dtype=np.int64),
            *(np.ascontiguousarray(t[k], dtype=float).reshape(-1, *s) for k, s in
              (("K", (6, 6)), ("C", (6, 6)), ("d_home", (6,)))),
            idx, np.array([acts[a].stiffness for a in idx], dtype=float),
            np.array([acts[a].damping for a in idx], dtype=float),
            np.array([a.kind == "angle" for a in acts], dtype=bool))


def constants(model):
    """The fields of :class:`~sim.kernels.equations.Tables` for ``model`` (a tuple, in field
    order), their arrays read-only: no kernel and no caller writes the model."""
    out = (np.ascontiguousarray(model.gravity, dtype=float), _groups(model), *_markers(model), *_rows(model),
           *_stretch(model), *_lumped(model), int(model.rows["n_joint"]), int(model.n_v),
           np.array([b.n_f for b in model.bodies], dtype=np.int64))
    assert len(out) == len(Tables._fields)
    return _read_only(out)


def _read_only(x):
    """``x`` with every array in it (in tuples, at any depth) made read-only in place."""
    if isinstance(x, np.ndarray):
        x.setflags(write=False)
    elif isinstance(x, tuple):
        for y in x:
            _read_only(y)
    return x


def tables(model):
    """:class:`~sim.kernels.equations.Tables` of ``model`` (its arrays shared with
    :attr:`~sim.model.Model.kernel`)."""
    return Tables(*model.kernel)
