r"""Lowest modes along a path of nearby configurations: warm-started subspace iteration.

For KED (:mod:`sim.solvers.modal_stepping`) the modes are needed at hundreds of instants of one motion, a few
milliseconds apart.  When the structure's only stiffness is that of the flexible bodies
(``K`` nonzero on the elastic coordinates only, constant: no lumped springs, compliant drives
or geometric stiffening) and the locked constraint rows determine the reference coordinates
(``J = [J_r, J_e]`` with ``J_r`` square and regular), the constrained motions are

    v = N x,   N = [G; 1],   G = -J_r^{-1} J_e          (rows: reference, elastic),

with ``x`` the elastic coordinates themselves (the basis of
:func:`sim.linalg.partitioned_null_space`), so ``N^T K N = K_ee`` is constant and only the
reduced mass ``N^T M N`` changes along the motion.  The pencil ``(K_ee, N^T M N)`` is solved by
subspace iteration (Bathe): ``p >= min(2r, r + 8)`` vectors, ``X <- K_ee^{-1} (N^T M N) X``
followed by a Rayleigh-Ritz projection, until the relative residuals of the ``r`` wanted pairs,
``|K x - lambda M_n x| / |K x|``, are below :data:`RESIDUAL_TOL`.  The subspaces of the
two previous instants, extrapolated linearly, start the next (the coordinates ``x`` keep
their meaning along the motion; the previous Ritz vectors are first aligned with the last,
``X_prev C``, ``C = X_prev^T M_n X``): on the 3-RRRU circle with 512 intervals one sweep
suffices.  A fresh start takes the tracker's :attr:`Tracker.seed` (the Ritz vectors of another
configuration of the motion; 3-4 sweeps there), or a dense eigensolve of the reduced pencil
where there is none or the iteration does not converge in :data:`SEED_ITER` (from a seed) or
:data:`MAX_ITER` sweeps.  Mode ``i`` converges like ``(lambda_i / lambda_{p+1})^k``; the dense
solve therefore widens the subspace past clusters of eigenvalues (:data:`GAP`).

Every other model takes the general path of the same kernel (:func:`_general`): lumped
springs, compliant drives and geometric stiffening (a stiffness that changes along the
motion and couples the reference coordinates), rows that leave reference coordinates free
(``m < n_r``: compliant drives, spherical joints at both ends of a strut), redundant rows,
and free motions.  Coordinate partitioning with the dependent reference columns chosen by
pivoting gives ``N`` (:func:`_basis`, an SVD of the rows where that fails); the free motions,
which leave the elastic coordinates at rest, are the directions of least energy among the
remaining reference columns, and the elastic basis ``B`` is ``N``'s other columns made
mass-orthogonal to them (:func:`_elastic_basis`); the pencil ``(B^T K B, B^T M B)`` is
solved by the same iteration with its inverse stiffness formed densely, warm-started from the
last subspaces carried as motions (``n_v`` rows) and brought into the new basis by the mass.
The statics are ``B (B^T K B)^-1 B^T f``: with free motions, those of inertia relief.

What one sweep costs is kept small by the structure: ``K_ee`` is block diagonal over the
flexible bodies (so is its inverse), ``M`` over all bodies (the reduced mass needs only the
joints' elastic columns of ``G``, 18 of 72 on the 3-RRRU, and ``J_r`` is factored by the
sparse LU of :func:`sim.linalg.sparse_lu`), and ``K Y = M_n X`` is known, so a sweep makes one
product with ``M_n``.

Large models (the band path, from :data:`BAND_MIN` elastic coordinates): the reduced mass is
never formed.  ``M_ee`` is each flexible body's constant ``M_ff``, banded along the beam, and
the joints couple only the ``n_c`` elastic coordinates of their nodes, so

    N^T M N = M_ee + W[:, c] + W^T[c, :] + S[c, c],   W = M_er G_c (n_e, n_c),  S = G_c^T M_rr G_c

is applied by ``M_ee``'s nonzeros and the coupling columns (:func:`_mass_times`), and
``K_ee^-1`` by each body's band LU factors, made once (:func:`_stiffness_solve`): a sweep is
linear in the elastic coordinates, where the dense reduced mass and inverse stiffness are
quadratic (and their memory with them).  The fresh start is then subspace iteration too
(:func:`_start`, converged to :data:`START_TOL`, not the cubic dense solve).  The two paths
agree to ~1e-11 (tests).  Below :data:`BAND_MIN` the dense path is as fast (one BLAS call per
product; faster below about 150 coordinates) and is kept, bitwise as it was.  The band path
reads of ``M`` only each coordinate's entries in its body's reference columns and ``M_ee``'s
nonzeros (:class:`Mass`): from :data:`STORE_MIN` coordinates the compiled frames evaluate ``M``
on its structure and give it those alone, no (n_v, n_v) array.

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
from typing import NamedTuple

import numpy as np
from numba import njit, typeof, types

from sim.model import dynamics
from sim.errors import signals_deferred
from sim.kernels.common import block_product, caller, pattern_product, pointer, runtime
from sim.linalg import sparse_solve
from sim.kernels.store import empty_store
from sim.solvers.blocks import band_lu, band_solve_many, blocks as empty_blocks, held, no_pattern, positions, stores
from sim.model.tables import compliant, stretched
from sim.model.mobility import FREE_RTOL, NULL_RTOL
from sim.model.sparse_rows import SparseRows

RESIDUAL_TOL = 1e-6    # relative residual of the wanted pairs at convergence
MAX_ITER = 40          # sweeps before the dense solve takes over
SEED_ITER = 8          # the same from a seed (Tracker.seed), a subspace of another configuration
BASIS_MAX = 1e4        # largest |G_ij| accepted: beyond, J_r is nearly singular (see Tracker.modes)
GAP = 3.0              # the subspace reaches up to an eigenvalue this many times the r-th (_dense) ...
EXTRA_MAX = 24         # ... with at most this many vectors beyond the r wanted
# The band path (module docstring, "Large models"): from this many elastic coordinates, where each
# flexible body's stiffness has a half-band of at most HALF_BAND_MAX (measured on the 3-RRRU: a frame
# costs the same on both paths at 144, the band path's half at 288, docs/performance.rst).
BAND_MIN = 200
HALF_BAND_MAX = 48
START_TOL = 1e-10      # the band path's fresh start: relative residual of its p pairs ...
START_FLOOR = 1e-8     # ... or where round-off stops it, below this (1e-9 with 128 elements per link) ...
START_ITER = 60        # ... within this many sweeps (else the dense solve); or stalled (by less than
STALL = 0.95           # this factor a sweep) below RESIDUAL_TOL, the floor of stiffer models (2.7e-8 with
                       # 256 elements per link, where the dense solve of 4608 coordinates took 30 s)
START_GUARD = 8        # vectors iterated beyond the most the start keeps (r + EXTRA_MAX)
STORE_MIN = 600        # velocity coordinates from which the frames evaluate M on its structure (Tracker.mass_store)



class Saddle(NamedTuple):
    """The structure of the saddle-point form of a frozen robot (:func:`sim.solvers.saddle.structure`,
    the solver :func:`sim.solvers.saddle.saddle_modes`): the :class:`sim.solvers.blocks.Pattern`
    ``pat`` of its ``m = n_v + n_c`` unknowns (its ``known`` the matrix), each entry's column
    ``cols`` (nnz,), the :class:`sim.solvers.blocks.Blocks` ``blk`` and the Schur complement's
    pivots ``piv`` (m,); on the same structure (nnz,) the bodies' stiffness ``K_body`` (constant)
    and this structure's mass matrix ``M`` and tangent stiffness ``K_t`` (written at every call:
    by the evaluation on stores that share these arrays, :meth:`Tracker.saddle_stores`, or
    from dense arrays); ``rho`` the free motions' penalty (the mean of ``K_body``'s diagonal on
    the elastic coordinates) and ``rr`` (n_r, n_r) the positions of the reference
    coordinates' entries.  One tracker's: its values are its own."""

    pat: object
    cols: np.ndarray
    blk: object
    piv: np.ndarray
    K_body: np.ndarray
    M: np.ndarray
    K_t: np.ndarray
    rho: float
    rr: np.ndarray


def empty_saddle():
    """A :class:`Saddle` of nothing, typed as any (its Schur room (2, 2), Fortran order, as a
    real one's: a zero-size array would type as C order)."""
    none, index = np.zeros(0), np.zeros(0, dtype=np.int64)
    return Saddle(no_pattern(), index, empty_blocks(index, index, 2), np.zeros(2, dtype=np.int32), none, none, none,
                  0.0, np.zeros((0, 0), dtype=np.int64))


class Layout(NamedTuple):
    """The model's constant part of the modes solvers (:meth:`Tracker.layout`).

    ``K_body`` (n_v, n_v) the bodies' stiffness; ``rigid``, ``elastic`` the reference and
    elastic coordinates (columns of ``v``); ``owner`` the body of each elastic coordinate;
    ``blocks`` the bodies' ranges of ``v`` (M is block diagonal over them); ``K_inv``,
    ``K_inv_chol`` the inverse of the constant ``K_ee`` and of its Cholesky factor, block
    diagonal over the flexible bodies' ranges ``bounds`` (empty where the stiffness is not
    constant, or on the band path); ``n_free`` the free motions with the actuators locked.
    The band path (``K_inv`` empty, ``K_band`` not): ``band`` (k, 2) each flexible body's
    half-band and offset in ``K_band``, the LU factors of its block of ``K_ee``
    (:func:`sim.solvers.blocks.band_lu`); ``m_col`` (n_e, w) the columns of each row's
    nonzeros of ``M_ee`` (elastic numbering, -1 after the last; each body's own columns).
    ``saddle``: the :class:`Saddle` of the saddle-point solver (:mod:`sim.solvers.saddle`), or
    an empty one.
    """

    K_body: np.ndarray
    rigid: np.ndarray
    elastic: np.ndarray
    owner: np.ndarray
    blocks: np.ndarray
    K_inv: np.ndarray
    K_inv_chol: np.ndarray
    bounds: np.ndarray
    n_free: int
    band: np.ndarray
    K_band: np.ndarray
    m_col: np.ndarray
    saddle: Saddle


class Settings(NamedTuple):
    """How the modes solvers iterate: ``r`` modes wanted, relative residual ``tol``, largest
    basis entry ``basis_max``, and the null-space and free-motion tolerances."""

    r: int
    tol: float
    basis_max: float
    null_rtol: float
    free_rtol: float


class Mass(NamedTuple):
    """The mass matrix ``M`` (n_v, n_v) the solvers read: ``dense``, or (``dense`` empty, the
    band path only) by what the band path reads of it, ``M`` block diagonal over the bodies:
    ``R`` (n_v, 6) each coordinate's entries in its body's six reference columns and ``val``
    (n_e, w) ``M_ee``'s nonzeros in the columns of the layout's ``m_col``
    (:class:`Layout`) -- linear in the coordinates where ``dense`` is quadratic
    (:func:`sim.solvers.frames._frame_loop` on a :class:`sim.kernels.store.Store`)."""

    dense: np.ndarray
    R: np.ndarray
    val: np.ndarray

    @classmethod
    def of(cls, M):
        """The :class:`Mass` of the dense ``M`` (n_v, n_v)."""
        none = np.zeros((0, 0))
        return cls(np.ascontiguousarray(M, dtype=float), none, none)


@njit(cache=True)
def _t(A):
    """``A^T`` (n, m) in C order for ``A`` (m, n): the products here all take C-ordered
    operands, one compiled matrix product for all (each order pair compiles its own)."""
    T = np.empty((A.shape[1], A.shape[0]))
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            T[j, i] = A[i, j]
    return T


@njit(cache=True)
def _symmetric(A):
    """In place: ``A`` (n, n) made exactly symmetric, ``(A + A^T) / 2``; returns it."""
    for i in range(A.shape[0]):
        for k in range(i):
            A[i, k] = A[k, i] = 0.5 * (A[i, k] + A[k, i])
    return A


@njit(cache=True)
def _columns(A, k):
    """The first ``k`` columns of ``A`` (n, m) as a C-ordered copy."""
    C = np.empty((A.shape[0], k))
    for i in range(A.shape[0]):
        for j in range(k):
            C[i, j] = A[i, j]
    return C


@njit(cache=True)
def _dense(K_inv, K_inv_chol, Mn, p, r):
    """The lowest eigenpairs of ``(K, Mn)`` by a dense solve, ``K^-1 = L^-T L^-1`` with
    ``L^-1 = K_inv_chol``: the largest of ``L^-1 Mn L^-T y = y / lambda``.  Mass-normalised.
    An empty ``K_inv_chol``: ``C^T C = K^-1`` with ``C`` from the Cholesky factor of ``K_inv``.

    ``p`` pairs at least, and more where the spectrum above the ``r`` wanted ones is crowded:
    up to the first eigenvalue :data:`GAP` times the ``r``-th (at most ``r +``
    :data:`EXTRA_MAX`), so that the iteration started from them converges
    like ``GAP^-k`` (the 6-PSS's twelve strut modes within 12 % of one another would
    otherwise hold ``(lambda_r / lambda_(p+1))^k`` near 1).
    """
    if K_inv_chol.size == 0:
        K_inv_chol = _t(np.linalg.cholesky(K_inv))
    mu, Y = np.linalg.eigh(_symmetric(K_inv_chol @ Mn @ _t(K_inv_chol)))
    n = mu.size
    while p < min(n, r + EXTRA_MAX) and mu[n - 1 - p] * GAP > mu[n - r]:
        p += 1
    lam = np.empty(p)
    V = np.empty((n, p))     # the p eigenvectors of the largest mu, scaled to unit mass
    for k in range(p):
        j = n - 1 - k
        lam[k] = 1.0 / mu[j]
        for i in range(n):
            V[i, k] = Y[i, j] / np.sqrt(mu[j])
    X = _t(K_inv_chol) @ V
    return lam, X


@njit(cache=True)
def _ritz(KY, MY, Y):
    """Rayleigh-Ritz on the columns of ``Y`` with ``K Y``, ``Mn Y`` at hand: eigenvalues
    (ascending) and coefficients ``Z`` with ``(Y Z)^T Mn (Y Z) = 1``.  The p x p Cholesky
    reduction in loops: LAPACK's call overhead exceeds its work at this size."""
    Kr = Y.T @ KY
    Mr = Y.T @ MY
    p = Kr.shape[0]
    L = np.linalg.cholesky(_symmetric(Mr))
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
    lam, W = np.linalg.eigh(_symmetric(A))
    Z = np.empty((p, p))   # Z = L^-T W
    for j in range(p):
        for i in range(p - 1, -1, -1):
            acc = W[i, j]
            for k in range(i + 1, p):
                acc -= L[k, i] * Z[k, j]
            Z[i, j] = acc / L[i, i]
    return lam, Z


@njit(cache=True)
def subspace_iteration(K_inv, K_inv_chol, bounds, Mn, X, r, tol, max_iter, start_mass=False):
    """Lowest ``r`` eigenpairs of ``K x = lambda Mn x`` from the starting block ``X`` (n, p).

    One sweep is ``Y = K^-1 (Mn X)`` and a Rayleigh-Ritz step on ``Y``; ``K Y = Mn X`` is at
    hand and ``Mn X`` of the next sweep is ``(Mn Y) Z``, so a sweep costs one product with
    ``Mn`` and one block-diagonal solve.  (``K`` enters through ``K^-1`` only: the pairs
    found are those of ``(K^-1)^-1``, whose lowest modes -- the dominant ones of ``K^-1`` --
    carry ``K^-1``'s rounding as a relative error of order eps.)

    Parameters
    ----------
    K_inv, K_inv_chol : ndarray, shape (n, n)
        Inverse of the stiffness (SPD) and the inverse of its Cholesky factor (empty (0, 0):
        found from ``K_inv``, for the dense solve).
    bounds : ndarray of int, shape (k + 1,)
        Ranges of the diagonal blocks of ``K_inv`` (``[0, n]``: one block).
    Mn : ndarray, shape (n, n)
        Mass (SPD).
    X : ndarray, shape (n, p), p >= r
        Starting subspace; empty (n, 0): start from the dense solve.  With ``start_mass``,
        ``Mn`` times the starting subspace (the first sweep needs no more of it).
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
    return _iterate(_dense_stiffness(K_inv, K_inv_chol, bounds), _dense_mass(Mn), X, r, tol, max_iter, start_mass)


@njit(cache=True)
def _dense_stiffness(K_inv, K_inv_chol, bounds):
    """The stiffness operand of :func:`_iterate` from ``K^-1`` (block diagonal over ``bounds``)
    and ``L^-1``: ``(K_inv, K_inv_chol, bounds, band, K_band)``, the band factors empty."""
    return K_inv, K_inv_chol, bounds, np.zeros((0, 2), dtype=np.int64), np.zeros(0)


@njit(cache=True)
def _dense_mass(Mn):
    """The mass operand of :func:`_iterate` from the dense ``Mn``: ``(Mn, val, col, W, c, S)``
    (:func:`_mass_times`), the structured parts empty."""
    return (Mn, np.zeros((0, 0)), np.zeros((0, 0), dtype=np.int64), np.zeros((0, 0)), np.zeros(0, dtype=np.int64),
            np.zeros((0, 0)))


@njit(cache=True)
def _size(mass):
    """The order of the mass operand (:func:`_mass_times`)."""
    return mass[0].shape[0] if mass[0].size else mass[2].shape[0]


@njit(cache=True)
def _mass_times(mass, X):
    """``Mn X`` (n, m) for the mass operand ``mass = (Mn, val, col, W, c, S)``: the dense
    ``Mn`` (n, n), or, where it is empty, the reduced mass of the band path

        Mn = M_ee + W[:, c] + W^T[c, :] + S[c, c]

    (:func:`_coupling`) with ``M_ee``'s nonzeros ``val`` (n, w) in the columns ``col`` (n, w;
    -1 after a row's last): a product linear in ``n`` (its nonzeros and the ``n_c`` coupling
    columns)."""
    Mn, val, col, W, c, S = mass
    if Mn.size:
        return Mn @ X
    n, m = X.shape
    n_c = c.size
    Xc = np.empty((n_c, m))
    for k in range(n_c):
        for j in range(m):
            Xc[k, j] = X[c[k], j]
    Y = W @ Xc
    T = _t(W) @ X + S @ Xc           # the rows c
    for i in range(n):
        for t in range(col.shape[1]):
            k = col[i, t]
            if k < 0:
                break
            a = val[i, t]
            for j in range(m):
                Y[i, j] += a * X[k, j]
    for k in range(n_c):
        for j in range(m):
            Y[c[k], j] += T[k, j]
    return Y


@njit(cache=True)
def _stiffness_solve(stiff, X):
    """``K^-1 X`` (n, m) for the stiffness operand ``stiff = (K_inv, K_inv_chol, bounds, band,
    K_band)``: the dense inverse, block diagonal over ``bounds``, or, where it is empty, the
    band factors of each block (:class:`Layout`)."""
    K_inv, _, bounds, band, K_band = stiff
    if K_inv.size:
        return block_product(K_inv, bounds, X)
    Y = X.copy()
    for b in range(bounds.size - 1):
        a, n, w, off = bounds[b], bounds[b + 1] - bounds[b], band[b, 0], band[b, 1]
        band_solve_many(K_band[off:off + n * (2 * w + 1)], n, w, Y[a:a + n])
    return Y


@njit(cache=True)
def _iterate(stiff, mass, X, r, tol, max_iter, start_mass):
    """:func:`subspace_iteration` on the operands of :func:`_stiffness_solve` and
    :func:`_mass_times`; a fresh start from :func:`_fresh`."""
    p = X.shape[1]
    if p == 0:
        p = min(_size(mass), 2 * r, r + 8)
        lam, X = _fresh(stiff, mass, p, r)
        return lam, X, -1
    MX = X if start_mass else _mass_times(mass, X)
    lam, X, sweeps = _sweeps(stiff, mass, X, MX, r, tol, max_iter)
    if sweeps > 0:
        return lam, X, sweeps
    lam, X = _fresh(stiff, mass, p, r)
    return lam, X, -1


@njit(cache=True)
def _sweeps(stiff, mass, X, MX, r, tol, max_iter, floor=0.0):
    """At most ``max_iter`` sweeps from ``X`` (n, p), ``MX = Mn X``, until the first ``r``
    pairs' relative residuals are below ``tol``, or below ``floor`` (> tol) and no longer
    halving (round-off's floor, which the stiffness's conditioning raises with the elements):
    Ritz values (p,), vectors and the sweeps done (0: not converged).  With a ``floor``
    (a fresh start's), also where they stall (by less than :data:`STALL`) below
    :data:`RESIDUAL_TOL`, the tracking's own tolerance: round-off's floor rises above ``floor``
    on stiffer models."""
    last = np.inf
    for sweep in range(1, max_iter + 1):
        Y = _stiffness_solve(stiff, MX)
        MY = _mass_times(mass, Y)
        lam, Z = _ritz(MX, MY, Y)          # K Y = MX
        X = Y @ Z
        KX = MX @ _columns(Z, r)
        MX = MY @ Z
        worst = residual(KX, MX, lam, r)
        if worst <= tol or (worst <= floor and worst > 0.5 * last) or (
                floor > 0.0 and worst <= RESIDUAL_TOL and worst > STALL * last):
            return lam, X, sweep
        last = worst
    return np.zeros(0), X, 0


@njit(cache=True)
def residual(KX, MX, lam, r):
    """The largest relative residual ``|K x - lambda M x| / |K x|`` of the first ``r`` Ritz
    pairs, with ``K X`` (n, >= r) and ``M X`` at hand (inf where ``K x`` vanishes)."""
    worst = 0.0
    for i in range(r):
        res = 0.0
        ref = 0.0
        for j in range(KX.shape[0]):
            d = KX[j, i] - lam[i] * MX[j, i]
            res += d * d
            ref += KX[j, i] * KX[j, i]
        worst = max(worst, np.sqrt(res / ref) if ref > 0.0 else np.inf)
    return worst


@njit(cache=True)
def quasi_random(n, q):
    """A fixed quasi-random block (n, q): additive recurrences of the golden-ratio family, no
    two columns alike (a fresh start of subspace iteration, the same numbers every run)."""
    X = np.empty((n, q))
    for i in range(n):
        for j in range(q):
            X[i, j] = (0.5 + (i + 1) * 0.7548776662466927 + (j + 1) * 0.5698402909980532
                       + (i + 1) * (j + 1) * 0.6180339887498949) % 1.0 - 0.5
    return X


@njit(cache=True)
def _fresh(stiff, mass, p, r):
    """The lowest pairs with no subspace to start from: :func:`_dense` on the dense operands;
    on the band path (:func:`_start`) by iteration, the dense solve only where that fails."""
    if stiff[0].size and mass[0].size:
        return _dense(stiff[0], stiff[1], mass[0], p, r)
    lam, X = _start(stiff, mass, p, r)
    if X.shape[1]:
        return lam, X
    I = np.eye(_size(mass))
    return _dense(_symmetric(_stiffness_solve(stiff, I)), np.zeros((0, 0)), _symmetric(_mass_times(mass, I)), p, r)


@njit(cache=True)
def _start(stiff, mass, p, r):
    """The band path's fresh start, :func:`_dense`'s pairs by subspace iteration: ``q = r +``
    :data:`EXTRA_MAX` ``+`` :data:`START_GUARD` vectors (at most ``n``) from a fixed
    quasi-random block, until the first ``p`` pairs' residuals are below :data:`START_TOL`, or
    at round-off's floor below :data:`START_FLOOR`, or stalled below :data:`RESIDUAL_TOL`
    (at most :data:`START_ITER` sweeps; the
    first ``r`` then agree with the dense solve's to about that residual), then widened past clusters as :func:`_dense` is (:data:`GAP`).  Each
    sweep is linear in ``n``, where the dense solve is cubic.  Returns no vectors where it
    does not converge."""
    n = _size(mass)
    q = min(n, r + EXTRA_MAX + START_GUARD)
    X = quasi_random(n, q)
    lam, X, sweeps = _sweeps(stiff, mass, X, _mass_times(mass, X), p, START_TOL, START_ITER, START_FLOOR)
    if sweeps == 0:
        return lam, np.zeros((n, 0))
    while p < min(q, r + EXTRA_MAX) and lam[p] < GAP * lam[r - 1]:
        p += 1
    return lam[:p].copy(), _columns(X, p)


@njit(cache=True)
def _coupling(R, J, rigid, elastic, owner):
    """The reference part of the reduced mass ``Mn = N^T M N``, ``N = [G; 1]`` (rows: reference,
    elastic), ``G = -J_r^-1 J_e``.

    Only the elastic coordinates that enter the constraints (``c``, the joints' nodes) have
    a nonzero column of ``G``:

        Mn = M_ee + W[:, c] + W^T[c, :] + S[c, c],   W = M_er G_c,   S = G_c^T M_rr G_c,

    and ``M`` is block diagonal over the bodies (each body's kinetic energy involves its own
    coordinates only): elastic coordinate ``k`` couples with the six reference coordinates
    ``rigid[6 owner[k] : 6 owner[k] + 6]`` of its body, and ``M_rr`` is 6 x 6 blocks: ``R``
    (n_v, 6), each coordinate's entries in its body's reference columns
    (:func:`reference_columns`), holds all of them.

    Returns ``max|G|``, ``G_c`` (n_r, n_c), ``c`` (n_c,), ``W`` (n_e, n_c) and ``S`` (n_c, n_c),
    made exactly symmetric.
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
    # Products with G_c along its rows (contiguous), not down its columns.
    W = np.zeros((n_e, n_c))
    for i in range(n_e):             # W = M_er G_c, row i from its body's six columns
        b = 6 * owner[i]
        for j in range(6):
            m = R[elastic[i], j]
            for k in range(n_c):
                W[i, k] += m * Gc[b + j, k]
    H = np.zeros((n_r, n_c))         # M_rr G_c, body by body
    for b in range(0, n_r, 6):
        for i in range(6):
            for j in range(6):
                m = R[rigid[b + i], j]
                for k in range(n_c):
                    H[b + i, k] += m * Gc[b + j, k]
    GMG = Gc.T @ H
    S = np.empty((n_c, n_c))
    for i in range(n_c):             # symmetric up to round-off: made exactly so
        for k in range(n_c):
            S[i, k] = 0.5 * (GMG[i, k] + GMG[k, i])
    top = 0.0
    for i in range(n_r):
        for k in range(n_c):
            top = max(top, abs(Gc[i, k])) if Gc[i, k] == Gc[i, k] else np.inf    # NaN: J_r singular
    return top, Gc, c, W, S


@njit(cache=True)
def _reduced_mass(M, elastic, owner, c, W, S):
    """The reduced mass ``Mn`` (n_e, n_e) of :func:`_coupling`'s parts as a dense matrix."""
    n_e, n_c = elastic.size, c.size
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
    for i in range(n_e):
        for k in range(n_c):
            Mn[i, c[k]] += W[i, k]
            Mn[c[k], i] += W[i, k]
    for i in range(n_c):
        for k in range(n_c):
            Mn[c[i], c[k]] += S[i, k]
    return Mn


@njit(cache=True)
def _structured_mass(val, layout, c, W, S):
    """The band path's mass operand of :func:`_mass_times`: ``M_ee``'s nonzeros ``val``
    (:class:`Mass`) in the pattern of the ``layout`` (:class:`Layout`), and :func:`_coupling`'s
    parts."""
    return np.zeros((0, 0)), val, layout.m_col.copy(), W, c, S     # a writable copy: the dense operand's type


@njit(cache=True)
def reference_columns(M, blocks):
    """``R`` (n_v, 6) of :class:`Mass`: row ``i`` the entries of the dense ``M`` in the six
    reference columns of the body of coordinate ``i`` (``blocks``: the bodies' ranges)."""
    R = np.empty((M.shape[0], 6))
    for b in range(blocks.size - 1):
        for i in range(blocks[b], blocks[b + 1]):
            for j in range(6):
                R[i, j] = M[i, blocks[b] + j]
    return R


@njit(cache=True)
def band_values(M, layout):
    """``val`` (n_e, w) of :class:`Mass`: ``M_ee``'s nonzeros read from the dense ``M`` in the
    columns ``m_col`` of the ``layout`` (:class:`Layout`; zero past a row's last)."""
    elastic, col = layout.elastic, layout.m_col
    val = np.zeros(col.shape)
    for i in range(elastic.size):
        row = elastic[i]
        for t in range(col.shape[1]):
            if col[i, t] < 0:
                break
            val[i, t] = M[row, elastic[col[i, t]]]
    return val


@njit(cache=True)
def _parts(mass, layout):
    """``R`` and ``val`` of the :class:`Mass` ``mass`` (``val`` only on the band path), read from
    its dense matrix where it has one."""
    if mass.dense.size == 0:
        return mass.R, mass.val
    val = band_values(mass.dense, layout) if layout.K_band.size else np.zeros((0, 0))
    return reference_columns(mass.dense, layout.blocks), val


@njit(cache=True, nogil=True)
def parts_product(R, val, layout, X):
    """``M X`` (n_v, m) for the mass given by its parts ``R`` (n_v, 6) and ``val`` (n_e, w) on
    the band path (:class:`Mass`): each body's reference rows by symmetry from ``R``, its
    elastic rows over its reference columns and ``M_ee``'s nonzeros -- the terms of
    :func:`sim.kernels.common.pattern_product`, linear in the coordinates."""
    blocks, col = layout.blocks, layout.m_col
    m = X.shape[1]
    Y = np.zeros((R.shape[0], m))
    e0 = 0                           # the body's first elastic coordinate
    for b in range(blocks.size - 1):
        v0, v1 = blocks[b], blocks[b + 1]
        for j in range(6):           # row v0 + j: column v0 + j of the block, M symmetric
            i = v0 + j
            for c in range(v0, v1):
                a = R[c, j]
                if a != 0.0:
                    for k in range(m):
                        Y[i, k] += a * X[c, k]
        for f in range(v1 - v0 - 6):
            i = v0 + 6 + f
            for c in range(6):
                a = R[i, c]
                for k in range(m):
                    Y[i, k] += a * X[v0 + c, k]
            for t in range(col.shape[1]):
                if col[e0 + f, t] < 0:
                    break
                a, c = val[e0 + f, t], v0 + 6 + col[e0 + f, t] - e0
                for k in range(m):
                    Y[i, k] += a * X[c, k]
        e0 += v1 - v0 - 6
    return Y


@njit(cache=True, nogil=True)
def mass_product(M, layout, X):
    """``M X`` (n_v, m) for the mass ``M`` (n_v, n_v) of the model of ``layout``
    (:class:`Layout`): by the bodies' blocks (:func:`sim.kernels.common.block_product`), or on
    the band path by their nonzeros (:func:`sim.kernels.common.pattern_product`)."""
    blocks = layout.blocks
    if layout.K_band.size == 0:
        return block_product(M, blocks, X)
    Y = np.empty((M.shape[0], X.shape[1]))
    e0 = 0                           # the body's first elastic coordinate
    for b in range(blocks.size - 1):
        n = blocks[b + 1] - blocks[b] - 6
        pattern_product(M, blocks[b], layout.m_col[e0:e0 + n], e0, X, Y)
        e0 += n
    return Y


@njit(cache=True)
def _static(F, Gc, c, rigid, elastic, stiff):
    """Static displacements ``N K_ee^-1 N^T F`` (n_v, m) of the loads ``F`` (n_v, m) in the
    constrained motions ``N = [G; 1]`` (only the columns ``c`` of ``G`` are nonzero); ``stiff``
    the stiffness operand of :func:`_stiffness_solve`."""
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
    return _expand(Gc, c, rigid, elastic, _stiffness_solve(stiff, b))


@njit(cache=True)
def _expand(Gc, c, rigid, elastic, Y):
    """``N Y`` (n_v, m) for ``Y`` (n_e, m) in the constrained motions ``N = [G; 1]`` (only
    the columns ``c`` of ``G`` nonzero, ``G_c``): the elastic rows are ``Y``, the reference
    rows ``G_c Y[c]``.  Rows copied element by element: a row slice is a view to build (with
    its reference count), dearer than its few numbers."""
    m = Y.shape[1]
    U = np.zeros((rigid.size + elastic.size, m))
    Yc = np.empty((c.size, m))
    for k in range(c.size):
        for j in range(m):
            Yc[k, j] = Y[c[k], j]
    GY = Gc @ Yc
    for i in range(rigid.size):
        for j in range(m):
            U[rigid[i], j] = GY[i, j]
    for i in range(elastic.size):
        for j in range(m):
            U[elastic[i], j] = Y[i, j]
    return U


@njit(cache=True)
def _small_solve(A, B):
    """``A^-1 B`` for a small symmetric positive definite ``A`` (n, n), ``B`` (n, m): Cholesky
    in loops (LAPACK's call and workspace cost more than the work at this size)."""
    n = A.shape[0]
    L = np.zeros((n, n))
    for j in range(n):
        d = A[j, j]
        for k in range(j):
            d -= L[j, k] * L[j, k]
        L[j, j] = np.sqrt(d)
        for i in range(j + 1, n):
            acc = A[i, j]
            for k in range(j):
                acc -= L[i, k] * L[j, k]
            L[i, j] = acc / L[j, j]
    Y = B.copy()
    for j in range(Y.shape[1]):
        for i in range(n):                  # L z = b
            acc = Y[i, j]
            for k in range(i):
                acc -= L[i, k] * Y[k, j]
            Y[i, j] = acc / L[i, i]
        for i in range(n - 1, -1, -1):      # L^T y = z
            acc = Y[i, j]
            for k in range(i + 1, n):
                acc -= L[k, i] * Y[k, j]
            Y[i, j] = acc / L[i, i]
    return Y


@njit(cache=True)
def _sparse(K):
    """``K`` (n, n) of few nonzeros (the bodies' stiffness blocks, the springs' couplings) in
    compressed rows: ``ptr`` (n + 1,), ``col``, ``val`` (nnz,)."""
    n = K.shape[0]
    nnz = 0
    for i in range(n):
        for k in range(K.shape[1]):
            nnz += K[i, k] != 0.0
    ptr = np.zeros(n + 1, dtype=np.int64)
    col = np.empty(nnz, dtype=np.int64)
    val = np.empty(nnz)
    nnz = 0
    for i in range(n):
        for k in range(K.shape[1]):
            if K[i, k] != 0.0:
                col[nnz], val[nnz] = k, K[i, k]
                nnz += 1
        ptr[i + 1] = nnz
    return ptr, col, val


@njit(cache=True)
def _sparse_product(ptr, col, val, B):
    """``K B`` (n, m) with ``K`` in the compressed rows of :func:`_sparse`."""
    Y = np.zeros((ptr.size - 1, B.shape[1]))
    for i in range(ptr.size - 1):
        for t in range(ptr[i], ptr[i + 1]):
            a, k = val[t], col[t]
            for j in range(B.shape[1]):
                Y[i, j] += a * B[k, j]
    return Y


@njit(cache=True)
def _pivots(A, count, forced=0):
    """``count`` rows of ``A`` (n, m), count <= min(n, m), chosen as the pivots of a QR
    factorisation of ``A^T`` with column pivoting (Businger-Golub): each time the row of
    largest norm once the chosen ones are projected out (the first ``forced`` rows are taken
    first, in their order).  The choice depends on the space ``A``'s columns span, not on the
    basis (an orthogonal ``A R`` picks the same rows), so it stays put from one configuration
    to the next where that basis is arbitrary (the free motions of a symmetric robot, an
    eigenspace).  Returns a permutation (n,) of the rows, the chosen ones first."""
    A = A.copy()
    n, m = A.shape
    order = np.arange(n)
    norms = np.empty(n)
    for i in range(n):
        norms[i] = A[i] @ A[i]
    for j in range(count):
        p = j
        for i in range(j + 1, n if j >= forced else 0):
            if norms[i] > norms[p]:
                p = i
        if p != j:
            for k in range(m):
                A[j, k], A[p, k] = A[p, k], A[j, k]
            order[j], order[p] = order[p], order[j]
            norms[j], norms[p] = norms[p], norms[j]
        scale = np.sqrt(A[j] @ A[j])
        if scale == 0.0:
            continue
        for k in range(m):
            A[j, k] /= scale
        for i in range(j + 1, n):    # project the chosen row out of the others
            c = A[i] @ A[j]
            for k in range(m):
                A[i, k] -= c * A[j, k]
            norms[i] = A[i] @ A[i]
    return order


@njit(cache=True)
def _split(J, dependent, independent):
    """The basis ``N = [-J_D^-1 J_I; 1]`` (n_v, n_I) of ``J v = 0`` (m, n_v) by coordinate
    partitioning: the ``m`` coordinates ``dependent`` (their block ``J_D`` factored by the
    sparse LU), column ``k`` the unit motion of ``independent[k]``; and the largest magnitude
    of ``J_D^-1 J_I`` (inf where ``J_D`` is singular)."""
    m, n_v = J.shape
    n_i = independent.size
    Jd = np.empty((m, m))
    R = np.empty((m, n_i))
    for i in range(m):
        for k in range(m):
            Jd[i, k] = J[i, dependent[k]]
        for k in range(n_i):
            R[i, k] = -J[i, independent[k]]
    G = sparse_solve(Jd, R) if m else np.zeros((0, n_i))
    N = np.zeros((n_v, n_i))
    for k in range(n_i):
        N[independent[k], k] = 1.0
    top = 0.0
    for i in range(m):
        for k in range(n_i):
            N[dependent[i], k] = G[i, k]
            top = max(top, abs(G[i, k])) if G[i, k] == G[i, k] else np.inf    # NaN: singular
    return N, top


@njit(cache=True)
def _partition(J, rigid, elastic, order):
    """The partitioned basis of :func:`_basis` with the dependent reference columns
    ``rigid[order[:m]]`` (:func:`_split`; the elastic coordinates first among the
    independent ones, then the other reference ones)."""
    m = J.shape[0]
    n_r, n_e = rigid.size, elastic.size
    independent = np.empty(n_e + n_r - m, dtype=np.int64)
    for k in range(n_e):
        independent[k] = elastic[k]
    for k in range(n_r - m):
        independent[n_e + k] = rigid[order[m + k]]
    return _split(J, rigid[order[:m]], independent)


@njit(cache=True)
def _elastic_pivots(J, rigid, elastic, count):
    """``count`` elastic coordinates whose columns of ``J`` (m, n_v), with all the reference
    ones, make a regular ``m x m`` block (``m = n_r + count``): the pivots
    (:func:`_pivots`) of the columns, the reference ones taken first.  Returns a permutation
    (n_e,) of the elastic coordinates, the chosen ones first."""
    m = J.shape[0]
    n_r, n_e = rigid.size, elastic.size
    columns = np.empty((n_r + n_e, m))
    for i in range(m):
        for k in range(n_r):
            columns[k, i] = J[i, rigid[k]]
        for k in range(n_e):
            columns[n_r + k, i] = J[i, elastic[k]]
    return _pivots(columns, n_r + count, n_r)[n_r:] - n_r


@njit(cache=True)
def _partition_all(J, rigid, elastic, chosen):
    """The basis of :func:`_split` whose dependent coordinates are all the reference ones and
    the elastic ones ``chosen`` (m - n_r,), the others independent in their order in ``v``."""
    m, n_v = J.shape
    n_r = rigid.size
    dependent = np.empty(m, dtype=np.int64)
    free = np.ones(n_v, dtype=np.bool_)
    for k in range(n_r):
        dependent[k] = rigid[k]
    for k in range(m - n_r):
        dependent[n_r + k] = elastic[chosen[k]]
    for k in range(m):
        free[dependent[k]] = False
    return _split(J, dependent, np.flatnonzero(free))


@njit(cache=True)
def _basis(J, rigid, elastic, basis_max, null_rtol, free_rtol, order):
    """A basis ``N`` (n_v, n_N) of the constrained motions ``J v = 0`` whose last ``n_z``
    columns leave every elastic coordinate at rest.

    Coordinate partitioning where the rows fix ``m <= n_r`` of the reference coordinates (a
    regular ``m x m`` block ``J_d`` of their columns): the elastic coordinates and the other
    ``n_z = n_r - m`` reference coordinates are independent, ``v_d = -J_d^-1 (J_e x + J_i w)``
    (the basis of :class:`Tracker`, with ``n_z = 0``, when ``m = n_r``).  The dependent
    columns are those of the last call, ``order`` (n_v,; in and out: its first ``n_r`` a
    permutation of the reference coordinates, the dependent ones first; ``order[0] < 0`` for
    none yet), while they serve, else chosen again by pivoting (:func:`_pivots`).  Where the
    rows outnumber the reference coordinates (``m > n_r``: a planar loop of spatial joints,
    whose out-of-plane rows, redundant for the rigid robot, the elastic coordinates make
    independent) all the reference coordinates and ``m - n_r`` elastic ones are dependent
    (:func:`_partition_all`; the elastic ones ``elastic[order[n_r:]]``, chosen as the first
    ones, ``order[n_r] < 0`` for none yet; ``n_z = 0``).  Otherwise (redundant rows, or an
    entry of ``J_d^-1 [J_e, J_i]`` above ``basis_max``: a nearly singular block) the
    orthonormal null space of ``J`` by an SVD (singular values below ``null_rtol`` of the
    largest), turned so that its last columns span the motions whose elastic part vanishes
    (singular values of that part below ``free_rtol``).

    Returns ``N``, ``n_z`` and whether the basis is the partitioned one.
    """
    m, n_v = J.shape
    n_r, n_e = rigid.size, elastic.size
    if m <= n_r:
        for attempt in range(2):
            if attempt == 1 or order[0] < 0:
                if m == n_r:
                    for k in range(n_r):
                        order[k] = k
                else:   # J_r^T's pivot rows: the reference columns of a regular block
                    Jt = np.empty((n_r, m))
                    for i in range(m):
                        for k in range(n_r):
                            Jt[k, i] = J[i, rigid[k]]
                    chosen = _pivots(Jt, m)
                    for k in range(n_r):
                        order[k] = chosen[k]
            N, g = _partition(J, rigid, elastic, order)
            if g <= basis_max:     # NaN (J_d singular) fails
                return N, n_r - m, True
            if m == n_r:
                break
    elif m - n_r <= n_e and order.size == n_r + n_e:
        for attempt in range(2):
            if attempt == 1 or order[n_r] < 0:
                chosen = _elastic_pivots(J, rigid, elastic, m - n_r)
                for k in range(n_e):
                    order[n_r + k] = chosen[k]
            N, g = _partition_all(J, rigid, elastic, order[n_r:])
            if g <= basis_max:
                return N, 0, False
        order[n_r] = -1
    order[0] = -1
    rank = 0
    Vt = np.zeros((n_v, n_v))
    if m:
        _, s, Vt = np.linalg.svd(J)
        for k in range(s.size):
            rank += s[k] > null_rtol * s[0]
    else:
        for k in range(n_v):
            Vt[k, k] = 1.0
    n_N = n_v - rank
    N = np.empty((n_v, n_N))
    for i in range(n_v):
        for k in range(n_N):
            N[i, k] = Vt[rank + k, i]
    if n_e == 0:
        return N, n_N, False
    Ne = np.empty((n_e, n_N))
    for k in range(n_e):
        for j in range(n_N):
            Ne[k, j] = N[elastic[k], j]
    _, s, Vt = np.linalg.svd(Ne)
    moving = 0
    for k in range(s.size):
        moving += s[k] > free_rtol
    return N @ _t(Vt), n_N - moving, False


@njit(cache=True)
def _project(B, X, rigid, elastic, n_x):
    """``B^T X`` for a basis ``B`` (n_v, n) whose elastic rows are the unit rows of its first
    ``n_x`` columns (:func:`_basis`'s partitioned one; ``n_x = -1``: no structure)."""
    if n_x < 0:
        return _t(B) @ X
    BrT = np.empty((B.shape[1], rigid.size))
    Xr = np.empty((rigid.size, X.shape[1]))
    for i in range(rigid.size):
        for j in range(B.shape[1]):
            BrT[j, i] = B[rigid[i], j]
        for j in range(X.shape[1]):
            Xr[i, j] = X[rigid[i], j]
    Y = BrT @ Xr
    for k in range(n_x):
        for j in range(X.shape[1]):
            Y[k, j] += X[elastic[k], j]
    return Y


@njit(cache=True)
def _elastic_basis(N, n_z, Ks, M, blocks, n_free):
    """The basis ``B`` (n_v, n_N - n_f) of the elastic motions: the constrained motions ``N``
    (:func:`_basis`) less the ``n_f = min(n_free, n_z)`` free ones, mass-orthogonal to them;
    ``Ks`` the stiffness in compressed rows (:func:`_sparse`).

    The free motions leave the elastic coordinates at rest, so they lie among the last
    ``n_z`` columns ``N_z``; they are the ``n_f`` directions of least energy
    ``w^T N_z^T K N_z w`` (the count comes from a structural decision,
    :func:`sim.solvers.frames.free_motions`: the order of the energies, not a threshold on them,
    picks them out).  The other columns of ``N`` (all of ``N_z`` but the ``n_f`` pivots of the
    free directions) are then made mass-orthogonal to them: ``B = N_c - N_f P``,
    ``P = (N_f^T M N_f)^-1 N_f^T M N_c``.  ``B``'s elastic rows are still those of ``N``.
    """
    n_v, n_N = N.shape
    n_x = n_N - n_z
    n_f = min(n_free, n_z)
    if n_f == 0:
        return N
    Nz = np.empty((n_v, n_z))
    for i in range(n_v):
        for k in range(n_z):
            Nz[i, k] = N[i, n_x + k]
    _, W = np.linalg.eigh(_symmetric(_t(Nz) @ _sparse_product(*Ks, Nz)))
    Wf = _columns(W, n_f)
    Nf = Nz @ Wf
    order = _pivots(Wf, n_f)
    Nc = np.empty((n_v, n_N - n_f))
    for i in range(n_v):
        for k in range(n_x):
            Nc[i, k] = N[i, k]
        for k in range(n_z - n_f):
            Nc[i, n_x + k] = Nz[i, order[n_f + k]]
    MNfT = _t(block_product(M, blocks, Nf))
    B = Nf @ _small_solve(MNfT @ Nf, MNfT @ Nc)
    for i in range(n_v):
        for k in range(n_N - n_f):
            B[i, k] = Nc[i, k] - B[i, k]
    return B


@njit(cache=True, nogil=True)
def _general(mass, Kt, J, layout, memory, settings, max_iter, F):
    """The modes of any model (:data:`SOLVER`'s arguments; of the ``layout``, ``owner``,
    ``K_inv``, ``K_inv_chol`` and ``bounds`` unused): the stiffness ``K = K_body + Kt`` (n_v,
    n_v; ``Kt`` the tangent of the springs, compliant drives and stiffening, or empty), rows
    ``J``, ``n_free`` free motions; ``memory = (order, X, X_prev)``: the dependent columns
    ``order`` of the last call (in and out, :func:`_basis`) and the last subspaces; at most
    ``max_iter`` sweeps.

    ``mass`` (:class:`Mass`) dense.  The basis of :func:`_basis` less the free motions
    (:func:`_elastic_basis`), the reduced
    pencil ``(B^T K B, B^T M B)``, its lowest modes by subspace iteration from the motions
    ``X`` (n_v, p; extrapolated with ``X_prev`` as in :func:`_constant`; a dense start where
    they are not motions: empty, or the constant path's), and the static displacements
    ``B (B^T K B)^-1 B^T F``.  Where ``B^T K B`` is not positive definite (a structure
    buckled under its axial loads, or a motion nothing holds that the free-motion count
    missed) nothing is computed: ``sweeps = -3``, for the caller to report.

    With free motions the statics are those of inertia relief: the load's part that would
    accelerate the free motions (``M`` times them) is taken off, and the displacement is
    mass-orthogonal to them, as the modes are.
    """
    K_body, rigid, elastic, blocks, n_free = layout.K_body, layout.rigid, layout.elastic, layout.blocks, layout.n_free
    M = mass.dense
    order, X, X_prev = memory
    r, tol, basis_max, null_rtol, free_rtol = settings
    n_v = M.shape[0]
    K = K_body.copy()
    if Kt.size:
        for i in range(n_v):
            for k in range(n_v):
                K[i, k] += Kt[i, k]
    N, n_z, partitioned = _basis(J, rigid, elastic, basis_max, null_rtol, free_rtol, order)
    Ks = _sparse(K)
    B = _elastic_basis(N, n_z, Ks, M, blocks, n_free)
    n_x = N.shape[1] - n_z if partitioned else -1
    n = B.shape[1]
    Me = _symmetric(_project(B, block_product(M, blocks, B), rigid, elastic, n_x))
    Ke = _symmetric(_project(B, _sparse_product(*Ks, B), rigid, elastic, n_x))
    b = _project(B, F, rigid, elastic, n_x)
    p = min(n, 2 * r, r + 8)
    try:
        np.linalg.cholesky(Ke)
    except Exception:   # noqa: BLE001 (numba: no exception classes)
        none = np.zeros((n_v, 0))
        return np.zeros(0), none, none, np.zeros((0, 0)), -3, np.zeros((n_v, F.shape[1]))
    K_inv = _symmetric(_t(np.linalg.inv(Ke)))
    # The last subspaces, kept as motions (n_v, p), extrapolated and brought into this basis
    # by the mass: the basis's columns need not keep their meaning (pivots, arbitrary
    # null-space bases), and the first sweep needs only B^T M X.
    start = np.zeros((n, 0))
    if X.shape[0] == n_v and X.shape[1] >= p:
        if X_prev.shape[0] == n_v and X_prev.shape[1] == X.shape[1]:
            D = X_prev @ (_t(X_prev) @ block_product(M, blocks, X))
            E = np.empty((n_v, X.shape[1]))
            for i in range(n_v):
                for j in range(X.shape[1]):
                    E[i, j] = 2.0 * X[i, j] - D[i, j]
            X = E
        start = _project(B, block_product(M, blocks, X), rigid, elastic, n_x)
    bounds = np.array([0, n])
    lam, Xr, sweeps = subspace_iteration(K_inv, np.zeros((0, 0)), bounds, Me, start, r, tol, max_iter, runtime(True))
    y = K_inv @ b
    X = B @ Xr
    shapes = _columns(X, r)
    return lam, shapes, block_product(M, blocks, shapes), X, sweeps, B @ y


@njit(cache=True, nogil=True)
def _constant(mass, Kt, J, layout, memory, settings, max_iter, F):
    """The modes where the stiffness is the bodies' constant one and the rows ``J`` fix the
    reference coordinates (:data:`SOLVER`'s arguments; of the ``layout``, ``K_inv``,
    ``K_inv_chol`` the inverse of the stiffness on the elastic coordinates and of its Cholesky
    factor, block diagonal over ``bounds``; ``Kt``, ``K_body``, ``n_free``, ``order``,
    ``null_rtol``, ``free_rtol`` unused): the partitioned basis of the module docstring.  Turned down (``sweeps = -2``,
    empty arrays, for :func:`_general` to take) where ``J`` is not square over the reference
    coordinates or the basis is ill-conditioned (an entry of ``G`` above ``basis_max``).
    """
    rigid, elastic, owner = layout.rigid, layout.elastic, layout.owner
    _, X, X_prev = memory
    r, tol, basis_max, _, _ = settings
    n_v = rigid.size + elastic.size
    if J.shape[0] == rigid.size:
        R, val = _parts(mass, layout)
        g, Gc, c, W, S = _coupling(R, J, rigid, elastic, owner)
        if g <= basis_max:
            stiff = (layout.K_inv, layout.K_inv_chol, layout.bounds, layout.band, layout.K_band)
            band = layout.K_band.size > 0
            Mn = (_structured_mass(val, layout, c, W, S) if band
                  else _dense_mass(_reduced_mass(mass.dense, elastic, owner, c, W, S)))
            n_e = elastic.size
            if X_prev.shape[1] == X.shape[1] and X.shape[1] > 0 and X.shape[0] == n_e and X_prev.shape[0] == n_e:
                # Linear extrapolation of the subspace: X + (X - X_prev C), C = X_prev^T Mn X aligning
                # the previous Ritz vectors (signs, mixing) with the last ones.
                C = X_prev.T @ _mass_times(Mn, X)
                X = 2.0 * X - X_prev @ C
            elif X.shape[0] != n_e:
                X = np.zeros((n_e, 0))
            lam, X, sweeps = _iterate(stiff, Mn, X, r, tol, max_iter, runtime(False))
            shapes = _expand(Gc, c, rigid, elastic, _columns(X, r))   # Phi = N X_r
            MPhi = parts_product(R, val, layout, shapes) if band else block_product(mass.dense, layout.blocks, shapes)
            return (lam, shapes, MPhi, X, sweeps, _static(F, Gc, c, rigid, elastic, stiff))
    none = np.zeros((n_v, 0))
    return np.zeros(0), none, none, np.zeros((0, 0)), -2, np.zeros((n_v, F.shape[1]))


_VEC, _MAT, _IDX = types.float64[::1], types.float64[:, ::1], types.int64[::1]
LAYOUT = types.NamedTuple([_MAT, _IDX, _IDX, _IDX, _IDX, _MAT, _MAT, _IDX, types.int64, types.int64[:, ::1], _VEC,
                           types.Array(types.int64, 2, "C", readonly=True),     # m_col: as the tables' patterns
                           typeof(empty_saddle())], Layout)
SETTINGS = types.NamedTuple([types.int64] + [types.float64] * 4, Settings)
# The one signature of the modes solvers, which the compiled frames (sim.solvers.frames) call
# through an address (solver_address): (mass, Kt, J, layout, memory = (order, X, X_prev),
# settings, max_iter, F) -> (lam (p,), shapes (n_v, r), mass_shapes (n_v, r), X, sweeps,
# static (n_v, m)), sweeps the iterations (-1: a dense solve, -2: turned down, -3: no positive
# stiffness).
MASS = types.NamedUniTuple(_MAT, 3, Mass)
SOLVER = types.Tuple((_VEC, _MAT, _MAT, _MAT, types.int64, _MAT))(
    MASS, _MAT, _MAT, LAYOUT, types.Tuple((_IDX, _MAT, _MAT)), SETTINGS, types.int64, _MAT)
solver = caller(SOLVER)    # in compiled code: solver(address)(...)


def solver_address(constant, saddle=False):
    """The address of :func:`_constant` (``constant``), :func:`sim.solvers.saddle.modes`
    (``saddle``) or :func:`_general`, compiled or loaded from numba's cache for :data:`SOLVER`
    (only the one asked for)."""
    if saddle and not constant:
        from sim.solvers.saddle import modes
        return pointer(modes, SOLVER)
    return pointer(_constant if constant else _general, SOLVER)


def elastic_blocks(model, K=None):
    """The flexible bodies' stiffness on their own elastic coordinates, symmetric, in the order
    of ``v`` (``K_ee`` is block diagonal over them): a list of (n_f, n_f)
    :class:`sim.model.sparse_rows.SparseRows`.  ``K``: the bodies' stiffness (n_v, n_v)
    (default: each body's ``K_ff``, the same entries, no square array)."""
    elastic, blocks, start = model.v_elastic, [], 0
    for body in model.bodies:
        if body.n_f:
            e = elastic[start:start + body.n_f]
            start += body.n_f
            Kb = body.stiffness_ff if K is None else SparseRows.of_dense(K[np.ix_(e, e)])
            blocks.append(Kb.symmetric())
    return blocks


def elastic_stiffness(model, K=None):
    """The bodies' stiffness on the elastic coordinates, ``K_ee`` (n_e, n_e), symmetric: the
    blocks of :func:`elastic_blocks` on its diagonal."""
    n_e = len(model.v_elastic)
    K_ee, start = np.zeros((n_e, n_e)), 0
    for Kb in elastic_blocks(model, K):
        n = Kb.shape[0]
        K_ee[start:start + n, start:start + n] = Kb.toarray()
        start += n
    return K_ee


def definite(model, K=None):
    """Whether the bodies' stiffness on the elastic coordinates is positive definite (no body
    free to move rigidly in its reference): each body's block's lowest eigenvalue positive,
    or, from :data:`BAND_MIN` elastic coordinates, the pivots of its band factors (an LU
    without pivoting of a symmetric matrix: all positive exactly where it is positive
    definite; linear in the coordinates where the eigenvalues are cubic).  ``K``: the bodies'
    stiffness (n_v, n_v) (default :func:`sim.model.dynamics.stiffness_matrix`)."""
    blocks = elastic_blocks(model, K)
    if len(model.v_elastic) >= BAND_MIN and _band_factors(blocks) is not None:
        return True
    return all(np.linalg.eigvalsh(Kb.toarray())[0] > 0 for Kb in blocks)


def _band_factors(blocks):
    """The band path's stiffness (:class:`Layout`): ``band`` (k, 2) each block's half-band and
    offset in ``K_band``, its LU factors (:func:`sim.solvers.blocks.band_lu`); None where a
    block's half-band exceeds :data:`HALF_BAND_MAX` or a pivot is not positive."""
    band = np.zeros((len(blocks), 2), dtype=np.int64)
    parts, off = [], 0
    for b, Kb in enumerate(blocks):
        i, j, v = Kb.entries()
        n, w = Kb.shape[0], Kb.half_band()
        if w > HALF_BAND_MAX:
            return None
        s = 2 * w + 1
        data = np.zeros(n * s)
        data[i * s + w + j - i] = v         # row i's entry (i, j) at w + j - i
        if not band_lu(data, n, w)[1] > 0.0:
            return None
        band[b] = w, off
        parts.append(data)
        off += data.size
    return band, np.concatenate(parts) if parts else np.zeros(0)


def _mass_pattern(model):
    """``M_ee``'s nonzeros (each flexible body's ``mass_ff``): the columns (n_e, w) of each
    row's, elastic numbering, -1 after the last."""
    rows, start = [], 0
    for body in model.bodies:
        if body.n_f:
            i, j, v = body.mass_ff.entries()
            nonzero = v != 0.0
            cut = np.searchsorted(i[nonzero], np.arange(1, body.n_f))
            rows += [r + start for r in np.split(j[nonzero], cut)]
            start += body.n_f
    col = np.full((len(rows), max((r.size for r in rows), default=0)), -1, dtype=np.int64)
    for i, r in enumerate(rows):
        col[i, :r.size] = r
    return col


class Tracker:
    """Lowest modes of one model at successive nearby configurations (module docstring).

    Holds the bodies' stiffness (and, where it is the whole constant stiffness, its inverse
    on the elastic coordinates, or from :data:`BAND_MIN` of them its band factors and
    ``M_ee``'s pattern), the number of free motions and the last subspace (STYLE: an
    explicit object, no hidden cache).  Any model: where :meth:`constant` does not hold, or
    the rows do not fix the reference coordinates, the modes come from the general basis of
    :func:`_general`.

    Parameters
    ----------
    model : Model
    count : int
        Modes wanted, r.
    free : int
        Free motions of the model with the actuators locked
        (:func:`sim.solvers.frames.free_motions`).
    store : tuple, optional
        :meth:`mass_store` of another tracker of the same model (read only: trackers of
        several threads share it).
    """

    def __init__(self, model, count, free=0, store=None):
        self.model, self.count, self.free = model, int(count), int(free)
        self.rigid = np.asarray(model.v_rigid, dtype=np.int64)
        self.elastic = np.asarray(model.v_elastic, dtype=np.int64)
        self._K_body = None     # formed where the general solver needs it (memory: n_v x n_v)
        self.constant = self.free == 0 and Tracker.applies(model)
        self.K_inv = self.K_inv_chol = np.zeros((0, 0))
        self.band, self.K_band = np.zeros((0, 2), dtype=np.int64), np.zeros(0)
        self.m_col = np.zeros((0, 0), dtype=np.int64)
        factors = None
        if self.constant and self.elastic.size >= BAND_MIN:   # the band path (module docstring)
            factors = _band_factors(elastic_blocks(model))
        if factors is not None:
            self.band, self.K_band = factors
            self.m_col = _mass_pattern(model)
        elif self.constant:
            K = elastic_stiffness(model)
            self.K_inv_chol = np.linalg.inv(np.linalg.cholesky(K))
            self.K_inv = self.K_inv_chol.T @ self.K_inv_chol
        self.m_col.setflags(write=False)    # read-only as the tables' patterns: one compilation of pattern_product
        # Bodies: elastic coordinate k belongs to body owner[k] (whose six reference
        # coordinates are rigid[6 b : 6 b + 6], model.v_rigid's order); K is block diagonal
        # over the flexible bodies' ranges bounds[i]:bounds[i + 1].
        n_f = np.array([b.n_f for b in model.bodies], dtype=np.int64)
        self.owner = np.repeat(np.arange(n_f.size, dtype=np.int64), n_f)
        # M is block diagonal over the bodies' ranges blocks[b]:blocks[b + 1] of v.
        self.blocks = np.concatenate([[0], np.cumsum(6 + n_f)]).astype(np.int64)
        assert np.array_equal(self.rigid[::6], self.blocks[:-1]), "v: each body's reference, then elastic coordinates"
        self.bounds = np.concatenate([[0], np.cumsum(n_f[n_f > 0])]).astype(np.int64)
        self.seed = np.zeros((0, 0))
        self._store = store
        self._saddle = None     # the saddle-point solver's structure (use_saddle); False: none
        self._saddle_stores = None
        self.reset()
        self.sweeps = []   # per call: iterations, -1 dense solve
        self.turned_down = 0   # frames the constant solver left to the general one
        self.loaded = False   # the solvers compiled or loaded in this process (at the first call: the
                              # compiled frames of sim.solvers.frames need only their own kernel)

    @staticmethod
    def applies(model, K=None):
        """True when the stiffness is the bodies' constant ``K_ff`` only, positive definite, and
        there are elastic coordinates (no lumped springs, compliant drives or geometric
        stiffening; no body whose reference leaves it free to move rigidly): the partitioned
        basis with the constant ``K_ee`` of the module docstring.  ``K``: the bodies'
        stiffness (n_v, n_v), if at hand."""
        if not (len(model.v_elastic) > 0 and not dynamics._has_lumped(model)
                and not compliant(model).any() and not stretched(model)):
            return False
        return definite(model, K)

    @property
    def K_body(self):
        """The bodies' stiffness (n_v, n_v) (:func:`sim.model.dynamics.stiffness_matrix`), formed
        at the first access."""
        if self._K_body is None:
            self._K_body = np.ascontiguousarray(dynamics.stiffness_matrix(model=self.model))
        return self._K_body

    def layout(self, general=None):
        """The model's part of the solvers' arguments (:data:`SOLVER`): for this tracker's own
        solver (``general`` None: the constant one's, or the saddle-point one's where
        :meth:`use_saddle` holds, neither reading ``K_body``, left empty; else the general
        one's), or for the general solver (``general`` True: with ``K_body``, formed then)."""
        own = general is None
        general = not self.constant if own else general
        saddle = self._saddle if self._saddle and not self.constant else empty_saddle()
        body = general and not (own and self._saddle)
        return Layout(self.K_body if body else np.zeros((0, 0)), self.rigid, self.elastic, self.owner, self.blocks,
                      self.K_inv, self.K_inv_chol, self.bounds, self.free, self.band, self.K_band, self.m_col, saddle)

    def use_saddle(self, ev):
        """Whether the general solver's structures go to the saddle-point solver
        (:mod:`sim.solvers.saddle`): where the stiffness is not the bodies' constant one, from
        :data:`sim.solvers.saddle.SADDLE_MIN` velocity coordinates, and the structure has
        bodies to block (``ev``: the model's evaluator, whose locked rows it takes).  Its
        structure is made at the first call, this tracker's own."""
        from sim.solvers.saddle import SADDLE_MIN, structure
        if self._saddle is None and not self.constant and self.model.n_v >= SADDLE_MIN:
            self._saddle = structure(ev, np.flatnonzero(ev.keep)) or False
        return bool(self._saddle)

    def saddle_stores(self, t, stiff):
        """Where the compiled frames' evaluation writes ``M`` and ``K_t`` for the saddle-point
        solver (:meth:`use_saddle` made its structure): two :class:`sim.kernels.store.Store`
        on its structure, for the tables ``t``, whose values are the structure's own ``M`` and
        (with ``stiff``; else empty) ``K_t`` arrays -- no (n_v, n_v) array.  Made at the first
        call."""
        if self._saddle_stores is None:
            sad = self._saddle
            Ms, _, Ks = stores(t, sad.pat, False)
            self._saddle_stores = Ms._replace(values=sad.M), Ks._replace(values=sad.K_t if stiff else np.zeros(0))
        return self._saddle_stores

    def mass_store(self, t):
        """Where ``M`` is held on its structure in the compiled frames: on the band path from
        :data:`STORE_MIN` velocity coordinates, ``M``'s :class:`sim.kernels.store.Store` for the
        evaluation of the tables ``t`` (:func:`sim.solvers.blocks.pattern` without constraint
        unknowns; ``values`` empty: each compiled call holds its own) and the positions ``pos``
        (n_e, w) of :class:`Mass`'s ``val`` in its values (-1 past a row's last); elsewhere an
        empty store and ``pos`` (0, 0): the dense ``M`` (n_v, n_v).  Made at the first call."""
        if self._store is None:
            n_v, none = self.model.n_v, np.zeros((0, 0), dtype=np.int64)
            self._store = empty_store(), none
            structure = held(t, False) if self.K_band.size and n_v >= STORE_MIN else None
            if structure is not None:
                col = self.m_col
                pos = np.full(col.shape, -1, dtype=np.int64)
                i, k = np.nonzero(col >= 0)
                pos[i, k] = positions(structure.M)(self.elastic[i], self.elastic[col[i, k]])    # (its ptr, rows)
                self._store = structure.M._replace(values=np.zeros(0)), pos
        return self._store

    def settings(self):
        """How the solvers iterate for this tracker (:class:`Settings`)."""
        return Settings(self.count, RESIDUAL_TOL, BASIS_MAX, NULL_RTOL, FREE_RTOL)

    def reset(self):
        """Forget the last subspaces: the next :meth:`modes` starts from :attr:`seed` (at most
        :data:`SEED_ITER` sweeps), or from a dense solve where there is none.

        ``seed`` (n, p): Ritz vectors of another configuration of the same motion (its
        :attr:`X`), e.g. the first, a common start for trackers that must give the same
        numbers whichever of them computes an instant (:class:`sim.solvers.frames.FramePool`).
        """
        self.X = self.seed
        self.X_prev = np.zeros((0, 0))
        self.order = np.full(self.model.n_v, -1, dtype=np.int64)
        self.fresh = True

    def modes(self, M, J, loads=None, Kt=None):
        """The lowest ``count`` modes with mass ``M`` and locked constraint rows ``J``.

        Parameters
        ----------
        M : ndarray, shape (n_v, n_v)
        J : ndarray, shape (n_c, n_v)
            Joint and locked-actuator rows.
        loads : ndarray, shape (n_v, m), optional
            Loads whose static displacements are wanted too.
        Kt : ndarray, shape (n_v, n_v), optional
            The tangent stiffness of the springs, compliant drives and stiffening at this
            configuration (:meth:`sim.model.evaluator.Evaluator.evaluate`'s ``K_t``), added to
            the bodies'.

        Returns
        -------
        omega : ndarray, shape (r,)
            Circular frequencies [rad/s], ascending.
        shapes, mass_shapes : ndarray, shape (n_v, r)
            ``Phi`` (``Phi^T M Phi = 1``) and ``M Phi``.
        static : ndarray, shape (n_v, m)
            Only with ``loads``: ``N K_c^-1 N^T loads``, the constrained static displacements
            (with free motions, those of inertia relief: :func:`_general`).
        """
        with signals_deferred() if not self.loaded else contextlib.nullcontext():   # see sim.model.evaluator
            F = np.zeros((M.shape[0], 0)) if loads is None else np.ascontiguousarray(loads, dtype=float)
            Kt = np.zeros((0, 0)) if Kt is None else np.ascontiguousarray(Kt, dtype=float)
            arguments = (Mass.of(M), Kt, np.ascontiguousarray(J, dtype=float), self.layout(),
                         (self.order, self.X, self.X_prev), self.settings(), SEED_ITER if self.fresh else MAX_ITER, F)
            found = _constant(*arguments) if self.constant else None
            if self._saddle and not self.constant:
                from sim.solvers.saddle import modes as saddle_modes
                found = saddle_modes(*arguments)
            if found is not None and found[4] == -2:    # turned down: the general basis
                self.turned_down += 1
            if found is None or found[4] == -2:
                found = _general(*arguments[:3], self.layout(True), *arguments[4:])
            lam, shapes, mass_shapes, X, sweeps, static = found
        self.loaded = True
        self.sweeps.append(sweeps)
        # No extrapolation from a seed: it is not the previous instant.
        self.X_prev = np.zeros((0, 0)) if self.fresh else self.X
        self.X, self.fresh = X, False
        omega = np.sqrt(np.maximum(lam[:self.count], 0.0))
        return (omega, shapes, mass_shapes) if loads is None else (omega, shapes, mass_shapes, static)
