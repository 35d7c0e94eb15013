"""Modal assurance criterion and mode pairing (MAC).

``MAC_ij = |phi_a,i^H W phi_b,j|^2 / ((phi_a,i^H W phi_a,i) (phi_b,j^H W phi_b,j))`` with
``W = M`` (mass-weighted) or the identity; complex shapes are allowed.

References
----------
R. J. Allemang, "The modal assurance criterion -- twenty years of use and abuse", Sound and
Vibration 37(8), 2003.
"""
import numpy as np


def mac(phi_a, phi_b, M=None):
    """MAC matrix between two sets of shapes (or between pairs of sets, stacked).

    Parameters
    ----------
    phi_a : ndarray, shape (..., n, k_a)
    phi_b : ndarray, shape (..., n, k_b)
    M : ndarray, shape (..., n, n), optional
        Weighting (mass matrix); identity by default.

    Returns
    -------
    ndarray, shape (..., k_a, k_b)
        Values in [0, 1].
    """
    a, b = np.asarray(phi_a), np.asarray(phi_b)
    a = a[:, None] if a.ndim == 1 else a
    b = b[:, None] if b.ndim == 1 else b
    return weighted_mac(a, b, a if M is None else M @ a, b if M is None else M @ b)


def weighted_mac(phi_a, phi_b, W_a, W_b):
    """:func:`mac` with the weighted shapes at hand: ``W_a = M phi_a``, ``W_b = M phi_b`` (same
    shapes as ``phi_a``, ``phi_b``; ``M`` symmetric)."""
    cross = np.abs(np.swapaxes(phi_a.conj(), -1, -2) @ W_b) ** 2
    na = np.real(np.einsum("...ik,...ik->...k", phi_a.conj(), W_a))
    nb = np.real(np.einsum("...ik,...ik->...k", phi_b.conj(), W_b))
    return cross / np.maximum(na[..., :, None] * nb[..., None, :], 1e-300)


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
    import scipy.optimize
    rows, cols = scipy.optimize.linear_sum_assignment(-np.asarray(mac_matrix))
    return sorted(zip(rows.tolist(), cols.tolist()))


def track_modes(shapes, masses=None, weighted=None):
    """Follow modes through crossings along a sequence of configurations.

    The shapes of instant ``k`` are paired with the (already ordered) shapes of instant
    ``k - 1`` by maximising the total mass-weighted MAC with ``M`` of instant ``k`` (one
    metric for both sets: the shapes live in the same velocity coordinates and change little
    between neighbouring instants, while the plain MAC would weigh metres against radians).

    Parameters
    ----------
    shapes : sequence of ndarray, each shape (n, k)
        Mode shapes of each instant, in ascending frequency.
    masses : sequence of ndarray, each shape (n, n)
        Mass matrix of each instant.
    weighted : tuple of two ndarray, each shape (m - 1, n, k), optional
        Instead of ``masses``: ``M_i Phi_{i-1}`` and ``M_i Phi_i`` for ``i = 1 .. m - 1``
        (``M_i Phi_i`` is a by-product of the eigensolve; see
        :meth:`sim.model.evaluator.Evaluator.mass_products` for the other).

    Returns
    -------
    order : ndarray of int, shape (m, k)
        ``order[i, j]``: column of instant ``i`` that continues track ``j`` (row 0 = identity).
    macs : ndarray, shape (m, k, k)
        MAC between the ordered shapes of instants ``i - 1`` (rows) and ``i`` (columns,
        original order); ``macs[0]`` is the identity.
    """
    m, k = len(shapes), shapes[0].shape[1]
    if m < 2:
        return follow(np.zeros((0, k, k)))
    # The MAC of every consecutive pair at once, columns of the previous instant unordered;
    # the tracking then only permutes their rows.
    Phi = np.asarray(shapes, dtype=float)                    # (m, n, k)
    if weighted is None:
        raw = mac(Phi[:-1], Phi[1:], np.asarray(masses, dtype=float)[1:])
    else:
        raw = weighted_mac(Phi[:-1], Phi[1:], *weighted)
    return follow(raw)


def follow(raw):
    """Tracks through the MAC matrices ``raw`` (m - 1, k, k) between the shapes of consecutive
    instants, both in their own (ascending) order: ``order`` (m, k) and ``macs`` (m, k, k) as
    :func:`track_modes` returns them."""
    m, k = raw.shape[0] + 1, raw.shape[1]
    order = np.zeros((m, k), dtype=int)
    order[0] = np.arange(k)
    macs = np.zeros((m, k, k))
    macs[0] = np.eye(k)
    for i in range(1, m):
        macs[i] = raw[i - 1][order[i - 1]]
        for track, column in pair_modes(macs[i]):
            order[i, track] = column
    return order, macs
