"""``sim modes`` as a user runs it: a subprocess from the repository root."""
import json
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT
from problems import NAVARO_TABLE3_HZ


def sim(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "sim", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


@pytest.fixture(scope="module")
def navaro_json():
    run = sim("modes", "models/navaro.py", "--pose", "0", "0", "0", "--json")
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_modes_json_ascending(navaro_json):
    f = navaro_json["frequencies_hz"]
    assert len(f) > 0 and np.all(np.diff(f) >= 0), f"frequencies_hz not ascending: {f}"


def test_modes_json_gives_cast3m(navaro_json):
    """Paper 000 Table 3, pose 1 (five lowest, f4 out of the plane), within 0.1 %."""
    np.testing.assert_allclose(navaro_json["frequencies_hz"][:5], NAVARO_TABLE3_HZ[1], rtol=1e-3)


MALFORMED = "def build(:\n    pass\n"

ERRORS = {
    "unknown_parameter": (["modes", "models/navaro.py", "--param", "elements_per_lnk=2"], "elements_per_lnk"),
    "pose_outside_workspace": (["modes", "models/navaro.py", "--pose", "0.5", "0", "0"], "workspace"),
    "malformed_model": (["modes", "{tmp}/broken.py"], "broken.py"),
}


@pytest.mark.parametrize("case", ERRORS)
def test_modes_user_error_is_one_line(tmp_path, case):
    (tmp_path / "broken.py").write_text(MALFORMED)
    args, fragment = ERRORS[case]
    run = sim(*(a.format(tmp=tmp_path) for a in args))
    lines = run.stderr.strip().splitlines()
    assert (run.returncode, len(lines)) == (2, 1), f"exit {run.returncode}, stderr {run.stderr!r}"
    assert "Traceback" not in run.stderr and fragment in lines[0], f"stderr {run.stderr!r}"


def test_version():
    result = sim("--version")
    assert result.returncode == 0 and result.stdout.startswith("ffrsim ")


def test_model_describes_a_model_file():
    """`sim model`: the parameters with their defaults and documentation, the bodies with their
    masses, joints, actuators and the end-effector coordinates; --param values are applied."""
    result = sim("model", "models/navaro.py", "--param", "elements_per_link=2")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "model `navaro`" in out
    assert "clutch_stiffness = 0.0  Torsional stiffness of the locked clutches at A [N m/rad]" in out
    assert "elements_per_link = 2 (default 1)" in out
    assert "bodies (13; " in out and "platform" in out and "actuators (6):" in out
    assert "end effector: marker P, coordinates x [m], y [m], theta [rad]" in out


def test_model_of_a_broken_file_is_one_line(tmp_path):
    (tmp_path / "robot.py").write_text("def build():\n    raise KeyError('arm')\n")
    result = sim("model", tmp_path / "robot.py")
    assert result.returncode == 2 and result.stderr.strip().count("\n") == 0
    assert "robot.py: build() failed: line 2: KeyError" in result.stderr
