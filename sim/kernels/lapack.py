"""LAPACK's LU factorisation (``dgetrf``) callable from compiled code.

numba links its own :func:`numpy.linalg` support to the LAPACK of scipy
(``scipy.linalg.cython_lapack``) through external symbols of its helper library; this module
declares ``dgetrf`` the same way, so that compiled loops factorise without returning to
Python, and stay cacheable (a symbol, not a process address).  The back-substitution is
:func:`sim.solvers.integrators.lu_solve`.
"""
from numba import njit, types
from numba.np.linalg import _LAPACK, ensure_lapack

ensure_lapack()
_dgetrf = _LAPACK().numba_xxgetrf(types.float64)
_KIND = ord("d")


@njit(cache=True, nogil=True)
def getrf(a, piv):
    """In place: LU factors of the Fortran-ordered square ``a`` (n, n), row pivots ``piv``
    (n,) int32, 0-based as scipy's ``getrf`` returns them; returns LAPACK's ``info`` (> 0: an
    exactly zero pivot)."""
    n = a.shape[0]
    info = _dgetrf(_KIND, n, n, a.ctypes, n, piv.ctypes)
    for i in range(n):
        piv[i] -= 1
    return info
