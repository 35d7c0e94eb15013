r"""The lowest modes and the statics of a frozen robot of any stiffness, by its saddle-point form.

The general modes solver (:func:`sim.solvers.subspace._general`: lumped springs, compliant
drives, geometric stiffening, free motions) reduces the pencil to a basis of the constrained
motions and solves it densely: cubic in the elastic coordinates.  Here the constraints stay
rows of the saddle-point matrix

    A = [[K + rho N_f N_f^T, J^T],
         [J,                 0  ]],

whose structure is the transient's iteration matrix's (each flexible body's elastic block
banded, the joints' rows on their markers' columns): :func:`sim.solvers.blocks.factor`
factorises it by the bodies' band LU and a Schur complement on the border, linear in the
coordinates.  ``N_f`` (n_v, n_f) are the free motions (reference motions the rows leave free
and no stiffness holds: a strut's spin), M-orthonormal; their penalty ``rho N_f N_f^T`` lives
on the reference coordinates (the border) and makes ``A`` regular.  For a load ``f`` with
``N_f^T f = 0``, ``A (u, mu) = (f, 0)`` gives ``N_f^T u = 0`` (``K N_f = 0``) and so
``K u + J^T mu = f``: the constrained static displacement, free of the free motions.

Subspace iteration then runs in ``v``: ``Y = A^-1 (M X)`` with ``X`` M-orthogonal to ``N_f``
(so ``N_f^T M X = 0``), ``Y`` made M-orthogonal to them again (adding free motions changes
neither ``K Y`` nor ``J Y``), and Rayleigh-Ritz with ``Y^T K Y = Y^T M X``
(:func:`sim.solvers.subspace._ritz`).  The statics are those of inertia relief: the load's
part that would accelerate the free motions taken off, the displacement M-orthogonal to them,
as :func:`~sim.solvers.subspace._general` gives them.
"""
import numpy as np
from numba import njit

from sim.solvers.blocks import blocks, factor, interior_ranges, pattern, positions, solve
from sim.solvers.subspace import EXTRA_MAX, GAP, START_GUARD, Saddle, _columns, _ritz, quasi_random, residual

SADDLE_MIN = 300      # velocity coordinates from which the general solver's structures take this path (the
#                       6-PSS: as fast at 258, 2.3x faster at 366, 8.4x at 1230; slower at 186)
START_ITER = 80       # sweeps of a fresh start (from a fixed quasi-random block of r + EXTRA_MAX + START_GUARD)


def structure(ev, keep):
    """The :class:`sim.solvers.subspace.Saddle` of the model of the evaluator ``ev`` with the evaluation's rows
    ``keep`` (their indices) locked, or None where no flexible body has an interior (nothing
    to gain from the blocks).  No (n_v, n_v) array: the bodies' stiffness goes onto the
    structure body by body."""
    model, t, n_v = ev.model, ev.tables, ev.n_v
    m = n_v + keep.size
    ranges = interior_ranges(t.body_v, t.body_nf)
    rigid = np.asarray(model.v_rigid, dtype=np.int64)
    penalty = np.stack([np.repeat(rigid, rigid.size), np.tile(rigid, rigid.size)])    # on the border
    pat = pattern(t, np.asarray(keep, dtype=np.int64), np.zeros((0, 0)), m, ranges, penalty)
    if not pat.ptr.size:
        return None
    at = positions(pat)
    K_body, diagonal = np.zeros(pat.rows.size), []
    for b, body in enumerate(model.bodies):
        if body.n_f:
            i, j, v = body.stiffness_ff.entries()
            v0 = model.q_index[b][1] + 6
            K_body[at(v0 + i, v0 + j)] = v
            d = np.zeros(body.n_f)
            d[i[i == j]] = v[i == j]
            diagonal.append(d)
    rho = float(np.mean(np.concatenate(diagonal))) if diagonal else 0.0
    nnz = pat.rows.size
    return Saddle(pat, np.repeat(np.arange(m), np.diff(pat.ptr)), blocks(t.body_v, t.body_nf, m, mode="block"),
                  np.zeros(m, dtype=np.int32), K_body, np.zeros(nnz), np.zeros(nnz), rho,
                  np.ascontiguousarray(at(rigid[:, None], rigid[None, :])))


@njit(cache=True)
def _product(sad, values, X):
    """``A X`` (n_v, p) for ``X`` (n_v, p) and ``A`` the velocity coordinates' part of the
    matrix held by its ``values`` (nnz,) on the structure of ``sad`` (the mass ``sad.M``)."""
    ptr, rows = sad.pat.ptr, sad.pat.rows
    n_v = X.shape[0]
    Y = np.zeros(X.shape)
    for j in range(n_v):
        for e in range(ptr[j], ptr[j + 1]):
            i = rows[e]
            if i >= n_v:     # rows ascending: the constraint unknowns' follow
                break
            a = values[e]
            if a != 0.0:
                for k in range(X.shape[1]):
                    Y[i, k] += a * X[j, k]
    return Y


@njit(cache=True)
def _gather(M, Kt, sad):
    """``M`` and ``Kt`` (n_v, n_v; ``Kt`` empty: none) onto the structure of ``sad``
    (``sad.M``, ``sad.K_t``)."""
    ptr, rows = sad.pat.ptr, sad.pat.rows
    n_v = M.shape[0]
    for j in range(n_v):
        for e in range(ptr[j], ptr[j + 1]):
            i = rows[e]
            if i >= n_v:
                break
            sad.M[e] = M[i, j]
            sad.K_t[e] = Kt[i, j] if Kt.size else 0.0


@njit(cache=True)
def _free(sad, J, rigid, n_free, null_rtol):
    """The ``n_free`` free motions (n_v, n_f), M-orthonormal: of the reference motions the rows
    leave free (the null space of ``J``'s reference columns, elastic coordinates at rest),
    those of least energy under ``K_t`` (the bodies' stiffness holds no reference motion); at
    most as many as the rows leave (as :func:`sim.solvers.subspace._elastic_basis`), none
    where their mass is singular (then ``A`` is too, and the general solver takes over).
    ``M`` and ``K_t`` on the structure of ``sad``."""
    n_v = J.shape[1]
    if n_free == 0:
        return np.zeros((n_v, 0))
    n_r = rigid.size
    rank = 0
    Vt = np.eye(n_r)
    if J.shape[0]:
        Jr = np.empty((J.shape[0], n_r))
        for i in range(J.shape[0]):
            for k in range(n_r):
                Jr[i, k] = J[i, rigid[k]]
        _, s, Vt = np.linalg.svd(Jr)
        for k in range(s.size):
            rank += s[k] > null_rtol * s[0]
    n_z = n_r - rank
    Z = np.empty((n_r, n_z))
    for i in range(n_r):
        for k in range(n_z):
            Z[i, k] = Vt[rank + k, i]
    Krr = np.empty((n_r, n_r))
    for i in range(n_r):
        for k in range(n_r):
            Krr[i, k] = sad.K_t[sad.rr[i, k]]
    Kz = Z.T @ Krr @ Z
    _, W = np.linalg.eigh(0.5 * (Kz + Kz.T))
    Zf = Z @ _columns(W, min(n_free, n_z))
    Nf = np.zeros((n_v, Zf.shape[1]))
    for i in range(n_r):
        for k in range(Zf.shape[1]):
            Nf[rigid[i], k] = Zf[i, k]
    try:
        L = np.linalg.cholesky(Nf.T @ _product(sad, sad.M, Nf))
    except Exception:   # noqa: BLE001 (numba: no exception classes)
        return np.zeros((n_v, 0))
    return np.ascontiguousarray(np.linalg.solve(L, Nf.T).T)


@njit(cache=True)
def _deflate(Nf, MNf, Y):
    """In place: ``Y - N_f (M N_f)^T Y``, M-orthogonal to the free motions."""
    if Nf.shape[1]:
        Y -= Nf @ (MNf.T @ Y)


@njit(cache=True)
def _solve_columns(sad, B, n_v):
    """``A^-1 [B; 0]``'s first ``n_v`` rows (n_v, p) for ``B`` (n_v, p)."""
    m = sad.pat.ptr.size - 1
    z = np.empty(m)
    Y = np.empty(B.shape)
    none = np.zeros((0, 0))
    for j in range(B.shape[1]):
        for i in range(m):
            z[i] = B[i, j] if i < n_v else 0.0
        solve(none, sad.piv, sad.blk, z)
        for i in range(n_v):
            Y[i, j] = z[i]
    return Y


@njit(cache=True)
def _sweeps(sad, Nf, MNf, X, r, tol, max_iter):
    """At most ``max_iter`` sweeps from ``X`` (n_v, q) until the first ``r`` pairs' relative
    residuals are below ``tol``: Ritz values (q,), vectors, ``M`` times them and the sweeps
    done (0: not converged)."""
    n_v = X.shape[0]
    _deflate(Nf, MNf, X)
    MX = _product(sad, sad.M, X)
    lam = np.zeros(0)
    for sweep in range(1, max_iter + 1):
        Y = _solve_columns(sad, MX, n_v)
        _deflate(Nf, MNf, Y)
        MY = _product(sad, sad.M, Y)
        try:
            lam, Z = _ritz(MX, MY, Y)        # K Y = M X on the constrained motions
        except Exception:   # noqa: BLE001 (numba: no exception classes; A singular: redundant rows)
            return np.zeros(0), X, MX, 0
        X = Y @ Z
        KX = MX @ _columns(Z, r)
        MX = MY @ Z
        if residual(KX, MX, lam, r) <= tol:
            return lam, X, MX, sweep
    return lam, X, MX, 0


@njit(cache=True)
def saddle_modes(J, layout, memory, settings, max_iter, F):
    """The lowest ``r`` modes of the frozen robot and its static displacements under ``F``
    (n_v, m), as :func:`sim.solvers.subspace._general` gives them (module docstring).

    ``J`` (n_c, n_v) the locked rows (those of the layout's ``saddle`` structure, in its
    order); ``layout`` (:class:`sim.solvers.subspace.Layout`, the general solver's): the
    coordinates, ``n_free`` and the :class:`sim.solvers.subspace.Saddle`, which holds the
    bodies' stiffness and this structure's mass and tangent stiffness; ``memory = (X,
    X_prev)`` the last two calls' subspaces (n_v, p'; ``X`` extrapolated as ``_general`` does;
    else empty: a fresh start, a wider block whose subspace is then kept past the wanted
    modes' cluster, :data:`sim.solvers.subspace.GAP`), ``settings`` the tracker's
    (:class:`sim.solvers.subspace.Settings`), at most ``max_iter`` sweeps from the last
    subspace (then a fresh start).

    Returns ``lam`` (p,), ``shapes``, ``mass_shapes`` (n_v, r), the subspace ``X``, the
    sweeps (-2: ``A`` not factorised or no convergence: nothing computed, for the dense
    solver to take) and the statics (n_v, m).
    """
    rigid, sad = layout.rigid, layout.saddle
    r, tol, _, null_rtol, _ = settings
    n_v = F.shape[0]
    none = np.zeros((n_v, 0))
    Nf = _free(sad, J, rigid, layout.n_free, null_rtol)
    MNf = _product(sad, sad.M, Nf)
    pat, cols = sad.pat, sad.cols
    rows = pat.rows
    for e in range(rows.size):
        i, j = rows[e], cols[e]
        if i < n_v and j < n_v:
            a = sad.K_body[e] + sad.K_t[e]
            for k in range(Nf.shape[1]):
                a += sad.rho * Nf[i, k] * Nf[j, k]
        elif j < n_v:
            a = J[i - n_v, j]
        elif i < n_v:
            a = J[j - n_v, i]
        else:
            a = 0.0
        pat.known[e] = a
        pat.values[e] = 0.0
    ok, _, _ = factor(pat, sad.blk, sad.piv)
    if not ok:
        return np.zeros(0), none, none, np.zeros((0, 0)), -2, np.zeros((n_v, F.shape[1]))
    n = n_v - J.shape[0] - Nf.shape[1]      # (at most: the constrained motions less the free ones)
    p = min(n, 2 * r, r + 8)
    X, X_prev = memory
    lam, done = np.zeros(0), 0
    MX = X
    if X.shape[0] == n_v and X.shape[1] >= p:   # from the last subspace, extrapolated
        if X_prev.shape[0] == n_v and X_prev.shape[1] == X.shape[1]:
            X = 2.0 * X - X_prev @ (X_prev.T @ _product(sad, sad.M, X))
        else:
            X = X.copy()
        lam, X, MX, done = _sweeps(sad, Nf, MNf, X, r, tol, max_iter)
    if done == 0:    # a fresh start: a wider fixed quasi-random block (clusters of modes)
        q = min(n, r + EXTRA_MAX + START_GUARD)
        X = quasi_random(n_v, q)
        lam, X, MX, done = _sweeps(sad, Nf, MNf, X, r, tol, START_ITER)
        if done == 0:
            return np.zeros(0), none, none, np.zeros((0, 0)), -2, np.zeros((n_v, F.shape[1]))
        while p < min(q, r + EXTRA_MAX) and lam[p] < GAP * lam[r - 1]:     # past the cluster
            p += 1
        lam, X, MX = lam[:p].copy(), _columns(X, p), _columns(MX, p)
    G = F.copy()
    if Nf.shape[1]:
        G -= MNf @ (Nf.T @ F)                # inertia relief: the free motions' share taken off
    U = _solve_columns(sad, G, n_v)
    _deflate(Nf, MNf, U)
    return lam, _columns(X, r), _columns(MX, r), X, done, U


@njit(cache=True, nogil=True)
def modes(mass, Kt, J, layout, memory, settings, max_iter, F):
    """:func:`saddle_modes` as a modes solver (:data:`sim.solvers.subspace.SOLVER`'s arguments,
    the last two subspaces of ``memory``): ``M`` and ``Kt`` already on the structure where
    ``mass.dense`` is empty (the frames' evaluation on stores, :meth:`sim.solvers.subspace.Tracker.saddle_stores`),
    else read from the dense ``mass.dense`` and ``Kt`` at its entries."""
    if mass.dense.size:
        _gather(mass.dense, Kt, layout.saddle)
    return saddle_modes(J, layout, (memory[1], memory[2]), settings, max_iter, F)
