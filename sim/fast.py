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
round-off on random states of every shipped model.  Lumped springs, compliant actuators and
geometric stiffening are added with the reference functions (cheap, and rare in the hot path).
"""
import contextlib
import signal
import threading
from typing import NamedTuple

import numpy as np
from numba import njit

from . import dynamics, springs
from .constraints import drive_residual
from .kinematics import pose_terms
from .linalg import FLUSH_RTOL

# --- small 3-vector helpers -----------------------------------------------------------------


@njit(cache=True)
def _cross(a, b):
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


@njit(cache=True)
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(cache=True)
def _mv(R, x):
    """R (3, k) @ x (k,) without BLAS (tiny operands)."""
    out = np.zeros(R.shape[0])
    for i in range(R.shape[0]):
        acc = 0.0
        for j in range(R.shape[1]):
            acc += R[i, j] * x[j]
        out[i] = acc
    return out


@njit(cache=True)
def _mm(A, B):
    """A (m, k) @ B (k, n) without BLAS (tiny operands)."""
    out = np.zeros((A.shape[0], B.shape[1]))
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            acc = 0.0
            for k in range(A.shape[1]):
                acc += A[i, k] * B[k, j]
            out[i, j] = acc
    return out


@njit(cache=True)
def _skew(w):
    S = np.zeros((3, 3))
    S[0, 1], S[0, 2] = -w[2], w[1]
    S[1, 0], S[1, 2] = w[2], -w[0]
    S[2, 0], S[2, 1] = -w[1], w[0]
    return S


@njit(cache=True)
def _quat_R(p):
    w, x, y, z = p[0], p[1], p[2], p[3]
    R = np.empty((3, 3))
    R[0, 0] = 1 - 2 * (y * y + z * z)
    R[0, 1] = 2 * (x * y - w * z)
    R[0, 2] = 2 * (x * z + w * y)
    R[1, 0] = 2 * (x * y + w * z)
    R[1, 1] = 1 - 2 * (x * x + z * z)
    R[1, 2] = 2 * (y * z - w * x)
    R[2, 0] = 2 * (x * z - w * y)
    R[2, 1] = 2 * (y * z + w * x)
    R[2, 2] = 1 - 2 * (x * x + y * y)
    return R


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
def _group_terms(q, v, gravity, q_start, v_start, mass, S, T, Jrot, Grot, Mff, Kff, M, Q):
    """Write the mass blocks and forces of one body group into M (n_v, n_v) and Q (n_v,)."""
    g_count = q_start.size
    n = Mff.shape[1]
    for b in range(g_count):
        qs, vs = q_start[b], v_start[b]
        R = _quat_R(q[qs + 3:qs + 7])
        z = np.empty(n + 1)
        zd = np.zeros(n + 1)
        z[0] = 1.0
        for i in range(n):
            z[i + 1] = q[qs + 7 + i]
            zd[i + 1] = v[vs + 6 + i]
        Tz = np.zeros((3, 3, n + 1))
        Tzd = np.zeros((3, 3, n + 1))
        for k in range(3):
            for l in range(3):
                for a in range(n + 1):
                    acc = 0.0
                    accd = 0.0
                    for c in range(n + 1):
                        acc += T[b, k, l, a, c] * z[c]
                        accd += T[b, k, l, a, c] * zd[c]
                    Tz[k, l, a] = acc
                    Tzd[k, l, a] = accd
        U = np.zeros((3, 3))
        P = np.zeros((3, 3))
        for k in range(3):
            for l in range(3):
                for a in range(n + 1):
                    U[k, l] += Tz[k, l, a] * z[a]
                    P[k, l] += Tzd[k, l, a] * z[a]
        s = np.zeros(3)
        for k in range(3):
            for a in range(n + 1):
                s[k] += S[b, k, a] * z[a]
        trU = U[0, 0] + U[1, 1] + U[2, 2]
        Ith = -U + Jrot[b]
        for k in range(3):
            Ith[k, k] += trU
        RS = -_mm(R, _skew(s))
        for i in range(3):
            M[vs + i, vs + i] = mass[b]
            for j in range(3):
                M[vs + i, vs + 3 + j] = RS[i, j]
                M[vs + 3 + j, vs + i] = RS[i, j]
                M[vs + 3 + i, vs + 3 + j] = Ith[i, j]
        # forces
        w = v[vs + 3:vs + 6]
        g_B = _mv(R.T, gravity)
        ws = _cross(w, _cross(w, s))
        Rws = _mv(R, ws)
        Iw = _mv(Ith, w)
        gyro = _cross(w, Iw)
        sg = _cross(s, g_B)
        for i in range(3):
            Q[vs + i] = mass[b] * gravity[i] - Rws[i]
            Q[vs + 3 + i] = sg[i] - gyro[i]
        if n > 0:
            qfd = zd[1:]
            Sf = S[b, :, 1:]
            RSf = _mm(R, Sf)
            for i in range(3):
                for f in range(n):
                    M[vs + i, vs + 6 + f] = RSf[i, f]
                    M[vs + 6 + f, vs + i] = RSf[i, f]
                    m_tf = Grot[b, i, f]
                    if i == 0:
                        m_tf += Tz[2, 1, f + 1] - Tz[1, 2, f + 1]
                    elif i == 1:
                        m_tf += Tz[0, 2, f + 1] - Tz[2, 0, f + 1]
                    else:
                        m_tf += Tz[1, 0, f + 1] - Tz[0, 1, f + 1]
                    M[vs + 3 + i, vs + 6 + f] = m_tf
                    M[vs + 6 + f, vs + 3 + i] = m_tf
            for f in range(n):
                for e in range(n):
                    M[vs + 6 + f, vs + 6 + e] = Mff[b, f, e]
            Sfd = _mv(Sf, qfd)
            cor = _mv(R, _cross(w, Sfd))
            Gq = _mv(Grot[b], qfd)
            wG = _cross(w, Gq)
            trP = P[0, 0] + P[1, 1] + P[2, 2]
            PTw = _mv(P.T, w)
            for i in range(3):
                Q[vs + i] -= 2 * cor[i]
                Q[vs + 3 + i] -= wG[i] + 2 * (w[i] * trP - PTw[i])
            W = _skew(w)
            WW = _mm(W, W)
            qf = z[1:]
            for f in range(n):
                acc = 0.0
                for i in range(3):
                    acc += Sf[i, f] * g_B[i]
                for e in range(n):
                    acc -= Kff[b, f, e] * qf[e]
                for k in range(3):
                    for l in range(3):
                        acc -= WW[k, l] * Tz[k, l, f + 1] + 2 * W[k, l] * Tzd[k, l, f + 1]
                Q[vs + 6 + f] = acc


# --- markers ----------------------------------------------------------------------------------


@njit(cache=True)
def _markers(q, v, body, body_q, body_v, qf_idx, D, E, p0, R_BM, p, A, Jp, Ja, Jw, pd, Ad, pq, Aq, wq):
    """Marker kinematics with local Jacobians (columns: v_r, w, q_f_dot of the marker's body)."""
    n_m = body.size
    nf = D.shape[2]
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
        R = _quat_R(q[qs + 3:qs + 7])
        qf = np.zeros(nf)
        qfd = np.zeros(nf)
        for f in range(nf):
            j = qf_idx[m, f]
            if j >= 0:
                qf[f] = q[qs + 7 + j]
                qfd[f] = v[vs + 6 + j]
        u = p0[m] + _mv(D[m], qf)
        th = _mv(E[m], qf)
        ud = _mv(D[m], qfd)
        thd = _mv(E[m], qfd)
        Ap = R_BM[m] + _mm(_skew(th), R_BM[m])
        pos = q[qs:qs + 3] + _mv(R, u)
        RA = _mm(R, Ap)
        w = v[vs + 3:vs + 6]
        wu = _cross(w, u)
        pdot = v[vs:vs + 3] + _mv(R, wu + ud)
        pquad = _mv(R, _cross(w, wu + 2 * ud))
        Wm = _skew(w)
        ta = _mm(_skew(thd), R_BM[m])
        wa = _mm(Wm, Ap)
        Adot = _mm(R, wa + ta)
        Aquad = _mm(R, _mm(Wm, wa + 2 * ta))
        mRu = -_mm(R, _skew(u))
        RD = _mm(R, D[m])
        RE = _mm(R, E[m])
        wquad = _mv(R, _cross(w, thd))
        for i in range(3):
            p[m, i] = pos[i]
            pd[m, i] = pdot[i]
            pq[m, i] = pquad[i]
            wq[m, i] = wquad[i]
            for k in range(3):
                A[m, i, k] = RA[i, k]
                Ad[m, i, k] = Adot[i, k]
                Aq[m, i, k] = Aquad[i, k]
            for c in range(6 + nf):
                Jp[m, i, c] = 0.0
                Jw[m, i, c] = 0.0
            Jp[m, i, i] = 1.0
            for c in range(3):
                Jp[m, i, 3 + c] = mRu[i, c]
                Jw[m, i, 3 + c] = R[i, c]
            for f in range(nf):
                Jp[m, i, 6 + f] = RD[i, f]
                Jw[m, i, 6 + f] = RE[i, f]
        for k in range(3):
            mRa = -_mm(R, _skew(Ap[:, k]))
            mRaE = -_mm(_mm(R, _skew(R_BM[m, :, k])), E[m])
            for i in range(3):
                for c in range(3):
                    Ja[m, k, i, c] = 0.0
                    Ja[m, k, i, 3 + c] = mRa[i, c]
                for f in range(nf):
                    Ja[m, k, i, 6 + f] = mRaE[i, f]


# --- constraint rows --------------------------------------------------------------------------


@njit(cache=True)
def _add_row(J, r, coef, Jloc, cols):
    """J[r, cols] += coef @ Jloc  (coef (3,), Jloc (3, n_loc))."""
    for c in range(cols.size):
        col = cols[c]
        if col >= 0:
            J[r, col] += coef[0] * Jloc[0, c] + coef[1] * Jloc[1, c] + coef[2] * Jloc[2, c]


@njit(cache=True)
def _rows(kind, row, mi, mj, ai, aj, cols, p, A, Jp, Ja, pd, Ad, pq, Aq, phi, J, gamma):
    """Constraint primitives (kind 0 point, 1 dot, 2 ddot, 3 angle); see sim.constraints."""
    e = np.eye(3)
    for t in range(row.size):
        r, i, j = row[t], mi[t], mj[t]
        if kind == 0:
            for c in range(3):
                phi[r + c] = p[j, c] - p[i, c]
                gamma[r + c] = -(pq[j, c] - pq[i, c])
                _add_row(J, r + c, e[c], Jp[j], cols[j])
                _add_row(J, r + c, -e[c], Jp[i], cols[i])
        elif kind == 1:
            a, b = A[i, :, ai[t]], A[j, :, aj[t]]
            phi[r] = _dot(a, b)
            _add_row(J, r, b, Ja[i, ai[t]], cols[i])
            _add_row(J, r, a, Ja[j, aj[t]], cols[j])
            ad, bd = Ad[i, :, ai[t]], Ad[j, :, aj[t]]
            aq, bq = Aq[i, :, ai[t]], Aq[j, :, aj[t]]
            gamma[r] = -(_dot(aq, b) + 2 * _dot(ad, bd) + _dot(a, bq))
        elif kind == 2:
            a = A[i, :, ai[t]]
            d = p[j] - p[i]
            phi[r] = _dot(a, d)
            _add_row(J, r, d, Ja[i, ai[t]], cols[i])
            _add_row(J, r, a, Jp[j], cols[j])
            _add_row(J, r, -a, Jp[i], cols[i])
            ad, aq = Ad[i, :, ai[t]], Aq[i, :, ai[t]]
            gamma[r] = -(_dot(aq, d) + 2 * _dot(ad, pd[j] - pd[i]) + _dot(a, pq[j] - pq[i]))
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
        nf = model.marker_D.shape[2]
        self.n_loc = 6 + nf
        # elastic index of each marker column (-1: padding), and global v columns (-1: none)
        self.qf_idx = np.full((n_m, nf), -1, dtype=np.int64)
        self.cols = np.full((n_m, 6 + nf), -1, dtype=np.int64)
        for m, mk in enumerate(model.markers):
            if mk.body < 0:
                continue
            k = mk.D.shape[1]
            self.qf_idx[m, :k] = np.arange(k)
            self.cols[m, :6 + k] = self.body_v[mk.body] + np.arange(6 + k)
        self.marker_body = model.marker_body.astype(np.int64)
        self.work = dict(p=np.zeros((n_m, 3)), A=np.zeros((n_m, 3, 3)), Jp=np.zeros((n_m, 3, 6 + nf)),
                         Ja=np.zeros((n_m, 3, 3, 6 + nf)), Jw=np.zeros((n_m, 3, 6 + nf)), pd=np.zeros((n_m, 3)),
                         Ad=np.zeros((n_m, 3, 3)), pq=np.zeros((n_m, 3)), Aq=np.zeros((n_m, 3, 3)),
                         wq=np.zeros((n_m, 3)))
        self.tables = []
        for k, name in enumerate(KINDS):
            t = model.rows[name]
            if t["row"].size:
                self.tables.append((k, *(t[f].astype(np.int64) for f in ("row", "mi", "mj", "ai", "aj"))))
        self.n_rows = model.rows["n_total"]
        self.n_joint = model.rows["n_joint"]
        self.angle = np.array([a.kind == "angle" for a in model.actuators], dtype=bool)
        self.compliant = springs.compliant_mask(model)
        self.lumped = dynamics._has_lumped(model)
        self.stretch = dynamics._stretch_bodies(model)
        self._nq, self._nv = nq, nv
        self.body_nf = np.array([b.n_f for b in model.bodies], dtype=np.int64)
        # Compile (or load from cache) every kernel now, with Ctrl-C held back: an interrupt
        # that lands inside llvmlite's compiler callbacks is lost and leaves numba broken.
        with _sigint_deferred():
            zero = np.zeros(nv)
            self.evaluate(model.q_home, zero, targets=np.zeros(len(model.actuators)))
            self.integrate(model.q_home, zero)

    def pose(self, v=None):
        """End-effector terms of the last :meth:`evaluate` (:func:`sim.kinematics.pose_terms`):
        ``x, J`` and, with the velocity ``v`` of that evaluation, ``x_q``."""
        e = self.model.ee_marker
        w = self.work
        Jp = np.zeros((3, self._nv))
        Jw = np.zeros((3, self._nv))
        cols = self.cols[e]
        ok = cols >= 0
        Jp[:, cols[ok]] = w["Jp"][e][:, ok]
        Jw[:, cols[ok]] = w["Jw"][e][:, ok]
        if v is None:
            return pose_terms(self.model.pose_kinds, w["p"][e], w["A"][e], Jp, Jw)
        return pose_terms(self.model.pose_kinds, w["p"][e], w["A"][e], Jp, Jw, v, w["pq"][e], w["wq"][e])

    def integrate(self, q, dv):
        """``q ⊕ dv`` (n_q,), as :func:`sim.kinematics.integrate`."""
        out = np.empty_like(q)
        _integrate(q, dv, self.body_q, self.body_v, self.body_nf, out)
        return out

    def evaluate(self, q, v, targets=None, target_acc=None):
        """The equations at ``(q, v)``, as in the reference kernels.

        Returns
        -------
        Evaluation
            ``M`` (n_v, n_v), ``Q`` (n_v,) of :func:`sim.dynamics.mass_and_forces`
            (``targets`` also pull compliant actuators); ``C``, ``J``, ``gamma`` of
            :func:`sim.constraints.constraints` (joint rows, plus the rigid actuators' rows
            when ``targets`` is given); ``s``, ``J_s`` the values and Jacobian of all actuators.
        """
        model = self.model
        M = np.zeros((self._nv, self._nv))
        Q = np.zeros(self._nv)
        for grp in model.body_groups:
            _group_terms(q, v, model.gravity, grp.q_start.astype(np.int64), grp.v_start.astype(np.int64), grp.mass,
                         grp.first_moment, grp.second_moment, grp.rot_inertia, grp.rot_coupling, grp.mass_ff,
                         grp.stiffness_ff, M, Q)
        for b in self.stretch:
            i = model.q_index[b][1] + 6
            Q[i:i + model.bodies[b].n_f] += dynamics.stretch_terms(model, q, b)[0]
        w = self.work
        _markers(q, v, self.marker_body, self.body_q, self.body_v, self.qf_idx, model.marker_D, model.marker_E,
                 model.marker_p0, model.marker_R, w["p"], w["A"], w["Jp"], w["Ja"], w["Jw"], w["pd"], w["Ad"], w["pq"],
                 w["Aq"], w["wq"])
        phi = np.zeros(self.n_rows)
        J = np.zeros((self.n_rows, self._nv))
        gamma = np.zeros(self.n_rows)
        for kind, row, mi, mj, ai, aj in self.tables:
            _rows(kind, row, mi, mj, ai, aj, self.cols, w["p"], w["A"], w["Jp"], w["Ja"], w["pd"], w["Ad"], w["pq"],
                  w["Aq"], phi, J, gamma)
        if self.lumped:
            if model.springs:
                from .kinematics import markers
                Q += springs.spring_forces(model, markers(model, q), v)
            if targets is not None:
                Q += springs.actuator_spring_forces(model, phi[self.n_joint:], J[self.n_joint:], v, targets)
        nj = self.n_joint
        s, J_s, gamma_s = phi[nj:].copy(), J[nj:].copy(), gamma[nj:].copy()
        if targets is None:
            _flush(M, FLUSH_RTOL)
            return Evaluation(M, Q, phi[:nj], J[:nj], gamma[:nj], s, J_s, gamma_s)
        phi[nj:] = drive_residual(model, phi[nj:], targets)
        if target_acc is not None:
            gamma[nj:] += target_acc
        keep = np.concatenate([np.ones(nj, dtype=bool), ~self.compliant])
        _flush(M, FLUSH_RTOL)
        return Evaluation(M, Q, phi[keep], J[keep], gamma[keep], s, J_s, gamma_s)
