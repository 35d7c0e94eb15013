r"""Constraint rows of the four joint primitives, from the marker kinematics.

``point`` (3 rows): ``p_j - p_i = 0``; ``dot``: ``a_i . b_j = 0``; ``ddot``:
``a_i . (p_j - p_i) = 0``; ``angle``: the rotation of ``x_j`` about ``z_i``,
``atan2(x_j . y_i, x_j . x_i)``.  For each: the value, the Jacobian row and
``gamma = -(d/dt C_q) v``, and on request ``d gamma / dv``.
"""
import numpy as np
from numba import njit

from sim.kernels.common import dot3


@njit(cache=True)
def add_row(J, r, coef, Jloc, cols):
    """J[r, cols] += coef @ Jloc  (coef (3,), Jloc (3, n_loc))."""
    for c in range(cols.size):
        col = cols[c]
        if col >= 0:
            J[r, col] += coef[0] * Jloc[0, c] + coef[1] * Jloc[1, c] + coef[2] * Jloc[2, c]


@njit(cache=True)
def rows(kinds, row, mi, mj, ai, aj, cols, p, A, Jp, Ja, pd, Ad, pq, Aq, phi, J, gamma, dpq, dAq, Gg, with_G):
    """Constraint primitives (kind 0 point, 1 dot, 2 ddot, 3 angle); see sim.model.constraints.

    With ``with_G``, also ``Gg = d gamma / dv`` (n_rows, n_v) from the markers' ``dpq``, ``dAq``
    and (the velocity derivatives of ``pd`` and ``Ad`` being ``Jp`` and ``Ja``) their Jacobians.
    """
    e = np.eye(3)
    for t in range(row.size):
        r, i, j, kind = row[t], mi[t], mj[t], kinds[t]
        if kind == 0:
            for c in range(3):
                phi[r + c] = p[j, c] - p[i, c]
                gamma[r + c] = -(pq[j, c] - pq[i, c])
                add_row(J, r + c, e[c], Jp[j], cols[j])
                add_row(J, r + c, -e[c], Jp[i], cols[i])
                if with_G:
                    add_row(Gg, r + c, -e[c], dpq[j], cols[j])
                    add_row(Gg, r + c, e[c], dpq[i], cols[i])
        elif kind == 1:
            a, b = A[i, :, ai[t]], A[j, :, aj[t]]
            phi[r] = dot3(a, b)
            add_row(J, r, b, Ja[i, ai[t]], cols[i])
            add_row(J, r, a, Ja[j, aj[t]], cols[j])
            ad, bd = Ad[i, :, ai[t]], Ad[j, :, aj[t]]
            aq, bq = Aq[i, :, ai[t]], Aq[j, :, aj[t]]
            gamma[r] = -(dot3(aq, b) + 2 * dot3(ad, bd) + dot3(a, bq))
            if with_G:
                add_row(Gg, r, -b, dAq[i, ai[t]], cols[i])
                add_row(Gg, r, -2 * bd, Ja[i, ai[t]], cols[i])
                add_row(Gg, r, -2 * ad, Ja[j, aj[t]], cols[j])
                add_row(Gg, r, -a, dAq[j, aj[t]], cols[j])
        elif kind == 2:
            a = A[i, :, ai[t]]
            d = p[j] - p[i]
            phi[r] = dot3(a, d)
            add_row(J, r, d, Ja[i, ai[t]], cols[i])
            add_row(J, r, a, Jp[j], cols[j])
            add_row(J, r, -a, Jp[i], cols[i])
            ad, aq = Ad[i, :, ai[t]], Aq[i, :, ai[t]]
            gamma[r] = -(dot3(aq, d) + 2 * dot3(ad, pd[j] - pd[i]) + dot3(a, pq[j] - pq[i]))
            if with_G:
                add_row(Gg, r, -d, dAq[i, ai[t]], cols[i])
                add_row(Gg, r, -2 * (pd[j] - pd[i]), Ja[i, ai[t]], cols[i])
                add_row(Gg, r, -2 * ad, Jp[j], cols[j])
                add_row(Gg, r, 2 * ad, Jp[i], cols[i])
                add_row(Gg, r, -a, dpq[j], cols[j])
                add_row(Gg, r, a, dpq[i], cols[i])
        else:
            xi, yi, xj = A[i, :, 0], A[i, :, 1], A[j, :, 0]
            X, Y = dot3(xj, xi), dot3(xj, yi)
            r2 = X * X + Y * Y
            phi[r] = np.arctan2(Y, X)
            # dtheta = (X dY - Y dX) / r2 with dX = xi.dxj + xj.dxi, dY = yi.dxj + xj.dyi
            add_row(J, r, (X * yi - Y * xi) / r2, Ja[j, 0], cols[j])
            add_row(J, r, -Y * xj / r2, Ja[i, 0], cols[i])
            add_row(J, r, X * xj / r2, Ja[i, 1], cols[i])
            xid, yid, xjd = Ad[i, :, 0], Ad[i, :, 1], Ad[j, :, 0]
            xiq, yiq, xjq = Aq[i, :, 0], Aq[i, :, 1], Aq[j, :, 0]
            Xd, Yd = dot3(xjd, xi) + dot3(xj, xid), dot3(xjd, yi) + dot3(xj, yid)
            Xq = dot3(xjq, xi) + 2 * dot3(xjd, xid) + dot3(xj, xiq)
            Yq = dot3(xjq, yi) + 2 * dot3(xjd, yid) + dot3(xj, yiq)
            gamma[r] = -((X * Yq - Y * Xq) / r2 - 2 * (X * Yd - Y * Xd) * (X * Xd + Y * Yd) / r2**2)
            if with_G:
                # gamma = -(X Yq - Y Xq)/r2 + 2 K2 K1 / r2^2, K1 = X Xd + Y Yd, K2 = X Yd - Y Xd
                K1, K2 = X * Xd + Y * Yd, X * Yd - Y * Xd
                cXq, cYq = Y / r2, -X / r2
                cXd = 2 * (X * K2 - Y * K1) / r2**2
                cYd = 2 * (X * K1 + Y * K2) / r2**2
                add_row(Gg, r, cXd * xi + cYd * yi + 2 * cXq * xid + 2 * cYq * yid, Ja[j, 0], cols[j])
                add_row(Gg, r, cXd * xj + 2 * cXq * xjd, Ja[i, 0], cols[i])
                add_row(Gg, r, cYd * xj + 2 * cYq * xjd, Ja[i, 1], cols[i])
                add_row(Gg, r, cXq * xi + cYq * yi, dAq[j, 0], cols[j])
                add_row(Gg, r, cXq * xj, dAq[i, 0], cols[i])
                add_row(Gg, r, cYq * xj, dAq[i, 1], cols[i])
