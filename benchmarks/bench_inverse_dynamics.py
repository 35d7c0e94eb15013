"""Inverse dynamics of the 3-RRRT along the paper-003 circle: cost per sample.

Run ``python benchmarks/bench_inverse_dynamics.py [samples]`` (default 1600, issue 15's target).  Prints the wall time per
sample of the rigid motion and of the inverse dynamics, the peak driving moments and the
conditioning.  The accuracy (power balance, second formulation) is checked by
``tests/test_inverse_dynamics.py``.
"""
import sys
import time
from pathlib import Path

import numpy as np

from sim.solvers.reactions import inverse_dynamics
from sim.model.loader import load_model
from sim.solvers.motion import rigid_motion
from sim.solvers.trajectory import circle

ROOT = Path(__file__).resolve().parents[1]


def main(samples=1600):
    model = load_model(ROOT / "models" / "rrrt3.py")
    omega = 0.5
    period = 2 * np.pi / omega
    law = circle([0.0, 0.0, 0.8], 0.05, omega, period)
    # Kernels loaded from numba's cache (once per process) before the clocks start.
    inverse_dynamics(model, rigid_motion(model, law, np.linspace(0.0, 1.0, 4)), frame="joint")
    t = np.arange(samples) * period / samples
    start = time.perf_counter()
    motion = rigid_motion(model, law, t)
    mid = time.perf_counter()
    result = inverse_dynamics(model, motion, frame="joint")
    end = time.perf_counter()
    print(f"samples {samples}: rigid motion {mid - start:.3f} s ({1e6 * (mid - start) / samples:.0f} us/sample), "
          f"inverse dynamics {end - mid:.3f} s ({1e6 * (end - mid) / samples:.0f} us/sample); "
          f"together {end - start:.3f} s (target <= 1 s at 1600 samples)")
    print("peak |driving moment| [N m]:", np.round(np.abs(result.actuator_forces).max(axis=0), 4).tolist())
    print(f"direct Jacobian condition number: {result.condition.min():.4g} .. {result.condition.max():.4g}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1600)
