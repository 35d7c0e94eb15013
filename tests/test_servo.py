"""Servo drives (sim.solvers.closed_loop, issue 45): closed forms of a geared servo axis and a two-inertia
drive, the transient against them and the linear response, the closed-loop modes of the 3-RRRU
against an eigen-analysis built here, the state space against the FRF's direct solve."""
from pathlib import Path

import control
import numpy as np
import pytest
import scipy.linalg
from numpy.testing import assert_allclose

from sim.errors import SimError
from sim.model.loader import load_model
from sim.solvers import closed_loop as sv
from sim.solvers.integrators import Options
from sim.solvers.simulate import simulate

HERE = Path(__file__).parent
AXIS = HERE / "servo_axis_model.py"
RRRU = HERE.parent / "models" / "rrru3.py"
MASS, LENGTH, ROTOR, GEAR = 2.0, 0.5, 3e-5, 50.0
J = MASS * LENGTH**2 / 3 + GEAR**2 * ROTOR         # the axis: link about its end + n^2 J_m
KP, KV = 40.0, 2.0                                 # 1/s, N m s/rad
RATE = 0.5                                         # rad/s


@pytest.fixture(scope="module")
def axis():
    return load_model(AXIS)


def ramp(t):
    t = np.asarray(t, dtype=float)
    return RATE * t, np.full_like(t, RATE), np.zeros_like(t)


def gains(model, **table):
    return sv.Servo.from_table(dict(dict(kp=KP, kv=KV), **table), model)


def test_reflected_inertia_and_closed_loop_mode(axis):
    """J = J_l + n^2 J_m on the axis; the closed loop's mode omega_n = sqrt(kv kp / J),
    zeta = kv / (2 sqrt(J kv kp)), to 1e-9."""
    p = sv.plant(axis, axis.q_home)
    assert_allclose(p.M, [[J]], rtol=1e-12)
    md = sv.modes(sv.closed_loop(p, gains(axis)))
    assert_allclose(md.frequencies_hz * 2 * np.pi, [np.sqrt(KV * KP / J)], rtol=1e-9)
    assert_allclose(md.damping_ratios, [KV / (2 * np.sqrt(J * KV * KP))], rtol=1e-9)


def test_integral_loop_roots(axis):
    """With the velocity-loop integral, the characteristic polynomial is
    J s^3 + kv s^2 + kv (kp + ki) s + kv kp ki (the integral's real root included)."""
    ki = 5.0
    md = sv.modes(sv.closed_loop(sv.plant(axis, axis.q_home), gains(axis, ki=ki)))
    roots = np.roots([J, KV, KV * (KP + ki), KV * KP * ki])
    pair = roots[roots.imag > 0]
    assert_allclose(md.eigenvalues, pair, rtol=1e-9)
    assert_allclose(md.real_roots, roots[np.abs(roots.imag) < 1e-9].real, rtol=1e-9)


@pytest.mark.parametrize("feedforward, lag", [("none", RATE / KP), ("velocity", 0.0)])
def test_ramp_lag(axis, feedforward, lag):
    """Following a ramp, the converged transient lags rate / kp without feedforward and nothing
    with velocity feedforward, to 1e-6 rad (the start's ringing, zeta omega = 4.1/s, has decayed
    by 1e-9 after 5 s)."""
    r = simulate(axis, axis.q_home, np.zeros(axis.n_v), 5.0, 1e-3, gains(axis, feedforward=feedforward).drive(ramp),
                 output_step=0.1)
    assert r.status == "complete", r.message
    assert abs(ramp(r.t[-1])[0] - r.pose[-1, 0] - lag) < 1e-6


def test_transient_follows_closed_form_with_the_rotor(axis):
    """From rest, no feedforward: the error obeys J e'' + kv e' + kv kp e = kv rate, e(0) = 0,
    e'(0) = rate; the transient against it at every sample, within Newmark's phase error
    (second order: 1.2e-6 rad at h = 1 ms, 7.4e-8 at 0.25 ms, of an error of 3e-2 rad)."""
    errors = []
    for h in (1e-3, 2.5e-4):
        r = simulate(axis, axis.q_home, np.zeros(axis.n_v), 1.0, h, gains(axis, feedforward="none").drive(ramp),
                     output_step=0.01)
        e = ramp(r.t)[0] - r.pose[:, 0]
        sigma = KV / (2 * J)
        wd = np.sqrt(KV * KP / J - sigma**2)
        a = -RATE / KP
        b = (RATE + sigma * a) / wd
        exact = RATE / KP + np.exp(-sigma * r.t) * (a * np.cos(wd * r.t) + b * np.sin(wd * r.t))
        errors.append(np.abs(e - exact).max())
    assert errors[1] < 1e-7
    assert 12 < errors[0] / errors[1] < 20      # second order


@pytest.mark.parametrize("feedforward, ki", [("none", 5.0), ("velocity", 5.0), ("velocity", 0.0)])
def test_transient_equals_linear_response(axis, feedforward, ki):
    """The transient (integral carried in the step, velocity feedforward) against the state
    space's response to the reference (python-control, exact for a ramp): within 3e-7 rad at
    h = 0.25 ms (the integration's error) -- the axis is linear."""
    s = gains(axis, feedforward=feedforward, ki=ki)
    r = simulate(axis, axis.q_home, np.zeros(axis.n_v), 1.0, 2.5e-4, s.drive(ramp), output_step=1e-3)
    sys = sv.state_space(axis, inputs=["reference:motor"], outputs=["pose:rz"], drives="servo", servo=s)
    linear = control.forced_response(sys, r.t, RATE * r.t).outputs
    assert np.abs(linear - r.pose[:, 0]).max() < 3e-7
    # the recorded force is the one that accelerates the axis: J theta'' (no other load; the
    # second difference's error (w dt)^2 / 12 is 3e-5 here)
    tau = J * (r.pose[2:, 0] - 2 * r.pose[1:-1, 0] + r.pose[:-2, 0]) / 1e-6
    assert_allclose(r.actuator_forces[1:-1, 0], tau, atol=1e-3 * np.abs(tau).max())


def test_torque_limit(axis):
    """A reference far ahead (1 rad/s with a 0.05 N m limit): the force stays at the limit,
    the axis accelerates at limit / J, and the integral is held meanwhile."""
    limit = 0.05
    s = gains(axis, torque_limit=limit, ki=5.0)
    fast = lambda t: (np.asarray(t) * 1.0, np.ones_like(np.asarray(t, dtype=float)), np.zeros_like(np.asarray(t, dtype=float)))    # noqa: E731
    r = simulate(axis, axis.q_home, np.zeros(axis.n_v), 0.5, 1e-3, s.drive(fast), output_step=0.01)
    assert r.status == "complete", r.message
    assert np.abs(r.actuator_forces).max() <= limit * (1 + 1e-12)
    assert_allclose(r.actuator_forces[1:, 0], limit)
    assert_allclose(r.pose[:, 0], 0.5 * limit / J * r.t**2, atol=1e-9)


def test_two_inertia_drive(axis):
    """A compliant transmission k between the rotor (I = n^2 J_m) and the link (J_l): from the
    motor's torque to its angle, anti-resonance sqrt(k / J_l) and resonance
    sqrt(k (1 / J_l + 1 / I)), to 1e-6; motor side (torque n times, angle n times: n^2)."""
    k = 500.0
    model = load_model(AXIS, {"k_drive": k})
    J_l, I = MASS * LENGTH**2 / 3, GEAR**2 * ROTOR
    sys = sv.state_space(model, inputs=["motor:motor"], outputs=["motor:motor"], drives="open")
    zeros = control.zeros(sys)
    poles = control.poles(sys)
    assert_allclose(np.sort(np.abs(zeros.imag)), [np.sqrt(k / J_l)] * 2, rtol=1e-6)
    assert_allclose(np.sort(np.abs(poles))[2:], [np.sqrt(k * (1 / J_l + 1 / I))] * 2, rtol=1e-6)
    # low frequency: the whole axis, motor side: n^2 / (-(J_l + I) w^2)
    w = 0.01
    H = control.evalfr(sys, 1j * w)
    assert_allclose(H.real, -GEAR**2 / ((J_l + I) * w**2), rtol=1e-6)
    # closed by the servo, on the motor's encoder: modes of the linear system built here
    s = gains(model, ki=5.0)
    M = np.diag([J_l, I])
    Kt = np.array([[k, -k], [-k, k + KV * KP]])
    C = np.array([[0, 0], [0, KV]])
    A = np.block([[np.zeros((2, 2)), np.eye(2), np.zeros((2, 1))],
                  [-np.linalg.solve(M, Kt), -np.linalg.solve(M, C), np.linalg.solve(M, [[0], [5.0]])],
                  [np.array([[0, -KV * KP]]), np.array([[0, -KV]]), np.zeros((1, 1))]])
    lam = np.linalg.eigvals(A)
    md = sv.modes(sv.closed_loop(sv.plant(model, model.q_home), s))
    assert_allclose(md.eigenvalues, np.sort_complex(lam[lam.imag > 1e-9])[np.argsort(np.abs(lam[lam.imag > 1e-9]))],
                    rtol=1e-8)


def test_state_space_equals_frf(axis):
    """The state space's frequency response equals the FRF's direct solve (sim.solvers.harmonic with
    the same servo drives) on the two-inertia axis with integral and feedforward, to 1e-9."""
    from sim.solvers.harmonic import frf

    model = load_model(AXIS, {"k_drive": 500.0})
    s = gains(model, ki=5.0)
    ins, outs = ["motor:motor", "reference:motor", "torque:tip:z"], ["pose:rz", "motor:motor", "actuator:motor"]
    sys = sv.state_space(model, inputs=ins, outputs=outs, drives="servo", servo=s)
    f = np.geomspace(0.1, 100, 40)
    H = frf(model, model.q_home, ins, outs, f, servo=s).H
    Hs = np.moveaxis(control.frequency_response(sys, 2 * np.pi * f).complex, -1, 0)
    assert_allclose(Hs, H, rtol=1e-9, atol=1e-12 * np.abs(H).max())


@pytest.fixture(scope="module")
def rrru3():
    return load_model(RRRU, {"elements_per_link": 2, "rotor_inertia": 1.2e-4, "gear_ratio": 50.0, "gravity": 0.0})


def test_rrru3_closed_loop_modes_against_oracle(rrru3):
    """The 3-RRRU's closed-loop modes against an eigen-analysis built here from the model's
    M, K, joint and actuator Jacobians (scipy's null space; the integral on the PD torque,
    z' = tau_pd, as the transient carries it), to 1e-6."""
    from sim.model.constraints import actuator_values, constraints
    from sim.model.dynamics import mass_matrix, stiffness_matrix

    q = rrru3.q_home
    kp, kv, ki = 100.0, 60.0, 5.0
    s = sv.Servo.from_table(dict(kp=kp, kv=kv, ki=ki), rrru3)
    N = scipy.linalg.null_space(constraints(rrru3, q)[1])
    J_s = actuator_values(rrru3, q)[1]
    S = J_s @ N
    M = N.T @ (mass_matrix(rrru3, q) + 0.3 * J_s.T @ J_s) @ N
    K = N.T @ stiffness_matrix(rrru3, q) @ N
    n, a = M.shape[0], S.shape[0]
    Mi = np.linalg.inv(M)
    A = np.block([[np.zeros((n, n)), np.eye(n), np.zeros((n, a))],
                  [-Mi @ (K + kv * kp * S.T @ S), -kv * Mi @ S.T @ S, ki * Mi @ S.T],
                  [-kv * kp * S, -kv * S, np.zeros((a, a))]])
    lam = np.linalg.eigvals(A)
    lam = lam[lam.imag > 1e-6]
    lam = lam[np.argsort(np.abs(lam))][:10]
    md = sv.modes(sv.closed_loop(sv.plant(rrru3, q), s))
    assert_allclose(md.eigenvalues[:10], lam, rtol=1e-6)
    # the servo modes sit below the locked robot's lowest (22.7 Hz at 2 elements a rod here)
    assert md.frequencies_hz[0] < 20


def test_rrru3_closed_loop_damping_is_the_transients(rrru3):
    """The closed-loop modes damp as the servo transient does: its damping matrix ``D`` (the
    schedule the integrator reads: Rayleigh on the bodies, the modal ratio with ``eta / 2`` on
    the lowest ``modes`` modes of the structure with its actuators locked) plus the servos'
    ``kv``, in an eigen-analysis built here on scipy's null space, to 1e-6.  The locked
    structure's 26.3 Hz mode, which the servos barely move, takes ``zeta + eta / 2`` and a
    little Rayleigh.  (Giving the servo plant's own modes the ratio instead, as earlier
    versions did, damped the structure's modes beyond the lowest 4 at 0.034-0.038 instead of
    0.004-0.009.)"""
    from sim.model.constraints import actuator_values, constraints
    from sim.model.dynamics import mass_matrix, stiffness_matrix
    from sim.solvers.damping import Damping, schedule

    q = rrru3.q_home
    kp, kv, ki = 100.0, 60.0, 5.0
    s = sv.Servo.from_table(dict(kp=kp, kv=kv, ki=ki), rrru3)
    damping = Damping(zeta=0.03, eta=0.02, alpha=0.4, beta=1e-5, modes=4)
    D = schedule(rrru3, damping, np.zeros(1), q[None]).matrix
    N = scipy.linalg.null_space(constraints(rrru3, q)[1])
    J_s = actuator_values(rrru3, q)[1]
    S = J_s @ N
    M = N.T @ (mass_matrix(rrru3, q) + 0.3 * J_s.T @ J_s) @ N
    K = N.T @ stiffness_matrix(rrru3, q) @ N
    C = N.T @ D @ N
    n, a = M.shape[0], S.shape[0]
    Mi = np.linalg.inv(M)
    A = np.block([[np.zeros((n, n)), np.eye(n), np.zeros((n, a))],
                  [-Mi @ (K + kv * kp * S.T @ S), -Mi @ (C + kv * S.T @ S), ki * Mi @ S.T],
                  [-kv * kp * S, -kv * S, np.zeros((a, a))]])
    lam = np.linalg.eigvals(A)
    lam = lam[lam.imag > 1e-6]
    lam = lam[np.argsort(np.abs(lam))][:12]
    md = sv.modes(sv.closed_loop(sv.plant(rrru3, q, damping), s))
    assert_allclose(md.eigenvalues[:12], lam, rtol=1e-6)
    undamped = sv.modes(sv.closed_loop(sv.plant(rrru3, q), s))
    assert abs(undamped.damping_ratios[3]) < 1e-9 and md.frequencies_hz[3] == pytest.approx(26.3, abs=0.1)
    assert 0.040 < md.damping_ratios[3] < 0.0425


def test_rrru3_tracking_against_linear_response(rrru3, tmp_path):
    """At low speed (a 5 mm move in 0.5 s) the servo transient's tracking errors equal the
    linearised robot's (the state space from the references to the joint angles at the start
    pose), within 0.5 % of their peak (0.13 %: what the configuration's change over the move leaves)."""
    from sim.app.api import open_results, run

    path = tmp_path / "servo.toml"
    path.write_text(f"""name = "servo"
[model]
file = "{RRRU.as_posix()}"
parameters = {{ elements_per_link = 2, rotor_inertia = 1.2e-4, gear_ratio = 50.0, gravity = 0.0 }}
[trajectory]
kind = "point_to_point"
waypoints = [[0.0, 0.0, -0.7], [0.005, 0.003, -0.697]]
move_time = 0.5
dwell = 0.2
[servo]
kp = 100.0
kv = 60.0
ki = 5.0
feedforward = "none"
[transient]
step = 5e-4
output_step = 5e-3
drive = "servo"
start = "undeformed"
""")
    out = tmp_path / "servo.h5"
    run(path, out=out)
    ds = open_results(out, "transient")
    t = ds["time"].values
    err = ds["tracking_error"].values
    s = ds["motor_angles"].values / 50.0
    ref = s + err
    sys = sv.state_space(rrru3, inputs=[f"reference:theta_{i}" for i in (1, 2, 3)],
                         outputs=[f"actuator:theta_{i}" for i in (1, 2, 3)], drives="servo",
                         servo=sv.Servo.from_table(dict(kp=100.0, kv=60.0, ki=5.0, feedforward="none"), rrru3))
    lin = control.forced_response(sys, t, (ref - ref[0]).T).outputs.T
    lin_err = (ref - ref[0]) - lin
    assert np.abs(err).max() > 1e-4                     # a lag worth comparing
    assert np.abs(lin_err - err).max() < 0.005 * np.abs(err).max()      # 0.13 % measured
    # the deviation splits into the servo's and the structure's shares
    dev = ds["deviation"].values
    assert_allclose(ds["deviation_servo"].values + ds["deviation_structure"].values, dev, atol=1e-15)
    assert np.abs(ds["deviation_servo"].values).max() > 10 * np.abs(ds["deviation_structure"].values).max()


def test_servo_table_errors(axis):
    """One line naming the key per mistake."""
    for table, phrase in ((dict(kv=1.0), "`kp` is required"), (dict(kp=1.0, kv=[1.0, 2.0]), "`kv` must be"),
                          (dict(kp=-1.0, kv=1.0), "`kp` must be > 0"),
                          (dict(kp=1.0, kv=1.0, feedforward="torque"), "`feedforward` must be"),
                          (dict(kp=1.0, kv=1.0, kx=1.0), "unknown key `kx`")):
        with pytest.raises(SimError, match=phrase) as info:
            sv.Servo.from_table(table, axis)
        assert "\n" not in str(info.value)
    with pytest.raises(SimError, match="needs drives = \"servo\""):
        sv.state_space(axis, inputs=["reference:motor"], outputs=["pose:rz"], drives="open")


def test_truncation_keeps_static_gain_and_lowest_modes(rrru3):
    """Reduced to the 6 lowest modes, the plant keeps its static gain (to 1e-9: the rest's
    static residual in D; without the integral, which rejects a static torque) and the response
    below the first dropped mode within 1 %."""
    servo = dict(kp=100.0, kv=60.0)
    full = sv.state_space(rrru3, inputs=["motor:theta_1"], outputs=["pose:x", "motor:theta_1"], drives="servo",
                          servo=servo)
    low = sv.state_space(rrru3, inputs=["motor:theta_1"], outputs=["pose:x", "motor:theta_1"], drives="servo",
                         servo=servo, modes=6)
    assert low.nstates < full.nstates / 4
    assert_allclose(control.dcgain(low), control.dcgain(full), rtol=1e-9)
    f = np.array([1.0, 5.0, 10.0])
    H, Hl = (control.frequency_response(x, 2 * np.pi * f).complex for x in (full, low))
    assert_allclose(Hl, H, rtol=1e-2)
    assert_allclose(np.sort(control.poles(low).imag[control.poles(low).imag > 0]),
                    np.sort(sv.modes(sv.closed_loop(sv.plant(rrru3, rrru3.q_home),
                                                    sv.Servo.from_table(servo, rrru3))).eigenvalues[:6].imag),
                    rtol=1e-9)


def test_torque_feedforward_includes_the_rotor(tmp_path):
    """With velocity and torque feedforward (the rigid inverse dynamics with n^2 J_m s_ddot),
    the rigid axis follows its cycloid: its tracking error is below 1e-6 rad (1.2e-7 measured:
    the feedforward's spline and the integration) where velocity feedforward alone lags by
    65 mrad; and the recorded forces are J s_ddot."""
    from sim.app.api import open_results, run

    peaks = {}
    for ff in ("velocity", "velocity+torque"):
        path = tmp_path / "axis.toml"
        path.write_text(f"""name = "axis"
[model]
file = "{AXIS.as_posix()}"
[trajectory]
kind = "cycloidal"
axes = ["rz"]
amplitude = 0.5
period = 0.5
[servo]
kp = {KP}
kv = {KV}
feedforward = "{ff}"
[transient]
step = 2.5e-4
output_step = 1e-3
drive = "servo"
""")
        out = tmp_path / f"{ff}.h5"
        run(path, out=out)
        ds = open_results(out, "transient")
        peaks[ff] = np.abs(ds["tracking_error"].values).max()
        if ff == "velocity+torque":
            t, tau = ds["time"].values, ds["actuator_forces"].values[:, 0]
            # cycloid: s_ddot = 2 pi A / T^2 sin(2 pi t / T)
            assert_allclose(tau, J * 2 * np.pi * 0.5 / 0.25 * np.sin(2 * np.pi * t / 0.5), atol=1e-3 * 4 * np.pi * J)
    assert peaks["velocity"] > 0.05
    assert peaks["velocity+torque"] < 1e-6


@pytest.mark.parametrize("feedforward, ki, method", [("none", 5.0, "newmark"), ("velocity", 0.0, "newmark"),
                                                     ("none", 5.0, "generalized-alpha")])
def test_two_inertia_transient_equals_linear_response(feedforward, ki, method):
    """A servo on the motor of a compliant transmission (the motor's coordinate condensed in
    the step): the link's and the motor's angles against the state space's response to the
    ramp, second order in the step under either scheme (3.5e-6 rad at 1 ms, 2.2e-7 at
    0.25 ms, of 0.5 rad)."""
    model = load_model(AXIS, {"k_drive": 500.0})
    s = gains(model, feedforward=feedforward, ki=ki)
    sys = sv.state_space(model, inputs=["reference:motor"], outputs=["pose:rz", "motor:motor"], drives="servo",
                         servo=s)
    errors = []
    for h in (1e-3, 2.5e-4):
        r = simulate(model, model.q_home, np.zeros(model.n_v), 1.0, h, s.drive(ramp), Options(method=method),
                     output_step=0.01)
        assert r.status == "complete", r.message
        linear = control.forced_response(sys, r.t, RATE * r.t).outputs
        errors.append(max(np.abs(linear[0] - r.pose[:, 0]).max(),
                          np.abs(linear[1] - GEAR * r.motor_angles[:, 0]).max() / GEAR))
    assert errors[1] < 5e-7
    assert 10 < errors[0] / errors[1] < 20


@pytest.mark.parametrize("servo, fragment", [
    (None, "[transient] drive = \"servo\" needs a [servo] table"),
    ("kp = 10.0", "missing required key `servo.kv`"),
    ("kp = 10.0\nkv = [1.0, 2.0]", "`kv` must be a number or a list of 1 numbers"),
    ("kp = 10.0\nkv = -1.0", "[servo] kv must be a positive number"),
    ("kp = 10.0\nkv = 1.0\nfeedforward = \"torque\"", "`feedforward` must be one of"),
    ("kp = 10.0\nkv = 1.0\ngain = 1.0", "unknown key `servo.gain`"),
])
def test_scenario_errors(tmp_path, capsys, servo, fragment):
    """A mistake in the servo's scenario ends with one line naming the key, exit code 2, before
    any file is written (the analyses' checks run first)."""
    from sim.app.cli import main

    text = f"""name = "axis"
[model]
file = "{AXIS.as_posix()}"
[transient]
step = 1e-3
duration = 0.1
drive = "servo"
drive_law = {{kind = "constant_rate", rate = 0.5}}
""" + ("" if servo is None else f"[servo]\n{servo}\n")
    path = tmp_path / "a.toml"
    path.write_text(text)
    out = tmp_path / "a.h5"
    code = main(["run", str(path), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert not out.exists()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], err


@pytest.mark.parametrize("inputs, outputs, fragment", [
    ('["motor:nope"]', '["motor:motor"]', "unknown actuator `nope`"),
    ('["motor:motor"]', '["sensor:nope"]', "unknown sensor `nope`"),
])
def test_state_space_names_are_checked_before_any_analysis(tmp_path, capsys, inputs, outputs, fragment):
    """A [state_space] input or output the model does not have is refused with the analyses'
    checks, before anything runs: one line, exit code 2, no file."""
    from sim.app.cli import main

    path = tmp_path / "a.toml"
    path.write_text(f"""name = "axis"
[model]
file = "{AXIS.as_posix()}"
[modes]
count = 1
[state_space]
inputs = {inputs}
outputs = {outputs}
""")
    out = tmp_path / "a.h5"
    code = main(["run", str(path), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and not out.exists(), err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "[state_space]" in lines[0] and fragment in lines[0], err


def test_inverse_dynamics_with_the_rotor(axis):
    """The rigid inverse dynamics of the geared axis on a cycloid: tau = (J_l + n^2 J_m) s_ddot,
    to 1e-9 (the prescribed transient's actuator force includes the rotor likewise)."""
    from sim.solvers.reactions import actuator_forces, inverse_dynamics
    from sim.solvers.motion import rigid_motion
    from sim.solvers.trajectory import from_scenario

    trajectory = from_scenario(dict(kind="cycloidal", axes=["rz"], amplitude=0.5, period=0.5), axis)
    motion = rigid_motion(axis, trajectory, np.linspace(0, 0.5, 11))
    expected = J * motion.actuators_ddot
    assert_allclose(inverse_dynamics(axis, motion).actuator_forces, expected, atol=1e-9 * np.abs(expected).max())
    assert_allclose(actuator_forces(axis, motion), expected, atol=1e-9 * np.abs(expected).max())


def test_plot_draws_bode_and_split(tmp_path):
    """`sim plot` of a servo run: the Bode plot of [state_space] (its magnitude the state
    space's |H| at the stored frequencies) and the transient's dynamic deviation split (the
    servos' share less its static part, ``deviation_static_servo``)."""
    import matplotlib.pyplot as plt
    from sim.app.api import open_results, run
    from sim.app.plots import _panels
    from sim.app.results import read_result

    path = tmp_path / "axis.toml"
    path.write_text(f"""name = "axis"
[model]
file = "{AXIS.as_posix()}"
[servo]
kp = {KP}
kv = {KV}
feedforward = "none"
[transient]
step = 1e-3
duration = 0.2
drive = "servo"
drive_law = {{kind = "constant_rate", rate = 0.5}}
[state_space]
inputs = ["motor:motor"]
outputs = ["pose:rz"]
drives = "servo"
f_min = 0.1
f_max = 10.0
points = 50
""")
    out = tmp_path / "axis.h5"
    run(path, out=out)
    ds = open_results(out, "state_space")
    f = ds["frequency"].values
    w = 2 * np.pi * f
    # motor torque (motor side) to the link angle: n / (J (iw)^2 + kv iw + kv kp)
    exact = GEAR / np.abs(-J * w**2 + 1j * KV * w + KV * KP)
    assert_allclose(ds["magnitude"].values[:, 0, 0], exact, rtol=1e-9)
    panels = dict(_panels(read_result(out)))
    for title in ("state_space: frequency response (Bode)", "state_space: phase",
                  "transient: dynamic deviation, servo and structure shares"):
        fig, ax = plt.subplots()
        panels[title](ax)
        assert ax.lines, title
        lines = {line.get_label(): np.asarray(line.get_ydata()) for line in ax.lines}
        plt.close(fig)
    t = open_results(out, "transient")
    import json

    import h5py
    with h5py.File(out, "r") as f:      # no gravity: no static deflection, no dynamic peak apart
        summary = json.loads(f["transient"].attrs["summary"])
    assert "peak_deviation_rz" in summary and "peak_dynamic_deviation_rz" not in summary
    servo = np.linalg.norm(t["deviation_servo"].values - t["deviation_static_servo"].values, axis=1)
    assert servo.max() > 0
    assert_allclose(lines["servo"] * servo.max() / lines["servo"].max(), servo, rtol=1e-12, atol=1e-12 * servo.max())


@pytest.mark.parametrize("k_drive", [None, 500.0])
def test_energy_record_holds_the_rotors(k_drive):
    """A constant torque from rest, no gravity: the recorded energy equals the work done,
    ``tau (s - s_0)`` on the joint (a rigid transmission: ``(J_l + n^2 J_m) s_dot^2 / 2``) or
    ``tau (theta - theta_0)`` on the motor behind a compliant one (link, motor and the
    transmission's spring), to 1e-6 -- Newmark's average acceleration keeps a linear system's
    energy; without the rotors the record missed 31 % of it."""
    from sim.solvers.simulate import Drive

    model = load_model(AXIS, {"k_drive": k_drive})
    tau = 0.5
    drive = Drive("torque", feedforward=lambda t: np.full(np.shape(t) + (1,), tau) if np.ndim(t) else np.array([tau]),
                  transmission=k_drive is not None)
    r = simulate(model, model.q_home, np.zeros(model.n_v), 0.5, 1e-3, drive, output_step=0.05)
    assert r.status == "complete", r.message
    moved = (r.motor_angles[:, 0] - r.motor_angles[0, 0]) if k_drive else (r.pose[:, 0] - r.pose[0, 0])
    assert moved[-1] > 0.1
    assert_allclose(r.energy.sum(axis=1) - r.energy[0].sum(), tau * moved, rtol=1e-6, atol=1e-9)


def test_servo_share_on_a_deformed_planar_loop(tmp_path):
    """The five-bar (a planar loop of revolute joints: three of its joint rows are redundant)
    on servos, sagging out of its plane under gravity, on a fast circle: the transient's
    servo share of the deviation is the rigid robot's pose change for the sampled lag (the robot
    assembled at the actuators' values ``s`` against at their references), to 1 % of the peak;
    the structure's share, its 0.2 µm tubes, below 1 %.  The gain taken at the deformed
    configuration's numerical rank counted the loop's no longer exactly redundant rows and
    locked its in-plane motion: a servo share of 2.5 µm where the lag moved it 142 µm."""
    import h5py

    from sim.app.api import run
    from sim.model.assembly import assemble, solve_pose
    from sim.model.constraints import actuator_values
    from sim.model.evaluator import Kinematics
    from sim.model.kinematics import pose

    five = HERE.parent / "models" / "five_bar.py"
    path = tmp_path / "five.toml"
    path.write_text(f"""name = "five"
[model]
file = "{five.as_posix()}"
parameters = {{ elements_per_link = 2 }}
[trajectory]
kind = "circle"
center = [0.0, 0.35, 0.0]
radius = 0.03
omega = 12.566370614359172
duration = 0.2
ramp = 0.1
[servo]
kp = 80.0
kv = 5.0
feedforward = "velocity"
[transient]
step = 2e-4
drive = "servo"
""")
    out = tmp_path / "five.h5"
    run(path, out=out)
    model = load_model(five, {"elements_per_link": 2})
    ev = Kinematics(model)
    with h5py.File(out, "r") as f:
        g = f["transient"]
        t, share, structure = g["time"][...], g["deviation_servo"][...], g["deviation_structure"][...]
        lag, pose_rigid, static = g["tracking_error"][...], g["pose_rigid"][...], g["deviation_static"][...]
    peak = np.abs(share[:, :2]).max()
    assert peak > 5e-5 and np.abs(static[:, 2]).max() > 1e-5          # a lag of tens of µm; the sag
    for j in np.searchsorted(t, [0.08, 0.14, 0.2]):
        q_r = solve_pose(model, pose_rigid[j])
        q_s = assemble(model, q_r, ev, targets=actuator_values(model, q_r)[0] - lag[j])
        assert_allclose(share[j, :2], (pose(model, q_s) - pose(model, q_r))[:2], atol=0.01 * peak)
    assert np.abs(structure[:, :2]).max() < 0.01 * peak


def test_response_by_modes_is_the_direct_solve(rrru3):
    """:func:`sim.solvers.closed_loop.response` (the eigen-decomposition, one O(n^3) step) is
    the solve of ``(s I - A)`` at every frequency within 1e-9 of the largest response, on the
    3-RRRU closed by its servos (integral states on); and a defective ``A`` (a double
    integrator's Jordan block, whose eigenvectors are parallel) falls back to the solves."""
    s = sv.Servo.from_table(dict(kp=100.0, kv=60.0, ki=5.0), rrru3)
    A, B, C, D = sv.matrices(rrru3, rrru3.q_home, ["reference:theta_1", "motor:theta_2"],
                             ["pose:x", "pose:z", "motor:theta_1"], s)[:4]
    points = 2j * np.pi * np.geomspace(0.5, 500.0, 60)
    H = sv.response(A, B, C, D, points)
    direct = np.array([C @ np.linalg.solve(x * np.eye(A.shape[0]) - A, B) + D for x in points])
    for j in range(H.shape[1]):
        for k in range(H.shape[2]):
            assert np.abs(H[:, j, k] - direct[:, j, k]).max() < 1e-9 * np.abs(direct[:, j, k]).max()
    A2, B2, C2, D2 = np.array([[0.0, 1.0], [0.0, 0.0]]), np.array([[0.0], [1.0]]), np.array([[1.0, 0.0]]), np.zeros((1, 1))
    points = 2j * np.pi * np.array([0.1, 1.0, 10.0])
    assert_allclose(sv.response(A2, B2, C2, D2, points)[:, 0, 0], 1.0 / points**2, rtol=1e-12)


def test_free_motions_are_not_closed_loop_modes():
    """The 6-PSS with spherical joints at both ends of its struts: each strut spins freely
    about its axis, which no servo holds.  Those six double zero eigenvalues, which round-off
    splits into pairs of 0.0003-0.0005 Hz, are left out: the closed-loop modes and real roots
    are the same robot's with the spins locked (universal joints at the sliders) within 1e-6;
    and along a path ``[frequencies] drives = "servo"`` reports none of them."""
    import sim
    from sim.analyses.servo import closed_modes

    found = []
    for joint in ("spherical", "universal"):
        model = load_model(HERE.parent / "models" / "pss6.py", {"slider_joint": joint, "compliant_drives": False,
                                                                "elements_per_strut": 2})
        servo = sv.Servo.from_table(dict(kp=100.0, kv=2000.0, ki=5.0), model)
        found.append((model, servo, sv.free_motions(model, model.q_home), closed_modes(model, model.q_home, servo)))
    (model, servo, free, spinning), (_, _, locked_spins, locked) = found
    assert free == 6 and locked_spins == 0
    assert_allclose(spinning.eigenvalues[:12], locked.eigenvalues[:12], rtol=1e-6)
    assert_allclose(spinning.real_roots, locked.real_roots, rtol=1e-6)
    assert spinning.frequencies_hz[0] > 4.0
    path = dict(kind="cycloidal", axes=["z"], amplitude=0.05, period=0.5, pose=[0.0, 0.0, 1.744, 0.0, 0.0, 0.0])
    r = sim.frequencies(model, path, servo=dict(kp=100.0, kv=2000.0, ki=5.0), drives="servo", count=4, samples=3)
    assert np.nanmin(r.servo_frequencies) > 4.0
