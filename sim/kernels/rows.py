r"""Constraint rows of the four joint primitives, from the marker kinematics.

``point`` (3 rows): ``p_j - p_i = 0``; ``dot``: ``a_i . b_j = 0``; ``ddot``:
``a_i . (p_j - p_i) = 0``; ``angle``: the rotation of ``x_j`` about ``z_i``,
``atan2(x_j . y_i, x_j . x_i)``.  For each: the value, the Jacobian row and
``gamma = -(d/dt C_q) v``, and on request ``d gamma / dv``.

3-vectors are tuples of floats here, not arrays: an array temporary is a heap allocation
(about as costly as a primitive's arithmetic) and an array expression compiles its own
broadcasting loop and error paths.
"""
import numpy as np
from numba import njit

from sim.kernels.common import dot3


@njit(cache=True, inline="always")
def _col(A, m, k):
    """Column ``k`` of marker ``m``'s axes ``A[m]`` (3, 3), as a tuple."""
    return A[m, 0, k], A[m, 1, k], A[m, 2, k]


@njit(cache=True, inline="always")
def _vec(p, m):
    """Row ``m`` of ``p`` (n, 3), as a tuple."""
    return p[m, 0], p[m, 1], p[m, 2]


@njit(cache=True, inline="always")
def _sub(a, b):
    return a[0] - b[0], a[1] - b[1], a[2] - b[2]


@njit(cache=True, inline="always")
def _scale(c, a):
    return c * a[0], c * a[1], c * a[2]


@njit(cache=True, inline="always")
def _unit(c, sign):
    """``sign e_c`` as a tuple."""
    return (sign if c == 0 else 0.0), (sign if c == 1 else 0.0), (sign if c == 2 else 0.0)


@njit(cache=True, inline="always")
def add_row(J, r, coef, Jloc, cols):
    """J[r, cols] += coef @ Jloc  (coef a 3-tuple, Jloc (3, n_loc)).  Inlined: as a call, once
    per row and marker, it took and released reference counts of its three arrays, which cost
    about half of the rows' time."""
    c0, c1, c2 = coef
    for c in range(cols.size):
        col = cols[c]
        if col >= 0:
            J[r, col] += c0 * Jloc[0, c] + c1 * Jloc[1, c] + c2 * Jloc[2, c]


@njit(cache=True)
def add_rate_row(J, r, coef, Jloc, cols):
    """:func:`add_row` as a call: for the rows of ``d gamma / dv``, needed at factorisations
    only, where twenty more inlined copies would cost more compilation than they save."""
    add_row(J, r, coef, Jloc, cols)


@njit(cache=True)
def rows(tables, data, phi, J, gamma, Gg, with_G):
    """Constraint primitives (kind 0 point, 1 dot, 2 ddot, 3 angle); see sim.model.constraints.
    ``tables``: :class:`sim.kernels.equations.Tables`, ``data``: the markers' kinematics
    (:class:`sim.kernels.equations.Data`, written by :func:`sim.kernels.markers.markers`), both
    by reference (fields read here, as there).

    With ``with_G``, also ``Gg = d gamma / dv`` (n_rows, n_v) from the markers' ``dpq``, ``dAq``
    and (the velocity derivatives of ``pd`` and ``Ad`` being ``Jp`` and ``Ja``) their Jacobians.
    """
    kinds, row, mi, mj, ai, aj, cols = tables.kinds, tables.row, tables.mi, tables.mj, tables.ai, tables.aj, tables.cols
    p, A, Jp, Ja, pd, Ad, pq, Aq = data.p, data.A, data.Jp, data.Ja, data.pd, data.Ad, data.pq, data.Aq
    dpq, dAq = data.dpq, data.dAq
    for t in range(row.size):
        r, i, j, kind = row[t], mi[t], mj[t], kinds[t]
        if kind == 0:
            for c in range(3):
                phi[r + c] = p[j, c] - p[i, c]
                gamma[r + c] = -(pq[j, c] - pq[i, c])
                add_row(J, r + c, _unit(c, 1.0), Jp[j], cols[j])
                add_row(J, r + c, _unit(c, -1.0), Jp[i], cols[i])
                if with_G:
                    add_rate_row(Gg, r + c, _unit(c, -1.0), dpq[j], cols[j])
                    add_rate_row(Gg, r + c, _unit(c, 1.0), dpq[i], cols[i])
        elif kind == 1:
            a, b = _col(A, i, ai[t]), _col(A, j, aj[t])
            phi[r] = dot3(a, b)
            add_row(J, r, b, Ja[i, ai[t]], cols[i])
            add_row(J, r, a, Ja[j, aj[t]], cols[j])
            ad, bd = _col(Ad, i, ai[t]), _col(Ad, j, aj[t])
            aq, bq = _col(Aq, i, ai[t]), _col(Aq, j, aj[t])
            gamma[r] = -(dot3(aq, b) + 2 * dot3(ad, bd) + dot3(a, bq))
            if with_G:
                add_rate_row(Gg, r, _scale(-1.0, b), dAq[i, ai[t]], cols[i])
                add_rate_row(Gg, r, _scale(-2.0, bd), Ja[i, ai[t]], cols[i])
                add_rate_row(Gg, r, _scale(-2.0, ad), Ja[j, aj[t]], cols[j])
                add_rate_row(Gg, r, _scale(-1.0, a), dAq[j, aj[t]], cols[j])
        elif kind == 2:
            a = _col(A, i, ai[t])
            d = _sub(_vec(p, j), _vec(p, i))
            phi[r] = dot3(a, d)
            add_row(J, r, d, Ja[i, ai[t]], cols[i])
            add_row(J, r, a, Jp[j], cols[j])
            add_row(J, r, _scale(-1.0, a), Jp[i], cols[i])
            ad, aq = _col(Ad, i, ai[t]), _col(Aq, i, ai[t])
            dd = _sub(_vec(pd, j), _vec(pd, i))
            gamma[r] = -(dot3(aq, d) + 2 * dot3(ad, dd) + dot3(a, _sub(_vec(pq, j), _vec(pq, i))))
            if with_G:
                add_rate_row(Gg, r, _scale(-1.0, d), dAq[i, ai[t]], cols[i])
                add_rate_row(Gg, r, _scale(-2.0, dd), Ja[i, ai[t]], cols[i])
                add_rate_row(Gg, r, _scale(-2.0, ad), Jp[j], cols[j])
                add_rate_row(Gg, r, _scale(2.0, ad), Jp[i], cols[i])
                add_rate_row(Gg, r, _scale(-1.0, a), dpq[j], cols[j])
                add_rate_row(Gg, r, a, dpq[i], cols[i])
        else:
            xi, yi, xj = _col(A, i, 0), _col(A, i, 1), _col(A, j, 0)
            X, Y = dot3(xj, xi), dot3(xj, yi)
            r2 = X * X + Y * Y
            phi[r] = np.arctan2(Y, X)
            # dtheta = (X dY - Y dX) / r2 with dX = xi.dxj + xj.dxi, dY = yi.dxj + xj.dyi
            add_row(J, r, ((X * yi[0] - Y * xi[0]) / r2, (X * yi[1] - Y * xi[1]) / r2, (X * yi[2] - Y * xi[2]) / r2),
                    Ja[j, 0], cols[j])
            add_row(J, r, (-Y * xj[0] / r2, -Y * xj[1] / r2, -Y * xj[2] / r2), Ja[i, 0], cols[i])
            add_row(J, r, (X * xj[0] / r2, X * xj[1] / r2, X * xj[2] / r2), Ja[i, 1], cols[i])
            xid, yid, xjd = _col(Ad, i, 0), _col(Ad, i, 1), _col(Ad, j, 0)
            xiq, yiq, xjq = _col(Aq, i, 0), _col(Aq, i, 1), _col(Aq, j, 0)
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
                add_rate_row(Gg, r, (cXd * xi[0] + cYd * yi[0] + 2 * cXq * xid[0] + 2 * cYq * yid[0],
                                cXd * xi[1] + cYd * yi[1] + 2 * cXq * xid[1] + 2 * cYq * yid[1],
                                cXd * xi[2] + cYd * yi[2] + 2 * cXq * xid[2] + 2 * cYq * yid[2]), Ja[j, 0], cols[j])
                add_rate_row(Gg, r, (cXd * xj[0] + 2 * cXq * xjd[0], cXd * xj[1] + 2 * cXq * xjd[1],
                                cXd * xj[2] + 2 * cXq * xjd[2]), Ja[i, 0], cols[i])
                add_rate_row(Gg, r, (cYd * xj[0] + 2 * cYq * xjd[0], cYd * xj[1] + 2 * cYq * xjd[1],
                                cYd * xj[2] + 2 * cYq * xjd[2]), Ja[i, 1], cols[i])
                add_rate_row(Gg, r, (cXq * xi[0] + cYq * yi[0], cXq * xi[1] + cYq * yi[1], cXq * xi[2] + cYq * yi[2]),
                        dAq[j, 0], cols[j])
                add_rate_row(Gg, r, _scale(cXq, xj), dAq[i, 0], cols[i])
                add_rate_row(Gg, r, _scale(cYq, xj), dAq[i, 1], cols[i])
