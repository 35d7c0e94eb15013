"""Dense linear algebra with the LAPACK drivers that suit constraint Jacobians.

The divide-and-conquer drivers (``gesdd``, ``gelsd``, ``syevd``) that numpy and scipy use by
default are fast on generic matrices but can be 50-500x slower on the sparse, highly
structured, rank-deficient Jacobians of closed-loop mechanisms (measured here on NaVARo:
``gesdd`` 120 ms against ``gesvd`` 2 ms for an 93 x 78 matrix).  Every SVD, null space and
least-squares solve of the engine goes through this module.

Roundoff leaves entries of order 1e-40 .. 1e-80 where the exact value is zero (products of
rotation matrices with exact-zero structure); their products in BLAS underflow to subnormal
numbers, which x86 processes about 100x slower.  :func:`flush` zeroes entries below
``FLUSH_RTOL`` of the largest one, far below the 1e-16 resolution of the data.
"""
import numpy as np
import scipy.linalg
import scipy.linalg.lapack

SVD_DRIVER = "gesvd"
FLUSH_RTOL = 1e-20


def flush(A):
    """Copy of A with the entries below ``FLUSH_RTOL * max|A|`` set to exactly zero."""
    A = np.array(A, dtype=float)
    if A.size:
        A[np.abs(A) < FLUSH_RTOL * np.abs(A).max()] = 0.0
    return A
LSTSQ_DRIVER = "gelsy"


def svd(A, full_matrices=False, compute_uv=True):
    """Singular value decomposition of A (m, n) with the QR-iteration driver."""
    return scipy.linalg.svd(flush(A), full_matrices=full_matrices, compute_uv=compute_uv,
                            lapack_driver=SVD_DRIVER, check_finite=False)


def null_space(A, rcond):
    """Orthonormal basis (n, n - rank) of the null space of A (m, n).

    Rank-revealing QR with column pivoting of ``A^T`` (rank: ``|R_kk| > rcond |R_00|``): one
    Householder factorisation, 2-3x cheaper than an SVD completed to a full basis on the
    constraint Jacobians here, and reliable because their rank gaps span many decades.
    """
    if A.shape[0] == 0:
        return np.eye(A.shape[1])
    Q, R, _ = scipy.linalg.qr(flush(A).T, mode="full", pivoting=True, check_finite=False)
    d = np.abs(np.diag(R))
    rank = int(np.sum(d > rcond * d[0])) if d.size and d[0] > 0 else 0
    return flush(Q[:, rank:])


def normal_solver(A, rank, condition=True):
    """Minimum-norm least-squares solver of ``A x = b`` at a known rank, from ``A^T A``.

    At full column rank a Cholesky factor of ``A^T A`` solves (its eigenvalues, without
    vectors, give the condition number); below it, or where the factorisation fails, the
    eigenpairs of ``A^T A`` give the minimum-norm solution.  Either way a fraction of an SVD's
    cost on the tall Jacobians of the rigid robot, and accurate while the condition number is
    well below ``1 / sqrt(eps)``: the callers refuse configurations beyond ``1e5``.

    Parameters
    ----------
    A : ndarray, shape (m, n)
        Flushed (:func:`flush`).
    rank : int
        The expected rank (from a regular configuration).
    condition : bool
        Compute the condition number over the rank (otherwise NaN).

    Returns
    -------
    solve : callable
        ``solve(b)``, ``b`` of shape (m,), returns ``x`` of shape (n,).
    cond : float
        ``sigma_1 / sigma_rank`` (inf when singular), or NaN.
    """
    G = A.T @ A
    if rank == A.shape[1]:
        # LAPACK directly: these solves are small and many, the wrappers' checks cost as much.
        U, info = scipy.linalg.lapack.dpotrf(G)
        if info == 0:
            cond = np.nan
            if condition:
                lam = np.linalg.eigvalsh(G)
                cond = np.sqrt(lam[-1] / lam[0]) if lam[0] > 0 else np.inf
            return (lambda b: scipy.linalg.lapack.dpotrs(U, A.T @ b)[0]), cond
    lam, V = np.linalg.eigh(G)
    lam, V = lam[::-1][:rank], V[:, ::-1][:, :rank]
    cond = np.sqrt(lam[0] / lam[-1]) if lam[-1] > 0 else np.inf
    return (lambda b: V @ ((V.T @ (A.T @ b)) / lam)), cond


def singular_values(A):
    """Singular values of A (m, n), descending, length min(m, n), from the eigenvalues of the
    smaller Gram matrix: half an SVD's cost, with an absolute error of about
    ``eps sigma_1^2 / sigma_k`` on ``sigma_k`` -- enough for the ratios ``sigma_k / sigma_1``
    above ``1e-7`` that decide singular configurations."""
    A = flush(A)
    G = A.T @ A if A.shape[0] >= A.shape[1] else A @ A.T
    return np.sqrt(np.maximum(np.linalg.eigvalsh(G)[::-1], 0.0))


def lstsq(A, b, cond):
    """Minimum-norm least-squares solution of A x = b (complete orthogonal factorisation)."""
    return scipy.linalg.lstsq(flush(A), b, cond=cond, lapack_driver=LSTSQ_DRIVER, check_finite=False)[0]


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
