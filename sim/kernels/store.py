r"""A matrix of the velocity coordinates held on its structure (:class:`Store`), and the writes
of the kernels that serve both it and a dense array.

The mass matrix ``M``, ``dQ/dv`` and the tangent stiffness of a floating-frame model are block
diagonal by body -- each body's reference rows and columns dense, its elastic block banded --
but for the few marker columns that springs and actuators couple.  The transient's block path
(:mod:`sim.solvers.blocks`) holds them as values on the iteration matrix's structure (CSC,
``m`` columns, of which the first ``n_v`` are the velocity coordinates'), linear in the
elements where the dense (n_v, n_v) arrays grow with their square.  The kernels write every
entry through :func:`put` and :func:`add` (and, where the entry's place in the structure is
known from the loop that writes it, :func:`put_ff`, :func:`put_w`, :func:`element_add`):
on a dense array the plain indexed write, the same machine code as before; on a
:class:`Store` the value at its position, taken from tables (a body's reference rows and
columns, its elastic block by the group's ``ff`` and ``W_nz``, the stiffening elements) or,
for the couplings between bodies, by a binary search of the column.
"""
from typing import NamedTuple

import numpy as np
from numba import njit, types
from numba.extending import overload


class Store(NamedTuple):
    """A (n_v, n_v) matrix by its values ``values`` (nnz,) on the structure ``ptr`` (m + 1,),
    ``rows`` (nnz,) (by columns, rows ascending; ``m >= n_v``: rows and columns past ``n_v``
    belong to others, e.g. the constraint rows of the iteration matrix), with the positions the
    kernels write at: ``start`` (n_v,) the first coordinate of each coordinate's body;
    ``first`` (n_v,) the position of ``(start[j], j)`` in column ``j``, where the body's six
    reference rows follow one another (and all its rows, in a reference column): entry ``(i,
    j)`` of a body's reference rows or columns is at ``first[j] + i - start[j]``; ``ff`` (n_v, w):
    ``ff[i, k]`` the position of ``(i, v0 + 6 + ff_g[f, k])`` for the elastic coordinate ``i =
    v0 + 6 + f`` of a body of group ``g`` (its ``ff``; -1 padding); ``w_start`` (n_v,) at each
    body's first coordinate ``v0`` and ``w_pos``: ``w_pos[w_start[v0] + p]`` the position of
    the body's ``p``-th nonzero of ``W_nz``; ``st`` (n_s, e, k, k) the positions of the
    stiffened bodies' element matrices (:func:`sim.kernels.stretch.stretch`).  Three stores,
    of ``M``, ``dQ/dv`` and ``K_t``, share all but their values (:func:`sim.solvers.blocks.stores`);
    empty ``values``: no such matrix."""

    values: np.ndarray
    ptr: np.ndarray
    rows: np.ndarray
    start: np.ndarray
    first: np.ndarray
    ff: np.ndarray
    w_start: np.ndarray
    w_pos: np.ndarray
    st: np.ndarray


def empty_store():
    """A :class:`Store` of nothing (the dense path's place holder: one type for both paths)."""
    i1 = np.zeros(0, dtype=np.int64)
    i2 = np.zeros((0, 0), dtype=np.int64)
    return Store(np.zeros(0), i1, i1, i1, i1, i2, i1, i1, np.zeros((0, 0, 0, 0), dtype=np.int64))


@njit(cache=True)
def search(ptr, rows, i, j):
    """The position of entry ``(i, j)`` on the structure ``ptr, rows`` (binary search of column
    ``j``); -1 off it."""
    lo, hi = ptr[j], ptr[j + 1]
    while lo < hi:
        mid = (lo + hi) >> 1
        r = rows[mid]
        if r < i:
            lo = mid + 1
        elif r > i:
            hi = mid
        else:
            return mid
    return -1


@njit(cache=True, inline="always")
def product(S, n, x, y):
    """``y = A x`` (n,) for the symmetric ``A`` held by ``S`` (its first ``n`` rows and
    columns): column ``i`` of ``A`` is its row ``i``, its terms added in ascending order."""
    for i in range(n):
        acc = 0.0
        for e in range(S.ptr[i], S.ptr[i + 1]):
            r = S.rows[e]
            if r >= n:
                break
            acc += S.values[e] * x[r]
        y[i] = acc


def writer(A):
    """What :func:`put` and the others write through: a dense array itself; a :class:`Store`'s
    arrays as a tuple, read from the record once per kernel call (each read of a record's
    field costs a reference count)."""
    return A


def put(A, i, j, x):
    """``A[i, j] = x`` for an entry of a body's reference rows or columns (compiled code: ``A`` an
    array or a store's :func:`writer`, where it is at ``first[j] + i - start[j]``: no branch,
    which in the bodies' loops costs more than the arithmetic)."""
    A[i, j] = x


def add(A, i, j, x):
    """``A[i, j] += x`` for an entry of a body's reference rows or columns (as :func:`put`)."""
    A[i, j] += x


def couple(A, i, j, x):
    """``A[i, j] += x`` for any entry (compiled code: ``A`` an array or a store's :func:`writer`,
    where it is found by :func:`search`; off the structure, or zero, nothing is added)."""
    A[i, j] += x


def put_ff(A, i, j, k, x):
    """``A[i, j] = x``, ``j`` the ``k``-th column of the group's ``ff`` in row ``i``."""
    A[i, j] = x


def put_w(A, i, j, v0, p, x):
    """``A[i, j] = x``, the ``p``-th of the ``W_nz`` of the body that starts at ``v0``."""
    A[i, j] = x


def values(A):
    """The array of ``A``'s entries: ``A`` itself, or a :class:`Store`'s ``values``."""
    return A


def element_target(Kt, M, b, n, with_K):
    """Where :func:`sim.kernels.stretch.stretch` writes stiffened body ``b``'s tangent (``n``
    coordinates): a dense (n, n) to be added into ``Kt`` (:func:`element_done`), or the
    store's values with the body's positions; ``M`` (not written) without ``with_K``."""
    return np.zeros((n, n)) if with_K else M


def element_add(T, e, a, c, i, j, x):
    """``T[i, j] += x``: entry ``(a, c)`` of element ``e`` (:func:`element_target`)."""
    T[i, j] += x


def element_done(Kt, i, n, T):
    """Add the dense tangent ``T`` into ``Kt`` at ``i`` (nothing on a store: written in place)."""
    Kt[i:i + n, i:i + n] += T


def _dense(A):
    return isinstance(A, types.Array)


@overload(writer)
def _writer(A):
    if _dense(A):
        return lambda A: A
    return lambda A: (A.values, A.ptr, A.rows, A.start, A.first, A.ff, A.w_start, A.w_pos)


@overload(put, inline="always")
def _put(A, i, j, x):
    if _dense(A):
        def impl(A, i, j, x):
            A[i, j] = x
    else:
        def impl(A, i, j, x):
            A[0][A[4][j] + i - A[3][j]] = x
    return impl


@overload(add, inline="always")
def _add(A, i, j, x):
    if _dense(A):
        def impl(A, i, j, x):
            A[i, j] += x
    else:
        def impl(A, i, j, x):
            A[0][A[4][j] + i - A[3][j]] += x
    return impl


@overload(couple)
def _couple(A, i, j, x):
    if _dense(A):
        def impl(A, i, j, x):
            A[i, j] += x
    else:
        def impl(A, i, j, x):
            if x != 0.0:        # nothing to add: no search (a row's zeros, say)
                p = search(A[1], A[2], i, j)
                if p >= 0:
                    A[0][p] += x
    return impl


@overload(put_ff, inline="always")
def _put_ff(A, i, j, k, x):
    if _dense(A):
        def impl(A, i, j, k, x):
            A[i, j] = x
    else:
        def impl(A, i, j, k, x):
            A[0][A[5][i, k]] = x
    return impl


@overload(put_w, inline="always")
def _put_w(A, i, j, v0, p, x):
    if _dense(A):
        def impl(A, i, j, v0, p, x):
            A[i, j] = x
    else:
        def impl(A, i, j, v0, p, x):
            A[0][A[7][A[6][v0] + p]] = x
    return impl


@overload(values)
def _values(A):
    if _dense(A):
        return lambda A: A
    return lambda A: A.values


@overload(element_target)
def _element_target(Kt, M, b, n, with_K):
    if _dense(Kt):
        return lambda Kt, M, b, n, with_K: np.zeros((n, n)) if with_K else M
    return lambda Kt, M, b, n, with_K: (Kt.values, Kt.st[b])


@overload(element_add, inline="always")
def _element_add(T, e, a, c, i, j, x):
    if _dense(T):
        def impl(T, e, a, c, i, j, x):
            T[i, j] += x
    else:
        def impl(T, e, a, c, i, j, x):
            T[0][T[1][e, a, c]] += x
    return impl


@overload(element_done)
def _element_done(Kt, i, n, T):
    if _dense(Kt):
        def impl(Kt, i, n, T):
            Kt[i:i + n, i:i + n] += T
    else:
        def impl(Kt, i, n, T):
            pass
    return impl
