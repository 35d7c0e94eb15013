"""The servo-held frozen structures of a robot with free motions, dense against sparse: the
6-PSS with spherical joints at both ends of its struts (each strut spins freely about its
axis), on servos, per servo-KED frame (:func:`sim.solvers.servo_stepping.servo_frames` over 11
instants of a cycloid, 12 modes, warm).

    python benchmarks/bench_free_motions.py [--elements 8 16 32] [--rounds 2]

Each size and path in its own process (the peak memory is that process's); the best of
``rounds`` is kept.  A benchmark, not a test.
"""
import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def measure(elements, dense):
    """``{"n_v", "frame_s", "peak_mb", "hz"}`` of one size and path, in this process."""
    import numpy as np

    from sim.model.loader import load_model
    from sim.solvers import closed_loop as sv, servo_stepping as ss
    from sim.solvers.damping import Damping
    from sim.solvers.motion import rigid_motion
    from sim.solvers.trajectory import from_scenario

    model = load_model(ROOT / "models" / "pss6.py", {"slider_joint": "spherical", "compliant_drives": False,
                                                      "elements_per_strut": elements})
    servo = sv.Servo.from_table(dict(kp=100.0, kv=2000.0, ki=5.0), model)
    path = from_scenario(dict(kind="cycloidal", axes=["x", "z"], amplitude=0.02, period=0.4,
                              pose=[0.0, 0.0, 1.744, 0.0, 0.0, 0.0]), model)
    motion = rigid_motion(model, path, np.linspace(0.0, path.duration, 11), condition=False)
    if dense:
        ss.SPARSE_MIN = 10**9
    damping = Damping(alpha=0.5, beta=2e-5)
    ss.servo_frames(model, motion, servo, damping, 12)       # warm
    start = time.perf_counter()
    frames = ss.servo_frames(model, motion, servo, damping, 12)
    return {"n_v": model.n_v, "frame_s": (time.perf_counter() - start) / 11,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "hz": (frames.omega[0, :3] / (2 * np.pi)).tolist()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, nargs="*", default=[8, 16, 32])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(int(args.child[0]), args.child[1] == "dense")))
        return
    print("elements  n_v   dense [ms/frame]  sparse [ms/frame]  ratio  peak RSS dense / sparse [MB]")
    for n in args.elements:
        best = {}
        for _ in range(args.rounds):
            for path in ("dense", "sparse"):     # alternated (the machine's load varies)
                run = subprocess.run([sys.executable, __file__, "--child", str(n), path], capture_output=True,
                                     text=True, cwd=ROOT)
                if run.returncode:
                    sys.exit(f"bench_free_motions: {n} {path} failed:\n{run.stderr[-3000:]}")
                r = json.loads(run.stdout.strip().splitlines()[-1])
                if path not in best or r["frame_s"] < best[path]["frame_s"]:
                    best[path] = r
        d, s = best["dense"], best["sparse"]
        print(f"{n:8d}  {d['n_v']:4d}  {1e3 * d['frame_s']:16.1f}  {1e3 * s['frame_s']:17.1f}  "
              f"{d['frame_s'] / s['frame_s']:5.1f}  {d['peak_mb']:.0f} / {s['peak_mb']:.0f}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
