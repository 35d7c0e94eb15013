r"""Lowest modes along a path of nearby configurations: warm-started subspace iteration.

For KED (:mod:`sim.solvers.ked`) the modes are needed at hundreds of instants of one motion, a few
milliseconds apart.  When the structure's only stiffness is that of the flexible bodies
(``K`` nonzero on the elastic coordinates only, constant: no lumped springs, compliant drives
or geometric stiffening) and the locked constraint rows determine the reference coordinates
(``J = [J_r, J_e]`` with ``J_r`` square and regular), the constrained motions are

    v = N x,   N = [G; 1],   G = -J_r^{-1} J_e          (rows: reference, elastic),

with ``x`` the elastic coordinates themselves (the basis of
:func:`sim.linalg.partitioned_null_space`), so ``N^T K N = K_ee`` is constant and only the
reduced mass ``N^T M N`` changes along the motion.  The pencil ``(K_ee, N^T M N)`` is solved by
subspace iteration (Bathe): ``p = min(2r, r + 8)`` vectors, ``X <- K_ee^{-1} (N^T M N) X``
followed by a Rayleigh-Ritz projection, until the relative residuals of the ``r`` wanted pairs,
``|K x - lambda M_n x| / |K x|``, are below :data:`RESIDUAL_TOL`.  The subspaces of the
two previous instants, extrapolated linearly, start the next (the coordinates ``x`` keep
their meaning along the motion; the previous Ritz vectors are first aligned with the last,
``X_prev C``, ``C = X_prev^T M_n X``): on the 3-RRRU circle with 512 intervals one sweep
suffices.  A fresh start takes the tracker's :attr:`Tracker.seed` (the Ritz vectors of another
configuration of the motion; 3-4 sweeps there), or a dense eigensolve of the reduced pencil
where there is none or the iteration does not converge in :data:`SEED_ITER` (from a seed) or
:data:`MAX_ITER` sweeps.  Mode ``i`` converges like ``(lambda_i / lambda_{p+1})^k``.

What one sweep costs is kept small by the structure: ``K_ee`` is block diagonal over the
flexible bodies (so is its inverse), ``M`` over all bodies (the reduced mass needs only the
joints' elastic columns of ``G``, 18 of 72 on the 3-RRRU, and ``J_r`` is factored by the
sparse LU of :func:`sim.linalg.sparse_lu`), and ``K Y = M_n X`` is known, so a sweep makes one
product with ``M_n``.

Accuracy: the eigenvalues agree with a dense solve to ~``RESIDUAL_TOL^2`` (relative), a
shape to about ``RESIDUAL_TOL`` over its relative gap to the other eigenvalues.  At
``RESIDUAL_TOL = 1e-6`` the KED response differs from the one of dense eigensolves by 5e-7 of
its peak (tests: within 1e-5), far below the piecewise-constant approximation of the KED
itself (on the 3-RRRU circle its peaks change by up to 4 % from 512 to 1024 intervals).

References
----------
K.-J. Bathe, *Finite Element Procedures*, 2nd ed., §11.6 (subspace iteration).
"""
import contextlib

import numpy as np
from numba import njit

from sim.model import dynamics
from sim.errors import signals_deferred
from sim.kernels.common import block_product
from sim.linalg import sparse_solve
from sim.model.tables import compliant, stretched

RESIDUAL_TOL = 1e-6    # relative residual of the wanted pairs at convergence
MAX_ITER = 40          # sweeps before the dense solve takes over
SEED_ITER = 8          # the same from a seed (Tracker.seed), a subspace of another configuration
BASIS_MAX = 1e4        # largest |G_ij| accepted: beyond, J_r is nearly singular (see Tracker.modes)


@njit(cache=True)
def _dense(K_inv_chol, Mn, p):
    """The ``p`` lowest eigenpairs of ``(K, Mn)`` by a dense solve, ``K^-1 = L^-T L^-1`` with
    ``L^-1 = K_inv_chol``: the largest of ``L^-1 Mn L^-T y = y / lambda``.  Mass-normalised."""
    S = K_inv_chol @ Mn @ K_inv_chol.T
    mu, Y = np.linalg.eigh(0.5 * (S + S.T))
    n = mu.size
    lam = np.empty(p)
    X = np.empty((Mn.shape[0], p))
    for k in range(p):
        j = n - 1 - k
        lam[k] = 1.0 / mu[j]
        X[:, k] = (K_inv_chol.T @ np.ascontiguousarray(Y[:, j])) / np.sqrt(mu[j])
    return lam, X


@njit(cache=True)
def _ritz(KY, MY, Y):
    """Rayleigh-Ritz on the columns of ``Y`` with ``K Y``, ``Mn Y`` at hand: eigenvalues
    (ascending) and coefficients ``Z`` with ``(Y Z)^T Mn (Y Z) = 1``.  The p x p Cholesky
    reduction in loops: LAPACK's call overhead exceeds its work at this size."""
    Kr = Y.T @ KY
    Mr = Y.T @ MY
    p = Kr.shape[0]
    L = np.linalg.cholesky(0.5 * (Mr + Mr.T))
    # A = L^-1 Kr L^-T by two triangular sweeps, B = L^-1 Kr first.
    B = np.empty((p, p))
    for j in range(p):
        for i in range(p):
            acc = Kr[i, j]
            for k in range(i):
                acc -= L[i, k] * B[k, j]
            B[i, j] = acc / L[i, i]
    A = np.empty((p, p))
    for j in range(p):     # A^T = L^-1 B^T, A symmetric
        for i in range(p):
            acc = B[j, i]
            for k in range(i):
                acc -= L[i, k] * A[k, j]
            A[i, j] = acc / L[i, i]
    lam, W = np.linalg.eigh(0.5 * (A + A.T))
    Z = np.empty((p, p))   # Z = L^-T W
    for j in range(p):
        for i in range(p - 1, -1, -1):
            acc = W[i, j]
            for k in range(i + 1, p):
                acc -= L[k, i] * Z[k, j]
            Z[i, j] = acc / L[i, i]
    return lam, Z


@njit(cache=True)
def subspace_iteration(K_inv, K_inv_chol, bounds, Mn, X, r, tol, max_iter):
    """Lowest ``r`` eigenpairs of ``K x = lambda Mn x`` from the starting block ``X`` (n, p).

    One sweep is ``Y = K^-1 (Mn X)`` and a Rayleigh-Ritz step on ``Y``; ``K Y = Mn X`` is at
    hand and ``Mn X`` of the next sweep is ``(Mn Y) Z``, so a sweep costs one product with
    ``Mn`` and one block-diagonal solve.  (``K`` enters through ``K^-1`` only: the pairs
    found are those of ``(K^-1)^-1``, whose lowest modes -- the dominant ones of ``K^-1`` --
    carry ``K^-1``'s rounding as a relative error of order eps.)

    Parameters
    ----------
    K_inv, K_inv_chol : ndarray, shape (n, n)
        Inverse of the stiffness (SPD) and the inverse of its Cholesky factor.
    bounds : ndarray of int, shape (k + 1,)
        Ranges of the diagonal blocks of ``K_inv`` (``[0, n]``: one block).
    Mn : ndarray, shape (n, n)
        Mass (SPD).
    X : ndarray, shape (n, p), p >= r
        Starting subspace; empty (n, 0): start from the dense solve.
    r : int
    tol : float
        Relative residual ``|K x - lambda Mn x| / |K x|`` of the ``r`` wanted pairs at
        convergence.
    max_iter : int

    Returns
    -------
    lam : ndarray, shape (p,)
        Ritz values, ascending (the first ``r`` converged).
    X : ndarray, shape (n, p)
        Ritz vectors, ``X^T Mn X = 1``.
    sweeps : int
        Iterations done; -1 when the dense solve gave the pairs.
    """
    p = X.shape[1]
    if p == 0:
        p = min(Mn.shape[0], 2 * r, r + 8)
        lam, X = _dense(K_inv_chol, Mn, p)
        return lam, X, -1
    MX = Mn @ X
    for sweep in range(1, max_iter + 1):
        Y = block_product(K_inv, bounds, MX)
        MY = Mn @ Y
        lam, Z = _ritz(MX, MY, Y)          # K Y = MX
        X = Y @ Z
        KX = MX @ np.ascontiguousarray(Z[:, :r])
        MX = MY @ Z
        worst = 0.0
        for i in range(r):
            res = 0.0
            ref = 0.0
            for j in range(KX.shape[0]):
                d = KX[j, i] - lam[i] * MX[j, i]
                res += d * d
                ref += KX[j, i] * KX[j, i]
            worst = max(worst, np.sqrt(res / ref))
        if worst <= tol:
            return lam, X, sweep
    lam, X = _dense(K_inv_chol, Mn, p)
    return lam, X, -1


@njit(cache=True)
def _reduced_mass(M, J, rigid, elastic, owner):
    """``G = -J_r^-1 J_e`` and ``Mn = N^T M N``, ``N = [G; 1]`` (rows: reference, elastic).

    Only the elastic coordinates that enter the constraints (``c``, the joints' nodes) have
    a nonzero column of ``G``:

        Mn = M_ee + (M_er G_c)[:, c] + (M_er G_c)^T[c, :] + (G_c^T M_rr G_c)[c, c],

    and ``M`` is block diagonal over the bodies (each body's kinetic energy involves its own
    coordinates only): elastic coordinate ``k`` couples with the six reference coordinates
    ``rigid[6 owner[k] : 6 owner[k] + 6]`` of its body, and ``M_rr`` is 6 x 6 blocks.

    Returns ``max|G|``, ``G_c`` (n_r, n_cols) and ``c`` (n_cols,), ``Mn`` (n_e, n_e).
    """
    n_r, n_e = rigid.size, elastic.size
    used = np.zeros(n_e, dtype=np.bool_)
    for i in range(J.shape[0]):      # along J's rows: a column scan strides through memory
        for k in range(n_e):
            used[k] = used[k] or J[i, elastic[k]] != 0.0
    c = np.flatnonzero(used)
    n_c = c.size
    Jr = np.empty((J.shape[0], n_r))
    Jc = np.empty((J.shape[0], n_c))
    for i in range(J.shape[0]):
        for k in range(n_r):
            Jr[i, k] = J[i, rigid[k]]
        for k in range(n_c):
            Jc[i, k] = -J[i, elastic[c[k]]]
    Gc = sparse_solve(Jr, Jc)      # NaN when J_r is singular
    Mn = np.zeros((n_e, n_e))
    start = 0
    while start < n_e:               # M_ee: the bodies' blocks (elastic coordinates body by body)
        stop = start
        while stop < n_e and owner[stop] == owner[start]:
            stop += 1
        for i in range(start, stop):
            for k in range(start, stop):
                Mn[i, k] = M[elastic[i], elastic[k]]
        start = stop
    # Products with G_c along its rows (contiguous), not down its columns.
    w = np.empty(n_c)
    for i in range(n_e):             # W = M_er G_c, row i from its body's six columns
        b = 6 * owner[i]
        w[:] = 0.0
        for j in range(6):
            m = M[elastic[i], rigid[b + j]]
            for k in range(n_c):
                w[k] += m * Gc[b + j, k]
        for k in range(n_c):
            Mn[i, c[k]] += w[k]
            Mn[c[k], i] += w[k]
    H = np.zeros((n_r, n_c))         # M_rr G_c, body by body
    for b in range(0, n_r, 6):
        for i in range(6):
            for j in range(6):
                m = M[rigid[b + i], rigid[b + j]]
                for k in range(n_c):
                    H[b + i, k] += m * Gc[b + j, k]
    GMG = Gc.T @ H
    for i in range(n_c):             # symmetric up to round-off: made exactly so
        for k in range(n_c):
            Mn[c[i], c[k]] += 0.5 * (GMG[i, k] + GMG[k, i])
    return np.abs(Gc).max() if Gc.size else 0.0, Gc, c, Mn


@njit(cache=True)
def _static(F, Gc, c, rigid, elastic, K_inv, bounds):
    """Static displacements ``N K_ee^-1 N^T F`` (n_v, m) of the loads ``F`` (n_v, m) in the
    constrained motions ``N = [G; 1]`` (only the columns ``c`` of ``G`` are nonzero)."""
    # Rows copied element by element: a row slice is a view to build (with its reference
    # count), dearer than its few numbers.
    m = F.shape[1]
    b = np.empty((elastic.size, m))
    for i in range(elastic.size):
        for j in range(m):
            b[i, j] = F[elastic[i], j]
    Fr = np.empty((rigid.size, m))
    for i in range(rigid.size):
        for j in range(m):
            Fr[i, j] = F[rigid[i], j]
    GF = Gc.T @ Fr
    for k in range(c.size):
        for j in range(m):
            b[c[k], j] += GF[k, j]
    y = block_product(K_inv, bounds, b)
    U = np.zeros_like(F)
    yc = np.empty((c.size, m))
    for k in range(c.size):
        for j in range(m):
            yc[k, j] = y[c[k], j]
    Gy = Gc @ yc
    for i in range(rigid.size):
        for j in range(m):
            U[rigid[i], j] = Gy[i, j]
    for i in range(elastic.size):
        for j in range(m):
            U[elastic[i], j] = y[i, j]
    return U


@njit(cache=True, nogil=True)
def _modes(M, J, rigid, elastic, owner, blocks, K_inv, K_inv_chol, bounds, X, X_prev, r, tol, max_iter, basis_max,
           F):
    """Compiled :meth:`Tracker.modes`: the basis, the reduced mass, the starting subspace and
    the iteration in one call; also the static displacements of the loads ``F`` (n_v, m).
    ``blocks``: the bodies' ranges of ``v`` (:attr:`Tracker.blocks`), for ``M Phi``."""
    g, Gc, c, Mn = _reduced_mass(M, J, rigid, elastic, owner)
    if not g <= basis_max:
        return np.zeros(0), np.zeros((M.shape[0], 0)), np.zeros((M.shape[0], 0)), X, -2, np.zeros_like(F)
    if X_prev.shape[1] == X.shape[1] and X.shape[1] > 0:
        # Linear extrapolation of the subspace: X + (X - X_prev C), C = X_prev^T Mn X aligning
        # the previous Ritz vectors (signs, mixing) with the last ones.
        C = X_prev.T @ (Mn @ X)
        X = 2.0 * X - X_prev @ C
    lam, X, sweeps = subspace_iteration(K_inv, K_inv_chol, bounds, Mn, X, r, tol, max_iter)
    # Phi = N X_r: the elastic rows are X_r, the reference rows G_c X_r[c].
    shapes = np.zeros((M.shape[0], r))
    Xc = np.empty((c.size, r))
    for k in range(c.size):     # element by element, as in _static
        for j in range(r):
            Xc[k, j] = X[c[k], j]
    GX = Gc @ Xc
    for i in range(rigid.size):
        for j in range(r):
            shapes[rigid[i], j] = GX[i, j]
    for i in range(elastic.size):
        for j in range(r):
            shapes[elastic[i], j] = X[i, j]
    return lam, shapes, block_product(M, blocks, shapes), X, sweeps, _static(F, Gc, c, rigid, elastic, K_inv, bounds)


def elastic_stiffness(model):
    """The bodies' stiffness on the elastic coordinates, ``K_ee`` (n_e, n_e), symmetric, and
    whether it is positive definite (no body free to move rigidly in its reference)."""
    elastic = model.v_elastic
    K = dynamics.stiffness_matrix(model)[np.ix_(elastic, elastic)]
    K = np.ascontiguousarray(0.5 * (K + K.T))
    return K, bool(not elastic.size or np.linalg.eigvalsh(K)[0] > 0)


class Tracker:
    """Lowest modes of one model at successive nearby configurations (module docstring).

    Holds the constant elastic stiffness, its inverse and the last subspace (STYLE: an explicit
    object, no hidden cache).  Use :meth:`applies` first.

    Parameters
    ----------
    model : Model
    count : int
        Modes wanted, r.
    """

    def __init__(self, model, count):
        self.model, self.count = model, int(count)
        self.rigid = np.asarray(model.v_rigid, dtype=np.int64)
        self.elastic = np.asarray(model.v_elastic, dtype=np.int64)
        self.K = elastic_stiffness(model)[0]
        self.K_inv_chol = np.linalg.inv(np.linalg.cholesky(self.K))
        self.K_inv = self.K_inv_chol.T @ self.K_inv_chol
        # Bodies: elastic coordinate k belongs to body owner[k] (whose six reference
        # coordinates are rigid[6 b : 6 b + 6], model.v_rigid's order); K is block diagonal
        # over the flexible bodies' ranges bounds[i]:bounds[i + 1].
        n_f = np.array([b.n_f for b in model.bodies], dtype=np.int64)
        self.owner = np.repeat(np.arange(n_f.size, dtype=np.int64), n_f)
        # M is block diagonal over the bodies' ranges blocks[b]:blocks[b + 1] of v.
        self.blocks = np.concatenate([[0], np.cumsum(6 + n_f)]).astype(np.int64)
        assert np.array_equal(self.rigid[::6], self.blocks[:-1]), "v: each body's reference, then elastic coordinates"
        self.bounds = np.concatenate([[0], np.cumsum(n_f[n_f > 0])]).astype(np.int64)
        self.seed = np.zeros((self.elastic.size, 0))
        self.reset()
        self.sweeps = []   # per call: iterations, -1 dense solve, -2 refused
        self.loaded = False   # _modes compiled or loaded in this process (at the first call: the
                              # compiled frames of sim.solvers.ked need only their own kernel)

    @staticmethod
    def applies(model):
        """True when the stiffness is the bodies' constant ``K_ff`` only, positive definite, and
        there are elastic coordinates (no lumped springs, compliant drives or geometric
        stiffening; no body whose reference leaves it free to move rigidly)."""
        if not (len(model.v_elastic) > 0 and not dynamics._has_lumped(model)
                and not compliant(model).any() and not stretched(model)):
            return False
        return elastic_stiffness(model)[1]

    def reset(self):
        """Forget the last subspaces: the next :meth:`modes` starts from :attr:`seed` (at most
        :data:`SEED_ITER` sweeps), or from a dense solve where there is none.

        ``seed`` (n_e, p): Ritz vectors of another configuration of the same motion (its
        :attr:`X`), e.g. the first, a common start for trackers that must give the same
        numbers whichever of them computes an instant (:class:`sim.solvers.ked.FramePool`).
        """
        self.X = self.seed
        self.X_prev = np.zeros((self.elastic.size, 0))
        self.fresh = True

    def modes(self, M, J, loads=None):
        """The lowest ``count`` modes with mass ``M`` and locked constraint rows ``J``.

        Parameters
        ----------
        M : ndarray, shape (n_v, n_v)
        J : ndarray, shape (n_c, n_v)
            Joint and locked-actuator rows.
        loads : ndarray, shape (n_v, m), optional
            Loads whose static displacements are wanted too.

        Returns
        -------
        omega : ndarray, shape (r,)
            Circular frequencies [rad/s], ascending.
        shapes, mass_shapes : ndarray, shape (n_v, r)
            ``Phi`` (``Phi^T M Phi = 1``) and ``M Phi``.
        static : ndarray, shape (n_v, m)
            Only with ``loads``: ``N K_ee^-1 N^T loads``, the constrained static displacements.

        None when the partition does not apply here: ``J`` not square over the reference
        coordinates, or ``J_r`` nearly singular (an entry of ``G`` above :data:`BASIS_MAX`,
        where the basis ``N`` would be ill-conditioned); :func:`sim.solvers.modal.modes` then
        chooses its basis.
        """
        if J.shape[0] != self.rigid.size:
            return None
        with signals_deferred() if not self.loaded else contextlib.nullcontext():   # see sim.model.evaluator
            F = np.zeros((M.shape[0], 0)) if loads is None else np.ascontiguousarray(loads, dtype=float)
            lam, shapes, mass_shapes, X, sweeps, static = _modes(
                M, J, self.rigid, self.elastic, self.owner, self.blocks, self.K_inv, self.K_inv_chol, self.bounds,
                self.X, self.X_prev, self.count, RESIDUAL_TOL, SEED_ITER if self.fresh else MAX_ITER, BASIS_MAX, F)
        self.loaded = True
        self.sweeps.append(sweeps)
        if sweeps == -2:
            self.reset()
            return None
        # No extrapolation from a seed: it is not the previous instant.
        self.X_prev = np.zeros((self.elastic.size, 0)) if self.fresh else self.X
        self.X, self.fresh = X, False
        omega = np.sqrt(np.maximum(lam[:self.count], 0.0))
        return (omega, shapes, mass_shapes) if loads is None else (omega, shapes, mass_shapes, static)
