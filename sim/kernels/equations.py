r"""The equations of motion of a whole model at one state: one compiled call.

Two records, as MuJoCo MJX's ``Model`` and ``Data``: :class:`Tables` is the model as the
kernels see it (constant arrays and tuples of arrays, fields by name; built once per model,
:func:`sim.model.tables.tables`), :class:`Data` the markers' kinematics at the last state
evaluated (work arrays; :func:`data` allocates them, once per evaluator).  A kernel reads the
tables and writes the data (:func:`sim.kernels.markers.markers`), or reads both
(:func:`sim.kernels.rows.rows`, :func:`sim.kernels.pose.marker_terms`): both are its
arguments, so the order of the calls is the code's.  :func:`evaluate`
fills ``M``, ``Q``, the constraint rows and on request their velocity Jacobians and the tangent
stiffness; :func:`potential` gives the gravitational and elastic energy.  The public functions
(:mod:`sim.model.dynamics`, :mod:`sim.model.constraints`, :mod:`sim.model.kinematics`), the evaluator of the
solvers (:class:`sim.model.evaluator.Evaluator`) and the compiled time loops all evaluate through here,
the loops through its machine-code address (:func:`addresses`, :func:`function`) so that it is
compiled once.
"""
from typing import NamedTuple

import numpy as np
from numba import boolean, float64, njit, typeof, types, void
from numba.extending import intrinsic

from sim.kernels.bodies import group_terms, scratch_size as group_scratch
from sim.kernels.common import (FLUSH_RTOL, block_product, first_class, flush as flush_roundoff, pattern_product,
                                pointer, record_type, runtime)
from sim.kernels.frames import quat_R_into
from sim.kernels.markers import SCRATCH as MARKER_SCRATCH, markers
from sim.kernels.rows import rows
from sim.kernels.springs import actuator_springs, springs as lumped_springs
from sim.kernels.store import element_done, element_target, empty_store, values
from sim.kernels.stretch import stretch


class Tables(NamedTuple):
    """The model as the compiled evaluation reads it: constant tables (the fields of
    :attr:`sim.model.Model.kernel`), never written, in one record that the kernels are given
    by reference (:func:`sim.kernels.common.by_reference`) and compiled loops pass on as it is;
    what the kernels write goes to a :class:`Data`.

    ``groups``: the body groups (:class:`sim.model.BodyGroup`), each a
    :class:`sim.kernels.bodies.Group` (records in the tables' record), padded with empty ones to
    a multiple of :data:`GROUPS`: reference starts in ``q`` and ``v``, masses, first moments
    ``S`` (g, 3, n+1), second moments ``T`` (g, 3, 3, n+1, n+1) by their nonzeros and the
    antisymmetric parts of their elastic blocks (:func:`sim.model.tables._sparse_T`),
    ``J_rot``, ``G_rot``, ``M_ff``, ``K_ff`` and the columns of their rows' nonzeros ``ff``.
    Markers: ``marker_body`` (n_m,; -1 ground), ``body_q``, ``body_v`` (n_b,) each body's
    start in ``q`` and ``v``, ``qf_idx`` (n_m, nf) the elastic coordinates a marker's shape
    functions ``D``, ``E`` (n_m, 3, nf) act on (-1: padding), ``p0`` (n_m, 3), ``R_BM``
    (n_m, 3, 3), ``cols`` (n_m, 6 + nf) the columns of ``v`` of the local Jacobians (-1:
    none).  Rows: ``kinds`` (0 point, 1 dot, 2 ddot, 3 angle), first ``row``, markers
    ``mi``, ``mj`` and axes ``ai``, ``aj`` of each primitive, joints first, then actuators.
    ``st_*``: the bodies with geometric stiffening, padded to the most elements and
    coordinates per element (start of their elastic coordinates in ``q`` and ``v``, count,
    the coordinates of each element (n_s, e, m), elongation rows (n_s, e, m), ``EA/L`` (n_s,
    e; 0 on padding), slope matrices (n_s, e, m, m)); ``sp_*``: the lumped springs (markers,
    6x6 stiffness and damping, home deflections; :mod:`sim.kernels.springs`); ``ca_*``: the
    compliant actuators (indices, stiffness, damping); ``angle`` (n_a,): the actuators
    measured as angles; ``n_joint``: the joint rows before the actuator rows; ``n_v``: the
    velocity coordinates; ``body_nf``: each body's elastic coordinates.
    """

    gravity: np.ndarray
    groups: tuple
    marker_body: np.ndarray
    body_q: np.ndarray
    body_v: np.ndarray
    qf_idx: np.ndarray
    D: np.ndarray
    E: np.ndarray
    p0: np.ndarray
    R_BM: np.ndarray
    cols: np.ndarray
    kinds: np.ndarray
    row: np.ndarray
    mi: np.ndarray
    mj: np.ndarray
    ai: np.ndarray
    aj: np.ndarray
    st_q: np.ndarray
    st_v: np.ndarray
    st_nf: np.ndarray
    st_idx: np.ndarray
    st_A: np.ndarray
    st_k: np.ndarray
    st_G: np.ndarray
    sp_mi: np.ndarray
    sp_mj: np.ndarray
    sp_K: np.ndarray
    sp_C: np.ndarray
    sp_home: np.ndarray
    ca_idx: np.ndarray
    ca_k: np.ndarray
    ca_c: np.ndarray
    angle: np.ndarray
    n_joint: int
    n_v: int
    body_nf: np.ndarray


class Data(NamedTuple):
    """What the kernels write at a state ``(q, v)`` and then read: the kinematics of the
    ``n_m`` markers (:func:`sim.kernels.markers.markers`), on the ``n_loc`` columns of ``v``
    of each marker's local Jacobians (:attr:`Tables.cols`).  Given to the kernels by reference
    (:func:`sim.kernels.common.by_reference`), as the :class:`Tables`; one per evaluator
    (:func:`data`), so that threads with their own evaluators share the tables only.

    ``p`` (n_m, 3) origins, ``A`` (n_m, 3, 3) axes (columns, world); local Jacobians ``Jp``
    (n_m, 3, n_loc) of the origin, ``Ja`` (n_m, 3 axes, 3, n_loc) of the axes, ``Jw`` (n_m, 3,
    n_loc) of the angular velocity; rates ``pd`` (n_m, 3), ``Ad`` (n_m, 3, 3); velocity-quadratic
    accelerations ``pq``, ``Aq``, ``wq`` (of the angular velocity); their velocity derivatives
    ``dpq`` (n_m, 3, n_loc), ``dAq`` (n_m, 3, 3, n_loc) (written with ``with_G`` only).
    ``scratch`` (k,): the kernels' scratch (:func:`scratch_size`; each writes what it reads,
    one kernel at a time), so that an evaluation allocates none: in the step loop, where the
    data is borrowed (:func:`sim.kernels.common.borrowed`), its views cost no reference
    counts either.
    """

    p: np.ndarray
    A: np.ndarray
    Jp: np.ndarray
    Ja: np.ndarray
    Jw: np.ndarray
    pd: np.ndarray
    Ad: np.ndarray
    pq: np.ndarray
    Aq: np.ndarray
    wq: np.ndarray
    dpq: np.ndarray
    dAq: np.ndarray
    scratch: np.ndarray


def scratch_size(t):
    """The length of :attr:`Data.scratch` for the tables ``t`` (a :class:`Tables` or its
    fields): the most that :func:`sim.kernels.markers.markers` (:data:`sim.kernels.markers.SCRATCH`
    and nine per elastic coordinate of a marker), :func:`sim.kernels.bodies.group_terms`
    (:func:`sim.kernels.bodies.scratch_size`) or :func:`sim.kernels.stretch.stretch` (twice
    its elements' coordinates) uses."""
    groups, st_idx = t[Tables._fields.index("groups")], t[Tables._fields.index("st_idx")]
    nf = t[Tables._fields.index("D")].shape[2]
    return max([MARKER_SCRATCH + 9 * nf, 2 * st_idx.shape[2]] + [group_scratch(g.Mff.shape[1]) for g in groups])


def data(t):
    """A fresh :class:`Data` (zeros) for the tables ``t`` (a :class:`Tables` or its fields)."""
    n_m, n_loc = t[Tables._fields.index("cols")].shape
    return Data(np.zeros((n_m, 3)), np.zeros((n_m, 3, 3)), np.zeros((n_m, 3, n_loc)), np.zeros((n_m, 3, 3, n_loc)),
                np.zeros((n_m, 3, n_loc)), np.zeros((n_m, 3)), np.zeros((n_m, 3, 3)), np.zeros((n_m, 3)),
                np.zeros((n_m, 3, 3)), np.zeros((n_m, 3)), np.zeros((n_m, 3, n_loc)), np.zeros((n_m, 3, 3, n_loc)),
                np.zeros(scratch_size(t)))


# The numba type of every Data by reference (its arrays' types do not depend on the model).
DATA = record_type(Data(*(np.zeros((0,) * n) for n in (2, 3, 3, 4, 3, 2, 3, 2, 3, 2, 3, 4, 1))))


# Body groups: the tables' group tuples are padded to a multiple of this (a tuple's length is
# part of its type, so every robot with up to GROUPS groups of elastic sizes shares one
# compilation of every kernel; sim.model.tables).
GROUPS = 4
# mass_products: from this many velocity coordinates by the nonzeros of the bodies' blocks (a few
# hundred: the beams' M_ff then mostly zeros; below, the dense blocks' numbers kept as they were).
PATTERN_MIN = 200


@njit(cache=True, inline="always")
def _springs(t):
    """The lumped springs' table of :func:`sim.kernels.springs.springs` from the tables ``t``."""
    return t.sp_mi, t.sp_mj, t.sp_K, t.sp_C, t.sp_home


@njit(cache=True, inline="always")
def _frames(t, data):
    """The markers' state of :func:`sim.kernels.springs.springs` from the tables ``t`` and the
    markers' kinematics ``data``."""
    return t.cols, data.p, data.A, data.Jp, data.Ja, data.Jw


@njit(cache=True, nogil=True)
def evaluate(q, v, t, data, out, targets, flags):
    """The equations at ``(q, v)`` into the arrays ``out = (M, Q, Q0, phi, J, gamma, G, Gg,
    Kt)`` and the markers' kinematics into ``data``; ``t``: :class:`Tables`, ``data``:
    :class:`Data`, both by reference (:func:`~sim.kernels.common.by_reference`);
    ``flags = (with_G, with_K, flush, bodies)``.

    ``M`` (n_v, n_v), ``Q`` (n_v,): mass matrix and forces of the bodies, the geometric
    stiffening and the lumped springs, and of the compliant actuators pulled towards
    ``targets`` (n_a,; size 0: no actuator forces); ``Q0`` (n_v,; size 0: not wanted) the
    forces at rest, ``Q(q, 0)``, from the same pass; ``phi``, ``J``, ``gamma`` (n_rows, ...):
    the constraint rows, joints then actuators (:func:`rows`).  With ``with_G``, also ``G =
    dQ/dv`` (n_v, n_v) and ``Gg = d gamma/dv``; with ``with_K`` the tangent stiffness ``Kt``
    (n_v, n_v) of the stiffening and the lumped compliance.  ``flush``: flush ``M``
    (:func:`sim.linalg.flush`) for the LAPACK calls it goes to (the Newton residual, products
    in compiled loops only, skips it: a third of the evaluation on the larger models).
    Without ``bodies``, the markers and constraint rows only (``M``, ``Q`` untouched).
    ``M``, ``G`` and ``Kt`` all arrays, or all :class:`sim.kernels.store.Store` records (the
    transient's block path; :func:`store_address`): their entries on the stores' structure.
    """
    M, Q, Q0, phi, J, gamma, G, Gg, Kt = out
    with_G, with_K, flush, bodies = flags
    if bodies:
        # Each group a record: one reference count where it is read (a named tuple's arrays
        # would each have theirs raised, a third of a small model's evaluation).
        groups, gravity = t.groups, t.gravity
        for g in range(len(groups)):
            group = groups[g]
            if group.q_start.size:      # not padding
                group_terms(q, v, gravity, group, M, Q, Q0, G, with_G, data.scratch)
        for b in range(t.st_q.size):
            n, i = t.st_nf[b], t.st_v[b]
            tangent = element_target(Kt, M, b, n, with_K)
            force = np.zeros(n) if Q0.size else Q[i:i + n]     # velocity-free: also a force at rest
            stretch(q[t.st_q[b]:t.st_q[b] + n], t.st_idx[b], t.st_A[b], t.st_k[b], t.st_G[b], force, tangent,
                    with_K, data.scratch)
            if Q0.size:
                Q[i:i + n] += force
                Q0[i:i + n] += force
            if with_K:
                element_done(Kt, i, n, tangent)
        if flush:
            flush_roundoff(values(M), FLUSH_RTOL)
    markers(q, v, t, data, with_G)
    rows(t, data, phi, J, gamma, Gg, with_G)
    if bodies and t.sp_mi.size:
        lumped_springs(_springs(t), _frames(t, data), v, Q, Q0, G, Kt, with_G, with_K)
    if bodies and t.ca_idx.size and targets.size:
        nj = t.n_joint
        actuator_springs((t.ca_idx, t.ca_k, t.ca_c, t.angle), (phi[nj:], J[nj:]), targets, v, (Q, Q0, G, Kt),
                         (with_G, with_K))


_VEC, _MAT = float64[::1], float64[:, ::1]


def _signature(kind):
    """:func:`evaluate`'s signature for tables of numba type ``kind``."""
    return void(_VEC, _VEC, kind, DATA, types.Tuple((_MAT, _VEC, _VEC, _VEC, _MAT, _VEC, _MAT, _MAT, _MAT)), _VEC,
                types.UniTuple(boolean, 4))


# The numba type of a Store by reference (its arrays' types do not depend on the model).
STORE = record_type(empty_store())


def _store_signature(kind):
    """:func:`evaluate`'s signature for tables of numba type ``kind`` writing ``M``, ``G`` and
    ``Kt`` on :class:`sim.kernels.store.Store` records."""
    return void(_VEC, _VEC, kind, DATA, types.Tuple((STORE, _VEC, _VEC, _VEC, _MAT, _VEC, STORE, _MAT, STORE)), _VEC,
                types.UniTuple(boolean, 4))


def store_address(t):
    """The machine-code address of :func:`evaluate` on stores (:func:`_store_signature`) for
    tables typed like ``t`` (as :func:`addresses`; compiled only for the models that need it,
    the transient's block path), for :func:`store_function`."""
    kind = t if isinstance(t, types.Type) else typeof(t)
    return pointer(evaluate, _store_signature(kind))


@intrinsic
def store_function(typingctx, address, t):
    """In compiled code: :func:`evaluate` on stores for the tables ``t`` from its ``address``
    (:func:`store_address`)."""
    kind = types.FunctionType(_store_signature(t))
    return kind(types.int64, t), first_class(kind)


def _potential_signature(kind):
    """:func:`potential`'s signature for tables of numba type ``kind``."""
    return types.UniTuple(float64, 2)(_VEC, kind, DATA)


# The numba type of the value of :func:`addresses` (:func:`sim.kernels.common.compile_for`).
ADDRESSES = types.Array(types.int64, 1, "C")


def addresses(t):
    """The machine-code addresses of :func:`evaluate` and :func:`potential` compiled for
    tables typed like ``t`` (:class:`Tables` by reference, or its numba type: then nothing
    needs a value; arrays C-contiguous float64, flags booleans) and a :class:`Data` by
    reference (its type :data:`DATA`): int64 (2,), for compiled loops
    to call through :func:`function` and :func:`potential_function`.

    A compiled loop that called them directly would link the whole evaluation (bodies,
    markers, rows, springs, stiffening) into its own module and optimise and emit it again,
    seconds per loop on a cold start; a call through an address links nothing, and one
    machine-code copy serves Python and every loop.
    """
    kind = t if isinstance(t, types.Type) else typeof(t)
    return np.array([pointer(evaluate, _signature(kind)), pointer(potential, _potential_signature(kind))],
                    dtype=np.int64)


@intrinsic
def function(typingctx, address, t):
    """In compiled code: :func:`evaluate` for the tables ``t`` as a first-class function, from
    its ``address`` (:func:`addresses`): ``function(f[0], t)(q, v, t, data, out, targets,
    flags)``."""
    kind = types.FunctionType(_signature(t))
    return kind(types.int64, t), first_class(kind)


@intrinsic
def potential_function(typingctx, address, t):
    """In compiled code: :func:`potential` for the tables ``t`` as a first-class function, from
    its ``address`` (:func:`addresses`): ``potential_function(f[1], t)(q, t, data)``."""
    kind = types.FunctionType(_potential_signature(t))
    return kind(types.int64, t), first_class(kind)


@njit(cache=True)
def mass_products(qs, t, data, f, X, out):
    """``out[k] = M(qs[k]) X[k]`` (n_v, p) at the configurations ``qs[k]`` (m, n_q), ``X`` (m,
    n_v, p), through the evaluation's address ``f`` (:func:`addresses`; the markers into
    ``data``), ``M`` not flushed and
    multiplied body by body (block diagonal): one call from Python for many configurations
    (each call from Python unboxes the whole of ``t``), no stack of matrices.  From
    :data:`PATTERN_MIN` coordinates by the nonzeros of the bodies' blocks (the groups'
    ``ff``), below by their dense blocks (BLAS; the same numbers as before that path)."""
    n_v = X.shape[1]
    n_b = t.body_v.size
    bounds = np.empty(n_b + 1, dtype=np.int64)
    bounds[:n_b] = t.body_v
    bounds[n_b] = n_v
    M = np.zeros((n_v, n_v))
    v = np.zeros(n_v)
    Q = np.zeros(n_v)
    phi, gamma = np.zeros(3 * t.row.size), np.zeros(3 * t.row.size)    # a primitive has at most 3 rows
    J = np.zeros((phi.size, n_v))
    empty = np.zeros((0, 0))
    for k in range(qs.shape[0]):
        J[:] = 0.0
        function(f[0], t)(qs[k], v, t, data, (M, Q, v[:0], phi, J, gamma, empty, empty, empty), v[:0],
                          (runtime(False), runtime(False), runtime(False), runtime(True)))
        if n_v < PATTERN_MIN:
            out[k] = block_product(M, bounds, X[k])
            continue
        groups = t.groups
        for g in range(len(groups)):
            for v0 in groups[g].v_start:
                pattern_product(M, v0, groups[g].ff, 0, X[k], out[k])


@njit(cache=True, nogil=True)
def inverse_terms(motion, t, data, f, rigid, out):
    """What the inverse dynamics needs of each sample ``k`` of a rigid motion ``motion = (qs,
    vs, accs)`` (m, n_q), (m, n_v), (m, n_v), through the evaluation's addresses ``f``
    (:func:`addresses`; the markers into ``data``), into ``out = (Jr, rhs, p, A, T, V)``:
    the constraint rows' Jacobian (joints, then every actuator) on the reference coordinates
    ``rigid`` (n_r,), ``Jr[k]`` (n_rows, n_r); ``rhs[k] = (Q - M a)[rigid]``; the markers'
    origins and axes ``p[k]`` (n_m, 3), ``A[k]`` (n_m, 3, 3); the kinetic energy ``T[k] =
    v M v / 2`` and the potential ``V[k]`` (:func:`potential`).  One call from Python for
    the whole motion (``M`` flushed, as :meth:`sim.model.evaluator.Evaluator.evaluate`'s)."""
    qs, vs, accs = motion
    Jr, rhs, p, A, T, V = out
    n_v, n_rows = vs.shape[1], Jr.shape[1]
    M, Q = np.zeros((n_v, n_v)), np.zeros(n_v)
    phi, J, gamma = np.zeros(n_rows), np.zeros((n_rows, n_v)), np.zeros(n_rows)
    empty, none = np.zeros((0, 0)), np.zeros(0)
    for k in range(qs.shape[0]):
        M[:] = 0.0
        Q[:] = 0.0
        phi[:] = 0.0
        J[:] = 0.0
        gamma[:] = 0.0
        function(f[0], t)(qs[k], vs[k], t, data, (M, Q, none, phi, J, gamma, empty, empty, empty), none,
                          (runtime(False), runtime(False), runtime(True), runtime(True)))
        Ma = M @ accs[k]
        for i in range(rigid.size):
            rhs[k, i] = Q[rigid[i]] - Ma[rigid[i]]
            for r in range(n_rows):
                Jr[k, r, i] = J[r, rigid[i]]
        p[k] = data.p
        A[k] = data.A
        T[k] = 0.5 * (vs[k] @ (M @ vs[k]))
        gravity, elastic = potential_function(f[1], t)(qs[k], t, data)      # overwrites the markers with springs
        V[k] = gravity + elastic


@njit(cache=True)
def potential(q, t, data):
    """Gravitational and elastic energy [J] (see :func:`sim.model.dynamics.potential`): bodies,
    geometric stiffening and lumped springs; ``t``: :class:`Tables`, ``data``: :class:`Data`,
    by reference (with springs, the markers' kinematics at ``q``, zero velocity, are written
    into ``data``)."""
    gravity, groups = t.gravity, t.groups
    R = np.empty((3, 3))
    grav = 0.0
    elastic = 0.0
    for g in range(len(groups)):
        S, K, ff, mass, starts = groups[g].S, groups[g].Kff, groups[g].ff, groups[g].mass, groups[g].q_start
        n = K.shape[1]
        for b in range(starts.size):
            qs = starts[b]
            quat_R_into(q, qs + 3, R)
            for k in range(3):
                s_k = S[b, k, 0]
                for f in range(n):
                    s_k += S[b, k, f + 1] * q[qs + 7 + f]
                Rs = 0.0
                for i in range(3):
                    Rs += R[i, k] * gravity[i]
                grav -= s_k * Rs
            for i in range(3):
                grav -= mass[b] * q[qs + i] * gravity[i]
            for f in range(n):
                acc = 0.0
                for j in range(ff.shape[1]):     # K_ff by its rows' nonzeros (sim.model.sparse_rows)
                    if ff[f, j] < 0:
                        break
                    acc += K[b, f, j] * q[qs + 7 + ff[f, j]]
                elastic += 0.5 * q[qs + 7 + f] * acc
    scratch = np.zeros(t.body_nf.max() if t.body_nf.size else 0)
    for b in range(t.st_q.size):
        n = t.st_nf[b]
        elastic += stretch(q[t.st_q[b]:t.st_q[b] + n], t.st_idx[b], t.st_A[b], t.st_k[b], t.st_G[b], scratch[:n], R,
                           runtime(False), data.scratch)
    if t.sp_mi.size:
        v = np.zeros(t.n_v)
        markers(q, v, t, data, runtime(False))
        none = np.zeros((0, 0))
        elastic += lumped_springs(_springs(t), _frames(t, data), v, v.copy(), v[:0], none, none, runtime(False),
                                  runtime(False))
    return grav, elastic
