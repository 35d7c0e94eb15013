"""Settling study on the Delta pick-and-place robot (issue 39 target: a sweep of 10 move times
under 10 s of KED on two cores).

Runs ``scenarios/delta_pick_study.toml`` as ``sim run`` runs it -- the 305 mm move across at
ten move times, unshaped and with the ZVD shaper tuned to the robot, KED on a local pool of two
processes -- once with a warm cache, and prints the sweep's wall time (the group's
``wall_time_s``), the table (move time, shaper, shaper frequency, settle time, residual
amplitude) and, with ``--figures DIR``, draws the trade-off (``DIR/delta_pick_study.png``:
time to settle and residual amplitude against move time, shaped and unshaped).  Then times the
unshaped and shaped standard cycle (``scenarios/delta_pick_place.toml``) with KED alone.

Run: ``python benchmarks/bench_settling.py [--figures docs/images]``
"""
import sim  # noqa: F401  (single-threaded BLAS, set before numpy is imported)
import argparse
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np

from sim.app.api import execute
from sim.app.scenario import load_scenario

ROOT = Path(__file__).resolve().parent.parent


def run(path, overrides=()):
    """``(result file, wall time [s])`` of ``sim run`` on ``path`` into a temporary file."""
    out = Path(tempfile.mkdtemp()) / "run.h5"
    start = time.perf_counter()
    execute(load_scenario(path, overrides), out, force=True)
    return out, time.perf_counter() - start


def study_table(out):
    """The sweep's table: move time (s), shaper, settle time (s), residual amplitude (m)."""
    with h5py.File(out) as f:
        g = f["sweep"]
        return (g["trajectory.move_time"][...], [s.decode() for s in g["trajectory.shaper"][...]],
                g["ked.settle_time"][...].ravel(), g["ked.residual_amplitude"][...].ravel(),
                float(g.attrs["wall_time_s"]))


def figure(table, path):
    """Time to settle and residual amplitude against move time, unshaped and shaped."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    T, shapers, settle, residual, _ = table
    T, shapers = np.asarray(T), np.asarray(shapers)
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.4))
    for name, style in (("none", "o-"), ("zvd", "s--")):
        k = shapers == name
        label = "unshaped (quintic)" if name == "none" else "ZVD, tuned to the robot"
        a.plot(T[k], 1e3 * settle[k], style, label=label)
        a.plot(T[k], 1e3 * T[k], ":", color="0.5") if name == "none" else None
        b.semilogy(T[k], 1e6 * residual[k], style, label=label)
    a.set_xlabel("move time [s]")
    a.set_ylabel("time to settle within 0.1 mm [ms]")
    a.set_title("305 mm move: time to settle (dotted: the move time)", fontsize="small")
    b.axhline(100, color="C2", lw=0.8, label="tolerance 100 µm")
    b.set_xlabel("move time [s]")
    b.set_ylabel("residual amplitude [µm]")
    b.set_title("residual vibration after the move (KED)", fontsize="small")
    for ax in (a, b):
        ax.grid(True, alpha=0.3, which="both")
        ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figures", help="directory for the study's figure")
    args = parser.parse_args()
    study = ROOT / "scenarios" / "delta_pick_study.toml"
    run(study, ("sweep.parameters={ \"trajectory.move_time\" = [0.2] }",))     # warm the kernels' cache
    out, wall = run(study)
    table = study_table(out)
    print(f"sweep of 20 KED cases (10 move times x 2 shapers, 2 processes): {table[4]:.2f} s "
          f"(sim run {wall:.2f} s)")
    print(f"{'move time [s]':>14s} {'shaper':>7s} {'settle [ms]':>12s} {'residual [µm]':>14s}")
    for T, s, t, r in zip(*table[:4]):
        print(f"{T:14.2f} {s:>7s} {1e3 * t:12.1f} {1e6 * r:14.2f}")
    if args.figures:
        path = Path(args.figures) / "delta_pick_study.png"
        figure(table, path)
        print(f"wrote {path}")
    cycle = ROOT / "scenarios" / "delta_pick_place.toml"
    for shaper in ("none", "zvd"):
        out, wall = run(cycle, (f"trajectory.shaper={shaper}", "transient.step=5e-4"))
        with h5py.File(out) as f:
            g = f["ked"]
            print(f"cycle, shaper {shaper}: KED {g.attrs['wall_time_s']:.2f} s, transient "
                  f"{f['transient'].attrs['wall_time_s']:.2f} s; cycle settle time KED "
                  f"{g.attrs['cycle_settle_time']:.4f} s, transient {f['transient'].attrs['cycle_settle_time']:.4f} s")


if __name__ == "__main__":
    main()
