"""Inverse dynamics of the 3-RRRT along the paper-003 circle: cost per sample.

Run ``python benchmarks/bench_inverse_dynamics.py [samples]``.  Prints the wall time per
sample of the rigid motion and of the inverse dynamics, the peak driving moments and the
conditioning.  The accuracy (power balance, second formulation) is checked by
``tests/test_inverse_dynamics.py``.
"""
import sys
import time
from pathlib import Path

import numpy as np

from sim.solvers.inverse_dynamics import inverse_dynamics
from sim.model.loader import load_model
from sim.solvers.motion import rigid_motion
from sim.solvers.trajectory import circle

ROOT = Path(__file__).resolve().parents[1]


def main(samples=256):
    model = load_model(ROOT / "models" / "rrrt3.py")
    omega = 0.5
    period = 2 * np.pi / omega
    t = np.arange(samples) * period / samples
    start = time.perf_counter()
    motion = rigid_motion(model, circle([0.0, 0.0, 0.8], 0.05, omega, period), t)
    mid = time.perf_counter()
    result = inverse_dynamics(model, motion, frame="joint")
    end = time.perf_counter()
    print(f"samples {samples}: rigid motion {1e3 * (mid - start) / samples:.1f} ms/sample, "
          f"inverse dynamics {1e3 * (end - mid) / samples:.1f} ms/sample")
    print("peak |driving moment| [N m]:", np.round(np.abs(result.actuator_forces).max(axis=0), 4).tolist())
    print(f"direct Jacobian condition number: {result.condition.min():.4g} .. {result.condition.max():.4g}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 256)
