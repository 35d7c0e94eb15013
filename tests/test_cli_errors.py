"""The CLI turns user errors into one line on stderr, exit code 2, no traceback, no file."""

import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from sim.app.cli import main
from sim.errors import SimError
from sim.app.results import ResultFile, read_result

ROOT = Path(__file__).resolve().parents[1]

SCENARIO = """\
name = "demo"
[model]
file = "robot.py"
[modes]
count = 3
"""


@pytest.fixture
def scenario(tmp_path, monkeypatch):
    """write(text) -> path of a scenario next to an empty model file; cwd is tmp_path."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "robot.py").write_text("")

    def write(text=SCENARIO):
        path = tmp_path / "a.toml"
        path.write_text(text)
        return path
    return write


def run_cli(capsys, *argv):
    """Run main(argv); return (exit code, stdout, stderr)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code, err, *fragments):
    assert code == 2, f"exit code {code}, stderr {err!r}"
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), f"stderr {err!r}"
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0], f"{fragment!r} not in {lines[0]!r}"


def test_missing_scenario_file(capsys, tmp_path):
    code, _, err = run_cli(capsys, "run", tmp_path / "missing.toml")
    assert_one_line_error(code, err, "missing.toml", "not found")


def test_malformed_toml(capsys, scenario):
    code, _, err = run_cli(capsys, "run", scenario(SCENARIO + "count = = 3\n"))
    assert_one_line_error(code, err, "a.toml", "invalid TOML", "line 6")


def test_unknown_key(capsys, scenario):
    code, _, err = run_cli(capsys, "validate", scenario(SCENARIO.replace("count", "cont")))
    assert_one_line_error(code, err, "unknown key `modes.cont`", "did you mean `modes.count`?")


def test_bad_override(capsys, scenario):
    code, _, err = run_cli(capsys, "run", scenario(), "--set", "modes.count=-2")
    assert_one_line_error(code, err, "--set modes.count", "positive integer, got -2")


def test_unavailable_analysis_writes_nothing(capsys, scenario, tmp_path, monkeypatch):
    # every shipped analysis is registered: hide one to exercise the guard
    from sim.analyses import ANALYSES
    monkeypatch.delitem(ANALYSES, "design", raising=False)
    text = SCENARIO + "[design]\nparameter = 'radius'\n"
    code, _, err = run_cli(capsys, "run", scenario(text), "--out", tmp_path / "out.h5")
    assert_one_line_error(code, err, "`[design]` analysis is not available in this version")
    assert not (tmp_path / "out.h5").exists()
    assert not list(tmp_path.glob(".*.tmp")), "a temporary file was left"


def test_existing_output_refused(capsys, scenario, tmp_path):
    out = tmp_path / "results" / "demo.h5"
    out.parent.mkdir()
    out.write_bytes(b"keep")
    code, _, err = run_cli(capsys, "run", scenario(), "--out", out)
    assert_one_line_error(code, err, "demo.h5 exists; use --force or --out")
    assert out.read_bytes() == b"keep"


def test_default_output_takes_a_new_name(capsys, scenario, fake_engine, tmp_path):
    # re-running a scenario (e.g. the README's first command) keeps the earlier result
    fake_engine(fake_modes)
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "demo.h5").write_bytes(b"keep")
    code, out, _ = run_cli(capsys, "run", scenario())
    assert code == 0 and "wrote results/demo-2.h5" in out
    assert (tmp_path / "results" / "demo.h5").read_bytes() == b"keep"
    assert read_result(tmp_path / "results" / "demo-2.h5")["modes"]["attrs"]["status"] == "complete"


def test_missing_model_file_for_modes(capsys, tmp_path):
    code, _, err = run_cli(capsys, "modes", tmp_path / "nope.py", "--json")
    assert_one_line_error(code, err, "nope.py", "not found")


def test_bad_param_for_modes(capsys, tmp_path):
    model = tmp_path / "robot.py"
    model.write_text("")
    code, _, err = run_cli(capsys, "modes", model, "--param", "elements")
    assert_one_line_error(code, err, "--param elements", "NAME=VALUE")


def test_info_on_missing_file(capsys, tmp_path):
    code, _, err = run_cli(capsys, "info", tmp_path / "none.h5")
    assert_one_line_error(code, err, "none.h5", "not found")


def test_info_on_non_hdf5(capsys, tmp_path):
    path = tmp_path / "bad.h5"
    path.write_text("text")
    code, _, err = run_cli(capsys, "info", path)
    assert_one_line_error(code, err, "bad.h5", "not an HDF5 file")


def test_usage_error_exit_code(capsys):
    assert main(["frobnicate"]) == 2


def written_result(path):
    with ResultFile(path, scenario='name = "demo"\n', model_file="robot.py",
                    model_parameters={}) as rf:
        group = rf.group("modes")
        group.put("frequencies", np.array([44.1, 53.9, 95.6]), "Hz", "natural frequencies")
    return path


def test_info_lists_groups(capsys, tmp_path):
    code, out, _ = run_cli(capsys, "info", written_result(tmp_path / "r.h5"))
    assert code == 0 and "[modes] complete" in out and "frequencies" in out


def test_plot_writes_png(capsys, tmp_path):
    code, out, _ = run_cli(capsys, "plot", written_result(tmp_path / "r.h5"))
    assert code == 0 and (tmp_path / "r.png").stat().st_size > 0


def test_module_entry_point_without_traceback(tmp_path):
    result = subprocess.run([sys.executable, "-m", "sim", "run", str(tmp_path / "x.toml")],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"error: {tmp_path / 'x.toml'}: "
                                                  "scenario file not found"]


@pytest.fixture
def fake_engine(monkeypatch):
    """Replace model loading and the modes analysis so `sim run` runs without the engine."""
    import sim.app.api
    from sim.analyses import ANALYSES, PREPARE

    import sim.app.cost
    model = types.SimpleNamespace(warnings=())     # a model with nothing to say
    monkeypatch.setattr(sim.app.api, "load_model", lambda path, **parameters: model)
    monkeypatch.setattr(sim.app.cost, "estimate", lambda scenario, model: [])

    def install(analysis):
        monkeypatch.setitem(ANALYSES, "modes", analysis)
        monkeypatch.delitem(PREPARE, "modes", raising=False)     # (its kernels: the engine's)
    return install


def fake_modes(model, scenario, group, progress):
    group.put("frequencies", np.array([44.1, 95.6]), "Hz", "natural frequencies")
    return {"frequency_range_hz": (44.1, 95.6)}


def failing_modes(model, scenario, group, progress):
    group.put("frequencies", np.array([44.1]), "Hz", "natural frequencies")
    raise SimError("robot.py: pose (x, y, theta) = [1.0, 0.0, 0.0] is outside the workspace")


def test_run_writes_result_and_summary(capsys, scenario, fake_engine, tmp_path):
    fake_engine(fake_modes)
    code, out, _ = run_cli(capsys, "run", scenario())
    assert code == 0 and "frequency_range_hz = 44.1 .. 95.6" in out
    assert read_result(tmp_path / "results" / "demo.h5")["modes"]["attrs"]["status"] \
        == "complete"


def test_run_failure_keeps_incomplete_file(capsys, scenario, fake_engine, tmp_path):
    fake_engine(failing_modes)
    code, _, err = run_cli(capsys, "run", scenario())
    assert_one_line_error(code, err, "outside the workspace")
    attrs = read_result(tmp_path / "results" / "demo.h5")["modes"]["attrs"]
    assert attrs["status"] == "incomplete" and "outside the workspace" in attrs["message"]


def test_more_modes_than_the_robot_has_leave_no_file(capsys, tmp_path, monkeypatch):
    """A [frequencies] count above the robot's elastic modes is refused before the result file
    is opened, even behind an analysis that would have run."""
    import arm_model

    monkeypatch.chdir(tmp_path)
    path = tmp_path / "arm.toml"
    path.write_text(arm_model.scenario(0.1, "[modes]\ncount = 2\n[frequencies]\ncount = 1000\nsamples = 5\n"))
    code, _, err = run_cli(capsys, "run", path, "--out", tmp_path / "arm.h5")
    assert_one_line_error(code, err, "arm.toml", "[frequencies] count = 1000 exceeds the", "elastic modes")
    assert not (tmp_path / "arm.h5").exists() and not (tmp_path / "results").exists()


def test_plotting_an_older_run_says_a_newer_one_is_beside_it(tmp_path, capsys):
    """Issue 43: a second `sim run` of a scenario writes <name>-2.h5; `sim plot` of the first
    says so instead of silently showing the old run (and says nothing for the latest)."""
    import os
    from sim.app.cli import newer_runs
    first, second, other = tmp_path / "s.h5", tmp_path / "s-2.h5", tmp_path / "s-x.h5"
    for k, p in enumerate((first, second, other)):
        p.write_bytes(b"")
        os.utime(p, (1000.0 + k, 1000.0 + k))
    assert newer_runs(first) == [second]
    assert newer_runs(second) == []
