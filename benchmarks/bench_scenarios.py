"""Shipped scenarios' wall times, this checkout beside another (a change's before and after).

Usage::

    git worktree add --detach /tmp/before <commit>
    python benchmarks/bench_scenarios.py --before /tmp/before [--rounds 3] [NAME ...]

For each scenario of ``scenarios/`` (or the NAMEs given), runs ``python -m sim run`` as a whole
process with each checkout on ``PYTHONPATH``, alternately (the machine's load varies), after
one warm-up run each (the kernels' caches), and prints per scenario the medians of the whole
process' wall time and of the file's own ``wall_time_s`` (the analyses, without the imports),
before and after, and their ratio with its range over the rounds.  A benchmark, not a test.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import h5py

ROOT = Path(__file__).resolve().parents[1]


def run(tree, scenario, out):
    """``(process wall time, the file's wall_time_s)`` [s] of one run of ``scenario`` with the
    engine of ``tree``."""
    env = dict(os.environ, PYTHONPATH=str(tree), MPLBACKEND="Agg")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "sim", "run", str(scenario), "--out", str(out), "--force"],
                   cwd=tree, env=env, check=True, capture_output=True)
    wall = time.perf_counter() - start
    with h5py.File(out, "r") as f:
        return wall, float(f.attrs["wall_time_s"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", required=True, type=Path, help="the other checkout (the 'before')")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("names", nargs="*", help="scenario names (default: every one shipped)")
    args = parser.parse_args()
    names = args.names or sorted(p.stem for p in (ROOT / "scenarios").glob("*.toml"))
    trees = {"before": args.before.resolve(), "after": ROOT}
    print(f"{'scenario':24s} {'process before':>15s} {'after':>8s} {'ratio':>14s}   "
          f"{'analyses before':>15s} {'after':>8s} {'ratio':>14s}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            times = {key: [] for key in trees}
            for key, tree in trees.items():      # warm the caches
                run(tree, tree / "scenarios" / f"{name}.toml", Path(tmp) / f"{key}.h5")
            for _ in range(args.rounds):
                for key, tree in trees.items():
                    times[key].append(run(tree, tree / "scenarios" / f"{name}.toml", Path(tmp) / f"{key}.h5"))
            cells = []
            for column in (0, 1):
                b = [x[column] for x in times["before"]]
                a = [x[column] for x in times["after"]]
                ratios = [y / x for x, y in zip(b, a)]
                cells.append(f"{statistics.median(b):15.3f} {statistics.median(a):8.3f} "
                             f"{statistics.median(ratios):5.2f} ({min(ratios):.2f}-{max(ratios):.2f})")
            print(f"{name:24s} {cells[0]}   {cells[1]}", flush=True)


if __name__ == "__main__":
    main()
