"""Bad input never ends in a traceback or a corrupt file (SPEC §3.1, issue 7).

Each case runs `sim run` (in this process, or as a subprocess where the real entry point
matters) and checks: exit code 2 (130 after Ctrl-C), exactly one line ``error: ...`` on
stderr naming the problem, no ``Traceback``, and a result file that is either absent or a
valid HDF5 file (complete, or marked incomplete with the reason), never a ``.partial``.
"""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

import problems
from sim.app.cli import main
from sim.model.loader import load_model

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "models"

BEAM = f"""\
[model]
file = "{MODELS / 'beam.py'}"
parameters = {{ elements = 4 }}
[modes]
count = 3
"""

NAVARO_MODES = f"""\
[model]
file = "{MODELS / 'navaro.py'}"
[modes]
pose = [0.0, 0.0, 0.0]
count = 4
"""

# NaVARo reaches |x| < ~0.14 m at theta = 0: a circle of 0.4 m leaves the workspace.
NAVARO_CIRCLE = f"""\
[model]
file = "{MODELS / 'navaro.py'}"
[trajectory]
kind = "circle"
center = [0.0, 0.0, 0.0]
radius = 0.4
omega = 2.0
duration = 3.0
[inverse_dynamics]
samples = 20
"""

# A rigid slider-crank driven at the slider, its end effector the crank angle: at angle 0 (dead
# centre) the slider cannot move the crank, a parallel singularity of the direct Jacobian.
SLIDER_CRANK = problems.SLIDER_CRANK


def check_outcome(code, err, out, *fragments, exit_code=2):
    """Exit code, one `error:` line holding `fragments`, no traceback, file absent or valid."""
    assert code == exit_code, f"exit code {code}, stderr {err!r}"
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), f"stderr {err!r}"
    for fragment in fragments:
        assert fragment in lines[0], f"{fragment!r} not in {lines[0]!r}"
    out = Path(out)
    assert not list(out.parent.glob(f".{out.name}.*.tmp")), "a temporary file was left"
    assert not (out.exists() and out.read_bytes().startswith(b"ffrsim: the result")), "a reservation was left"
    if out.exists():
        with h5py.File(out, "r") as f:   # valid HDF5, and says whether it is complete
            status = f.attrs["status"]
            assert status in ("complete", "incomplete")
            if status == "incomplete":
                assert f.attrs["message"], "an incomplete file says why"
    return lines[0]


@pytest.fixture
def sim_run(tmp_path, capsys):
    """sim_run(text, *extra) -> (exit code, stderr, output path) of `sim run` on `text`."""
    def run(text, *extra):
        scenario = tmp_path / "s.toml"
        scenario.write_text(text)
        out = tmp_path / "out.h5"
        code = main(["run", str(scenario), "--out", str(out), *map(str, extra)])
        return code, capsys.readouterr().err, out
    return run


def test_malformed_toml(sim_run):
    code, err, out = sim_run(BEAM.replace("count = 3", "count = = 3"))
    check_outcome(code, err, out, "s.toml", "invalid TOML", "line 5")
    assert not out.exists()


def test_misspelled_key_suggests(sim_run):
    code, err, out = sim_run(BEAM.replace("count", "cuont"))
    check_outcome(code, err, out, "s.toml", "unknown key `modes.cuont`", "did you mean `modes.count`?")
    assert not out.exists()


def test_unknown_table(sim_run):
    code, err, out = sim_run(BEAM + "[mode]\ncount = 2\n")
    check_outcome(code, err, out, "unknown key `mode`", "did you mean `modes`?")


def test_per_analysis_damping_key_points_to_the_damping_table(sim_run):
    """A scenario of an earlier version, with its damping in an analysis table: one line naming
    the file and the key and where its value goes now, exit 2, no file."""
    code, err, out = sim_run(BEAM + '[frf]\ninputs = ["force:tip:z"]\noutputs = ["displacement:tip:z"]\n'
                                    'eta = 0.096\n')
    line = check_outcome(code, err, out, "s.toml: frf.eta is gone: damping is one model per robot",
                         "set [damping] eta = 0.096")
    assert line.startswith("error: ") and not out.exists()
    code, err, out = sim_run(BEAM, "--set", "transient.damping_modes=6")
    check_outcome(code, err, out, "--set transient.damping_modes: transient.damping_modes is gone",
                  "set [damping] modes = 6")
    assert not out.exists()


def test_wrong_type(sim_run):
    code, err, out = sim_run(BEAM.replace("count = 3", 'count = "three"'))
    check_outcome(code, err, out, "[modes] count must be an integer, got 'three'")
    assert not out.exists()


@pytest.mark.parametrize("key, value", [("length", -1), ("rho", -7800.0)])
def test_negative_length_or_mass(sim_run, key, value):
    code, err, out = sim_run(BEAM, "--set", f"model.parameters.{key}={value}")
    check_outcome(code, err, out, "beam.py", f"`{key}` must be positive, got {value}")
    assert not out.exists()


def test_missing_model_file(sim_run):
    code, err, out = sim_run(BEAM.replace("beam.py", "bem.py"))
    check_outcome(code, err, out, "[model] file", "bem.py", "not found")
    assert not out.exists()


def test_model_parameter_that_does_not_exist(sim_run):
    code, err, out = sim_run(BEAM, "--set", "model.parameters.lenght=1.0")
    check_outcome(code, err, out, "beam.py", "unknown model parameter `lenght`",
                  "did you mean `length`?")
    assert not out.exists()


def test_unreachable_pose(sim_run):
    code, err, out = sim_run(NAVARO_MODES.replace("[0.0, 0.0, 0.0]", "[0.5, 0, 0]"))
    check_outcome(code, err, out, "s.toml: [modes] pose", "x=0.5", "outside the workspace")
    assert not out.exists(), "nothing was computed: no file"


def test_singular_pose(sim_run, tmp_path):
    model = tmp_path / "slider_crank_rigid.py"
    model.write_text(SLIDER_CRANK)
    code, err, out = sim_run(f'[model]\nfile = "{model}"\n[modes]\npose = [0.0]\n')
    check_outcome(code, err, out, "[modes] pose", "theta=0", "singular configuration")
    assert not out.exists()


def test_trajectory_leaving_workspace(sim_run):
    code, err, out = sim_run(NAVARO_CIRCLE)
    check_outcome(code, err, out, "s.toml: [inverse_dynamics]", "t = 0 s", "outside the workspace")


def test_trajectory_leaving_workspace_frequencies(sim_run):
    text = NAVARO_CIRCLE.replace("[inverse_dynamics]\nsamples = 20",
                                 "[frequencies]\nsamples = 20\ncount = 3")
    code, err, out = sim_run(text)
    check_outcome(code, err, out, "t = 0 s", "outside the workspace")


@pytest.mark.parametrize("edit, fragment", [
    (("pose = [0.0, 0.0, 0.0]", "pose = [nan, 0.0, 0.0]"),
     "[modes] pose must be a non-empty list of finite numbers, got [nan, 0.0, 0.0]"),
    (("[modes]", "[model.parameters]\nE = nan\n[modes]"),
     "[model.parameters] E must be a finite number, a boolean or a string, got nan"),
    (("count = 4", "count = inf"), "[modes] count must be an integer, got inf"),
])
def test_nan_in_input(sim_run, edit, fragment):
    code, err, out = sim_run(NAVARO_MODES.replace(*edit))
    check_outcome(code, err, out, "s.toml", fragment)
    assert not out.exists()


def test_nan_override(sim_run):
    code, err, out = sim_run(BEAM, "--set", "model.parameters.width=nan")
    check_outcome(code, err, out, "--set model.parameters.width", "got nan")


def test_output_directory_not_writable(tmp_path, capsys):
    scenario = tmp_path / "s.toml"
    scenario.write_text(BEAM)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            # root writes through a 0o500 directory: a path under a regular file fails for all
            (tmp_path / "file.txt").write_text("not a directory")
            out = tmp_path / "file.txt" / "x.h5"
        else:
            out = locked / "x.h5"
        code = main(["run", str(scenario), "--out", str(out)])
        err = capsys.readouterr().err
        check_outcome(code, err, out, str(out.parent), "output directory")
        assert not out.exists()
    finally:
        locked.chmod(0o700)


def test_existing_output_kept(sim_run, tmp_path):
    out = tmp_path / "out.h5"
    out.write_bytes(b"previous result")
    code, err, _ = sim_run(BEAM)
    check_outcome(code, err, tmp_path / "none.h5", "exists; use --force or --out")
    assert out.read_bytes() == b"previous result"


def test_run_requires_a_scenario(capsys):
    # there is no default scenario: `sim run` alone is a usage error, not a run
    assert main(["run"]) == 2
    assert "SCENARIO.toml" in capsys.readouterr().err


def test_interrupted_run(tmp_path):
    """Ctrl-C during a long transient: exit 130, one line, file absent or valid and incomplete."""
    scenario = tmp_path / "long.toml"
    text = (ROOT / "scenarios" / "rrru3_circle.toml").read_text()
    text = text.replace('file = "../models/rrru3.py"', f'file = "{MODELS / "rrru3.py"}"')
    assert "duration = 5.0 " in text
    text = text.replace("duration = 5.0 ", "duration = 100.0 ")      # some 30 s of transient
    scenario.write_text(text.split("[inverse_dynamics]")[0])   # trajectory + transient only
    out = tmp_path / "long.h5"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    process = subprocess.Popen([sys.executable, "-m", "sim", "run", str(scenario), "--out", str(out)],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=env)
    time.sleep(3.0)
    assert process.poll() is None, "the run must still be going after 3 s"
    process.send_signal(signal.SIGINT)
    try:
        _, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    check_outcome(process.returncode, err, out, "interrupted", exit_code=130)
    if out.exists():
        with h5py.File(out, "r") as f:
            assert f.attrs["status"] == "incomplete" and f.attrs["message"] == "interrupted"


def _swallow_a_stop(function, calls=(0,)):
    """``function`` with Ctrl-C pressed, and its exception lost, on its calls numbered ``calls``:
    what a C look-up that treats any failure as "absent" does to a stop raised inside it."""
    count = [0]

    def swallowing(*args, **kwargs):
        if count[0] in calls:
            try:
                signal.raise_signal(signal.SIGINT)
            except KeyboardInterrupt:
                pass
        count[0] += 1
        return function(*args, **kwargs)
    return swallowing


@pytest.mark.parametrize("where", ["model", "transient"])
def test_a_lost_stop_still_ends_the_run(sim_run, monkeypatch, where):
    """A stop whose exception Python lost is raised at the next analysis or progress update:
    exit 130, one line, no complete file (it ran to its end and exited 0 before)."""
    from sim.app import api
    from sim.solvers.integrators import GeneralizedAlpha
    if where == "model":
        monkeypatch.setattr(api, "load_model", _swallow_a_stop(api.load_model))
    else:   # at the transient's first chunk of steps
        monkeypatch.setattr(GeneralizedAlpha, "advance", _swallow_a_stop(GeneralizedAlpha.advance))
    text = (ROOT / "scenarios" / "slider_crank.toml").read_text()
    code, err, out = sim_run(text.replace("../models/", f"{MODELS}/"))
    check_outcome(code, err, out, "interrupted", exit_code=130)
    if where == "model":
        assert not out.exists()
    else:
        with h5py.File(out, "r") as f:
            assert f.attrs["status"] == "incomplete" and f.attrs["message"] == "interrupted"
            assert f["transient"].attrs["status"] == "incomplete"


@pytest.mark.parametrize("model, fragments", [
    # The Delta-Surgiscope's links hang on lumped springs: turning its motors places no body,
    # so a drive-law transient has no rigid reference to measure the deviation from.
    ("delta_surgiscope.py", ("s.toml: [transient]", "`delta_surgiscope`", "held by springs only")),
    # A drive law turns actuators; a cantilever has none (it ended in a numpy traceback).
    ("beam.py", ("s.toml: [transient] drive_law drives the actuators, and `beam` has none",)),
], ids=["springs-only", "no-actuators"])
def test_transient_drive_law_needs_driven_bodies(sim_run, model, fragments):
    code, err, out = sim_run(f"""\
[model]
file = "{MODELS / model}"
[transient]
step = 1e-3
duration = 0.01
drive_law = {{ kind = "constant_rate", rate = 1.0 }}
""")
    check_outcome(code, err, out, *fragments)


# --- issue 16: the user errors that ended in tracebacks or silent results ------------------------


@pytest.mark.parametrize("body, fragments", [
    ('def build(length=1.0):\n    raise RuntimeError("no such part")\n',
     ("robot.py: build() failed: line 2: RuntimeError: no such part",)),
    ("import sys\ndef build(length=1.0):\n    sys.exit(0)\n", ("robot.py: build() called sys.exit(0)",)),
    ("import sys\nsys.exit(3)\ndef build():\n    pass\n", ("robot.py: the model file called sys.exit(3) while loading",)),
    ("def build(length=1.0):\n    return build(length)\n", ("robot.py: build() recursed without end",)),
], ids=["raises", "exits", "exits-on-import", "recursion"])
def test_model_file_failures_end_in_one_line(sim_run, tmp_path, body, fragments):
    """A model file is user code: whatever it raises (or a sys.exit) is one line naming it."""
    (tmp_path / "robot.py").write_text(body)
    code, err, out = sim_run(f'[model]\nfile = "{tmp_path / "robot.py"}"\n[modes]\ncount = 2\n')
    check_outcome(code, err, out, *fragments)
    assert not out.exists()


def test_implausible_density_is_refused(sim_run):
    code, err, out = sim_run(BEAM.replace("elements = 4", "elements = 4, rho = 1e-300"))
    check_outcome(code, err, out, "beam.py", "section `rho` = 1e-300 kg/m^3 is not plausible")


def test_toml_nested_too_deeply(sim_run):
    code, err, out = sim_run("x = " + "[" * 1000 + "]" * 1000 + "\n" + BEAM)
    check_outcome(code, err, out, "s.toml: invalid TOML: arrays or tables nested too deeply")


def test_scheduler_address_is_checked(sim_run):
    code, err, out = sim_run(BEAM, "--scheduler", "garbage!!")
    check_outcome(code, err, out, "--scheduler 'garbage!!': expected a Dask scheduler address")


def test_output_must_be_a_regular_file(tmp_path, capsys):
    """``--out /dev/null --force`` must not replace the device node with a file."""
    (tmp_path / "s.toml").write_text(BEAM)
    code = main(["run", str(tmp_path / "s.toml"), "--out", "/dev/null", "--force"])
    check_outcome(code, capsys.readouterr().err, tmp_path / "none.h5", "/dev/null: not a regular file")
    assert Path("/dev/null").is_char_device(), "the device node was replaced"


@pytest.mark.filterwarnings("error")      # numpy's "input contained no data" was printed (issue 40)
@pytest.mark.parametrize("content, fragment", [("", "the trajectory table is empty"),
                                                ("# t, x, y, z\n", "has no data rows"),
                                                ("t,x,y\n", "has no data rows")])
def test_empty_trajectory_table(sim_run, tmp_path, content, fragment):
    (tmp_path / "path.csv").write_text(content)
    code, err, out = sim_run(f"""\
[model]
file = "{MODELS / 'five_bar.py'}"
[trajectory]
kind = "table"
file = "{tmp_path / 'path.csv'}"
[ked]
intervals = 16
modes = 2
""")
    check_outcome(code, err, out, "path.csv", fragment)


def fake_result(path, build):
    with h5py.File(path, "w") as f:
        f.attrs["format_version"] = 1
        build(f)
    return path


def test_info_and_plot_of_a_foreign_file(tmp_path, capsys):
    """The format attribute on other contents: listed as it is, nothing to plot, one line."""
    path = fake_result(tmp_path / "x.h5", lambda f: f.create_dataset("transient", data=[1, 2, 3]))
    assert main(["info", str(path)]) == 0
    assert "transient" in capsys.readouterr().out
    assert main(["plot", str(path)]) == 2
    check_outcome(2, capsys.readouterr().err, tmp_path / "none.h5", "nothing to plot")


def test_info_and_plot_never_read_a_huge_dataset(tmp_path, capsys):
    """A 7 KB file claiming a transient of 1e9 compressed samples: `info` lists its shape
    without reading it; `plot` draws every 10 000th sample (1e5 per series, a few MB, not the
    7.45 GiB of the whole) and says so; a reader of the whole dataset is refused in one line."""
    import tracemalloc
    from sim.app.results import lazy_result
    from sim.errors import SimError

    def bomb(f):
        g = f.create_group("transient")
        g.attrs["pose_names"] = ["x"]
        for name, shape, units in (("time", (10**9,), "s"), ("deviation", (10**9, 1), "m")):
            d = g.create_dataset(name, shape=shape, dtype="f8", chunks=(10**6,) + shape[1:], compression="gzip")
            d.attrs["units"], d.attrs["description"] = units, name
    path = fake_result(tmp_path / "bomb.h5", bomb)
    assert path.stat().st_size < 100_000
    start = time.perf_counter()
    assert main(["info", str(path)]) == 0
    assert "1000000000" in capsys.readouterr().out and time.perf_counter() - start < 5
    tracemalloc.start()
    try:
        assert main(["plot", str(path), "--out", str(tmp_path / "bomb.png")]) == 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200e6, f"{peak / 1e6:.0f} MB allocated"
    assert (tmp_path / "bomb.png").stat().st_size > 10_000
    with lazy_result(path) as tree:
        try:
            tree["transient"]["time"]["data"]
        except SimError as exc:
            assert "claims 1e+09 elements (7.45 GiB)" in str(exc)
        else:
            raise AssertionError("a 1e9-element dataset was read whole")


def test_plot_format_is_checked(tmp_path, capsys):
    path = fake_result(tmp_path / "x.h5", lambda f: None)
    assert main(["plot", str(path), "--out", str(tmp_path / "x.txt")]) == 2
    check_outcome(2, capsys.readouterr().err, tmp_path / "none.h5", "x.txt: cannot draw a .txt image", ".png")
    assert not (tmp_path / "x.txt").exists()


def test_info_of_a_reserved_name(tmp_path, capsys):
    """A name reserved by a run that was killed: `info` says so in one line."""
    path = tmp_path / "r.h5"
    path.write_bytes(b"ffrsim: the result of a run in progress, pid 999999999 (%s)\n" % os.uname().nodename.encode())
    assert main(["info", str(path)]) == 2
    check_outcome(2, capsys.readouterr().err, tmp_path / "none.h5", "no result yet", "a run that was killed")


# --- cost estimates: absurd sizes are refused before anything is allocated ---------------------

SLIDER = f"""\
[model]
file = "{MODELS / 'slider_crank.py'}"
parameters = {{ elements = 2 }}
[trajectory]
kind = "polynomial"
start = [0.3]
end = [0.35]
duration = 0.5
"""


@pytest.mark.parametrize("table, fragments", [
    ("[transient]\nstep = 1e-12\noutput_step = 0.01\n",
     ("`transient.step`", "5e+11 steps", "would take about", "run with --yes")),
    ("[transient]\nstep = 1e-9\n", ("`transient.output_step`", "5e+08 samples written (one per step", "of memory")),
    ("[ked]\nintervals = 1000000000\n", ("`ked.intervals`", "1e+09 frames", "of memory", "available")),
    ("[frequencies]\nsamples = 100000000\n", ("`frequencies.samples`", "of memory")),
], ids=["step", "samples", "ked-intervals", "frequency-samples"])
def test_absurd_sizes_are_refused_with_an_estimate(sim_run, table, fragments):
    start = time.perf_counter()
    code, err, out = sim_run(SLIDER + table)
    check_outcome(code, err, out, "s.toml", *fragments)
    assert time.perf_counter() - start < 30 and not out.exists()


def test_huge_pose_map_is_refused(sim_run):
    code, err, out = sim_run(NAVARO_MODES + '[sweep]\naxes = ["x", "y"]\nx = [-0.05, 0.05, 10000]\n'
                             'y = [-0.05, 0.05, 10000]\n')
    check_outcome(code, err, out, "`sweep.x`", "1e+08 poses", "would take about", "--yes")


def test_time_estimates_follow_the_measured_curves():
    """The per-unit costs are the measured points times the margin, joined log-log (a power law
    between two points: the geometric mean at the geometric mean), extended with the end
    segments' slopes; the general solver's frozen structures cost more at the same size."""
    from sim.app.cost import CURVES, GENERAL, MARGIN, SERVO, _unit
    for table, general, servo in ((CURVES, False, False), (GENERAL, True, False), (SERVO, False, True)):
        for kind, points in table.items():
            for n, t in points:
                assert _unit(kind, n, general, servo) == pytest.approx(MARGIN * t, rel=1e-12)
            (n0, t0), (n1, t1) = points[0], points[1]
            assert _unit(kind, np.sqrt(n0 * n1), general, servo) == pytest.approx(MARGIN * np.sqrt(t0 * t1),
                                                                                  rel=1e-12)
            (n0, t0), (n1, t1) = points[-2], points[-1]
            slope = np.log(t1 / t0) / np.log(n1 / n0)
            assert _unit(kind, 4 * n1, general, servo) == pytest.approx(MARGIN * t1 * 4 ** slope, rel=1e-12)
    for kind in GENERAL:
        assert _unit(kind, 1000, True) > _unit(kind, 1000)
    for kind in SERVO:
        assert _unit(kind, 1000, servo=True) > 10 * _unit(kind, 1000)


def test_a_fine_mesh_the_engine_runs_in_minutes_is_not_refused():
    """The 3-RRRU circle with 128 elements per link (2364 coordinates, 20 000 steps: about two
    minutes here) was refused as 'about 3.13 h' by the dense era's n_v^2.3 scaling; now it is
    estimated in minutes, above what it takes (the margin), and runs without --yes."""
    from types import SimpleNamespace

    from sim.app.cost import TIME_LIMIT, check, estimate
    from sim.app.scenario import load_scenario
    scenario = load_scenario(ROOT / "scenarios" / "rrru3_circle.toml")
    model = load_model(scenario.model_file, {**scenario.model_parameters, "elements_per_link": 128})
    costs = {c.key: c.seconds for c in estimate(scenario, model)}
    assert 20000 * 5.3e-3 < costs["transient.step"] < TIME_LIMIT / 10
    check(SimpleNamespace(path="s.toml"), estimate(scenario, model), memory=1e12)


def test_the_servo_drives_frozen_structures_are_estimated_on_their_own_curve():
    """The KED and the closed-loop frequencies with ``drives = "servo"`` cost more than the
    locked ones: on the locked curves the 3-RRRU with 32 elements per link (636 coordinates)
    was estimated at 0.2 s for a KED that took 35 s (201 frames, dense; 7 s now, sparse) and
    0.01 s for closed-loop frequencies that took 7 s (6 samples, dense: about n_v^3; 0.3 s
    now, sparse).  Now above what they take; with 64 elements per link 300 closed-loop
    samples stay under two minutes (28 s measured, sparse) and 100 000 need --yes; the shipped
    rrru3_servo (4 elements per link) stays at seconds."""
    from types import SimpleNamespace

    from sim.app.cost import TIME_LIMIT, check, estimate
    from sim.app.scenario import load_scenario
    from sim.errors import SimError
    scenario = load_scenario(ROOT / "scenarios" / "rrru3_servo.toml")
    costs = {c.key: c.seconds for c in estimate(scenario, load_model(scenario.model_file, scenario.model_parameters))}
    assert 201 * 6.6e-3 < costs["ked.intervals"] < 30 and 100 * 1.9e-2 < costs["frequencies.samples"] < 30
    model = load_model(scenario.model_file, {**scenario.model_parameters, "elements_per_link": 32})
    scenario.data["frequencies"]["samples"] = 6
    costs = {c.key: c.seconds for c in estimate(scenario, model)}
    assert 6.8 < costs["ked.intervals"] < 6.8 * 10 and 0.33 < costs["frequencies.samples"] < 0.33 * 10
    model = load_model(scenario.model_file, {**scenario.model_parameters, "elements_per_link": 64})
    scenario.data["frequencies"]["samples"] = 300
    costs = {c.key: c.seconds for c in estimate(scenario, model)}
    assert 28 < costs["frequencies.samples"] < 120 and costs["ked.intervals"] < 60     # 13.5 s measured, sparse
    scenario.data["frequencies"]["samples"] = 100_000
    costs = estimate(scenario, model)
    assert next(c.seconds for c in costs if c.key == "frequencies.samples") > TIME_LIMIT
    with pytest.raises(SimError, match="`frequencies.samples`.*would take about .*run with --yes"):
        check(SimpleNamespace(path="s.toml"), costs, memory=1e12)


def test_yes_lifts_the_time_limit_not_the_memory_one():
    from types import SimpleNamespace

    from sim.app.cost import Cost, check
    from sim.errors import SimError
    scenario = SimpleNamespace(path="s.toml")
    slow = [Cost("transient.step", 1e6, 1e6, "1e9 steps")]
    with pytest.raises(SimError, match="would take about 11.6 days; run with --yes"):
        check(scenario, slow, memory=1e9)
    check(scenario, slow, allow_long=True, memory=1e9)
    big = [Cost("ked.intervals", 2e9, 1.0, "1e8 frames")]
    with pytest.raises(SimError, match="need about 1.86 GiB of memory"):
        check(scenario, big, allow_long=True, memory=1e9)


def test_section_without_shear_modulus_or_poisson_ratio(sim_run, tmp_path):
    """``Section.tube(...)`` with neither ``G`` nor ``nu``: one line naming the model file's line."""
    (tmp_path / "robot.py").write_text(
        "from sim import ModelBuilder, Section\n"
        "def build():\n"
        "    tube = Section.tube(0.01, 0.001, E=70e9, rho=2700.0)\n")
    code, err, out = sim_run(f'[model]\nfile = "{tmp_path / "robot.py"}"\n[modes]\ncount = 2\n')
    check_outcome(code, err, out, "robot.py: line 3: section: give the shear modulus G or Poisson's ratio nu")


def test_hht_below_its_range_is_one_line(sim_run):
    """HHT's alpha_f = (1 - rho)/(1 + rho) leaves [0, 1/3] below rho_inf = 0.5 (it ended in a
    traceback); generalized-alpha takes the whole [0, 1]."""
    text = NAVARO_CIRCLE.replace("radius = 0.4", "radius = 0.01").replace(
        "[inverse_dynamics]\nsamples = 20", '[transient]\nstep = 1e-3\nduration = 0.01\nmethod = "hht"\nrho_inf = 0.3')
    code, err, out = sim_run(text)
    check_outcome(code, err, out, "s.toml: [transient] rho_inf = 0.3 is below HHT's range [0.5, 1]",
                  'method = "generalized-alpha" takes rho_inf down to 0')
    assert not out.exists()
