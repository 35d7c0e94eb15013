"""Constraint Jacobian, gamma, pose Jacobian and assembly (sim.model.constraints, sim.model.assembly)."""
import numpy as np
import pytest
from numpy.testing import assert_allclose

from conftest import central_difference, fd_jacobian, load, random_state
from sim.model.assembly import solve_pose
from sim.model.constraints import actuator_values, constraints
from sim.errors import SimError
from sim.model.kinematics import integrate, pose, pose_jacobian

SEEDS = [0, 1, 2]


def residual(model, q, targets):
    return constraints(model, q, targets=targets)[0]


@pytest.mark.parametrize("seed", SEEDS)
def test_constraint_jacobian_matches_finite_differences(robot, seed):
    q, _ = random_state(robot, seed)
    targets = actuator_values(robot, q)[0]
    J = constraints(robot, q, targets=targets)[1]
    J_fd = fd_jacobian(lambda x: residual(robot, x, targets), robot, q, eps=1e-6)
    assert_allclose(J, J_fd, rtol=1e-6, atol=1e-8, err_msg="constraint Jacobian C_q vs central differences")


@pytest.mark.parametrize("seed", SEEDS)
def test_gamma_is_minus_jacobian_rate_times_v(robot, seed):
    """gamma = -(d/dt C_q) v along q(t) = q ⊕ t v (v constant, so no C_q v_dot term)."""
    q, v = random_state(robot, seed)
    targets = actuator_values(robot, q)[0]
    gamma = constraints(robot, q, v, targets=targets)[2]
    rate = central_difference(lambda t: constraints(robot, integrate(robot, q, t * v), targets=targets)[1] @ v, 1e-6)
    assert_allclose(-rate, gamma, rtol=1e-5, atol=1e-5 * np.abs(gamma).max(),
                    err_msg="gamma vs -(d/dt C_q) v by central differences")


@pytest.mark.parametrize("seed", SEEDS)
def test_pose_jacobian_matches_finite_differences(robot, seed):
    q, _ = random_state(robot, seed)
    J = pose_jacobian(robot, q)[1]
    J_fd = fd_jacobian(lambda x: pose(robot, x), robot, q, eps=1e-6)
    assert_allclose(J, J_fd, rtol=1e-6, atol=1e-8, err_msg="end-effector pose Jacobian vs central differences")


ASSEMBLED = {
    "navaro": ("navaro", {}),
    "flexible_arm": ("flexible_arm", dict(elements=16)),
    "beam_clamped_clamped": ("beam", dict(support="clamped-clamped")),
    "beam_pinned_pinned": ("beam", dict(support="pinned-pinned")),
}


@pytest.mark.parametrize("case", ASSEMBLED)
def test_home_configuration_is_assembled(case):
    name, params = ASSEMBLED[case]
    model = load(name, **params)
    phi = constraints(model, model.q_home)[0]
    assert_allclose(phi, 0.0, atol=1e-10, err_msg=f"joint constraint residual of {case} at home")


@pytest.mark.parametrize("index", range(1, 9))
def test_navaro_pose_is_assembled(navaro, navaro_module, index):
    q = solve_pose(navaro, navaro_module.POSES[index])
    phi = constraints(navaro, q)[0]
    assert_allclose(phi, 0.0, atol=1e-10, err_msg=f"joint constraint residual at NaVARo pose {index}")


@pytest.mark.parametrize("index", range(1, 9))
def test_navaro_pose_is_reached(navaro, navaro_module, index):
    target = np.array(navaro_module.POSES[index])
    q = solve_pose(navaro, target)
    assert_allclose(pose(navaro, q), target, rtol=0, atol=1e-10, err_msg=f"end-effector pose at NaVARo pose {index}")


def test_unreachable_pose_raises(navaro):
    with pytest.raises(SimError, match="outside the workspace"):
        solve_pose(navaro, (0.5, 0.0, 0.0))


@pytest.mark.parametrize("values", [(0.0, 0.0), (0.0, 0.0, 0.0, 0.0)])
def test_wrong_number_of_pose_values_raises(navaro, values):
    with pytest.raises(SimError, match="pose needs 3 values"):
        solve_pose(navaro, values)


@pytest.mark.parametrize("name", ["navaro", "flexible_arm"])
def test_skeleton_jacobian_matches_finite_differences(name, request):
    from sim.model.kinematics import integrate, skeleton, skeleton_motion
    model = request.getfixturevalue(name)
    rng = np.random.default_rng(3)
    dv = 1e-2 * rng.standard_normal(model.n_v)
    dv[model.v_elastic] *= 1e-2
    q = integrate(model, model.q_home, dv)
    p, segments = skeleton(model, q)
    directions = rng.standard_normal((2, model.n_v))
    h = 1e-6
    for direction, moved in zip(directions, skeleton_motion(model, q, directions)):
        dp = (skeleton(model, integrate(model, q, h * direction))[0]
              - skeleton(model, integrate(model, q, -h * direction))[0]) / (2 * h)
        np.testing.assert_allclose(moved, dp, rtol=1e-6, atol=1e-9, err_msg=f"{name}: skeleton Jacobian")
    q2 = integrate(model, q, 1e-2 * rng.standard_normal(model.n_v))
    batched = skeleton_motion(model, np.stack([q, q2]), directions)       # (configuration, direction) pairs
    np.testing.assert_allclose(batched[1], skeleton_motion(model, q2, directions[1]), rtol=0, atol=1e-15)
    assert segments.min() >= 0 and segments.max() < len(p), "segments index the points"


@pytest.mark.parametrize("name", ["navaro", "flexible_arm"])
def test_skeleton_acceleration_matches_finite_differences(name, request):
    """The points' accelerations along the curve ``q(t) = q (+) (t v + t^2/2 a)`` (rigid and
    elastic coordinates moving, so the centripetal and Coriolis terms count): the second
    central difference of the points, to O(h^2)."""
    from sim.model.kinematics import integrate, skeleton_acceleration, skeleton_points
    model = request.getfixturevalue(name)
    rng = np.random.default_rng(5)
    dv = 1e-2 * rng.standard_normal(model.n_v)
    dv[model.v_elastic] *= 1e-2
    q = integrate(model, model.q_home, dv)
    v, a = rng.standard_normal((2, model.n_v))
    v[model.v_elastic] *= 1e-2
    a[model.v_elastic] *= 1e-2
    h = 1e-4
    p = [skeleton_points(model, integrate(model, q, s * h * v + 0.5 * (s * h) ** 2 * a)) for s in (-1, 0, 1)]
    ddp = (p[0] - 2 * p[1] + p[2]) / h ** 2
    np.testing.assert_allclose(skeleton_acceleration(model, q, v, a), ddp, rtol=1e-5, atol=1e-5,
                               err_msg=f"{name}: skeleton accelerations")
    centripetal = skeleton_acceleration(model, q, v, np.zeros(model.n_v))
    assert np.abs(centripetal).max() > 1e-2, "the velocity terms are tested too"
