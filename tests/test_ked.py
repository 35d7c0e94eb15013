"""KED: exact interval step (closed form vs matrix exponential) and convergence in the intervals."""
import sim  # noqa: F401  (single-threaded BLAS before numpy)
import numpy as np
import pytest
import scipy.linalg

from sim.solvers.frames import Frame
from sim.solvers.modal_stepping import ModalStepper, integrate_frames, ked, ramp_response
from sim.model.evaluator import Evaluator
from sim.model.loader import load_model
from sim.solvers.trajectory import circle

import oracles
from conftest import MODELS


def expm_ramp(omega, zeta, dt, eta, eta_dot, a, b):
    """Independent formula: the SDOF with the ramp load as augmented linear state, by expm."""
    A = np.zeros((4, 4))
    A[0, 1] = 1.0
    A[1, :3] = -omega**2, -2 * zeta * omega, 1.0
    A[2, 3] = (b - a) / dt
    x = scipy.linalg.expm(A * dt) @ np.array([eta, eta_dot, a, 1.0])
    return x[0], x[1]


@pytest.mark.parametrize("zeta", [0.0, 0.001, 0.05, 0.5])
def test_ramp_response_matches_matrix_exponential(zeta):
    rng = np.random.default_rng(4)
    omega = np.array([0.5, 7.0, 60.0, 900.0])
    dt = 0.013
    eta, eta_dot, a, b = rng.normal(size=(4, 4))
    e1, ed1 = ramp_response(omega, zeta, dt, eta, eta_dot, a, b)
    for r in range(4):
        ref, ref_dot = expm_ramp(omega[r], zeta, dt, eta[r], eta_dot[r], a[r], b[r])
        assert abs(e1[r] - ref) < 1e-10 * max(1.0, abs(ref))
        assert abs(ed1[r] - ref_dot) < 1e-10 * max(1.0, abs(ref_dot))


def test_one_interval_reproduces_constant_system():
    """Constant M, K, linear load: one KED interval = the closed-form MDOF response."""
    rng = np.random.default_rng(7)
    n = 5
    L = rng.normal(size=(n, n))
    M = L @ L.T + n * np.eye(n)
    G = rng.normal(size=(n, n))
    K = 100 * (G @ G.T + n * np.eye(n))
    lam, Phi = scipy.linalg.eigh(K, M)
    omega = np.sqrt(lam)
    F0, F1 = rng.normal(size=(2, n))
    u0, ud0 = 1e-3 * rng.normal(size=(2, n))
    dt, zeta = 0.02, 0.0
    # Reference: the physical first-order system with the ramp, by expm (zeta = 0: no damping).
    A = np.zeros((2 * n + 2, 2 * n + 2))
    A[:n, n:2 * n] = np.eye(n)
    Minv = np.linalg.inv(M)
    A[n:2 * n, :n] = -Minv @ K
    A[n:2 * n, 2 * n] = Minv @ F0
    A[n:2 * n, 2 * n + 1] = Minv @ (F1 - F0) / dt
    A[2 * n, 2 * n] = 0.0
    A[2 * n + 1, 2 * n] = 0.0
    # State (u, u_dot, 1, t): d(1)/dt = 0, dt/dt = 1.
    A[2 * n + 1, 2 * n] = 1.0
    x = scipy.linalg.expm(A * dt) @ np.concatenate([u0, ud0, [1.0, 0.0]])
    stepper = ModalStepper(zeta, u0, ud0)
    fr = Frame(load=F0, omega=omega, shapes=Phi, mass_shapes=M @ Phi, pose_jacobian=np.eye(n),
               static_load=np.linalg.solve(K, F0), static_rest=np.zeros(n))
    stepper.step(fr, F1, dt)
    assert np.abs(stepper.u - x[:n]).max() < 1e-10 * np.abs(x[:n]).max()
    assert np.abs(stepper.u_dot - x[n:2 * n]).max() < 1e-10 * np.abs(x[n:2 * n]).max()


def test_constant_frames_split_is_exact():
    """Cutting one interval into many with the same frozen modes changes nothing (linear load)."""
    n = 3
    M, K = np.diag([1.0, 2.0, 3.0]), np.diag([400.0, 900.0, 2500.0])
    lam, Phi = scipy.linalg.eigh(K, M)
    F = lambda t: np.array([1.0, -2.0, 0.5]) * (1 + 3 * t)  # noqa: E731
    results = []
    for parts in (1, 8):
        t = np.linspace(0, 0.1, parts + 1)
        frames = [Frame(F(ti), np.sqrt(lam), Phi, M @ Phi, np.eye(n), np.linalg.solve(K, F(ti)), np.zeros(n))
                  for ti in t]
        results.append(integrate_frames(t, frames, np.zeros((parts + 1, n)), 0.02).displacement[-1])
    assert np.abs(results[0] - results[1]).max() < 1e-12


def test_ked_converges_with_intervals():
    """Time-varying system (3-RRRU, short arc): successive refinements' differences shrink."""
    model = load_model(MODELS / "rrru3.py", {"elements_per_link": 2})
    trajectory = circle([0.0, 0.0, -0.7], 0.1, 2.0, 0.4)
    peaks = []
    finals = []
    for n in (10, 20, 40, 80):
        res = ked(model, trajectory, n, 3, 0.01)
        finals.append(res.deviation[-1])
        peaks.append(np.abs(res.deviation).max())
    d = [np.abs(finals[i + 1] - finals[i]).max() for i in range(3)]
    assert d[2] < 0.5 * d[1] < 0.25 * d[0]
    assert peaks[-1] > 0


SHORT_ARC = circle([0.0, 0.0, -0.7], 0.1, 2.0, 0.4)


@pytest.fixture(scope="module")
def rrru3_coarse():
    return load_model(MODELS / "rrru3.py", {"elements_per_link": 2})


def _assert_same_frames(a, b, label):
    assert len(a) == len(b), label
    for k, (fa, fb) in enumerate(zip(a, b)):
        for field in ("load", "omega", "shapes", "mass_shapes", "pose_jacobian"):
            assert np.array_equal(getattr(fa, field), getattr(fb, field)), f"{label}: frame {k}, {field}"


def test_frames_shared_with_workers_are_the_serial_frames(rrru3_coarse, monkeypatch):
    """Chunks computed by a worker thread, chunks taken back, and the tail: the same numbers, in order."""
    import sim.solvers.frames
    from sim.solvers.frames import frames_along, motion_and_frames
    from sim.solvers.motion import rigid_motion

    monkeypatch.setattr(sim.solvers.frames, "FRAME_CHUNK", 4)      # 41 samples: ten tasks and a tail of one
    assert sim.solvers.frames._workers(2, 41) == 1, "the shared path is the one under test"
    t = np.linspace(0.0, SHORT_ARC.duration, 41)
    motion = rigid_motion(rrru3_coarse, SHORT_ARC, t)
    serial = frames_along(rrru3_coarse, motion, 3, workers=1)
    _assert_same_frames(frames_along(rrru3_coarse, motion, 3, workers=2), serial, "frames_along, 2 threads")
    motion2, frames = motion_and_frames(rrru3_coarse, SHORT_ARC, t, 3, workers=2)
    assert np.array_equal(motion2.q, motion.q) and np.array_equal(motion2.a, motion.a)
    _assert_same_frames(frames, serial, "motion and frames overlapped")


@pytest.mark.parametrize("workers", [0, 2])
def test_streamed_frames_and_their_ked_are_the_gathered_ones(rrru3_coarse, monkeypatch, workers):
    """Frames handed over chunk by chunk (``take``: KED's path, never all held) arrive in
    time order, each chunk once, and are the frames gathered at once bitwise, signs included;
    the modal superposition fed with them chunk by chunk is the one over all the frames at
    once, bitwise, samples between the interval ends included; the pool holds no record of all
    the frames."""
    import sim.solvers.frames
    from sim.solvers.frames import FIELDS, motion_and_frames
    from sim.solvers.modal_stepping import Superposition

    monkeypatch.setattr(sim.solvers.frames, "FRAME_CHUNK", 4)      # 41 samples: ten tasks and a tail of one
    t = np.linspace(0.0, SHORT_ARC.duration, 41)
    motion, whole = motion_and_frames(rrru3_coarse, SHORT_ARC, t, 3, workers=workers)
    got, held = [], []
    steps = Superposition(t, start="static")
    add = sim.solvers.frames.FramePool.add

    def counted(pool, *state):
        add(pool, *state)
        held.append(pool.frames)

    monkeypatch.setattr(sim.solvers.frames.FramePool, "add", counted)

    def take(start, frames, q):
        assert np.array_equal(q, motion.q[start:start + len(frames)])
        got.append((start, frames))
        steps.add(frames, 0.02)

    motion2, none = motion_and_frames(rrru3_coarse, SHORT_ARC, t, 3, workers=workers, take=take)
    assert none is None and np.array_equal(motion2.q, motion.q)
    assert [start for start, _ in got] == list(range(0, 41, 4))
    for name in FIELDS:
        assert np.array_equal(np.concatenate([getattr(f, name) for _, f in got]), getattr(whole, name)), name
    assert all(frames is None for frames in held)     # no record of all the frames
    gathered = integrate_frames(t, whole, motion.pose, 0.02, start="static", parts=3)
    streamed = steps.result(motion.pose, parts=3)
    for name in ("deviation", "deviation_static", "modal_coordinates", "modal_velocities", "displacement",
                 "frequencies"):
        assert np.array_equal(getattr(streamed, name), getattr(gathered, name)), name
    for name in ("time", "deviation", "deviation_static", "pose"):
        assert np.array_equal(getattr(streamed.samples, name), getattr(gathered.samples, name)), name


@pytest.mark.parametrize("workers", [0, 2])
def test_lean_motion_holds_its_reference_coordinates_only(rrru3_coarse, monkeypatch, workers):
    """``keep=False`` (the locked KED's motion): each sample handed on is the kept motion's,
    bitwise, in arrays of its own (the compiled loop's window is reused); the motion keeps the
    reference coordinates, whose rows made full are the kept configurations bitwise, and no
    velocities or accelerations.  With the states coming faster than their frames, the pool
    holds ``BACKLOG`` chunks of them at most and computes the rest here: the frames streamed
    are still the gathered ones, bitwise."""
    import sim.solvers.frames
    from sim.solvers.frames import FIELDS, motion_and_frames
    from sim.solvers.motion import rigid_motion

    t = np.linspace(0.0, SHORT_ARC.duration, 41)       # three windows of the loop (16 samples)
    full = rigid_motion(rrru3_coarse, SHORT_ARC, t, condition=False)
    got = []
    lean = rigid_motion(rrru3_coarse, SHORT_ARC, t, condition=False, keep=False,
                        on_sample=lambda *state: got.append(state))
    assert lean.v is None and lean.a is None
    assert lean.q.reference.shape == (41, 7 * len(rrru3_coarse.bodies))
    assert np.array_equal(lean.q[:], full.q) and np.array_equal(lean.q[::7], full.q[::7])
    assert np.array_equal(lean.q[17], full.q[17]) and np.array_equal(lean.q[np.array([3, 40])], full.q[[3, 40]])
    for name in ("actuators", "actuators_dot", "actuators_ddot", "pose"):
        assert np.array_equal(getattr(lean, name), getattr(full, name)), name
    assert len(got) == 41
    for k, (q, v, a, s) in enumerate(got):
        assert np.array_equal(q, full.q[k]) and np.array_equal(v, full.v[k]) and np.array_equal(a, full.a[k])
    assert not any(np.shares_memory(got[k][0], got[k + 16][0]) for k in range(25))
    with pytest.raises(ValueError, match="on_sample"):
        rigid_motion(rrru3_coarse, SHORT_ARC, t, keep=False)

    monkeypatch.setattr(sim.solvers.frames, "FRAME_CHUNK", 2)
    monkeypatch.setattr(sim.solvers.frames, "BACKLOG", 1)
    _, whole = motion_and_frames(rrru3_coarse, SHORT_ARC, t, 3, workers=workers)
    pending, chunks = [], []
    add = sim.solvers.frames.FramePool.add

    def counted(pool, *state):
        add(pool, *state)
        pending.append(sum(task[3] is None for task in pool.tasks))

    monkeypatch.setattr(sim.solvers.frames.FramePool, "add", counted)
    motion, _ = motion_and_frames(rrru3_coarse, SHORT_ARC, t, 3, workers=workers, keep=False,
                                  take=lambda start, frames, q: chunks.append(frames))
    assert max(pending) <= 2, pending       # BACKLOG, and the chunk just made
    assert motion.v is None and np.array_equal(motion.q[:], full.q)
    for name in FIELDS:
        assert np.array_equal(np.concatenate([getattr(f, name) for f in chunks]), getattr(whole, name)), name


def _assert_motion_is_the_oracle(motion, ref, rtol):
    """States of a rigid motion against the oracle's (tests/oracles.py): both stop Newton
    below the 1e-11 residual tolerance, so they agree to that order, not to round-off."""
    assert np.abs(motion.q - ref["q"]).max() < 1e-10
    for field in ("v", "a", "actuators_dot", "actuators_ddot"):
        scale = max(np.abs(ref[field]).max(), 1e-300)
        assert np.abs(getattr(motion, field) - ref[field]).max() <= rtol * scale, field
    wrapped = (motion.actuators - ref["actuators"] + np.pi) % (2 * np.pi) - np.pi
    assert np.abs(wrapped).max() < 1e-10


def test_rigid_motion_corrector_agrees_with_line_search_newton(rrru3_coarse, monkeypatch):
    """The compiled corrector (plain Newton from the third-order predictor) lands on the
    configurations the oracle's line-search Newton finds from the last sample, with the same
    rates and condition numbers, and is the path taken on a smooth trajectory."""
    import sim.model.assembly
    import sim.solvers.motion
    from sim.solvers.motion import rigid_motion

    calls = []
    monkeypatch.setattr(sim.solvers.motion, "assemble", lambda *a, **k: calls.append(1) or sim.model.assembly.assemble(*a, **k))
    t = np.linspace(0.0, SHORT_ARC.duration, 41)
    fast = rigid_motion(rrru3_coarse, SHORT_ARC, t)
    assert not calls, "the corrector fell back to the line-search Newton"
    ref = oracles.rigid_motion(rrru3_coarse, SHORT_ARC, t)
    _assert_motion_is_the_oracle(fast, ref, 1e-9)
    np.testing.assert_allclose(fast.condition, ref["condition"], rtol=1e-9)


def test_rigid_motion_after_a_line_search_is_the_same_motion(rrru3_coarse, monkeypatch):
    """Samples the corrector gives up on (here: every one, no corrector step allowed) are
    placed by the line-search Newton and finished by the same compiled step: the oracle's
    motion again, and the same as the corrector's to the Newton tolerance."""
    import sim.model.assembly
    import sim.solvers.motion
    from sim.solvers.motion import rigid_motion

    t = np.linspace(0.0, SHORT_ARC.duration, 41)
    fast = rigid_motion(rrru3_coarse, SHORT_ARC, t)
    calls = []
    compiled = sim.solvers.motion._segment

    def refusing(k0, k1, targets, state, predicted, loop, check, carry, out):
        if predicted or k0 == k1:
            return compiled(k0, k1, targets, state, predicted, loop, check, carry, out)
        out.q[k0] = state[0]     # the best configuration so far, the last sample's
        return k0

    monkeypatch.setattr(sim.solvers.motion, "assemble", lambda *a, **k: calls.append(1) or sim.model.assembly.assemble(*a, **k))
    monkeypatch.setattr(sim.solvers.motion, "_segment", refusing)
    robust = rigid_motion(rrru3_coarse, SHORT_ARC, t)
    assert len(calls) == t.size - 1
    _assert_motion_is_the_oracle(robust, oracles.rigid_motion(rrru3_coarse, SHORT_ARC, t), 1e-9)
    assert np.abs(fast.q - robust.q).max() < 1e-10
    np.testing.assert_allclose(robust.condition, fast.condition, rtol=1e-9)


def count_segments(monkeypatch):
    """Record ``(first, end)`` of every call of the compiled sample loop; returns the list and
    the loop itself."""
    import sim.solvers.motion
    segments, compiled_segment = [], sim.solvers.motion._segment

    def counted(*args):
        end = compiled_segment(*args)
        segments.append((args[0], end))
        return end

    monkeypatch.setattr(sim.solvers.motion, "_segment", counted)
    return segments, compiled_segment


def test_compiled_rigid_motion_is_the_oracle(rrru3_coarse, monkeypatch):
    """The compiled sample loop (sim.solvers.motion._segment) takes every sample, the first
    included, and gives the oracle's states and condition numbers; without condition numbers,
    the same states and NaN."""
    import sim.solvers.motion
    from sim.solvers.motion import rigid_motion

    t = np.linspace(0.0, SHORT_ARC.duration, 41)
    segments, compiled_segment = count_segments(monkeypatch)
    fast = rigid_motion(rrru3_coarse, SHORT_ARC, t)
    assert sum(end - k0 for k0, end in segments) == t.size, "the compiled sample loop did not take every sample"
    monkeypatch.setattr(sim.solvers.motion, "_segment", compiled_segment)
    quick = rigid_motion(rrru3_coarse, SHORT_ARC, t, condition=False)
    _assert_motion_is_the_oracle(fast, oracles.rigid_motion(rrru3_coarse, SHORT_ARC, t), 1e-9)
    for field in ("q", "v", "a", "actuators", "actuators_dot", "actuators_ddot"):
        assert np.array_equal(getattr(quick, field), getattr(fast, field)), field
    np.testing.assert_allclose(fast.condition, oracles.rigid_motion(rrru3_coarse, SHORT_ARC, t)["condition"],
                               rtol=1e-9)
    assert np.isnan(quick.condition).all()


def test_rigid_motion_stops_where_the_oracle_does(rrru3_coarse):
    """A circle through the workspace boundary: the compiled loop hands the failing sample to
    the line-search Newton, which names the time, with or without condition numbers; the
    oracle cannot reach the same sample."""
    from sim.errors import SimError
    from sim.model.assembly import AssemblyError
    from sim.solvers.motion import rigid_motion

    arc = circle([-0.3, 0.0, -0.7], 0.6, 2.0, 1.6)
    t = np.linspace(0.0, 1.6, 161)
    messages = []
    for condition in (True, False):
        with pytest.raises(SimError) as info:
            rigid_motion(rrru3_coarse, arc, t, condition=condition)
        messages.append(str(info.value))
    assert "leaves the workspace at t = 0.81 s" in messages[0]
    assert messages[1] == messages[0]
    with pytest.raises(AssemblyError, match="sample 81:"):
        oracles.rigid_motion(rrru3_coarse, arc, t)


def test_singular_instant_is_named_with_its_condition_number():
    """The two-link arm driven out to its full reach (stretched: a singular inverse
    kinematics) stops at that instant with its condition number, above the limit, with or
    without condition numbers along the way; a hair short of it, the motion goes through."""
    import re

    from sim.errors import SimError
    from sim.model.assembly import SINGULAR_RATIO
    from sim.solvers.motion import rigid_motion
    from sim.solvers.trajectory import polynomial

    arm = load_model(MODELS.parent / "tests" / "arm_model.py")
    u = np.array([0.45, -0.2]) / np.hypot(0.45, -0.2)
    t = np.linspace(0.0, 0.2, 21)
    for condition in (True, False):
        with pytest.raises(SimError, match=r"singular configuration at t = 0.2 s \(condition number") as info:
            rigid_motion(arm, polynomial(0.5 * u, 0.65 * u, 0.2), t, condition=condition)
        assert float(re.search(r"condition number ([0-9.e+]+)", str(info.value)).group(1)) >= 1 / SINGULAR_RATIO
    short = rigid_motion(arm, polynomial(0.5 * u, 0.6499 * u, 0.2), t)
    assert 1e2 < short.condition[-1] < 1 / SINGULAR_RATIO


def test_condition_estimate_brackets_the_condition_number(rrru3_coarse):
    """The singular guard's estimate (power and inverse iteration from the previous sample's
    vectors) is a lower bound within the margin of the exact sigma_1 / sigma_n, and closes in
    on it along a motion."""
    from sim.model.assembly import residual
    from sim.linalg import flush
    from sim.solvers.motion import ESTIMATE_MARGIN, _condition_estimate, _factor, rigid_motion

    t = np.linspace(0.0, SHORT_ARC.duration, 21)
    motion = rigid_motion(rrru3_coarse, SHORT_ARC, t)
    ev = Evaluator(rrru3_coarse)
    n = len(rrru3_coarse.v_rigid)
    u = np.ones((2, n)) / np.sqrt(n)
    ratios = []
    for q, x, cond in zip(motion.q, motion.pose, motion.condition):
        A = flush(residual(rrru3_coarse, q, None, x, ev)[1])
        F, ok = _factor(A)
        assert ok
        ratios.append(_condition_estimate(F, A, u) / cond)
    ratios = np.array(ratios)
    assert np.all(ratios <= 1 + 1e-9) and np.all(ratios * ESTIMATE_MARGIN > 1)
    assert ratios[0] > 0.5 and ratios[-1] > 0.99, ratios   # within 1 % once warm


def test_tracker_from_a_seed_is_the_dense_solve(rrru3_coarse):
    """A tracker reset to the Ritz vectors of another configuration (its seed) gives the dense
    solve's modes within SEED_ITER sweeps, and does not extrapolate from the seed."""
    import sim.solvers.subspace
    from sim.solvers.modal import modes
    from sim.solvers.motion import rigid_motion
    from sim.solvers.subspace import SEED_ITER, Tracker

    t = np.linspace(0.0, SHORT_ARC.duration, 9)
    motion = rigid_motion(rrru3_coarse, SHORT_ARC, t, condition=False)
    ev = Evaluator(rrru3_coarse)
    states = [ev.evaluate(q, v, targets=s) for q, v, s in zip(motion.q, motion.v, motion.actuators)]
    tracker = Tracker(rrru3_coarse, 4)
    tracker.modes(states[0].M, states[0].J)
    tracker.seed = tracker.X
    tracker.reset()
    for k in (8, 7):
        omega, shapes, mass_shapes = tracker.modes(states[k].M, states[k].J)
        ref = modes(rrru3_coarse, motion.q[k], 4, M=states[k].M, free=False, energies=False, J=states[k].J,
                    J_s=states[k].J_s)
        np.testing.assert_allclose(omega, ref.omega, rtol=1e-10)
        P, P_ref = shapes @ mass_shapes.T, ref.shapes @ (states[k].M @ ref.shapes).T
        assert np.abs(P - P_ref).max() <= 10 * sim.solvers.subspace.RESIDUAL_TOL * np.abs(P_ref).max()
    assert 0 < tracker.sweeps[1] <= SEED_ITER, tracker.sweeps
    assert tracker.X_prev.shape[1] > 0 and tracker.X_prev is not tracker.seed


@pytest.mark.parametrize("name, params", [("rrru3", {"elements_per_link": 2}), ("flexible_arm", {}),
                                          ("slider_crank", {}), ("rrrt3", {})])
def test_free_motion_check_is_the_eigensolve(name, params):
    """The shortcut of free_motions (J_r regular, K_ee positive definite) agrees with the
    rigid-body count of the dense modes."""
    from sim.solvers.frames import free_motions
    from sim.solvers.modal import modes

    model = load_model(MODELS / f"{name}.py", params)
    assert free_motions(model, model.q_home, Evaluator(model)) == modes(model, model.q_home, count=1).rigid_count


def test_sim_run_loads_the_kernels_before_the_clocks(tmp_path):
    """`sim run` records the kernels' loading apart (root attribute), and the KED group its
    own wall time and the same response as the library call."""
    import h5py
    from sim.app.cli import main

    text = (MODELS.parent / "scenarios/rrru3_circle.toml").read_text()
    text = text.replace("../models/rrru3.py", str(MODELS / "rrru3.py")).replace("elements_per_link = 4",
                                                                                 "elements_per_link = 2")
    for table in ("[transient]", "[inverse_dynamics]", "[frequencies]"):
        text = text.replace(table, table.replace("[", "[x_"))
    text = "\n".join(line for line in text.splitlines() if not line.startswith("[x_")
                     and not line.split("=")[0].strip() in ("step", "output_step", "samples", "frame", "count", "start"))
    text = text.replace("duration = 5.0", "duration = 0.4").replace("intervals = 512", "intervals = 40")
    scenario = tmp_path / "ked.toml"
    scenario.write_text(text)
    out = tmp_path / "ked.h5"
    assert main(["run", str(scenario), "--out", str(out)]) == 0
    with h5py.File(out) as f:
        assert list(f) == ["ked"]
        assert f.attrs["kernels_load_time_s"] >= 0
        assert f["ked"].attrs["wall_time_s"] > 0
        # The interval ends (the output has instants between them too)
        deviation = f["ked/deviation"][()][::f["ked"].attrs["samples_per_interval"]]
    model = load_model(MODELS / "rrru3.py", {"elements_per_link": 2})
    ref = ked(model, circle([0.0, 0.0, -0.7], 0.1, 2.0, 0.4), 40, 6, 0.001, start="static")
    assert np.abs(deviation - ref.deviation).max() <= 1e-12 * np.abs(ref.deviation).max()


@pytest.mark.parametrize("name, params, path", [
    ("navaro", {}, "circle"),
    ("pss6", {"strut_radius": 0.025, "screw_radius": 0.024977, "slider_joint": "spherical"}, "cycloidal"),
], ids=["navaro-angle", "pss6-redundant"])
def test_compiled_rigid_motion_covers_angles_and_redundant_constraints(monkeypatch, name, params, path):
    """NaVARo (end-effector angle ``rz``) and the 6-PSS with spherical slider joints (all six
    coordinates, the struts' free spins: minimum-norm solutions): the compiled sample loop
    computes every sample and agrees with the Python loop."""
    from sim.model.loader import load_model
    from sim.solvers.motion import rigid_motion
    from sim.solvers.trajectory import cycloidal

    model = load_model(MODELS / f"{name}.py", params)
    if path == "circle":
        law, t = circle(model.pose_home, 0.02, 2 * np.pi, 0.5), np.linspace(0.0, 0.5, 41)
    else:
        law, t = cycloidal(model.pose_home, range(6), 0.05, 0.4), np.linspace(0.0, 0.4, 41)
    segments, compiled_segment = count_segments(monkeypatch)
    fast = rigid_motion(model, law, t)
    assert sum(end - k0 for k0, end in segments) == t.size, "the compiled loop left samples to Python"
    ref = oracles.rigid_motion(model, law, t)
    _assert_motion_is_the_oracle(fast, ref, 1e-8)
    np.testing.assert_allclose(fast.condition, ref["condition"], rtol=1e-8)


def _constant_frames(loads, omega, J, zeta=None):
    """Frames of a fixed structure (M = I, K = diag(omega^2), the lowest len(omega) - 1 modes
    kept) under the loads (n + 1, n_v): what varies between frames is the load only."""
    from sim.solvers.frames import Frames
    n1, n_v = loads.shape
    r = n_v - 1 if n_v > 1 else 1
    shapes = np.eye(n_v)[:, :r]
    return Frames(load=loads, omega=np.tile(omega[:r], (n1, 1)), shapes=np.tile(shapes, (n1, 1, 1)),
                  mass_shapes=np.tile(shapes, (n1, 1, 1)), pose_jacobian=np.tile(J, (n1, 1, 1)),
                  static_load=loads / omega**2, static_rest=np.zeros_like(loads))


def test_ked_samples_between_interval_ends_are_the_exact_response():
    """Free vibration of one mode (no load, u0 = 0.01, J = 2): the samples between the
    interval ends follow 0.02 cos(omega t) to round-off, and the interval ends are the
    frames' own values."""
    from sim.solvers.modal_stepping import integrate_frames
    omega = np.array([2 * np.pi * 7.0])
    time = np.linspace(0.0, 0.5, 6)                        # 0.1 s intervals: 0.7 periods each
    frames = _constant_frames(np.zeros((6, 1)), omega, np.array([[2.0]]))
    result = integrate_frames(time, frames, np.zeros((6, 1)), 0.0, u0=np.array([0.01]), parts=16)
    s = result.samples
    assert s.time.shape == (5 * 16 + 1,) and np.allclose(np.diff(s.time), 0.1 / 16)
    np.testing.assert_allclose(s.deviation[:, 0], 0.02 * np.cos(omega[0] * s.time), rtol=0, atol=1e-15)
    np.testing.assert_array_equal(s.deviation[::16], result.deviation)


def test_ked_samples_equal_a_run_on_the_fine_grid():
    """A fixed structure with truncated modes (static correction on) under loads that jump from
    frame to frame: the samples of 5 instants per interval equal a KED on the 5x finer grid
    whose loads go linearly between the coarse ones (the ramp the intervals assume)."""
    from sim.solvers.modal_stepping import integrate_frames
    rng = np.random.default_rng(3)
    omega = 2 * np.pi * np.array([5.0, 11.0, 40.0])
    J = rng.standard_normal((2, 3))
    time = np.linspace(0.0, 0.4, 9)
    loads = rng.standard_normal((9, 3))
    zeta = np.array([0.02, 0.05])
    coarse = integrate_frames(time, _constant_frames(loads, omega, J), np.zeros((9, 2)), zeta, parts=5)
    fine_time = coarse.samples.time
    fine_loads = np.column_stack([np.interp(fine_time, time, c) for c in loads.T])
    fine = integrate_frames(fine_time, _constant_frames(fine_loads, omega, J), np.zeros((fine_time.size, 2)), zeta)
    np.testing.assert_allclose(coarse.samples.deviation, fine.deviation, rtol=0,
                               atol=1e-12 * np.abs(fine.deviation).max())
    assert np.abs(fine.deviation).max() > 1e-3
