"""The saddle-point solver of the frozen structures (sim.solvers.saddle) against the general
solver's dense reduced pencil (sim.solvers.subspace._general), on the 6-PSS with compliant
screws and spinning struts (free motions) refined to 8 elements per strut (366 coordinates,
above SADDLE_MIN): along its seismic motion (KED's frames) and over poses (Tracker.modes from
Python); its memory, linear; and the elastic modes counted without a modal analysis."""
import sim  # noqa: F401  (single-threaded BLAS before numpy)

import numpy as np
import pytest

import sim.solvers.frames as frames
import sim.solvers.saddle as saddle
from sim.app.scenario import load_scenario
from sim.model.evaluator import Evaluator
from sim.model.loader import load_model
from sim.solvers.motion import rigid_motion
from sim.solvers.subspace import Tracker
from sim.solvers.trajectory import from_scenario

from conftest import ROOT


@pytest.fixture(scope="module")
def pss6():
    scenario = load_scenario(ROOT / "scenarios" / "pss6_seismic.toml")
    model = load_model(scenario.model_file, {**scenario.model_parameters, "elements_per_strut": 8})
    trajectory = from_scenario(scenario.data["trajectory"], model)
    motion = rigid_motion(model, trajectory, np.linspace(0.0, trajectory.duration, 41), condition=False)
    return model, motion


def test_frames_by_the_saddle_point_form_are_the_general_solvers(pss6, monkeypatch):
    """Above SADDLE_MIN the general solver's frames go to the saddle-point form (every frame:
    none turned down): the frequencies within 1e-9 of the dense reduced pencil's, the statics
    (inertia relief) within 1e-8 of their largest entry, the mass-normalised shapes' projector
    within 1e-5 (RESIDUAL_TOL over the gap to the next mode of the struts' cluster), the
    shapes admissible and mass-orthogonal to the struts' spins; with two threads the same."""
    model, motion = pss6
    assert model.n_v >= saddle.SADDLE_MIN
    ev = Evaluator(model)
    free = frames.free_motions(model, motion.q[0], ev)
    assert free == 6
    runs = {}
    for on in (True, False):
        monkeypatch.setattr(saddle, "SADDLE_MIN", saddle.SADDLE_MIN if on else 10 ** 9)
        tracker = Tracker(model, 4, free)
        out = frames.Frames.empty(len(motion.q), model.n_v, 4, len(model.pose_kinds))
        frames._frames(model, ev, tracker, (motion.q, motion.v, motion.a, motion.actuators), out, 0)
        assert bool(tracker._saddle) == on and tracker.turned_down == 0
        runs[on] = out
    fast, dense = runs[True], runs[False]
    pooled = frames.frames_along(model, motion, 4, workers=2)     # (threads: each its tracker's structure)
    np.testing.assert_allclose(pooled.omega, dense.omega, rtol=1e-9)   # (seeded: other starts)
    np.testing.assert_allclose(fast.omega, dense.omega, rtol=1e-9)
    for name in ("static_load", "static_rest"):
        ref = getattr(dense, name)
        np.testing.assert_allclose(getattr(fast, name), ref, rtol=0, atol=1e-8 * np.abs(ref).max(), err_msg=name)
    # (M a by its structure's entries: the sums in another order)
    np.testing.assert_allclose(fast.load, dense.load, rtol=0, atol=1e-13 * np.abs(dense.load).max())
    for k in range(len(motion.q)):
        P, P_ref = fast.shapes[k] @ fast.mass_shapes[k].T, dense.shapes[k] @ dense.mass_shapes[k].T
        assert np.abs(P - P_ref).max() <= 1e-5 * np.abs(P_ref).max(), k
    E = ev.evaluate(motion.q[3], np.zeros(model.n_v), targets=motion.actuators[3])
    assert np.abs(E.J @ fast.shapes[3]).max() <= 1e-10 * np.abs(E.J).max() * np.abs(fast.shapes[3]).max()
    from sim.solvers.modal import modes
    spins = modes(model, motion.q[3], count=1).rigid_shapes
    assert spins.shape[1] == 6
    assert np.abs(spins.T @ (E.M @ fast.shapes[3])).max() <= 1e-9 * np.abs(fast.shapes[3]).max()


def test_a_frozen_structure_from_python_by_the_saddle_point_form(pss6):
    """Tracker.modes (the Python path, a dense M and K_t) with use_saddle: the same frequencies and
    statics as the general solver's, from a fresh start and from the last subspace."""
    model, motion = pss6
    ev = Evaluator(model)
    free = frames.free_motions(model, motion.q[0], ev)
    fast, dense = Tracker(model, 4, free), Tracker(model, 4, free)
    assert fast.use_saddle(ev) and not dense._saddle
    for k in (0, 1, 20):
        E = ev.evaluate(motion.q[k], np.zeros(model.n_v), targets=motion.actuators[k], rest=True,
                        velocity_jacobian=True)
        loads = np.stack([E.Q, E.Q0], axis=1)
        a = fast.modes(E.M, E.J, loads=loads, Kt=E.K_t)
        b = dense.modes(E.M, E.J, loads=loads, Kt=E.K_t)
        np.testing.assert_allclose(a[0], b[0], rtol=1e-9, err_msg=str(k))
        np.testing.assert_allclose(a[3], b[3], rtol=0, atol=1e-8 * np.abs(b[3]).max(), err_msg=str(k))
    assert fast.turned_down == 0 and all(s > 0 for s in fast.sweeps)


def test_the_saddle_point_frames_hold_no_square_array(pss6):
    """The saddle-point frames evaluate M and K_t onto their structure (no (n_v, n_v) array,
    nor the bodies' dense stiffness or a dense marker of the structure): the traced peak of
    the frames, structure included, grows with 8 -> 32 elements per strut (n_v 366 -> 1230,
    3.36x) by less than n_v^1.3 (4.8x): measured 3.35x, and 6.8x with the dense M, K_t,
    K_body and marker of the ninth session's solver."""
    import tracemalloc

    scenario = load_scenario(ROOT / "scenarios" / "pss6_seismic.toml")
    peaks, sizes = [], []
    for n in (8, 32):
        model = load_model(scenario.model_file, {**scenario.model_parameters, "elements_per_strut": n}) \
            if n != 8 else pss6[0]
        trajectory = from_scenario(scenario.data["trajectory"], model)
        motion = rigid_motion(model, trajectory, np.linspace(0.0, trajectory.duration, 6), condition=False)
        ev = Evaluator(model)
        free = frames.free_motions(model, motion.q[0], ev)
        states = (motion.q, motion.v, motion.a, motion.actuators)
        for traced in (False, True):      # (the first: numba's own allocations, compiling)
            tracker = Tracker(model, 4, free)
            out = frames.Frames.empty(len(motion.q), model.n_v, 4, len(model.pose_kinds))
            if traced:
                tracemalloc.start()
            frames._frames(model, ev, tracker, states, out, 0)
            assert tracker._saddle and tracker._K_body is None and tracker.turned_down == 0
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        sizes.append(model.n_v)
    growth = sizes[1] / sizes[0]
    assert peaks[1] / peaks[0] < growth ** 1.3, (peaks, sizes)


def test_the_elastic_modes_are_counted_without_a_modal_analysis(pss6):
    """[frequencies] counts the robot's elastic modes as the constrained motions less the free
    ones (a rank and the reference motions, linear in the model): on the 6-PSS with its six
    free spins, the count of the dense modal analysis (the number the refusal names)."""
    from dataclasses import replace

    from sim.analyses.frequencies import EXTRA_MODES, _first_pose
    from sim.errors import SimError
    from sim.solvers.modal import modes

    model, motion = pss6
    scenario = load_scenario(ROOT / "scenarios" / "pss6_seismic.toml")
    ev = Evaluator(model)
    q0, available = _first_pose(model, scenario, ev)
    assert available == scenario.data["frequencies"]["count"] + EXTRA_MODES
    reference = modes(model, q0, energies=False)
    assert reference.rigid_count == 6
    data = {**scenario.data, "frequencies": {**scenario.data["frequencies"], "count": 10 ** 6}}
    with pytest.raises(SimError, match=f"exceeds the {reference.omega.size} elastic modes"):
        _first_pose(model, replace(scenario, data=data), ev)
