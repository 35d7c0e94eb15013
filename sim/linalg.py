"""Dense linear algebra with the LAPACK drivers that suit constraint Jacobians, and a compiled
LU for the small, sparse, square ones (:func:`sparse_lu`).

The divide-and-conquer drivers (``gesdd``, ``gelsd``, ``syevd``) that numpy and scipy use by
default are fast on generic matrices but can be 50-500x slower on the sparse, highly
structured, rank-deficient Jacobians of closed-loop mechanisms (NaVARo's 93 x 78 Jacobian:
``gesdd`` some sixty times ``gesvd``'s time).  Every SVD, null space and
least-squares solve of the engine goes through this module.

Roundoff leaves entries of order 1e-40 .. 1e-80 where the exact value is zero (products of
rotation matrices with exact-zero structure); their products in BLAS underflow to subnormal
numbers, which x86 processes about 100x slower.  :func:`flush` zeroes entries below
``FLUSH_RTOL`` of the largest one, far below the 1e-16 resolution of the data.

Matrices of at most :data:`NUMPY_MAX` rows and columns (a planar robot's, a small spatial
one's) go to numpy's LAPACK instead: importing ``scipy.linalg`` takes about 0.1 s (scipy's
array-API layer imports ``numpy.testing`` and ``numpy.f2py`` with it), more than a small
model's whole transient, and at such sizes every driver takes tens of microseconds.  Above
it numpy's SVD-based null space costs about twice the pivoted QR (and many mid-size runs
import scipy for their modes anyway): scipy is imported on the first larger matrix.
"""
import importlib
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

from sim.kernels.common import FLUSH_RTOL, flush as flush_kernel, runtime

# Stacks of at least this many matrices are split between the cores (singular_values).
STACK_SPLIT = 64
SVD_DRIVER = "gesvd"
LSTSQ_DRIVER = "gelsy"
# Largest row or column count decomposed by numpy (the module docstring says why).
NUMPY_MAX = 64


def prefetch():
    """Start importing ``scipy.linalg`` in a background thread, for a caller that will soon
    decompose a matrix past :data:`NUMPY_MAX` (the transient's static deflections): the first
    such matrix then waits for what is left of the import (0.1 s), not for all of it."""
    if "scipy.linalg" not in sys.modules:
        threading.Thread(target=importlib.import_module, args=("scipy.linalg",), daemon=True).start()


def _small(A):
    return max(A.shape) <= NUMPY_MAX


def flush(A):
    """Copy of A with the entries below ``FLUSH_RTOL * max|A|`` set to exactly zero."""
    A = np.array(A, dtype=float)        # a C-ordered copy: flattened in place below
    # The compiled kernel: two passes and no temporaries, 5x numpy's on a stack of Jacobians.
    flush_kernel(A.reshape(-1), FLUSH_RTOL)
    return A


def svd(A, full_matrices=False, compute_uv=True):
    """Singular value decomposition of A (m, n) with the QR-iteration driver (numpy's
    divide-and-conquer one on a small A, :data:`NUMPY_MAX`)."""
    A = flush(A)
    if _small(A):
        return np.linalg.svd(A, full_matrices=full_matrices, compute_uv=compute_uv)
    import scipy.linalg
    return scipy.linalg.svd(A, full_matrices=full_matrices, compute_uv=compute_uv,
                            lapack_driver=SVD_DRIVER, check_finite=False)


def null_space(A, rcond):
    """Orthonormal basis (n, n - rank) of the null space of A (m, n).

    Rank-revealing QR with column pivoting of ``A^T`` (rank: ``|R_kk| > rcond |R_00|``): one
    Householder factorisation, 2-3x cheaper than an SVD completed to a full basis on the
    constraint Jacobians here, and reliable because their rank gaps span many decades.  A
    small A (:data:`NUMPY_MAX`): the right singular vectors of numpy's full SVD (rank:
    ``sigma_k > rcond sigma_0``).
    """
    if A.shape[0] == 0:
        return np.eye(A.shape[1])
    A = flush(A)
    if _small(A):
        _, s, Vh = np.linalg.svd(A, full_matrices=True)
        return flush(Vh[_count(s, rcond):].T)
    import scipy.linalg
    Q, R, _ = scipy.linalg.qr(A.T, mode="full", pivoting=True, check_finite=False)
    return flush(Q[:, _count(np.abs(np.diag(R)), rcond):])


def rank(A, rcond):
    """The rank of A (m, n) by :func:`null_space`'s rule (its basis has ``n - rank`` columns),
    without the basis: for m << n, time and memory linear in n where the basis is (n, n)."""
    if A.shape[0] == 0:
        return 0
    A = flush(A)
    if _small(A):
        return _count(np.linalg.svd(A, compute_uv=False), rcond)
    import scipy.linalg
    R, _ = scipy.linalg.qr(A.T, mode="r", pivoting=True, check_finite=False)
    return _count(np.abs(np.diag(R)), rcond)


def _count(d, rcond):
    """How many of the descending ``d`` (singular values, or pivoted QR's diagonal) exceed
    ``rcond d[0]``."""
    return int(np.sum(d > rcond * d[0])) if d.size and d[0] > 0 else 0


def singular_values(A):
    """Singular values of A (..., m, n), descending, length min(m, n), from the eigenvalues of
    the smaller Gram matrix: half an SVD's cost, with an absolute error of about
    ``eps sigma_1^2 / sigma_k`` on ``sigma_k`` -- enough for the ratios ``sigma_k / sigma_1``
    above ``1e-7`` that decide singular configurations.  A stack of many matrices is split
    between the cores (LAPACK releases the GIL)."""
    A = flush(A)
    T = np.swapaxes(A, -1, -2)
    G = T @ A if A.shape[-2] >= A.shape[-1] else A @ T
    if G.ndim > 2 and len(G) >= STACK_SPLIT:
        with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
            w = np.concatenate(list(pool.map(np.linalg.eigvalsh, np.array_split(G, os.cpu_count() or 1))))
    else:
        w = np.linalg.eigvalsh(G)
    return np.sqrt(np.maximum(w[..., ::-1], 0.0))


def lstsq(A, b, cond):
    """Minimum-norm least-squares solution of A x = b (complete orthogonal factorisation; on a
    small A, :data:`NUMPY_MAX`, numpy's SVD-based one), singular values below ``cond`` times
    the largest taken as zero."""
    A = flush(A)
    if _small(A):
        return np.linalg.lstsq(A, b, rcond=cond)[0]
    import scipy.linalg
    return scipy.linalg.lstsq(A, b, cond=cond, lapack_driver=LSTSQ_DRIVER, check_finite=False)[0]


def spd_solve(A, b):
    """``A x = b`` for a symmetric positive definite ``A`` (n, n) by its Cholesky factor (on a
    small A, :data:`NUMPY_MAX`, numpy's; above, scipy's ``posv``), or None where ``A`` is not
    positive definite to round-off: the factorisation fails, or passes with a reciprocal
    condition below the machine epsilon (scipy's warning; on a small A, the squared ratio of
    the factor's smallest to largest diagonal entry), the answer then round-off."""
    import warnings
    A = 0.5 * (A + A.T)
    if _small(A):
        try:
            L = np.linalg.cholesky(A)
        except np.linalg.LinAlgError:
            return None
        d = np.abs(np.diag(L))
        if not d.size or (d.min() / d.max()) ** 2 < np.finfo(float).eps:
            return None if d.size else np.zeros_like(b, dtype=float)
        return np.linalg.solve(L.T, np.linalg.solve(L, b))
    import scipy.linalg
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", scipy.linalg.LinAlgWarning)
            return scipy.linalg.solve(A, b, assume_a="pos", check_finite=False)
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgWarning):
        return None


def partitioned_null_space(A, dependent, independent, rcond):
    """Basis of the null space of A (m, n) in which the ``independent`` coordinates are free.

    With ``A = [A_d, A_i]`` (columns ``dependent``, ``independent``) and ``A_d`` of full row
    rank m, ``A x = 0`` leaves ``x_i`` free and fixes ``x_d = -A_d^+ A_i x_i + Z w``, with ``Z``
    an orthonormal basis of the null space of ``A_d``.  The basis is therefore

        B = [[-A_d^+ A_i, Z], [1, 0]]     (rows: dependent, independent; here in A's order),

    from one pivoted QR of ``A_d^T`` (n_d, m) instead of the (n, m) one of :func:`null_space`.
    It is not orthonormal: its singular values lie between 1 and about
    ``sqrt(1 + ||A_d^+ A_i||^2)``, moderate while ``A_d`` is well conditioned.

    Parameters
    ----------
    A : ndarray, shape (m, n)
    dependent, independent : ndarray of int, shapes (n_d,) and (n - n_d,)
        A partition of the columns.
    rcond : float
        ``A_d`` counts as of full row rank when the last diagonal entry of its pivoted QR
        factor exceeds ``rcond`` times the first; otherwise the partition is refused.

    Returns
    -------
    ndarray, shape (n, n - m), or None
        None when ``A_d`` is not of full row rank at ``rcond`` (redundant or nearly dependent
        rows), where :func:`null_space` applies.
    """
    m, n = A.shape
    n_i = independent.size
    if m > dependent.size:
        return None
    B = np.zeros((n, n - m))
    B[independent, np.arange(n_i)] = 1.0
    if m == 0:
        B[dependent, n_i:] = np.eye(dependent.size)
        return B
    import scipy.linalg
    A = flush(A)
    Q, R, p = scipy.linalg.qr(A[:, dependent].T, mode="full", pivoting=True, check_finite=False)
    d = np.abs(np.diag(R))
    if not d[m - 1] > rcond * d[0]:
        return None
    # A_d = P R_1^T Q_1^T (P the row permutation p), so A_d^+ A_i = Q_1 R_1^-T P^T A_i.
    X = scipy.linalg.solve_triangular(R[:m], A[np.ix_(p, independent)], trans="T", check_finite=False)
    B[dependent, :n_i] = -(Q[:, :m] @ X)
    B[dependent, n_i:] = Q[:, m:]
    return B


@njit(cache=True, nogil=True)
def sparse_lu(A):
    """LU factors with partial pivoting of a square ``A`` (n, n) with few nonzeros, stored dense.

    LAPACK ``getrf``'s algorithm and pivots, with loops that skip the zero entries of the pivot
    rows and columns, and the factors' patterns kept for the solves (:func:`lu_solve`): on a
    constraint Jacobian over the reference coordinates (the 3-RRRU's 60 x 60, ~250 nonzeros)
    ~5e3 multiply-adds instead of ~1.4e5 and no call overhead: less than half the time of
    ``A^T A`` and its Cholesky factor, a quarter of ``gesv``'s.

    Returns
    -------
    factors : tuple
        ``(LU, perm, l_ptr, l_row, u_ptr, u_col)``: ``L`` (unit diagonal, not stored) below the
        diagonal of ``LU``, ``U`` on and above, ``A[perm] = L U``; column ``k`` of ``L`` has
        its nonzeros in rows ``l_row[l_ptr[k]:l_ptr[k + 1]]``, row ``k`` of ``U`` right of
        the diagonal in columns ``u_col[u_ptr[k]:u_ptr[k + 1]]``.
    ok : bool
        False at a zero pivot (``A`` singular); the factors are then unusable.
    """
    n = A.shape[0]
    LU = A.copy()
    perm = np.arange(n)
    l_ptr, u_ptr = np.zeros(n + 1, dtype=np.int64), np.zeros(n + 1, dtype=np.int64)
    l_row, u_col = np.empty(n * n, dtype=np.int64), np.empty(n * n, dtype=np.int64)
    ok = True
    for k in range(n):
        p, big = k, abs(LU[k, k])
        for i in range(k + 1, n):
            if abs(LU[i, k]) > big:
                p, big = i, abs(LU[i, k])
        if big == 0.0:
            ok = False
            break
        if p != k:
            perm[k], perm[p] = perm[p], perm[k]
            for j in range(n):
                LU[k, j], LU[p, j] = LU[p, j], LU[k, j]
        # Row k of U is final from here: its pattern is the one the elimination uses.
        u_ptr[k + 1] = u_ptr[k]
        for j in range(k + 1, n):
            if LU[k, j] != 0.0:
                u_col[u_ptr[k + 1]] = j
                u_ptr[k + 1] += 1
        for i in range(k + 1, n):
            if LU[i, k] != 0.0:
                f = LU[i, k] / LU[k, k]
                LU[i, k] = f
                for t in range(u_ptr[k], u_ptr[k + 1]):
                    LU[i, u_col[t]] -= f * LU[k, u_col[t]]
    # L's pattern once the row exchanges are done.
    for k in range(n if ok else 0):
        l_ptr[k + 1] = l_ptr[k]
        for i in range(k + 1, n):
            if LU[i, k] != 0.0:
                l_row[l_ptr[k + 1]] = i
                l_ptr[k + 1] += 1
    return (LU, perm, l_ptr, l_row, u_ptr, u_col), ok


@njit(cache=True, nogil=True)
def lu_solve(factors, B, trans):
    """``A^-1 B`` (``trans``: ``A^-T B``; a run-time flag, :func:`sim.kernels.common.runtime`, from compiled
    code) from :func:`sparse_lu`'s factors; ``B`` (n, m)."""
    LU, perm, l_ptr, l_row, u_ptr, u_col = factors
    n, m = B.shape
    X = np.empty((n, m))
    if not trans:
        for i in range(n):             # L y = B[perm] (element loops: a row slice is a view to build)
            for t in range(m):
                X[i, t] = B[perm[i], t]
        for k in range(n):
            for s in range(l_ptr[k], l_ptr[k + 1]):
                i = l_row[s]
                for t in range(m):
                    X[i, t] -= LU[i, k] * X[k, t]
        for k in range(n - 1, -1, -1):  # U x = y
            for s in range(u_ptr[k], u_ptr[k + 1]):
                j = u_col[s]
                for t in range(m):
                    X[k, t] -= LU[k, j] * X[j, t]
            for t in range(m):
                X[k, t] /= LU[k, k]
        return X
    Y = B.copy()
    for k in range(n):                  # U^T y = B
        for t in range(m):
            Y[k, t] /= LU[k, k]
        for s in range(u_ptr[k], u_ptr[k + 1]):
            j = u_col[s]
            for t in range(m):
                Y[j, t] -= LU[k, j] * Y[k, t]
    for k in range(n - 1, -1, -1):      # L^T z = y
        for s in range(l_ptr[k], l_ptr[k + 1]):
            i = l_row[s]
            for t in range(m):
                Y[k, t] -= LU[i, k] * Y[i, t]
    for i in range(n):                  # x[perm] = z
        for t in range(m):
            X[perm[i], t] = Y[i, t]
    return X


@njit(cache=True, nogil=True)
def lu_solve_vector(factors, b, trans):
    """:func:`lu_solve` for one right-hand side ``b`` (n, 1): the same sweeps over the
    factors' nonzeros without the loop over right-hand sides inside them, whose overhead on
    one column doubles the time (the rigid motion solves nine per sample, six of them for its
    singular guard).  Separate from :func:`lu_solve`, so that its many callers with several
    right-hand sides do not compile it."""
    LU, perm, l_ptr, l_row, u_ptr, u_col = factors
    n = b.shape[0]
    y = np.empty(n)
    X = np.empty((n, 1))
    if not trans:
        for i in range(n):                  # L y = b[perm]
            y[i] = b[perm[i], 0]
        for k in range(n):
            yk = y[k]
            for s in range(l_ptr[k], l_ptr[k + 1]):
                y[l_row[s]] -= LU[l_row[s], k] * yk
        for k in range(n - 1, -1, -1):      # U x = y
            acc = y[k]
            for s in range(u_ptr[k], u_ptr[k + 1]):
                acc -= LU[k, u_col[s]] * y[u_col[s]]
            y[k] = acc / LU[k, k]
            X[k, 0] = y[k]
        return X
    for i in range(n):
        y[i] = b[i, 0]
    for k in range(n):                      # U^T y = b
        yk = y[k] / LU[k, k]
        y[k] = yk
        for s in range(u_ptr[k], u_ptr[k + 1]):
            y[u_col[s]] -= LU[k, u_col[s]] * yk
    for k in range(n - 1, -1, -1):          # L^T z = y
        acc = y[k]
        for s in range(l_ptr[k], l_ptr[k + 1]):
            acc -= LU[l_row[s], k] * y[l_row[s]]
        y[k] = acc
    for i in range(n):                      # x[perm] = z
        X[perm[i], 0] = y[i]
    return X


@njit(cache=True, nogil=True)
def sparse_solve(A, B):
    """``A^-1 B`` by :func:`sparse_lu` for a square ``A`` (n, n) with few nonzeros, ``B``
    (n, m); an array of NaN when ``A`` is singular."""
    factors, ok = sparse_lu(A)
    if not ok:
        return np.full(B.shape, np.nan)
    return lu_solve(factors, B, runtime(False))


# Condition numbers of a sequence of Jacobians (condition_number).
CONDITION_BLOCK = 2        # vectors per end of the spectrum: a symmetric robot's pairs of singular values
CONDITION_TOL = 1e-11      # width of the certified bracket of an extreme eigenvalue, relative
CONDITION_TOL_MAX = 1e-4   # wider brackets (condition numbers above ~3e4): the dense eigensolve
CONDITION_MAX_ITER = 24    # factorisations per end before the dense eigensolve takes over
CERTIFY_ROUNDOFF = 512     # Cholesky's backward error, in eps ||A^T A||: the narrowest bracket at the bottom

COLD_SHIFT = 1e-3          # the relative shift to try first after a dense eigensolve


def condition_state(n):
    """Warm-start state of :func:`condition_number` for matrices of ``n`` columns: the
    vectors ``(2, CONDITION_BLOCK, n)`` of the top and the bottom of the spectrum and the
    relative shifts ``(2,)`` to try first; NaN shifts until a dense eigensolve has set them."""
    return np.zeros((2, CONDITION_BLOCK, n)), np.full(2, np.nan)


@njit(cache=True, nogil=True)
def _rows(A):
    """Nonzero pattern of ``A`` (m, n) by rows: pointers (m + 1,) and columns."""
    m, n = A.shape
    ptr, col = np.zeros(m + 1, dtype=np.int64), np.empty(m * n, dtype=np.int64)
    for r in range(m):
        ptr[r + 1] = ptr[r]
        for c in range(n):
            if A[r, c] != 0.0:
                col[ptr[r + 1]] = c
                ptr[r + 1] += 1
    return ptr, col


@njit(cache=True, nogil=True)
def _ritz(A, ptr, col, s, X):
    """Rayleigh-Ritz of ``s A^T A`` on the rows of ``X`` (p, n): ``X`` orthonormalised and
    rotated in place to the Ritz vectors, the Ritz values (p,) returned in descending order.
    Products with ``A`` by its pattern; ``x^T A^T A x = |A x|^2`` is accurate to
    ``eps cond`` relative even at the bottom of the spectrum (``eps cond^2`` through ``A^T A``)."""
    p, n = X.shape
    for j in range(p):              # Gram-Schmidt, twice for orthogonality to round-off
        for _ in range(2):
            for i in range(j):
                X[j] -= (X[i] @ X[j]) * X[i]
        norm = np.sqrt(X[j] @ X[j])
        if not norm > 1e-8:         # collapsed onto the others: start afresh from a unit vector
            X[j] = 0.0
            X[j, j] = 1.0
            for i in range(j):
                X[j] -= (X[i] @ X[j]) * X[i]
            norm = np.sqrt(X[j] @ X[j])
        X[j] /= norm
    AX = np.zeros((p, ptr.size - 1))
    for r in range(ptr.size - 1):
        for t in range(ptr[r], ptr[r + 1]):
            for j in range(p):
                AX[j, r] += A[r, col[t]] * X[j, col[t]]
    lam, S = np.linalg.eigh(s * (AX @ AX.T))
    Y = X.copy()
    for j in range(p):
        X[j] = 0.0
        for i in range(p):
            X[j] += S[i, p - 1 - j] * Y[i]
    return lam[::-1].copy()


@njit(cache=True, nogil=True)
def _shifted_cholesky(G, s, mu, L, ptr, row):
    """Cholesky factor of ``mu I - s G`` (``G`` symmetric, lower triangle read): ``L`` (n, n)
    lower, column ``k``'s nonzeros below the diagonal in rows ``row[ptr[k]:ptr[k + 1]]``,
    skipping zeros as :func:`sparse_lu` does.  False where the matrix is not positive
    definite: then ``mu`` lies below the largest eigenvalue of ``s G`` (to round-off)."""
    n = G.shape[0]
    for i in range(n):
        for j in range(i + 1):
            L[i, j] = -s * G[i, j]
        L[i, i] += mu
    for k in range(n):
        d = L[k, k]
        if not d > 0.0:
            return False
        d = np.sqrt(d)
        L[k, k] = d
        ptr[k + 1] = ptr[k]
        for i in range(k + 1, n):
            if L[i, k] != 0.0:
                L[i, k] /= d
                row[ptr[k + 1]] = i
                ptr[k + 1] += 1
        for a in range(ptr[k], ptr[k + 1]):
            i, f = row[a], L[row[a], k]
            for b in range(ptr[k], a + 1):
                L[i, row[b]] -= f * L[row[b], k]
    return True


@njit(cache=True, nogil=True)
def _cholesky_solve(L, ptr, row, x):
    """In place: ``x`` (n,) becomes ``(L L^T)^-1 x`` (:func:`_shifted_cholesky`'s factor)."""
    n = x.size
    for k in range(n):
        x[k] /= L[k, k]
        for a in range(ptr[k], ptr[k + 1]):
            x[row[a]] -= L[row[a], k] * x[k]
    for k in range(n - 1, -1, -1):
        for a in range(ptr[k], ptr[k + 1]):
            x[k] -= L[row[a], k] * x[row[a]]
        x[k] /= L[k, k]


@njit(cache=True, nogil=True)
def _extreme(sparse, G, s, X, w, top, factor):
    """Largest eigenvalue of ``s A^T A`` (``s = 1``: the top of the spectrum of ``A^T A``;
    ``-1``: minus the bottom), certified: ``(theta, ok, w0)``; ``sparse = (A, ptr, col)`` the
    matrix with its rows' nonzero pattern (:func:`_rows`), ``G`` the lower triangle of
    ``A^T A``, ``factor = (L, lptr, lrow)`` room for the Cholesky factors.

    The Ritz value ``theta`` of the block ``X`` (p, n; the previous matrix's Ritz vectors,
    updated in place) is a lower bound.  A Cholesky factor of ``mu I - s A^T A`` at
    ``mu = theta + w |theta|`` proves ``mu`` an upper bound; it then serves one block
    shift-invert step, whose convergence factor ``(mu - lambda_1) / (mu - lambda_{p+1})`` is
    small because ``mu`` lies just beyond the end of the spectrum.  Repeated with the new
    ``theta``'s predicted error as ``w`` (widened 16-fold where a factorisation fails) until
    ``w`` is within the tolerance: ``CONDITION_TOL``, or at the bottom (``top``, the largest
    eigenvalue, given) the round-off ``CERTIFY_ROUNDOFF eps top / |theta|`` of a factor of
    ``A^T A`` shifted that close.  ``ok`` False after ``CONDITION_MAX_ITER`` factorisations or
    for a tolerance above ``CONDITION_TOL_MAX``.  ``w0``: the relative correction of the first
    Ritz value, the shift to try first at the next matrix.
    """
    A, ptr, col = sparse
    L, lptr, lrow = factor
    theta = _ritz(A, ptr, col, s, X)
    first = theta[0]
    p = X.shape[0]
    for _ in range(CONDITION_MAX_ITER):
        scale = abs(theta[0])
        tol = max(CONDITION_TOL, CERTIFY_ROUNDOFF * np.finfo(np.float64).eps * top / scale)
        if not tol <= CONDITION_TOL_MAX:
            break
        if not _shifted_cholesky(G, s, theta[0] + w * scale, L, lptr, lrow):
            w *= 16.0
            continue
        if w <= tol:
            return theta[0], True, abs(theta[0] - first) / scale
        for j in range(p):
            _cholesky_solve(L, lptr, lrow, X[j])
        last = theta[0]
        theta = _ritz(A, ptr, col, s, X)
        # The new Ritz value's error: the old one's (at most w) times the square of the
        # convergence factor, the gap to the rest of the spectrum taken from the block's
        # spread (an underestimate: no faster than the change it made).
        gap = abs(theta[0] - theta[p - 1]) / abs(theta[0])
        w = max(tol, min(w, 4.0 * w * (w / gap) ** 2 if gap > 0.0 else w, 4.0 * abs(theta[0] - last) / abs(theta[0])))
    return theta[0], False, w


@njit(cache=True, nogil=True)
def condition_number(A, basis, shift):
    """Condition number ``sigma_max / sigma_min`` of ``A`` (m, n), ``m >= n``, as from the
    eigenvalues of ``A^T A`` (``inf`` where singular), at a fraction of a dense eigensolve's
    cost along a sequence of nearby matrices (a sampled motion).

    The two extreme eigenvalues of ``A^T A`` by certified block shift-invert iteration
    (:func:`_extreme`), warm-started from the previous matrix's Ritz vectors: each is bracketed
    to ``CONDITION_TOL`` relative at the top, and at the bottom to the larger of that and
    ``CERTIFY_ROUNDOFF eps cond^2``, the round-off of any computation through ``A^T A`` (the
    dense eigensolve's included); the Ritz values themselves are accurate to round-off.
    The first matrix, and any where a bracket cannot be had (``CONDITION_MAX_ITER``
    factorisations, a condition number above ~3e4, a singular ``A``), take the dense
    eigensolve of ``A^T A`` (:func:`_dense_condition`), which starts the iterations afresh.  The products and the
    Cholesky factors skip the zeros of a sparse ``A`` (a constraint Jacobian): a tenth of the
    eigensolve's time on a 78 x 78 Jacobian with 340 nonzeros.

    Parameters
    ----------
    A : ndarray, shape (m, n)
        Flushed (:func:`flush`).
    basis : ndarray, shape (2, CONDITION_BLOCK, n)
        Warm-start vectors of the top and the bottom (:func:`condition_state`), updated in place.
    shift : ndarray, shape (2,)
        Relative shifts to try first, updated in place.

    Returns
    -------
    float
    """
    if not (shift[0] > 0.0 and shift[1] > 0.0):
        return _dense_condition(A, basis, shift)
    n = A.shape[1]
    ptr, col = _rows(A)
    G = np.zeros((n, n))
    for r in range(ptr.size - 1):                  # the lower triangle of A^T A by A's pattern
        for a in range(ptr[r], ptr[r + 1]):
            i = col[a]
            for b in range(ptr[r], a + 1):
                G[i, col[b]] += A[r, i] * A[r, col[b]]
    L = np.empty((n, n))
    lptr, lrow = np.zeros(n + 1, dtype=np.int64), np.empty(n * n, dtype=np.int64)
    top, ok, w = _extreme((A, ptr, col), G, 1.0, basis[0], shift[0], 0.0, (L, lptr, lrow))
    if ok:
        shift[0] = min(max(4.0 * w, CONDITION_TOL), 1e-2)
        bottom, ok, w = _extreme((A, ptr, col), G, -1.0, basis[1], shift[1], top, (L, lptr, lrow))
        if ok and bottom < 0.0:
            shift[1] = min(max(4.0 * w, CONDITION_TOL), 1e-2)
            return np.sqrt(top / -bottom)
    return _dense_condition(A, basis, shift)


@njit(cache=True, nogil=True)
def _dense_condition(A, basis, shift):
    """:func:`condition_number` by the dense eigensolve of ``A^T A``, whose extreme
    eigenvectors start the iterations at the next matrix."""
    lam, V = np.linalg.eigh(A.T @ A)
    p = basis.shape[1]
    for j in range(p):
        basis[0, j] = V[:, -1 - j]
        basis[1, j] = V[:, j]
    shift[:] = COLD_SHIFT
    return np.sqrt(lam[-1] / lam[0]) if lam[0] > 0 else np.inf
