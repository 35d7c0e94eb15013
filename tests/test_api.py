"""The Python interface (issue 18): a robot built and analysed through ``import sim`` only
(the guide's five-bar, ``docs/examples/five_bar.py``), the NaVARo frequencies against Cast3M,
scenario validation and its errors, materials and sections."""
import json
from pathlib import Path

import numpy as np
import pytest

import sim

ROOT = Path(__file__).resolve().parent.parent
GUIDE_ROBOT = ROOT / "docs" / "examples" / "five_bar.py"
CIRCLE = dict(kind="circle", center=[0.0, 0.4, 0.0], radius=0.03, omega=4 * np.pi, duration=0.5, ramp=0.1)


def test_navaro_cast3m_frequencies():
    """``sim.modes(sim.load_model("models/navaro.py"), pose=[0, 0, 0])``: the Cast3M
    frequencies of paper 000 Table 3, pose 1 (44.10, 44.10, 53.98, 60.63, 95.62 Hz), within 0.1 %."""
    result = sim.modes(sim.load_model(ROOT / "models" / "navaro.py"), pose=[0, 0, 0])
    assert result.units["frequencies"] == "Hz"
    np.testing.assert_allclose(result.frequencies[:5], [44.10, 44.10, 53.98, 60.63, 95.62], rtol=1e-3)
    np.testing.assert_allclose(result.pose, [0, 0, 0])


def test_robot_through_the_public_api(tmp_path):
    """The guide's robot: modes, KED and the transient in memory, KED and the transient agreeing
    on the peak deviation; the same through ``sim.run`` and ``sim.open_results``."""
    robot = sim.load_model(GUIDE_ROBOT)
    modes = sim.modes(robot, count=4)
    assert modes.frequencies.shape == (4,) and np.all(np.diff(modes.frequencies) >= 0)
    assert 20 < modes.frequencies[0] < 200
    ked = sim.ked(robot, CIRCLE, intervals=128, modes=6)
    transient = sim.transient(robot, CIRCLE, step=5e-4)
    assert ked.status == transient.status == "complete"
    assert transient.time[-1] == pytest.approx(0.5)
    peak_ked, peak_transient = np.abs(ked.deviation).max(axis=0), np.abs(transient.deviation).max(axis=0)
    # Modal superposition on frozen structures against the nonlinear transient: within 3 %.
    np.testing.assert_allclose(peak_ked, peak_transient, rtol=0.03)
    assert peak_transient.max() > 1e-5                 # a deviation worth comparing
    assert transient.summary["steps"] == 1000
    assert "distal_1_deflection" in transient["sensors"]

    scenario = tmp_path / "guide.toml"
    scenario.write_text(f'model.file = "{GUIDE_ROBOT}"\n'
                        "[modes]\ncount = 4\n"
                        "[trajectory]\nkind = \"circle\"\ncenter = [0.0, 0.4, 0.0]\nradius = 0.03\n"
                        f"omega = {4 * np.pi!r}\nduration = 0.5\nramp = 0.1\n"
                        "[ked]\nintervals = 128\nmodes = 6\n[transient]\nstep = 5e-4\n")
    out = sim.run(scenario, out=tmp_path / "guide.h5")
    assert out == tmp_path / "guide.h5" and out.is_file()
    data = sim.open_results(out, "modes")
    np.testing.assert_allclose(data["frequencies"].values, modes.frequencies, rtol=1e-12)
    assert data["frequencies"].attrs["units"] == "Hz"
    assert "mode" in data["frequencies"].dims
    for name, memory in (("ked", ked), ("transient", transient)):
        data = sim.open_results(out, name)
        assert data["deviation"].dims[0] == "time"
        np.testing.assert_allclose(data["deviation"].values, memory.deviation, rtol=1e-9, atol=1e-15)
        np.testing.assert_allclose(data["time"].values, memory.time)
    parts = sim.open_results(out, "transient")["energy_parts"]
    assert parts.dims == ("time", "energy_part")
    assert list(parts["energy_part"].values) == ["kinetic", "gravitational", "elastic"]
    np.testing.assert_allclose(parts.sum("energy_part").values, sim.open_results(out, "transient")["energy"].values)
    with pytest.raises(sim.SimError, match="no group `frf` \\(the file has: modes, ked, transient|no group `frf`"):
        sim.open_results(out, "frf")


def test_options_are_validated_as_scenario_keys():
    """Wrong keys and values raise the scenario's one-line errors, naming the function."""
    robot = sim.load_model(GUIDE_ROBOT)
    with pytest.raises(sim.SimError, match=r"sim.modes\(\): \[modes\] count must be a positive integer, got 0"):
        sim.modes(robot, count=0)
    with pytest.raises(sim.SimError, match=r"sim.ked\(\): unknown key `ked.interval`; did you mean `ked.intervals`"):
        sim.ked(robot, CIRCLE, interval=64)
    with pytest.raises(sim.SimError, match=r"sim.ked\(\): \[trajectory\] radius must be"):
        sim.ked(robot, dict(CIRCLE, radius=-1.0))
    with pytest.raises(sim.SimError, match=r"needs the model file's path"):
        sim.identify(robot, parameters=["wall"], configuration_1={"measured_frequencies": [50.0]})
    with pytest.raises(sim.SimError, match="unknown model parameter `wal`; did you mean `wall`"):
        sim.load_model(GUIDE_ROBOT, wal=0.002)


def test_damping_is_one_keyword_and_the_old_ones_point_to_it(tmp_path):
    """``damping=dict(...)`` holds the ``[damping]`` keys, validated as the table; a
    per-analysis damping keyword raises one line saying where its value goes now, as does
    such an override of ``sim.run``."""
    robot = sim.load_model(GUIDE_ROBOT)
    for call, key, new in ((lambda **k: sim.ked(robot, CIRCLE, **k), "damping_ratio", "ratio"),
                           (lambda **k: sim.transient(robot, CIRCLE, step=1e-3, **k), "damping_modes", "modes"),
                           (lambda **k: sim.frf(robot, ["force:P_1:x"], ["displacement:P_1:x"], **k), "eta", "eta")):
        with pytest.raises(sim.SimError) as info:
            call(**{key: 2})
        message = str(info.value)
        assert message.endswith(f".{key} is gone: damping is one model per robot, used by every analysis; "
                                f"pass damping=dict({new}=2)") and message.startswith("sim.")
    with pytest.raises(sim.SimError, match=r"sim.ked\(\): unknown key `damping.zeta`"):
        sim.ked(robot, CIRCLE, damping=dict(zeta=0.01))
    with pytest.raises(sim.SimError, match=r"sim.ked\(\): \[damping\] ratio must be a number in \[0, 1\), got 1.5"):
        sim.ked(robot, CIRCLE, damping=dict(ratio=1.5))
    with pytest.raises(sim.SimError, match=r"sim.ked\(\): `damping` must be a dict"):
        sim.ked(robot, CIRCLE, damping=0.01)
    scenario = tmp_path / "s.toml"
    scenario.write_text(f'model.file = "{GUIDE_ROBOT}"\n[modes]\ncount = 2\n')
    with pytest.raises(sim.SimError, match=r"^--set ked.damping_ratio: ked.damping_ratio is gone: .* "
                                           r"set \[damping\] ratio = 0.01$"):
        sim.run(scenario, out=tmp_path / "s.h5", overrides={"ked.damping_ratio": 0.01})
    assert not (tmp_path / "s.h5").exists()


def test_model_file_with_parameters():
    """A model file's path and ``parameters`` instead of a built model: the same numbers as
    building it first."""
    by_path = sim.modes(GUIDE_ROBOT, count=2, parameters={"payload": 0.5})
    built = sim.modes(sim.load_model(GUIDE_ROBOT, payload=0.5), count=2)
    np.testing.assert_allclose(by_path.frequencies, built.frequencies, rtol=1e-12)
    assert by_path.frequencies[0] < sim.modes(GUIDE_ROBOT, count=1).frequencies[0]   # heavier payload


def test_materials_and_sections():
    """Named materials carry sourced values; sections built from them equal the explicit form,
    and the annulus properties are exact."""
    assert (sim.STEEL.E, sim.STEEL.rho, sim.STEEL.nu) == (210e9, 7850.0, 0.3)
    assert (sim.ALUMINIUM.E, sim.ALUMINIUM.rho, sim.ALUMINIUM.nu) == (70e9, 2700.0, 0.3)
    assert "EN 1999-1-1" in sim.ALUMINIUM.source and "EN 1993-1-1" in sim.STEEL.source
    assert sim.STEEL.G == pytest.approx(210e9 / 2.6)
    tube = sim.Section.tube(0.010, 0.002, sim.ALUMINIUM)
    assert tube == sim.Section.tube(0.010, 0.002, E=70e9, rho=2700.0, nu=0.3)
    assert tube.A == pytest.approx(np.pi * (0.010**2 - 0.008**2), rel=1e-14)
    assert tube.Iy == pytest.approx(np.pi * (0.010**4 - 0.008**4) / 4, rel=1e-14)
    assert sim.Section.rectangle(0.03, 0.01, sim.STEEL).G == pytest.approx(sim.STEEL.G)
    with pytest.raises(ValueError, match="either material=steel or E, rho"):
        sim.Section.circle(0.01, sim.STEEL, E=1e9)
    with pytest.raises(ValueError, match="give a material"):
        sim.Section.circle(0.01)


def test_other_analyses_through_the_api():
    """``sim.frequencies``, ``sim.inverse_dynamics`` and ``sim.frf`` on the guide's robot agree
    with ``sim.modes`` where they overlap: the frequencies along the path at its first instant and
    the FRF's undamped natural frequencies are the modes at that pose; the actuator power is the
    rate of the rigid robot's energy."""
    robot = sim.load_model(GUIDE_ROBOT)
    start = [0.03, 0.4, 0.0]                         # the circle's first point: centre + radius along x
    circle = dict(CIRCLE, ramp=0.0)
    at_start = sim.modes(robot, pose=start, count=3).frequencies
    along = sim.frequencies(robot, circle, count=3, samples=20)
    np.testing.assert_allclose(along.frequencies_sorted[0], at_start, rtol=1e-6)
    frf = sim.frf(robot, inputs=["force:P_1:x"], outputs=["displacement:P_1:x"], pose=start, f_max=200.0,
                  points=50, damping=dict(ratio=0.01, eta=0.02))
    np.testing.assert_allclose(frf.natural_frequencies[:3], at_start, rtol=1e-6)
    # the damping model as given, applied: zeta + eta/2 per complex mode (to O(eta^2))
    assert {k: float(v) for k, v in frf.damping.items()} == dict(ratio=0.01, eta=0.02, rayleigh_alpha=0.0,
                                                                rayleigh_beta=0.0, modes=12)
    assert frf.units["damping/rayleigh_beta"] == "s"
    np.testing.assert_allclose(frf.damping_ratios[:3], 0.02, rtol=1e-2)
    dynamics = sim.inverse_dynamics(robot, circle, samples=401)
    energy = dynamics.kinetic_energy + dynamics.potential_energy
    rate = np.gradient(energy, dynamics.time)
    np.testing.assert_allclose(dynamics.actuator_power[5:-5], rate[5:-5], atol=2e-3 * np.abs(rate).max())
    assert dynamics.units["actuator_forces"] == ["N m", "N m"]


def test_frequencies_taken_as_they_come_are_the_tracking_of_all_the_frames(monkeypatch):
    """The ``[frequencies]`` analysis takes its frames chunk by chunk (never all held): its
    frequencies, MACs and tracks are those of :func:`sim.solvers.tracking.track_modes` over all
    the frames gathered at once, bitwise, across chunk boundaries (3 instants a chunk)."""
    import sim.solvers.frames
    from sim.model.evaluator import Evaluator
    from sim.solvers.frames import motion_and_frames
    from sim.solvers.tracking import track_modes
    from sim.solvers.trajectory import from_scenario

    monkeypatch.setattr(sim.solvers.frames, "FRAME_CHUNK", 3)
    robot = sim.load_model(GUIDE_ROBOT)
    circle = dict(CIRCLE, ramp=0.0)
    along = sim.frequencies(robot, circle, count=3, samples=20)
    ev = Evaluator(robot)
    time = np.linspace(0.0, circle["duration"], 20)
    motion, frames = motion_and_frames(ev, from_scenario(circle, robot, "test"), time, 5)
    order, macs = track_modes(frames.shapes, weighted=(ev.mass_products(motion.q[1:], frames.shapes[:-1]),
                                                       frames.mass_shapes[1:]))
    assert np.array_equal(along.frequencies_sorted, frames.omega[:, :3] / (2 * np.pi))
    assert np.array_equal(along.mode_order, order) and np.array_equal(along.mac, macs)
    assert 0.5 < macs[1:].max() <= 1.0


def test_toml_values_read_back_as_written():
    """Overrides given as Python values (``sim.run(..., overrides={...})``) pass through TOML
    text: each reads back as the same value, floats to the last bit."""
    import math
    import tomllib

    from sim.app.scenario import toml_value
    values = [0, -7, 2**40, 1e-05, 0.1, -0.0, 1e300, 5e-324, 12.566370614359172, True, False, "", "a\"b\\c\nd é /",
              [1, 2.5, "x"], [[1, 2], [3]], {"a": 1, "b c": [0.5]}, np.float64(0.3), np.int64(3), np.arange(3.0),
              np.bool_(True)]
    for value in values:
        back = tomllib.loads(f"v = {toml_value(value)}")["v"]
        expected = value.tolist() if hasattr(value, "tolist") else value
        assert back == expected and type(back) is type(expected), (value, toml_value(value), back)
        if isinstance(expected, float):
            assert math.copysign(1.0, back) == math.copysign(1.0, expected)
    assert math.isinf(tomllib.loads(f"v = {toml_value(-math.inf)}")["v"])
    assert math.isnan(tomllib.loads(f"v = {toml_value(math.nan)}")["v"])
    with pytest.raises(TypeError):
        toml_value(None)


def test_run_takes_overrides_as_a_mapping(tmp_path):
    """``sim.run(scenario, overrides={"modes.count": 3})`` is ``--set modes.count=3``; a single
    ``KEY=VALUE`` string is one override; a value TOML cannot hold is refused, named."""
    import h5py

    scenario = ROOT / "scenarios/navaro_modes.toml"
    out = sim.run(scenario, out=tmp_path / "a.h5", overrides={"modes.count": 3})
    with h5py.File(out) as f:
        assert f["modes/frequencies"].shape == (3,)
        assert json.loads(f.attrs["overrides"]) == ["modes.count=3"]
    out = sim.run(scenario, out=tmp_path / "b.h5", overrides="modes.count=2")
    with h5py.File(out) as f:
        assert f["modes/frequencies"].shape == (2,)
    with pytest.raises(sim.SimError, match="override modes.count: None has no TOML value"):
        sim.run(scenario, out=tmp_path / "c.h5", overrides={"modes.count": None})
    with pytest.raises(sim.SimError, match="expected KEY=VALUE strings or a mapping"):
        sim.run(scenario, out=tmp_path / "c.h5", overrides=[("modes.count", 3)])
    assert not (tmp_path / "c.h5").exists()


def test_short_reprs_and_one_based_modes(tmp_path):
    """Issue 43: a model's repr fits a line (the dataclass's ran to 177 000 characters for a
    Delta), and xarray's `mode` coordinate numbers modes as every message
    does, 1 the lowest."""
    robot = sim.load_model(ROOT / "models" / "navaro.py")
    assert repr(robot) == ("Model('navaro': 13 bodies (13 flexible), 186 velocity coordinates, 18 joints, "
                           "6 actuators, end effector x y theta)")
    result = sim.modes(robot, pose=[0, 0, 0], count=3)
    assert repr(result).startswith("<modes result, complete, ")
    path = sim.run(ROOT / "scenarios" / "navaro_modes.toml", out=tmp_path / "n.h5")
    data = sim.open_results(path, "modes")
    assert data["mode"].values[0] == 1 and list(data["mode"].values) == list(range(1, data.sizes["mode"] + 1))
    assert data["frequencies"].sel(mode=1).item() == pytest.approx(44.10, abs=0.01)
    assert "units" not in data["mode"].attrs, "a mode number has no unit: not `mode = 1 [1]`"
