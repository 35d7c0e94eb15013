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
import pytest

import problems
from sim.app.cli import main

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
    assert not out.with_name(out.name + ".partial").exists(), "a .partial file was left"
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


def test_transient_drive_law_on_bodies_held_by_springs_only(sim_run):
    """The Delta-Surgiscope's links hang on lumped springs: turning its motors places no
    body, so a drive-law transient has no rigid reference to measure the deviation from."""
    code, err, out = sim_run(f"""\
[model]
file = "{MODELS / 'delta_surgiscope.py'}"
[transient]
step = 1e-3
duration = 0.01
drive_law = {{ kind = "constant_rate", rate = 1.0 }}
""")
    check_outcome(code, err, out, "s.toml: [transient]", "`delta_surgiscope`", "held by springs only")
