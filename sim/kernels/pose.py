r"""End-effector coordinates, their Jacobian and the velocity-quadratic part of their
acceleration, from the end-effector marker's kinematics.

Translations ``x, y, z`` are the marker origin ``p``.  Rotations are the Z-Y-X Tait–Bryan
angles ``(a, b, c)`` of the marker axes ``R = Rz(c) Ry(b) Rx(a)``:

    a = atan2(R_21, R_22),   b = -asin(R_20),   c = atan2(R_10, R_00),

whose rates follow from the world angular velocity ``w = E(b, c) (a, b, c)_dot`` with

    E = [[cc cb, -sc, 0], [sc cb, cc, 0], [-sb, 0, 1]],

so ``J_angles = E^-1 J_w`` and ``(a, b, c)_ddot = J_angles a + E^-1 (w_q - E_dot rates)``.
"""
import numpy as np
from numba import njit

# Codes of the coordinate kinds, in this order: x, y, z, rx, ry, rz.
KINDS = ("x", "y", "z", "rx", "ry", "rz")


@njit(cache=True)
def angles_zyx(R, out):
    """``out`` (3,) <- Tait–Bryan angles ``(a, b, c)`` of the rotation ``R`` (3, 3)."""
    out[0] = np.arctan2(R[2, 1], R[2, 2])
    out[1] = -np.arcsin(min(1.0, max(-1.0, R[2, 0])))
    out[2] = np.arctan2(R[1, 0], R[0, 0])


@njit(cache=True)
def angles_of(R, out):
    """``out`` (n, 3) <- :func:`angles_zyx` of each rotation of ``R`` (n, 3, 3)."""
    for k in range(R.shape[0]):
        angles_zyx(R[k], out[k])


@njit(cache=True, inline="always")
def marker_terms(t, data, e):
    """The terms of marker ``e`` that :func:`pose_terms` reads, from the tables ``t`` and the
    markers' kinematics ``data`` (:class:`sim.kernels.equations.Tables`, ``Data``)."""
    return data.p[e], data.A[e], data.Jp[e], data.Jw[e], t.cols[e], data.pq[e], data.wq[e]


@njit(cache=True)
def pose_terms(kinds, marker, v, out, with_rates):
    """End-effector coordinates ``x`` (d,), Jacobian rows ``Jx`` (d, n_v; only the marker's
    columns are written, the caller zeroes the rest) and, with ``with_rates``, ``xq`` (d,)
    such that ``x_ddot = Jx a + xq``, into ``out = (x, Jx, xq)``.

    Parameters
    ----------
    kinds : ndarray of int, shape (d,)
        Codes of :data:`KINDS`.
    marker : tuple ``(p, R, Jp, Jw, cols, pq, wq)``
        Origin (3,) and axes (3, 3; columns, world) of the end-effector marker, the Jacobians
        (3, m) of the origin and of the world angular velocity on the columns ``cols`` (m,) of
        ``v`` (-1: none), and the velocity-quadratic accelerations (3,) of the origin and of
        the angular velocity (:func:`marker_terms`).
    v : ndarray, shape (n_v,)
    """
    p, R, Jp, Jw, cols, pq, wq = marker
    x, Jx, xq = out
    d = kinds.size
    m = cols.size
    rotations = False
    for k in range(d):
        if kinds[k] >= 3:
            rotations = True
    ang = np.zeros(3)
    Einv = np.zeros((3, 3))
    rates = np.zeros(3)
    ang_q = np.zeros(3)
    if rotations:
        angles_zyx(R, ang)
        cb, sb, cc, sc = np.cos(ang[1]), np.sin(ang[1]), np.cos(ang[2]), np.sin(ang[2])
        E = np.array([[cc * cb, -sc, 0.0], [sc * cb, cc, 0.0], [-sb, 0.0, 1.0]])
        Einv = np.linalg.inv(E)
        if with_rates:
            w = np.zeros(3)
            for j in range(m):
                if cols[j] >= 0:
                    for i in range(3):
                        w[i] += Jw[i, j] * v[cols[j]]
            rates = Einv @ w
            dE_db = np.array([[-cc * sb, 0.0, 0.0], [-sc * sb, 0.0, 0.0], [-cb, 0.0, 0.0]])
            dE_dc = np.array([[-sc * cb, -cc, 0.0], [cc * cb, -sc, 0.0], [0.0, 0.0, 0.0]])
            ang_q = Einv @ (wq - (dE_db * rates[1] + dE_dc * rates[2]) @ rates)
    for k in range(d):
        kind = kinds[k]
        if kind < 3:
            x[k] = p[kind]
            for j in range(m):
                if cols[j] >= 0:
                    Jx[k, cols[j]] = Jp[kind, j]
            if with_rates:
                xq[k] = pq[kind]
        else:
            i = kind - 3
            x[k] = ang[i]
            for j in range(m):
                if cols[j] >= 0:
                    Jx[k, cols[j]] = Einv[i, 0] * Jw[0, j] + Einv[i, 1] * Jw[1, j] + Einv[i, 2] * Jw[2, j]
            if with_rates:
                xq[k] = ang_q[i]
