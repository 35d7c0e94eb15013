"""LAPACK's LU factorisation (``dgetrf``) callable from compiled code.

numba links its own :func:`numpy.linalg` support to the LAPACK of scipy
(``scipy.linalg.cython_lapack``) through external symbols of its helper library; through
:func:`sim.kernels._numba.lapack_getrf` this module calls ``dgetrf`` the same way, so that
compiled loops factorise without returning to Python and stay cacheable (a symbol, not a
process address).  Where that numba internal is not available (an untested numba, or
``FFRSIM_NUMBA_PATCHES=0``), :func:`getrf` is the same algorithm (partial pivoting, the same
pivots) in compiled loops, slower on large matrices.  The back-substitution is
:func:`sim.solvers.integrators.lu_solve`.
"""
from numba import njit

from sim.kernels._numba import lapack_getrf

_dgetrf = lapack_getrf()
_KIND = ord("d")


@njit(cache=True, nogil=True)
def _getrf_lapack(a, piv):
    n = a.shape[0]
    info = _dgetrf(_KIND, n, n, a.ctypes, n, piv.ctypes)
    for i in range(n):
        piv[i] -= 1
    return info


@njit(cache=True, nogil=True)
def _getrf_loops(a, piv):
    n = a.shape[0]
    info = 0
    for k in range(n):
        p = k
        for i in range(k + 1, n):
            if abs(a[i, k]) > abs(a[p, k]):
                p = i
        piv[k] = p
        if p != k:
            for j in range(n):
                a[k, j], a[p, j] = a[p, j], a[k, j]
        pivot = a[k, k]
        if pivot == 0.0:
            if info == 0:
                info = k + 1
            continue
        for i in range(k + 1, n):
            a[i, k] /= pivot
        for j in range(k + 1, n):       # column-major: the inner loop runs down a column
            f = a[k, j]
            if f != 0.0:
                for i in range(k + 1, n):
                    a[i, j] -= a[i, k] * f
    return info


getrf = _getrf_lapack if _dgetrf is not None else _getrf_loops
getrf.__doc__ = """In place: LU factors of the Fortran-ordered square ``a`` (n, n), row pivots ``piv``
    (n,) int32, 0-based as scipy's ``getrf`` returns them; returns LAPACK's ``info`` (> 0: an
    exactly zero pivot)."""
