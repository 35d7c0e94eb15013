"""What a scenario will cost, told before any analysis runs: memory and, where it can, time.

Each analysis's largest arrays are counted from the scenario and the model's sizes; its time
from the model's velocity coordinates ``n_v`` on curves of per-unit costs measured on refined
robots (:data:`CURVES`: the 3-RRRU circle with 2 to 128 elements per link, whose transient
runs on the block path and whose frozen structures on the band path, both close to linear in
``n_v``; :data:`GENERAL`: the frozen structures of a robot whose stiffness is not the bodies'
constant one -- springs, compliant drives, stiffening -- measured on the 6-PSS with compliant
drives and 3 to 64 elements per strut, by the saddle-point form from 300 coordinates;
:data:`SERVO`: the KED and closed-loop frequencies of a robot held by its servo drives),
interpolated log-log, extrapolated with the end segments' slopes, and doubled for
slower machines.  The estimates are orders of magnitude, meant to stop a typing slip
(``transient.step = 1e-12``, a 10000 x 10000 map) before it fills the memory or runs for
days, not to predict run times -- nor to refuse a fine mesh the engine runs in minutes.

A run needing more than :data:`MEMORY_SHARE` of the memory available is refused; one
estimated above :data:`TIME_LIMIT` needs ``sim run --yes``.
"""
import math
import os

import numpy as np
from typing import NamedTuple

from sim.errors import SimError
from sim.model.builder import available_memory

MEMORY_SHARE = 0.8         # of the memory available when the run starts
TIME_LIMIT = 3600.0        # s, above which a run needs --yes
MARGIN = 2.0               # slower machines
# Per-unit costs [s] by velocity coordinates, measured on a 2-core machine (2026-11-28, sim run's
# wall times): a transient step, a KED frame (the KED's wall time per frame), a frequency sample
# (also an inverse-dynamics sample's bound), a pose of a frequency map (sweep.workers = 1).
CURVES = {
    "step": ((96, 1.2e-4), (204, 2.5e-4), (348, 4.3e-4), (636, 8.0e-4), (1212, 1.8e-3), (2364, 5.3e-3)),
    "frame": ((96, 1.4e-4), (204, 2.0e-4), (348, 2.9e-4), (636, 4.5e-4), (1212, 8.8e-4), (2364, 1.9e-3)),
    "sample": ((96, 2.0e-4), (204, 3.5e-4), (348, 5.0e-4), (636, 8.5e-4), (1212, 1.75e-3), (2364, 4.8e-3)),
    "modes": ((96, 1.6e-3), (204, 1.9e-3), (636, 3.4e-3), (2364, 3.0e-2)),
}
# ... the frozen structures of robots whose stiffness is not the bodies' constant one (the 6-PSS with compliant
# drives, 186 to 2382 coordinates: the general solver's dense pencil below saddle.SADDLE_MIN, the saddle-point form
# above, on the structure's own M and K_t; measured again 2026-11-28, tenth session)
GENERAL = {
    "frame": ((186, 8.3e-4), (366, 1.45e-3), (654, 1.97e-3), (1230, 3.35e-3), (2382, 6.2e-3)),
    "sample": ((186, 1.41e-3), (366, 2.22e-3), (654, 2.83e-3), (1230, 4.78e-3), (2382, 8.5e-3)),
    "modes": ((186, 4.3e-3), (366, 6.7e-3), (654, 9.0e-3), (1230, 1.42e-2), (2382, 2.47e-2)),
}
# ... the frozen structures of the robot held by its servo drives (``drives = "servo"``: the 3-RRRU of
# rrru3_servo with 4 to 64 elements per link, 2026-11-28, thirteenth and fourteenth sessions): a KED frame, and a
# closed-loop frequency sample on top of the locked one (the first-order system's eigenproblem), each by the
# dense plant below servo_stepping.SPARSE_MIN = 300 (frames) and CLOSED_MIN = 160 coordinates (samples), the
# joints' saddle point above (benchmarks/bench_servo.py).
SERVO = {
    "frame": ((132, 6.6e-3), (204, 1.4e-2), (348, 2.6e-2), (636, 3.4e-2), (1212, 6.7e-2)),
    "sample": ((132, 1.5e-2), (204, 2.2e-2), (348, 3.8e-2), (636, 5.4e-2), (1212, 9.2e-2)),
}
FRF_UNIT, FRF_N, FRF_SCALE = 2e-5, 132, 2.3     # a frequency point of the FRF: s at FRF_N coordinates, growth


class Cost(NamedTuple):
    """Estimate of one analysis: the key that drives it, bytes, seconds (None: not estimated)."""

    key: str
    memory: float
    seconds: float | None
    what: str


def _unit(kind, n_v, general=False, servo=False):
    """The cost [s] of one unit of ``kind`` at ``n_v`` velocity coordinates (``general``: the
    frozen structures by the general solver; ``servo``: held by the servo drives, :data:`SERVO`),
    :data:`MARGIN` included: the curve's points joined log-log, its first and last segments
    extended."""
    if kind == "frf":
        return MARGIN * FRF_UNIT * (max(n_v, 1) / FRF_N) ** FRF_SCALE
    curves = SERVO if servo else GENERAL if general and kind in GENERAL else CURVES
    n, t = np.log(np.array(curves[kind])).T
    x = np.log(max(n_v, 1))
    k = int(np.clip(np.searchsorted(n, x) - 1, 0, n.size - 2))
    slope = (t[k + 1] - t[k]) / (n[k + 1] - n[k])
    return MARGIN * float(np.exp(t[k] + slope * (x - n[k])))


def _duration(scenario, table):
    """The simulated time of an analysis: its ``duration`` key, else the trajectory's."""
    if table.get("duration"):
        return float(table["duration"])
    spec = scenario.data.get("trajectory") or {}
    if spec.get("duration"):
        return float(spec["duration"])
    if spec.get("period"):
        return float(spec["period"])
    if spec.get("kind") == "table" and spec.get("file"):
        return _table_span(spec["file"])
    if spec.get("kind") == "point_to_point" and isinstance(spec.get("waypoints"), list):
        # The moves and dwells (a shaper lengthens each move by less than a period: left out).
        from sim.solvers.moves import per_move
        m = max(len(spec["waypoints"]) - 1, 1)
        try:
            return float(sum(per_move(spec[key], m, key, "").sum() for key in ("move_time", "dwell")
                             if spec.get(key) is not None))
        except Exception:        # a length the trajectory will refuse, with its own message
            return None
    return None


def _table_span(path, window=65536):
    """The time a CSV trajectory table spans, from its first and last rows only (``t`` first;
    a table of 1e7 rows is not read twice): None if they cannot be read as numbers, which
    the trajectory's own reading then reports."""
    def times(lines):
        for line in lines:
            try:
                yield float(line.split(b",")[0])
            except ValueError:      # a header, a comment, a blank or cut line
                continue
    try:
        with open(path, "rb") as handle:
            head = handle.read(window).splitlines()
            handle.seek(max(0, os.fstat(handle.fileno()).st_size - window))
            tail = handle.read(window).splitlines()[1:] or head
    except OSError:
        return None
    first, last = next(times(head), None), next(times(reversed(tail)), None)
    return None if first is None or last is None else abs(last - first)


def estimate(scenario, model):
    """The :class:`Cost` of each analysis of ``scenario`` on ``model``."""
    from sim.analyses import skeleton

    n_v, n_q, d, n_m = model.n_v, model.n_q, len(model.pose_names), len(model.markers)
    data, out = scenario.data, []

    def unit(kind):
        general = False
        if kind in GENERAL:     # the frozen structures by the general solver? (imported only then)
            from sim.solvers.subspace import Tracker
            general = not Tracker.applies(model)
        return _unit(kind, n_v, general)

    def skeleton_bytes(instants):
        """The skeleton over time of a time-domain group (flexible and rigid points, bounded)."""
        return 8 * min(6 * skeleton.point_count(model) * instants, skeleton.MAX_VALUES)

    if "transient" in data:
        t = data["transient"]
        duration = _duration(scenario, t)
        if duration is not None:
            steps = duration / t["step"]
            samples = duration / (t.get("output_step") or t["step"]) + 1
            per_sample = 8 * (n_q + 3 * n_v + 12 * n_m + 4 * d + 16)
            written = "" if t.get("output_step") else " (one per step: no output_step)"
            out.append(Cost("transient.output_step", 2 * samples * per_sample + skeleton_bytes(samples), None,
                            f"{samples:.3g} samples written{written}"))
            out.append(Cost("transient.step", 0.0, steps * unit("step"), f"{steps:.3g} steps of {t['step']:g} s"))
    if "ked" in data:
        k = data["ked"]
        frames, r = k["intervals"] + 1, k["modes"]
        if k.get("drives") == "servo":     # the frames gathered, with the actuators' rows and integral states
            width, seconds = 2 * r + d + 6 + 4 * len(model.actuators), _unit("frame", n_v, servo=True)
        else:
            width, seconds = 2 * r + d + 6, unit("frame")
        out.append(Cost("ked.intervals", 8 * frames * (n_v * width + n_q) + skeleton_bytes(frames),
                        frames * seconds, f"{frames:.3g} frames of {r} modes"))
        duration = _duration(scenario, k)
        if k.get("output_step") and duration is not None:
            # Samples between the interval ends: modal coordinates and the einsum terms of each.
            samples = duration / k["output_step"] + 1
            out.append(Cost("ked.output_step", 8 * samples * (6 * d + 2 * r), None, f"{samples:.3g} samples written"))
    if "frequencies" in data:
        f = data["frequencies"]
        seconds = unit("sample") + (_unit("sample", n_v, servo=True) if f.get("drives") == "servo" else 0.0)
        out.append(Cost("frequencies.samples", 8 * f["samples"] * (n_v * (f["count"] + 2) + n_q),
                        f["samples"] * seconds, f"{f['samples']:.3g} samples"))
    if "inverse_dynamics" in data:
        s = data["inverse_dynamics"]["samples"]
        rows = model.rows["n_total"]
        out.append(Cost("inverse_dynamics.samples", 8 * s * (n_q + 2 * n_v + 12 * rows),
                        s * unit("sample"), f"{s:.3g} samples"))
    if "frf" in data:
        f = data["frf"]
        pairs = len(f["inputs"]) * len(f["outputs"])
        out.append(Cost("frf.points", 16 * f["points"] * (pairs + 2 * n_v), f["points"] * unit("frf"),
                        f"{f['points']:.3g} frequencies"))
    if "sweep" in data and data["sweep"].get("axes"):
        s = data["sweep"]
        cases = math.prod(int(s[a][2]) for a in s["axes"])
        key = "sweep." + s["axes"][0]
        out.append(Cost(key, 8 * cases * (4 * (s.get("count") or 4) + d), cases * unit("modes"),
                        f"{cases:.3g} poses"))
    elif "sweep" in data and data["sweep"].get("parameters"):
        s = data["sweep"]
        cases = math.prod(len(v) for v in s["parameters"].values())
        base = [c for c in out if c.key.split(".")[0] == s.get("analysis")]
        seconds = cases * (base[0].seconds if base and base[0].seconds else unit("modes"))
        out.append(Cost("sweep.parameters", 8 * cases * n_v, seconds, f"{cases:.3g} cases"))
    return out


def _size(nbytes):
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes / 1024:.3g} KiB"


def _time(seconds):
    for unit, scale in (("years", 3.15e7), ("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds:.3g} s"


def check(scenario, costs, allow_long=False, memory=None):
    """Refuse a scenario whose estimate exceeds the memory available, or the time limit
    (unless ``allow_long``): SimError naming the key and the estimate."""
    memory = available_memory() if memory is None else memory
    total = sum(c.memory for c in costs)
    if costs and total > MEMORY_SHARE * memory:
        c = max(costs, key=lambda c: c.memory)
        raise SimError(f"{scenario.path}: `{c.key}`: {c.what} need about {_size(c.memory)} of memory "
                       f"({_size(total)} in all), more than the {_size(memory)} available")
    long = [c for c in costs if c.seconds is not None and c.seconds > TIME_LIMIT]
    if long and not allow_long:
        c = max(long, key=lambda c: c.seconds)
        raise SimError(f"{scenario.path}: `{c.key}`: {c.what} would take about {_time(c.seconds)}; "
                       f"run with --yes to go ahead")
