"""KED's compiled frames (sim.solvers.frames._frame_loop) on every kind of model, against the dense
modal analysis (tests/oracles.frame): lumped springs with no joint at all, compliant drives,
free motions, geometric stiffening, redundant rows, and the constant bodies' stiffness."""
import sim  # noqa: F401  (single-threaded BLAS before numpy)
from types import SimpleNamespace

import numpy as np
import pytest

from sim.model.evaluator import Evaluator
from sim.model.loader import load_model
from sim.solvers.frames import frames_along, free_motions
from sim.solvers.modal_stepping import integrate_frames, ked
from sim.solvers.motion import rigid_motion
from sim.solvers.subspace import RESIDUAL_TOL
from sim.solvers.trajectory import circle, from_scenario
from sim.app.scenario import load_scenario

import oracles
from conftest import MODELS, ROOT


def _seismic(model, samples):
    """The 6-PSS along its shipped seismic trajectory (paper 002), ``samples`` instants."""
    scenario = load_scenario(ROOT / "scenarios" / "pss6_seismic.toml")
    trajectory = from_scenario(scenario.data["trajectory"], model)
    return rigid_motion(model, trajectory, np.linspace(0.0, trajectory.duration, samples), condition=False)


def _at_home(model, samples, seed=0):
    """States at the home configuration with random velocities and accelerations (admissible
    or not, the load ``Q - M a`` of the frame is defined for any)."""
    rng = np.random.default_rng(seed)
    ev = Evaluator(model)
    s = ev.evaluate(model.q_home, np.zeros(model.n_v)).s
    return SimpleNamespace(q=np.tile(model.q_home, (samples, 1)), v=0.1 * rng.normal(size=(samples, model.n_v)),
                           a=rng.normal(size=(samples, model.n_v)), actuators=np.tile(s, (samples, 1)))


def _stretched(model, samples, seed=1):
    """States of the beam bent and stretched (its elastic coordinates random, 10 µm), where the
    axial forces of the geometric stiffening (spin-up beam) have a tangent stiffness: the
    frequencies 1-11 % off the unstrained beam's."""
    states = _at_home(model, samples, seed)
    rng = np.random.default_rng(seed)
    states.q[:, model.q_elastic] += 1e-5 * rng.normal(size=(samples, len(model.q_elastic)))
    return states


CASES = {
    # name: (model file, parameters, states, modes)
    "6-PSS, compliant screws and spinning struts": ("pss6", {}, lambda m: _seismic(m, 7), 4),
    "6-PSS, stiff screws and spinning struts": ("pss6", {"compliant_drives": False}, lambda m: _seismic(m, 7), 4),
    "Surgiscope Delta, springs only": ("delta_surgiscope", {}, lambda m: _at_home(m, 3), 4),
    "spin-up beam, geometric stiffening": ("spinup_beam", {}, lambda m: _stretched(m, 3), 3),
    "NaVARo, more rows than reference coordinates": ("navaro", {}, lambda m: _at_home(m, 2), 4),
    "flexible arm, one free motion": ("flexible_arm", {}, lambda m: _at_home(m, 3), 3),
    "five-bar, constant stiffness": ("five_bar", {}, lambda m: _at_home(m, 3), 3),
}


@pytest.fixture(scope="module", params=[(name, saddle) for name in CASES for saddle in (False, True)],
                ids=lambda p: p[0] + (", saddle-point solver" if p[1] else ""))
def case(request):
    """The frames of a case, and with ``saddle`` by the saddle-point solver wherever the
    general one would take them (sim.solvers.saddle.SADDLE_MIN lowered: any size)."""
    import sim.solvers.saddle

    label, saddle = request.param
    name, parameters, states, count = CASES[label]
    model = load_model(MODELS / f"{name}.py", parameters)
    motion = states(model)
    with pytest.MonkeyPatch.context() as patch:
        if saddle:
            patch.setattr(sim.solvers.saddle, "SADDLE_MIN", 0)
        frames = frames_along(model, motion, count, workers=1)
    refs = [oracles.frame(model, q, v, a, s, count)
            for q, v, a, s in zip(motion.q, motion.v, motion.a, motion.actuators)]
    return label, model, motion, frames, refs


def test_frame_frequencies_and_shapes_are_the_dense_modes(case):
    """Frequencies to 1e-8 (relative: the reduced pencils differ, and their conditioning
    reaches 1e8 on the Surgiscope's springs); mass-normalised shapes spanning the dense
    solve's modal subspace (its M-orthogonal projector) to 10 RESIDUAL_TOL where the
    kept modes are apart from the next (1 %), admissible, and mass-orthogonal to the free
    motions."""
    label, model, motion, frames, refs = case
    ev = Evaluator(model)
    for k, (fr, ref) in enumerate(zip(frames, refs)):
        where = f"{label}, frame {k}"
        np.testing.assert_allclose(fr.omega, ref["omega"], rtol=1e-8, err_msg=where)
        M = ref["M"]
        np.testing.assert_allclose(fr.shapes.T @ M @ fr.shapes, np.eye(fr.omega.size), atol=1e-9, err_msg=where)
        np.testing.assert_allclose(fr.mass_shapes, M @ fr.shapes, rtol=0,
                                   atol=1e-12 * np.abs(fr.mass_shapes).max(), err_msg=where)
        J = ev.evaluate(motion.q[k], np.zeros(model.n_v), targets=motion.actuators[k]).J
        assert np.abs(J @ fr.shapes).max(initial=0) <= 1e-10 * max(np.abs(J).max(initial=0), 1) * np.abs(
            fr.shapes).max(), where
        free = ref["rigid_shapes"]
        assert np.abs(free.T @ M @ fr.shapes).max(initial=0) <= 1e-9 * np.abs(fr.shapes).max(), where
        full = oracles.frame(model, motion.q[k], motion.v[k], motion.a[k], motion.actuators[k], fr.omega.size + 1)
        if full["omega"].size > fr.omega.size and full["omega"][-1] > 1.01 * full["omega"][-2]:
            P, P_ref = fr.shapes @ fr.mass_shapes.T, ref["shapes"] @ (M @ ref["shapes"]).T
            assert np.abs(P - P_ref).max() <= 10 * RESIDUAL_TOL * np.abs(P_ref).max(), where


def test_frame_statics_are_those_of_the_dense_modes(case):
    """The static displacements under the load and under gravity at rest equal the sum over
    all the dense solve's elastic modes (inertia relief where there are free motions) to
    1e-7 of their largest entry; the load and the pose Jacobian are those of the state."""
    label, model, motion, frames, refs = case
    for k, (fr, ref) in enumerate(zip(frames, refs)):
        where = f"{label}, frame {k}"
        for field in ("static_load", "static_rest"):
            scale = np.abs(ref[field]).max()
            assert np.abs(getattr(fr, field) - ref[field]).max() <= 1e-7 * scale, f"{where}, {field}"
        np.testing.assert_allclose(fr.load, ref["load"], rtol=0, atol=1e-11 * np.abs(ref["load"]).max(),
                                   err_msg=where)
        np.testing.assert_allclose(fr.pose_jacobian, ref["pose_jacobian"], rtol=0,
                                   atol=1e-13 * np.abs(ref["pose_jacobian"]).max(), err_msg=where)


def test_free_motion_count_is_the_dense_modes_one(case):
    label, model, motion, _, refs = case
    assert free_motions(model, motion.q[0], Evaluator(model)) == refs[0]["rigid_shapes"].shape[1], label


@pytest.mark.parametrize("name, parameters, trajectory, intervals", [
    ("rrru3", {"elements_per_link": 2}, circle([0.0, 0.0, -0.7], 0.1, 2.0, 0.4), 40),
    ("pss6", {}, None, 40),
])
def test_ked_on_compiled_frames_is_the_ked_on_dense_modes(name, parameters, trajectory, intervals):
    """The whole KED (3-RRRU: subspace iteration on the constant stiffness; 6-PSS: compliant
    screws and free spins, the general basis) against the same integration on the oracle's
    frames: deviations to 10 RESIDUAL_TOL of their peak (the shapes' error), frequencies to
    1e-8."""
    from sim.solvers.frames import Frame, Frames

    model = load_model(MODELS / f"{name}.py", parameters)
    if trajectory is None:
        scenario = load_scenario(ROOT / "scenarios" / "pss6_seismic.toml")
        trajectory = from_scenario(scenario.data["trajectory"], model)
    count = 4
    fast = ked(model, trajectory, intervals, count, 0.02)
    time = np.linspace(0.0, trajectory.duration, intervals + 1)
    motion = rigid_motion(model, trajectory, time, condition=False)
    refs = [oracles.frame(model, q, v, a, s, count) for q, v, a, s in zip(motion.q, motion.v, motion.a,
                                                                           motion.actuators)]
    frames = Frames.stack([Frame(load=r["load"], omega=r["omega"], shapes=r["shapes"], mass_shapes=r["M"] @ r["shapes"],
                                 pose_jacobian=r["pose_jacobian"], static_load=r["static_load"],
                                 static_rest=r["static_rest"]) for r in refs])
    dense = integrate_frames(time, frames, motion.pose, 0.02)
    np.testing.assert_allclose(fast.frequencies, dense.frequencies, rtol=1e-8)
    scale = np.abs(dense.deviation).max()
    assert scale > 1e-7
    assert np.abs(fast.deviation - dense.deviation).max() <= 10 * RESIDUAL_TOL * scale


def test_a_buckled_structure_is_named_not_solved():
    """The spin-up beam compressed far past buckling (elastic coordinates random, 1 cm: axial
    forces whose geometric stiffness outweighs the bending one): no modes, but an error that
    names the instant."""
    from sim.errors import SimError

    model = load_model(MODELS / "spinup_beam.py", {})
    states = _stretched(model, 3)
    rng = np.random.default_rng(1)
    states.q[:, model.q_elastic] += 0.01 * rng.normal(size=(3, len(model.q_elastic)))
    states.t = np.array([0.0, 0.5, 1.0])
    with pytest.raises(SimError, match=r"frozen at t = 0 s has no positive stiffness"):
        frames_along(model, states, 3, workers=1)


def test_frames_the_constant_solver_turns_down_are_the_general_ones(monkeypatch):
    """Near a singular configuration (here: every one, BASIS_MAX lowered below any entry of
    G) the constant stiffness's solver turns frames down and the general one (an SVD of the
    rows) computes them: the same frequencies to 1e-9, shapes to 10 RESIDUAL_TOL, statics to
    1e-8, and the sweeps counted."""
    import sim.solvers.frames
    import sim.solvers.subspace

    model = load_model(MODELS / "rrru3.py", {"elements_per_link": 2})
    motion = rigid_motion(model, circle([0.0, 0.0, -0.7], 0.1, 2.0, 0.4), np.linspace(0.0, 0.4, 9),
                          condition=False)
    fast = frames_along(model, motion, 4, workers=1)
    monkeypatch.setattr(sim.solvers.subspace, "BASIS_MAX", 1e-6)
    pool = sim.solvers.frames.FramePool(model, 4, len(motion.q), 0)
    for state in zip(motion.q, motion.v, motion.a, motion.actuators):
        pool.add(*state)
    slow = pool.finish()
    tracker = pool.local.tracker
    assert tracker.turned_down == len(motion.q) and all(s == -1 or s > 0 for s in tracker.sweeps)
    np.testing.assert_allclose(slow.omega, fast.omega, rtol=1e-9)
    for k in range(len(motion.q)):
        P, P_ref = slow.shapes[k] @ slow.mass_shapes[k].T, fast.shapes[k] @ fast.mass_shapes[k].T
        assert np.abs(P - P_ref).max() <= 10 * RESIDUAL_TOL * np.abs(P_ref).max()
        assert np.abs(slow.static_load[k] - fast.static_load[k]).max() <= 1e-8 * np.abs(fast.static_load[k]).max()


def _pool(ev, motion, count, workers, wait=False):
    """The frames of ``motion`` by a :class:`sim.solvers.frames.FramePool` on ``ev`` with
    ``workers`` threads; ``wait``: every task done by the workers before :meth:`finish` (none
    taken back by this thread)."""
    import sim.solvers.frames

    with sim.solvers.frames.FramePool(ev, count, len(motion.q), workers) as pool:
        for state in zip(motion.q, motion.v, motion.a, motion.actuators):
            pool.add(*state)
        for _, _, future, _ in pool.tasks if wait else ():
            future.result()
        return pool.finish()


def test_pool_frames_are_bitwise_the_same_whichever_thread_computes_them(monkeypatch):
    """The frames' numbers do not depend on the sharing (FramePool's contract, which the
    transient's damping schedule and KED rely on: a run repeated gives the same file): with
    worker threads, chunks taken back by this thread or all left to the workers, several
    times over, and with this thread's evaluator left at another, moving state by earlier
    work (the transient's own, as sim.solvers.damping.schedule is given), every field equals
    the one-thread frames of a fresh evaluator bitwise; so do the schedule's factors and rates."""
    import sim.solvers.frames
    from sim.solvers.damping import Damping, schedule

    monkeypatch.setattr(sim.solvers.frames, "FRAME_CHUNK", 4)      # 41 states: ten tasks and a tail
    model = load_model(MODELS / "rrru3.py", {"elements_per_link": 2})
    motion = rigid_motion(model, circle([0.0, 0.0, -0.7], 0.1, 2.0, 0.4), np.linspace(0.0, 0.4, 41),
                          condition=False)
    serial = _pool(Evaluator(model), motion, 6, 0)
    moved = Evaluator(model)
    for run in range(3):
        moved.evaluate(motion.q[-1 - run], motion.v[-1 - run], targets=np.zeros(len(model.actuators)),
                       velocity_jacobian=True, rest=True, pose=True)
        for workers, wait in ((2, False), (2, True), (3, False)):
            frames = _pool(moved, motion, 6, workers, wait)
            for name in sim.solvers.frames.FIELDS:
                assert np.array_equal(getattr(frames, name), getattr(serial, name)), (run, workers, wait, name)
    damping = Damping(zeta=0.01, modes=6)
    monkeypatch.setattr(sim.solvers.frames, "_workers", lambda workers, n: 0)
    one = schedule(Evaluator(model), damping, motion.t, motion.q)
    monkeypatch.setattr(sim.solvers.frames, "_workers", lambda workers, n: 2)
    for run in range(3):
        shared = schedule(moved, damping, motion.t, motion.q)
        assert np.array_equal(shared.factors, one.factors) and np.array_equal(shared.rates, one.rates), run


def test_frames_with_the_mass_on_its_structure_are_the_dense_ones(monkeypatch):
    """From subspace.STORE_MIN velocity coordinates the band path's frames evaluate M on its
    structure (a sim.kernels.store.Store) and keep only what the solver reads of it (each
    coordinate's entries in its body's reference columns, M_ee's nonzeros): the same frames as
    with the dense M (n_v, n_v), to round-off (frequencies 1e-10, mass-normalised shapes,
    statics, loads and mass shapes 1e-8 of their largest entry), with worker threads sharing
    the structure and each holding its own values; and the compiled loop holds no (n_v, n_v)
    array: its traced peak is lower by more than 75 % of one (the store's values and the parts,
    linear, are 10 % of one at this size)."""
    import tracemalloc

    import sim.solvers.frames
    import sim.solvers.subspace

    model = load_model(MODELS / "rrru3.py", {"elements_per_link": 24})
    motion = rigid_motion(model, circle([0.0, 0.0, -0.7], 0.1, 2.0, 0.3), np.linspace(0.0, 0.3, 30),
                          condition=False)
    assert model.n_v < sim.solvers.subspace.STORE_MIN
    ev, states = Evaluator(model), (motion.q, motion.v, motion.a, motion.actuators)
    peaks, runs = {}, {}
    for held in (False, True):
        monkeypatch.setattr(sim.solvers.subspace, "STORE_MIN", 0 if held else 10 ** 9)
        runs[held] = frames_along(model, motion, 6, workers=2)
        tracker = sim.solvers.subspace.Tracker(model, 6)
        store, _ = tracker.mass_store(ev.tables)
        assert bool(store.ptr.size) == held and store.values.size == 0
        out = sim.solvers.frames.Frames.empty(len(motion.q), model.n_v, 6, len(model.pose_kinds))
        tracemalloc.start()
        sim.solvers.frames._frames(model, ev, tracker, states, out, 0)
        peaks[held] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    frames, dense = runs[True], runs[False]
    np.testing.assert_allclose(frames.omega, dense.omega, rtol=1e-10, atol=0)
    for name in ("load", "mass_shapes", "static_load", "static_rest", "pose_jacobian"):
        ref = getattr(dense, name)
        np.testing.assert_allclose(getattr(frames, name), ref, rtol=0, atol=1e-8 * np.abs(ref).max(), err_msg=name)
    for k in range(len(motion.q)):
        P, P_ref = frames.shapes[k] @ frames.mass_shapes[k].T, dense.shapes[k] @ dense.mass_shapes[k].T
        assert np.abs(P - P_ref).max() <= 1e-8 * np.abs(P_ref).max(), k
    assert peaks[False] - peaks[True] >= 0.75 * model.n_v ** 2 * 8, (peaks, model.n_v)
