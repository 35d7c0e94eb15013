"""Inputs of issue 40's probe that ended in a traceback, a printed warning or an unnamed error.

Each ends in one line ``error: ...`` naming the file, key or dataset, exit code 2, and no
traceback (:func:`test_bad_input.check_outcome`).
"""
from pathlib import Path

import pytest

from sim.app.cli import main
from test_bad_input import BEAM, MODELS, check_outcome


@pytest.mark.parametrize("nu", ["-1", "-1.5", "0.7", "nan"])
def test_poisson_ratio_outside_its_range_is_named(tmp_path, capsys, nu):
    code = main(["modes", str(MODELS / "rrru3.py"), "--param", f"nu={nu}"])
    check_outcome(code, capsys.readouterr().err, tmp_path / "none.h5", "rrru3.py", "`nu`", "(-1, 0.5]")


@pytest.mark.filterwarnings("error")      # numpy's "input contained no data" was printed
def test_header_only_trajectory_table(tmp_path, capsys):
    (tmp_path / "path.csv").write_text("t,x,y\n")
    (tmp_path / "s.toml").write_text(f"""\
[model]
file = "{MODELS / 'five_bar.py'}"
[trajectory]
kind = "table"
file = "{tmp_path / 'path.csv'}"
[ked]
intervals = 16
modes = 2
""")
    code = main(["run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "out.h5")])
    check_outcome(code, capsys.readouterr().err, tmp_path / "out.h5", "path.csv", "has no data rows")


@pytest.mark.parametrize("file_text, override, fragments", [
    (BEAM + ".".join(["a"] * 5000) + " = 1\n", None, ("s.toml", "`modes.a.a.a...`", "nested more than")),
    (BEAM, ".".join(["a"] * 5000) + "=1", ("--set a.a.a", "a key of 5000 parts")),
    (BEAM, "model.parameters.x=" + "[" * 10000 + "]" * 10000, ("--set model.parameters.x", "too deeply")),
    (BEAM, "model.parameters.x=" + "[" * 40 + "]" * 40, ("--set model.parameters.x", "nested more than")),
], ids=["dotted-key-in-file", "dotted-key-set", "set-value-10000-deep", "set-value-40-deep"])
def test_deep_nesting_is_refused_not_a_recursion_error(tmp_path, capsys, file_text, override, fragments):
    scenario = tmp_path / "s.toml"
    scenario.write_text(file_text)
    out = tmp_path / "out.h5"
    code = main(["run", str(scenario), "--out", str(out), *(["--set", override] if override else [])])
    check_outcome(code, capsys.readouterr().err, out, *fragments)
    assert not Path(out).exists()
