"""Speed of the rigid robot's motion (``sim.solvers.motion.rigid_motion``) per sample, on robots
with translational end-effector coordinates (3-RRRU), an angle (NaVARo: ``x y theta``) and six
coordinates with redundant constraints (6-PSS with spherical slider joints: minimum-norm
solutions), each on its compiled sample loop, and, for comparison, on the Python loop alone.

Run: ``python benchmarks/bench_motion.py``
"""
import sim  # noqa: F401  (single-threaded BLAS, set before numpy is imported)
import time

import numpy as np

import sim.solvers.motion
from sim.model.loader import load_model
from sim.solvers.motion import rigid_motion
from sim.solvers.trajectory import circle, cycloidal

from common import ROOT

SAMPLES = 401
CASES = [
    ("rrru3", {}, "circle"),
    ("navaro", {}, "circle"),
    ("pss6", {"strut_radius": 0.025, "screw_radius": 0.024977, "slider_joint": "spherical"}, "cycloidal"),
]


def per_sample(model, law, times, python_loop=False):
    """Best of three runs, ms per sample."""
    fast = sim.solvers.motion._fast_segments
    if python_loop:
        sim.solvers.motion._fast_segments = lambda model, ev: None
    try:
        rigid_motion(model, law, times[:5])          # kernels loaded
        best = np.inf
        for _ in range(3):
            start = time.perf_counter()
            rigid_motion(model, law, times)
            best = min(best, time.perf_counter() - start)
    finally:
        sim.solvers.motion._fast_segments = fast
    return 1e3 * best / times.size


def main():
    for name, params, kind in CASES:
        model = load_model(ROOT / "models" / f"{name}.py", params)
        if kind == "circle":
            law, times = circle(model.pose_home, 0.02, 2 * np.pi, 1.0), np.linspace(0.0, 1.0, SAMPLES)
        else:
            law, times = cycloidal(model.pose_home, range(6), 0.2, 0.35809), np.linspace(0.0, 0.35809, SAMPLES)
        compiled, python = per_sample(model, law, times), per_sample(model, law, times, python_loop=True)
        print(f"{name} (n_v = {model.n_v}, pose {' '.join(model.pose_names)}): compiled loop {compiled:.2f} ms/sample, "
              f"Python loop {python:.2f} ms/sample")


if __name__ == "__main__":
    main()
