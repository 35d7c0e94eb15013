r"""Geometric stiffening of a beam body by its axial force (see :mod:`sim.model.dynamics`).

Element ``e`` (axial stiffness ``k = EA/L``, elongation row ``A_e``, slope matrix ``G_e``,
``g = q_f^T G_e q_f``, axial force ``N = k (du + g/2)``, ``du = A_e q_f``) adds the potential
``k du g / 2 + k g^2 / 8``, the force ``-(k g A_e / 2 + N G_e q_f)`` and the tangent stiffness
``N G_e + k (A_e + G_e q_f)(A_e + G_e q_f)^T - k A_e A_e^T``.

An element's row and matrix are nonzero on its own nodes' coordinates only (12 of a body's
``n_f``, unless a modal basis mixes them): the kernel reads them on those coordinates
(:func:`compact`), which makes its cost linear in the number of elements.
"""
import numpy as np
from numba import njit

from sim.kernels.store import element_add


def compact(rows, slopes, coords=None):
    """Per-element tables of the kernel from the dense ``rows`` (n_e, n) and ``slopes``
    (n_e, n, n): the coordinates each element touches ``idx`` (n_e, m), its row ``A`` (n_e, m)
    and matrix ``G`` (n_e, m, m) on them (``m``: the most an element touches; padding: index 0
    with zero entries).  ``coords`` (n_e, n): the coordinate each column of an element's
    ``rows`` and ``slopes`` stands for (given per element, ascending; default: the column)."""
    n_e = rows.shape[0]
    support = [np.flatnonzero((rows[e] != 0) | np.any(slopes[e] != 0, axis=0) | np.any(slopes[e] != 0, axis=1))
               for e in range(n_e)]
    m = max((s.size for s in support), default=0)
    idx, A, G = np.zeros((n_e, m), dtype=np.int64), np.zeros((n_e, m)), np.zeros((n_e, m, m))
    for e, s in enumerate(support):
        idx[e, :s.size] = s if coords is None else coords[e, s]
        A[e, :s.size] = rows[e, s]
        G[e, :s.size, :s.size] = slopes[e][np.ix_(s, s)]
    return idx, A, G


@njit(cache=True, nogil=True)
def stretch(qf, idx, A, k, G, force, tangent, with_tangent, scratch):
    """Add one body's stiffening force into ``force`` (n,) and, with ``with_tangent``, its
    tangent stiffness into ``tangent`` (n, n); return the extra potential [J].  ``scratch``
    (at least ``2 m``): work memory (no allocation per call: the evaluation's data's).
    ``tangent``: an array, or a store's values and the body's positions
    (:func:`sim.kernels.store.element_target`).

    Parameters
    ----------
    qf : ndarray, shape (n,)
        Elastic coordinates.
    idx : ndarray of int, shape (n_e, m)
        Coordinates each element touches (:func:`compact`).
    A : ndarray, shape (n_e, m)
        Elongation rows on them.
    k : ndarray, shape (n_e,)
        ``EA/L`` per element (0: a padding row).
    G : ndarray, shape (n_e, m, m)
        Slope matrices on them, symmetric.
    """
    m = idx.shape[1]
    x = scratch[0:m]
    Gq = scratch[m:2 * m]
    energy = 0.0
    for e in range(k.size):
        ke = k[e]
        if ke == 0.0:
            continue
        for a in range(m):
            x[a] = qf[idx[e, a]]
        du = 0.0
        g = 0.0
        for a in range(m):
            du += A[e, a] * x[a]
            acc = 0.0
            for b in range(m):
                acc += G[e, a, b] * x[b]
            Gq[a] = acc
            g += x[a] * acc
        N = ke * (du + 0.5 * g)
        energy += 0.5 * ke * du * g + 0.125 * ke * g * g
        for a in range(m):
            force[idx[e, a]] -= 0.5 * ke * g * A[e, a] + N * Gq[a]
        if with_tangent:
            for a in range(m):
                ra = A[e, a] + Gq[a]
                for b in range(m):
                    element_add(tangent, e, a, b, idx[e, a], idx[e, b],
                                N * G[e, a, b] + ke * (ra * (A[e, b] + Gq[b]) - A[e, a] * A[e, b]))
    return energy
