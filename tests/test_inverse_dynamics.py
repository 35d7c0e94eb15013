"""Inverse dynamics / kineto-statics (SPEC §2.3 item 3): 3-RRRT of paper 003 and a slider-crank.

Checks: the 3-RRRT home posture is regular; actuator power equals d(T + V)/dt (spectral
derivative of the periodic energy); the KKT actuator forces equal an independent
Newton–Euler / virtual-work computation on the null space of the passive joints; at rest the
drives balance gravity and the base carries the total weight; reactions of a symmetric motion
are symmetric under the 120° rotation; a parallel singularity is reported with its time and
condition number.
"""
import dataclasses
from pathlib import Path

import h5py
import numpy as np
import pytest
import scipy.linalg

import problems
from sim.model.assembly import assemble, regularity
from sim.model.evaluator import Evaluator, Kinematics
from sim.app.cli import main
from sim.model.constraints import actuator_values, constraints
from sim.errors import SimError
from sim.solvers.reactions import actuator_forces, inverse_dynamics
from sim.model.loader import load_model
from sim.solvers.motion import rigid_motion, rigid_sample
from sim.solvers.trajectory import circle, polynomial

ROOT = Path(__file__).resolve().parents[1]
RRRT3 = ROOT / "models" / "rrrt3.py"
SAMPLES = 64          # per period
# The energy along the circle holds harmonics 3, 6, 9, ... falling to 1e-13 J by the 21st;
# higher ones are roundoff of the Newton-solved positions, which the derivative would amplify.
HARMONICS = 24

SLIDER_CRANK = problems.SLIDER_CRANK


@pytest.fixture(scope="module")
def rrrt3():
    return load_model(RRRT3)


@pytest.fixture(scope="module")
def circles(rrrt3):
    """Rigid motion and inverse dynamics over one period of the paper's circle (0.5 rad/s)
    and of a fast one (4 rad/s), sampled uniformly without the end point."""
    out = {}
    for omega in (0.5, 4.0):
        period = 2 * np.pi / omega
        t = np.arange(SAMPLES) * period / SAMPLES
        law = circle([0.0, 0.0, 0.8], 0.05, omega, period)
        motion = _polished(rrrt3, law, rigid_motion(rrrt3, law, t))
        out[omega] = (motion, inverse_dynamics(rrrt3, motion))
    return out


def _polished(model, law, motion):
    """The motion with positions re-assembled to 1e-13: the energy derivative would otherwise
    see the 1e-11 Newton tolerance of the trajectory (up to ~5e-7 of the peak power here)."""
    x, x_dot, x_ddot = law(motion.t)
    ev = Evaluator(model)
    q = np.array([assemble(model, q, ev, pose_target=p, tol=1e-13) for q, p in zip(motion.q, x)])
    samples = [rigid_sample(model, *args, ev=ev) for args in zip(q, x, x_dot, x_ddot)]
    assert all(np.array_equal(sample[0], q_k) for sample, q_k in zip(samples, q)), "the corrector moved a polished q"
    return dataclasses.replace(motion, q=q, v=np.array([s[1] for s in samples]), a=np.array([s[2] for s in samples]))


@pytest.fixture(scope="module")
def slider_crank(tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / "slider_crank_rigid.py"
    path.write_text(SLIDER_CRANK)
    return path


def _newton_euler(model, q, v, a):
    """``M a - Q`` on the reference coordinates, body by body from the Newton–Euler equations
    (mass centre acceleration, Euler's equation about the mass centre), without sim.model.dynamics."""
    out = []
    for b, body in enumerate(model.bodies):
        sq, sv = model.q_index[b]
        e0, e = q[sq + 3], q[sq + 4:sq + 7]
        R = (e0**2 - e @ e) * np.eye(3) + 2 * np.outer(e, e) + 2 * e0 * np.array(
            [[0, -e[2], e[1]], [e[2], 0, -e[0]], [-e[1], e[0], 0]])
        m = body.mass
        c = body.first_moment[:, 0] / m
        U = body.second_moment[:, :, 0, 0]
        # rot_inertia: the beam sections' rotary inertia (zero for rigid bodies)
        I_C = np.trace(U) * np.eye(3) - U - m * (c @ c * np.eye(3) - np.outer(c, c)) + body.rot_inertia
        w, alpha = v[sv + 3:sv + 6], a[sv + 3:sv + 6]
        a_c = a[sv:sv + 3] + R @ (np.cross(alpha, c) + np.cross(w, np.cross(w, c)))
        F = m * (a_c - model.gravity)
        out += [F, np.cross(c, R.T @ F) + I_C @ alpha + np.cross(w, I_C @ w)]
    return np.concatenate(out)


def _virtual_work_forces(model, q, v, a):
    """Actuator forces ``tau = (J_s N)^-T N^T (M a - Q)``, N the null space of the passive
    joint rows on the reference coordinates (the principle of virtual work)."""
    rigid = model.v_rigid
    _, Jc = constraints(model, q)
    _, Js = actuator_values(model, q)
    N = scipy.linalg.null_space(Jc[:, rigid], rcond=1e-9)
    A = Js[:, rigid] @ N
    return np.linalg.lstsq(A.T, N.T @ _newton_euler(model, q, v, a), rcond=None)[0]


def _leg_frame(i):
    import importlib.util
    spec = importlib.util.spec_from_file_location("rrrt3_builder", RRRT3)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.leg_frame(i)


def test_home_posture_is_regular(rrrt3):
    """Full rank 78 for both Jacobians, moderate condition numbers, and the three legs'
    constraint couples n_i = t_i x b_i are independent (orthogonal: condition number 1)."""
    assert rrrt3.ranks == (78, 78)
    inverse, direct = regularity(rrrt3, rrrt3.q_home, Kinematics(rrrt3))
    conditions = (1 / inverse, 1 / direct)
    assert max(conditions) < 200, f"condition numbers {conditions}"
    couples = np.array([np.cross(_leg_frame(i)[1], _leg_frame(i)[2]) for i in range(3)])
    assert np.linalg.matrix_rank(couples) == 3
    np.testing.assert_allclose(np.linalg.cond(couples), 1.0, rtol=1e-12, err_msg="couple conditioning")
    np.testing.assert_allclose(rrrt3.pose_home, [0.0, 0.0, 0.8], atol=1e-12, err_msg="home pose")


@pytest.mark.parametrize("omega", [0.5, 4.0])
def test_power_equals_energy_rate(circles, omega):
    """sum tau s_dot = d(T + V)/dt to 1e-6 of the peak power; the derivative is spectral
    (the energy is periodic along the closed circle, band-limited to HARMONICS), independent of
    the multipliers."""
    motion, result = circles[omega]
    energy = result.kinetic_energy + result.potential_energy
    k = np.fft.fftfreq(SAMPLES, d=1.0 / SAMPLES)
    k[SAMPLES // 2] = 0.0
    k[np.abs(k) > HARMONICS] = 0.0
    rate = np.fft.ifft(1j * k * omega * np.fft.fft(energy)).real
    peak = np.abs(result.actuator_power).max()
    assert peak > 1e-4
    np.testing.assert_allclose(result.actuator_power, rate, rtol=0, atol=1e-6 * peak,
                               err_msg=f"power balance at omega = {omega}")
    assert result.residual.max() < 1e-9


@pytest.mark.parametrize("omega", [0.5, 4.0])
def test_virtual_work_agrees(rrrt3, circles, omega):
    """KKT actuator forces = Newton–Euler + virtual work on the passive null space, 1e-8 rel."""
    motion, result = circles[omega]
    for k in range(0, SAMPLES, 8):
        tau = _virtual_work_forces(rrrt3, motion.q[k], motion.v[k], motion.a[k])
        np.testing.assert_allclose(result.actuator_forces[k], tau, rtol=0,
                                   atol=1e-8 * np.abs(result.actuator_forces).max(),
                                   err_msg=f"actuator forces at t = {motion.t[k]:.4g} s")


def test_static_balances_gravity(rrrt3):
    """At rest the drives balance gravity (virtual-work static solution) and the base joints
    carry the total weight."""
    pose = [0.03, -0.02, 0.75]
    motion = rigid_motion(rrrt3, polynomial(pose, pose, 1.0), np.array([0.0, 0.5]))
    assert np.abs(motion.v).max() == 0 and np.abs(motion.a).max() < 1e-12
    result = inverse_dynamics(rrrt3, motion, frame="world")
    tau = _virtual_work_forces(rrrt3, motion.q[1], np.zeros(rrrt3.n_v), np.zeros(rrrt3.n_v))
    np.testing.assert_allclose(result.actuator_forces[1], tau, rtol=1e-10, err_msg="static torques")
    weight = sum(b.mass for b in rrrt3.bodies) * 9.81
    base = [k for k, j in enumerate(rrrt3.joints) if rrrt3.markers[j.marker_i].body < 0]
    assert len(base) == 3
    np.testing.assert_allclose(result.joint_reactions[1, base, 2].sum(), weight, rtol=1e-12,
                               err_msg="vertical base reactions vs total weight")
    np.testing.assert_allclose(result.joint_reactions[1, base, :2].sum(axis=0), 0.0, atol=1e-10,
                               err_msg="horizontal base reactions")


@pytest.mark.parametrize("frame", ["world", "joint"])
def test_symmetric_reactions(rrrt3, frame):
    """A vertical motion of the platform is symmetric: leg 2 and 3 reactions are leg 1's
    rotated by 120° and 240° (world), or equal (joint frames rotate with the legs)."""
    motion = rigid_motion(rrrt3, polynomial([0, 0, 0.75], [0, 0, 0.85], 1.0), np.linspace(0, 1, 5))
    result = inverse_dynamics(rrrt3, motion, frame=frame)
    names = [j.name for j in rrrt3.joints]
    scale = np.abs(result.joint_reactions).max()
    for leg in (2, 3):
        c, s = np.cos(2 * np.pi * (leg - 1) / 3), np.sin(2 * np.pi * (leg - 1) / 3)
        Rz = np.eye(3) if frame == "joint" else np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
        for joint in ("A", "U", "B", "C", "P"):
            w1 = result.joint_reactions[:, names.index(f"{joint}_1")]
            w = result.joint_reactions[:, names.index(f"{joint}_{leg}")]
            expected = np.concatenate([w1[:, :3] @ Rz.T, w1[:, 3:] @ Rz.T], axis=1)
            np.testing.assert_allclose(w, expected, rtol=0, atol=1e-9 * scale,
                                       err_msg=f"joint {joint}_{leg} vs {joint}_1 ({frame})")
    np.testing.assert_allclose(result.actuator_forces, result.actuator_forces[:, :1].repeat(3, 1),
                               rtol=1e-9, err_msg="symmetric drive torques")


def test_redundant_planar_loop(slider_crank):
    """Planar loop in 3D: minimum-norm multipliers still give the unique slider force (virtual
    work) and the power balance (slide actuator, force in N)."""
    model = load_model(slider_crank)
    assert model.ranks[1] < model.rows["n_total"]
    t = np.linspace(0.0, 1.0, 9)
    motion = rigid_motion(model, polynomial([0.6], [1.2], 1.0), t)
    result = inverse_dynamics(model, motion)
    assert result.residual.max() < 1e-10
    for k in range(t.size):
        tau = _virtual_work_forces(model, motion.q[k], motion.v[k], motion.a[k])
        np.testing.assert_allclose(result.actuator_forces[k], tau, rtol=1e-9, atol=1e-12,
                                   err_msg=f"slider force at t = {t[k]}")


def test_parallel_singularity_reported(slider_crank):
    """Through the dead centre (crank angle 0 at t = 0.5 s) the slider cannot drive the crank:
    the direct Jacobian is singular and the time and condition number are reported."""
    model = load_model(slider_crank)
    motion = rigid_motion(model, polynomial([-0.4], [0.4], 1.0), np.linspace(0.0, 1.0, 5))
    result = inverse_dynamics(model, motion)
    assert result.first_singular() == 2
    assert result.condition[2] > 1e7 and result.condition[[0, 1, 3, 4]].max() < 1e3
    with pytest.raises(SimError, match=r"t = 0\.5 s \(condition number ([0-9.e+]+|inf)\)"):
        actuator_forces(model, motion)


def test_cli_reports_singularity(slider_crank, tmp_path, capsys):
    """`sim run` stops at the singular instant with one line, keeps the samples before it and
    marks the group incomplete."""
    scenario = tmp_path / "dead_centre.toml"
    scenario.write_text(f'[model]\nfile = "{slider_crank}"\n[trajectory]\nkind = "polynomial"\n'
                        'start = [-0.4]\nend = [0.4]\nduration = 1.0\n[inverse_dynamics]\nsamples = 5\n')
    out = tmp_path / "dead_centre.h5"
    assert main(["run", str(scenario), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "t = 0.5 s (condition number" in err, err
    with h5py.File(out) as f:
        group = f["inverse_dynamics"]
        assert group.attrs["status"] == "incomplete"
        assert group["actuator_forces"].shape == (2, 1)
        assert list(group["actuator_forces"].attrs["units"]) == ["N"]


def test_compliant_drives_act_as_rigid_drives_of_the_rigid_robot():
    """6-PSS with compliant ball-screw drives (the default): inverse dynamics gives one force
    per actuator, equal to the virtual-work forces (Newton-Euler, passive null space)."""
    from sim.solvers.trajectory import cycloidal
    model = load_model(ROOT / "models/pss6.py")
    assert all(a.stiffness is not None for a in model.actuators), "the 6-PSS drives are compliant"
    law = cycloidal(model.pose_home, [0, 1, 2], 0.02, 0.4)
    motion = rigid_motion(model, law, np.linspace(0.0, 0.4, 9))
    result = inverse_dynamics(model, motion)
    assert result.actuator_forces.shape == (9, 6)
    for k in range(0, 9, 2):
        tau = _virtual_work_forces(model, motion.q[k], motion.v[k], motion.a[k])
        np.testing.assert_allclose(result.actuator_forces[k], tau, rtol=0,
                                   atol=1e-8 * np.abs(result.actuator_forces).max(),
                                   err_msg=f"6-PSS actuator forces at t = {motion.t[k]:.3g} s")


def test_condition_numbers_are_the_svds(rrrt3, circles):
    """Along the paper's circle the condition numbers of the direct Jacobian (inverse
    dynamics) and of the inverse-kinematics one (rigid motion), iterated from sample to
    sample (sim.linalg.condition_number), are those of the SVD of each sample's Jacobians."""
    motion, result = circles[0.5]
    ev = Evaluator(rrrt3)
    direct, inverse = [], []
    for q in motion.q:
        E = ev.evaluate(q, np.zeros(rrrt3.n_v), pose=True)
        for out, rows in ((direct, E.J_s), (inverse, E.J_x)):
            s = np.linalg.svd(np.vstack([E.J, rows])[:, rrrt3.v_rigid], compute_uv=False)
            out.append(s[0] / s[-1])
    np.testing.assert_allclose(result.condition, direct, rtol=1e-11)
    np.testing.assert_allclose(motion.condition, inverse, rtol=1e-9)     # motion.q polished to 1e-13
    np.testing.assert_allclose([min(direct), max(direct), min(inverse), max(inverse)],
                               [195.867, 198.256, 98.439, 102.579], rtol=2e-5)
