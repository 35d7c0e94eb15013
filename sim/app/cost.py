"""What a scenario will cost, told before any analysis runs: memory and, where it can, time.

Each analysis's largest arrays are counted from the scenario and the model's sizes; its time
from the model's velocity coordinates ``n_v`` with per-unit costs measured on the shipped
robots (3-RRRU, ``n_v = 132``: 0.37 ms per transient step, 0.25 ms per KED frame, 1.7 ms per
frequency sample), scaled as ``n_v^2.3`` (the measured growth between the slider-crank and the
3-RRRU) and doubled for slower machines.  The estimates are orders of magnitude, meant to stop
a typing slip (``transient.step = 1e-12``, a 10000 x 10000 map) before it fills the memory or
runs for days, not to predict run times.

A run needing more than :data:`MEMORY_SHARE` of the memory available is refused; one
estimated above :data:`TIME_LIMIT` needs ``sim run --yes``.
"""
import math
import os
from typing import NamedTuple

from sim.errors import SimError
from sim.model.builder import available_memory

MEMORY_SHARE = 0.8         # of the memory available when the run starts
TIME_LIMIT = 3600.0        # s, above which a run needs --yes
N_REF = 132                # velocity coordinates of the 3-RRRU, where the unit costs were measured
SCALE = 2.3                # growth of the per-step cost with n_v
MARGIN = 2.0               # slower machines
UNIT = {"step": 0.37e-3, "frame": 0.25e-3, "sample": 1.7e-3, "modes": 0.05, "frf": 2e-5}   # s at N_REF


class Cost(NamedTuple):
    """Estimate of one analysis: the key that drives it, bytes, seconds (None: not estimated)."""

    key: str
    memory: float
    seconds: float | None
    what: str


def _unit(kind, n_v):
    return MARGIN * UNIT[kind] * (max(n_v, 1) / N_REF) ** SCALE


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
            out.append(Cost("transient.step", 0.0, steps * _unit("step", n_v), f"{steps:.3g} steps of {t['step']:g} s"))
    if "ked" in data:
        k = data["ked"]
        frames, r = k["intervals"] + 1, k["modes"]
        out.append(Cost("ked.intervals", 8 * frames * (n_v * (2 * r + d + 6) + n_q) + skeleton_bytes(frames),
                        frames * _unit("frame", n_v), f"{frames:.3g} frames of {r} modes"))
        duration = _duration(scenario, k)
        if k.get("output_step") and duration is not None:
            # Samples between the interval ends: modal coordinates and the einsum terms of each.
            samples = duration / k["output_step"] + 1
            out.append(Cost("ked.output_step", 8 * samples * (6 * d + 2 * r), None, f"{samples:.3g} samples written"))
    if "frequencies" in data:
        f = data["frequencies"]
        out.append(Cost("frequencies.samples", 8 * f["samples"] * (n_v * (f["count"] + 2) + n_q),
                        f["samples"] * _unit("sample", n_v), f"{f['samples']:.3g} samples"))
    if "inverse_dynamics" in data:
        s = data["inverse_dynamics"]["samples"]
        rows = model.rows["n_total"]
        out.append(Cost("inverse_dynamics.samples", 8 * s * (n_q + 2 * n_v + 12 * rows),
                        s * _unit("sample", n_v), f"{s:.3g} samples"))
    if "frf" in data:
        f = data["frf"]
        pairs = len(f["inputs"]) * len(f["outputs"])
        out.append(Cost("frf.points", 16 * f["points"] * (pairs + 2 * n_v), f["points"] * _unit("frf", n_v),
                        f"{f['points']:.3g} frequencies"))
    if "sweep" in data and data["sweep"].get("axes"):
        s = data["sweep"]
        cases = math.prod(int(s[a][2]) for a in s["axes"])
        key = "sweep." + s["axes"][0]
        out.append(Cost(key, 8 * cases * (4 * (s.get("count") or 4) + d), cases * _unit("modes", n_v),
                        f"{cases:.3g} poses"))
    elif "sweep" in data and data["sweep"].get("parameters"):
        s = data["sweep"]
        cases = math.prod(len(v) for v in s["parameters"].values())
        base = [c for c in out if c.key.split(".")[0] == s.get("analysis")]
        seconds = cases * (base[0].seconds if base and base[0].seconds else _unit("modes", n_v))
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
