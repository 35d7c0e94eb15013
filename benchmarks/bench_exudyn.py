"""Per-step cost of ffrsim beside Exudyn on the same mechanisms (issue 15 targets).

Usage::

    python3 -m venv /path/to/exu && /path/to/exu/bin/pip install exudyn numpy
    python benchmarks/bench_exudyn.py --exudyn-python /path/to/exu/bin/python [--rounds 5]

Runs, alternately in one process tree so that both see the same machine load, ffrsim's
transient (in this process, kernels loaded first) and the Exudyn scripts of
``../shared/peers/exudyn/`` (``--peers``; each in its own process, its solve timer), for:
Simeon's slider-crank (8 elements, 2000 steps of 50 µs; ffrsim's rod linear, then with
geometric stiffening) and the spin-up beam (10 elements, 20 000 steps of 1 ms).  Prints the
median µs per step of each program, their ratio (targets: <= 1.0, <= 1.5, <= 1.0) and the
compared results.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

from common import ROOT, run_analysis

CASES = (
    # name, ffrsim scenario, model parameter overrides, peer script, peer arguments, result key, target
    # (the scenario's rod keeps its in-plane coordinates, as Exudyn's planar ANCF cable does; the
    # 3D rod, all six coordinates per node, for comparison)
    ("slider-crank, linear rod", "scenarios/slider_crank.toml", {}, "slider_crank_simeon.py", ["--n", "8"],
     "rod_midspan_deflection_final", 1.0),
    ("slider-crank, stiffening", "scenarios/slider_crank.toml", {"stiffening": True}, "slider_crank_simeon.py",
     ["--n", "8"], "rod_midspan_deflection_final", 1.5),
    ("slider-crank, linear 3D rod", "scenarios/slider_crank.toml", {"planar": False}, "slider_crank_simeon.py",
     ["--n", "8"], "rod_midspan_deflection_final", None),
    ("spin-up beam", "scenarios/spinup_beam.toml", {}, "spinup_beam.py", ["--n", "10"], "tip_deflection_final",
     1.0),
)


def ffrsim_step(scenario, params):
    """µs per step of ffrsim's transient and its summary."""
    from sim.model.loader import load_model
    from sim.app.scenario import load_scenario
    sc = load_scenario(ROOT / scenario)
    model = load_model(sc.model_file, {**sc.model_parameters, **params})
    _, attrs, summary = run_analysis(scenario, "transient", 1.0, model=model)
    return 1e6 * attrs["time_per_step_s"], summary


def exudyn_step(python, script, args, tmp):
    """µs per step of an Exudyn script (its own solve timer) and its printed values."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    out = subprocess.run([python, str(script), *args, "--csv", str(tmp)], capture_output=True, text=True,
                         env=env, check=True).stdout
    us = float(re.search(r"us_per_step (\S+)", out).group(1))
    results = [line.strip() for line in out.splitlines() if re.match(r"(mid_deflection|tip_transverse)", line)]
    return us, results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exudyn-python", default=os.environ.get("EXUDYN_PYTHON"),
                        help="python of a virtual environment with exudyn (or $EXUDYN_PYTHON)")
    parser.add_argument("--peers", type=Path, default=ROOT.parent / "shared" / "peers" / "exudyn")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if not args.exudyn_python:
        sys.exit("bench_exudyn: give --exudyn-python (a python with `pip install exudyn numpy`)")
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / "bench_exudyn.csv"
    for name, scenario, params, script, peer_args, key, target in CASES:
        from sim.model.loader import load_model
        from sim.app.scenario import load_scenario
        sc = load_scenario(ROOT / scenario)
        run_analysis(scenario, "transient", 0.01, model=load_model(sc.model_file, {**sc.model_parameters, **params}))
        ours, theirs = [], []
        for _ in range(args.rounds):
            us, summary = ffrsim_step(scenario, params)
            ours.append(us)
            us, results = exudyn_step(args.exudyn_python, args.peers / script, peer_args, tmp)
            theirs.append(us)
        ratios = [a / b for a, b in zip(ours, theirs)]
        print(f"{name}: ffrsim {statistics.median(ours):.0f} us/step, Exudyn {statistics.median(theirs):.0f} "
              f"us/step, ratio {statistics.median(ratios):.2f} (range {min(ratios):.2f}-{max(ratios):.2f}; "
              f"target {'<= ' + str(target) if target else 'none'}); ffrsim {key} = {getattr(summary[key], 'value', summary[key]):.6g}; Exudyn: " + "; ".join(results))


if __name__ == "__main__":
    main()
