"""Timings of the engine core: model build, modes, pose solving.

Run from anywhere: ``python benchmarks/bench_core.py [--repeat N]``.  Prints one table row
per task with the median, minimum and maximum wall time over ``N`` runs after one warm-up
call (imports, caches of numpy/scipy), plus the BLAS threading in use, which dominates the
timings of the small dense eigenproblems on a loaded machine.
"""
import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The repository's engine, whatever the working directory; imported before numpy on purpose:
# ``sim`` sets the BLAS thread count (one thread unless the environment says otherwise),
# which only takes effect before numpy loads its BLAS.
sys.path.insert(0, str(ROOT))
import sim  # noqa: E402, F401  isort: skip
import numpy as np  # noqa: E402
import scipy  # noqa: E402

from sim.model.assembly import solve_pose  # noqa: E402
from sim.model.loader import load_model, load_module  # noqa: E402
from sim.solvers.modal import modes  # noqa: E402

NAVARO = ROOT / "models" / "navaro.py"
BEAM = ROOT / "models" / "beam.py"


def timed(task, repeat):
    """Wall times [s] of ``repeat`` calls of ``task()`` after one untimed warm-up call."""
    task()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        task()
        times.append(time.perf_counter() - start)
    return times


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20, help="timed runs per task (default 20)")
    args = parser.parse_args(argv)

    navaro = load_model(NAVARO)
    poses = load_module(NAVARO).POSES
    q_home = navaro.q_home
    tasks = [
        ("build navaro (1 element/link)", lambda: load_model(NAVARO)),
        ("build beam (16 elements)", lambda: load_model(BEAM, {"elements": 16})),
        ("modes navaro at home (all 90)", lambda: modes(navaro, q_home)),
        ("solve_pose navaro, 8 paper poses", lambda: [solve_pose(navaro, p) for p in poses.values()]),
    ]
    print(f"python {platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}, "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}")
    print(f"navaro: n_q = {navaro.n_q}, n_v = {navaro.n_v}; {args.repeat} timed runs per task after one warm-up\n")
    print(f"{'task':<36} {'median [ms]':>12} {'min [ms]':>10} {'max [ms]':>10}")
    for name, task in tasks:
        t = np.array(timed(task, args.repeat)) * 1e3
        print(f"{name:<36} {statistics.median(t):>12.2f} {t.min():>10.2f} {t.max():>10.2f}")


if __name__ == "__main__":
    main()
