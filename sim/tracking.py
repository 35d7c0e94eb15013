"""Modal assurance criterion and mode pairing (MAC; SPEC §2.3 items 6 and 7).

``MAC_ij = |phi_a,i^H W phi_b,j|^2 / ((phi_a,i^H W phi_a,i) (phi_b,j^H W phi_b,j))`` with
``W = M`` (mass-weighted) or the identity; complex shapes are allowed.

References
----------
R. J. Allemang, "The modal assurance criterion -- twenty years of use and abuse", Sound and
Vibration 37(8), 2003.
"""
import numpy as np
import scipy.optimize


def mac(phi_a, phi_b, M=None):
    """MAC matrix between two sets of shapes.

    Parameters
    ----------
    phi_a : ndarray, shape (n, k_a)
    phi_b : ndarray, shape (n, k_b)
    M : ndarray, shape (n, n), optional
        Weighting (mass matrix); identity by default.

    Returns
    -------
    ndarray, shape (k_a, k_b)
        Values in [0, 1].
    """
    a = np.asarray(phi_a).reshape(len(phi_a), -1)
    b = np.asarray(phi_b).reshape(len(phi_b), -1)
    Wb = b if M is None else M @ b
    Wa = a if M is None else M @ a
    cross = np.abs(a.conj().T @ Wb) ** 2
    na = np.real(np.einsum("ik,ik->k", a.conj(), Wa))
    nb = np.real(np.einsum("ik,ik->k", b.conj(), Wb))
    return cross / np.maximum(np.outer(na, nb), 1e-300)


def pair_modes(mac_matrix):
    """Pairs ``(i, j)`` maximising the total MAC, one-to-one (Hungarian assignment).

    Parameters
    ----------
    mac_matrix : ndarray, shape (k_a, k_b)

    Returns
    -------
    list of (int, int)
        ``min(k_a, k_b)`` pairs sorted by ``i``.
    """
    rows, cols = scipy.optimize.linear_sum_assignment(-np.asarray(mac_matrix))
    return sorted(zip(rows.tolist(), cols.tolist()))
