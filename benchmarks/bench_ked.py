"""Speed of KED, frequencies along a trajectory and the 6-PSS frequency map (issue 4 targets).

Targets: 3-RRRU KED, 512 intervals, 6 modes < 1 s and 20x faster than the transient;
frequencies at 200 instants < 1 s; 50 x 50 frequency map of the 6-PSS < 10 s on 2 cores.
Prints wall and CPU time per stage (CPU of this process, both threads; the map's worker
processes are not counted), then the whole KED as the analysis runs it, the frames in a
second thread overlapping the rigid motion.  Last, the ``[ked]`` and ``[transient]`` analyses
of ``scenarios/rrru3_circle.toml`` as ``sim run`` runs them (no file, no progress bars): the
transient once, the KED (~0.1 s, so at the mercy of the machine's jitter) as the median of
REPEATS runs, and their ratio; then the ``[frequencies]`` analysis (200 instants) likewise.

Run: ``python benchmarks/bench_ked.py``
"""
import sim  # noqa: F401  (single-threaded BLAS, set before numpy is imported)
import time
from pathlib import Path

import numpy as np

from sim.model.evaluator import Evaluator
from sim.solvers.frames import frames_along
from sim.solvers.modal_stepping import integrate_frames, ked
from sim.solvers.modal import modes
from sim.solvers.subspace import Tracker
from sim.solvers.motion import rigid_motion
from sim.model.loader import load_model
from sim.solvers.cases import run_cases
from sim.analyses.sweep import rows_frequencies
from sim.solvers.trajectory import circle

from common import run_analysis

ROOT = Path(__file__).resolve().parent.parent
REPEATS = 9


def timed(label, fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    print(f"{label:45s} wall {time.perf_counter() - w:7.3f} s   cpu {time.process_time() - c:7.3f} s")
    return out


def main():
    rrru3 = load_model(ROOT / "models/rrru3.py", {"elements_per_link": 4})
    trajectory = circle([0.0, 0.0, -0.7], 0.1, 2.0, 5.0)
    t = np.linspace(0.0, 5.0, 513)
    # Loading the compiled kernels from numba's cache (~0.2 s per process) is not part of the
    # figures, as in bench_transient.py; forked workers inherit them.
    timed("warm-up (kernels loaded from the cache)",
          lambda: (Evaluator(rrru3), Tracker(rrru3, 6), ked(rrru3, trajectory, 48, 6, 0.001)))
    timed("3-RRRU rigid motion, 513 samples", lambda: rigid_motion(rrru3, trajectory, t))
    motion = timed("  the same without condition numbers (KED)",
                   lambda: rigid_motion(rrru3, trajectory, t, condition=False))
    frames = timed("3-RRRU frames (M, load, 6 modes), 513", lambda: frames_along(rrru3, motion, 6))
    timed("  the same in this thread only", lambda: frames_along(rrru3, motion, 6, workers=1))
    timed("3-RRRU modal stepping, 512 intervals", lambda: integrate_frames(t, frames, motion.pose, 0.001))
    for _ in range(3):
        timed("3-RRRU KED total (motion || frames, stepping)", lambda: ked(rrru3, trajectory, 512, 6, 0.001))
    t200 = np.linspace(0.0, 5.0, 200)
    m200 = timed("3-RRRU rigid motion, 200 samples", lambda: rigid_motion(rrru3, trajectory, t200))
    timed("3-RRRU 8 modes at 200 instants", lambda: [modes(rrru3, q, 8, free=False, energies=False)
                                                     for q in m200.q])
    pss6 = ROOT / "models/pss6.py"
    params = {"slider_joint": "universal"}
    home = load_model(pss6, params).pose_home
    values = [np.linspace(-0.2, 0.2, 50), np.linspace(-0.2, 0.2, 50)]
    for workers in (1, 2):
        blocks = np.array_split(np.arange(50), workers)
        cases = [(str(pss6), params, [0, 1], values, home, b.tolist(), 4) for b in blocks]
        timed(f"6-PSS 50 x 50 map, {workers} process(es)",
              lambda: run_cases(rows_frequencies, cases, scheduler="serial" if workers == 1 else None,
                                workers=workers))

    scenario = "scenarios/rrru3_circle.toml"
    run_analysis(scenario, "transient", 0.002)      # kernels loaded before the clocks start
    run_analysis(scenario, "ked")
    transient = run_analysis(scenario, "transient")[0]
    runs = sorted(run_analysis(scenario, "ked")[0] for _ in range(REPEATS))
    median = runs[REPEATS // 2]
    print(f"{scenario}: transient {transient:.3f} s; KED median {median:.4f} s (min {runs[0]:.4f}, "
          f"max {runs[-1]:.4f}, {REPEATS} runs); transient / KED = {transient / median:.1f} (target >= 20)")
    run_analysis(scenario, "frequencies")
    runs = sorted(run_analysis(scenario, "frequencies")[0] for _ in range(REPEATS))
    print(f"{scenario}: frequencies at 200 instants median {runs[REPEATS // 2]:.4f} s (min {runs[0]:.4f}, "
          f"max {runs[-1]:.4f}, {REPEATS} runs; target <= 0.1 s)")


if __name__ == "__main__":
    main()
