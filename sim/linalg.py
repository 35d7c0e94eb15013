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


def lstsq(A, b, cond):
    """Minimum-norm least-squares solution of A x = b (complete orthogonal factorisation)."""
    return scipy.linalg.lstsq(flush(A), b, cond=cond, lapack_driver=LSTSQ_DRIVER, check_finite=False)[0]
