"""Are the shipped transients converged?  Each runs at its step and at half of it; printed:
the RMS difference of the deviations' dynamic parts (per coordinate, over the RMS of the end
effector's vibration in that unit, on the coarse run's instants) and the phase-error estimate
of :func:`sim.app.selfcheck.phase_error` of each run, with the step it advises.

    python benchmarks/convergence.py [SCENARIO ...]     # default: every shipped transient

Issue 38 asks each shipped transient within 5 % RMS of the same run at half the step.
"""
import argparse
import sys
import tempfile
from pathlib import Path

import h5py
import numpy as np

from sim.app.cli import main as sim

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ("rrru3_circle", "five_bar_circle", "slider_crank", "slider_crank_simeon", "spinup_beam", "four_bar_locked",
           "delta_pick_place", "rrru3_servo")


def _run(scenario, out, *sets):
    args = ["run", str(scenario), "--out", str(out), "--force"]
    for s in sets:
        args += ["--set", s]
    if sim(args) != 0:
        raise SystemExit(f"{scenario} failed")
    with h5py.File(out) as f:
        g = f["transient"]
        units = [str(u) for u in np.broadcast_to(np.atleast_1d(g["deviation"].attrs["units"]).astype(str),
                                                 g["deviation"].shape[1:])]
        sensors = {k: d[...] for k, d in (g["sensors"].items() if "sensors" in g else ()) if str(d.attrs["units"]) == "m"}
        return (g["time"][...], g["deviation_dynamic"][...], float(g.attrs["step"]), units,
                g.attrs.get("phase_error"), float(g.attrs.get("converged_step", np.nan)), float(g.attrs["wall_time_s"]),
                sensors)


def compare(name, tmp):
    scenario = ROOT / "scenarios" / f"{name}.toml"
    t, x, h, units, est, advised, wall, sensors = _run(scenario, Path(tmp) / f"{name}.h5")
    t2, x2, _, _, est2, _, wall2, sensors2 = _run(scenario, Path(tmp) / f"{name}-half.h5", f"transient.step={h / 2}")
    on = np.column_stack([np.interp(t, t2, c) for c in x2.T])
    units = np.asarray(units)
    scale = np.array([np.sqrt(np.mean(np.sum(x[:, units == u] ** 2, axis=1))) for u in units])
    with np.errstate(invalid="ignore", divide="ignore"):
        diff = np.sqrt(np.mean((x - on) ** 2, axis=0)) / scale
    print(f"{name}: h = {h:.3g} s ({wall:.2f} s), h/2 ({wall2:.2f} s): RMS difference "
          f"{np.array2string(100 * diff, precision=2)} %; estimate at h {np.array2string(100 * np.asarray(est), precision=2)} %, "
          f"at h/2 {np.array2string(100 * np.asarray(est2), precision=2)} %; advised step {advised:.3g} s")
    for key, y in sensors.items():     # a deflection sensor: the quantity some benchmarks judge on
        y2 = np.interp(t, t2, sensors2[key])
        print(f"  sensor {key}: RMS difference {100 * np.sqrt(np.mean((y - y2) ** 2) / np.mean(y2 ** 2)):.3g} %")
    return diff


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", default=SHIPPED)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        worst = {name: np.nanmax(compare(name, tmp)) for name in args.scenarios}
    print("not within 5 %: " + (", ".join(n for n, w in worst.items() if w > 0.05) or "none"))


if __name__ == "__main__":
    sys.exit(main())
