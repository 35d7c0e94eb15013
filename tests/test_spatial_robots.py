"""Spatial robots nobody tuned for, against kinematics, energies and closed forms written here
from their geometry alone: the 3-PRS tilting head of ``prs3_model.py`` (prismatic drives,
spherical joints, parasitic motion) and the Delta of ``delta_rods_model.py`` (parallelograms
of ball-jointed flexible rods, whose spins are free motions)."""
import sim  # noqa: F401  (single-threaded BLAS before numpy)
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import brentq, root

import delta_rods_model as delta
import prs3_model as prs
from sim.solvers.trajectory import circle

MODEL = Path(__file__).with_name("prs3_model.py")
DELTA = Path(__file__).with_name("delta_rods_model.py")
G = 9.81
M_LEG = prs.RHO * np.pi * (prs.R_OUT**2 - (prs.R_OUT - prs.WALL) ** 2) * prs.L
RADIAL = np.array([[np.cos(t), np.sin(t), 0.0] for t in prs.ANGLES])
TANGENT = np.array([[-np.sin(t), np.cos(t), 0.0] for t in prs.ANGLES])


def _rotation(rx, ry, rz):
    """R = Rz Ry Rx (Z-Y-X angles)."""
    cx, sx, cy, sy, cz, sz = np.cos(rx), np.sin(rx), np.cos(ry), np.sin(ry), np.cos(rz), np.sin(rz)
    return (np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]]) @ np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
            @ np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]]))


def _prs_pose(rx, ry, z):
    """The rigid head at end-effector pose (rx, ry, z): the parasitic x, y, rz put each spherical
    joint in its leg's radial plane; ``(p, R, C, A, s)``: centre, rotation, spherical-joint and
    slider points (3, 3), slider strokes (3,)."""
    def points(u):
        R = _rotation(rx, ry, u[2])
        return R, np.array([u[0], u[1], z]) + prs.R_PLAT * (R @ RADIAL.T).T
    u = root(lambda u: np.einsum("ij,ij->i", points(u)[1], TANGENT), np.zeros(3), tol=1e-15).x
    R, C = points(u)
    s = C[:, 2] - np.sqrt(prs.L**2 - (prs.R_BASE - np.einsum("ij,ij->i", C, RADIAL)) ** 2)
    return np.array([u[0], u[1], z]), R, C, prs.R_BASE * RADIAL + s[:, None] * [0, 0, 1.0], s


def _prs_energies(law, t, h=1e-5):
    """Kinetic and potential energy of the rigid head at time ``t`` on ``law``, the rates by
    central differences; the legs uniform tubes (rod inertia plus their sections' rotary
    inertia m (r_o^2 + r_i^2) / 4 about the transverse axes), the sliders point masses."""
    states = [_prs_pose(*law(np.array([t + k * h]))[0][0]) for k in (-1, 0, 1)]
    p, R, C, A, s = states[1]
    rate = [(b - a) / (2 * h) for a, b in zip(states[0], states[2])]
    v_p, R_dot, v_C, v_A, s_dot = rate
    W = R_dot @ R.T
    w = np.array([W[2, 1], W[0, 2], W[1, 0]])
    section = (prs.R_OUT**2 + (prs.R_OUT - prs.WALL) ** 2) / 4
    T = 0.5 * prs.M_PLAT * v_p @ v_p + 0.5 * w @ R @ prs.I_PLAT @ R.T @ w + 0.5 * prs.M_SLIDER * s_dot @ s_dot
    for a, c in zip(v_A, v_C):
        T += M_LEG / 6 * (a @ a + a @ c + c @ c) + 0.5 * M_LEG * section * np.sum((c - a) ** 2) / prs.L**2
    V = G * (prs.M_PLAT * p[2] + prs.M_SLIDER * s.sum() + 0.5 * M_LEG * (A[:, 2] + C[:, 2]).sum())
    return T, V, s_dot


@pytest.fixture(scope="module")
def robot():
    return sim.load_model(MODEL)


CIRCLE = dict(kind="circle", center=[0.0, 0.0, 0.30], radius=0.1, duration=0.5, ramp=0.1)


def test_the_sliders_carry_the_weight_and_the_spherical_joints_the_platform_at_rest(robot):
    """Quasi-static (1e-3 rad/s): the guides hold no vertical force, so the drives carry the
    whole weight; the platform's centre keeps its height, so its spherical joints carry its
    weight."""
    res = sim.inverse_dynamics(robot, dict(CIRCLE, omega=1e-3), samples=11)
    weight = G * (prs.M_PLAT + 3 * prs.M_SLIDER + 3 * M_LEG)
    np.testing.assert_allclose(res.actuator_forces.sum(axis=1), weight, rtol=1e-9)
    np.testing.assert_allclose(sum(res.joint_reactions[f"S{i}"][:, 2] for i in range(3)), prs.M_PLAT * G, rtol=1e-9)


def test_inverse_dynamics_of_a_tilting_head_against_its_own_kinematics(robot):
    """A 0.1 rad nutation circle (rx, ry) at 2 turns/s, ramped in 0.1 s: actuator rates,
    kinetic and potential energy as computed here from the geometry; the drives' power equals
    d(T + V)/dt; the spherical joints still carry exactly the platform's weight."""
    omega = 4 * np.pi
    law = circle(CIRCLE["center"], CIRCLE["radius"], omega, CIRCLE["duration"], CIRCLE["ramp"])
    res = sim.inverse_dynamics(robot, dict(CIRCLE, omega=omega), samples=51)
    ref = [_prs_energies(law, t) for t in res.time]
    T, V = np.array([r[0] for r in ref]), np.array([r[1] for r in ref])
    s_dot = np.array([r[2] for r in ref])
    np.testing.assert_allclose(res.actuator_velocities, s_dot, atol=1e-7 * np.abs(s_dot).max())
    np.testing.assert_allclose(res.kinetic_energy, T, atol=1e-7 * T.max())
    np.testing.assert_allclose(res.potential_energy - res.potential_energy[0], V - V[0], atol=1e-11)
    np.testing.assert_allclose(sum(res.joint_reactions[f"S{i}"][:, 2] for i in range(3)), prs.M_PLAT * G, rtol=1e-9)
    power, dE = _power_balance(law, _prs_energies, res)
    np.testing.assert_allclose(power, dE, atol=1e-6 * np.abs(power).max())


def test_torsion_mode_of_the_head_is_a_cantilever_with_a_tip_mass():
    """With the sliders locked, the platform's turn about z bends the three legs across their
    plane as cantilevers (clamped at the sliders, the spherical joints passing no moment),
    each carrying a third of the platform's inertia at R_p: 1 + cos bL cosh bL + (M_t b / m)
    (cos bL sinh bL - sin bL cosh bL) = 0, M_t = I_zz / (3 R_p^2).  The beam elements agree
    to 2e-5 (their sections' rotary inertia, which the closed form leaves out) at home and
    at a tilted pose alike."""
    m = prs.RHO * np.pi * (prs.R_OUT**2 - (prs.R_OUT - prs.WALL) ** 2)
    EI = prs.E * np.pi / 4 * (prs.R_OUT**4 - (prs.R_OUT - prs.WALL) ** 4)
    tip = prs.I_PLAT[2, 2] / (3 * prs.R_PLAT**2)

    def equation(b):
        x = b * prs.L
        return 1 + np.cos(x) * np.cosh(x) + tip * b / m * (np.cos(x) * np.sinh(x) - np.sin(x) * np.cosh(x))
    b = brentq(equation, 1.0, 4.0)
    exact = b**2 * np.sqrt(EI / m) / (2 * np.pi)            # 22.0619 Hz
    model = sim.load_model(MODEL, elements=8)
    for pose in (None, [0.0, 0.0, 0.30]):
        f = sim.modes(model, pose=pose, count=3).frequencies
        assert f[2] == pytest.approx(exact, rel=5e-5)
        assert f[0] == pytest.approx(f[1], rel=1e-7) and f[1] < 0.8 * f[2]   # the tilting pair, below


def _power_balance(law, energy, res, h=2e-4):
    """Drive power sum(tau * rate) and d(T + V)/dt from ``energy(law, t)`` (a fourth-order
    difference) at every fifth sample of the inverse dynamics ``res``."""
    total = lambda t: sum(energy(law, t)[:2])      # noqa: E731
    k = np.arange(5, res.time.size - 1, 5)
    dE = [(-total(t + 2 * h) + 8 * total(t + h) - 8 * total(t - h) + total(t - 2 * h)) / (12 * h)
          for t in res.time[k]]
    return np.einsum("ij,ij->i", res.actuator_forces[k], res.actuator_velocities[k]), np.array(dE)


def _delta_pose(p):
    """Shoulder angles (3,) (positive down), elbow and platform points (3, 3) of the rigid Delta
    with its platform centre at ``p``: each arm's elbow B at the rods' length from the
    platform point C, |C - B(theta)| = L_rod, on the branch of the arms' home."""
    up = np.array([0.0, 0.0, 1.0])
    theta, B, C = np.empty(3), np.empty((3, 3)), np.empty((3, 3))
    for i, t in enumerate(delta.ANGLES):
        radial = np.array([np.cos(t), np.sin(t), 0.0])
        A, C[i] = delta.R_BASE * radial, p + delta.R_PLAT * radial
        elbow = lambda th: A + delta.L_ARM * (np.cos(th) * radial - np.sin(th) * up)   # noqa: E731
        theta[i] = brentq(lambda th: np.sum((C[i] - elbow(th)) ** 2) - delta.L_ROD**2, -1.0, 1.2, xtol=1e-15)
        B[i] = elbow(theta[i])
    return theta, B, C


def _delta_energies(law, t, h=1e-5):
    """Kinetic and potential energy of the rigid Delta at time ``t`` on ``law`` and its
    shoulder rates (central differences): the arms turning about their shoulders, each rod
    pair translating with its ends (a parallelogram), not spinning (a free motion the rigid
    robot leaves at rest), the rods uniform tubes with their sections' rotary inertia."""
    poses = [law(np.array([t + k * h]))[0][0] for k in (-1, 0, 1)]
    states = [_delta_pose(p) for p in poses]
    theta, B, C = states[1]
    rate = lambda j: (states[2][j] - states[0][j]) / (2 * h)      # noqa: E731
    theta_dot, v_B, v_C, v_p = rate(0), rate(1), rate(2), (poses[2] - poses[0]) / (2 * h)
    m_rod = delta.RHO * np.pi * (delta.R_OUT**2 - (delta.R_OUT - delta.WALL) ** 2) * delta.L_ROD
    section = (delta.R_OUT**2 + (delta.R_OUT - delta.WALL) ** 2) / 4
    shoulder = delta.ARM_INERTIA + delta.M_ARM * (delta.L_ARM / 2) ** 2
    T = 0.5 * delta.M_PLAT * v_p @ v_p + 0.5 * shoulder * theta_dot @ theta_dot
    for a, c in zip(v_B, v_C):
        T += 2 * (m_rod / 6 * (a @ a + a @ c + c @ c) + 0.5 * m_rod * section * np.sum((c - a) ** 2) / delta.L_ROD**2)
    V = G * (delta.M_PLAT * poses[1][2] + delta.M_ARM * 0.5 * B[:, 2].sum() + m_rod * (B[:, 2] + C[:, 2]).sum())
    return T, V, theta_dot


def test_inverse_dynamics_of_a_delta_with_free_rod_spins_against_its_own_kinematics():
    """A 5 cm circle at 2 turns/s, ramped: the rods' spins, free motions, stay at rest (the
    minimum-norm rigid velocity) and the shoulder rates, kinetic and potential energy and the
    drives' power agree with the Delta's closed-form kinematics."""
    robot = sim.load_model(DELTA)
    trajectory = dict(kind="circle", center=[0.0, 0.0, -0.35], radius=0.05, omega=4 * np.pi, duration=0.5, ramp=0.1)
    law = circle(trajectory["center"], 0.05, 4 * np.pi, 0.5, 0.1)
    res = sim.inverse_dynamics(robot, trajectory, samples=51)
    ref = [_delta_energies(law, t) for t in res.time]
    T, V, rate = (np.array([r[k] for r in ref]) for k in range(3))
    np.testing.assert_allclose(res.actuator_velocities, rate, atol=1e-7 * np.abs(rate).max())
    np.testing.assert_allclose(res.kinetic_energy, T, atol=1e-7 * T.max())
    np.testing.assert_allclose(res.potential_energy - res.potential_energy[0], V - V[0], atol=1e-10)
    power, dE = _power_balance(law, _delta_energies, res)
    np.testing.assert_allclose(power, dE, atol=1e-6 * np.abs(power).max())


def test_delta_rods_spin_freely_and_bend_as_pinned_rods():
    """Arms locked: six rigid-body modes (the rods' spins) and, among the rods' bending modes,
    six that leave the platform at rest: pinned-pinned rods, pi / (2 L^2) sqrt(EI / m) less
    the sections' rotary inertia, (pi r_g / L)^2 / 2 (Rayleigh): within 3e-5 on 8 elements;
    the other six, which move the platform, lie below."""
    m = delta.RHO * np.pi * (delta.R_OUT**2 - (delta.R_OUT - delta.WALL) ** 2)
    EI = delta.E * np.pi / 4 * (delta.R_OUT**4 - (delta.R_OUT - delta.WALL) ** 4)
    gyration = (delta.R_OUT**2 + (delta.R_OUT - delta.WALL) ** 2) / 4
    rod = np.pi / (2 * delta.L_ROD**2) * np.sqrt(EI / m) * (1 - 0.5 * np.pi**2 * gyration / delta.L_ROD**2)
    result = sim.modes(sim.load_model(DELTA, elements=8), count=13)
    f = result.frequencies
    assert result.attrs["rigid_modes"] == 6
    np.testing.assert_allclose(f[6:12], rod, rtol=3e-5)
    assert np.all(f[:6] < rod) and f[12] > 3 * rod
