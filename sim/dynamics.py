r"""Equations of motion of the floating-frame-of-reference model.

Written once here; every analysis uses them in this form::

    M(q) v_dot + C_q(q)^T lam = Q(q, v, t) = Q_e + Q_v - K q,        C(q, t) = 0,

with ``v = (v_WB_W, w_WB_B, q_f_dot)`` per body (:mod:`sim.model`).  The velocity of a
material point of body ``B`` with deformed body-frame position ``u = S(x)(x_0 + B q_f)`` is

    v_P = v_WB_W - R_WB skew(u) w_WB_B + R_WB S B q_f_dot,

so that, with the invariants of :class:`sim.model.Body` (``z = (1, q_f)``,
``s = int rho u = first_moment @ z``, ``U_kl = int rho u_k u_l = z^T T_kl z``):

    M_RR = m 1,   M_Rθ = -R skew(s),   M_Rf = R S_f,
    M_θθ = tr(U) 1 - U + J_rot,   (M_θf)_i = eps_ijk (T_kj z)_f + G_rot,   M_ff.

The quadratic-velocity vector (d'Alembert forces of the velocity-dependent accelerations
``R (w x w x u + 2 w x S B q_f_dot)``), with ``P_kl = int rho u_k (S B q_f_dot)_l``:

    Q_v,R = -R (w x (w x s) + 2 w x S_f q_f_dot)
    Q_v,θ = -w x (M_θθ w + G_rot q_f_dot) - 2 (w tr P - P^T w)
    Q_v,f = -sum_kl (skew(w)^2)_kl (T_kl z)_f - 2 sum_kl skew(w)_kl (T_kl z_dot)_f

and gravity ``Q_R = m g``, ``Q_θ = s x R^T g``, ``Q_f = S_f^T R^T g``.  The section rotary
inertia enters with constant coefficients (linear FFR theory), hence only through the
gyroscopic term.  The mass matrix is block diagonal over bodies; bodies couple only through
the constraints.

References
----------
A. A. Shabana, *Dynamics of Multibody Systems*, 4th ed., 2013, §5.5–5.6 (inertia shape
integrals, quadratic velocity vector).
"""
import numpy as np

from .kinematics import body_frames, markers
from .rotations import skew
from . import springs


def _body_state(model, q, v=None):
    r, R = body_frames(model, q)
    out = []
    for b, body in enumerate(model.bodies):
        sq, sv = model.q_index[b]
        qf = q[sq + 7:sq + 7 + body.n_f]
        if v is None:
            out.append((body, R[b], r[b], qf, None, None, None))
        else:
            out.append((body, R[b], r[b], qf, v[sv:sv + 3], v[sv + 3:sv + 6], v[sv + 6:sv + 6 + body.n_f]))
    return out


def _mass_block(body, R, Tz, s, U):
    n = body.n_f
    Mb = np.empty((6 + n, 6 + n))
    Mb[:3, :3] = body.mass * np.eye(3)
    Mb[:3, 3:6] = -R @ skew(s)
    Mb[3:6, :3] = Mb[:3, 3:6].T
    Mb[3:6, 3:6] = np.trace(U) * np.eye(3) - U + body.rot_inertia
    if n:
        Mb[:3, 6:] = R @ body.first_moment[:, 1:]
        Mb[6:, :3] = Mb[:3, 6:].T
        m_tf = np.stack([Tz[2, 1] - Tz[1, 2], Tz[0, 2] - Tz[2, 0], Tz[1, 0] - Tz[0, 1]])[:, 1:] + body.rot_coupling
        Mb[3:6, 6:] = m_tf
        Mb[6:, 3:6] = m_tf.T
        Mb[6:, 6:] = body.mass_ff
    return Mb


def _invariants(body, qf):
    z = np.concatenate([[1.0], qf])
    Tz = body.second_moment @ z                    # (3, 3, n+1): T_kl z
    U = Tz @ z                                      # int rho u_k u_l
    s = body.first_moment @ z
    return z, Tz, U, s


def mass_matrix(model, q):
    """Mass matrix ``M(q)``, shape (n_v, n_v), symmetric positive definite."""
    M = np.zeros((model.n_v, model.n_v))
    for b, (body, R, _, qf, *_rest) in enumerate(_body_state(model, q)):
        _, Tz, U, s = _invariants(body, qf)
        sl = model.v_slice(b)
        M[sl, sl] = _mass_block(body, R, Tz, s, U)
    return M


def _has_lumped(model):
    return bool(model.springs) or any(a.stiffness is not None for a in model.actuators)


def stiffness_matrix(model, q=None):
    """Elastic stiffness ``K`` (n_v, n_v).

    The bodies' ``K_ff`` on their elastic coordinates; with ``q``, also the linearised lumped
    springs and locked compliant actuators at that configuration (:mod:`sim.springs`).
    """
    K = np.zeros((model.n_v, model.n_v))
    for b, body in enumerate(model.bodies):
        if body.n_f:
            i = model.q_index[b][1] + 6
            K[i:i + body.n_f, i:i + body.n_f] = body.stiffness_ff
    if q is not None and _has_lumped(model):
        from .constraints import actuator_values
        ms = markers(model, q)
        K += springs.spring_stiffness(model, ms) + springs.actuator_stiffness(model, actuator_values(model, q, ms)[1])
    return K


def damping_matrix(model, q):
    """Linearised viscous damping of the lumped springs and compliant actuators (n_v, n_v)."""
    if not _has_lumped(model):
        return np.zeros((model.n_v, model.n_v))
    from .constraints import actuator_values
    ms = markers(model, q)
    C = springs.spring_damping(model, ms)
    mask = springs.compliant_mask(model)
    if mask.any():
        J = actuator_values(model, q, ms)[1][mask]
        c = np.array([a.damping for a in model.actuators])[mask]
        C += J.T @ (c[:, None] * J)
    return C


def mass_and_forces(model, q, v, targets=None):
    """``M(q)`` (n_v, n_v) and ``Q = Q_e + Q_v - K q`` (n_v,) in one pass over the bodies.

    ``Q_e`` is gravity plus the lumped springs; compliant actuators pull towards ``targets``
    (n_a,) when given.  Other applied loads are added by the analyses.
    """
    M = np.zeros((model.n_v, model.n_v))
    Q = np.zeros(model.n_v)
    g = model.gravity
    for b, (body, R, _, qf, _vr, w, qfd) in enumerate(_body_state(model, q, v)):
        z, Tz, U, s = _invariants(body, qf)
        sl = model.v_slice(b)
        Mb = _mass_block(body, R, Tz, s, U)
        M[sl, sl] = Mb
        g_B = R.T @ g
        W = skew(w)
        Qb = np.empty(6 + body.n_f)
        Qb[:3] = body.mass * g - R @ (W @ (W @ s))
        Qb[3:6] = np.cross(s, g_B) - np.cross(w, Mb[3:6, 3:6] @ w)
        if body.n_f:
            Sf = body.first_moment[:, 1:]
            zd = np.concatenate([[0.0], qfd])
            Tzd = body.second_moment @ zd
            P = Tzd @ z                              # P_kl = int rho u_k (S B q_f_dot)_l
            Qb[:3] -= 2 * R @ np.cross(w, Sf @ qfd)
            Qb[3:6] -= np.cross(w, body.rot_coupling @ qfd) + 2 * (w * np.trace(P) - P.T @ w)
            Qb[6:] = (Sf.T @ g_B - body.stiffness_ff @ qf
                      - np.einsum("kl,klf->f", W @ W, Tz[:, :, 1:]) - 2 * np.einsum("kl,klf->f", W, Tzd[:, :, 1:]))
        Q[sl] = Qb
    if _has_lumped(model):
        from .constraints import actuator_values
        ms = markers(model, q)
        Q += springs.spring_forces(model, ms, v)
        if targets is not None:
            s, J_s = actuator_values(model, q, ms)
            Q += springs.actuator_spring_forces(model, s, J_s, v, targets)
    return M, Q


def forces(model, q, v):
    """Generalized forces ``Q`` (n_v,); see :func:`mass_and_forces`."""
    return mass_and_forces(model, q, v)[1]


def energy(model, q, v):
    """Kinetic, gravitational and elastic (bodies and lumped springs) energy [J] at ``(q, v)``."""
    M = mass_matrix(model, q)
    kinetic = 0.5 * v @ M @ v
    gravity = 0.0
    elastic = 0.0
    for body, R, r, qf, *_rest in _body_state(model, q):
        s = body.first_moment @ np.concatenate([[1.0], qf])
        gravity -= model.gravity @ (body.mass * r + R @ s)
        elastic += 0.5 * qf @ body.stiffness_ff @ qf
    if model.springs:
        d, _ = springs.deflections(model, markers(model, q))
        elastic += 0.5 * np.einsum("ni,nij,nj->", d, model.spring_tables["K"], d)
    return kinetic, gravity, elastic
