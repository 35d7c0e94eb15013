"""How the cost grows with the model (issue 41): the 3-RRRU circle and the slider-crank refined.

Usage::

    python benchmarks/bench_scaling.py [--elements 2 4 8 16 32 64 128] [--solver auto|dense|block]
        [--fraction 0.02] [--transient-only | --frames-only] [--slider 8 16 32 64 128 256]
        [--exudyn-python PATH]

For ``scenarios/rrru3_circle.toml`` with ``elements_per_link`` in ``--elements``, each size in
its own process (its peak resident memory, ``ru_maxrss``, is then that size's): the
transient's time per step in steady state (over ``--fraction`` of the scenario's 5 s: the
median per step of the compiled calls, 256 steps each, that computed no Jacobian) and
amortised (the loop's wall time per step, the start-up's Jacobian included), the whole KED (512 intervals) and frequencies (200
samples) analyses' wall times (``--frames-only``: these two only, no transient, their kernels
loaded first as ``sim run`` does).  Then the slider-crank (``scenarios/slider_crank.toml``, planar
rod) with ``--slider`` elements: the loop's time per step over the whole 2000 steps, beside
Exudyn's (its script ``--n N`` when ``--exudyn-python`` is given, else the figures measured
with its default solver and quoted in issue 41).  Prints the ratios to the 8-element case
(targets at 64: transient step <= 12x, KED <= 10x).  Kernels must be in numba's cache (one
``sim run`` of each scenario first), else the first size's times include compilation.
"""
import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXUDYN_US = {8: 40.8, 32: 225.0, 128: 2741.0, 256: 13419.0}     # issue 41, Exudyn 1.13.6 default solver


def _with_solver(solver):
    """Make the transient analysis integrate with ``solver`` (dense, block or auto)."""
    import dataclasses

    import sim.solvers.simulate as simulate
    from sim.solvers.integrators import Options
    plain = simulate.simulate

    def with_solver(model, q0, v0, t_end, h, drive, options=None, **rest):
        return plain(model, q0, v0, t_end, h, drive, dataclasses.replace(options or Options(), solver=solver), **rest)
    simulate.simulate = with_solver


def _chunk_timer():
    """Record each compiled call of the step loop: ``(seconds, steps, jacobians)``; the list."""
    from sim.solvers import integrators
    chunks = []
    plain = integrators.GeneralizedAlpha._call

    def timed(self, task, out, count=1, k0=0, every=0, total=0):
        jacobians, steps = self.n_jacobians, self.n_steps
        start = time.perf_counter()
        result = plain(self, task, out, count, k0, every, total)
        if task == integrators.ADVANCE:
            chunks.append((time.perf_counter() - start, self.n_steps - steps, self.n_jacobians - jacobians))
        return result
    integrators.GeneralizedAlpha._call = timed
    return chunks


def steady(chunks):
    """Median time per step of the chunks without a Jacobian (the start-up's, Newton's refreshes)."""
    import statistics
    per = [t / n for t, n, j in chunks if n and not j]
    return statistics.median(per) if per else float("nan")


def child(args):
    """One size, in this process: prints a JSON line."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from common import run_analysis
    from sim.model.loader import load_model
    from sim.app.scenario import load_scenario
    _with_solver(args.solver)
    out = {}
    if args.kind == "rrru3":
        scenario = "scenarios/rrru3_circle.toml"
        sc = load_scenario(ROOT / scenario)
        model = load_model(sc.model_file, {**sc.model_parameters, "elements_per_link": args.n})
        out["n_v"] = model.n_v
        if args.frames_only:     # the analyses' kernels loaded before their clocks, as sim run does
            from sim.analyses import PREPARE
            for name in ("ked", "frequencies"):
                PREPARE[name](model, sc)
        else:
            chunks = _chunk_timer()
            attrs = run_analysis(scenario, "transient", args.fraction, model=model)[1]
            out["step_s"] = steady(chunks)
            out["step_amortised_s"] = attrs["time_per_step_s"]
            out["jacobians"] = int(attrs["jacobians"])
        if not args.transient_only:
            out["ked_s"] = run_analysis(scenario, "ked", model=model)[0]
            out["frequencies_s"] = run_analysis(scenario, "frequencies", model=model)[0]
    else:
        scenario = "scenarios/slider_crank.toml"
        sc = load_scenario(ROOT / scenario)
        model = load_model(sc.model_file, {**sc.model_parameters, "elements": args.n})
        out["n_v"] = model.n_v
        out["step_s"] = run_analysis(scenario, "transient", model=model)[1]["time_per_step_s"]
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))


def measure(kind, n, args):
    command = [sys.executable, __file__, "--child", kind, "--n", str(n), "--solver", args.solver,
               "--fraction", str(args.fraction)] + (["--transient-only"] if args.transient_only else []) + (
                  ["--frames-only"] if args.frames_only else [])
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    start = time.perf_counter()
    run = subprocess.run(command, capture_output=True, text=True, env=env)
    if run.returncode:
        sys.exit(f"bench_scaling: {kind} {n} failed:\n{run.stderr[-3000:]}")
    result = json.loads(run.stdout.strip().splitlines()[-1])
    result["process_s"] = time.perf_counter() - start
    return result


def exudyn_step(python, n):
    script = ROOT.parent / "shared" / "peers" / "exudyn" / "slider_crank_simeon.py"
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    out = subprocess.run([python, str(script), "--n", str(n), "--csv", os.devnull], capture_output=True,
                         text=True, env=env, check=True, cwd=script.parent).stdout
    return float(re.search(r"us_per_step (\S+)", out).group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, nargs="*", default=[2, 4, 8, 16, 32, 64, 128])
    parser.add_argument("--slider", type=int, nargs="*", default=[8, 16, 32, 64, 128, 256])
    parser.add_argument("--solver", default="auto", choices=["auto", "dense", "block"])
    parser.add_argument("--fraction", type=float, default=0.06,
                        help="share of the 3-RRRU's 5 s integrated for the step time")
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--transient-only", action="store_true", help="3-RRRU: no KED, no frequencies")
    only.add_argument("--frames-only", action="store_true", help="3-RRRU: KED and frequencies, no transient")
    parser.add_argument("--exudyn-python", default=os.environ.get("EXUDYN_PYTHON"))
    parser.add_argument("--child", choices=["rrru3", "slider"], help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.kind = args.child
        return child(args)
    rows = {}
    if args.elements:
        print(f"3-RRRU circle ({args.solver}): elements per link, velocity coordinates, transient step (steady; "
              f"amortised over {args.fraction * 5:g} s), KED, frequencies, peak memory")
    for n in args.elements:
        r = rows[n] = measure("rrru3", n, args)
        step = "" if args.frames_only else (f"  step {r['step_s'] * 1e6:9.0f} us "
                                             f"({r['step_amortised_s'] * 1e6:9.0f})")
        extra = "" if args.transient_only else f"  KED {r['ked_s']:7.2f} s  frequencies {r['frequencies_s']:7.2f} s"
        print(f"  {n:4d}  n_v {r['n_v']:5d}{step}{extra}  peak {r['peak_rss_mb']:6.0f} MB", flush=True)
    if 8 in rows and 64 in rows:
        a, b = rows[8], rows[64]
        ratios = ([] if args.frames_only else [f"transient step {b['step_s'] / a['step_s']:.1f}x (target <= 12)"]) + (
            [] if args.transient_only else [f"KED {b['ked_s'] / a['ked_s']:.1f}x (target <= 10)",
                                            f"frequencies {b['frequencies_s'] / a['frequencies_s']:.1f}x"])
        print("  64 vs 8 elements: " + ", ".join(ratios))
    if args.slider:
        print(f"slider-crank ({args.solver}; 2000 steps): elements, velocity coordinates, loop per step, Exudyn's")
    for n in args.slider:
        r = measure("slider", n, args)
        theirs = exudyn_step(args.exudyn_python, n) if args.exudyn_python else EXUDYN_US.get(n)
        ratio = f"  ratio {r['step_s'] * 1e6 / theirs:5.2f}" if theirs else ""
        print(f"  {n:4d}  n_v {r['n_v']:5d}  {r['step_s'] * 1e6:9.1f} us  Exudyn "
              f"{'-' if theirs is None else f'{theirs:.1f} us'}{ratio}  peak {r['peak_rss_mb']:6.0f} MB", flush=True)


if __name__ == "__main__":
    main()
