r"""Rest-to-rest moves between waypoints, input shapers, and the settling they leave.

A ``point_to_point`` trajectory (scenario ``[trajectory] kind = "point_to_point"``) moves the
end effector from waypoint ``W_k`` to ``W_(k+1)`` (m, rad, the model's pose order) along the
straight line ``x = W_k + (W_(k+1) - W_k) s(t - t_k)`` with a unit stroke profile ``s`` of
duration ``T_k`` (``move_time``), rests ``dwell_k``, and goes on.  The profiles (``tau = t/T``):

* ``quintic``: ``s = 10 tau^3 - 15 tau^4 + 6 tau^5`` (zero rate and acceleration at both ends);
* ``cycloidal``: ``s = tau - sin(2 pi tau) / (2 pi)`` (zero acceleration at both ends too);
* ``trapezoidal``: constant acceleration for ``acceleration_time`` ``t_a`` (default ``T/3``),
  cruise at ``v = 1/(T - t_a)``, constant deceleration for ``t_a``: peak acceleration
  ``v / t_a`` (per unit stroke);
* ``jerk_limited``: the same with the acceleration ramped in ``jerk_time`` ``t_j`` (default
  ``t_a/2``: triangular acceleration pulses): ``v = 1/(T - t_a)``, ``a = v/(t_a - t_j)``,
  jerk ``a/t_j``.

An input shaper of impulses ``A_i`` at ``t_i`` (``sum A_i = 1``) turns a move into
``s_shaped(t) = sum_i A_i s(t - t_i)``: it ends later by the shaper's length ``t_n``.  On an
undamped oscillator of frequency ``f`` the residual vibration of the shaped move is that of the
unshaped one times ``V = |sum_i A_i exp(2 pi i f t_i)|`` (superposition), which is zero at the
shaper's frequency ``f_s`` (Singer and Seering 1990; Singhose, Seering and Singer 1994):

* ``zv``: ``A = (1/2, 1/2)``, ``t = (0, 1/(2 f_s))``: ``V = |cos(pi f / (2 f_s))|``;
* ``zvd``: ``A = (1/4, 1/2, 1/4)``, ``t = (0, 1/(2 f_s), 1/f_s)``: ``V = cos^2(pi f/(2 f_s))``;
* ``ei`` (extra insensitive, ``V_tol = EI_TOLERANCE``): ``A = ((1 + V_tol)/4, (1 - V_tol)/2,
  (1 + V_tol)/4)`` at the ZVD's times: ``V = |(1 + V_tol)/2 cos(pi f/f_s) + (1 - V_tol)/2|``,
  ``V_tol`` at ``f_s``, zero on either side, at most ``V_tol`` over a wider band than ZVD's.

The shapers are designed undamped: the robots' damping ratios (a few %) change the residual
of a tuned ZV by about ``pi zeta / 2`` and of ZVD and EI by less.

The settling of each move (:func:`settling`) is read from an analysis' output: the end
effector's distance to its target (the rigid pose plus the dynamic deviation, translations) and
its residual vibration after the rigid motion of the move has ended.
"""
from dataclasses import dataclass, field

import numpy as np

from sim.errors import SimError

PROFILES = ("quintic", "cycloidal", "trapezoidal", "jerk_limited")
SHAPERS = ("none", "zv", "zvd", "ei")
EI_TOLERANCE = 0.05          # residual of the EI shaper at its own frequency (its design tolerance)
EXCITED_SHARE = 0.1          # a mode "is excited" when its predicted residual is at least this share of the largest
TUNING_MODES = 8             # modes looked at when tuning a shaper to the robot
RESOLVED_STEPS = 10          # steps per period of the shaper's frequency the transient needs (as sim.app.selfcheck)
RESOLVED_INTERVALS = 2       # KED intervals per half period (the shaper's impulse spacing)


def shaper_impulses(kind, frequency):
    """Amplitudes and times (each (n,)) of the impulses of shaper ``kind`` tuned to ``frequency`` [Hz]."""
    if kind == "none":
        return np.ones(1), np.zeros(1)
    half = 0.5 / frequency
    if kind == "zv":
        return np.array([0.5, 0.5]), np.array([0.0, half])
    if kind == "zvd":
        return np.array([0.25, 0.5, 0.25]), np.array([0.0, half, 2 * half])
    if kind == "ei":
        v = EI_TOLERANCE
        return np.array([(1 + v) / 4, (1 - v) / 2, (1 + v) / 4]), np.array([0.0, half, 2 * half])
    raise ValueError(f"unknown shaper {kind!r}")


def _knots(profile, T, t_a, t_j):
    """Knots (8,) and acceleration values (8,) of a unit-stroke trapezoidal or jerk-limited
    profile: the acceleration is linear between knots (equal knots: a jump)."""
    v = 1.0 / (T - t_a)
    if profile == "trapezoidal":
        t_j = 0.0
    a = v / (t_a - t_j)
    knots = np.array([0.0, t_j, t_a - t_j, t_a, T - t_a, T - t_a + t_j, T - t_j, T])
    return knots, np.array([0.0, a, a, 0.0, 0.0, -a, -a, 0.0])


def _piecewise(t, knots, acc):
    """``s, s_dot, s_ddot`` (each like ``t``) of the acceleration linear between ``knots``
    (exact integration from rest at ``knots[0]``)."""
    s, v = np.zeros_like(t), np.zeros_like(t)
    a = np.zeros_like(t)
    s_k = v_k = 0.0
    for k in range(len(knots) - 1):
        h = knots[k + 1] - knots[k]
        if h <= 0:
            continue
        jerk = (acc[k + 1] - acc[k]) / h
        a0 = acc[k]
        inside = (t >= knots[k]) & (t < knots[k + 1])
        x = t[inside] - knots[k]
        a[inside] = a0 + jerk * x
        v[inside] = v_k + a0 * x + jerk * x**2 / 2
        s[inside] = s_k + v_k * x + a0 * x**2 / 2 + jerk * x**3 / 6
        s_k, v_k = s_k + v_k * h + a0 * h**2 / 2 + jerk * h**3 / 6, v_k + a0 * h + jerk * h**2 / 2
    s[t >= knots[-1]] = 1.0
    return s, v, a


def profile_knots(profile, T, t_a=None, t_j=None):
    """The instants (k,) of a unit-stroke law (:func:`profile_law`) where its acceleration or
    jerk may jump: its ends, and the trapezoidal and jerk-limited profiles' knots."""
    if profile in ("trapezoidal", "jerk_limited"):
        t_a = T / 3 if t_a is None else t_a
        return np.unique(_knots(profile, T, t_a, t_a / 2 if t_j is None else t_j)[0])
    return np.array([0.0, T])


def profile_law(profile, T, t_a=None, t_j=None):
    """Unit-stroke rest-to-rest law ``law(t) -> (s, s_dot, s_ddot)`` (each like ``t`` (n,)):
    0 before ``t = 0``, 1 after ``T``; see the module docstring."""
    if profile in ("trapezoidal", "jerk_limited"):
        t_a = T / 3 if t_a is None else t_a
        t_j = t_a / 2 if t_j is None else t_j
        knots, acc = _knots(profile, T, t_a, t_j)
        return lambda t: _piecewise(np.asarray(t, dtype=float), knots, acc)

    def law(t):
        tau = np.clip(np.asarray(t, dtype=float) / T, 0.0, 1.0)
        inside = (tau > 0) & (tau < 1)
        if profile == "quintic":
            s = 10 * tau**3 - 15 * tau**4 + 6 * tau**5
            sd = (30 * tau**2 - 60 * tau**3 + 30 * tau**4) / T
            sdd = (60 * tau - 180 * tau**2 + 120 * tau**3) / T**2
        else:
            c = 2 * np.pi
            s = tau - np.sin(c * tau) / c
            sd = (1 - np.cos(c * tau)) / T
            sdd = c * np.sin(c * tau) / T**2
        return s, np.where(inside, sd, 0.0), np.where(inside, sdd, 0.0)
    return law


def shaped_law(law, amplitudes, times):
    """``law`` convolved with the impulses: ``sum_i A_i law(t - t_i)`` and its rates."""
    def shaped(t):
        t = np.asarray(t, dtype=float)
        out = [np.zeros_like(t) for _ in range(3)]
        for A, ti in zip(amplitudes, times):
            for o, x in zip(out, law(t - ti)):
                o += A * x
        return tuple(out)
    return shaped


@dataclass(frozen=True)
class Moves:
    """The moves of a point-to-point trajectory (m moves).

    Attributes
    ----------
    waypoints : ndarray, shape (m + 1, d)
    start, end : ndarray, shape (m,)
        Each move's start and the end of its rigid motion (the shaper's length included) [s].
    window : ndarray, shape (m,)
        End of each move's dwell (the next move's start) [s].
    shaper : str
    shaper_frequency : ndarray, shape (m,)
        Frequency each move's shaper is tuned to [Hz] (NaN: no shaper).
    tuning : tuple of str
        How each frequency was chosen (empty strings when given).
    tolerance : float
        Settling tolerance [m].
    lowest_frequency : ndarray, shape (m,)
        Lowest elastic frequency at each move's end pose, actuators locked [Hz]: a move has
        settled only once it stays within the tolerance for a period of it.
    breaks : ndarray, shape (k,)
        The instants where the law's acceleration or jerk may jump [s], ascending: each
        profile's knots after each of its shaper's impulses (a sampled reference puts a sample
        on each, so that its interpolation is smooth between samples).
    """

    waypoints: np.ndarray
    start: np.ndarray
    end: np.ndarray
    window: np.ndarray
    shaper: str
    shaper_frequency: np.ndarray
    tuning: tuple
    tolerance: float
    lowest_frequency: np.ndarray
    breaks: np.ndarray = field(default_factory=lambda: np.zeros(0))


def per_move(value, m, key, where, default=None):
    """``value`` (one number or ``m``) as (m,) floats; ``default`` when None."""
    if value is None:
        return None if default is None else np.full(m, float(default))
    out = np.atleast_1d(np.asarray(value, dtype=float))
    if out.size == 1:
        return np.full(m, out[0])
    if out.size != m:
        raise SimError(f"{where} `{key}` needs one value or one per move ({m}), got {out.size}")
    return out


def point_to_point(spec, model, where):
    """Law and :class:`Moves` of a validated ``point_to_point`` table for ``model``:
    ``(law, duration, moves)``, ``law(t) -> (x, x_dot, x_ddot)`` each (n, d).

    Raises
    ------
    SimError
        One waypoint, a waypoint of the wrong length or out of the workspace, a profile's
        times that do not fit its move time; naming the key.
    """
    d = len(model.pose_names)
    W = np.asarray(spec["waypoints"], dtype=float)
    if W.ndim != 2 or W.shape[0] < 2:
        raise SimError(f"{where} `waypoints` needs at least two poses (the robot starts at rest at the first), "
                       f"got {W.shape[0] if W.ndim == 2 else W.size}")
    if W.shape[1] != d:
        raise SimError(f"{where} `waypoints`: each pose needs {d} values ({', '.join(model.pose_names)}), "
                       f"got {W.shape[1]}")
    m = W.shape[0] - 1
    T = per_move(spec["move_time"], m, "move_time", where)
    dwell = per_move(spec.get("dwell"), m, "dwell", where, default=0.0)
    t_a = per_move(spec.get("acceleration_time"), m, "acceleration_time", where)
    t_j = per_move(spec.get("jerk_time"), m, "jerk_time", where)
    profile = spec.get("profile") or "quintic"
    for key, values in (("move_time", T), ("dwell", dwell), ("acceleration_time", t_a), ("jerk_time", t_j)):
        if values is not None and (np.any(values < 0) or (key == "move_time" and np.any(values <= 0))):
            raise SimError(f"{where} `{key}` must be {'positive' if key == 'move_time' else 'non-negative'}, "
                           f"got {values.tolist()}")
    if profile not in ("trapezoidal", "jerk_limited"):
        for key in ("acceleration_time", "jerk_time"):
            if spec.get(key) is not None:
                raise SimError(f"{where} `{key}` is used by profile `trapezoidal` or `jerk_limited`, not `{profile}`")
    else:
        t_a = T / 3 if t_a is None else t_a
        if spec.get("jerk_time") is not None and profile == "trapezoidal":
            raise SimError(f"{where} `jerk_time` is used by profile `jerk_limited`, not `trapezoidal`")
        t_j = t_a / 2 if t_j is None else t_j
        if np.any(t_a <= 0) or np.any(t_a > T / 2):
            raise SimError(f"{where} `acceleration_time` must lie in (0, move_time/2], got {t_a.tolist()} "
                           f"for move times {T.tolist()}")
        if profile == "jerk_limited" and (np.any(t_j <= 0) or np.any(t_j > t_a / 2)):
            raise SimError(f"{where} `jerk_time` must lie in (0, acceleration_time/2], got {t_j.tolist()}")
    from sim.model.assembly import solve_pose
    from sim.solvers.modal import modes
    lowest = np.zeros(m)
    for k in range(m + 1):    # every waypoint reachable, named by its index
        try:
            q = solve_pose(model, W[k])
        except SimError as exc:
            raise SimError(f"{where} `waypoints`[{k}]: {exc}") from None
        if k:
            f = modes(model, q, count=1, energies=False).frequencies_hz
            lowest[k - 1] = f[0] if f.size else np.inf     # a rigid robot: nothing rings
    shaper = spec.get("shaper") or "none"
    laws = [profile_law(profile, T[k], None if t_a is None else t_a[k], None if t_j is None else t_j[k])
            for k in range(m)]
    if shaper == "none":
        frequency, tuning = np.full(m, np.nan), ("",) * m
    elif spec.get("shaper_frequency") is not None:
        frequency = per_move(spec["shaper_frequency"], m, "shaper_frequency", where)
        if np.any(frequency <= 0):
            raise SimError(f"{where} `shaper_frequency` must be positive, got {frequency.tolist()}")
        tuning = ("given",) * m
    else:
        try:
            found = [tuned_frequency(model, W[k], W[k + 1], laws[k], T[k]) for k in range(m)]
        except SimError as exc:
            raise SimError(f"{where} {exc}") from None
        frequency = np.array([f for f, _ in found])
        tuning = tuple(text for _, text in found)
    shaped, length, offsets = [], np.zeros(m), []
    for k in range(m):
        A, ti = shaper_impulses(shaper, frequency[k])
        shaped.append(shaped_law(laws[k], A, ti))
        length[k] = ti[-1]
        knots = profile_knots(profile, T[k], None if t_a is None else t_a[k], None if t_j is None else t_j[k])
        offsets.append((ti[:, None] + knots).ravel())
    span = T + length
    start = np.concatenate([[0.0], np.cumsum(span + dwell)[:-1]])
    end = start + span
    window = start + span + dwell
    steps = np.diff(W, axis=0)

    def law(t):
        x = np.tile(W[0], (t.size, 1))
        xd, xdd = np.zeros_like(x), np.zeros_like(x)
        for k in range(m):
            s, sd, sdd = shaped[k](t - start[k])
            x += s[:, None] * steps[k]
            xd += sd[:, None] * steps[k]
            xdd += sdd[:, None] * steps[k]
        return x, xd, xdd

    moves = Moves(waypoints=W, start=start, end=end, window=window, shaper=shaper, shaper_frequency=frequency,
                  tuning=tuning, tolerance=float(spec.get("settling_tolerance") or DEFAULT_TOLERANCE),
                  lowest_frequency=lowest, breaks=np.unique(np.concatenate([start[k] + offsets[k] for k in range(m)])))
    return law, float(window[-1]), moves


DEFAULT_TOLERANCE = 1e-4     # m, settling tolerance (a pick-and-place robot's repeatability, ±0.1 mm)


def tuned_frequency(model, pose_from, pose_to, law, T):
    """The lowest elastic mode a move excites, at its end pose with the actuators locked.

    The structure frozen at the end pose is loaded by the inertia of the rigid motion,
    ``-M v_x s_ddot(t)``, ``v_x`` the rigid robot's velocity for the stroke ``W_to - W_from``
    at unit rate (:func:`sim.solvers.motion.rigid_sample`); mode ``r`` (mass-normalised
    ``phi_r``, ``omega_r``) is left with the end-effector amplitude
    ``|J_x phi_r| |phi_r^T M v_x| |int s_ddot exp(i omega_r t) dt| / omega_r`` (translations).
    The chosen mode is the lowest whose amplitude is at least ``EXCITED_SHARE`` of the largest.

    Returns
    -------
    frequency : float
        [Hz]
    text : str
        Which mode, for the run's output.
    """
    from sim.model.assembly import solve_pose
    from sim.model.dynamics import mass_matrix
    from sim.model.evaluator import Evaluator
    from sim.model.kinematics import pose_jacobian
    from sim.solvers.modal import modes
    from sim.solvers.motion import rigid_sample

    q = solve_pose(model, pose_to)
    sample = rigid_sample(model, q, pose_to, pose_dot=np.asarray(pose_to) - np.asarray(pose_from), ev=Evaluator(model),
                          condition=False)
    if sample is None:
        raise SimError(f"the rigid robot's velocity at the end pose {np.round(pose_to, 6).tolist()} is undetermined")
    v = sample[1]
    found = modes(model, q, count=TUNING_MODES, energies=False)
    if not found.frequencies_hz.size:
        raise SimError(f"`shaper` needs `shaper_frequency`: `{model.name}` has no elastic mode to tune it to")
    translation = np.array([u == "m" for u in model.pose_units])
    J = pose_jacobian(model, q)[1][translation]
    gamma = found.shapes.T @ (mass_matrix(model, q) @ v)
    t = np.linspace(0.0, T, 2001)
    acc = law(t)[2]
    spectrum = np.abs(np.trapezoid(acc[None, :] * np.exp(1j * found.omega[:, None] * t[None, :]), t, axis=1))
    amplitude = np.linalg.norm(J @ found.shapes, axis=0) * np.abs(gamma) * spectrum / np.maximum(found.omega, 1e-300)
    if not amplitude.size or amplitude.max() <= 0:
        r = 0
    else:
        r = int(np.flatnonzero(amplitude >= EXCITED_SHARE * amplitude.max())[0])
    f = float(found.frequencies_hz[r])
    return f, f"mode {r + 1}, {100 * amplitude[r] / max(amplitude.sum(), 1e-300):.0f} % of the predicted residual"


def check_resolution(moves, step, analysis):
    """Refuse a shaper tuned above what an analysis' step resolves: ``step`` [s] the
    transient's time step (``RESOLVED_STEPS`` per period) or the KED's interval
    (``RESOLVED_INTERVALS`` per impulse spacing).

    Raises
    ------
    SimError
        Naming ``trajectory.shaper_frequency`` and the step's key.
    """
    if moves is None or moves.shaper == "none":
        return
    if analysis == "transient":
        limit, key = 1.0 / (RESOLVED_STEPS * step), "transient.step"
    else:
        limit, key = 1.0 / (2 * RESOLVED_INTERVALS * step), "ked.intervals"
    f = np.nanmax(moves.shaper_frequency)
    if f > limit:
        raise SimError(f"trajectory.shaper_frequency = {f:.4g} Hz is above what {key} resolves ({limit:.4g} Hz "
                       f"with a step of {step:.3g} s): lower the frequency or refine {key}")


@dataclass(frozen=True)
class Settling:
    """Per-move settling of one analysis (m moves); NaN for a move without dwell or whose
    dwell the analysis does not reach.

    Attributes
    ----------
    settle_time : ndarray, shape (m,)
        From the move's start until the end effector stays within the tolerance of its
        target for the rest of the dwell [s], and that for at least a period of the lowest
        mode at the target (a vibration passing through the band as the dwell ends has not
        settled); inf if it never does.
    residual_amplitude : ndarray, shape (m,)
        Peak of the dynamic deviation's norm (translations) from the end of the move's rigid
        motion to the end of its dwell [m].
    final_amplitude : ndarray, shape (m,)
        Norm of the dynamic deviation at the end of the dwell [m].
    """

    settle_time: np.ndarray
    residual_amplitude: np.ndarray
    final_amplitude: np.ndarray


def settling(time, pose_rigid, deviation_dynamic, units, moves):
    """Per-move settling from an analysis' samples.

    Parameters
    ----------
    time : ndarray, shape (n,)
    pose_rigid, deviation_dynamic : ndarray, shape (n, d)
    units : sequence of str
        Units of the coordinates (``m`` marks the translations, the only ones judged).
    moves : Moves

    Returns
    -------
    Settling
    """
    translation = np.array([u == "m" for u in units])
    m = len(moves.start)
    settle, residual, final = (np.full(m, np.nan) for _ in range(3))
    dev = np.linalg.norm(deviation_dynamic[:, translation], axis=1)
    for k in range(m):
        spacing = time[-1] - time[-2] if time.size > 1 else 0.0
        if moves.window[k] - moves.end[k] <= 0 or time[-1] < moves.window[k] - 1.01 * spacing:
            continue      # no dwell, or the analysis stopped before its end (a shorter transient.duration)
        inside = (time >= moves.start[k]) & (time <= moves.window[k] * (1 + 1e-12))
        idx = np.flatnonzero(inside)
        if idx.size < 2:
            continue
        target = moves.waypoints[k + 1][translation]
        error = np.linalg.norm(pose_rigid[idx][:, translation] + deviation_dynamic[idx][:, translation] - target,
                               axis=1)
        after = idx[time[idx] >= moves.end[k] * (1 - 1e-12)]
        residual[k] = dev[after].max() if after.size else np.nan
        final[k] = dev[idx[-1]]
        out = np.flatnonzero(error > moves.tolerance)
        if not out.size:
            settle[k] = 0.0
        elif out[-1] == idx.size - 1:
            settle[k] = np.inf
        else:
            i = out[-1]   # last sample outside: the crossing between it and the next, linearly
            e0, e1 = error[i], error[i + 1]
            t0, t1 = time[idx[i]], time[idx[i + 1]]
            settle[k] = t0 + (t1 - t0) * (e0 - moves.tolerance) / (e0 - e1) - moves.start[k]
            if moves.window[k] - moves.start[k] - settle[k] < 1.0 / moves.lowest_frequency[k]:
                settle[k] = np.inf
    return Settling(settle, residual, final)
