r"""Block factorisation of the FFR iteration matrices: each flexible body's elastic block
eliminated by a banded LU, then the small Schur complement on what is left factorised dense.

The iteration matrix ``A`` (m, m) of the transient (and the KED's frames) couples a flexible
body's elastic coordinates to its own reference coordinates and, at the nodes that carry the
joints' markers, to the joint rows; between themselves they couple as the finite elements do,
in a band when the nodes are numbered along the beam.  With ``I_b`` the elastic coordinates of
body ``b`` coupled to nothing outside the body (the *interior*) and ``B`` the rest (the
*border*: the reference coordinates, the marker nodes' coordinates, rigid bodies, the rows of
the constraints),

    A = [[A_II, A_IB], [A_BI, A_BB]],   A_II = diag(A_{I_b I_b}),
    S = A_BB - sum_b A_{B I_b} A_{I_b I_b}^-1 A_{I_b B},

and ``A_{I_b B}`` has nonzero columns only at the body's own border coordinates ``C_b`` (its
reference coordinates and marker nodes).  The solve of ``A x = r``:

    y_b = A_{I_b I_b}^-1 r_{I_b},   S x_B = r_B - sum_b A_{C_b I_b} y_b,
    x_{I_b} = y_b - X_b x_{C_b},    X_b = A_{I_b I_b}^-1 A_{I_b C_b}.

The cost is linear in the elements (``n_I w^2`` for a band of half-width ``w``, plus ``n_I
k_b`` per coupling column) where the dense LU grows with the cube of the coordinates and its
back-substitution with their square (which leaves the caches from about a thousand).  The
partition is read from the matrix itself at every factorisation (its exact zeros: the
forward-difference noise is dropped beforehand, :data:`DROP_RTOL`), so that an entry that
couples an interior coordinate outside its body only moves it to the border: the elimination
is exact.  The forward-difference correction itself is held on the structure the tables give
(:func:`pattern`) and taken by groups of columns that share no row (Curtis, Powell and Reid:
one evaluation of the residual per group, about a third of the unknowns on a robot of three
equal links).  The interior blocks are factorised without pivoting (mass plus stiffness, positive
definite up to the small velocity terms); a pivot below ``PIVOT_RTOL`` of the block's largest
sends the factorisation back to the dense path.

References
----------
G. H. Golub, C. F. Van Loan, *Matrix Computations*, 4th ed., Johns Hopkins, 2013, §4.3 (banded
LU without pivoting), §3.2.11 (block LU and the Schur complement).
A. R. Curtis, M. J. D. Powell, J. K. Reid, "On the estimation of sparse Jacobian matrices",
IMA J. Appl. Math. 13 (1974) 117-119.
"""
from typing import NamedTuple

import numpy as np
from numba import njit

from sim.kernels.lapack import getrf
from sim.kernels.store import Store
from sim.model.sparse_rows import distinct

# Relative size (to the largest entry of its row of the iteration matrix) below which an entry of the
# forward-difference Jacobian correction is round-off: the residual's last bits move with every
# perturbation (measured on the 3-RRRU: such entries at 1e-23 .. 1e-15 of their row, the
# couplings between bodies at 1e-7 and above).
DROP_RTOL = 1e-12
BAND_MAX = 48               # widest half-band of an interior block the buffers hold
COUPLING_MAX = 48           # most border coordinates a body's interior couples to
INTERIOR_MIN = 12           # fewer interior coordinates: the body stays in the border
PIVOT_RTOL = 1e-13          # smallest pivot of an interior block, relative to its largest
# Choice of the path: "auto" takes the block factorisation from this many unknowns (measured:
# benchmarks/bench_scaling.py, docs/performance.rst), "dense" and "block" force one.
BLOCK_MIN = 150
# The dense path's LU factors are solved with on their nonzeros up to this many unknowns (the
# slider-crank's 60: three quarters of its factors are zero, the solves 1.7x faster); above,
# column by column (the pattern's room, 12 bytes an entry, would grow with the LU's own).
PATTERN_SOLVE_MAX = 600
MODES = {"auto": 0, "dense": 1, "block": 2}
MODES_DENSE = MODES["dense"]
# info entries (SHARED: the dense factors in the known part's memory, the block path's set-up)
N_BORDER, ACTIVE, MODE, BLOCKED, SHARED = range(5)


class Blocks(NamedTuple):
    """Partition and factors of :func:`factor` (allocated once, :func:`blocks`).

    ``ranges`` (nb, 3): each flexible body's first velocity coordinate, first and past-last
    elastic coordinate; ``owner`` (m,) the body of each unknown (-1: none), ``interior`` (m,)
    flags and then positions; ``border`` (m,) the border's unknowns in order, ``where`` (m,)
    each unknown's position in the border (-1: interior); ``index`` (m,) the bodies' interior
    then coupling unknowns, one after the other; ``ptr`` (nb, 7) per body ``n_I, w, k``, and
    the offsets of its interior list, coupling list, band and ``X, C`` in ``data``; ``data``
    the band factors and coupling blocks; ``work`` (2 m,) scratch; ``info``: border size,
    whether the last factorisation is blocked, the mode (:data:`MODES`), factorisations blocked,
    whether the caller keeps the dense factors in the matrix's own memory (the block path);
    ``W, V, cap, cap_piv`` Woodbury's factors of the low-rank part (:func:`low_rank`);
    ``schur`` (n_S, n_S, Fortran order) the Schur complement's LU factors in its leading (n_B,
    n_B), room for the border the structure leaves (:func:`blocks`; a larger one: the dense LU);
    ``lu_ptr`` (2, m + 1), ``lu_rows`` (m (m - 1),), ``lu_values``: the dense LU factors'
    nonzeros off the diagonal, by columns, L's then U's (:func:`lu_pattern`; empty: the
    dense path's factors are solved with column by column, :func:`lu_solve`).
    """

    ranges: np.ndarray
    owner: np.ndarray
    interior: np.ndarray
    border: np.ndarray
    where: np.ndarray
    index: np.ndarray
    ptr: np.ndarray
    data: np.ndarray
    work: np.ndarray
    info: np.ndarray
    W: np.ndarray
    V: np.ndarray
    cap: np.ndarray
    cap_piv: np.ndarray
    schur: np.ndarray
    lu_ptr: np.ndarray
    lu_rows: np.ndarray
    lu_values: np.ndarray


class Pattern(NamedTuple):
    """Where the forward-difference Jacobian correction of the iteration matrix (m, m) can be
    nonzero, by columns (:func:`pattern`), the groups of columns it is taken by and its values.

    ``ptr`` (m + 1,), ``rows`` (nnz,): column ``k``'s rows are ``rows[ptr[k]:ptr[k + 1]]``,
    ascending; ``group_ptr`` (n_g + 1,), ``group_cols`` (m,): the columns of group ``g`` are
    ``group_cols[group_ptr[g]:group_ptr[g + 1]]``, no two of them with a row in common (one
    evaluation of the residual perturbs them all); ``values`` (nnz,) the correction's entries
    in ``rows``' order, ``known`` (nnz,) the known part's (the iteration matrix is ``known +
    values`` there and zero elsewhere: :func:`factor` reads it so).  All empty: the correction
    is a dense (m, m) array, column by column.
    """

    ptr: np.ndarray
    rows: np.ndarray
    group_ptr: np.ndarray
    group_cols: np.ndarray
    values: np.ndarray
    known: np.ndarray


def no_pattern():
    """The empty :class:`Pattern`: the dense correction."""
    none = np.zeros(0, dtype=np.int64)
    return Pattern(none, none, none, none, np.zeros(0), np.zeros(0))


def pattern(t, kept, D, m, ranges, extra=None):
    """The structure of the step residual's Jacobian (``m = n_v + kept.size`` unknowns ``(a,
    lam)``), from the tables alone, and its column groups (:class:`Pattern`); the empty one when
    no flexible body of ``ranges`` (:class:`Blocks`) keeps :data:`INTERIOR_MIN` elastic
    coordinates that no marker touches (the block factorisation has nothing to eliminate).

    Each term of the residual reads few coordinates: a body's equations its own (its reference
    rows and columns on all of them; its elastic rows and columns among themselves on the
    nonzeros of ``M_ff``, ``K_ff``, of the second moments ``T`` (velocity and inertia terms)
    and of its stiffening elements); a constraint row's primitive, its ``J^T lam`` and the
    forces on its actuator (servo, rotor, compliance) the columns of its two markers; a
    lumped spring its markers'; the damping ``D`` (n_v, n_v; empty: none) its nonzeros; and
    the entries ``extra`` (2, k) (rows, columns) of a term of another use (the saddle-point
    form's penalty, :func:`sim.solvers.saddle.structure`).  The low-rank modal damping is left
    out (the differences are taken without it).

    Parameters
    ----------
    t : sim.kernels.equations.Tables
    kept : ndarray of int, shape (n_c,)
        The evaluation's rows that are constraints of the step (after the ``n_v`` accelerations).
    D : ndarray, shape (n_v, n_v) or (0, 0)
    m : int
    ranges : ndarray of int, shape (nb, 3)
    extra : ndarray of int, shape (2, k), optional

    Returns
    -------
    Pattern
    """
    n_v = int(t.n_v)
    pieces = [np.stack([np.arange(m)] * 2)]             # the diagonal: every column has a row

    def square(c):
        c = distinct(c[c >= 0])
        pieces.append(np.stack([np.repeat(c, c.size), np.tile(c, c.size)]))
        return c
    border = np.zeros(m, dtype=bool)
    for v0, nf in zip(t.body_v, t.body_nf):             # reference rows and columns
        body, ref = np.arange(v0, v0 + 6 + nf), np.arange(v0, v0 + 6)
        pieces += [np.stack([np.repeat(ref, body.size), np.tile(body, 6)]),
                   np.stack([np.tile(body, 6), np.repeat(ref, body.size)])]
    for ff, Tnz, starts in ((g.ff, g.T_nz, g.v_start) for g in t.groups):
        f, j = np.nonzero(ff >= 0)
        e = Tnz[(Tnz[:, 2] > 0) & (Tnz[:, 3] > 0)][:, 2:] - 1
        local = np.concatenate([np.stack([f, ff[f, j]]), e.T, e[:, ::-1].T], axis=1)
        pieces += [v0 + 6 + local for v0 in starts]
    for b in range(t.st_v.size):                       # stiffening: each element's coordinates
        idx = t.st_idx[b]
        pieces.append(t.st_v[b] + np.stack([np.repeat(idx, idx.shape[1], axis=1).ravel(),
                                            np.tile(idx, (1, idx.shape[1])).ravel()]))
    where = np.full(3 * t.row.size, -1, dtype=np.int64)   # each row's unknown (a primitive: at most 3 rows)
    where[kept] = n_v + np.arange(kept.size)
    for k in range(t.row.size):
        c = square(np.concatenate([t.cols[t.mi[k]] if t.mi[k] >= 0 else [], t.cols[t.mj[k]] if t.mj[k] >= 0 else []])
                   .astype(np.int64))
        border[c] = True
        for r in range(t.row[k], t.row[k] + (3 if t.kinds[k] == 0 else 1)):
            if where[r] >= 0:
                pieces += [np.stack([np.full(c.size, where[r]), c]), np.stack([c, np.full(c.size, where[r])])]
    for i, j in zip(t.sp_mi, t.sp_mj):
        c = square(np.concatenate([t.cols[i] if i >= 0 else [], t.cols[j] if j >= 0 else []]).astype(np.int64))
        border[c] = True
    if D.size:
        pieces.append(np.stack(np.nonzero(D)))
    if extra is not None:
        pieces.append(np.asarray(extra, dtype=np.int64).reshape(2, -1))
    if not any(np.count_nonzero(~border[lo:hi]) >= INTERIOR_MIN for _, lo, hi in ranges):
        return no_pattern()
    code = distinct(np.concatenate([p[1] * m + p[0] for p in pieces]))   # by column, then row
    rows, cols = code % m, code // m
    ptr = np.searchsorted(cols, np.arange(m + 1))
    group_ptr, group_cols = _groups(ptr, rows, m)
    return Pattern(ptr, rows, group_ptr, group_cols, np.zeros(rows.size), np.zeros(rows.size))


def positions(pat):
    """The positions on the structure ``pat`` (:class:`Pattern`) as a function: ``at(i, j)``
    of the entries ``(i, j)`` (integer arrays, broadcast); ValueError where one is off it."""
    m = pat.ptr.size - 1
    codes = np.repeat(np.arange(m), np.diff(pat.ptr)) * m + pat.rows     # ascending: by column, then row

    def at(i, j):
        code = np.asarray(j, dtype=np.int64) * m + np.asarray(i, dtype=np.int64)
        p = np.minimum(np.searchsorted(codes, code), codes.size - 1)
        if not np.array_equal(codes[p], code):
            raise ValueError("an entry of M, dQ/dv or K_t off the iteration matrix's structure")
        return p
    return at


def stores(t, pat, stiff):
    """``M``, ``dQ/dv`` and, with ``stiff``, the tangent stiffness held on the structure ``pat``
    (:func:`pattern`, which covers their entries): three :class:`sim.kernels.store.Store`
    sharing the positions the evaluation writes at (tables of the tables ``t``: each body's
    reference rows and columns, its group's ``ff`` and ``W_nz``, the stiffening elements);
    the third with empty values without ``stiff``.  Memory linear in the entries."""
    n_v, at = int(t.n_v), positions(pat)
    start = np.zeros(n_v, dtype=np.int64)
    for v0, nf in zip(t.body_v, t.body_nf):
        start[v0:v0 + 6 + nf] = v0
    first = at(start, np.arange(n_v))
    # (the body's rows from its first in a row, through its reference rows or, in a reference
    # column, all of them: the structure holds the whole block of those)
    i = np.arange(n_v)
    c = start[:, None] + np.arange(6)
    assert np.array_equal(at(i[:, None], c), first[c] + (i - start)[:, None])
    assert np.array_equal(at(c, i[:, None]), first[i][:, None] + np.arange(6))
    groups = [g for g in t.groups if g.q_start.size]
    ff = np.full((n_v, max([g.ff.shape[1] for g in groups], default=0)), -1, dtype=np.int64)
    w_start, w_pos = np.zeros(n_v, dtype=np.int64), []
    count = 0
    for g in groups:
        f, k = np.nonzero(g.ff >= 0)
        for v0 in g.v_start:
            ff[v0 + 6 + f, k] = at(v0 + 6 + f, v0 + 6 + g.ff[f, k])
            w_start[v0] = count
            w_pos.append(at(v0 + 6 + g.W_nz[:, 0], v0 + 6 + g.W_nz[:, 1]))
            count += g.W_nz.shape[0]
    idx = t.st_idx
    st = at(t.st_v[:, None, None, None] + idx[:, :, :, None], t.st_v[:, None, None, None] + idx[:, :, None, :]) \
        if idx.size else np.zeros(idx.shape + idx.shape[2:], dtype=np.int64)
    w_pos = np.concatenate(w_pos) if w_pos else np.zeros(0, dtype=np.int64)
    slots = (pat.ptr, pat.rows, start, first, ff, w_start, w_pos, np.ascontiguousarray(st, dtype=np.int64))
    n = pat.rows.size
    return Store(np.zeros(n), *slots), Store(np.zeros(n), *slots), Store(np.zeros(n if stiff else 0), *slots)


class Held(NamedTuple):
    """``M`` and the tangent stiffness of a model held on their structure for the Python-side
    evaluation (:meth:`sim.model.evaluator.Evaluator.evaluate`'s ``stores``; :func:`held`):
    the two :class:`sim.kernels.store.Store` (values empty: each call takes zeroed ones,
    :meth:`fresh`), the coordinates ``n_v`` and, where the caller adds it, the bodies'
    stiffness ``K_body`` (``scipy.sparse``, :func:`sim.solvers.modal.body_stiffness`), made once."""

    M: object
    K_t: object
    n_v: int
    K_body: object = None

    def fresh(self):
        """The stores with zeroed values of their own (``K_t``'s empty where it had none)."""
        return (self.M._replace(values=np.zeros(self.M.rows.size)),
                self.K_t._replace(values=np.zeros(self.M.rows.size if self.K_t.values.size else 0)))

    def sparse(self, store):
        """The (n_v, n_v) matrix of ``store`` (one of :meth:`fresh`'s, evaluated) as a
        ``scipy.sparse.csc_matrix`` on the same arrays (its structure: ``M`` and ``K_t``'s
        nonzeros and their neighbours'), or None where it has no values."""
        import scipy.sparse
        if not store.values.size:
            return None
        return scipy.sparse.csc_matrix((store.values, store.rows, store.ptr), shape=(self.n_v, self.n_v))


def held(t, stiff):
    """:class:`Held` for the model of the tables ``t``: its structure without constraint
    unknowns (:func:`pattern`; ``K_t``'s store with values only with ``stiff``, a model with a
    tangent stiffness), or None where no flexible body has an interior (nothing is large: the
    dense arrays).  Linear in the coordinates where the dense ``M`` is square."""
    n_v = int(t.n_v)
    pat = pattern(t, np.zeros(0, dtype=np.int64), np.zeros((0, 0)), n_v, interior_ranges(t.body_v, t.body_nf))
    if not pat.ptr.size:
        return None
    M, _, K_t = stores(t, pat, stiff)
    return Held(M, K_t, n_v)


@njit(cache=True)
def _groups(ptr, rows, m):
    """Greedy colouring of the columns of the pattern ``ptr, rows`` (CSC, m columns): each
    column takes the first group in which no column shares one of its rows (Curtis, Powell and
    Reid).  Returns ``group_ptr, group_cols`` (:class:`Pattern`)."""
    rptr = np.zeros(m + 1, dtype=np.int64)
    for e in range(rows.size):
        rptr[rows[e] + 1] += 1
    for i in range(m):
        rptr[i + 1] += rptr[i]
    fill = rptr[:-1].copy()
    rcol = np.empty(rows.size, dtype=np.int64)
    for k in range(m):
        for e in range(ptr[k], ptr[k + 1]):
            rcol[fill[rows[e]]] = k
            fill[rows[e]] += 1
    colour = np.full(m, -1, dtype=np.int64)
    taken = np.full(m + 1, -1, dtype=np.int64)        # taken[c] == k: group c is closed to column k
    n_g = 0
    for k in range(m):
        for e in range(ptr[k], ptr[k + 1]):
            i = rows[e]
            for p in range(rptr[i], rptr[i + 1]):
                c = colour[rcol[p]]
                if c >= 0:
                    taken[c] = k
        c = 0
        while taken[c] == k:
            c += 1
        colour[k] = c
        n_g = max(n_g, c + 1)
    group_ptr = np.zeros(n_g + 1, dtype=np.int64)
    for k in range(m):
        group_ptr[colour[k] + 1] += 1
    for g in range(n_g):
        group_ptr[g + 1] += group_ptr[g]
    fill = group_ptr[:-1].copy()
    group_cols = np.empty(m, dtype=np.int64)
    for k in range(m):
        group_cols[fill[colour[k]]] = k
        fill[colour[k]] += 1
    return group_ptr, group_cols


def interior_ranges(body_v, body_nf):
    """``(v0, v0 + 6, v0 + 6 + nf)`` (k, 3) of the flexible bodies with at least
    :data:`INTERIOR_MIN` elastic coordinates (``body_v`` (nb,) the first velocity coordinate of
    each, ``body_nf`` (nb,) its elastic count): the ranges a structure blocks."""
    return np.array([(v, v + 6, v + 6 + nf) for v, nf in zip(body_v, body_nf) if nf >= INTERIOR_MIN],
                    dtype=np.int64).reshape(-1, 3)


def blocks(body_v, body_nf, m, mode="auto", rank=0):
    """Empty :class:`Blocks` for ``m`` unknowns whose first ``sum(6 + nf)`` are the bodies'
    velocity coordinates (``body_v`` (nb,) first of each, ``body_nf`` (nb,) elastic count),
    with a low-rank part of rank ``rank``."""
    ranges = interior_ranges(body_v, body_nf)
    nf = ranges[:, 2] - ranges[:, 1]
    size = int(np.sum(nf * (2 * BAND_MAX + 1) + 2 * nf * COUPLING_MAX))
    # The border: what is not a flexible body's elastic coordinate, and at most COUPLING_MAX
    # coordinates of each (its reference and marker nodes' coordinates)
    n_S = min(m, m - int(np.sum(ranges[:, 2] - ranges[:, 0])) + len(ranges) * COUPLING_MAX)
    owner = np.full(m, -1, dtype=np.int64)
    for b, (v0, _, hi) in enumerate(ranges):
        owner[v0:hi] = b
    info = np.zeros(5, dtype=np.int64)
    info[MODE] = MODES[mode]
    info[SHARED] = mode == "block" or (mode == "auto" and m >= BLOCK_MIN)
    k = m if not info[SHARED] and m <= PATTERN_SOLVE_MAX else 0      # the dense factors' nonzeros
    return Blocks(ranges, owner, np.zeros(m, dtype=np.int64), np.zeros(m, dtype=np.int64),
                  np.zeros(m, dtype=np.int64), np.zeros(2 * m, dtype=np.int64), np.zeros((len(ranges), 7), dtype=np.int64),
                  np.zeros(size), np.zeros(2 * m), info, np.zeros((m, rank)), np.zeros((m, rank)),
                  np.zeros((rank, rank), order="F"), np.zeros(rank, dtype=np.int32), np.zeros((n_S, n_S), order="F"),
                  np.zeros((2, k + 1), dtype=np.int64), np.zeros(k * (k - 1) if k else 0, dtype=np.int32),
                  np.zeros(k * (k - 1) if k else 0))


@njit(cache=True, inline="always")
def _interchange(piv, b):
    """``b <- P b``: LAPACK's row interchanges, in order (``piv`` 0-based)."""
    for i in range(b.size):
        p = piv[i]
        if p != i:
            b[i], b[p] = b[p], b[i]


@njit(cache=True)
def lu_solve(lu, piv, b):
    """In place: ``b <- A^-1 b`` from LAPACK ``getrf``'s factors of ``A`` (``piv`` 0-based, as
    scipy returns them).  Column-oriented sweeps: ``lu`` is Fortran-ordered."""
    n = b.size
    _interchange(piv, b)
    for j in range(n):              # L y = P b, L unit lower triangular
        bj = b[j]
        if bj != 0.0:
            for i in range(j + 1, n):
                b[i] -= lu[i, j] * bj
    for j in range(n - 1, -1, -1):  # U x = y
        b[j] /= lu[j, j]
        bj = b[j]
        if bj != 0.0:
            for i in range(j):
                b[i] -= lu[i, j] * bj


@njit(cache=True)
def lu_pattern(lu, blk):
    """After LAPACK ``getrf``'s factorisation ``lu`` (m, m, Fortran order): its nonzeros off
    the diagonal into ``blk.lu_ptr``, ``lu_rows``, ``lu_values``, column by column, L's
    (below the diagonal) then U's (above), rows ascending, for :func:`pattern_solve`."""
    n = lu.shape[0]
    ptr, rows, values = blk.lu_ptr, blk.lu_rows, blk.lu_values
    e = 0
    for j in range(n):
        for i in range(j + 1, n):
            if lu[i, j] != 0.0:
                rows[e] = i
                values[e] = lu[i, j]
                e += 1
        ptr[0, j + 1] = e
    ptr[1, 0] = e
    for j in range(n):
        for i in range(j):
            if lu[i, j] != 0.0:
                rows[e] = i
                values[e] = lu[i, j]
                e += 1
        ptr[1, j + 1] = e


@njit(cache=True)
def pattern_solve(lu, piv, blk, b):
    """In place: ``b <- A^-1 b`` as :func:`lu_solve`, on the factors' nonzeros
    (:func:`lu_pattern`): the same sums in the same order (a zero entry's product, which the
    columns' sweeps add, changes nothing but a zero's sign), over a quarter of the entries on
    the slider-crank."""
    ptr, rows, values = blk.lu_ptr, blk.lu_rows, blk.lu_values
    n = b.size
    _interchange(piv, b)
    for j in range(n):              # L y = P b, L unit lower triangular
        bj = b[j]
        if bj != 0.0:
            for e in range(ptr[0, j], ptr[0, j + 1]):
                b[rows[e]] -= values[e] * bj
    for j in range(n - 1, -1, -1):  # U x = y
        b[j] /= lu[j, j]
        bj = b[j]
        if bj != 0.0:
            for e in range(ptr[1, j], ptr[1, j + 1]):
                b[rows[e]] -= values[e] * bj


@njit(cache=True, inline="always")
def _square(lu, n):
    """The leading ``n * n`` entries of ``lu``'s memory as an (n, n) Fortran-ordered array."""
    return lu.T.reshape(lu.size)[:n * n].reshape((n, n)).T


@njit(cache=True)
def band_lu(band, n, w):
    """In place: the LU factors, without pivoting, of the band matrix ``band`` (n, n), half-band
    ``w``, stored as :func:`band_solve` reads it.  Returns the largest and smallest pivot
    magnitudes (both 0 at a zero pivot, where it stops)."""
    s = 2 * w + 1
    top, low = 0.0, np.inf
    for r in range(n):
        pivot = band[r * s + w]
        top = max(top, abs(pivot))
        low = min(low, abs(pivot))
        if pivot == 0.0:
            return 0.0, 0.0
        for i in range(r + 1, min(n, r + w + 1)):
            f = band[i * s + w + r - i] / pivot
            band[i * s + w + r - i] = f
            if f != 0.0:
                for j in range(r + 1, min(n, r + w + 1)):
                    band[i * s + w + j - i] -= f * band[r * s + w + j - r]
    return top, low


@njit(cache=True)
def band_solve_many(band, n, w, Y):
    """In place: ``Y <- A^-1 Y`` (n, m) from :func:`band_lu`'s factors, all columns in one
    sweep along the rows (C order)."""
    s = 2 * w + 1
    m = Y.shape[1]
    for i in range(n):                 # L, unit lower
        for j in range(max(0, i - w), i):
            f = band[i * s + w + j - i]
            if f != 0.0:
                for c in range(m):
                    Y[i, c] -= f * Y[j, c]
    for i in range(n - 1, -1, -1):     # U
        for j in range(i + 1, min(n, i + w + 1)):
            f = band[i * s + w + j - i]
            if f != 0.0:
                for c in range(m):
                    Y[i, c] -= f * Y[j, c]
        d = band[i * s + w]
        for c in range(m):
            Y[i, c] /= d


@njit(cache=True)
def band_solve(band, n, w, y):
    """In place: ``y <- A^-1 y`` from :func:`factor`'s band factors of ``A`` (n, n), half-band
    ``w``: ``band[i * (2w + 1) + w + j - i]`` holds entry ``(i, j)``."""
    s = 2 * w + 1
    for i in range(n):                 # L, unit lower
        acc = y[i]
        for j in range(max(0, i - w), i):
            acc -= band[i * s + w + j - i] * y[j]
        y[i] = acc
    for i in range(n - 1, -1, -1):     # U
        acc = y[i]
        for j in range(i + 1, min(n, i + w + 1)):
            acc -= band[i * s + w + j - i] * y[j]
        y[i] = acc / band[i * s + w]


@njit(cache=True, inline="always")
def _entry(pat, e):
    """Entry ``e`` of the iteration matrix on its structure (:class:`Pattern`)."""
    return pat.known[e] + pat.values[e]


@njit(cache=True)
def _partition(pat, blk):
    """The interior and border of the iteration matrix on the structure ``pat`` (m columns)
    from its nonzeros; per body ``n_I, w, k`` and the offsets into ``blk.data``.  Returns
    False when no body keeps an interior."""
    ptr, rows = pat.ptr, pat.rows
    m = ptr.size - 1
    owner, flag = blk.owner, blk.interior
    for j in range(m):
        flag[j] = 0
    nb = blk.ranges.shape[0]
    for b in range(nb):
        for j in range(blk.ranges[b, 1], blk.ranges[b, 2]):
            flag[j] = 1
    for c in range(m):                 # a nonzero between two bodies: both ends are border
        oc = owner[c]
        for e in range(ptr[c], ptr[c + 1]):
            i = rows[e]
            if owner[i] != oc and _entry(pat, e) != 0.0:
                flag[i] = 0
                flag[c] = 0
    n_blocked, off_index, off_data = 0, 0, 0
    for b in range(nb):
        v0, lo, hi = blk.ranges[b, 0], blk.ranges[b, 1], blk.ranges[b, 2]
        n = 0
        for j in range(lo, hi):
            if flag[j]:
                flag[j] = 1 + n        # position + 1
                n += 1
        w = 0
        for c in range(lo, hi):
            if flag[c]:
                for e in range(ptr[c], ptr[c + 1]):
                    i = rows[e]
                    if lo <= i < hi and flag[i] and _entry(pat, e) != 0.0:
                        w = max(w, abs(flag[i] - flag[c]))
        k = 0
        for j in range(v0, hi):
            if not flag[j]:
                k += 1
        if n < INTERIOR_MIN or w > BAND_MAX or k > COUPLING_MAX:
            for j in range(lo, hi):
                flag[j] = 0
            n = 0
        blk.ptr[b, 0], blk.ptr[b, 1], blk.ptr[b, 2] = n, w, k
        blk.ptr[b, 3], blk.ptr[b, 4], blk.ptr[b, 5] = off_index, off_index + n, off_data
        blk.ptr[b, 6] = off_data + n * (2 * w + 1)
        if n:
            p, q = off_index, off_index + n
            for j in range(v0, hi):
                if flag[j]:
                    blk.index[p] = j
                    p += 1
                else:
                    blk.index[q] = j
                    q += 1
            off_index += n + k
            off_data += n * (2 * w + 1) + 2 * n * k
            n_blocked += 1
    nB = 0
    for j in range(m):
        if flag[j]:
            blk.where[j] = -1
        else:
            blk.where[j] = nB
            blk.border[nB] = j
            nB += 1
    blk.info[N_BORDER] = nB
    return n_blocked > 0


@njit(cache=True)
def factor(pat, blk, piv):
    """Block factorisation (see the module docstring) of the iteration matrix held on its
    structure ``pat`` (:class:`Pattern`: ``known + values``), which it leaves unchanged: the
    interior blocks' band factors and coupling blocks into ``blk``, the Schur complement's LU
    factors into the leading (n_B, n_B) of ``blk.schur`` and ``piv``.  Time and memory linear
    in the structure's entries, besides the border's square.  Returns ``(ok, top, low)``: False
    where no body has an interior, an interior pivot is too small or the border outgrows
    ``blk.schur`` (then nothing is usable: factorise densely); the Schur complement's largest
    and smallest pivots."""
    blk.info[ACTIVE] = 0
    if not _partition(pat, blk):
        # No body keeps an interior: the joints' layout on too short bodies (an entry that
        # vanishes only at some states would add to the interiors, not remove), so the
        # partition's scan is not repeated: dense from here on.
        blk.info[MODE] = MODES_DENSE
        return False, 0.0, 0.0
    ptr, rows = pat.ptr, pat.rows
    data, index, flag, where = blk.data, blk.index, blk.interior, blk.where
    nB = blk.info[N_BORDER]
    if nB > blk.schur.shape[0]:
        return False, 0.0, 0.0
    S = _square(blk.schur, nB)
    border = blk.border
    for q in range(nB):
        for p in range(nB):
            S[p, q] = 0.0
        bq = border[q]
        for e in range(ptr[bq], ptr[bq + 1]):
            p = where[rows[e]]
            if p >= 0:
                S[p, q] = _entry(pat, e)
    y = blk.work
    slot = np.full(ptr.size - 1, -1, dtype=np.int64)      # a coupling coordinate's place in C_b
    for b in range(blk.ranges.shape[0]):
        n, w, k = blk.ptr[b, 0], blk.ptr[b, 1], blk.ptr[b, 2]
        if n == 0:
            continue
        I, Cb = index[blk.ptr[b, 3]:blk.ptr[b, 3] + n], index[blk.ptr[b, 4]:blk.ptr[b, 4] + k]
        lo, hi = blk.ranges[b, 1], blk.ranges[b, 2]
        s = 2 * w + 1
        band = data[blk.ptr[b, 5]:blk.ptr[b, 5] + n * s]
        X = data[blk.ptr[b, 6]:blk.ptr[b, 6] + n * k]          # X[j * n + i]: A_II^-1 A_{I C}
        C = data[blk.ptr[b, 6] + n * k:blk.ptr[b, 6] + 2 * n * k]  # C[l * n + i]: A_{C I}
        band[:] = 0.0
        C[:] = 0.0
        for l in range(k):
            slot[Cb[l]] = l
        for j in range(n):             # the interior columns: band and the rows C_b
            for e in range(ptr[I[j]], ptr[I[j] + 1]):
                i = rows[e]
                if lo <= i < hi and flag[i]:
                    d = j - (flag[i] - 1) + w
                    if 0 <= d < s:
                        band[(flag[i] - 1) * s + d] = _entry(pat, e)
                elif slot[i] >= 0:
                    C[slot[i] * n + j] = _entry(pat, e)
        top, low = band_lu(band, n, w)
        if not (np.isfinite(top) and low > PIVOT_RTOL * top):
            for l in range(k):
                slot[Cb[l]] = -1
            return False, 0.0, 0.0
        for j in range(k):             # the coupling columns' interior rows, eliminated
            for i in range(n):
                y[i] = 0.0
            for e in range(ptr[Cb[j]], ptr[Cb[j] + 1]):
                i = rows[e]
                if lo <= i < hi and flag[i]:
                    y[flag[i] - 1] = _entry(pat, e)
            band_solve(band, n, w, y)
            for i in range(n):
                X[j * n + i] = y[i]
        for l in range(k):
            slot[Cb[l]] = -1
        for j in range(k):             # S_CC -= A_CI X
            pj = where[Cb[j]]
            for l in range(k):
                acc = 0.0
                for i in range(n):
                    acc += C[l * n + i] * X[j * n + i]
                S[where[Cb[l]], pj] -= acc
    info = getrf(S, piv[:nB])
    top, low = 0.0, np.inf
    for i in range(nB):
        d = abs(S[i, i])
        top = max(top, d)
        low = min(low, d)
    if info < 0:
        return False, 0.0, 0.0
    blk.info[ACTIVE] = 1
    blk.info[BLOCKED] += 1
    return True, top, low


@njit(cache=True)
def to_dense(pat, A):
    """In place: ``A`` (m, m) the iteration matrix held on the structure ``pat`` (zero off it),
    for the dense LU where the blocks do not serve."""
    A[:] = 0.0
    for k in range(pat.ptr.size - 1):
        for e in range(pat.ptr[k], pat.ptr[k + 1]):
            A[pat.rows[e], k] = _entry(pat, e)


@njit(cache=True)
def transpose(A):
    """In place: ``A <- A^T`` (m, m): its memory then holds ``A`` in the other order (the
    dense factorisation's, in place of the block path's)."""
    m = A.shape[0]
    for i in range(m):
        for j in range(i + 1, m):
            A[i, j], A[j, i] = A[j, i], A[i, j]


@njit(cache=True)
def add_low_rank(A, U, rate, scale):
    """In place: ``A[:n, :n] += scale U diag(rate) U^T`` (``U`` (n, r))."""
    n, r = U.shape
    for i in range(n):
        for k in range(r):
            f = scale * rate[k] * U[i, k]
            if f != 0.0:
                for j in range(n):
                    A[i, j] += f * U[j, k]


@njit(cache=True)
def low_rank(piv, blk, U, rate, scale):
    """Woodbury's factors of ``A = A_s + scale U diag(rate) U^T`` (``U`` (n, r), n <= m,
    zero below) once :func:`factor` has factorised ``A_s``: ``W = A_s^-1 scale U diag(rate)``,
    ``V = U`` and the LU factors of ``1 + V^T W`` into ``blk``.  Returns False at a singular
    capacitance (then factorise ``A`` densely)."""
    m, r = blk.W.shape
    n = U.shape[0]
    col = np.empty(m)
    for k in range(r):
        for i in range(m):
            v = U[i, k] if i < n else 0.0
            blk.V[i, k] = v
            col[i] = scale * rate[k] * v
        _blocked_solve(piv, blk, col)
        for i in range(m):
            blk.W[i, k] = col[i]
    for j in range(r):
        for k in range(r):
            acc = 1.0 if j == k else 0.0
            for i in range(n):
                acc += blk.V[i, j] * blk.W[i, k]
            blk.cap[j, k] = acc
    info = getrf(blk.cap, blk.cap_piv)
    top, low = 0.0, np.inf
    for i in range(r):
        top = max(top, abs(blk.cap[i, i]))
        low = min(low, abs(blk.cap[i, i]))
    return info >= 0 and (r == 0 or (np.isfinite(top) and low > PIVOT_RTOL * top))


@njit(cache=True)
def solve(lu, piv, blk, z):
    """In place: ``z <- A^-1 z`` (m,) from the last factorisation: :func:`factor`'s (with
    :func:`low_rank`'s part) when it is active, else LAPACK's dense factors ``lu, piv``."""
    if not blk.info[ACTIVE]:
        if blk.lu_rows.size:
            pattern_solve(lu, piv, blk, z)
        else:
            lu_solve(lu, piv, z)
        return
    _blocked_solve(piv, blk, z)
    r = blk.W.shape[1]
    if r:
        t = np.empty(r)
        for k in range(r):
            acc = 0.0
            for i in range(z.size):
                acc += blk.V[i, k] * z[i]
            t[k] = acc
        lu_solve(blk.cap, blk.cap_piv, t)
        for k in range(r):
            tk = t[k]
            for i in range(z.size):
                z[i] -= blk.W[i, k] * tk


@njit(cache=True)
def _blocked_solve(piv, blk, z):
    """In place: ``z <- A_s^-1 z`` from :func:`factor`'s blocks."""
    nB = blk.info[N_BORDER]
    m = z.size
    rB = blk.work[m:m + nB]
    for p in range(nB):
        rB[p] = z[blk.border[p]]
    y = blk.work
    data, index = blk.data, blk.index
    for b in range(blk.ranges.shape[0]):       # y_b = A_II^-1 r_I, r_B -= A_CI y_b
        n, w, k = blk.ptr[b, 0], blk.ptr[b, 1], blk.ptr[b, 2]
        if n == 0:
            continue
        off = blk.ptr[b, 3]
        for i in range(n):
            y[off + i] = z[index[off + i]]
        yb = y[off:off + n]
        band_solve(data[blk.ptr[b, 5]:blk.ptr[b, 5] + n * (2 * w + 1)], n, w, yb)
        C = data[blk.ptr[b, 6] + n * k:blk.ptr[b, 6] + 2 * n * k]
        for l in range(k):
            acc = 0.0
            for i in range(n):
                acc += C[l * n + i] * yb[i]
            rB[blk.where[index[blk.ptr[b, 4] + l]]] -= acc
    lu_solve(_square(blk.schur, nB), piv[:nB], rB)
    for p in range(nB):
        z[blk.border[p]] = rB[p]
    for b in range(blk.ranges.shape[0]):       # x_I = y_b - X x_C
        n, k = blk.ptr[b, 0], blk.ptr[b, 2]
        if n == 0:
            continue
        off = blk.ptr[b, 3]
        X = data[blk.ptr[b, 6]:blk.ptr[b, 6] + n * k]
        for i in range(n):
            z[index[off + i]] = y[off + i]
        for j in range(k):
            xc = rB[blk.where[index[blk.ptr[b, 4] + j]]]
            if xc != 0.0:
                for i in range(n):
                    z[index[off + i]] -= X[j * n + i] * xc


def saddle_lstsq(M, bodies, J, J_s, inertia, b):
    """Least-squares solution ``x = (a, lam)`` of

        [[M + J_s^T diag(inertia) J_s, J^T], [J, 0]] x = b

    with ``M`` (n, n) block diagonal over the bodies ``bodies = (body_v, body_nf)`` (each
    body's ``6 + nf`` coordinates from ``body_v``), given by its blocks, without forming the (n + n_c)-square
    system: ``a = M_s^-1 (b_a - J^T lam)`` and the Schur complement ``J M_s^-1 J^T lam = J
    M_s^-1 b_a - b_c`` solved in the least-squares sense (redundant rows: the least-norm
    ``lam``, as for the whole system, ``a`` being unique).  ``M_s^-1`` body block by body block,
    the rotors' term (rank: the actuators with an ``inertia``) by Woodbury's identity.  Memory
    and time linear in ``n`` for a bounded number of rows.

    Parameters
    ----------
    M : list of ndarray, shape (6 + nf, 6 + nf) each
        Each body's block of ``M``.
    bodies : tuple of ndarray of int, shape (nb,) each
    J : ndarray, shape (n_c, n)
    J_s : ndarray, shape (n_a, n)
    inertia : ndarray, shape (n_a,)
    b : ndarray, shape (n + n_c,)

    Returns
    -------
    ndarray, shape (n + n_c,)
    """
    import scipy.linalg
    n, n_c = J.shape[1], J.shape[0]
    factors = [(slice(v, v + 6 + nf), scipy.linalg.lu_factor(block)) for (v, nf), block in zip(zip(*bodies), M)]

    def solve_M(X):
        Y = np.empty_like(X)
        for rows, lu in factors:
            Y[rows] = scipy.linalg.lu_solve(lu, X[rows])
        return Y
    Y = solve_M(np.column_stack([J.T, b[:n]]))
    rotors = np.flatnonzero(inertia)
    if rotors.size:
        U = J_s[rotors].T
        Z = solve_M(U)
        Y -= Z @ np.linalg.solve(np.diag(1.0 / inertia[rotors]) + U.T @ Z, U.T @ Y)
    # rows dependent to within 1e-12 of the largest singular value: the least-norm multipliers
    lam = scipy.linalg.lstsq(J @ Y[:, :n_c], J @ Y[:, n_c] - b[n:], cond=1e-12)[0]
    return np.concatenate([Y[:, n_c] - Y[:, :n_c] @ lam, lam])
