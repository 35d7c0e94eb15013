r"""Marker kinematics: poses, local Jacobians, velocity-quadratic accelerations.

A marker on body ``B`` at a node with shape functions ``D`` (translation) and ``E`` (small
rotation) of the elastic coordinates (see :mod:`sim.model.kinematics` for the derivation):

    p = r + R (p_0 + D q_f),        a_k = R (a_k0 + (E q_f) x a_k0)

The Jacobians are local: their columns are ``(v_r, w, the marker's elastic rates)``, whose
indices in ``v`` are the model's ``cols`` table (-1: none).
"""
from numba import njit

from sim.kernels.frames import quat_R_into, skew_into


# The length of :attr:`sim.kernels.equations.Data.scratch` that markers uses: SCRATCH + 9 nf
# (nf: the elastic coordinates a marker's shape functions act on, :attr:`Tables.qf_idx`).
SCRATCH = 72


@njit(cache=True)
def marker_velocity(m, nf, R, terms, w, t, data, BX):
    """Velocity derivatives of ``pq`` and ``Aq`` of marker ``m`` (``nf`` elastic coordinates
    of its body, rotated by ``R``; its shape functions in the tables ``t``) into ``data``
    (see :func:`markers`), from the
    marker's ``terms = (u, ud, Ap, ta, wa)`` of :func:`markers` and the body's angular velocity
    ``w = (w0, w1, w2)``; ``BX`` (2, 3, 3): scratch."""
    u, ud, Ap, ta, wa = terms
    w0, w1, w2 = w
    D, E, R_BM, dpq, dAq = t.D, t.E, t.R_BM, data.dpq, data.dAq
    B, X = BX[0], BX[1]
    # point: B = skew(w x u + 2 u_dot) + W skew(u),  W skew(u) = u w^T - (w.u) 1
    x0 = w1 * u[2] - w2 * u[1] + 2 * ud[0]
    x1 = w2 * u[0] - w0 * u[2] + 2 * ud[1]
    x2 = w0 * u[1] - w1 * u[0] + 2 * ud[2]
    wlist = (w0, w1, w2)
    for slot in range(4):          # slot 0: the point; 1..3: the axes
        if slot == 0:
            y = (u[0], u[1], u[2])
            z0, z1, z2 = x0, x1, x2
        else:
            k = slot - 1
            y = (Ap[0, k], Ap[1, k], Ap[2, k])
            z0, z1, z2 = wa[0, k] + 2 * ta[0, k], wa[1, k] + 2 * ta[1, k], wa[2, k] + 2 * ta[2, k]
        skew_into(z0, z1, z2, B)
        wy = w0 * y[0] + w1 * y[1] + w2 * y[2]
        for i in range(3):
            for j in range(3):
                B[i, j] += y[i] * wlist[j]
            B[i, i] -= wy
        for i in range(3):
            for j in range(3):
                X[i, j] = -(R[i, 0] * B[0, j] + R[i, 1] * B[1, j] + R[i, 2] * B[2, j])
        # q_f_dot columns: slot 0: 2 R W D e_f;  axes: -2 R W (R_BM e_k x E e_f)... = 2 R W (E e_f x R_BM e_k)
        for i in range(3):
            for c in range(3):
                if slot == 0:
                    dpq[m, i, c] = 0.0
                    dpq[m, i, 3 + c] = X[i, c]
                else:
                    dAq[m, slot - 1, i, c] = 0.0
                    dAq[m, slot - 1, i, 3 + c] = X[i, c]
        for f in range(nf):
            if slot == 0:
                d0, d1, d2 = D[m, 0, f], D[m, 1, f], D[m, 2, f]
            else:
                r0, r1, r2 = R_BM[m, 0, slot - 1], R_BM[m, 1, slot - 1], R_BM[m, 2, slot - 1]
                e0, e1, e2 = E[m, 0, f], E[m, 1, f], E[m, 2, f]
                d0, d1, d2 = e1 * r2 - e2 * r1, e2 * r0 - e0 * r2, e0 * r1 - e1 * r0
            c0 = 2 * (w1 * d2 - w2 * d1)
            c1 = 2 * (w2 * d0 - w0 * d2)
            c2 = 2 * (w0 * d1 - w1 * d0)
            for i in range(3):
                val = R[i, 0] * c0 + R[i, 1] * c1 + R[i, 2] * c2
                if slot == 0:
                    dpq[m, i, 6 + f] = val
                else:
                    dAq[m, slot - 1, i, 6 + f] = val


@njit(cache=True)
def markers(q, v, t, data, with_G):
    r"""Marker kinematics with local Jacobians (columns: v_r, w, q_f_dot of the marker's body)
    at ``(q, v)`` into ``data`` (:class:`sim.kernels.equations.Data`), from the model's tables
    ``t`` (:class:`sim.kernels.equations.Tables`), both by reference: the fields are read
    here, since twenty arrays passed from the caller cost their reference counting at each
    call, a sixth of the kernel on a small model.

    Scalar loops into the output arrays and a few scratch arrays allocated once per call: the
    operands are 3-vectors, and small-array temporaries would cost more than the arithmetic.
    With ``with_G``, also the velocity derivatives of the quadratic terms (same columns):
    ``pq = R (w x (w x u + 2 u_dot))`` gives ``dpq/dw = -R (skew(w x u + 2 u_dot) + W skew(u))``,
    ``dpq/dq_f_dot = 2 R W D``; an axis ``Aq_k = R (w x (w x a_k + 2 t_k))``, ``t_k = (E q_f_dot) x
    R_BM e_k``, gives ``dAq_k/dw = -R (skew(w x a_k + 2 t_k) + W skew(a_k))``,
    ``dAq_k/dq_f_dot = -2 R W skew(R_BM e_k) E`` (``W = skew(w)``).
    """
    body, body_q, body_v, qf_idx, D, E, p0, R_BM = t.marker_body, t.body_q, t.body_v, t.qf_idx, t.D, t.E, t.p0, t.R_BM
    p, A, Jp, Ja, Jw = data.p, data.A, data.Jp, data.Ja, data.Jw
    pd, Ad, pq, Aq, wq = data.pd, data.Ad, data.pq, data.Aq, data.wq
    n_m = body.size
    nf = D.shape[2]
    # The data's scratch (marker_velocity's too): no heap allocation.
    scratch = data.scratch
    R = scratch[0:9].reshape((3, 3))
    Ap = scratch[9:18].reshape((3, 3))      # marker axes in the body frame, deformed
    ta = scratch[18:27].reshape((3, 3))     # skew(theta_dot) R_BM
    wa = scratch[27:36].reshape((3, 3))     # skew(w) Ap
    u, th, ud = scratch[36:39], scratch[39:42], scratch[42:45]
    thd, x, y = scratch[45:48], scratch[48:51], scratch[51:54]
    BX = scratch[54:72].reshape((2, 3, 3))
    # (E e_f) x (R_BM e_k) per axis k and elastic coordinate f, in the body frame: the same
    # for the three rows of an axis' Jacobian, so computed once per marker.
    ER = scratch[SCRATCH:SCRATCH + 9 * nf].reshape((3, nf, 3))
    for m in range(n_m):
        b = body[m]
        if b < 0:
            for i in range(3):
                p[m, i] = p0[m, i]
                pd[m, i] = 0.0
                pq[m, i] = 0.0
                wq[m, i] = 0.0
                for k in range(3):
                    A[m, i, k] = R_BM[m, i, k]
                    Ad[m, i, k] = 0.0
                    Aq[m, i, k] = 0.0
            continue
        qs, vs = body_q[b], body_v[b]
        quat_R_into(q, qs + 3, R)
        for i in range(3):
            u[i] = p0[m, i]
            th[i] = 0.0
            ud[i] = 0.0
            thd[i] = 0.0
        for f in range(nf):
            j = qf_idx[m, f]
            if j >= 0:
                qf, qfd = q[qs + 7 + j], v[vs + 6 + j]
                for i in range(3):
                    u[i] += D[m, i, f] * qf
                    th[i] += E[m, i, f] * qf
                    ud[i] += D[m, i, f] * qfd
                    thd[i] += E[m, i, f] * qfd
        w0, w1, w2 = v[vs + 3], v[vs + 4], v[vs + 5]
        for k in range(3):
            r0, r1, r2 = R_BM[m, 0, k], R_BM[m, 1, k], R_BM[m, 2, k]
            for f in range(nf):
                e0, e1, e2 = E[m, 0, f], E[m, 1, f], E[m, 2, f]
                ER[k, f, 0] = e1 * r2 - e2 * r1
                ER[k, f, 1] = e2 * r0 - e0 * r2
                ER[k, f, 2] = e0 * r1 - e1 * r0
            Ap[0, k] = r0 + th[1] * r2 - th[2] * r1
            Ap[1, k] = r1 + th[2] * r0 - th[0] * r2
            Ap[2, k] = r2 + th[0] * r1 - th[1] * r0
            ta[0, k] = thd[1] * r2 - thd[2] * r1
            ta[1, k] = thd[2] * r0 - thd[0] * r2
            ta[2, k] = thd[0] * r1 - thd[1] * r0
            wa[0, k] = w1 * Ap[2, k] - w2 * Ap[1, k]
            wa[1, k] = w2 * Ap[0, k] - w0 * Ap[2, k]
            wa[2, k] = w0 * Ap[1, k] - w1 * Ap[0, k]
        # x = w x u + u_dot (body-frame velocity of the point); y = w x (w x u + 2 u_dot)
        x[0] = w1 * u[2] - w2 * u[1]
        x[1] = w2 * u[0] - w0 * u[2]
        x[2] = w0 * u[1] - w1 * u[0]
        for i in range(3):
            y[i] = x[i] + 2 * ud[i]
            x[i] += ud[i]
        y0 = w1 * y[2] - w2 * y[1]
        y1 = w2 * y[0] - w0 * y[2]
        y2 = w0 * y[1] - w1 * y[0]
        # w x theta_dot
        z0 = w1 * thd[2] - w2 * thd[1]
        z1 = w2 * thd[0] - w0 * thd[2]
        z2 = w0 * thd[1] - w1 * thd[0]
        for i in range(3):
            Ri0, Ri1, Ri2 = R[i, 0], R[i, 1], R[i, 2]
            p[m, i] = q[qs + i] + Ri0 * u[0] + Ri1 * u[1] + Ri2 * u[2]
            pd[m, i] = v[vs + i] + Ri0 * x[0] + Ri1 * x[1] + Ri2 * x[2]
            pq[m, i] = Ri0 * y0 + Ri1 * y1 + Ri2 * y2
            wq[m, i] = Ri0 * z0 + Ri1 * z1 + Ri2 * z2
            for k in range(3):
                A[m, i, k] = Ri0 * Ap[0, k] + Ri1 * Ap[1, k] + Ri2 * Ap[2, k]
                Ad[m, i, k] = Ri0 * (wa[0, k] + ta[0, k]) + Ri1 * (wa[1, k] + ta[1, k]) + Ri2 * (wa[2, k] + ta[2, k])
                # R skew(w) (wa + 2 ta)
                s0, s1, s2 = wa[0, k] + 2 * ta[0, k], wa[1, k] + 2 * ta[1, k], wa[2, k] + 2 * ta[2, k]
                Aq[m, i, k] = Ri0 * (w1 * s2 - w2 * s1) + Ri1 * (w2 * s0 - w0 * s2) + Ri2 * (w0 * s1 - w1 * s0)
            for c in range(6 + nf):
                Jp[m, i, c] = 0.0
                Jw[m, i, c] = 0.0
            Jp[m, i, i] = 1.0
            # -R skew(u) e_c = R (e_c x u)
            Jp[m, i, 3] = Ri2 * u[1] - Ri1 * u[2]
            Jp[m, i, 4] = Ri0 * u[2] - Ri2 * u[0]
            Jp[m, i, 5] = Ri1 * u[0] - Ri0 * u[1]
            for c in range(3):
                Jw[m, i, 3 + c] = R[i, c]
            for f in range(nf):
                Jp[m, i, 6 + f] = Ri0 * D[m, 0, f] + Ri1 * D[m, 1, f] + Ri2 * D[m, 2, f]
                Jw[m, i, 6 + f] = Ri0 * E[m, 0, f] + Ri1 * E[m, 1, f] + Ri2 * E[m, 2, f]
            for k in range(3):
                a0, a1, a2 = Ap[0, k], Ap[1, k], Ap[2, k]
                Ja[m, k, i, 0] = 0.0
                Ja[m, k, i, 1] = 0.0
                Ja[m, k, i, 2] = 0.0
                # -R skew(a) e_c = R (e_c x a)
                Ja[m, k, i, 3] = Ri2 * a1 - Ri1 * a2
                Ja[m, k, i, 4] = Ri0 * a2 - Ri2 * a0
                Ja[m, k, i, 5] = Ri1 * a0 - Ri0 * a1
                for f in range(nf):
                    # -R skew(R_BM e_k) E e_f = R (E e_f x R_BM e_k)
                    Ja[m, k, i, 6 + f] = Ri0 * ER[k, f, 0] + Ri1 * ER[k, f, 1] + Ri2 * ER[k, f, 2]
        if with_G:
            marker_velocity(m, nf, R, (u, ud, Ap, ta, wa), (w0, w1, w2), t, data, BX)
