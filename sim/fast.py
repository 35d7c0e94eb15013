r"""Compiled evaluation of the equations of motion for time integration (numba).

The reference kernels (:mod:`sim.dynamics`, :mod:`sim.kinematics`, :mod:`sim.constraints`)
are vectorised numpy: clear, and fast enough for modes, sweeps and design studies, but a
Newton iteration of the transient calls them thousands of times on small arrays, where numpy's
per-call overhead (hundreds of small operations) dominates.  This module fuses the same
formulas into three compiled loops:

* :func:`_group_terms`: mass blocks and forces of a group of bodies (``sim.dynamics``);
* :func:`_markers`: marker poses, local Jacobians and velocity-quadratic accelerations
  (``sim.kinematics``);
* :func:`_rows`: constraint values, Jacobian rows and ``gamma`` (``sim.constraints``).

It computes nothing new: ``tests/test_fast.py`` checks it against the reference kernels to
round-off on random states of every shipped model.  Geometric stiffening, lumped springs and
compliant actuators are the compiled kernels of :mod:`sim.kernels` (the ones :mod:`sim.dynamics`
calls too).  The integrators (:mod:`sim.integrators`), the rigid motion, KED, the frequencies
along a path and the inverse dynamics evaluate through here.

The model enters the kernels as one typed record, :class:`Tables` (arrays and tuples of
arrays, fields by name).
"""
import contextlib
import signal
import threading
from typing import NamedTuple

import numpy as np
from numba import njit

from . import dynamics, springs
from .constraints import drive_residual
from .kernels.springs import actuator_springs, springs as lumped_springs
from .kernels.stretch import compact, stretch
from .kinematics import pose_terms
from .linalg import FLUSH_RTOL

# --- small 3-vector helpers -----------------------------------------------------------------


_BOOLS = np.array([False, True])


@njit(cache=True)
def runtime(flag):
    """``flag`` as a run-time value.  A constant passed from one compiled function to another
    is typed as a literal, and each literal compiles its own copy of the callee (and of
    everything it calls): flags pass through this, an array look-up, so that one compilation
    serves all calls."""
    return _BOOLS[1 if flag else 0]


@njit(cache=True)
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(cache=True)
def _integrate(q, dv, body_q, body_v, n_f, out):
    """``out = q ⊕ dv`` (see :func:`sim.kinematics.integrate`): R <- R exp(skew(dw_B))."""
    out[:] = q
    for b in range(body_q.size):
        qs, vs = body_q[b], body_v[b]
        for i in range(3):
            out[qs + i] += dv[vs + i]
        phi = dv[vs + 3:vs + 6]
        angle = np.sqrt(phi[0] ** 2 + phi[1] ** 2 + phi[2] ** 2)
        if angle < 1e-8:
            k = 0.5 - angle**2 / 48.0
        else:
            k = np.sin(0.5 * angle) / angle
        w2, x2, y2, z2 = np.cos(0.5 * angle), k * phi[0], k * phi[1], k * phi[2]
        w1, x1, y1, z1 = q[qs + 3], q[qs + 4], q[qs + 5], q[qs + 6]
        w = w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2
        x = w1 * x2 + w2 * x1 + y1 * z2 - z1 * y2
        y = w1 * y2 + w2 * y1 + z1 * x2 - x1 * z2
        z = w1 * z2 + w2 * z1 + x1 * y2 - y1 * x2
        norm = np.sqrt(w * w + x * x + y * y + z * z)
        out[qs + 3], out[qs + 4], out[qs + 5], out[qs + 6] = w / norm, x / norm, y / norm, z / norm
        for f in range(n_f[b]):
            out[qs + 7 + f] += dv[vs + 6 + f]


@njit(cache=True)
def _flush(A, rtol):
    """In place: entries below ``rtol * max|A|`` set to zero (see :func:`sim.linalg.flush`)."""
    flat = A.ravel()
    top = 0.0
    for i in range(flat.size):
        if abs(flat[i]) > top:
            top = abs(flat[i])
    for i in range(flat.size):
        if abs(flat[i]) < rtol * top:
            flat[i] = 0.0


# --- bodies -----------------------------------------------------------------------------------


@njit(cache=True)
def _group_terms(q, v, gravity, q_start, v_start, mass, S, T, T_nz, T_val, Jrot, Grot, Mff, Kff, M, Q, G, with_G):
    """Write the mass blocks and forces of one body group into M (n_v, n_v) and Q (n_v,).

    Same formulas as :func:`sim.dynamics.mass_and_forces`; scalar loops and scratch arrays
    allocated once per call (3-vectors: temporaries would cost more than the arithmetic).
    With ``with_G``, also the velocity Jacobian ``G = dQ/dv`` (n_v, n_v) of the
    velocity-quadratic forces (each body's block; see :func:`_group_velocity`).
    """
    g_count = q_start.size
    n = Mff.shape[1]
    R = np.empty((3, 3))
    z = np.empty(n + 1)
    zd = np.empty(n + 1)
    Tz = np.empty((3, 3, n + 1))
    Tzd = np.empty((3, 3, n + 1))
    U = np.empty((3, 3))
    P = np.empty((3, 3))
    Ith = np.empty((3, 3))
    s = np.empty(3)
    sd = np.empty(3)      # S_f q_f_dot
    gB = np.empty(3)
    Iw = np.empty(3)
    Gq = np.empty(3)
    for b in range(g_count):
        qs, vs = q_start[b], v_start[b]
        _quat_R_into(q, qs + 3, R)
        z[0] = 1.0
        zd[0] = 0.0
        for i in range(n):
            z[i + 1] = q[qs + 7 + i]
            zd[i + 1] = v[vs + 6 + i]
        # Tz[k, l, a] = sum_c T[l, k, c, a] z[c] (T[k, l] = T[l, k]^T, int rho u_k u_l dV) over
        # the nonzeros of T only: a beam's shape functions overlap only within an element, and
        # each displacement component involves few of them (a few per cent of the dense T).
        for k in range(3):
            for l in range(3):
                for a in range(n + 1):
                    Tz[k, l, a] = 0.0
                    Tzd[k, l, a] = 0.0
        for e in range(T_nz.shape[0]):
            t = T_val[b, e]
            k, l, c, a = T_nz[e, 0], T_nz[e, 1], T_nz[e, 2], T_nz[e, 3]
            Tz[k, l, a] += t * z[c]
            Tzd[k, l, a] += t * zd[c]
        for k in range(3):
            for l in range(3):
                u_kl = 0.0
                p_kl = 0.0
                for a in range(n + 1):
                    u_kl += Tz[k, l, a] * z[a]
                    p_kl += Tzd[k, l, a] * z[a]
                U[k, l] = u_kl
                P[k, l] = p_kl
        for k in range(3):
            acc = 0.0
            accd = 0.0
            for a in range(n + 1):
                acc += S[b, k, a] * z[a]
                accd += S[b, k, a] * zd[a]
            s[k] = acc
            sd[k] = accd
        trU = U[0, 0] + U[1, 1] + U[2, 2]
        for k in range(3):
            for l in range(3):
                Ith[k, l] = Jrot[b, k, l] - U[k, l]
            Ith[k, k] += trU
        m_b = mass[b]
        w0, w1, w2 = v[vs + 3], v[vs + 4], v[vs + 5]
        for i in range(3):
            gB[i] = R[0, i] * gravity[0] + R[1, i] * gravity[1] + R[2, i] * gravity[2]
            Iw[i] = Ith[i, 0] * w0 + Ith[i, 1] * w1 + Ith[i, 2] * w2
        # translation-rotation block: -R skew(s), column c = R (e_c x s)
        for i in range(3):
            Ri0, Ri1, Ri2 = R[i, 0], R[i, 1], R[i, 2]
            M[vs + i, vs + i] = m_b
            rs0 = Ri2 * s[1] - Ri1 * s[2]
            rs1 = Ri0 * s[2] - Ri2 * s[0]
            rs2 = Ri1 * s[0] - Ri0 * s[1]
            M[vs + i, vs + 3] = rs0
            M[vs + i, vs + 4] = rs1
            M[vs + i, vs + 5] = rs2
            M[vs + 3, vs + i] = rs0
            M[vs + 4, vs + i] = rs1
            M[vs + 5, vs + i] = rs2
            for j in range(3):
                M[vs + 3 + i, vs + 3 + j] = Ith[i, j]
        # w x (w x s) + 2 w x (S_f q_f_dot), rotated to the world: the translational forces
        x0 = w1 * s[2] - w2 * s[1]
        x1 = w2 * s[0] - w0 * s[2]
        x2 = w0 * s[1] - w1 * s[0]
        c0 = w1 * (x2 + 2 * sd[2]) - w2 * (x1 + 2 * sd[1])
        c1 = w2 * (x0 + 2 * sd[0]) - w0 * (x2 + 2 * sd[2])
        c2 = w0 * (x1 + 2 * sd[1]) - w1 * (x0 + 2 * sd[0])
        for i in range(3):
            Q[vs + i] = m_b * gravity[i] - (R[i, 0] * c0 + R[i, 1] * c1 + R[i, 2] * c2)
        # s x g_B - w x (I w) [- w x (G q_f_dot) - 2 (w tr P - P^T w)]
        Q[vs + 3] = s[1] * gB[2] - s[2] * gB[1] - (w1 * Iw[2] - w2 * Iw[1])
        Q[vs + 4] = s[2] * gB[0] - s[0] * gB[2] - (w2 * Iw[0] - w0 * Iw[2])
        Q[vs + 5] = s[0] * gB[1] - s[1] * gB[0] - (w0 * Iw[1] - w1 * Iw[0])
        for i in range(3):
            acc = 0.0
            for f in range(n):
                acc += Grot[b, i, f] * zd[f + 1]
            Gq[i] = acc
        trP = P[0, 0] + P[1, 1] + P[2, 2]
        if n == 0:
            if with_G:
                _group_velocity(b, vs, n, R, s, sd, Ith, Iw, Gq, P, trP, T, Tz, Tzd, S, Grot, v, G)
            continue
        for i in range(3):
            PTw_i = P[0, i] * w0 + P[1, i] * w1 + P[2, i] * w2
            w_i = w0 if i == 0 else (w1 if i == 1 else w2)
            Q[vs + 3 + i] -= 2 * (w_i * trP - PTw_i)
        Q[vs + 3] -= w1 * Gq[2] - w2 * Gq[1]
        Q[vs + 4] -= w2 * Gq[0] - w0 * Gq[2]
        Q[vs + 5] -= w0 * Gq[1] - w1 * Gq[0]
        for f in range(n):
            S0, S1, S2 = S[b, 0, f + 1], S[b, 1, f + 1], S[b, 2, f + 1]
            for i in range(3):
                rsf = R[i, 0] * S0 + R[i, 1] * S1 + R[i, 2] * S2
                M[vs + i, vs + 6 + f] = rsf
                M[vs + 6 + f, vs + i] = rsf
            m0 = Grot[b, 0, f] + Tz[2, 1, f + 1] - Tz[1, 2, f + 1]
            m1 = Grot[b, 1, f] + Tz[0, 2, f + 1] - Tz[2, 0, f + 1]
            m2 = Grot[b, 2, f] + Tz[1, 0, f + 1] - Tz[0, 1, f + 1]
            M[vs + 3, vs + 6 + f] = m0
            M[vs + 4, vs + 6 + f] = m1
            M[vs + 5, vs + 6 + f] = m2
            M[vs + 6 + f, vs + 3] = m0
            M[vs + 6 + f, vs + 4] = m1
            M[vs + 6 + f, vs + 5] = m2
            for e in range(n):
                M[vs + 6 + f, vs + 6 + e] = Mff[b, f, e]
            # S_f^T g_B - K q_f - sum_kl (W W)_kl Tz_kl - 2 W_kl Tzd_kl, W = skew(w)
            acc = S0 * gB[0] + S1 * gB[1] + S2 * gB[2]
            for e in range(n):
                acc -= Kff[b, f, e] * z[e + 1]
            a = f + 1
            # W W = w w^T - |w|^2 I
            ww = w0 * w0 + w1 * w1 + w2 * w2
            acc -= (w0 * w0 - ww) * Tz[0, 0, a] + w0 * w1 * Tz[0, 1, a] + w0 * w2 * Tz[0, 2, a]
            acc -= w1 * w0 * Tz[1, 0, a] + (w1 * w1 - ww) * Tz[1, 1, a] + w1 * w2 * Tz[1, 2, a]
            acc -= w2 * w0 * Tz[2, 0, a] + w2 * w1 * Tz[2, 1, a] + (w2 * w2 - ww) * Tz[2, 2, a]
            # W = [[0, -w2, w1], [w2, 0, -w0], [-w1, w0, 0]]
            acc -= 2 * (-w2 * Tzd[0, 1, a] + w1 * Tzd[0, 2, a] + w2 * Tzd[1, 0, a] - w0 * Tzd[1, 2, a]
                        - w1 * Tzd[2, 0, a] + w0 * Tzd[2, 1, a])
            Q[vs + 6 + f] = acc
        if with_G:
            _group_velocity(b, vs, n, R, s, sd, Ith, Iw, Gq, P, trP, T, Tz, Tzd, S, Grot, v, G)


@njit(cache=True)
def _group_velocity(b, vs, n, R, s, sd, Ith, Iw, Gq, P, trP, T, Tz, Tzd, S, Grot, v, G):
    r"""Block of ``dQ/dv`` of one body (columns ``v_r, w, q_f_dot``; ``Q`` does not depend on ``v_r``).

    With ``c = w x (w x s + 2 s_d)``, ``s_d = S_f q_f_dot``, ``W = skew(w)``:

    * ``Q_r = m g - R c``: ``dc/dw = -skew(w x s + 2 s_d) - W skew(s)``, ``dc/dq_f_dot = 2 W S_f``;
    * ``Q_w = s x g_B - w x (I w) - w x (G_rot q_f_dot) - 2 (w tr P - P^T w)``:
      ``d/dw = skew(I w) - W I + skew(G_rot q_f_dot) - 2 tr P + 2 P^T``;
      ``d/dq_f_dot[f] = -w x G_rot[:, f] - 2 (w sum_k Tz_kk - sum_k Tz_ik w_k)`` at ``f + 1``
      (``dP_kl / dq_f_dot[f] = Tz_lk[f + 1]`` by the symmetry of ``T``);
    * ``Q_f[a] = ... - sum_kl (W W)_kl Tz_kl[a] - 2 sum_kl W_kl Tzd_kl[a]``, ``W W = w w^T - |w|^2 1``.
    """
    w0, w1, w2 = v[vs + 3], v[vs + 4], v[vs + 5]
    # x = w x s + 2 s_d
    x0 = w1 * s[2] - w2 * s[1] + 2 * sd[0]
    x1 = w2 * s[0] - w0 * s[2] + 2 * sd[1]
    x2 = w0 * s[1] - w1 * s[0] + 2 * sd[2]
    # dc/dw = -skew(x) - W skew(s);  W skew(s) = s w^T - (w.s) 1
    ws = w0 * s[0] + w1 * s[1] + w2 * s[2]
    dc = np.empty((3, 3))
    dc[0, 0], dc[0, 1], dc[0, 2] = 0.0, x2, -x1
    dc[1, 0], dc[1, 1], dc[1, 2] = -x2, 0.0, x0
    dc[2, 0], dc[2, 1], dc[2, 2] = x1, -x0, 0.0
    wv = (w0, w1, w2)
    for i in range(3):
        for j in range(3):
            dc[i, j] -= s[i] * wv[j]
        dc[i, i] += ws
    for i in range(3):
        for j in range(3):
            G[vs + i, vs + 3 + j] = -(R[i, 0] * dc[0, j] + R[i, 1] * dc[1, j] + R[i, 2] * dc[2, j])
    # rotational rows, w columns
    for i in range(3):
        for j in range(3):
            G[vs + 3 + i, vs + 3 + j] = 2 * P[j, i]
        G[vs + 3 + i, vs + 3 + i] -= 2 * trP
    Y0, Y1, Y2 = Iw[0] + Gq[0], Iw[1] + Gq[1], Iw[2] + Gq[2]     # skew(I w + G q_f_dot)
    G[vs + 3, vs + 4] += -Y2
    G[vs + 3, vs + 5] += Y1
    G[vs + 4, vs + 3] += Y2
    G[vs + 4, vs + 5] += -Y0
    G[vs + 5, vs + 3] += -Y1
    G[vs + 5, vs + 4] += Y0
    for j in range(3):      # - W I
        G[vs + 3, vs + 3 + j] -= w1 * Ith[2, j] - w2 * Ith[1, j]
        G[vs + 4, vs + 3 + j] -= w2 * Ith[0, j] - w0 * Ith[2, j]
        G[vs + 5, vs + 3 + j] -= w0 * Ith[1, j] - w1 * Ith[0, j]
    if n == 0:
        return
    for f in range(n):
        a = f + 1
        S0, S1, S2 = S[b, 0, a], S[b, 1, a], S[b, 2, a]
        # 2 W S_f[:, f] -> translational rows
        c0 = 2 * (w1 * S2 - w2 * S1)
        c1 = 2 * (w2 * S0 - w0 * S2)
        c2 = 2 * (w0 * S1 - w1 * S0)
        for i in range(3):
            G[vs + i, vs + 6 + f] = -(R[i, 0] * c0 + R[i, 1] * c1 + R[i, 2] * c2)
        g0, g1, g2 = Grot[b, 0, f], Grot[b, 1, f], Grot[b, 2, f]
        tr = Tz[0, 0, a] + Tz[1, 1, a] + Tz[2, 2, a]
        for i in range(3):
            tw = Tz[i, 0, a] * w0 + Tz[i, 1, a] * w1 + Tz[i, 2, a] * w2
            G[vs + 3 + i, vs + 6 + f] = -2 * (wv[i] * tr - tw)
        G[vs + 3, vs + 6 + f] -= w1 * g2 - w2 * g1
        G[vs + 4, vs + 6 + f] -= w2 * g0 - w0 * g2
        G[vs + 5, vs + 6 + f] -= w0 * g1 - w1 * g0
        # elastic rows, w columns
        for m in range(3):
            acc = 0.0
            for l in range(3):
                acc += wv[l] * (Tz[m, l, a] + Tz[l, m, a])
            acc -= 2 * wv[m] * tr
            G[vs + 6 + f, vs + 3 + m] = -acc
        G[vs + 6 + f, vs + 3] -= 2 * (Tzd[2, 1, a] - Tzd[1, 2, a])
        G[vs + 6 + f, vs + 4] -= 2 * (Tzd[0, 2, a] - Tzd[2, 0, a])
        G[vs + 6 + f, vs + 5] -= 2 * (Tzd[1, 0, a] - Tzd[0, 1, a])
        # elastic rows, q_f_dot columns: -2 sum_kl W_kl T[k, l, a, e + 1]
        for e in range(n):
            c = e + 1
            G[vs + 6 + f, vs + 6 + e] = -2 * (w2 * (T[b, 1, 0, a, c] - T[b, 0, 1, a, c])
                                              + w1 * (T[b, 0, 2, a, c] - T[b, 2, 0, a, c])
                                              + w0 * (T[b, 2, 1, a, c] - T[b, 1, 2, a, c]))


# --- markers ----------------------------------------------------------------------------------


@njit(cache=True)
def _quat_R_into(q, i, R):
    """R (3, 3) <- rotation of the unit quaternion ``q[i:i+4]`` (no allocation)."""
    w, x, y, z = q[i], q[i + 1], q[i + 2], q[i + 3]
    R[0, 0] = 1 - 2 * (y * y + z * z)
    R[0, 1] = 2 * (x * y - w * z)
    R[0, 2] = 2 * (x * z + w * y)
    R[1, 0] = 2 * (x * y + w * z)
    R[1, 1] = 1 - 2 * (x * x + z * z)
    R[1, 2] = 2 * (y * z - w * x)
    R[2, 0] = 2 * (x * z - w * y)
    R[2, 1] = 2 * (y * z + w * x)
    R[2, 2] = 1 - 2 * (x * x + y * y)


@njit(cache=True)
def _skew_into(x0, x1, x2, out):
    out[0, 0], out[0, 1], out[0, 2] = 0.0, -x2, x1
    out[1, 0], out[1, 1], out[1, 2] = x2, 0.0, -x0
    out[2, 0], out[2, 1], out[2, 2] = -x1, x0, 0.0


@njit(cache=True)
def _marker_velocity(m, nf, R, u, ud, Ap, ta, wa, w0, w1, w2, D, E, R_BM, dpq, dAq):
    """Velocity derivatives of ``pq`` and ``Aq`` of marker ``m`` (see :func:`_markers`)."""
    B = np.empty((3, 3))
    X = np.empty((3, 3))
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
        _skew_into(z0, z1, z2, B)
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
def _markers(q, v, body, body_q, body_v, qf_idx, D, E, p0, R_BM, p, A, Jp, Ja, Jw, pd, Ad, pq, Aq, wq,
             dpq, dAq, with_G):
    r"""Marker kinematics with local Jacobians (columns: v_r, w, q_f_dot of the marker's body).

    Scalar loops into the output arrays and a few scratch arrays allocated once per call: the
    operands are 3-vectors, and small-array temporaries would cost more than the arithmetic.
    With ``with_G``, also the velocity derivatives of the quadratic terms (same columns):
    ``pq = R (w x (w x u + 2 u_dot))`` gives ``dpq/dw = -R (skew(w x u + 2 u_dot) + W skew(u))``,
    ``dpq/dq_f_dot = 2 R W D``; an axis ``Aq_k = R (w x (w x a_k + 2 t_k))``, ``t_k = (E q_f_dot) x
    R_BM e_k``, gives ``dAq_k/dw = -R (skew(w x a_k + 2 t_k) + W skew(a_k))``,
    ``dAq_k/dq_f_dot = -2 R W skew(R_BM e_k) E`` (``W = skew(w)``).
    """
    n_m = body.size
    nf = D.shape[2]
    R = np.empty((3, 3))
    Ap = np.empty((3, 3))      # marker axes in the body frame, deformed
    ta = np.empty((3, 3))      # skew(theta_dot) R_BM
    wa = np.empty((3, 3))      # skew(w) Ap
    u = np.empty(3)
    th = np.empty(3)
    ud = np.empty(3)
    thd = np.empty(3)
    x = np.empty(3)
    y = np.empty(3)
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
        _quat_R_into(q, qs + 3, R)
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
                r0, r1, r2 = R_BM[m, 0, k], R_BM[m, 1, k], R_BM[m, 2, k]
                for f in range(nf):
                    # -R skew(R_BM e_k) E e_f = R (E e_f x R_BM e_k)
                    e0, e1, e2 = E[m, 0, f], E[m, 1, f], E[m, 2, f]
                    Ja[m, k, i, 6 + f] = (Ri0 * (e1 * r2 - e2 * r1) + Ri1 * (e2 * r0 - e0 * r2)
                                          + Ri2 * (e0 * r1 - e1 * r0))
        if with_G:
            _marker_velocity(m, nf, R, u, ud, Ap, ta, wa, w0, w1, w2, D, E, R_BM, dpq, dAq)


# --- constraint rows --------------------------------------------------------------------------


@njit(cache=True)
def _add_row(J, r, coef, Jloc, cols):
    """J[r, cols] += coef @ Jloc  (coef (3,), Jloc (3, n_loc))."""
    for c in range(cols.size):
        col = cols[c]
        if col >= 0:
            J[r, col] += coef[0] * Jloc[0, c] + coef[1] * Jloc[1, c] + coef[2] * Jloc[2, c]


@njit(cache=True)
def _rows(kinds, row, mi, mj, ai, aj, cols, p, A, Jp, Ja, pd, Ad, pq, Aq, phi, J, gamma, dpq, dAq, Gg, with_G):
    """Constraint primitives (kind 0 point, 1 dot, 2 ddot, 3 angle); see sim.constraints.

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
                _add_row(J, r + c, e[c], Jp[j], cols[j])
                _add_row(J, r + c, -e[c], Jp[i], cols[i])
                if with_G:
                    _add_row(Gg, r + c, -e[c], dpq[j], cols[j])
                    _add_row(Gg, r + c, e[c], dpq[i], cols[i])
        elif kind == 1:
            a, b = A[i, :, ai[t]], A[j, :, aj[t]]
            phi[r] = _dot(a, b)
            _add_row(J, r, b, Ja[i, ai[t]], cols[i])
            _add_row(J, r, a, Ja[j, aj[t]], cols[j])
            ad, bd = Ad[i, :, ai[t]], Ad[j, :, aj[t]]
            aq, bq = Aq[i, :, ai[t]], Aq[j, :, aj[t]]
            gamma[r] = -(_dot(aq, b) + 2 * _dot(ad, bd) + _dot(a, bq))
            if with_G:
                _add_row(Gg, r, -b, dAq[i, ai[t]], cols[i])
                _add_row(Gg, r, -2 * bd, Ja[i, ai[t]], cols[i])
                _add_row(Gg, r, -2 * ad, Ja[j, aj[t]], cols[j])
                _add_row(Gg, r, -a, dAq[j, aj[t]], cols[j])
        elif kind == 2:
            a = A[i, :, ai[t]]
            d = p[j] - p[i]
            phi[r] = _dot(a, d)
            _add_row(J, r, d, Ja[i, ai[t]], cols[i])
            _add_row(J, r, a, Jp[j], cols[j])
            _add_row(J, r, -a, Jp[i], cols[i])
            ad, aq = Ad[i, :, ai[t]], Aq[i, :, ai[t]]
            gamma[r] = -(_dot(aq, d) + 2 * _dot(ad, pd[j] - pd[i]) + _dot(a, pq[j] - pq[i]))
            if with_G:
                _add_row(Gg, r, -d, dAq[i, ai[t]], cols[i])
                _add_row(Gg, r, -2 * (pd[j] - pd[i]), Ja[i, ai[t]], cols[i])
                _add_row(Gg, r, -2 * ad, Jp[j], cols[j])
                _add_row(Gg, r, 2 * ad, Jp[i], cols[i])
                _add_row(Gg, r, -a, dpq[j], cols[j])
                _add_row(Gg, r, a, dpq[i], cols[i])
        else:
            xi, yi, xj = A[i, :, 0], A[i, :, 1], A[j, :, 0]
            X, Y = _dot(xj, xi), _dot(xj, yi)
            r2 = X * X + Y * Y
            phi[r] = np.arctan2(Y, X)
            # dtheta = (X dY - Y dX) / r2 with dX = xi.dxj + xj.dxi, dY = yi.dxj + xj.dyi
            _add_row(J, r, (X * yi - Y * xi) / r2, Ja[j, 0], cols[j])
            _add_row(J, r, -Y * xj / r2, Ja[i, 0], cols[i])
            _add_row(J, r, X * xj / r2, Ja[i, 1], cols[i])
            xid, yid, xjd = Ad[i, :, 0], Ad[i, :, 1], Ad[j, :, 0]
            xiq, yiq, xjq = Aq[i, :, 0], Aq[i, :, 1], Aq[j, :, 0]
            Xd, Yd = _dot(xjd, xi) + _dot(xj, xid), _dot(xjd, yi) + _dot(xj, yid)
            Xq = _dot(xjq, xi) + 2 * _dot(xjd, xid) + _dot(xj, xiq)
            Yq = _dot(xjq, yi) + 2 * _dot(xjd, yid) + _dot(xj, yiq)
            gamma[r] = -((X * Yq - Y * Xq) / r2 - 2 * (X * Yd - Y * Xd) * (X * Xd + Y * Yd) / r2**2)
            if with_G:
                # gamma = -(X Yq - Y Xq)/r2 + 2 K2 K1 / r2^2, K1 = X Xd + Y Yd, K2 = X Yd - Y Xd
                K1, K2 = X * Xd + Y * Yd, X * Yd - Y * Xd
                cXq, cYq = Y / r2, -X / r2
                cXd = 2 * (X * K2 - Y * K1) / r2**2
                cYd = 2 * (X * K1 + Y * K2) / r2**2
                _add_row(Gg, r, cXd * xi + cYd * yi + 2 * cXq * xid + 2 * cYq * yid, Ja[j, 0], cols[j])
                _add_row(Gg, r, cXd * xj + 2 * cXq * xjd, Ja[i, 0], cols[i])
                _add_row(Gg, r, cYd * xj + 2 * cYq * xjd, Ja[i, 1], cols[i])
                _add_row(Gg, r, cXq * xi + cYq * yi, dAq[j, 0], cols[j])
                _add_row(Gg, r, cXq * xj, dAq[i, 0], cols[i])
                _add_row(Gg, r, cYq * xj, dAq[i, 1], cols[i])


class Tables(NamedTuple):
    """Everything the compiled evaluation reads besides the state: the model's tables and the
    evaluator's work arrays (one record; the compiled loops pass it on as it is).

    ``g_*``: tuples over the body groups (:class:`sim.model.BodyGroup`), the second moments
    also as their nonzeros (``g_Tnz``, ``g_Tval``: :func:`_sparse_T`); ``st_*``: the bodies
    with geometric stiffening, padded to the most elements and coordinates per element (start
    of their elastic coordinates in ``q`` and ``v``, count, the coordinates of each element
    (n_s, e, m), elongation rows (n_s, e, m), ``EA/L`` (n_s, e; 0 on padding), slope matrices
    (n_s, e, m, m)); ``sp_*``: the lumped springs
    (markers, 6x6 stiffness and damping, home deflections; :mod:`sim.kernels.springs`);
    ``ca_*``: the compliant actuators (indices, stiffness, damping); ``angle`` (n_a,): the
    actuators measured as angles; ``n_joint``: the joint rows before the actuator rows;
    ``n_v``: the velocity coordinates; ``body_nf``: each body's elastic coordinates; the
    rest as :class:`Evaluator`.
    """

    gravity: np.ndarray
    g_qs: tuple
    g_vs: tuple
    g_mass: tuple
    g_S: tuple
    g_T: tuple
    g_Tnz: tuple
    g_Tval: tuple
    g_Jrot: tuple
    g_Grot: tuple
    g_Mff: tuple
    g_Kff: tuple
    marker_body: np.ndarray
    body_q: np.ndarray
    body_v: np.ndarray
    qf_idx: np.ndarray
    D: np.ndarray
    E: np.ndarray
    p0: np.ndarray
    R_BM: np.ndarray
    p: np.ndarray
    A: np.ndarray
    Jp: np.ndarray
    Ja: np.ndarray
    Jw: np.ndarray
    pd: np.ndarray
    Ad: np.ndarray
    pq: np.ndarray
    Aq: np.ndarray
    wq: np.ndarray
    kinds: np.ndarray
    row: np.ndarray
    mi: np.ndarray
    mj: np.ndarray
    ai: np.ndarray
    aj: np.ndarray
    cols: np.ndarray
    dpq: np.ndarray
    dAq: np.ndarray
    st_q: np.ndarray
    st_v: np.ndarray
    st_nf: np.ndarray
    st_idx: np.ndarray
    st_A: np.ndarray
    st_k: np.ndarray
    st_G: np.ndarray
    sp_mi: np.ndarray
    sp_mj: np.ndarray
    sp_K: np.ndarray
    sp_C: np.ndarray
    sp_home: np.ndarray
    ca_idx: np.ndarray
    ca_k: np.ndarray
    ca_c: np.ndarray
    angle: np.ndarray
    n_joint: int
    n_v: int
    body_nf: np.ndarray


@njit(cache=True, nogil=True)
def _evaluate_tables(q, v, t, M, Q, phi, J, gamma, G, Gg, Kt, targets, with_G, with_K, flush=True, bodies=True):
    """The equations at ``(q, v)`` into the given arrays; ``t``: :class:`Tables`.

    ``M`` (n_v, n_v), ``Q`` (n_v,): mass matrix and forces of the bodies, the geometric
    stiffening and the lumped springs, and of the compliant actuators pulled towards
    ``targets`` (n_a,; size 0: no actuator forces); ``phi``, ``J``, ``gamma`` (n_rows, ...):
    the constraint rows, joints then actuators (:func:`_rows`).  With ``with_G``, also ``G =
    dQ/dv`` (n_v, n_v) and ``Gg = d gamma/dv``; with ``with_K`` the tangent stiffness ``Kt``
    (n_v, n_v) of the stiffening and the lumped compliance.  ``flush``: flush ``M``
    (:func:`sim.linalg.flush`) for the LAPACK calls it goes to (the Newton residual, products
    in compiled loops only, skips it: a third of the evaluation on the larger models).
    Without ``bodies``, the markers and constraint rows only (``M``, ``Q`` untouched).
    """
    if bodies:
        for g in range(len(t.g_qs)):
            _group_terms(q, v, t.gravity, t.g_qs[g], t.g_vs[g], t.g_mass[g], t.g_S[g], t.g_T[g], t.g_Tnz[g],
                         t.g_Tval[g], t.g_Jrot[g],
                         t.g_Grot[g], t.g_Mff[g], t.g_Kff[g], M, Q, G, with_G)
        for b in range(t.st_q.size):
            n, i = t.st_nf[b], t.st_v[b]
            tangent = np.zeros((n, n)) if with_K else M
            stretch(q[t.st_q[b]:t.st_q[b] + n], t.st_idx[b], t.st_A[b], t.st_k[b], t.st_G[b], Q[i:i + n], tangent,
                    with_K)
            if with_K:
                Kt[i:i + n, i:i + n] += tangent
        if flush:
            _flush(M, FLUSH_RTOL)
    _markers(q, v, t.marker_body, t.body_q, t.body_v, t.qf_idx, t.D, t.E, t.p0, t.R_BM, t.p, t.A, t.Jp, t.Ja,
             t.Jw, t.pd, t.Ad, t.pq, t.Aq, t.wq, t.dpq, t.dAq, with_G)
    _rows(t.kinds, t.row, t.mi, t.mj, t.ai, t.aj, t.cols, t.p, t.A, t.Jp, t.Ja, t.pd, t.Ad, t.pq, t.Aq, phi, J,
          gamma, t.dpq, t.dAq, Gg, with_G)
    if bodies and t.sp_mi.size:
        lumped_springs(t.sp_mi, t.sp_mj, t.sp_K, t.sp_C, t.sp_home, t.cols, t.p, t.A, t.Jp, t.Ja, t.Jw, v, Q,
                        G, Kt, with_G, with_K)
    if bodies and t.ca_idx.size and targets.size:
        nj = t.n_joint
        actuator_springs(t.ca_idx, t.ca_k, t.ca_c, t.angle, phi[nj:], J[nj:], targets, v, Q, G, Kt,
                                 with_G, with_K)


@njit(cache=True)
def _potential(q, t):
    """Gravitational and elastic energy [J] (see :func:`sim.dynamics.potential`): bodies,
    geometric stiffening and lumped springs; ``t``: :class:`Tables` (with springs, its marker
    work arrays are overwritten)."""
    gravity, g_qs, g_mass, g_S, g_Kff = t.gravity, t.g_qs, t.g_mass, t.g_S, t.g_Kff
    R = np.empty((3, 3))
    grav = 0.0
    elastic = 0.0
    for g in range(len(g_qs)):
        S, K, mass = g_S[g], g_Kff[g], g_mass[g]
        n = K.shape[1]
        for b in range(g_qs[g].size):
            qs = g_qs[g][b]
            _quat_R_into(q, qs + 3, R)
            for k in range(3):
                s_k = S[b, k, 0]
                for f in range(n):
                    s_k += S[b, k, f + 1] * q[qs + 7 + f]
                Rs = 0.0
                for i in range(3):
                    Rs += R[i, k] * gravity[i]
                grav -= s_k * Rs
            for i in range(3):
                grav -= mass[b] * q[qs + i] * gravity[i]
            for f in range(n):
                acc = 0.0
                for e in range(n):
                    acc += K[b, f, e] * q[qs + 7 + e]
                elastic += 0.5 * q[qs + 7 + f] * acc
    scratch = np.zeros(t.body_nf.max() if t.body_nf.size else 0)
    for b in range(t.st_q.size):
        n = t.st_nf[b]
        elastic += stretch(q[t.st_q[b]:t.st_q[b] + n], t.st_idx[b], t.st_A[b], t.st_k[b], t.st_G[b], scratch[:n], R,
                           runtime(False))
    if t.sp_mi.size:
        v = np.zeros(t.n_v)
        _markers(q, v, t.marker_body, t.body_q, t.body_v, t.qf_idx, t.D, t.E, t.p0, t.R_BM, t.p, t.A, t.Jp, t.Ja,
                 t.Jw, t.pd, t.Ad, t.pq, t.Aq, t.wq, t.dpq, t.dAq, runtime(False))
        none = np.zeros((0, 0))
        elastic += lumped_springs(t.sp_mi, t.sp_mj, t.sp_K, t.sp_C, t.sp_home, t.cols, t.p, t.A, t.Jp, t.Ja, t.Jw,
                                  v, v.copy(), none, none, runtime(False), runtime(False))
    return grav, elastic


@contextlib.contextmanager
def _sigint_deferred():
    """Hold back Ctrl-C for the duration and raise it afterwards.

    Python runs signal handlers in the main thread between bytecodes, wherever it is -- here
    possibly inside llvmlite's compiler callbacks, where a KeyboardInterrupt is lost and leaves
    numba broken.  The handler is swapped for one that only records the signal.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if received:
        raise KeyboardInterrupt


KINDS = ("point", "dot", "ddot", "angle")


def _stretch_tables(model):
    """The ``st_*`` fields of :class:`Tables`: the stiffened bodies' elastic starts in ``q`` and
    ``v``, counts, and their per-element stiffening tables (:func:`sim.kernels.stretch.compact`)
    padded to the most elements and coordinates per element."""
    bodies = dynamics._stretch_bodies(model)
    tables = [compact(model.bodies[b].stretch_rows, model.bodies[b].stretch_slopes) for b in bodies]
    n_e = max((model.bodies[b].stretch_k.size for b in bodies), default=0)
    m = max((t[0].shape[1] for t in tables), default=0)
    idx, A = np.zeros((len(bodies), n_e, m), dtype=np.int64), np.zeros((len(bodies), n_e, m))
    k, G = np.zeros((len(bodies), n_e)), np.zeros((len(bodies), n_e, m, m))
    for i, (b, (ix, a, g)) in enumerate(zip(bodies, tables)):
        e, f = ix.shape
        idx[i, :e, :f], A[i, :e, :f], k[i, :e], G[i, :e, :f, :f] = ix, a, model.bodies[b].stretch_k, g
    return (np.array([model.q_index[b][0] + 7 for b in bodies], dtype=np.int64),
            np.array([model.q_index[b][1] + 6 for b in bodies], dtype=np.int64),
            np.array([model.bodies[b].n_f for b in bodies], dtype=np.int64), idx, A, k, G)


def _sparse_T(group):
    """The nonzeros of a body group's second moments ``T`` (n_b, 3, 3, n+1, n+1), as the
    ``g_Tnz`` (nnz, 4) and ``g_Tval`` (n_b, nnz) fields of :class:`Tables`: row ``(k, l, c, a)``
    stands for ``T[:, l, k, c, a]`` (the pattern of all the group's bodies)."""
    T = np.asarray(group.second_moment, dtype=float)
    l, k, c, a = np.nonzero(np.any(T != 0, axis=0))
    return np.stack([k, l, c, a], axis=1).astype(np.int64), np.ascontiguousarray(T[:, l, k, c, a])


def _lumped_tables(model):
    """The ``sp_*``, ``ca_*`` and ``angle`` fields of :class:`Tables`."""
    t = model.spring_tables if model.springs else dict(
        mi=np.zeros(0), mj=np.zeros(0), K=np.zeros((0, 6, 6)), C=np.zeros((0, 6, 6)), d_home=np.zeros((0, 6)))
    return (t["mi"].astype(np.int64), t["mj"].astype(np.int64), *(np.ascontiguousarray(t[k], dtype=float)
                                                                  for k in ("K", "C", "d_home")),
            *springs.actuator_tables(model))


class Evaluation(NamedTuple):
    """Equations at one state; see :meth:`Evaluator.evaluate`."""

    M: np.ndarray
    Q: np.ndarray
    C: np.ndarray
    J: np.ndarray
    gamma: np.ndarray
    s: np.ndarray
    J_s: np.ndarray
    gamma_s: np.ndarray
    Q_v: np.ndarray = None
    gamma_v: np.ndarray = None
    K_t: np.ndarray = None


class Evaluator:
    """Compiled ``(M, Q, C, J, gamma)`` of a model; holds the flat tables and work arrays.

    An explicit object (STYLE rule 1: no hidden caches): build one per model and pass it to
    the time loop.

    Parameters
    ----------
    model : Model
    """

    def __init__(self, model):
        self.model = model
        nq, nv = model.n_q, model.n_v
        n_m = len(model.markers)
        self.body_q = np.array([s for s, _ in model.q_index], dtype=np.int64)
        self.body_v = np.array([s for _, s in model.q_index], dtype=np.int64)
        # A marker's shape functions D, E (3, n_f of its body) are nonzero only on the elastic
        # coordinates of its node (6 of a beam's): the kernels keep those columns only, with
        # their elastic index (-1: padding) and their column of v (-1: none).
        used = [np.flatnonzero(np.any(model.marker_D[m] != 0, axis=0) | np.any(model.marker_E[m] != 0, axis=0))
                if mk.body >= 0 else np.zeros(0, dtype=np.int64) for m, mk in enumerate(model.markers)]
        nf = max((u.size for u in used), default=0)
        self.n_loc = 6 + nf
        self.qf_idx = np.full((n_m, nf), -1, dtype=np.int64)
        self.cols = np.full((n_m, 6 + nf), -1, dtype=np.int64)
        self.marker_D = np.zeros((n_m, 3, nf))
        self.marker_E = np.zeros((n_m, 3, nf))
        for m, mk in enumerate(model.markers):
            if mk.body < 0:
                continue
            k = used[m].size
            self.qf_idx[m, :k] = used[m]
            self.cols[m, :6] = self.body_v[mk.body] + np.arange(6)
            self.cols[m, 6:6 + k] = self.body_v[mk.body] + 6 + used[m]
            self.marker_D[m, :, :k] = model.marker_D[m][:, used[m]]
            self.marker_E[m, :, :k] = model.marker_E[m][:, used[m]]
        self.marker_body = model.marker_body.astype(np.int64)
        self.work = dict(p=np.zeros((n_m, 3)), A=np.zeros((n_m, 3, 3)), Jp=np.zeros((n_m, 3, 6 + nf)),
                         Ja=np.zeros((n_m, 3, 3, 6 + nf)), Jw=np.zeros((n_m, 3, 6 + nf)), pd=np.zeros((n_m, 3)),
                         Ad=np.zeros((n_m, 3, 3)), pq=np.zeros((n_m, 3)), Aq=np.zeros((n_m, 3, 3)),
                         wq=np.zeros((n_m, 3)), dpq=np.zeros((n_m, 3, 6 + nf)), dAq=np.zeros((n_m, 3, 3, 6 + nf)))
        tables = [(k, model.rows[name]) for k, name in enumerate(KINDS) if model.rows[name]["row"].size]
        cat = (lambda f: np.concatenate([t[f] for _, t in tables]).astype(np.int64) if tables
               else np.zeros(0, dtype=np.int64))
        self.rows = (np.concatenate([np.full(t["row"].size, k, dtype=np.int64) for k, t in tables]) if tables
                     else np.zeros(0, dtype=np.int64), *(cat(f) for f in ("row", "mi", "mj", "ai", "aj")))
        groups = model.body_groups
        dense = lambda f: [np.ascontiguousarray(getattr(g, f), dtype=float) for g in groups]   # noqa: E731
        self.groups = tuple(tuple(x) for x in (
            [g.q_start.astype(np.int64) for g in groups], [g.v_start.astype(np.int64) for g in groups],
            dense("mass"), dense("first_moment"), dense("second_moment"), *zip(*(_sparse_T(g) for g in groups)),
            *(dense(f) for f in ("rot_inertia", "rot_coupling", "mass_ff", "stiffness_ff"))))
        self.n_rows = model.rows["n_total"]
        self.n_joint = model.rows["n_joint"]
        self.compliant = springs.compliant_mask(model)
        self.keep = np.concatenate([np.ones(model.rows["n_joint"], dtype=bool), ~self.compliant])
        # Whether any force has a tangent stiffness (K_t) besides the bodies' constant K_ff.
        self.stiff = dynamics._has_lumped(model) or bool(dynamics._stretch_bodies(model))
        self._no_targets = np.zeros(0)
        self.n_q, self.n_v = nq, nv
        self._empty = np.zeros((0, 0))
        self.body_nf = np.array([b.n_f for b in model.bodies], dtype=np.int64)
        w = self.work
        self.tables = Tables(np.ascontiguousarray(model.gravity, dtype=float), *self.groups, self.marker_body,
                             self.body_q, self.body_v, self.qf_idx, self.marker_D, self.marker_E, model.marker_p0,
                             model.marker_R, w["p"], w["A"], w["Jp"], w["Ja"], w["Jw"], w["pd"], w["Ad"], w["pq"],
                             w["Aq"], w["wq"], *self.rows, self.cols, w["dpq"], w["dAq"], *_stretch_tables(model),
                             *_lumped_tables(model), int(self.n_joint), int(nv), self.body_nf)
        # Compile (or load from cache) every kernel now, with Ctrl-C held back: an interrupt
        # that lands inside llvmlite's compiler callbacks is lost and leaves numba broken.
        with _sigint_deferred():
            zero = np.zeros(nv)
            self.evaluate(model.q_home, zero, targets=np.zeros(len(model.actuators)))
            self.evaluate(model.q_home, zero, velocity_jacobian=True)
            self.potential(model.q_home)
            self.integrate(model.q_home, zero)

    def pose(self, v=None):
        """End-effector terms of the last :meth:`evaluate` (:func:`sim.kinematics.pose_terms`):
        ``x, J`` and, with the velocity ``v`` of that evaluation, ``x_q``."""
        e = self.model.ee_marker
        w = self.work
        Jp = np.zeros((3, self.n_v))
        Jw = np.zeros((3, self.n_v))
        cols = self.cols[e]
        ok = cols >= 0
        Jp[:, cols[ok]] = w["Jp"][e][:, ok]
        Jw[:, cols[ok]] = w["Jw"][e][:, ok]
        if v is None:
            return pose_terms(self.model.pose_kinds, w["p"][e], w["A"][e], Jp, Jw)
        return pose_terms(self.model.pose_kinds, w["p"][e], w["A"][e], Jp, Jw, v, w["pq"][e], w["wq"][e])

    def potential(self, q):
        """Gravitational and elastic energy [J] at ``q``, as :func:`sim.dynamics.potential`."""
        return _potential(np.ascontiguousarray(q, dtype=float), self.tables)

    def integrate(self, q, dv):
        """``q ⊕ dv`` (n_q,), as :func:`sim.kinematics.integrate`."""
        out = np.empty_like(q)
        _integrate(q, dv, self.body_q, self.body_v, self.body_nf, out)
        return out

    def evaluate(self, q, v, targets=None, target_acc=None, velocity_jacobian=False, bodies=True, flush=True):
        """The equations at ``(q, v)``, as in the reference kernels.

        ``bodies=False``: the kinematic terms only (``M``, ``Q`` None), for the rigid robot's
        motion, which needs no mass matrix.  ``flush=False``: ``M`` not flushed
        (:func:`sim.linalg.flush`), for callers whose products with it are few and small
        (a third of the evaluation on the 3-RRRU).

        Returns
        -------
        Evaluation
            ``M`` (n_v, n_v), ``Q`` (n_v,) of :func:`sim.dynamics.mass_and_forces`
            (``targets`` also pull compliant actuators); ``C``, ``J``, ``gamma`` of
            :func:`sim.constraints.constraints` (joint rows, plus the rigid actuators' rows
            when ``targets`` is given); ``s``, ``J_s`` the values and Jacobian of all actuators.
            With ``velocity_jacobian``: ``Q_v = dQ/dv`` (n_v, n_v) of the velocity-dependent
            forces and ``gamma_v = d gamma/dv`` (same rows as ``J``); ``K_t`` the tangent
            stiffness of the geometric stiffening and the linearised lumped compliance (None
            when the model has neither).
        """
        model = self.model
        M, Q = (np.zeros((self.n_v, self.n_v)), np.zeros(self.n_v)) if bodies else (self._empty, np.zeros(0))
        phi = np.zeros(self.n_rows)
        J = np.zeros((self.n_rows, self.n_v))
        gamma = np.zeros(self.n_rows)
        if velocity_jacobian:
            G, Gg, K_t = np.zeros((self.n_v, self.n_v)), np.zeros((self.n_rows, self.n_v)), np.zeros((self.n_v,) * 2)
        else:
            G = Gg = K_t = self._empty
        pull = self._no_targets if targets is None else np.ascontiguousarray(targets, dtype=float)
        _evaluate_tables(q, v, self.tables, M, Q, phi, J, gamma, G, Gg, K_t, pull, velocity_jacobian,
                         velocity_jacobian, flush, bodies)
        G = G if velocity_jacobian else None
        K_t = K_t if velocity_jacobian and self.stiff else None
        if not bodies:
            M = Q = None
        nj = self.n_joint
        s, J_s, gamma_s = phi[nj:].copy(), J[nj:].copy(), gamma[nj:].copy()
        if targets is None:
            return Evaluation(M, Q, phi[:nj], J[:nj], gamma[:nj], s, J_s, gamma_s, G,
                              Gg[:nj] if velocity_jacobian else None, K_t)
        phi[nj:] = drive_residual(model, s, targets, self.tables.angle)
        if target_acc is not None:
            gamma[nj:] += target_acc
        if self.compliant.any():   # compliant actuators are springs, not constraints
            keep = self.keep
            return Evaluation(M, Q, phi[keep], J[keep], gamma[keep], s, J_s, gamma_s, G,
                              Gg[keep] if velocity_jacobian else None, K_t)
        return Evaluation(M, Q, phi, J, gamma, s, J_s, gamma_s, G, Gg if velocity_jacobian else None, K_t)
