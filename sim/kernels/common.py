"""Small helpers of the compiled kernels: run-time flags, 3-vector dot, flushing round-off.

Round-off leaves entries of order 1e-40 .. 1e-80 where the exact value is zero; their products
in BLAS underflow to subnormal numbers, which x86 processes about 100x slower: :func:`flush`
zeroes entries below ``FLUSH_RTOL`` of the largest one (see :mod:`sim.linalg`).
"""
import numpy as np
from numba import njit

FLUSH_RTOL = 1e-20
_BOOLS = np.array([False, True])


@njit(cache=True)
def runtime(flag):
    """``flag`` as a run-time value.  A constant passed from one compiled function to another
    is typed as a literal, and each literal compiles its own copy of the callee (and of
    everything it calls): flags pass through this, an array look-up, so that one compilation
    serves all calls."""
    return _BOOLS[1 if flag else 0]


@njit(cache=True)
def dot3(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(cache=True)
def flush(A, rtol):
    """In place: entries below ``rtol * max|A|`` set to zero (see :func:`sim.linalg.flush`)."""
    flat = A.ravel()
    top = 0.0
    for i in range(flat.size):
        if abs(flat[i]) > top:
            top = abs(flat[i])
    for i in range(flat.size):
        if abs(flat[i]) < rtol * top:
            flat[i] = 0.0
