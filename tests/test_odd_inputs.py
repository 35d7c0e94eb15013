"""Inputs of issue 40's probe that ended in a traceback, a printed warning or an unnamed error.

Each ends in one line ``error: ...`` naming the file, key or dataset, exit code 2, and no
traceback (:func:`test_bad_input.check_outcome`).
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from sim.app.cli import main
from test_bad_input import BEAM, MODELS, check_outcome


@pytest.mark.parametrize("nu", ["-1", "-1.5", "0.7", "nan"])
def test_poisson_ratio_outside_its_range_is_named(tmp_path, capsys, nu):
    code = main(["modes", str(MODELS / "rrru3.py"), "--param", f"nu={nu}"])
    check_outcome(code, capsys.readouterr().err, tmp_path / "none.h5", "rrru3.py", "`nu`", "(-1, 0.5]")


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


# --- crafted or damaged result files ------------------------------------------------------------

MOTION = f"""\
[model]
file = "{MODELS / 'slider_crank.py'}"
parameters = {{ elements = 2 }}
[transient]
step = 1e-4
duration = 0.01
drive_law = {{ kind = "constant_rate", rate = 10.0 }}
"""


@pytest.fixture(scope="module")
def motion(tmp_path_factory):
    """A result file with a transient group (deviation, skeleton), written by `sim run`."""
    directory = tmp_path_factory.mktemp("motion")
    (directory / "s.toml").write_text(MOTION)
    out = directory / "motion.h5"
    assert main(["run", str(directory / "s.toml"), "--out", str(out)]) == 0
    return out


def _soft_loop(f):
    del f["transient/deviation"]
    f["transient/deviation"] = h5py.SoftLink("/transient/deviation")


def _external(f):
    del f["transient/deviation"]
    f["transient/deviation"] = h5py.ExternalLink("/etc/passwd", "/x")


def _cycle(f):
    f["transient/sensors/again"] = f["transient"]


def _short(f):
    data = f["transient/deviation"][:5]
    del f["transient/deviation"]
    f["transient/deviation"] = data


def _nan_skeleton(f):
    for name in ("points", "points_rigid"):
        f["transient/skeleton"][name][...] = np.nan


def _overrides(f):
    f.attrs["overrides"] = "not JSON {"


CRAFTS = {
    "soft-link-loop": (_soft_loop, ("info", "plot", "compare", "animate"), "`/transient/deviation` is a soft link"),
    "external-link": (_external, ("info", "plot", "compare", "animate"), "`/transient/deviation` is an external link"),
    "group-link-cycle": (_cycle, ("info", "plot", "compare", "animate"), "`/transient/sensors/again` is a second link"),
    "lengths-disagree": (_short, ("plot", "compare"), "`/transient/deviation` has 5 rows for the 101 entries"),
    "overrides-not-json": (_overrides, ("compare",), "root attribute `overrides` is not a JSON list"),
    "all-nan-skeleton": (_nan_skeleton, ("animate",), "`/transient/skeleton/points` holds NaN"),
}


@pytest.mark.parametrize("craft, command", [(name, command) for name, (_, commands, _) in CRAFTS.items()
                                            for command in commands])
def test_crafted_result_file_is_named_not_a_traceback(tmp_path, capsys, motion, craft, command):
    build, _, fragment = CRAFTS[craft]
    path = tmp_path / "crafted.h5"
    shutil.copy(motion, path)
    with h5py.File(path, "a") as f:
        build(f)
    inputs = [str(motion), str(path)] if command == "compare" else [str(path)]
    out = ["--out", str(tmp_path / ("x.gif" if command == "animate" else "x.png"))] if command != "info" else []
    code = main([command, *inputs, *out])
    check_outcome(code, capsys.readouterr().err, tmp_path / "none.h5", str(path), fragment)
    assert not (tmp_path / "x.png").exists() and not (tmp_path / "x.gif").exists()


@pytest.mark.filterwarnings("error")      # numpy's "All-NaN slice encountered" was printed
@pytest.mark.parametrize("command", ["plot", "compare"])
def test_nan_data_is_drawn_without_warnings(tmp_path, capsys, motion, command):
    path = tmp_path / "nan.h5"
    shutil.copy(motion, path)
    with h5py.File(path, "a") as f:
        for name in ("deviation", "pose", "pose_rigid", "energy", "constraint_violation"):
            f["transient"][name][...] = np.nan
    inputs = [str(motion), str(path)] if command == "compare" else [str(path)]
    assert main([command, *inputs, "--out", str(tmp_path / "x.png")]) == 0, capsys.readouterr().err
    assert (tmp_path / "x.png").read_bytes().startswith(b"\x89PNG")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
@pytest.mark.parametrize("command", ["info", "run"])
def test_full_standard_output_is_named(tmp_path, motion, command):
    """``> /dev/full``: one line naming standard output (its errno text alone said nothing)."""
    (tmp_path / "s.toml").write_text(MOTION)
    args = ["info", str(motion)] if command == "info" else ["run", str(tmp_path / "s.toml"), "--out",
                                                             str(tmp_path / "out.h5")]
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "sim", *args], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=300, env=dict(os.environ, PYTHONPATH=str(MODELS.parent)))
    check_outcome(done.returncode, done.stderr, tmp_path / "out.h5",
                  "standard output: cannot write (No space left on device)")


PROBE = """\
from numba import njit


@njit(cache=True)
def one_more(x):
    return x + 1
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a read-only tree")
def test_read_only_installation_without_a_home_still_compiles(tmp_path):
    """Neither the installation (a read-only mount) nor the home (inside it) writable: the
    kernels are cached in a private temporary directory instead of numba refusing to compile
    ("cannot cache function ...: no locator available", a 46-line traceback)."""
    tree = tmp_path / "install"
    shutil.copytree(MODELS.parent / "sim", tree / "sim", ignore=shutil.ignore_patterns("__pycache__"))
    (tree / "probe.py").write_text(PROBE)
    (tree / "home").mkdir()
    if subprocess.run(["mount", "--bind", "-o", "ro", str(tree), str(tree)], capture_output=True).returncode:
        pytest.skip("cannot mount here")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(tree)], check=True, capture_output=True)
        env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
        done = subprocess.run([sys.executable, "-c", "import sim, probe; print(probe.one_more(1))"], cwd=tree,
                              env=dict(env, PYTHONPATH=str(tree), HOME=str(tree / "home")),
                              capture_output=True, text=True, timeout=120)
    finally:
        subprocess.run(["umount", str(tree)], capture_output=True)
    assert done.returncode == 0 and done.stdout.strip() == "2", done.stderr[-2000:]


def run_table(tmp_path, capsys, analysis):
    """``sim run`` of the five-bar following the table ``path.csv`` of ``tmp_path``, with the
    TOML table ``analysis``: (exit code, stderr, output path)."""
    (tmp_path / "s.toml").write_text(f"""\
[model]
file = "{MODELS / 'five_bar.py'}"
[trajectory]
kind = "table"
file = "path.csv"
{analysis}""")
    out = tmp_path / "out.h5"
    return main(["run", str(tmp_path / "s.toml"), "--out", str(out)]), capsys.readouterr().err, out


def test_table_trajectory_span_counts_in_the_estimate(tmp_path, capsys):
    """A table of four rows spanning 4e8 s: refused before any analysis by its estimate (the
    estimate knew only the other kinds' durations)."""
    (tmp_path / "path.csv").write_text("t,x,y,z\n0,0,0.35,0\n1e8,0,0.35,0\n2e8,0,0.35,0\n4e8,0,0.35,0\n")
    check_outcome(*run_table(tmp_path, capsys, "[transient]\nstep = 2e-4\n"), "`transient.output_step`",
                  "2e+12 samples")


def test_available_memory_counts_the_address_space_limit():
    """Under ``ulimit -v`` the estimates' memory is what the limit leaves, not the machine's."""
    import resource
    limit = 6 * 2**30
    done = subprocess.run([sys.executable, "-c", "from sim.model.builder import available_memory; "
                           "print(available_memory())"], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(MODELS.parent)),
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)))
    assert done.returncode == 0, done.stderr
    assert 0 < float(done.stdout) < limit


def test_too_many_elements_are_refused_before_allocating(tmp_path, capsys):
    """A million elements per link: the body's build (500 kB an element, by rows: linear) is
    counted before it is allocated, not left to a MemoryError blamed on the model file's build()."""
    code = main(["modes", str(MODELS / "rrru3.py"), "--param", "elements_per_link=1000000"])
    check_outcome(code, capsys.readouterr().err, tmp_path / "none.h5", "rrru3.py", "1000000 elements",
                  "466 GiB", "use fewer elements")


@pytest.mark.parametrize("bound, fragments", [
    ("", ("`max_acceleration`", "rows rounded to few digits")),
    ("max_acceleration = 1e9\n", ("[ked]", "is in the workspace but was not followed", "smooth the table")),
], ids=["pace-check", "bound-raised"])
def test_table_rounded_to_few_digits_is_not_blamed_on_the_workspace(tmp_path, capsys, bound, fragments):
    """A circle well inside the workspace, 50 000 rows rounded to 5 digits: the spline's
    accelerations are the rounding's noise.  The pace check names the rounding among the
    causes; with its bound raised, the motion is lost between samples and the line says why
    instead of "leaves the workspace"."""
    t = np.linspace(0.0, 0.5, 50_000)
    np.savetxt(tmp_path / "path.csv", np.column_stack([t, 0.03 * np.cos(12.566 * t), 0.35 + 0.03 * np.sin(12.566 * t),
                                                       0 * t]),
               delimiter=",", fmt="%.12g,%.5g,%.5g,%.5g", header="t,x,y,z", comments="")
    check_outcome(*run_table(tmp_path, capsys, bound + "[ked]\nintervals = 16\nmodes = 2\n"), *fragments)
