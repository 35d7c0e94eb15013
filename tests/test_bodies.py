"""Mass matrix and generalized forces of floating-frame bodies (sim.model.dynamics)."""
import numpy as np
import pytest
import scipy.linalg
from numpy.testing import assert_allclose

from conftest import central_difference, fd_jacobian, load, random_state
from problems import slender_bar_inertia
from sim.model.beam import Section
from sim.model.dynamics import energy, forces, mass_and_forces, mass_matrix, stiffness_matrix
from sim.model.kinematics import body_frames, integrate
from sim.model.rotations import skew

SEEDS = [0, 1, 2]


@pytest.mark.parametrize("seed", SEEDS)
def test_mass_matrix_symmetric(robot, seed):
    q, _ = random_state(robot, seed)
    M = mass_matrix(robot, q)
    assert_allclose(M, M.T, rtol=0, atol=1e-14 * np.abs(M).max(), err_msg="M(q) - M(q)^T")


@pytest.mark.parametrize("seed", SEEDS)
def test_mass_matrix_positive_definite(robot, seed):
    q, _ = random_state(robot, seed)
    lam = np.linalg.eigvalsh(mass_matrix(robot, q))
    assert lam.min() > 1e-12 * lam.max(), f"smallest eigenvalue of M(q) {lam.min():.3g} (largest {lam.max():.3g})"


def arm_section():
    """Section of models/flexible_arm.py as its docstring derives it from rho A and E I."""
    E, rho, rho_A, c = 2.1e11, 7850.0, 2.82, 5.974
    area = rho_A / rho
    width = np.sqrt(12.0 * c**2 * rho_A / E / area)
    return Section.rectangle(width, area / width, E=E, rho=rho, nu=0.3)


# Undeformed beam bodies along body x from the body origin: (model, parameters, length,
# section, tip mass), with their closed-form inertia (problems.slender_bar_inertia).
BARS = {
    "beam": ("beam", dict(support="clamped-free", elements=8, length=1.2, width=0.02, height=0.01), 1.2,
             Section.rectangle(0.02, 0.01, E=2.1e11, rho=7800.0, nu=0.3), 0.0),
    "flexible_arm": ("flexible_arm", dict(elements=8), 3.372, arm_section(), 5.18 * 2.82 * 3.372),
}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("bar", BARS)
def test_undeformed_reference_block_is_rigid_bar(bar, seed):
    name, params, length, section, tip_mass = BARS[bar]
    model = load(name, **params)
    q, _ = random_state(model, seed, elastic=0.0)
    R = body_frames(model, q)[1][0]
    m, s, I_O = slender_bar_inertia(length, section.rho, section.A, section.Iy, section.Iz, section.polar,
                                    tip_mass=tip_mass)
    expected = np.zeros((6, 6))
    expected[:3, :3] = m * np.eye(3)
    expected[:3, 3:] = -R @ skew(s)
    expected[3:, :3] = expected[:3, 3:].T
    expected[3:, 3:] = I_O
    assert_allclose(mass_matrix(model, q)[:6, :6], expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max(),
                    err_msg=f"reference block M[:6, :6] of the undeformed {bar} vs the rigid slender bar")


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", ["navaro", "flexible_arm", "free_body"])
def test_no_gravity_no_velocity_no_deformation_no_force(request, name, seed):
    model = load("navaro", gravity=0.0) if name == "navaro" else request.getfixturevalue(name)
    q, _ = random_state(model, seed, elastic=0.0)
    M, Q = mass_and_forces(model, q, np.zeros(model.n_v))
    assert_allclose(Q, 0.0, atol=1e-12 * np.abs(M).max(),
                    err_msg="generalized forces at rest, undeformed, without gravity")


# -- the quadratic-velocity vector Q_v against M(q) -----------------------------------------


def quadratic_velocity(model, q, v):
    """``Q_v(q, v)``: the part of the generalized forces that depends on the velocities."""
    return forces(model, q, v) - forces(model, q, np.zeros(model.n_v))


def motion(model, q, v, a, t):
    """State at time ``t`` of the motion through ``(q, v)`` with constant acceleration ``a``."""
    return integrate(model, q, t * v + 0.5 * t**2 * a), v + t * a


def free_state(model, seed):
    """Random state of the free body, its acceleration ``M^-1 Q`` and a finite-difference step.

    The deformation is kept small (``elastic=1e-3``) so that the gyroscopic power ``v . Q_v``
    is not drowned by the exchange with the strain energy; the step resolves the highest
    elastic frequency (``h omega_max = 1e-3``).
    """
    q, v = random_state(model, seed, elastic=1e-3)
    M, Q = mass_and_forces(model, q, v)
    omega_max = np.sqrt(scipy.linalg.eigh(stiffness_matrix(model), M, eigvals_only=True).max())
    return q, v, np.linalg.solve(M, Q), 1e-3 / omega_max


@pytest.mark.parametrize("seed", SEEDS)
def test_free_body_power_balance(free_body, seed):
    """dT/dt = -dV/dt along the motion: applied loads none, so Q_v does no net work."""
    q, v, a, h = free_state(free_body, seed)
    dT = central_difference(lambda t: energy(free_body, *motion(free_body, q, v, a, t))[0], h)
    dV = central_difference(lambda t: energy(free_body, *motion(free_body, q, v, a, t))[2], h)
    # Sensitivity: the power of Q_v is a sizeable share of dT/dt, so that an error of 1e-4 of
    # it would exceed the tolerance.
    assert abs(v @ quadratic_velocity(free_body, q, v)) > 0.1 * abs(dT), "Q_v power too small to be tested"
    assert_allclose(dT, -dV, rtol=1e-5, err_msg="dT/dt vs -dV_elastic/dt of the free flexible body")


def momenta(model, q, v):
    """World linear momentum and angular momentum about the world origin of a one-body model."""
    r, R = body_frames(model, q)
    Mv = mass_matrix(model, q) @ v
    return np.concatenate([Mv[:3], np.cross(r[0], Mv[:3]) + R[0] @ Mv[3:6]])


@pytest.mark.parametrize("seed", SEEDS)
def test_free_body_momentum_conserved(free_body, seed):
    """d/dt of the linear and angular momentum is zero (checks the reference rows of Q_v)."""
    q, v, a, h = free_state(free_body, seed)
    rate = central_difference(lambda t: momenta(free_body, *motion(free_body, q, v, a, t)), h)
    scale = np.abs(quadratic_velocity(free_body, q, v)).max()
    assert_allclose(rate, 0.0, atol=1e-6 * scale,
                    err_msg="rate of linear and angular momentum of the free flexible body")


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", ["free_body", "flexible_arm", "navaro"])
def test_quadratic_velocity_elastic_rows_lagrange(request, name, seed):
    """Elastic rows of Q_v = -(dM/dt v)_f + dT/dq_f (Lagrange; q_f are true coordinates)."""
    model = request.getfixturevalue(name)
    q, v = random_state(model, seed)
    f = model.v_elastic
    dM = central_difference(lambda t: mass_matrix(model, integrate(model, q, t * v)), 1e-6)
    dT_dqf = fd_jacobian(lambda x: 0.5 * v @ mass_matrix(model, x) @ v, model, q)[f]
    expected = -(dM @ v)[f] + dT_dqf
    assert_allclose(quadratic_velocity(model, q, v)[f], expected, rtol=0, atol=1e-6 * np.abs(expected).max(),
                    err_msg=f"elastic rows of Q_v of {name} vs Lagrange's equations")
