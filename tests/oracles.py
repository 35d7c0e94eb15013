"""Plain numpy statements of equations the compiled kernels (``sim.kernels``) implement: test
oracles only, written for clarity, not speed (issue 15: each equation once in ``sim/``)."""
import numpy as np

from sim.model.kinematics import MarkerState
from sim.model.rotations import cross, quat_from_rotvec, quat_multiply, quat_to_matrix, skew



def _dense(grp, values):
    """A body group's M_ff or K_ff values (g, n_f, w) on its pattern ``grp.ff`` as dense
    matrices (g, n_f, n_f)."""
    g, n, w = values.shape
    out = np.zeros((g, n, n))
    f, j = np.nonzero(grp.ff >= 0)
    out[:, f, grp.ff[f, j]] = values[:, f, j]
    return out

def stretch_terms(qf, A, k, G):
    """Geometric stiffening of one body (:mod:`sim.model.dynamics` docstring): force (n,), tangent
    stiffness (n, n), extra potential [J]; ``A`` (n_e, n), ``k`` (n_e,), ``G`` (n_e, n, n)."""
    Gq = np.einsum("eab,b->ea", G, qf)
    du, g = A @ qf, Gq @ qf
    N = k * (du + 0.5 * g)
    force = -(0.5 * k * g) @ A - N @ Gq
    AG = A + Gq
    tangent = np.einsum("e,eab->ab", N, G) + AG.T @ (k[:, None] * AG) - A.T @ (k[:, None] * A)
    return force, tangent, float(np.sum(0.5 * k * du * g + 0.125 * k * g**2))


# --- lumped springs and compliant actuators (sim.kernels.springs) ---------------------------


def deflections(model, ms):
    """Spring deflections ``d`` (n_s, 6) and Jacobians ``J_d`` (n_s, 6, n_v)."""
    t = model.spring_tables
    if not model.springs:
        return np.zeros((0, 6)), np.zeros((0, 6, model.n_v))
    mi, mj = t["mi"], t["mj"]
    Ai, Aj = ms.A[mi], ms.A[mj]
    x = ms.p[mj] - ms.p[mi]
    xi, yi = Ai[:, :, 0], Ai[:, :, 1]
    xj, zj = Aj[:, :, 0], Aj[:, :, 2]
    n = mi.size
    d = np.empty((n, 6))
    Jd = np.empty((n, 6, model.n_v))
    d[:, :3] = np.einsum("nki,nk->ni", Ai, x)
    # d(a_k . x) = x . d a_k + a_k . dx  (a_k: axis k of marker i)
    Jd[:, :3] = np.einsum("nk,nakv->nav", x, ms.Ja[mi]) + np.einsum("nki,nkv->niv", Ai, ms.Jp[mj] - ms.Jp[mi])

    def dot(a, Ja, b, Jb):
        return np.sum(a * b, axis=1), np.einsum("nk,nkv->nv", b, Ja) + np.einsum("nk,nkv->nv", a, Jb)

    zy, Jzy = dot(zj, ms.Ja[mj, 2], yi, ms.Ja[mi, 1])
    zx, Jzx = dot(zj, ms.Ja[mj, 2], xi, ms.Ja[mi, 0])
    X, JX = dot(xj, ms.Ja[mj, 0], xi, ms.Ja[mi, 0])
    Y, JY = dot(xj, ms.Ja[mj, 0], yi, ms.Ja[mi, 1])
    d[:, 3], Jd[:, 3] = -zy, -Jzy
    d[:, 4], Jd[:, 4] = zx, Jzx
    d[:, 5] = np.arctan2(Y, X)
    Jd[:, 5] = (X[:, None] * JY - Y[:, None] * JX) / (X**2 + Y**2)[:, None]
    d -= t["d_home"]
    d[:, 5] = (d[:, 5] + np.pi) % (2 * np.pi) - np.pi
    return d, Jd


def spring_forces(model, ms, v):
    """Generalized forces (n_v,) of the springs at the marker state ``ms`` and velocity ``v``."""
    if not model.springs:
        return np.zeros(model.n_v)
    d, Jd = deflections(model, ms)
    t = model.spring_tables
    f = np.einsum("nij,nj->ni", t["K"], d) + np.einsum("nij,njv,v->ni", t["C"], Jd, v)
    return -np.einsum("niv,ni->v", Jd, f)


def spring_stiffness(model, ms):
    """Linearised spring stiffness ``sum J_d^T K J_d`` (n_v, n_v)."""
    if not model.springs:
        return np.zeros((model.n_v, model.n_v))
    _, Jd = deflections(model, ms)
    KJ = model.spring_tables["K"] @ Jd                       # (n_s, 6, n_v)
    return Jd.reshape(-1, model.n_v).T @ KJ.reshape(-1, model.n_v)


def spring_damping(model, ms):
    """Linearised spring damping ``sum J_d^T C J_d`` (n_v, n_v)."""
    if not model.springs:
        return np.zeros((model.n_v, model.n_v))
    _, Jd = deflections(model, ms)
    CJ = model.spring_tables["C"] @ Jd
    return Jd.reshape(-1, model.n_v).T @ CJ.reshape(-1, model.n_v)


def actuator_spring_forces(model, s, J_s, v, targets):
    """Forces (n_v,) of the compliant actuators for actuator values ``s`` (n_a,) and Jacobian."""
    mask = np.array([a.stiffness is not None for a in model.actuators], dtype=bool)
    if not mask.any() or targets is None:
        return np.zeros(model.n_v)
    k = np.array([a.stiffness for a in model.actuators])[mask]
    c = np.array([a.damping for a in model.actuators])[mask]
    J = J_s[mask]
    e = s[mask] - np.asarray(targets, dtype=float)[mask]
    ang = np.array([a.kind == "angle" for a in model.actuators])[mask]
    e[ang] = (e[ang] + np.pi) % (2 * np.pi) - np.pi
    return -J.T @ (k * e + c * (J @ v))


def actuator_stiffness(model, J_s):
    """Stiffness (n_v, n_v) of the locked compliant actuators: ``sum k J_s^T J_s``."""
    mask = np.array([a.stiffness is not None for a in model.actuators], dtype=bool)
    if not mask.any():
        return np.zeros((model.n_v, model.n_v))
    k = np.array([a.stiffness for a in model.actuators])[mask]
    J = J_s[mask]
    return J.T @ (k[:, None] * J)


# --- body frames and markers (sim.kernels.frames, sim.kernels.markers) ----------------------


def body_frames(model, q):
    """Body frames: ``r_WB`` (n_b, 3), ``R_WB`` (n_b, 3, 3)."""
    sq = np.array([s for s, _ in model.q_index], dtype=int)
    return q[sq[:, None] + np.arange(3)], quat_to_matrix(q[sq[:, None] + 3 + np.arange(4)])


def _starts(model):
    return np.array([s for s, _ in model.q_index], dtype=int), np.array([s for _, s in model.q_index], dtype=int)


def integrate(model, q, dv):
    """Configuration ``q ⊕ dv``: translations and elastic coordinates add, rotations compose.

    ``R_WB <- R_WB exp(skew(dw_B))``, the rotation increment being in body components.
    """
    sq, sv = _starts(model)
    out = q.copy()
    out[sq[:, None] + np.arange(3)] += dv[sv[:, None] + np.arange(3)]
    p = q[sq[:, None] + 3 + np.arange(4)]
    p = quat_multiply(p, quat_from_rotvec(dv[sv[:, None] + 3 + np.arange(3)]))
    out[sq[:, None] + 3 + np.arange(4)] = p / np.linalg.norm(p, axis=1, keepdims=True)
    out[model.q_elastic] += dv[model.v_elastic]
    return out


def _gather(model):
    """Per marker: indices of its elastic coordinates in ``q`` (padded with n_q) and of its
    body's velocities in ``v`` (padded with n_v), its D and E padded to the most columns."""
    n_q, n_v, n_m = model.n_q, model.n_v, len(model.markers)
    n_fmax = max([m.D.shape[1] for m in model.markers] + [0])
    qf, cols = np.full((n_m, n_fmax), n_q), np.full((n_m, 6 + n_fmax), n_v)
    D, E = np.zeros((n_m, 3, n_fmax)), np.zeros((n_m, 3, n_fmax))
    for k, m in enumerate(model.markers):
        if m.body < 0:
            continue
        sq, sv = model.q_index[m.body]
        nf = m.D.shape[1]
        qf[k, :nf] = sq + 7 + np.arange(nf)
        cols[k, :6 + nf] = sv + np.arange(6 + nf)
        D[k, :, :nf], E[k, :, :nf] = m.D, m.E
    return qf, cols, D, E


def markers(model, q, v=None):
    """Poses, Jacobians and (with ``v``) rates of all markers (:mod:`sim.model.kinematics` docstring):
    a :class:`sim.model.kinematics.MarkerState` with dense Jacobians (n_m, ..., n_v)."""
    n_m, n_v = len(model.markers), model.n_v
    marker_qf, marker_vcols, D, E = _gather(model)
    r_b, R_b = body_frames(model, q)
    R_ext = np.concatenate([R_b, np.eye(3)[None]])          # index -1: ground
    r_ext = np.concatenate([r_b, np.zeros((1, 3))])
    R = R_ext[model.marker_body]
    r = r_ext[model.marker_body]
    qf = np.append(q, 0.0)[marker_qf]
    R_BM = np.array([m.R_BM for m in model.markers]).reshape(-1, 3, 3)
    u = np.array([m.p_BM_B for m in model.markers]).reshape(-1, 3) + np.einsum("mkf,mf->mk", D, qf)
    th = np.einsum("mkf,mf->mk", E, qf)
    Ap = R_BM + skew(th) @ R_BM                                  # a' = a_B + th x a_B
    p = r + np.einsum("mij,mj->mi", R, u)
    A = R @ Ap
    nf = D.shape[2]
    Jp_loc = np.zeros((n_m, 3, 6 + nf))
    Jp_loc[:, :, :3] = np.eye(3)
    Jp_loc[:, :, 3:6] = -R @ skew(u)
    Jp_loc[:, :, 6:] = R @ D
    Ja_loc = np.zeros((n_m, 3, 3, 6 + nf))
    Ja_loc[:, :, :, 3:6] = -R[:, None] @ skew(np.swapaxes(Ap, 1, 2))
    Ja_loc[:, :, :, 6:] = -R[:, None] @ skew(np.swapaxes(R_BM, 1, 2)) @ E[:, None]
    Jw_loc = np.zeros((n_m, 3, 6 + nf))
    Jw_loc[:, :, 3:6] = R
    Jw_loc[:, :, 6:] = R @ E
    cols = marker_vcols
    Jp = np.zeros((n_m, 3, n_v + 1))
    Ja = np.zeros((n_m, 3, 3, n_v + 1))
    Jw = np.zeros((n_m, 3, n_v + 1))
    m = np.arange(n_m)[:, None, None]
    k = np.arange(3)[None, :, None]
    Jp[m, k, cols[:, None, :]] = Jp_loc
    Jw[m, k, cols[:, None, :]] = Jw_loc
    Ja[m[..., None], k[..., None], np.arange(3)[None, None, :, None], cols[:, None, None, :]] = Ja_loc
    # Ground markers wrote into the padding column n_v, which is dropped here.
    Jp, Ja, Jw = Jp[..., :n_v], Ja[..., :n_v], Jw[..., :n_v]
    Jp[model.marker_body < 0] = 0.0
    Ja[model.marker_body < 0] = 0.0
    Jw[model.marker_body < 0] = 0.0
    if v is None:
        return MarkerState(p, A, Jp, Ja, Jw)
    v_ext = np.append(v, 0.0)
    vr, w, qfd = v_ext[cols[:, :3]], v_ext[cols[:, 3:6]], v_ext[cols[:, 6:]]
    ud = np.einsum("mkf,mf->mk", D, qfd)
    thd = np.einsum("mkf,mf->mk", E, qfd)
    wu = cross(w, u)
    pd = vr + np.einsum("mij,mj->mi", R, wu + ud)
    pq = np.einsum("mij,mj->mi", R, cross(w, wu + 2 * ud))
    ta = skew(thd) @ R_BM                                        # (E q_f_dot) x a_B, per axis column
    Wm = skew(w)
    wa = Wm @ Ap
    Ad = R @ (wa + ta)
    Aq = R @ (Wm @ (wa + 2 * ta))
    wq = np.einsum("mij,mj->mi", R, cross(w, thd))
    return MarkerState(p, A, Jp, Ja, Jw, pd, Ad, pq, Aq, wq)


# --- end-effector coordinates (sim.kernels.pose) ----------------------------------------------


def tait_bryan_zyx(R):
    """Angles (a, b, c) with ``R = Rz(c) Ry(b) Rx(a)``.  (..., 3, 3) -> (..., 3)."""
    a = np.arctan2(R[..., 2, 1], R[..., 2, 2])
    b = -np.arcsin(np.clip(R[..., 2, 0], -1.0, 1.0))
    c = np.arctan2(R[..., 1, 0], R[..., 0, 0])
    return np.stack([a, b, c], axis=-1)


def pose_terms(kinds, p, A, Jp, Jw, v=None, pq=None, wq=None):
    """End-effector coordinates from the end-effector marker's kinematics (the numpy statement
    of :func:`sim.kernels.pose.pose_terms`).

    Parameters
    ----------
    kinds : tuple of str
        Coordinates, from x, y, z (origin) and rx, ry, rz (Z-Y-X Tait–Bryan angles of the axes).
    p : ndarray, shape (3,)
    A : ndarray, shape (3, 3)
        Marker origin and axes (columns) in world.
    Jp, Jw : ndarray, shape (3, n_v)
        Jacobians of the origin and of the world angular velocity.
    v : ndarray, shape (n_v,), optional
    pq, wq : ndarray, shape (3,), optional
        Velocity-quadratic accelerations of the origin and of the angular velocity.

    Returns
    -------
    x : ndarray, shape (d,)
    J : ndarray, shape (d, n_v)
    x_q : ndarray, shape (d,), only with ``v``: ``x_ddot = J a + x_q``
    """
    idx = [("xyz".index(k), True) if k in "xyz" else (("rx", "ry", "rz").index(k), False) for k in kinds]
    if all(pos for _, pos in idx):            # translations only: no angle algebra
        rows = [i for i, _ in idx]
        return (p[rows], Jp[rows]) if v is None else (p[rows], Jp[rows], pq[rows])
    angles = tait_bryan_zyx(A)
    _, b_, c_ = angles
    E = np.array([[np.cos(c_) * np.cos(b_), -np.sin(c_), 0.0], [np.sin(c_) * np.cos(b_), np.cos(c_), 0.0],
                  [-np.sin(b_), 0.0, 1.0]])
    # Angle rates from the world angular velocity: (a, b, c)_dot = E^-1 w_W.
    rates_J = np.linalg.solve(E, Jw)
    x = np.array([p[i] if pos else angles[i] for i, pos in idx])
    J = np.array([Jp[i] if pos else rates_J[i] for i, pos in idx]).reshape(len(kinds), Jp.shape[1])
    if v is None:
        return x, J
    rates = rates_J @ v
    _, b, c = angles
    cb, sb, cc, sc = np.cos(b), np.sin(b), np.cos(c), np.sin(c)
    dE_db = np.array([[-cc * sb, 0, 0], [-sc * sb, 0, 0], [-cb, 0, 0]])
    dE_dc = np.array([[-sc * cb, -cc, 0], [cc * cb, -sc, 0], [0, 0, 0]])
    # d/dt (E^-1 w) = E^-1 (w_dot - E_dot angles_dot)
    ang_q = np.linalg.solve(E, wq - (dE_db * rates[1] + dE_dc * rates[2]) @ rates)
    xq = np.array([pq[i] if pos else ang_q[i] for i, pos in idx])
    return x, J, xq


# --- constraint rows (sim.kernels.rows) -------------------------------------------------------


def rows(model, ms, with_rates):
    """Constraint rows (:mod:`sim.model.constraints` docstring): phi (n_rows,), J (n_rows, n_v),
    gamma (n_rows,) or None over all joint and actuator rows, from the marker state ``ms``."""
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


def constraints(model, q, v=None, targets=None, target_acc=None, all_drives=False):
    """As :func:`sim.model.constraints.constraints`, from the numpy statements."""
    from sim.model.constraints import select
    return select(model, *rows(model, markers(model, q, v), v is not None), targets, target_acc, all_drives)


def actuator_values(model, q, v=None):
    """As :func:`sim.model.constraints.actuator_values`, from the numpy statements."""
    phi, J, gamma = rows(model, markers(model, q, v), v is not None)
    nj = model.rows["n_joint"]
    return (phi[nj:], J[nj:]) if v is None else (phi[nj:], J[nj:], gamma[nj:])


# --- bodies (sim.kernels.bodies) ----------------------------------------------------------------


def group_terms(model, grp, q, v=None):
    """Mass blocks (g, 6+n, 6+n) and, with ``v``, forces (g, 6+n) of one body group."""
    n, g = grp.n_f, grp.index.size
    qs = grp.q_start[:, None]
    R = quat_to_matrix(q[qs + 3 + np.arange(4)])
    qf = q[qs + 7 + np.arange(n)]
    z = np.concatenate([np.ones((g, 1)), qf], axis=1)
    Tz = np.einsum("gklab,gb->gkla", grp.second_moment, z)        # T_kl z
    U = np.einsum("gkla,ga->gkl", Tz, z)                            # int rho u_k u_l
    s = np.einsum("gka,ga->gk", grp.first_moment, z)                # int rho u
    Mb = np.zeros((g, 6 + n, 6 + n))
    Mb[:, :3, :3] = grp.mass[:, None, None] * np.eye(3)
    Mb[:, :3, 3:6] = -R @ skew(s)
    Mb[:, 3:6, :3] = np.swapaxes(Mb[:, :3, 3:6], 1, 2)
    Mb[:, 3:6, 3:6] = np.trace(U, axis1=1, axis2=2)[:, None, None] * np.eye(3) - U + grp.rot_inertia
    if n:
        Mb[:, :3, 6:] = R @ grp.first_moment[:, :, 1:]
        Mb[:, 6:, :3] = np.swapaxes(Mb[:, :3, 6:], 1, 2)
        m_tf = np.stack([Tz[:, 2, 1] - Tz[:, 1, 2], Tz[:, 0, 2] - Tz[:, 2, 0], Tz[:, 1, 0] - Tz[:, 0, 1]], axis=1)
        Mb[:, 3:6, 6:] = m_tf[:, :, 1:] + grp.rot_coupling
        Mb[:, 6:, 3:6] = np.swapaxes(Mb[:, 3:6, 6:], 1, 2)
        Mb[:, 6:, 6:] = _dense(grp, grp.mass_ff)
    if v is None:
        return Mb, None
    vs = grp.v_start[:, None]
    w = v[vs + 3 + np.arange(3)]
    qfd = v[vs + 6 + np.arange(n)]
    g_B = np.einsum("gji,j->gi", R, model.gravity)
    W = skew(w)
    Iw = np.einsum("gij,gj->gi", Mb[:, 3:6, 3:6], w)
    Qb = np.empty((g, 6 + n))
    Qb[:, :3] = grp.mass[:, None] * model.gravity - np.einsum("gij,gj->gi", R, cross(w, cross(w, s)))
    Qb[:, 3:6] = cross(s, g_B) - cross(w, Iw)
    if n:
        Sf = grp.first_moment[:, :, 1:]
        zd = np.concatenate([np.zeros((g, 1)), qfd], axis=1)
        Tzd = np.einsum("gklab,gb->gkla", grp.second_moment, zd)
        P = np.einsum("gkla,ga->gkl", Tzd, z)                       # int rho u_k (S B q_f_dot)_l
        Qb[:, :3] -= 2 * np.einsum("gij,gj->gi", R, cross(w, np.einsum("gka,ga->gk", Sf, qfd)))
        Qb[:, 3:6] -= (cross(w, np.einsum("gka,ga->gk", grp.rot_coupling, qfd))
                       + 2 * (w * np.trace(P, axis1=1, axis2=2)[:, None] - np.einsum("glk,gl->gk", P, w)))
        Qb[:, 6:] = (np.einsum("gka,gk->ga", Sf, g_B) - np.einsum("gab,gb->ga", _dense(grp, grp.stiffness_ff), qf)
                     - np.einsum("gkl,gklf->gf", W @ W, Tz[:, :, :, 1:])
                     - 2 * np.einsum("gkl,gklf->gf", W, Tzd[:, :, :, 1:]))
    return Mb, Qb


def _stretched(model):
    return [b for b, body in enumerate(model.bodies) if body.stretch_k.size]


def _stretch(model, q, b):
    body = model.bodies[b]
    s = model.q_index[b][0] + 7
    return stretch_terms(q[s:s + body.n_f], body.stretch_rows, body.stretch_k, body.stretch_slopes)


def mass_and_forces(model, q, v, targets=None):
    """As :func:`sim.model.dynamics.mass_and_forces`, from the numpy statements."""
    M, Q = np.zeros((model.n_v, model.n_v)), np.zeros(model.n_v)
    for grp in model.body_groups:
        Mb, Qb = group_terms(model, grp, q, v)
        idx = grp.v_start[:, None] + np.arange(6 + grp.n_f)
        M[idx[:, :, None], idx[:, None, :]] = Mb
        Q[idx] = Qb
    for b in _stretched(model):
        i = model.q_index[b][1] + 6
        Q[i:i + model.bodies[b].n_f] += _stretch(model, q, b)[0]
    ms = markers(model, q)
    Q += spring_forces(model, ms, v)
    s, J_s = actuator_values(model, q)
    Q += actuator_spring_forces(model, s, J_s, v, targets)
    return M, Q


def stiffness_matrix(model, q):
    """As :func:`sim.model.dynamics.stiffness_matrix` at ``q``, from the numpy statements."""
    K = np.zeros((model.n_v, model.n_v))
    for b, body in enumerate(model.bodies):
        i = model.q_index[b][1] + 6
        K[i:i + body.n_f, i:i + body.n_f] = np.asarray(body.stiffness_ff)
        if body.stretch_k.size:
            K[i:i + body.n_f, i:i + body.n_f] += _stretch(model, q, b)[1]
    return K + spring_stiffness(model, markers(model, q)) + actuator_stiffness(model, actuator_values(model, q)[1])


def potential(model, q):
    """Gravitational and elastic (bodies, stiffening, lumped springs) potential energy [J]."""
    gravity = 0.0
    elastic = 0.0
    for grp in model.body_groups:
        qs = grp.q_start[:, None]
        r = q[qs + np.arange(3)]
        R = quat_to_matrix(q[qs + 3 + np.arange(4)])
        qf = q[qs + 7 + np.arange(grp.n_f)]
        z = np.concatenate([np.ones((qf.shape[0], 1)), qf], axis=1)
        s = np.einsum("gka,ga->gk", grp.first_moment, z)
        gravity -= np.sum((grp.mass[:, None] * r + np.einsum("gij,gj->gi", R, s)) @ model.gravity)
        elastic += 0.5 * np.einsum("ga,gab,gb->", qf, _dense(grp, grp.stiffness_ff), qf)
    for b in _stretched(model):
        elastic += _stretch(model, q, b)[2]
    if model.springs:
        d, _ = deflections(model, markers(model, q))
        elastic += 0.5 * np.einsum("ni,nij,nj->", d, model.spring_tables["K"], d)
    return gravity, elastic


# --- the time step (sim.solvers.integrators) ----------------------------------------------------------


def equations(ev, drive, t, q, v, damping=None):
    """``M, Q, C, J, gamma, C_dot`` of the transient's problem at ``(t, q, v)`` from the public
    evaluator: driving rows ``s - s_ref`` (prescribed; compliant actuators pulled towards
    ``s_ref``), PD torques plus feed-forward (torque), nothing (free); ``Q -= D v``."""
    nj = ev.n_joint
    angle = np.array([a.kind == "angle" for a in ev.model.actuators], dtype=bool)
    if drive.kind == "prescribed":
        s, sd, sdd = drive.reference(t)
        E = ev.evaluate(q, v, targets=s, target_acc=sdd)
        C_dot = E.J @ v
        C_dot[nj:] -= np.asarray(sd)[~ev.compliant]
        Q = E.Q
    else:
        E = ev.evaluate(q, v)
        C_dot = E.J @ v
        Q = E.Q
        if drive.kind == "torque":
            s_ref, sd_ref, _ = drive.reference(t)
            err = s_ref - E.s
            err[angle] = (err[angle] + np.pi) % (2 * np.pi) - np.pi
            Q = Q + E.J_s.T @ (drive.feedforward(t) + drive.kp * err + drive.kd * (sd_ref - E.J_s @ v))
    if damping is not None:
        Q = Q - damping @ v
    return E.M, Q, E.C, E.J, E.gamma, C_dot


def generalized_alpha(ev, drive, q0, v0, h, steps, alpha_m=0.0, alpha_f=0.0, baumgarte=(10.0, 10.0), damping=None,
                      tol=1e-13):
    """``steps`` steps of the generalized-α scheme (Newmark for ``alpha_m = alpha_f = 0``) on
    the index-1 equations with Baumgarte terms, solved by plain Newton iterations with a
    forward-difference Jacobian at every iteration; returns the states ``q`` (steps + 1, n_q)
    and ``v`` (steps + 1, n_v)."""
    gamma = 0.5 + alpha_f - alpha_m
    beta = 0.25 * (gamma + 0.5) ** 2
    al, be = baumgarte
    n = ev.n_v

    def residual(x, t, q, v, a, a_hat):
        a1, lam = x[:n], x[n:]
        a_hat1 = ((1 - alpha_f) * a1 + alpha_f * a - alpha_m * a_hat) / (1 - alpha_m)
        v1 = v + h * ((1 - gamma) * a_hat + gamma * a_hat1)
        q1 = ev.integrate(q, h * v + h * h * ((0.5 - beta) * a_hat + beta * a_hat1))
        M, Q, C, J, g, C_dot = equations(ev, drive, t, q1, v1, damping)
        return np.concatenate([M @ a1 + J.T @ lam - Q, J @ a1 - (g - 2 * al * C_dot - be**2 * C)]), q1, v1, a_hat1

    M, Q, C, J, g, C_dot = equations(ev, drive, 0.0, q0, v0, damping)
    A = np.block([[M, J.T], [J, np.zeros((J.shape[0],) * 2)]])
    x = np.linalg.lstsq(A, np.concatenate([Q, g - 2 * al * C_dot - be**2 * C]), rcond=None)[0]
    q, v, a, a_hat = q0.copy(), v0.copy(), x[:n], x[:n].copy()
    qs, vs = [q], [v]
    for k in range(1, steps + 1):
        t = k * h
        for _ in range(20):
            r = residual(x, t, q, v, a, a_hat)[0]
            jac = np.empty((r.size, r.size))
            for i in range(r.size):
                dx = np.zeros(r.size)
                dx[i] = max(1e-6 * abs(x[i]), 1e-3)
                jac[:, i] = (residual(x + dx, t, q, v, a, a_hat)[0] - r) / dx[i]
            dx = np.linalg.solve(jac, -r)
            x = x + dx
            if beta * h * h * np.abs(dx[:n]).max() < tol:
                break
        _, q, v, a_hat = residual(x, t, q, v, a, a_hat)
        a = x[:n].copy()
        qs.append(q)
        vs.append(v)
    return np.array(qs), np.array(vs)


# --- rigid motion (sim.solvers.motion) ----------------------------------------------------------


def rigid_motion(model, trajectory, times):
    """Reference of :func:`sim.solvers.motion.rigid_motion` by other means: each sample by the
    line-search Newton of :func:`sim.model.assembly.assemble` from the third-order predictor,
    velocity and acceleration by the SVD pseudo-inverse of ``A = [C_q; J_x]`` over the
    reference coordinates, cut at the robot's rank, from the numpy statements above, and the
    condition number ``sigma_1 / sigma_r``.

    Returns
    -------
    dict
        ``q`` (n, n_q), ``v``, ``a`` (n, n_v), ``actuators``, ``actuators_dot``,
        ``actuators_ddot`` (n, n_a; angles not unwrapped), ``condition`` (n,).

    Raises
    ------
    sim.model.assembly.AssemblyError
        At the first pose Newton cannot reach, its message naming ``sample k``.
    """
    from sim.model.assembly import assemble, solve_pose
    from sim.model.evaluator import Kinematics

    ev = Kinematics(model)

    times = np.asarray(times, dtype=float)
    x, xd, xdd = trajectory(times)
    rigid, rank = model.v_rigid, model.ranks[0]
    nj, e = model.rows["n_joint"], model.ee_marker
    out = {name: [] for name in ("q", "v", "a", "actuators", "actuators_dot", "actuators_ddot", "condition")}
    q = solve_pose(model, x[0])
    v = a = jerk = np.zeros(model.n_v)
    for k in range(len(times)):
        dt = times[k] - times[k - 1] if k else 0.0
        if k:
            # The free motions of redundant robots (a strut's spin) are not fixed by the pose:
            # minimum-norm steps from the same predictor keep them alike.
            q_pred = integrate(model, q, dt * v + dt**2 / 2 * a + dt**3 / 6 * jerk)
            q = assemble(model, q_pred, ev, pose_target=x[k], what=f"sample {k}")
        a_prev = a
        v = np.zeros(model.n_v)
        for rate in ("v", "a"):
            ms = markers(model, q, v)
            phi, J, gamma = rows(model, ms, True)
            _, Jx, xq = pose_terms(model.pose_kinds, ms.p[e], ms.A[e], ms.Jp[e], ms.Jw[e], v, ms.pq[e], ms.wq[e])
            U, sigma, Vt = np.linalg.svd(np.vstack([J[:nj], Jx])[:, rigid], full_matrices=False)
            b = np.concatenate([np.zeros(nj), xd[k]] if rate == "v" else [gamma[:nj], xdd[k] - xq])
            w = np.zeros(model.n_v)
            w[rigid] = Vt[:rank].T @ ((U[:, :rank].T @ b) / sigma[:rank])
            if rate == "v":
                v = w
            else:
                a = w
        jerk = (a - a_prev) / dt if dt > 0 else np.zeros(model.n_v)
        s, J_s, g_s = phi[nj:], J[nj:], gamma[nj:]
        for name, value in (("q", q), ("v", v), ("a", a), ("actuators", s), ("actuators_dot", J_s @ v),
                            ("actuators_ddot", J_s @ a - g_s), ("condition", sigma[0] / sigma[rank - 1])):
            out[name].append(value)
    return {name: np.array(values) for name, values in out.items()}


def driven_motion(model, times, S, SD, SDD):
    """Reference of :func:`sim.solvers.motion.driven_motion` by other means: each sample by the
    line-search Newton of :func:`sim.model.assembly.assemble` at the actuators' values ``S``
    (n, n_a) from the previous sample, velocity and acceleration by least squares on
    ``[C_q; C_s,q]`` over the reference coordinates (rates ``SD``, ``SDD``) from the numpy
    statements above, and the end effector's pose and rates.

    Returns
    -------
    dict
        ``q`` (n, n_q), ``v``, ``a`` (n, n_v), ``pose``, ``pose_dot``, ``pose_ddot`` (n, d).
    """
    from sim.model.assembly import assemble
    from sim.model.evaluator import Kinematics

    ev = Kinematics(model)
    rigid, nj, e = model.v_rigid, model.rows["n_joint"], model.ee_marker
    out = {name: [] for name in ("q", "v", "a", "pose", "pose_dot", "pose_ddot")}
    q = model.q_home
    for k in range(len(times)):
        q = assemble(model, q, ev, targets=S[k], what=f"sample {k}", tol=1e-13)
        v = np.zeros(model.n_v)
        J = rows(model, markers(model, q, v), True)[1]
        v[rigid] = np.linalg.lstsq(J[:, rigid], np.concatenate([np.zeros(nj), SD[k]]), rcond=None)[0]
        ms = markers(model, q, v)
        _, J, gamma = rows(model, ms, True)
        a = np.zeros(model.n_v)
        a[rigid] = np.linalg.lstsq(J[:, rigid], np.concatenate([gamma[:nj], SDD[k] + gamma[nj:]]), rcond=None)[0]
        x, Jx, xq = pose_terms(model.pose_kinds, ms.p[e], ms.A[e], ms.Jp[e], ms.Jw[e], v, ms.pq[e], ms.wq[e])
        for name, value in (("q", q), ("v", v), ("a", a), ("pose", x), ("pose_dot", Jx @ v),
                            ("pose_ddot", Jx @ a + xq)):
            out[name].append(value)
    return {name: np.array(values) for name, values in out.items()}


def frame(model, q, v, a, s, count):
    """Reference of a KED frame (:class:`sim.solvers.frames.Frame`) by other means: the dense
    modal analysis of :func:`sim.solvers.modal.modes` (all the elastic modes; its own basis
    and free-motion search, scipy's generalised eigensolver) at the rigid state ``(q, v, a)``
    with the actuators locked at ``s``; the static displacements as the sum over every
    elastic mode, ``sum phi phi^T f / omega^2`` -- with free motions, the solution of inertia
    relief (the load's part along ``M`` times the free motions taken off, the displacement
    mass-orthogonal to them).

    Returns
    -------
    dict
        ``load``, ``omega``, ``shapes``, ``static_load``, ``static_rest``, ``pose_jacobian``
        as in :class:`sim.solvers.frames.Frame`, and ``M`` (n_v, n_v), ``rigid_shapes`` (the
        free motions).
    """
    from sim.model.evaluator import Evaluator
    from sim.solvers.modal import modes

    ev = Evaluator(model)
    E = ev.evaluate(q, v, targets=s, rest=True, pose=True)
    r = modes(model, q, None, M=E.M, energies=False, J=E.J, J_s=E.J_s)
    loads = np.column_stack([E.Q - E.M @ a, E.Q0])
    static = r.shapes @ ((r.shapes.T @ loads) / r.omega[:, None] ** 2)
    return {"load": loads[:, 0], "omega": r.omega[:count], "shapes": r.shapes[:, :count], "static_load": static[:, 0],
            "static_rest": static[:, 1], "pose_jacobian": E.J_x, "M": E.M, "rigid_shapes": r.rigid_shapes}
