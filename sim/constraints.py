r"""Constraint equations ``C(q, t) = 0``, the Jacobian ``C_q`` and ``gamma``, from joint primitives.

Every joint is a list of primitive rows between its markers i and j (table
:data:`sim.model.JOINT_ROWS`):

* ``point``: ``p_j - p_i`` (3 rows);
* ``dot``:   ``a_i . b_j`` (perpendicular axes);
* ``ddot``:  ``a_i . (p_j - p_i)`` (point on a plane; also the slide of a prismatic pair);
* ``angle``: ``atan2(x_j . y_i, x_j . x_i)``, the rotation of x_j about z_i (revolute drive).

Actuator rows follow the joint rows: ``s(q) - s_target``, for the rigid actuators only (a
compliant actuator is a spring, :mod:`sim.springs`).  ``gamma`` is the velocity-quadratic
part of ``-C_ddot`` (``C_q q_ddot = gamma`` for constant targets); a driving law adds its
second derivative ``s_target_ddot`` (see :func:`constraints`).
Each primitive is evaluated for all its rows at once.
"""
import numpy as np

from .kinematics import markers


def _eval(model, ms, with_rates):
    """phi (n_rows,), J (n_rows, n_v), gamma (n_rows,) or None over all joint and actuator rows."""
    n, n_v = model.rows["n_total"], model.n_v
    phi = np.zeros(n)
    J = np.zeros((n, n_v))
    gamma = np.zeros(n) if with_rates else None
    t = model.rows["point"]
    if t["row"].size:
        rows = t["row"][:, None] + np.arange(3)
        phi[rows] = ms.p[t["mj"]] - ms.p[t["mi"]]
        J[rows] = ms.Jp[t["mj"]] - ms.Jp[t["mi"]]
        if with_rates:
            gamma[rows] = -(ms.pq[t["mj"]] - ms.pq[t["mi"]])
    t = model.rows["dot"]
    if t["row"].size:
        mi, mj, ai, aj = t["mi"], t["mj"], t["ai"], t["aj"]
        a, b = ms.A[mi, :, ai], ms.A[mj, :, aj]
        phi[t["row"]] = np.sum(a * b, axis=1)
        J[t["row"]] = np.einsum("rk,rkv->rv", b, ms.Ja[mi, ai]) + np.einsum("rk,rkv->rv", a, ms.Ja[mj, aj])
        if with_rates:
            ad, bd = ms.Ad[mi, :, ai], ms.Ad[mj, :, aj]
            aq, bq = ms.Aq[mi, :, ai], ms.Aq[mj, :, aj]
            gamma[t["row"]] = -np.sum(aq * b + 2 * ad * bd + a * bq, axis=1)
    t = model.rows["ddot"]
    if t["row"].size:
        mi, mj, ai = t["mi"], t["mj"], t["ai"]
        a = ms.A[mi, :, ai]
        d = ms.p[mj] - ms.p[mi]
        phi[t["row"]] = np.sum(a * d, axis=1)
        J[t["row"]] = np.einsum("rk,rkv->rv", d, ms.Ja[mi, ai]) + np.einsum("rk,rkv->rv", a, ms.Jp[mj] - ms.Jp[mi])
        if with_rates:
            ad, aq = ms.Ad[mi, :, ai], ms.Aq[mi, :, ai]
            dd, dq = ms.pd[mj] - ms.pd[mi], ms.pq[mj] - ms.pq[mi]
            gamma[t["row"]] = -np.sum(aq * d + 2 * ad * dd + a * dq, axis=1)
    t = model.rows["angle"]
    if t["row"].size:
        mi, mj = t["mi"], t["mj"]
        xi, yi, xj = ms.A[mi, :, 0], ms.A[mi, :, 1], ms.A[mj, :, 0]
        X, Y = np.sum(xj * xi, axis=1), np.sum(xj * yi, axis=1)
        JX = np.einsum("rk,rkv->rv", xi, ms.Ja[mj, 0]) + np.einsum("rk,rkv->rv", xj, ms.Ja[mi, 0])
        JY = np.einsum("rk,rkv->rv", yi, ms.Ja[mj, 0]) + np.einsum("rk,rkv->rv", xj, ms.Ja[mi, 1])
        r2 = (X**2 + Y**2)[:, None]
        phi[t["row"]] = np.arctan2(Y, X)
        J[t["row"]] = (X[:, None] * JY - Y[:, None] * JX) / r2
        if with_rates:
            xid, yid, xjd = ms.Ad[mi, :, 0], ms.Ad[mi, :, 1], ms.Ad[mj, :, 0]
            xiq, yiq, xjq = ms.Aq[mi, :, 0], ms.Aq[mi, :, 1], ms.Aq[mj, :, 0]
            Xd, Yd = np.sum(xjd * xi + xj * xid, axis=1), np.sum(xjd * yi + xj * yid, axis=1)
            Xq = np.sum(xjq * xi + 2 * xjd * xid + xj * xiq, axis=1)
            Yq = np.sum(xjq * yi + 2 * xjd * yid + xj * yiq, axis=1)
            r2 = r2[:, 0]
            gamma[t["row"]] = -((X * Yq - Y * Xq) / r2 - 2 * (X * Yd - Y * Xd) * (X * Xd + Y * Yd) / r2**2)
    return phi, J, gamma


def drive_residual(model, s, targets, angle=None):
    """``s - targets`` (n_a,), angles wrapped to (-pi, pi].

    ``angle`` (n_a,) bool: which actuators are angles, if the caller has the mask.
    """
    res = np.asarray(s, dtype=float) - np.asarray(targets, dtype=float)
    ang = np.array([a.kind == "angle" for a in model.actuators], dtype=bool) if angle is None else angle
    if ang.any():
        res[ang] = (res[ang] + np.pi) % (2 * np.pi) - np.pi
    return res


def constraints(model, q, v=None, targets=None, target_acc=None, ms=None, all_drives=False):
    """Joint and actuator constraints at ``q``.

    Parameters
    ----------
    q : ndarray, shape (n_q,)
    v : ndarray, shape (n_v,), optional
        With velocities, ``gamma`` is returned too.
    targets : ndarray, shape (n_a,), optional
        Actuator targets [rad or m]; ``None`` leaves the actuator rows out (actuators free).
    target_acc : ndarray, shape (n_a,), optional
        Second time derivative of the targets, added to the actuator rows of ``gamma``.
    all_drives : bool
        Keep the rows of the compliant actuators too (the rigid robot: assembly, inverse
        kinematics and dynamics); by default they are springs, not constraints.

    Returns
    -------
    phi : ndarray, shape (n_c,)
    J : ndarray, shape (n_c, n_v)
    gamma : ndarray, shape (n_c,), only when ``v`` is given
    """
    ms = markers(model, q, v) if ms is None else ms
    phi, J, gamma = _eval(model, ms, v is not None)
    nj = model.rows["n_joint"]
    if targets is None:
        phi, J = phi[:nj], J[:nj]
        gamma = None if gamma is None else gamma[:nj]
    else:
        phi = np.concatenate([phi[:nj], drive_residual(model, phi[nj:], targets)])
        if gamma is not None and target_acc is not None:
            gamma = gamma.copy()
            gamma[nj:] += target_acc
        compliant = np.array([a.stiffness is not None for a in model.actuators], dtype=bool)
        if compliant.any() and not all_drives:   # compliant drives are springs (sim.springs), not constraint rows
            keep = np.concatenate([np.ones(nj, dtype=bool), ~compliant])
            phi, J = phi[keep], J[keep]
            gamma = None if gamma is None else gamma[keep]
    return (phi, J) if v is None else (phi, J, gamma)


def actuator_values(model, q, ms=None, v=None):
    """Actuator coordinates (n_a,) [rad or m] and their Jacobian (n_a, n_v) -- of every
    actuator, rigid or compliant.  With ``v``, also ``gamma_s`` (n_a,): ``s_ddot = J_s a -
    gamma_s``."""
    ms = (markers(model, q) if v is None else markers(model, q, v)) if ms is None else ms
    phi, J, gamma = _eval(model, ms, v is not None)
    nj = model.rows["n_joint"]
    return (phi[nj:], J[nj:]) if v is None else (phi[nj:], J[nj:], gamma[nj:])
