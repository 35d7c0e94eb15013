r"""Lumped compliance: 6x6 springs between markers and compliant actuators (paper 004).

A spring between markers i and j measures, in the axes of marker i,

    d = (R_i^T (p_j - p_i),  -z_j . y_i,  z_j . x_i,  atan2(x_j . y_i, x_j . x_i)) - d_home,

translations, then the two tilts and the twist about z_i.  The tilts are the small relative
rotations about x_i and y_i; the twist is exact for any angle (wrapped to (-pi, pi]), so a
spring standing for a revolute bearing (zero stiffness about z) lets the joint turn freely.
Its potential is ``1/2 d^T K d`` and its dissipation ``d_dot^T C d_dot``:

    Q = -J_d^T (K d + C J_d v),     dQ/dv = -J_d^T C J_d,     K_t = J_d^T K J_d

(``K_t``: the linearised stiffness, without the term in ``dJ_d/dq``).  ``J_d`` is the exact
derivative of ``d``, so that ``Q = -dV/dq``: the translations ``a_k . x`` (``a_k`` the axes of
marker i, ``x = p_j - p_i``) give ``x^T J_ak + a_k^T (J_pj - J_pi)`` -- on a flexible body the
marker axes are the linearised rotation of the node (not orthonormal), and ``R_i^T skew(x)
J_wi`` would miss the change of their length; a dot product ``a . b`` gives ``b^T J_a + a^T
J_b``; the twist ``atan2(Y, X)``, ``(X J_Y - Y J_X) / (X^2 + Y^2)``.

A compliant actuator (``stiffness`` set) is a spring on its joint coordinate ``s``, pulled
towards a target: ``Q = -J_s^T (k (s - s_target) + c s_dot)``; it replaces the actuator's
driving constraint.

The marker terms come with local Jacobians: ``Jp[m]`` (3, n_loc), ``Ja[m, k]`` (3, n_loc) the
derivative of axis ``k``, ``Jw[m]`` (3, n_loc), whose column ``c`` is column ``cols[m, c]`` of
``v`` (-1: none).  Dense Jacobians (n_loc = n_v, ``cols[m] = arange(n_v)``) are the special case.
"""
import numpy as np
from numba import njit

from sim.kernels.common import wrap
from sim.kernels.store import couple, writer


@njit(cache=True, nogil=True)
def deflection(i, j, home, p, A, Jp, Ja, Jw, d, Jd):
    """Deflection ``d`` (6,) of the spring from marker ``i`` to ``j`` and its Jacobian ``Jd``
    (6, 2, n_loc): ``Jd[:, 0]`` on the columns of marker ``i``, ``Jd[:, 1]`` on those of ``j``.

    ``home`` (6,): the deflection subtracted (the spring's unloaded state).
    """
    n = Jp.shape[2]
    x0, x1, x2 = p[j, 0] - p[i, 0], p[j, 1] - p[i, 1], p[j, 2] - p[i, 2]
    for a in range(3):
        d[a] = A[i, 0, a] * x0 + A[i, 1, a] * x1 + A[i, 2, a] * x2
        for c in range(n):
            Jd[a, 0, c] = x0 * Ja[i, a, 0, c] + x1 * Ja[i, a, 1, c] + x2 * Ja[i, a, 2, c] \
                - (A[i, 0, a] * Jp[i, 0, c] + A[i, 1, a] * Jp[i, 1, c] + A[i, 2, a] * Jp[i, 2, c])
            Jd[a, 1, c] = A[i, 0, a] * Jp[j, 0, c] + A[i, 1, a] * Jp[j, 1, c] + A[i, 2, a] * Jp[j, 2, c]
    # dot products of axis kj of marker j with axis ki of marker i: value and Jacobian rows
    # (tilt about x_i: -z_j.y_i; about y_i: z_j.x_i; twist: atan2(x_j.y_i, x_j.x_i))
    zy = zx = X = Y = 0.0
    for r in range(3):
        zy += A[j, r, 2] * A[i, r, 1]
        zx += A[j, r, 2] * A[i, r, 0]
        X += A[j, r, 0] * A[i, r, 0]
        Y += A[j, r, 0] * A[i, r, 1]
    r2 = X * X + Y * Y
    for c in range(n):
        zy_i = zy_j = zx_i = zx_j = X_i = X_j = Y_i = Y_j = 0.0
        for r in range(3):
            zy_i += A[j, r, 2] * Ja[i, 1, r, c]
            zy_j += A[i, r, 1] * Ja[j, 2, r, c]
            zx_i += A[j, r, 2] * Ja[i, 0, r, c]
            zx_j += A[i, r, 0] * Ja[j, 2, r, c]
            X_i += A[j, r, 0] * Ja[i, 0, r, c]
            X_j += A[i, r, 0] * Ja[j, 0, r, c]
            Y_i += A[j, r, 0] * Ja[i, 1, r, c]
            Y_j += A[i, r, 1] * Ja[j, 0, r, c]
        Jd[3, 0, c], Jd[3, 1, c] = -zy_i, -zy_j
        Jd[4, 0, c], Jd[4, 1, c] = zx_i, zx_j
        Jd[5, 0, c] = (X * Y_i - Y * X_i) / r2
        Jd[5, 1, c] = (X * Y_j - Y * X_j) / r2
    d[3], d[4], d[5] = -zy, zx, np.arctan2(Y, X)
    for a in range(6):
        d[a] -= home[a]
    d[5] = wrap(d[5])


@njit(cache=True, nogil=True)
def springs(table, frames, v, Q, Q0, G, Kt, with_G, with_K):
    """Add the springs' forces into ``Q`` (n_v,), and where ``Q0`` (n_v,) is not empty their
    forces at rest (``v = 0``: no damping) into it; with ``with_G`` their ``dQ/dv`` into ``G``
    (n_v, n_v), with ``with_K`` their linearised stiffness into ``Kt`` (n_v, n_v); return
    their potential [J].

    Parameters
    ----------
    table : tuple ``(mi, mj, K, C, home)``
        Markers of each spring (n_s,) ints, stiffness and damping in the deflection
        coordinates (n_s, 6, 6), deflections at the unloaded state (n_s, 6).
    frames : tuple ``(cols, p, A, Jp, Ja, Jw)``
        The markers' columns (n_m, n_loc), origins (n_m, 3), axes (n_m, 3, 3) and local
        Jacobians (see the module docstring).
    v : ndarray, shape (n_v,)
    """
    mi, mj, K, C, home = table
    Gw, Kw = writer(G), writer(Kt)
    cols, p, A, Jp, Ja, Jw = frames
    n = Jp.shape[2]
    d = np.empty(6)
    Jd = np.empty((6, 2, n))
    f = np.empty(6)
    f0 = np.empty(6)     # K d: the force at rest
    dv = np.empty(6)
    KJ = np.empty((6, 2, n))
    energy = 0.0
    for s in range(mi.size):
        i, j = mi[s], mj[s]
        deflection(i, j, home[s], p, A, Jp, Ja, Jw, d, Jd)
        for a in range(6):
            acc = 0.0
            for side in range(2):
                m = i if side == 0 else j
                for c in range(n):
                    col = cols[m, c]
                    if col >= 0:
                        acc += Jd[a, side, c] * v[col]
            dv[a] = acc
        for a in range(6):
            acc = 0.0
            damp = 0.0
            for b in range(6):
                acc += K[s, a, b] * d[b]
                damp += C[s, a, b] * dv[b]
            energy += 0.5 * d[a] * acc
            f0[a] = acc
            f[a] = acc + damp
        for side in range(2):
            m = i if side == 0 else j
            for c in range(n):
                col = cols[m, c]
                if col >= 0:
                    acc = 0.0
                    acc0 = 0.0
                    for a in range(6):
                        acc += Jd[a, side, c] * f[a]
                        acc0 += Jd[a, side, c] * f0[a]
                    Q[col] -= acc
                    if Q0.size:
                        Q0[col] -= acc0
        for which in range(2):
            if (which == 0 and not with_G) or (which == 1 and not with_K):
                continue
            W = C[s] if which == 0 else K[s]
            out = Gw if which == 0 else Kw
            sign = -1.0 if which == 0 else 1.0
            for a in range(6):
                for side in range(2):
                    for c in range(n):
                        acc = 0.0
                        for b in range(6):
                            acc += W[a, b] * Jd[b, side, c]
                        KJ[a, side, c] = acc
            for s1 in range(2):
                m1 = i if s1 == 0 else j
                for c1 in range(n):
                    r = cols[m1, c1]
                    if r < 0:
                        continue
                    for s2 in range(2):
                        m2 = i if s2 == 0 else j
                        for c2 in range(n):
                            col = cols[m2, c2]
                            if col < 0:
                                continue
                            acc = 0.0
                            for a in range(6):
                                acc += Jd[a, s1, c1] * KJ[a, s2, c2]
                            couple(out, r, col, sign * acc)
    return energy


@njit(cache=True, nogil=True)
def actuator_springs(table, rows, targets, v, out, flags):
    """Add the compliant actuators' forces ``-J_s^T (k e + c J_s v)`` (``e = s - target``, wrapped
    for angles) into ``Q`` (n_v,), their forces at rest ``-J_s^T k e`` into ``Q0`` where it is not
    empty, ``-c J_s^T J_s`` into ``G`` with ``with_G``, ``k J_s^T J_s`` into ``Kt`` with ``with_K``.

    Parameters
    ----------
    table : tuple ``(idx, k, c, angle)``
        The compliant actuators (n_c,) ints (rows of ``s``, ``J_s``, ``targets``), their
        stiffness and damping (n_c,) [N/m or N m/rad, N s/m or N m s/rad], and which of all
        actuators are angles (n_a,) bool.
    rows : tuple ``(s, J_s)``
        The actuators' values (n_a,) and Jacobian (n_a, n_v).
    targets : ndarray, shape (n_a,)
    v : ndarray, shape (n_v,)
    out : tuple ``(Q, Q0, G, Kt)``
    flags : tuple ``(with_G, with_K)``
    """
    s, J_s = rows
    Q, Q0, G, Kt = out
    Gw, Kw = writer(G), writer(Kt)
    with_G, with_K = flags
    idx, k, c, angle = table
    n = v.size
    for r in range(idx.size):
        a = idx[r]
        e = s[a] - targets[a]
        if angle[a]:
            e = wrap(e)
        rate = 0.0
        for col in range(n):
            rate += J_s[a, col] * v[col]
        f0 = k[r] * e
        f = f0 + c[r] * rate
        for col in range(n):
            Q[col] -= J_s[a, col] * f
        if Q0.size:
            for col in range(n):
                Q0[col] -= J_s[a, col] * f0
        if with_G or with_K:
            for row in range(n):
                x = J_s[a, row]
                if x == 0.0:
                    continue
                for col in range(n):
                    if with_G:
                        couple(Gw, row, col, -(c[r] * x * J_s[a, col]))
                    if with_K:
                        couple(Kw, row, col, k[r] * x * J_s[a, col])
