"""Which arrays make the peak memory of the 3-RRRU circle's analyses (issue 41).

Usage::

    python benchmarks/bench_memory.py [--elements 8 32 64 128] [--analysis transient ked frequencies]
        [--fraction 0.002] [--top 12] [--phases-only] [--delta | --servo]

``--delta``: the Delta's pick-and-place cycle (``scenarios/delta_pick_place.toml``, ``--elements``
per upper arm; its KED has 3200 intervals) instead of the 3-RRRU circle; ``--servo``: the 3-RRRU
on its servo drives (``scenarios/rrru3_servo.toml``).

Each size and analysis in its own process: ``tracemalloc`` follows numpy's allocations (not
numba's inside compiled code, whose arrays are short-lived scratch), a thread samples the
traced memory between the compiled calls and keeps the snapshot at its largest; printed: the
peak traced memory, the peak resident memory (``ru_maxrss``: the compiled kernels and the
interpreter are about 200 MB of it at any size; the largest of the phases' and the rest's:
each phase resets it), the peak resident memory within each phase
of :data:`PHASES` and of the model's build (``load_model``; Linux: the peak is reset at the
phase's start through ``/proc/self/clear_refs``) and the largest allocation sites at the peak
(the build's not traced).
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The phases whose peak resident memory is printed: (module, function or Class.method), called
# through the module's attribute (the analyses import them when they run).
PHASES = [("sim.solvers.start", "static_start"), ("sim.solvers.damping", "schedule"),
          ("sim.solvers.integrators", "GeneralizedAlpha.__init__"), ("sim.solvers.integrators", "GeneralizedAlpha.advance"),
          ("sim.solvers.frames", "motion_and_frames"), ("sim.solvers.frames", "FramePool.finish"),
          ("sim.solvers.servo_stepping", "servo_frames"), ("sim.solvers.servo_stepping", "integrate")]


def _rss_peak():
    """The peak resident memory since the last reset [MB] (Linux ``VmHWM``)."""
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _phases():
    """Wrap :data:`PHASES`: each call resets the peak and records it at the end; the dict."""
    import functools
    import importlib
    peaks = {}
    for module, name in PHASES:
        owner = importlib.import_module(module)
        path = name.split(".")
        for part in path[:-1]:
            owner = getattr(owner, part)
        plain = getattr(owner, path[-1])

        def wrapped(*args, _plain=plain, _name=name, **kwargs):
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            try:
                return _plain(*args, **kwargs)
            finally:
                peaks[_name] = max(peaks.get(_name, 0.0), _rss_peak())
        setattr(owner, path[-1], functools.wraps(plain)(wrapped))
    return peaks


# The scenarios measured: file and the model parameter that sets the elements per link.
SCENARIOS = {"circle": ("scenarios/rrru3_circle.toml", "elements_per_link"),
             "delta": ("scenarios/delta_pick_place.toml", "elements"),
             "servo": ("scenarios/rrru3_servo.toml", "elements_per_link")}


def child(n, analysis, fraction, top, trace=True, robot="circle"):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from common import run_analysis
    from sim.app.scenario import load_scenario
    from sim.model.loader import load_model
    scenario, size = SCENARIOS[robot]
    sc = load_scenario(ROOT / scenario)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    model = load_model(sc.model_file, {**sc.model_parameters, size: n})
    build = _rss_peak()
    if analysis != "transient":
        from sim.analyses import PREPARE
        PREPARE[analysis](model, sc)
    peaks = _phases()
    peaks["load_model"] = build
    if trace:
        tracemalloc.start(12)
    best = {"size": 0, "snap": None}
    done = threading.Event()

    def sample():
        while trace and not done.wait(0.005):
            size = tracemalloc.get_traced_memory()[0]
            if size > 1.02 * best["size"]:
                best["size"], best["snap"] = size, tracemalloc.take_snapshot()
    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    run_analysis(scenario, analysis, fraction if analysis == "transient" else 1.0, model=model)
    done.set()
    watcher.join()
    peak = tracemalloc.get_traced_memory()[1] if trace else float("nan")
    snap = best["snap"]
    sites = []
    if snap is not None:
        snap = snap.filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
        for stat in snap.statistics("traceback")[:top]:
            frames = [f"{Path(f.filename).name}:{f.lineno}" for f in reversed(stat.traceback)
                      if "site-packages" not in f.filename and "bootstrap" not in f.filename][:4]
            sites.append((stat.size / 2**20, stat.count, " <- ".join(frames)))
    print(json.dumps({"n_v": model.n_v, "peak_traced_mb": peak / 2**20,
                      "snapshot_mb": best["size"] / 2**20,
                      "peak_rss_mb": max([resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, *peaks.values()]),
                      "sites": sites,
                      "phases": peaks}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, nargs="*", default=[8, 32, 64, 128])
    parser.add_argument("--analysis", nargs="*", default=["transient", "ked", "frequencies"])
    parser.add_argument("--fraction", type=float, default=0.002)
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--phases-only", action="store_true",
                        help="no tracemalloc (its own overhead left out of the resident memory)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--delta", action="store_const", dest="robot", const="delta", default="circle",
                       help="the Delta's pick-and-place cycle")
    which.add_argument("--servo", action="store_const", dest="robot", const="servo",
                       help="the 3-RRRU on its servo drives")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(int(args.child[0]), args.child[1], args.fraction, args.top, not args.phases_only, args.robot)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for analysis in args.analysis:
        for n in args.elements:
            start = time.perf_counter()
            run = subprocess.run([sys.executable, __file__, "--child", str(n), analysis, "--fraction",
                                  str(args.fraction), "--top", str(args.top)] + (["--phases-only"] if args.phases_only else [])
                                 + ([f"--{args.robot}"] if args.robot != "circle" else []),
                                 capture_output=True, text=True, env=env)
            if run.returncode:
                sys.exit(f"bench_memory: {analysis} {n} failed:\n{run.stderr[-3000:]}")
            r = json.loads(run.stdout.strip().splitlines()[-1])
            print(f"{SCENARIOS[args.robot][0]} {analysis} {n} elements per link (n_v {r['n_v']}): numpy peak {r['peak_traced_mb']:.0f} MB "
                  f"(at the snapshot {r['snapshot_mb']:.0f}), peak RSS {r['peak_rss_mb']:.0f} MB, "
                  f"{time.perf_counter() - start:.0f} s")
            print("    peak RSS by phase [MB]: " + ", ".join(f"{k} {v:.0f}" for k, v in r["phases"].items()))
            for size, count, where in r["sites"]:
                print(f"    {size:8.1f} MB  {count:6d}  {where}")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
