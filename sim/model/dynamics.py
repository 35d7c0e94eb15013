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

from sim.kernels import equations
from sim.kernels.common import by_reference
from sim.model.tables import stretched, tables


def _references(model):
    """The kernel tables of ``model`` and fresh work arrays for them
    (:class:`sim.kernels.equations.Tables`, :class:`~sim.kernels.equations.Data`), by reference
    (:func:`sim.kernels.common.by_reference`)."""
    t = tables(model)
    return by_reference(t), by_reference(equations.data(t))


def _evaluate(model, q, v, targets=None, with_G=False, with_K=False):
    """``M, Q`` and, on request, ``G = dQ/dv`` and the tangent stiffness ``K_t`` (n_v, n_v) at
    ``(q, v)`` from the compiled kernels (:func:`sim.kernels.equations.evaluate`)."""
    t, d = _references(model)
    n, r = model.n_v, model.rows["n_total"]
    M, Q = np.zeros((n, n)), np.zeros(n)
    if with_G or with_K:
        G, Gg, K = np.zeros((n, n)), np.zeros((r, n)), np.zeros((n, n))
    else:
        G = Gg = K = np.zeros((0, 0))
    targets = np.zeros(0) if targets is None else np.ascontiguousarray(targets, dtype=float)
    equations.evaluate(np.ascontiguousarray(q, dtype=float), np.ascontiguousarray(v, dtype=float), t, d,
                       (M, Q, Q[:0], np.zeros(r), np.zeros((r, n)), np.zeros(r), G, Gg, K), targets,
                       (bool(with_G), bool(with_K), True, True))
    return M, Q, G, K


def mass_matrix(model, q):
    """Mass matrix ``M(q)``, shape (n_v, n_v), symmetric positive definite."""
    return _evaluate(model, q, np.zeros(model.n_v))[0]


def _has_lumped(model):
    return bool(model.springs) or any(a.stiffness is not None for a in model.actuators)


def stiffness_matrix(model, q=None):
    """Elastic stiffness ``K`` (n_v, n_v).

    The bodies' ``K_ff`` on their elastic coordinates; with ``q``, also the linearised lumped
    springs and locked compliant actuators at that configuration (:mod:`sim.model.springs`) and the
    tangent of the geometric stiffening (the geometric stiffness of the current axial forces).
    """
    K = np.zeros((model.n_v, model.n_v))
    for b, body in enumerate(model.bodies):
        if body.n_f:
            i0 = model.q_index[b][1] + 6
            i, j, v = body.stiffness_ff.entries()
            K[i0 + i, i0 + j] = v
    if q is not None and (_has_lumped(model) or stretched(model)):
        # The compliant actuators' stiffness does not depend on their targets: any will do.
        K += _evaluate(model, q, np.zeros(model.n_v), np.zeros(len(model.actuators)), with_K=True)[3]
    return K


def damping_matrix(model, q):
    """Linearised viscous damping of the lumped springs and compliant actuators (n_v, n_v):
    ``-dQ/dv`` at rest, where the velocity-quadratic inertia forces have no derivative."""
    if not _has_lumped(model):
        return np.zeros((model.n_v, model.n_v))
    return -_evaluate(model, q, np.zeros(model.n_v), np.zeros(len(model.actuators)), with_G=True)[2]


def mass_and_forces(model, q, v, targets=None):
    """``M(q)`` (n_v, n_v) and ``Q = Q_e + Q_v - K q`` (n_v,).

    ``Q_e`` is gravity plus the lumped springs; compliant actuators pull towards ``targets``
    (n_a,) when given.  Other applied loads are added by the analyses.
    """
    return _evaluate(model, q, v, targets)[:2]


def forces(model, q, v):
    """Generalized forces ``Q`` (n_v,); see :func:`mass_and_forces`."""
    return mass_and_forces(model, q, v)[1]


def energy(model, q, v):
    """Kinetic, gravitational and elastic (bodies and lumped springs) energy [J] at ``(q, v)``."""
    M = mass_matrix(model, q)
    return (0.5 * v @ M @ v, *potential(model, q))


def potential(model, q):
    """Gravitational and elastic (bodies, stiffening, lumped springs) potential energy [J]."""
    return equations.potential(np.ascontiguousarray(q, dtype=float), *_references(model))
