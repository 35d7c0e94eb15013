"""The servo drives' frozen structures by model size: the KED with ``drives = "servo"`` (per
frame) and the closed-loop frequencies (per sample, on top of the locked frequencies), on the
3-RRRU of ``scenarios/rrru3_servo.toml`` refined, the figures of :data:`sim.app.cost.SERVO`.

    python benchmarks/bench_servo.py --elements 4 8 16 32 64 --samples 20 --rounds 2

Each size runs in its own process (the peak memory is that process's); the best of ``rounds``
runs is kept.  The dense plant below ``sim.solvers.servo_stepping.SPARSE_MIN`` coordinates,
the joints' saddle point above.
"""
import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def measure(elements, samples, rounds):
    """``{"n_v", "ked_frame", "sample", "peak_mb"}`` of one size, in this process."""
    import resource

    sys.path.insert(0, str(HERE))
    import common
    from sim.analyses import ANALYSES, PREPARE

    scenario = common.load_scenario(common.ROOT / "scenarios" / "rrru3_servo.toml")
    scenario.model_parameters["elements_per_link"] = elements
    scenario.data["frequencies"]["samples"] = samples
    model = common.load_model(scenario.model_file, scenario.model_parameters)
    for name in ("ked", "frequencies"):
        if name in PREPARE:
            PREPARE[name](model, scenario)

    def timed(name):
        group, start = common.Group(), time.perf_counter()
        ANALYSES[name](model, scenario, group, lambda total, desc: common.Bar())
        return time.perf_counter() - start

    ked, locked, servo = [], [], []
    for _ in range(rounds):
        ked.append(timed("ked"))
        for drives, out in (("locked", locked), ("servo", servo)):
            scenario.data["frequencies"]["drives"] = drives
            out.append(timed("frequencies"))
    frames = scenario.data["ked"]["intervals"] + 1
    return dict(n_v=model.n_v, ked_frame=min(ked) / frames, sample=(min(servo) - min(locked)) / samples,
                peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, nargs="+", default=[4, 8, 16, 32, 64])
    parser.add_argument("--samples", type=int, default=20, help="closed-loop frequency samples")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(measure(args.one, args.samples, args.rounds)))
        return
    print(f"{'elements':>8} {'n_v':>5} {'KED per frame':>14} {'servo sample':>13} {'peak MB':>8}")
    for e in args.elements:
        out = subprocess.run([sys.executable, __file__, "--one", str(e), "--samples", str(args.samples),
                              "--rounds", str(args.rounds)], capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{e:>8} {r['n_v']:>5} {r['ked_frame'] * 1e3:>11.1f} ms {r['sample'] * 1e3:>10.1f} ms "
              f"{r['peak_mb']:>8.0f}")


if __name__ == "__main__":
    main()
