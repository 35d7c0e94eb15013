"""A matrix by the nonzeros of each of its rows: a flexible body's constant mass and stiffness
on its elastic coordinates, and its elastic basis.

A beam's ``M_ff`` and ``K_ff`` couple each node's coordinates to its neighbours' only: a row
holds at most 18 nonzeros (a clamped end's rows fewer) whatever the number of elements, and a
selection basis (the clamp's coordinates left out) one.  Held dense they grow with the square of
the elements (28 MB a link at 128 elements, 450 MB at 512) and every product with them with it;
by rows they are linear.  The layout is the one the compiled kernels read (ELLPACK): ``cols``
(n, w) the columns of each row's nonzeros, ascending, padded with -1, and ``values`` (n, w),
zero at the padding, so that the kernels' tables are these arrays themselves
(:mod:`sim.model.tables`).

numpy only (scipy.sparse costs a small run 0.1-0.35 s of import); ``np.asarray`` of a
:class:`SparseRows` is its dense matrix, for the callers that want one (tests, small bodies).
"""
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class SparseRows:
    """A matrix (n, m) by its rows' nonzeros.

    Attributes
    ----------
    cols : ndarray of int64, shape (n, w)
        Each row's columns, ascending, then -1.
    values : ndarray, shape (n, w)
        Their entries, 0 at the padding.
    n_cols : int
        ``m``.
    """

    cols: np.ndarray
    values: np.ndarray
    n_cols: int

    # ``ndarray @ SparseRows`` and the like raise rather than make the dense matrix unasked.
    __array_ufunc__ = None

    @classmethod
    def of_entries(cls, i, j, v, shape):
        """The matrix of ``shape`` with entries ``v`` at ``(i, j)`` (broadcast together),
        repeated places summed in the order given; exact zeros dropped."""
        n, m = shape
        i, j, v = np.broadcast_arrays(np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64),
                                      np.asarray(v, dtype=float))
        i, j, v = i.ravel(), j.ravel(), v.ravel()
        key = i * m + j
        order, first, v = summed(key, v)
        key = key[order[first]]
        key, v = key[v != 0.0], v[v != 0.0]
        row, col = key // max(m, 1), key % max(m, 1)
        count = np.bincount(row, minlength=n)
        w = int(count.max(initial=0))
        start = np.cumsum(count) - count
        slot = np.arange(key.size) - np.repeat(start, count)
        cols, values = np.full((n, w), -1, dtype=np.int64), np.zeros((n, w))
        cols[row, slot], values[row, slot] = col, v
        return cls(cols, values, int(m))

    @classmethod
    def zeros(cls, n, m=None):
        """The zero matrix (n, m) (default square)."""
        return cls(np.zeros((n, 0), dtype=np.int64), np.zeros((n, 0)), n if m is None else m)

    @classmethod
    def of_dense(cls, A):
        """The nonzeros of the dense ``A`` (n, m)."""
        A = np.asarray(A, dtype=float)
        i, j = np.nonzero(A)
        return cls.of_entries(i, j, A[i, j], A.shape)

    @classmethod
    def selection(cls, keep, n):
        """The basis (n, c) whose column ``k`` is the unit vector of coordinate ``keep[k]``."""
        keep = np.asarray(keep, dtype=np.int64)
        return cls.of_entries(keep, np.arange(keep.size), np.ones(keep.size), (n, keep.size))

    @property
    def shape(self):
        return self.cols.shape[0], self.n_cols

    @property
    def nnz(self):
        return int(np.count_nonzero(self.cols >= 0))

    def entries(self):
        """``(i, j, v)`` (nnz,): the nonzeros, row by row."""
        i, w = np.nonzero(self.cols >= 0)
        return i, self.cols[i, w], self.values[i, w]

    def toarray(self):
        """The dense matrix (n, m)."""
        out = np.zeros(self.shape)
        i, j, v = self.entries()
        out[i, j] = v
        return out

    def __array__(self, dtype=None, copy=None):
        out = self.toarray()
        return out if dtype is None else out.astype(dtype)

    @property
    def T(self):
        """The transpose (m, n)."""
        i, j, v = self.entries()
        return SparseRows.of_entries(j, i, v, self.shape[::-1])

    def __matmul__(self, X):
        """``A X`` for ``X`` (m,) or (m, k), or stacked (..., m, k) as numpy's matmul, dense: one
        gather of ``X``'s rows (n, w, k), or for a stack one pass per column of the pattern (no
        (..., n, w, k) temporary)."""
        X = np.asarray(X, dtype=float)
        c = np.where(self.cols >= 0, self.cols, 0)       # the padding's values are 0
        if X.ndim <= 2:
            if not c.size:
                return np.zeros((self.shape[0],) + X.shape[1:])
            return np.einsum("nw,nw...->n...", self.values, X[c])
        out = np.zeros(X.shape[:-2] + (self.shape[0], X.shape[-1]))
        for w in range(c.shape[1]):
            out += self.values[:, w, None] * X[..., c[:, w], :]
        return out

    def apply(self, x):
        """``x A^T`` (..., n) for ``x`` (..., m): the matrix applied to vectors on the last axis."""
        x = np.asarray(x, dtype=float)
        if not self.cols.size:
            return np.zeros(x.shape[:-1] + (self.shape[0],))
        c = np.where(self.cols >= 0, self.cols, 0)
        return np.einsum("...nw,nw->...n", x[..., c], self.values)

    def quadratic(self, X):
        """``diag(X^T A X)`` (k,) for ``X`` (m, k) (``A`` square)."""
        return np.einsum("ik,ik->k", X, self @ X)

    def take(self, keep):
        """The square block on the coordinates ``keep`` (c,), ascending (``B^T A B`` for the
        selection ``B`` of :meth:`selection`)."""
        keep = np.asarray(keep, dtype=np.int64)
        pos = np.full(self.n_cols, -1, dtype=np.int64)
        pos[keep] = np.arange(keep.size)
        i, j, v = self.entries()
        at = (pos[i] >= 0) & (pos[j] >= 0) if i.size else np.zeros(0, dtype=bool)
        return SparseRows.of_entries(pos[i[at]], pos[j[at]], v[at], (keep.size, keep.size))

    def rows(self, which):
        """The rows ``which`` (a slice or indices), dense (k, m)."""
        sub = SparseRows(self.cols[which], self.values[which], self.n_cols)
        return sub.toarray()

    def symmetric(self):
        """``(A + A^T) / 2`` (``A`` square), the sums of the dense expression."""
        i, j, v = self.entries()
        return SparseRows.of_entries(np.concatenate([i, j]), np.concatenate([j, i]), 0.5 * np.concatenate([v, v]),
                                     self.shape)

    def plus(self, other):
        """``A + B``, entries summed as :meth:`of_entries` sums them (this one's first)."""
        a, b = self.entries(), other.entries()
        return SparseRows.of_entries(*(np.concatenate([x, y]) for x, y in zip(a, b)), self.shape)

    def half_band(self):
        """The largest ``|i - j|`` of a nonzero."""
        i, j, _ = self.entries()
        return int(np.abs(i - j).max(initial=0))

    def selected(self):
        """``keep`` (m,): the coordinate each column picks where this is a selection basis
        (one entry 1 per column, at most one per row), else None."""
        i, j, v = self.entries()
        if i.size != self.n_cols or np.any(v != 1.0) or distinct(j).size != j.size or distinct(i).size != i.size:
            return None
        keep = np.empty(self.n_cols, dtype=np.int64)
        keep[j] = i
        return keep


def summed(key, value):
    """Entries ``value`` (nnz,) at places ``key`` (nnz,, int) that may repeat, each place's added
    in the order given (as ``np.add.at`` into a dense array adds them): ``order`` (nnz,) the
    stable sort of the keys, ``first`` (k,) the positions in it of each distinct key's first
    entry (its place: ``key[order[first]]``, ascending) and the sums (k,)."""
    order = np.argsort(key, kind="stable")
    key = key[order]
    if not key.size:
        return order, np.zeros(0, dtype=np.int64), np.zeros(0)
    first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    return order, first, np.add.reduceat(np.asarray(value, dtype=float)[order], first)


def union(mats):
    """One pattern for several matrices of one shape: ``cols`` (n, w), the union of their
    nonzeros' columns in each row, and ``values`` (g, n, w) each one's entries there."""
    n, m = mats[0].shape
    every = distinct(np.concatenate([_keys(a) for a in mats])) if mats else np.zeros(0, dtype=np.int64)
    pattern = SparseRows.of_entries(every // max(m, 1), every % max(m, 1), np.ones(every.size), (n, m))
    values = np.zeros((len(mats),) + pattern.cols.shape)
    slot_key = np.where(pattern.cols >= 0, np.arange(n)[:, None] * m + pattern.cols, -1)
    flat = slot_key.ravel()
    valid = np.flatnonzero(flat >= 0)
    for x, a in zip(values, mats):
        i, j, v = a.entries()
        x.ravel()[valid[np.searchsorted(flat[valid], i * m + j)]] = v
    return pattern.cols, values


def _keys(a):
    i, j, _ = a.entries()
    return i * a.n_cols + j


def distinct(x):
    """The distinct values of the integers ``x``, ascending (``np.unique`` would import numpy.ma
    for its masked-array check: 20 ms a small run does without)."""
    x = np.sort(np.asarray(x).ravel())
    return x[np.r_[True, x[1:] != x[:-1]]] if x.size else x