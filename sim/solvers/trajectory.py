"""End-effector motion laws of the rigid robot (scenario table ``[trajectory]``).

A trajectory gives, for times ``t`` (n,), the end-effector coordinates ``x`` and their first
and second derivatives, each (n, d), in the model's pose order (m, rad).

* ``circle``: centre pose ``center`` (d,), the first two coordinates run on a circle of
  ``radius`` at rate ``omega``: ``x0 = c0 + r cos(omega t)``, ``x1 = c1 + r sin(omega t)``
  (paper 001 eq. 71); it starts at ``c + (r, 0)`` with its full speed, or, with ``ramp`` T,
  from rest, the rate growing to ``omega`` in T with continuous acceleration.
* ``cycloidal``: about ``pose`` (default: home), every coordinate named in ``axes`` follows
  ``s(tau) = A (tau - sin(2 pi tau) / (2 pi)) - A / 2``, ``tau = t / period`` clipped to [0, 1]
  (paper 002 §4.4; peak acceleration ``2 pi A / period^2``).
* ``polynomial``: quintic rest-to-rest from ``start`` to ``end`` in ``duration``.
* ``point_to_point``: rest-to-rest moves through ``waypoints`` with dwells, optionally input
  shaped (:mod:`sim.solvers.moves`).
* ``table``: CSV file with columns ``t, x_1 .. x_d`` (header line optional), interpolated by
  a C2 cubic spline.
"""
from dataclasses import dataclass
from pathlib import Path
import warnings

import numpy as np

from sim.errors import SimError
from sim.model import plausible


@dataclass(frozen=True)
class Trajectory:
    """A motion law; call it with times (n,) to get ``(x, x_dot, x_ddot)``, each (n, d)."""

    kind: str
    duration: float
    law: object
    moves: object = None     # sim.solvers.moves.Moves of a point-to-point trajectory

    def __call__(self, t):
        t = np.atleast_1d(np.asarray(t, dtype=float))
        return self.law(t)

    @property
    def breaks(self):
        """The instants (k,) [s] where the law's acceleration or jerk may jump (a point-to-point
        trajectory's; empty where the law is smooth)."""
        return np.zeros(0) if self.moves is None else self.moves.breaks


def ramp_phase(t, omega, ramp):
    """Phase ``theta`` and its two rates (each like ``t``) of a rate ramped from 0 to ``omega``
    over ``ramp`` [s] with continuous acceleration, ``theta_ddot = omega/T (1 - cos(2 pi t/T))``
    (Simo and Vu-Quoc's spin-up law), then constant: ``theta = omega (t - T/2)``."""
    t = np.asarray(t, dtype=float)
    if not ramp > 0:
        return omega * t, np.full_like(t, omega), np.zeros_like(t)
    T = float(ramp)
    c = 2 * np.pi / T
    tr = np.clip(t, 0.0, T)
    inside = t < T
    th = np.where(inside, omega / T * (tr**2 / 2 + (np.cos(c * tr) - 1) / c**2), omega * (t - T / 2))
    thd = np.where(inside, omega / T * (tr - np.sin(c * tr) / c), omega)
    thdd = np.where(inside, omega / T * (1 - np.cos(c * tr)), 0.0)
    return th, thd, thdd


def circle(center, radius, omega, duration, ramp=0.0):
    """Circle law; ``ramp`` [s]: the rate grows from rest to ``omega`` (:func:`ramp_phase`)."""
    c = np.asarray(center, dtype=float)
    ramp = float(ramp or 0.0)

    def law(t):
        x = np.tile(c, (t.size, 1))
        xd = np.zeros_like(x)
        xdd = np.zeros_like(x)
        th, thd, thdd = ramp_phase(t, omega, ramp)
        co, si = np.cos(th), np.sin(th)
        x[:, 0] += radius * co
        x[:, 1] += radius * si
        xd[:, 0], xd[:, 1] = -radius * thd * si, radius * thd * co
        xdd[:, 0] = -radius * (thdd * si + thd**2 * co)
        xdd[:, 1] = radius * (thdd * co - thd**2 * si)
        return x, xd, xdd

    return Trajectory("circle", float(duration), law)


def cycloidal(pose, axes, amplitude, period, duration=None):
    """``axes``: indices of the moving coordinates."""
    p = np.asarray(pose, dtype=float)
    axes = np.asarray(axes, dtype=int)

    def law(t):
        tau = np.clip(t / period, 0.0, 1.0)
        inside = (t >= 0) & (t <= period)
        s = amplitude * (tau - np.sin(2 * np.pi * tau) / (2 * np.pi)) - 0.5 * amplitude
        sd = np.where(inside, amplitude / period * (1 - np.cos(2 * np.pi * tau)), 0.0)
        sdd = np.where(inside, amplitude / period**2 * 2 * np.pi * np.sin(2 * np.pi * tau), 0.0)
        x = np.tile(p, (t.size, 1))
        xd = np.zeros_like(x)
        xdd = np.zeros_like(x)
        x[:, axes] += s[:, None]
        xd[:, axes] = sd[:, None]
        xdd[:, axes] = sdd[:, None]
        return x, xd, xdd

    return Trajectory("cycloidal", float(period if duration is None else duration), law)


def polynomial(start, end, duration):
    a, b = np.asarray(start, dtype=float), np.asarray(end, dtype=float)
    T = float(duration)

    def law(t):
        s = np.clip(t / T, 0.0, 1.0)[:, None]
        blend = 10 * s**3 - 15 * s**4 + 6 * s**5
        blend_d = (30 * s**2 - 60 * s**3 + 30 * s**4) / T
        blend_dd = (60 * s - 180 * s**2 + 120 * s**3) / T**2
        return a + (b - a) * blend, (b - a) * blend_d, (b - a) * blend_dd

    return Trajectory("polynomial", T, law)


def table(path, d):
    path = Path(path)
    if path.is_file() and not path.read_text(errors="replace").strip():
        raise SimError(f"{path}: the trajectory table is empty (expected rows t, {d} pose coordinates)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # "input contained no data" (none, or a header only): reported below
        try:
            data = np.loadtxt(path, delimiter=",", ndmin=2, comments="#")
        except ValueError:                   # a header line
            try:
                data = np.loadtxt(path, delimiter=",", ndmin=2, comments="#", skiprows=1)
            except ValueError as exc:
                raise SimError(f"{path}: not a numeric CSV table ({exc})") from None
        except OSError:
            raise SimError(f"{path}: trajectory table not found") from None
    if data.size == 0:
        raise SimError(f"{path}: the trajectory table has no data rows")
    if data.shape[1] != d + 1:
        raise SimError(f"{path}: expected {d + 1} columns (t and {d} pose coordinates), got {data.shape[1]}")
    if not np.all(np.isfinite(data)):
        raise SimError(f"{path}: the table holds NaN or infinite values")
    if data.shape[0] < 4 or np.any(np.diff(data[:, 0]) <= 0):
        raise SimError(f"{path}: times must be strictly increasing, at least 4 rows")
    import scipy.interpolate    # on use: a long import that `sim modes` does without
    spline = scipy.interpolate.CubicSpline(data[:, 0] - data[0, 0], data[:, 1:], axis=0)

    def law(t):
        return spline(t), spline(t, 1), spline(t, 2)

    return Trajectory("table", float(data[-1, 0] - data[0, 0]), law)


def from_scenario(spec, model, where="[trajectory]"):
    """Trajectory from a validated ``[trajectory]`` table for ``model``.

    Raises
    ------
    SimError
        When the dimensions do not match the model's end-effector coordinates.
    """
    d = len(model.pose_names)
    names = ", ".join(model.pose_names)
    kind = spec["kind"]

    def vector(key, default=None):
        value = spec.get(key)
        if value is None:
            return default
        value = np.asarray(value, dtype=float)
        if value.shape != (d,):
            raise SimError(f"{where} `{key}` needs {d} values ({names}), got {value.size}")
        return value

    if kind == "circle":
        if d < 2:
            raise SimError(f"{where} a circle needs two end-effector coordinates; the model has {names}")
        law = circle(vector("center"), spec["radius"], spec["omega"], spec["duration"], spec.get("ramp") or 0.0)
    elif kind == "cycloidal":
        unknown = [a for a in spec["axes"] if a not in model.pose_names]
        if unknown:
            raise SimError(f"{where} `axes`: unknown coordinate `{unknown[0]}` (the model has {names})")
        axes = [model.pose_names.index(a) for a in spec["axes"]]
        law = cycloidal(vector("pose", model.pose_home), axes, spec["amplitude"], spec["period"], spec.get("duration"))
    elif kind == "polynomial":
        law = polynomial(vector("start"), vector("end"), spec["duration"])
    elif kind == "table":
        law = table(spec["file"], d)
    elif kind == "point_to_point":
        motion, duration, moves = _tuned(spec, model, where)
        law = Trajectory(kind, duration, motion, moves)
    else:
        raise SimError(f"{where} unknown kind `{kind}`")
    check_pace(law, model, spec, where)
    return law


#: Point-to-point laws already built, by model and table: tuning a shaper to the robot solves
#: modes at every waypoint, and each analysis of a run asks for the same law.
_BUILT = {}


def _tuned(spec, model, where):
    """``(law, duration, moves)`` of a point-to-point table (:func:`sim.solvers.moves.point_to_point`),
    built once per model and table."""
    import json

    from sim.solvers.moves import point_to_point
    key = (id(model), json.dumps(spec, sort_keys=True, default=str))
    if key not in _BUILT:
        if len(_BUILT) > 16:
            _BUILT.clear()
        _BUILT[key] = (model, point_to_point(spec, model, where))
    return _BUILT[key][1]


#: Samples of a motion law the pace check takes (and the finest detail it sees: duration / this).
PACE_SAMPLES = 4001


def check_pace(law, model, spec, where):
    """Refuse an end-effector motion faster than ``trajectory.max_speed`` or harder than
    ``trajectory.max_acceleration`` (:mod:`sim.model.plausible`): past those bounds a value was
    usually typed in another unit (omega in rpm, lengths in mm), and the run would end in a
    Newton failure far from the cause, or answer for a motion nobody meant.

    Raises
    ------
    SimError
        Naming the peak, its instant, the bound's key and the likely slip.
    """
    translation = np.array([u == "m" for u in model.pose_units])
    if not translation.any():
        return
    t = np.linspace(0.0, law.duration, PACE_SAMPLES)
    _, xd, xdd = law(t)
    for key, values, bound, unit, noun in (
            ("max_acceleration", xdd, plausible.MAX_ACCELERATION, "m/s^2", "acceleration"),
            ("max_speed", xd, plausible.MAX_SPEED, "m/s", "speed")):
        limit = spec.get(key) or bound
        peak = np.linalg.norm(values[:, translation], axis=1)
        k = int(np.argmax(peak))
        if peak[k] > limit:
            in_g = f" ({peak[k] / plausible.G_0:.3g} g)" if noun == "acceleration" else ""
            raise SimError(f"{where} the end effector's {noun} reaches {peak[k]:.4g} {unit}{in_g} at t = {t[k]:.4g} s, "
                           f"above `{key}` = {limit:.4g} {unit}{_slip(spec, noun)}; if it is meant, raise "
                           f"trajectory.{key}")


def _slip(spec, noun):
    """The likely unit slip behind a motion too fast (``""`` if none comes to mind)."""
    if spec["kind"] == "circle":
        omega = spec["omega"]
        return (f": omega typed in rpm? {omega:g} rpm = {omega * 2 * np.pi / 60:.4g} rad/s"
                f"{', or radius in mm' if spec['radius'] > 1 else ''}")
    if spec["kind"] == "table":
        rounded = (", or rows rounded to few digits (the spline's accelerations are then the rounding's noise)"
                   if noun == "acceleration" else "")
        return f": a table in mm, its times in another unit{rounded}?"
    return ": lengths in mm, or times in another unit?"
