"""Wall time of ``sim run SCENARIO`` from an empty kernel cache (issue 15: <= 45 s).

Each run gets a fresh ``NUMBA_CACHE_DIR`` and a scratch result file; with ``--base PATH`` (a
checkout of another revision, e.g. ``git worktree add /tmp/base REV``) its runs alternate
with this checkout's, so that both see the same machine load (these machines are noisy).

Usage::

    python benchmarks/cold_start.py [SCENARIO ...] [--rounds 2] [--base /tmp/base]

Scenarios default to ``navaro_modes``, ``slider_crank`` and ``rrru3_circle``.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ("scenarios/navaro_modes.toml", "scenarios/slider_crank.toml", "scenarios/rrru3_circle.toml")


def cold_run(checkout, scenario):
    """Seconds of ``sim run scenario`` in ``checkout`` with an empty kernel cache."""
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(checkout))
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "sim", "run", scenario, "--out", f"{out}/r.h5"], cwd=checkout,
                       env=env, check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", default=DEFAULT)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--base", type=Path, help="another checkout, run alternately with this one")
    args = parser.parse_args()
    checkouts = {"this": ROOT} | ({"base": args.base.resolve()} if args.base else {})
    times = {(name, sc): [] for sc in args.scenarios for name in checkouts}
    for _ in range(args.rounds):
        for sc in args.scenarios:
            for name, checkout in checkouts.items():
                seconds = cold_run(checkout, sc)
                times[name, sc].append(seconds)
                print(f"{sc} [{name}] {seconds:.1f} s", flush=True)
    for (name, sc), values in times.items():
        print(f"{sc} [{name}]: median {statistics.median(values):.1f} s (min {min(values):.1f}, "
              f"max {max(values):.1f}, {len(values)} runs; target <= 45 s)")


if __name__ == "__main__":
    main()
