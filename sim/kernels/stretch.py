r"""Geometric stiffening of a beam body by its axial force (see :mod:`sim.dynamics`).

Element ``e`` (axial stiffness ``k = EA/L``, elongation row ``A_e``, slope matrix ``G_e``,
``g = q_f^T G_e q_f``, axial force ``N = k (du + g/2)``, ``du = A_e q_f``) adds the potential
``k du g / 2 + k g^2 / 8``, the force ``-(k g A_e / 2 + N G_e q_f)`` and the tangent stiffness
``N G_e + k (A_e + G_e q_f)(A_e + G_e q_f)^T - k A_e A_e^T``.
"""
import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def stretch(qf, A, k, G, force, tangent, with_tangent):
    """Add one body's stiffening force into ``force`` (n,) and, with ``with_tangent``, its
    tangent stiffness into ``tangent`` (n, n); return the extra potential [J].

    Parameters
    ----------
    qf : ndarray, shape (n,)
        Elastic coordinates.
    A : ndarray, shape (n_e, >= n)
        Elongation rows (columns beyond ``n`` ignored: padding).
    k : ndarray, shape (n_e,)
        ``EA/L`` per element (0: a padding row).
    G : ndarray, shape (n_e, >= n, >= n)
        Slope matrices, symmetric.
    """
    n = qf.size
    Gq = np.empty(n)
    energy = 0.0
    for e in range(k.size):
        ke = k[e]
        if ke == 0.0:
            continue
        du = 0.0
        g = 0.0
        for a in range(n):
            du += A[e, a] * qf[a]
            acc = 0.0
            for b in range(n):
                acc += G[e, a, b] * qf[b]
            Gq[a] = acc
            g += qf[a] * acc
        N = ke * (du + 0.5 * g)
        energy += 0.5 * ke * du * g + 0.125 * ke * g * g
        for a in range(n):
            force[a] -= 0.5 * ke * g * A[e, a] + N * Gq[a]
        if with_tangent:
            for a in range(n):
                ra = A[e, a] + Gq[a]
                for b in range(n):
                    tangent[a, b] += N * G[e, a, b] + ke * (ra * (A[e, b] + Gq[b]) - A[e, a] * A[e, b])
    return energy
