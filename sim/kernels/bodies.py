r"""Mass matrix blocks, forces and their velocity Jacobian of a group of bodies.

The floating-frame-of-reference equations of :mod:`sim.model.dynamics` (its module docstring derives
them): per body, with ``z = (1, q_f)``, ``s = S z``, ``U_kl = z^T T_kl z``,

    M_RR = m 1,  M_Rθ = -R skew(s),  M_Rf = R S_f,  M_θθ = tr(U) 1 - U + J_rot,
    (M_θf)_i = eps_ijk (T_kj z)_f + G_rot,  M_ff,

and ``Q`` = gravity + velocity-quadratic (d'Alembert) forces - ``K_ff q_f``.  A group holds
bodies of one elastic size, their invariants stacked (:class:`sim.model.BodyGroup`).
"""
from typing import NamedTuple

import numpy as np
from numba import njit

from sim.kernels.frames import quat_R_into
from sim.kernels.store import add, put, put_ff, put_w, writer


class Group(NamedTuple):
    """The invariants of one body group (:class:`sim.model.BodyGroup`; an entry of the tables'
    ``groups``, :class:`sim.kernels.equations.Tables`): each body's reference starts in ``q`` and
    ``v``, masses, first moments ``S`` (g, 3, n+1), second moments ``T`` (g, 3, 3, n+1, n+1)
    by their nonzeros ``T_nz`` (nnz, 4) rows ``(k, l, c, a)`` standing for ``T[:, l, k, c, a]``,
    ``T_val`` (g, nnz), the antisymmetric parts of their elastic blocks ``W_nz`` (nw, 2) rows
    ``(f, e)``, ``W_val`` (g, nw, 3): ``T[2, 1] - T[1, 2]``, ``T[0, 2] - T[2, 0]``, ``T[1, 0]
    - T[0, 1]`` at ``[f + 1, e + 1]``, ``Jrot``, ``Grot``, ``ff`` (n, w): the columns of
    each row of ``M_ff`` and ``K_ff`` that hold a nonzero in some body of the group, ascending,
    padded with -1, and ``Mff``, ``Kff`` (g, n, w) each body's entries there (a beam's nodal
    coordinates couple only to their elements' neighbours: the elastic blocks are banded,
    held, written and multiplied by their nonzeros only; :mod:`sim.model.sparse_rows`)."""

    q_start: np.ndarray
    v_start: np.ndarray
    mass: np.ndarray
    S: np.ndarray
    T_nz: np.ndarray
    T_val: np.ndarray
    W_nz: np.ndarray
    W_val: np.ndarray
    Jrot: np.ndarray
    Grot: np.ndarray
    Mff: np.ndarray
    Kff: np.ndarray
    ff: np.ndarray


def scratch_size(n):
    """The length of the scratch :func:`group_terms` takes for a group of ``n`` elastic
    coordinates per body: its 3-vectors and 3 x 3 matrices (the (n + 1)-long arrays it
    allocates: views of the one scratch, which the other views may alias, made the 3-RRRU's
    step a fifth slower)."""
    return 51


@njit(cache=True)
def group_terms(q, v, gravity, group, M, Q, Q0, G, with_G, scratch):
    """Write the mass blocks and forces of one body :class:`Group` into M (n_v, n_v; an array or a
    :class:`sim.kernels.store.Store`, as ``G``) and Q (n_v,).

    Same formulas as :func:`sim.model.dynamics.mass_and_forces`; scalar loops, the 3-vectors
    and 3 x 3 matrices on views of ``scratch`` (at least :func:`scratch_size`: temporaries
    would cost more than the arithmetic, and an allocation each a tenth of a small body's
    time), the per-coordinate arrays allocated once per call.
    ``Q0`` (n_v,; size 0: not wanted): also the forces at rest, ``Q(q, 0)`` (gravity and the
    elastic forces: the velocity-free part of ``Q``, written before the velocity terms).
    With ``with_G``, also the velocity Jacobian ``G = dQ/dv`` (n_v, n_v) of the
    velocity-quadratic forces (each body's block; see :func:`group_velocity`; given zeroed: the
    elastic block is written on its nonzeros only).
    """
    # Field by field (``group`` is a record in compiled loops: one reference count per field read).
    q_start, v_start, mass, S, T_nz, T_val = group.q_start, group.v_start, group.mass, group.S, group.T_nz, group.T_val
    Jrot, Grot, Mff, Kff, ff = group.Jrot, group.Grot, group.Mff, group.Kff, group.ff
    Mw, Gw = writer(M), writer(G)     # what the writes go through (sim.kernels.store)
    g_count = q_start.size
    n = Mff.shape[1]
    rest = Q0.size > 0
    n1 = n + 1
    z = np.empty(n1)
    zd = np.empty(n1)
    Tz = np.empty((3, 3, n1))
    Tzd = np.empty((3, 3, n1))
    small = scratch[0:36].reshape((4, 3, 3))
    R, U, P, Ith = small[0], small[1], small[2], small[3]
    vectors = scratch[36:51].reshape((5, 3))
    s, sd, gB, Iw, Gq = vectors[0], vectors[1], vectors[2], vectors[3], vectors[4]     # sd: S_f q_f_dot
    for b in range(g_count):
        qs, vs = q_start[b], v_start[b]
        quat_R_into(q, qs + 3, R)
        z[0] = 1.0
        zd[0] = 0.0
        undeformed = True
        for i in range(n):
            z[i + 1] = q[qs + 7 + i]
            zd[i + 1] = v[vs + 6 + i]
            undeformed = undeformed and z[i + 1] == 0.0 and zd[i + 1] == 0.0
        # Tz[k, l, a] = sum_c T[l, k, c, a] z[c] (T[k, l] = T[l, k]^T, int rho u_k u_l dV) over
        # the nonzeros of T only: a beam's shape functions overlap only within an element, and
        # each displacement component involves few of them (a few per cent of the dense T).
        # Undeformed and at rest in its frame (the rigid robot's states: KED's frames, modes at
        # a pose), z = e_0: Tz is the column c = 0 of T and Tzd vanishes.
        for k in range(3):
            for l in range(3):
                for a in range(n + 1):
                    Tz[k, l, a] = 0.0
                    Tzd[k, l, a] = 0.0
        for e in range(0 if undeformed else T_nz.shape[0]):
            t = T_val[b, e]
            k, l, c, a = T_nz[e, 0], T_nz[e, 1], T_nz[e, 2], T_nz[e, 3]
            Tz[k, l, a] += t * z[c]
            Tzd[k, l, a] += t * zd[c]
        for e in range(T_nz.shape[0] if undeformed else 0):
            if T_nz[e, 2] == 0:
                Tz[T_nz[e, 0], T_nz[e, 1], T_nz[e, 3]] = T_val[b, e]
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
            put(Mw, vs + i, vs + i, m_b)
            rs0 = Ri2 * s[1] - Ri1 * s[2]
            rs1 = Ri0 * s[2] - Ri2 * s[0]
            rs2 = Ri1 * s[0] - Ri0 * s[1]
            put(Mw, vs + i, vs + 3, rs0)
            put(Mw, vs + i, vs + 4, rs1)
            put(Mw, vs + i, vs + 5, rs2)
            put(Mw, vs + 3, vs + i, rs0)
            put(Mw, vs + 4, vs + i, rs1)
            put(Mw, vs + 5, vs + i, rs2)
            for j in range(3):
                put(Mw, vs + 3 + i, vs + 3 + j, Ith[i, j])
        # w x (w x s) + 2 w x (S_f q_f_dot), rotated to the world: the translational forces
        x0 = w1 * s[2] - w2 * s[1]
        x1 = w2 * s[0] - w0 * s[2]
        x2 = w0 * s[1] - w1 * s[0]
        c0 = w1 * (x2 + 2 * sd[2]) - w2 * (x1 + 2 * sd[1])
        c1 = w2 * (x0 + 2 * sd[0]) - w0 * (x2 + 2 * sd[2])
        c2 = w0 * (x1 + 2 * sd[1]) - w1 * (x0 + 2 * sd[0])
        # Forces at rest (m g; s x g_B), then the velocity terms: - R c above, and
        # - w x (I w) [- w x (G q_f_dot) - 2 (w tr P - P^T w)].
        for i in range(3):
            Q[vs + i] = m_b * gravity[i]
        Q[vs + 3] = s[1] * gB[2] - s[2] * gB[1]
        Q[vs + 4] = s[2] * gB[0] - s[0] * gB[2]
        Q[vs + 5] = s[0] * gB[1] - s[1] * gB[0]
        if rest:
            Q0[vs:vs + 6] = Q[vs:vs + 6]
        for i in range(3):
            Q[vs + i] -= R[i, 0] * c0 + R[i, 1] * c1 + R[i, 2] * c2
        Q[vs + 3] -= w1 * Iw[2] - w2 * Iw[1]
        Q[vs + 4] -= w2 * Iw[0] - w0 * Iw[2]
        Q[vs + 5] -= w0 * Iw[1] - w1 * Iw[0]
        for i in range(3):
            acc = 0.0
            for f in range(n):
                acc += Grot[b, i, f] * zd[f + 1]
            Gq[i] = acc
        trP = P[0, 0] + P[1, 1] + P[2, 2]
        if n == 0:
            if with_G:
                group_velocity(b, vs, group, (R, s, sd, Ith, Iw, Gq, P, Tz, Tzd), trP, v, Gw)
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
                put(Mw, vs + i, vs + 6 + f, rsf)
                put(Mw, vs + 6 + f, vs + i, rsf)
            m0 = Grot[b, 0, f] + Tz[2, 1, f + 1] - Tz[1, 2, f + 1]
            m1 = Grot[b, 1, f] + Tz[0, 2, f + 1] - Tz[2, 0, f + 1]
            m2 = Grot[b, 2, f] + Tz[1, 0, f + 1] - Tz[0, 1, f + 1]
            put(Mw, vs + 3, vs + 6 + f, m0)
            put(Mw, vs + 4, vs + 6 + f, m1)
            put(Mw, vs + 5, vs + 6 + f, m2)
            put(Mw, vs + 6 + f, vs + 3, m0)
            put(Mw, vs + 6 + f, vs + 4, m1)
            put(Mw, vs + 6 + f, vs + 5, m2)
            # The elastic block's nonzeros (its other entries of M stay zero from the start).
            acc = S0 * gB[0] + S1 * gB[1] + S2 * gB[2]
            for j in range(ff.shape[1]):
                e = ff[f, j]
                if e < 0:
                    break
                put_ff(Mw, vs + 6 + f, vs + 6 + e, j, Mff[b, f, j])
                # S_f^T g_B - K q_f - sum_kl (W W)_kl Tz_kl - 2 W_kl Tzd_kl, W = skew(w)
                acc -= Kff[b, f, j] * z[e + 1]
            if rest:
                Q0[vs + 6 + f] = acc
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
            group_velocity(b, vs, group, (R, s, sd, Ith, Iw, Gq, P, Tz, Tzd), trP, v, Gw)


@njit(cache=True)
def group_velocity(b, vs, group, terms, trP, v, G):
    r"""Block of ``dQ/dv`` of body ``b`` of the :class:`Group` ``group`` into ``G`` (an array or a
    store's :func:`sim.kernels.store.writer`) (columns ``v_r, w,
    q_f_dot``, from ``vs`` in ``v``; ``Q`` does not depend on ``v_r``), from the body's terms
    of :func:`group_terms` ``terms = (R, s, sd, Ith, Iw, Gq, P, Tz, Tzd)`` and ``trP``.

    With ``c = w x (w x s + 2 s_d)``, ``s_d = S_f q_f_dot``, ``W = skew(w)``:

    * ``Q_r = m g - R c``: ``dc/dw = -skew(w x s + 2 s_d) - W skew(s)``, ``dc/dq_f_dot = 2 W S_f``;
    * ``Q_w = s x g_B - w x (I w) - w x (G_rot q_f_dot) - 2 (w tr P - P^T w)``:
      ``d/dw = skew(I w) - W I + skew(G_rot q_f_dot) - 2 tr P + 2 P^T``;
      ``d/dq_f_dot[f] = -w x G_rot[:, f] - 2 (w sum_k Tz_kk - sum_k Tz_ik w_k)`` at ``f + 1``
      (``dP_kl / dq_f_dot[f] = Tz_lk[f + 1]`` by the symmetry of ``T``);
    * ``Q_f[a] = ... - sum_kl (W W)_kl Tz_kl[a] - 2 sum_kl W_kl Tzd_kl[a]``, ``W W = w w^T - |w|^2 1``.
    """
    R, s, sd, Ith, Iw, Gq, P, Tz, Tzd = terms
    S, W_nz, W_val, Grot = group.S, group.W_nz, group.W_val, group.Grot
    n = group.Mff.shape[1]
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
            put(G, vs + i, vs + 3 + j, -(R[i, 0] * dc[0, j] + R[i, 1] * dc[1, j] + R[i, 2] * dc[2, j]))
    # rotational rows, w columns
    for i in range(3):
        for j in range(3):
            put(G, vs + 3 + i, vs + 3 + j, 2 * P[j, i])
        add(G, vs + 3 + i, vs + 3 + i, -(2 * trP))
    Y0, Y1, Y2 = Iw[0] + Gq[0], Iw[1] + Gq[1], Iw[2] + Gq[2]     # skew(I w + G q_f_dot)
    add(G, vs + 3, vs + 4, -Y2)
    add(G, vs + 3, vs + 5, Y1)
    add(G, vs + 4, vs + 3, Y2)
    add(G, vs + 4, vs + 5, -Y0)
    add(G, vs + 5, vs + 3, -Y1)
    add(G, vs + 5, vs + 4, Y0)
    for j in range(3):      # - W I
        add(G, vs + 3, vs + 3 + j, -(w1 * Ith[2, j] - w2 * Ith[1, j]))
        add(G, vs + 4, vs + 3 + j, -(w2 * Ith[0, j] - w0 * Ith[2, j]))
        add(G, vs + 5, vs + 3 + j, -(w0 * Ith[1, j] - w1 * Ith[0, j]))
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
            put(G, vs + i, vs + 6 + f, -(R[i, 0] * c0 + R[i, 1] * c1 + R[i, 2] * c2))
        g0, g1, g2 = Grot[b, 0, f], Grot[b, 1, f], Grot[b, 2, f]
        tr = Tz[0, 0, a] + Tz[1, 1, a] + Tz[2, 2, a]
        for i in range(3):
            tw = Tz[i, 0, a] * w0 + Tz[i, 1, a] * w1 + Tz[i, 2, a] * w2
            put(G, vs + 3 + i, vs + 6 + f, -2 * (wv[i] * tr - tw))
        add(G, vs + 3, vs + 6 + f, -(w1 * g2 - w2 * g1))
        add(G, vs + 4, vs + 6 + f, -(w2 * g0 - w0 * g2))
        add(G, vs + 5, vs + 6 + f, -(w0 * g1 - w1 * g0))
        # elastic rows, w columns
        for m in range(3):
            acc = 0.0
            for l in range(3):
                acc += wv[l] * (Tz[m, l, a] + Tz[l, m, a])
            acc -= 2 * wv[m] * tr
            put(G, vs + 6 + f, vs + 3 + m, -acc)
        add(G, vs + 6 + f, vs + 3, -(2 * (Tzd[2, 1, a] - Tzd[1, 2, a])))
        add(G, vs + 6 + f, vs + 4, -(2 * (Tzd[0, 2, a] - Tzd[2, 0, a])))
        add(G, vs + 6 + f, vs + 5, -(2 * (Tzd[1, 0, a] - Tzd[0, 1, a])))
    # elastic rows, q_f_dot columns: -2 sum_kl W_kl T[k, l, f + 1, e + 1] (W = skew(w)), on the
    # places where T's antisymmetric part has a nonzero (G's other entries there stay zero)
    for p in range(W_nz.shape[0]):
        put_w(G, vs + 6 + W_nz[p, 0], vs + 6 + W_nz[p, 1], vs, p,
              -2 * (w2 * W_val[b, p, 2] + w1 * W_val[b, p, 1] + w0 * W_val[b, p, 0]))
