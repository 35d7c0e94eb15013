"""Wall time of the full FFR transient (issue 3 targets), beside a fixed reference workload.

Usage: ``python benchmarks/bench_transient.py [--quick]``.  Prints, per case, the wall time,
steps, Newton iterations, factorisations, time per step and per Newton iteration; and the
time of a reference workload (200 LU factorisations + 2000 solves of a 200 x 200 matrix,
single-threaded BLAS) so that figures from different machines can be compared.
Targets: slider-crank 0.1 s at h = 5e-5 s with 8 rod elements < 1 s; 3-RRRU circle 5 s at
h = 1e-3 s < 10 s.  ``--quick`` runs a tenth of each duration.
"""
import argparse
import time

import numpy as np
import scipy.linalg

from common import run_analysis


def reference_workload():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((200, 200)) + 200 * np.eye(200)
    b = rng.standard_normal(200)
    start = time.perf_counter()
    for _ in range(200):
        lu = scipy.linalg.lu_factor(A)
    for _ in range(2000):
        scipy.linalg.lu_solve(lu, b)
    return time.perf_counter() - start


def run(scenario_file, fraction):
    return run_analysis(scenario_file, "transient", fraction)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    fraction = 0.1 if args.quick else 1.0
    print(f"reference workload: {reference_workload():.3f} s")
    cases = (("scenarios/slider_crank.toml", 1.0), ("scenarios/rrru3_circle.toml", 10.0))
    # One short run first: loading the compiled kernels from numba's cache (~0.2 s per
    # process, ~12 s on a machine's first run ever) is not part of the figures.
    start = time.perf_counter()
    for name, _ in cases:
        run(name, 0.002)
    print(f"warm-up (kernels loaded from the cache): {time.perf_counter() - start:.2f} s")
    for name, target in cases:
        total, attrs, _ = run(name, fraction)
        print(f"{name}: analysis {total:.2f} s (integration {attrs['wall_time_s']:.2f} s; target "
              f"{target * fraction:g} s), steps {attrs['steps']}, Newton iterations {attrs['iterations']}, "
              f"factorisations {attrs['factorizations']}, {1e3 * attrs['time_per_step_s']:.2f} ms/step, "
              f"{1e3 * attrs['time_per_iteration_s']:.2f} ms/iteration")


if __name__ == "__main__":
    main()
