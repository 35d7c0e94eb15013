"""Plain numpy statements of equations the compiled kernels (``sim.kernels``) implement: test
oracles only, written for clarity, not speed (issue 15: each equation once in ``sim/``)."""
import numpy as np


def stretch_terms(qf, A, k, G):
    """Geometric stiffening of one body (:mod:`sim.dynamics` docstring): force (n,), tangent
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


# --- the time step (sim.integrators) ----------------------------------------------------------


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
