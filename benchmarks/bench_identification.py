"""Identification and FRF cost on the Delta-like Surgiscope (issue 6).

1. FRF at configuration 1, 1000 frequencies, vertical force at the platform centre, structural
   damping eta = 0.096: wall time of the modal and the complex-mode (state-space) superposition.
2. Synthetic identification: frequencies of both configurations computed at known stiffnesses
   (k_actuator, k_arm_bearing, k_knee_joint), 0.5 % Gaussian noise (seed 0), fitted from
   starting values off by a factor 2-3; then the same with k_parallelogram_joint added, which
   the fitted modes hardly depend on.

Run: ``python benchmarks/bench_identification.py``.
"""
import time
from pathlib import Path

import numpy as np

from sim.solvers.damping import Damping
from sim.solvers.harmonic import frf
from sim.solvers.fitting import Configuration, Problem, identify
from sim.model.loader import load_model

MODEL = Path(__file__).resolve().parent.parent / "models" / "delta_surgiscope.py"


def bench_frf():
    model = load_model(MODEL)
    f = np.linspace(0.5, 100.0, 1000)
    for method in ("modal", "state"):
        start = time.perf_counter()
        r = frf(model, model.q_home, ["force:E:z"], ["displacement:E:z"], f, Damping(eta=0.096), method=method)
        print(f"FRF 1000 frequencies, {model.n_v} coordinates, method {method}: "
              f"{time.perf_counter() - start:.2f} s (peak at {f[np.argmax(np.abs(r.H[:, 0, 0]))]:.2f} Hz)")


def bench_identification(names, truth, initial):
    rng = np.random.default_rng(0)
    confs = [Configuration("configuration_1", np.zeros(5), {"x": 0.0, "y": 0.0, "z": -1.1}, merge_repeated=True),
             Configuration("configuration_2", np.zeros(5), {"x": 0.19, "y": -0.33, "z": -0.9})]
    problem = Problem(MODEL, {}, names, confs)
    for c in confs:
        f, _, _ = problem.evaluate(c, truth)
        c.measured = f * (1 + 0.005 * rng.standard_normal(f.size))
    start = time.perf_counter()
    r = identify(MODEL, names, initial, confs)
    print(f"identify {names}: {time.perf_counter() - start:.1f} s, {r.evaluations} model evaluations")
    for n, v, t, s, ok in zip(names, r.values, truth, r.std, r.identifiable):
        print(f"  {n:24s} fitted {v:10.4g}  true {t:10.4g}  error {100 * (v / t - 1):+6.2f} %  "
              f"std {100 * s:6.2f} %  identifiable {bool(ok)}")
    for m in r.messages:
        print("  note:", m)


if __name__ == "__main__":
    bench_frf()
    bench_identification(["k_actuator", "k_arm_bearing", "k_knee_joint"], np.array([3e4, 4e5, 8e4]),
                         [1e4, 1.5e5, 3e4])
    bench_identification(["k_actuator", "k_arm_bearing", "k_knee_joint", "k_parallelogram_joint"],
                         np.array([3e4, 4e5, 8e4, 3e4]), [1e4, 1.5e5, 3e4, 1e4])
