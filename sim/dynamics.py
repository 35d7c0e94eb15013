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
gyroscopic term.

Geometric stiffening (beam bodies built with ``stiffening=True``): each element's axial strain
is ``u' + (v'^2 + w'^2)/2``, so its axial energy is ``k/2 (du + g/2)^2`` with ``k = EA/L``,
elongation ``du = A_e q_f`` and ``g = q_f^T G_e q_f = int (v'^2 + w'^2) dx``.  Beyond the
linear ``k du^2 / 2`` already in ``K_ff`` this adds the potential ``k du g / 2 + k g^2 / 8``,
the force ``-(k g A_e / 2 + N G_e q_f)`` with the axial force ``N = k (du + g/2)``, and the
tangent stiffness ``N G_e + k (A_e + G_e q_f)(A_e + G_e q_f)^T - k A_e A_e^T``: an axial
(e.g. centrifugal) tension stiffens bending, and the spin-up beam stays bounded.  The mass matrix is block diagonal over bodies; bodies couple only through
the constraints.

References
----------
A. A. Shabana, *Dynamics of Multibody Systems*, 4th ed., 2013, §5.5–5.6 (inertia shape
integrals, quadratic velocity vector).
"""
import numpy as np

from . import springs
from .kernels.stretch import compact, stretch
from .kinematics import markers
from .linalg import flush
from .rotations import cross, quat_to_matrix, skew


def _group_terms(model, grp, q, v=None):
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
        Mb[:, 6:, 6:] = grp.mass_ff
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
        Qb[:, 6:] = (np.einsum("gka,gk->ga", Sf, g_B) - np.einsum("gab,gb->ga", grp.stiffness_ff, qf)
                     - np.einsum("gkl,gklf->gf", W @ W, Tz[:, :, :, 1:])
                     - 2 * np.einsum("gkl,gklf->gf", W, Tzd[:, :, :, 1:]))
    return Mb, Qb


def _stretch_bodies(model):
    return [b for b, body in enumerate(model.bodies) if body.stretch_k.size]


def stretch_terms(model, q, b):
    """Geometric-stiffening force (n_f,), tangent stiffness (n_f, n_f) and extra potential [J]
    of body ``b`` (see the module docstring; :func:`sim.kernels.stretch.stretch`)."""
    body = model.bodies[b]
    s = model.q_index[b][0] + 7
    force, tangent = np.zeros(body.n_f), np.zeros((body.n_f, body.n_f))
    idx, A, G = compact(body.stretch_rows, body.stretch_slopes)
    energy = stretch(np.ascontiguousarray(q[s:s + body.n_f]), idx, A, body.stretch_k, G, force, tangent, True)
    return force, tangent, energy


def _scatter(model, grp, Mb, M):
    idx = grp.v_start[:, None] + np.arange(6 + grp.n_f)
    M[idx[:, :, None], idx[:, None, :]] = Mb


def mass_matrix(model, q):
    """Mass matrix ``M(q)``, shape (n_v, n_v), symmetric positive definite."""
    M = np.zeros((model.n_v, model.n_v))
    for grp in model.body_groups:
        _scatter(model, grp, _group_terms(model, grp, q)[0], M)
    return flush(M)


def _has_lumped(model):
    return bool(model.springs) or any(a.stiffness is not None for a in model.actuators)


def stiffness_matrix(model, q=None, J_s=None):
    """Elastic stiffness ``K`` (n_v, n_v).

    The bodies' ``K_ff`` on their elastic coordinates; with ``q``, also the linearised lumped
    springs and locked compliant actuators at that configuration (:mod:`sim.springs`) and the
    tangent of the geometric stiffening (the geometric stiffness of the current axial forces).
    ``J_s`` (n_a, n_v): the actuator Jacobian at ``q``, if at hand.
    """
    K = np.zeros((model.n_v, model.n_v))
    for b, body in enumerate(model.bodies):
        if body.n_f:
            i = model.q_index[b][1] + 6
            K[i:i + body.n_f, i:i + body.n_f] = body.stiffness_ff
    if q is not None and _has_lumped(model):
        from .constraints import actuator_values
        ms = markers(model, q)
        J_s = actuator_values(model, q, ms)[1] if J_s is None else J_s
        K += springs.lumped(model, ms, J_s=J_s).K
    if q is not None:
        K += stiffening_tangent(model, q)
    return K


def stiffening_tangent(model, q):
    """Tangent stiffness ``-dQ/dq`` (n_v, n_v) of the geometric stiffening at ``q``, zero
    outside the stiffened bodies' elastic blocks."""
    K = np.zeros((model.n_v, model.n_v))
    for b in _stretch_bodies(model):
        i = model.q_index[b][1] + 6
        n = model.bodies[b].n_f
        K[i:i + n, i:i + n] = stretch_terms(model, q, b)[1]
    return K


def damping_matrix(model, q):
    """Linearised viscous damping of the lumped springs and compliant actuators (n_v, n_v)."""
    if not _has_lumped(model):
        return np.zeros((model.n_v, model.n_v))
    from .constraints import actuator_values
    ms = markers(model, q)
    return springs.lumped(model, ms, J_s=actuator_values(model, q, ms)[1]).C


def mass_and_forces(model, q, v, targets=None):
    """``M(q)`` (n_v, n_v) and ``Q = Q_e + Q_v - K q`` (n_v,), vectorised over body groups.

    ``Q_e`` is gravity plus the lumped springs; compliant actuators pull towards ``targets``
    (n_a,) when given.  Other applied loads are added by the analyses.
    """
    M = np.zeros((model.n_v, model.n_v))
    Q = np.zeros(model.n_v)
    for grp in model.body_groups:
        Mb, Qb = _group_terms(model, grp, q, v)
        _scatter(model, grp, Mb, M)
        Q[grp.v_start[:, None] + np.arange(6 + grp.n_f)] = Qb
    for b in _stretch_bodies(model):
        i = model.q_index[b][1] + 6
        Q[i:i + model.bodies[b].n_f] += stretch_terms(model, q, b)[0]
    if _has_lumped(model):
        from .constraints import actuator_values
        ms = markers(model, q)
        s, J_s = actuator_values(model, q, ms)
        Q += springs.lumped(model, ms, v, s, J_s, targets).Q
    return flush(M), Q


def forces(model, q, v):
    """Generalized forces ``Q`` (n_v,); see :func:`mass_and_forces`."""
    return mass_and_forces(model, q, v)[1]


def energy(model, q, v):
    """Kinetic, gravitational and elastic (bodies and lumped springs) energy [J] at ``(q, v)``."""
    M = mass_matrix(model, q)
    return (0.5 * v @ M @ v, *potential(model, q))


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
        elastic += 0.5 * np.einsum("ga,gab,gb->", qf, grp.stiffness_ff, qf)
    for b in _stretch_bodies(model):
        elastic += stretch_terms(model, q, b)[2]
    if model.springs:
        elastic += springs.lumped(model, markers(model, q)).energy
    return gravity, elastic
