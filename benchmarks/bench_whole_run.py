"""What the user waits for: the whole ``sim run`` process beside the whole Exudyn script (issue 41).

Usage::

    python3 -m venv /path/to/exu && /path/to/exu/bin/pip install exudyn numpy
    python benchmarks/bench_whole_run.py --exudyn-python /path/to/exu/bin/python [--rounds 5]

For Simeon's slider-crank (2000 steps; also with geometric stiffening, which Exudyn's
geometrically exact rod has anyway) and the spin-up beam (20 000 steps), alternately in one
run (the machine's load varies), each program as a whole process: ``sim run SCENARIO --out TMP
--force`` (warm kernel cache, one run first to warm it) and the Exudyn script of
``../shared/peers/exudyn/`` on the same data.  Prints, as medians with the ratios' range:

* the whole process' wall time (target: <= 2.5x on the slider-crank, <= 1.0x on the spin-up);
* the transient group's ``wall_time_s`` per step (the whole analysis: rigid reference, loop,
  skeleton, sections, self-checks) against Exudyn's solve per step (target <= 1.5x);
* the compiled loop per step (``time_per_step_s``) against Exudyn's solve per step (<= 1.0x);
* the import floor the issue names: ``python -c "import numpy, numba, scipy.linalg, h5py"`` as a
  whole process, and what a small run imports (``numpy, numba, h5py``: ``scipy.linalg``'s package
  is kept out of it, :func:`sim.kernels._numba._light_lapack`).

``PYTHONDONTWRITEBYTECODE`` is removed from the children's environment: a user's installation
keeps its compiled bytecode, and without it every run compiles ffrsim's sources again.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import h5py

ROOT = Path(__file__).resolve().parents[1]
CASES = (
    # name, scenario and its overrides, peer script, its arguments, steps, the whole process' target
    ("slider-crank", "scenarios/slider_crank.toml", [], "slider_crank_simeon.py", ["--n", "8"], 2000, 2.5),
    # (Exudyn's ANCF rod is geometrically exact: the same script for the stiffened rod)
    ("stiffened slider-crank", "scenarios/slider_crank.toml", ["model.parameters.stiffening=true"],
     "slider_crank_simeon.py", ["--n", "8"], 2000, None),
    ("spin-up beam", "scenarios/spinup_beam.toml", [], "spinup_beam.py", ["--n", "10"], 20000, 1.0),
)


def environment():
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MPLBACKEND="Agg")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def timed(command, env, cwd):
    """Wall time [s] of ``command`` as a whole process, and its standard output."""
    start = time.perf_counter()
    run = subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd)
    wall = time.perf_counter() - start
    if run.returncode:
        sys.exit(f"bench_whole_run: {' '.join(map(str, command))} failed:\n{run.stderr[-2000:]}")
    return wall, run.stdout


def ours(scenario, overrides, out, env):
    """Whole process [s], transient group wall time and loop time per step [s] of `sim run`."""
    sets = [arg for item in overrides for arg in ("--set", item)]
    wall, _ = timed([sys.executable, "-m", "sim", "run", scenario, "--out", str(out), "--force", *sets], env, ROOT)
    with h5py.File(out, "r") as f:
        g = f["transient"]
        steps = int(g.attrs["steps"])
        return wall, float(g.attrs["wall_time_s"]) / steps, float(g.attrs["time_per_step_s"])


def theirs(python, script, args, csv, env):
    """Whole process [s] and solve per step [s] of an Exudyn script."""
    wall, out = timed([python, str(script), *args, "--csv", str(csv)], env, script.parent)
    return wall, 1e-6 * float(re.search(r"us_per_step (\S+)", out).group(1))


def summary(label, values, unit=1.0, digits=3):
    return f"{label} {statistics.median(values) * unit:.{digits}g}"


def ratio(a, b):
    r = [x / y for x, y in zip(a, b)]
    return f"{statistics.median(r):.2f} ({min(r):.2f}-{max(r):.2f})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exudyn-python", default=os.environ.get("EXUDYN_PYTHON", "/tmp/exu/bin/python"),
                        help="python of a virtual environment with exudyn (or $EXUDYN_PYTHON)")
    parser.add_argument("--peers", type=Path, default=ROOT.parent / "shared" / "peers" / "exudyn")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--case", choices=[c[0] for c in CASES], action="append",
                        help="only this case (repeatable)")
    args = parser.parse_args()
    env = environment()
    with tempfile.TemporaryDirectory() as tmp:
        floor, light = [], []
        for _ in range(args.rounds):
            floor.append(timed([sys.executable, "-c", "import numpy, numba, scipy.linalg, h5py"], env, ROOT)[0])
            light.append(timed([sys.executable, "-c", "import numpy, numba, h5py"], env, ROOT)[0])
        print(f"import floor (numpy, numba, scipy.linalg, h5py as a whole process): "
              f"{statistics.median(floor):.3f} s; without scipy.linalg (what a small run imports): "
              f"{statistics.median(light):.3f} s")
        for name, scenario, overrides, script, peer_args, steps, target in CASES:
            if args.case and name not in args.case:
                continue
            out, csv = Path(tmp) / "run.h5", Path(tmp) / "peer.csv"
            ours(scenario, overrides, out, env)      # warm the kernel cache and the bytecode
            mine = {"wall": [], "analysis": [], "loop": []}
            peer = {"wall": [], "step": []}
            for _ in range(args.rounds):
                for key, value in zip(mine, ours(scenario, overrides, out, env)):
                    mine[key].append(value)
                for key, value in zip(peer, theirs(args.exudyn_python, args.peers / script, peer_args, csv, env)):
                    peer[key].append(value)
            print(f"{name} ({steps} steps, {args.rounds} alternated pairs):")
            print(f"  whole process: ffrsim {statistics.median(mine['wall']):.3f} s, Exudyn "
                  f"{statistics.median(peer['wall']):.3f} s, ratio {ratio(mine['wall'], peer['wall'])} "
                  f"({'no target' if target is None else f'target <= {target}'}); above the import floor: "
                  f"{statistics.median(mine['wall']) - statistics.median(floor):.3f} s, above what a small run "
                  f"imports: {statistics.median(mine['wall']) - statistics.median(light):.3f} s")
            print(f"  transient analysis per step: ffrsim {statistics.median(mine['analysis']) * 1e6:.1f} us, "
                  f"Exudyn's solve {statistics.median(peer['step']) * 1e6:.1f} us, ratio "
                  f"{ratio(mine['analysis'], peer['step'])} (target <= 1.5)")
            print(f"  time loop per step: ffrsim {statistics.median(mine['loop']) * 1e6:.1f} us, ratio "
                  f"{ratio(mine['loop'], peer['step'])} (target <= 1.0)")


if __name__ == "__main__":
    main()
