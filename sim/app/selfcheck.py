"""Self-checks of time-domain results: constraint drift against the deflection, and the
agreement of the full transient with the KED.

A result can be wrong without failing: joints that drift apart by more than the elastic
deflection, or a modal model that leaves out what the full one shows.  Each time-domain group
stores its checks as attributes, and :func:`warnings` turns those that fail into one line each,
naming the scenario key to change.

* ``drift_ratio`` (transient): largest constraint violation / the largest elastic deflection
  the result reports, ``deflection_scale``: the peak deviation (largest norm of the
  end-effector translations) or the largest deflection sensor (``sensors/*`` in m, e.g. a
  rod's mid-span deflection), whichever is larger; above :data:`DRIFT_LIMIT` the drift is not
  negligible against what the result reports.  (A model may carry its flexibility where the
  end effector does not see it: Simeon's slider-crank rod bends by millimetres while its
  slider moves by nanometres.)
* ``ked_agreement`` (transient and KED, when both ran; per end-effector coordinate):
  ``|p_ked - p_transient| / p_transient`` of each coordinate's peak deviation; above
  :data:`AGREEMENT_LIMIT` one of the two misses something (modes, intervals, step or a start
  that rings).  Coordinate by coordinate, not the translations' norm: a planar robot's sag out
  of its plane dominates that norm and hid a 47 % disagreement in the plane (the five-bar's x
  after a full-speed start).  NaN for a coordinate at round-off in both (:data:`ROUNDOFF_RTOL`
  of the largest peak in its unit).  The warning names, for those coordinates, an oscillation
  of the transient above the KED's highest kept mode (by :data:`KED_BAND_MARGIN`) that holds
  more than :data:`AGREEMENT_LIMIT` of the peak: the KED cannot show it until ``ked.modes``
  reaches its frequency.
* ``samples_per_period`` (transient and KED): output samples per period of the highest
  natural frequency of interest, ``frequency_source`` its group (the KED's kept modes; for the
  transient those, else the frequencies along the path, else ``[modes]``); below
  :data:`SAMPLES_PER_PERIOD` the written series alias that mode and miss its peaks (a
  transient written at every step is not warned about: its step is what limits it).
* ``ringing_share``, ``ringing_frequency`` (transient, per end-effector coordinate): the peak
  of the deviation's part above ``1 / (RESOLVED_STEPS h)`` (h the time step; zero-phase
  Butterworth high-pass) over the coordinate's peak, and that part's dominant frequency [Hz].
  An oscillation given fewer than :data:`RESOLVED_STEPS` steps per period is integrated with a
  frequency error: Newmark's average-acceleration rule, undamped, keeps its amplitude but
  lowers its frequency ``f`` to ``f_h`` with ``tan(pi f_h h) = pi f h`` (-15 % at four steps
  per period, -3 % at ten); above :data:`RINGING_LIMIT` the warning gives the step that resolves it (the
  full-speed start of a circle rings at the links' axial modes).  NaN where the output does
  not resolve that band, or for a coordinate at round-off (:data:`ROUNDOFF_RTOL`).
"""
import numpy as np

DRIFT_LIMIT = 0.01        # largest violation / peak deviation
DEFLECTION_FLOOR = 1e-12  # m: a peak deflection at most this is round-off (a robot's size times ~1e-15)
AGREEMENT_LIMIT = 0.25    # relative difference of the transient's and the KED's peak deviations
SAMPLES_PER_PERIOD = 8    # output samples per period of the highest reported frequency
RESOLVED_STEPS = 10       # time steps per period of an oscillation integrated to a few per cent
RINGING_LIMIT = 0.25      # share of a coordinate's peak deviation that may oscillate above that
STEP_MARGIN = 1.25        # the advised step resolves the estimated frequency this much better
KED_BAND_MARGIN = 1.2     # above the KED's highest kept frequency by this factor: beyond what it shows
ROUNDOFF_RTOL = 1e-6      # a coordinate's deviation below this share of the largest one (same unit) is round-off
# The scenario key that sets each group's output spacing.
SPACING_KEYS = {"transient": "transient.output_step", "ked": "ked.output_step"}


def peak_translation(deviation, units):
    """Largest norm over time of the translational columns (units ``m``) of ``deviation``
    (n, d); 0 when there are none."""
    units = [units] * deviation.shape[1] if isinstance(units, str) else list(units)
    cols = [k for k, u in enumerate(units) if u == "m"]
    if not cols or not len(deviation):
        return 0.0
    return float(np.linalg.norm(deviation[:, cols], axis=1).max())


def drift_ratio(violation, peak):
    """``max(violation) / peak`` (NaN when the robot does not deflect beyond round-off,
    ``peak`` [m] at most :data:`DEFLECTION_FLOOR`: a gantry at constant speed, whose violation
    and deflection are both round-off, is no drift)."""
    top = float(np.max(violation)) if len(violation) else 0.0
    return top / peak if peak > DEFLECTION_FLOOR else float("nan")


def _peak(group):
    d = group["deviation"]
    return peak_translation(d[...], [str(u) for u in np.atleast_1d(d.attrs["units"])])


def _units(group):
    """The units of a time-domain group's deviation columns, one per column."""
    d = group["deviation"]
    return [str(u) for u in np.broadcast_to(np.atleast_1d(d.attrs["units"]).astype(str), d.shape[1:])]


def _names(group, d):
    """The names of a time-domain group's ``d`` end-effector coordinates."""
    return [str(n) for n in np.atleast_1d(group.attrs.get("pose_names", [f"q{k}" for k in range(d)]))]


def agreement(transient, ked, units):
    """The relative difference of the peak deviations of a transient and a KED, coordinate by
    coordinate.

    Parameters
    ----------
    transient, ked : ndarray, shape (n, d) and (m, d)
        End-effector deviations [m, rad] (each on its own output instants).
    units : sequence of str
        Units of the ``d`` coordinates.

    Returns
    -------
    ndarray, shape (d,)
        ``|p_ked - p_transient| / p_transient`` [1]; NaN for a coordinate whose larger peak is
        at round-off (:func:`at_roundoff`) beside the largest peak of its unit in either.
    """
    p_tr = np.abs(np.asarray(transient, dtype=float)).max(axis=0)
    p_ked = np.abs(np.asarray(ked, dtype=float)).max(axis=0)
    top = np.maximum(p_tr, p_ked)
    units = np.asarray(units)
    largest = np.array([top[units == u].max() for u in units])
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.abs(p_ked - p_tr) / p_tr
    return np.where((top > 0) & ~at_roundoff(top, largest), value, np.nan)


def at_roundoff(peak, largest):
    """Whether a series whose peak magnitude is ``peak`` is zero to round-off beside the
    largest of its kind, ``largest`` (at most :data:`ROUNDOFF_RTOL` of it; never when that is
    zero); elementwise on arrays."""
    return (np.asarray(peak) <= ROUNDOFF_RTOL * np.asarray(largest)) & (np.asarray(largest) > 0)


def ringing(time, deviation, units, step):
    """The part of each coordinate's deviation that the time step does not resolve.

    Parameters
    ----------
    time : ndarray, shape (n,)
        Evenly spaced output instants [s].
    deviation : ndarray, shape (n, d)
        End-effector deviation [m, rad].
    units : str or sequence of str
        Units of the ``d`` coordinates.
    step : float
        Time step h of the integration [s].

    Returns
    -------
    share, frequency : ndarray, shape (d,)
        Peak of the deviation above ``1 / (RESOLVED_STEPS h)`` over its peak [1], and the
        dominant frequency of that part [Hz] (as integrated); NaN where not assessed (see the
        module's notes).
    """
    deviation = np.asarray(deviation, dtype=float).reshape(len(time), -1)
    if not step > 0:
        return np.full(deviation.shape[1], np.nan), np.full(deviation.shape[1], np.nan)
    return above(time, deviation, units, 1.0 / (RESOLVED_STEPS * step))


def above(time, deviation, units, cut):
    """Each coordinate's deviation above the frequency ``cut`` [Hz] (zero-phase high-pass,
    :func:`_high_pass`): its peak over the coordinate's peak [1] and its dominant frequency
    [Hz], ndarrays (d,); NaN where the output (``time`` (n,), ``deviation`` (n, d) in
    ``units``) does not resolve that band, or for a coordinate at round-off."""
    deviation = np.asarray(deviation, dtype=float).reshape(len(time), -1)
    d = deviation.shape[1]
    share, frequency = np.full(d, np.nan), np.full(d, np.nan)
    n = len(time)
    if n < 64 or not cut > 0:
        return share, frequency
    spacing = (time[-1] - time[0]) / (n - 1)
    if not 0 < spacing < 0.4 / cut:         # the output does not show that band
        return share, frequency
    high = _high_pass(deviation, cut, spacing)
    spectrum = np.abs(np.fft.rfft(high * np.hanning(n)[:, None], axis=0))
    bins = np.fft.rfftfreq(n, spacing)
    band = bins > cut       # the filter's skirt passes a little of a strong mode just below the cut
    units = [units] * d if isinstance(units, str) else list(units)
    peaks = np.abs(deviation).max(axis=0)
    for k in range(d):
        largest = max(p for p, u in zip(peaks, units) if u == units[k])
        if peaks[k] > 0 and not at_roundoff(peaks[k], largest):
            share[k] = np.abs(high[:, k]).max() / peaks[k]
            frequency[k] = bins[band][np.argmax(spectrum[band, k])]
    return share, frequency


def _common(tr, ked):
    """The deviations (n, d), (m, d) of the transient and the KED groups over the time both
    cover (a transient's ``duration`` may stop short of the trajectory's, which KED runs whole)."""
    t_tr, t_ked = tr["time"][...], ked["time"][...]
    start, end = max(t_tr[0], t_ked[0]), min(t_tr[-1], t_ked[-1])
    slack = 1e-9 * max(abs(end), 1.0)     # output instants of the two differ by round-off
    return tuple(g["deviation"][...][(t >= start - slack) & (t <= end + slack)]
                 for g, t in ((tr, t_tr), (ked, t_ked)))


def _beyond_ked(tr, ked, over, names, units):
    """The part of the warning on a disagreement that names, among the coordinates ``over``,
    those whose transient deviation oscillates above the KED's highest kept mode by more than
    :data:`AGREEMENT_LIMIT` of its peak (the KED cannot show that; ``ked.modes`` can), or ""."""
    found = ked["frequencies"][...] if "frequencies" in ked else np.zeros(0)
    highest = float(np.nanmax(found)) if found.size and np.isfinite(found).any() else 0.0
    if not highest > 0:
        return ""
    share, frequency = above(tr["time"][...], tr["deviation"][...], units, KED_BAND_MARGIN * highest)
    fast = [k for k in over if share[k] > AGREEMENT_LIMIT]
    if not fast:
        return ""
    parts = ", ".join(f"{names[k]} at about {frequency[k]:.4g} Hz ({100 * share[k]:.2g} % of its peak)" for k in fast)
    return f"; the transient oscillates above the KED's highest kept mode ({highest:.4g} Hz): {parts}"


def _step(group):
    """The time step [s] of a transient group: its attribute ``step`` (or, in files written
    before it, the time covered over the ``steps`` taken); 0 when unknown."""
    if "step" in group.attrs:
        return float(group.attrs["step"])
    t, steps = group["time"], group.attrs.get("steps", 0)
    return float((t[-1] - t[0]) / steps) if steps > 0 and t.shape[0] > 1 else 0.0


def _high_pass(x, cut, spacing):
    """The columns of ``x`` (n, d), sampled every ``spacing`` [s], above ``cut`` [Hz]: the gain
    of an eighth-order Butterworth high-pass run forward and back (zero phase),
    ``1 / (1 + (cut / f)^16)`` -- 3 % at 0.8 of the cut, 82 % at 1.1 of it -- applied to the
    spectrum of ``x`` reflected about its first and last samples (period 2n - 2, no jump at
    either end: a transient starts at rest).  numpy's FFT, not scipy.signal, whose import
    costs 0.6-0.9 s."""
    n = len(x)
    m = 2 * n - 2
    f = np.fft.rfftfreq(m, spacing)
    gain = np.zeros_like(f)
    gain[1:] = 1.0 / (1.0 + (cut / f[1:]) ** 16)
    spectrum = np.fft.rfft(np.concatenate([x, x[-2:0:-1]]), axis=0)
    return np.fft.irfft(spectrum * gain[:, None], m, axis=0)[:n]


def undistorted(f_h, h):
    """The frequency [Hz] that Newmark's average-acceleration rule (undamped) integrates with
    step ``h`` [s] as ``f_h`` [Hz]: ``tan(pi f_h h) / (pi h)`` (its amplification matrix has
    eigenvalues ``exp(+-2i atan(omega h / 2))``).  A coarse step's ringing mixes modes, so this
    is an estimate; :data:`STEP_MARGIN` covers it in the advice."""
    return np.tan(np.pi * np.minimum(np.asarray(f_h, dtype=float) * h, 0.49)) / (np.pi * h)


#: Where each time-domain group's highest frequency of interest comes from, in order: the KED's
#: own kept modes; for the transient those the KED keeps, else the frequencies tracked along the
#: path, else the modes of ``[modes]`` (all of them chosen by the user's counts).
FREQUENCY_SOURCES = {"ked": ("ked",), "transient": ("ked", "frequencies", "modes")}


def highest_frequency(groups, name):
    """The highest natural frequency [Hz] relevant to group ``name``'s output spacing and the
    group it comes from (:data:`FREQUENCY_SOURCES`); ``(0, "")`` when none reports one."""
    for source in FREQUENCY_SOURCES.get(name, ()):
        g = groups.get(source)
        if g is not None and "frequencies" in g and g["frequencies"].size and np.isfinite(g["frequencies"][...]).any():
            return float(np.nanmax(g["frequencies"][...])), source
    return 0.0, ""


def check(groups):
    """Write the self-check attributes into the time-domain groups of one result file.

    Parameters
    ----------
    groups : dict
        h5py groups by analysis name (``transient``, ``ked``, any others ignored).
    """
    tr, ked = groups.get("transient"), groups.get("ked")
    for g in (tr, ked):
        if g is not None and "deviation" in g:
            g.attrs["peak_deviation"] = _peak(g)
    for name, g in (("transient", tr), ("ked", ked)):
        highest, source = highest_frequency(groups, name)
        if g is not None and "time" in g and g["time"].shape[0] > 1 and highest > 0:
            t = g["time"]
            spacing = (t[-1] - t[0]) / (t.shape[0] - 1)
            g.attrs["samples_per_period"] = 1.0 / (spacing * highest) if spacing > 0 else float("inf")
            g.attrs["frequency_source"] = source
    if tr is not None and "constraint_violation" in tr and "deviation" in tr:
        sensors = [np.abs(d[...]).max() for d in (tr["sensors"].values() if "sensors" in tr else ())
                   if str(d.attrs.get("units")) == "m" and d.size]
        scale = max([tr.attrs["peak_deviation"], *sensors])
        tr.attrs["deflection_scale"] = scale
        tr.attrs["drift_ratio"] = drift_ratio(tr["constraint_violation"][...], scale)
    if tr is not None and "deviation" in tr and "time" in tr and _step(tr) > 0:
        share, frequency = ringing(tr["time"][...], tr["deviation"][...], _units(tr), _step(tr))
        tr.attrs["ringing_share"], tr.attrs["ringing_frequency"] = share, frequency
    if tr is not None and ked is not None and all("deviation" in g and "time" in g for g in (tr, ked)):
        value = agreement(*_common(tr, ked), _units(tr))
        for g in (tr, ked):
            g.attrs["ked_agreement"] = value


def warnings(groups):
    """One line per failed check of :func:`check`'s attributes (empty when all pass)."""
    out = []
    tr, ked = groups.get("transient"), groups.get("ked")
    if tr is not None and tr.attrs.get("drift_ratio", 0) > DRIFT_LIMIT:
        ratio = tr.attrs["drift_ratio"]
        out.append(f"transient: constraint violation up to {ratio * tr.attrs['deflection_scale']:.3g} m is "
                   f"{100 * ratio:.3g} % of the peak deflection {tr.attrs['deflection_scale']:.3g} m (limit "
                   f"{100 * DRIFT_LIMIT:g} %): raise transient.alpha and transient.beta (default 0.2/step) "
                   f"or lower transient.step")
    apart = np.asarray(tr.attrs.get("ked_agreement", []) if tr is not None and ked is not None else [],
                       dtype=float)
    if np.nan_to_num(apart, nan=0.0).max(initial=0.0) > AGREEMENT_LIMIT:
        names, units = _names(tr, apart.size), _units(tr)
        p_tr, p_ked = (np.abs(d).max(axis=0) for d in _common(tr, ked))
        over = [k for k in np.argsort(-np.nan_to_num(apart, nan=0.0)) if apart[k] > AGREEMENT_LIMIT]
        parts = [f"{names[k]} {p_tr[k]:.3g} against {p_ked[k]:.3g} {units[k]} ({100 * apart[k]:.3g} % apart)"
                 for k in over]
        beyond = _beyond_ked(tr, ked, over, names, units)
        drive = str(tr.attrs.get("drive", "prescribed"))
        advice = (f": the transient's actuators follow a {drive} drive, KED's their targets (locked, or compliant "
                  f"springs towards them), so the difference includes the drive's own tracking error; compare "
                  f"with transient.drive = \"prescribed\"" if drive != "prescribed" else
                  f"{beyond}: raise ked.modes until the KED keeps it, or give the circle a trajectory.ramp" if beyond
                  else ": raise ked.modes or ked.intervals, lower transient.step, or give the circle a trajectory.ramp")
        out.append(f"transient and ked disagree on the peak deviation (transient against ked): {', '.join(parts)} "
                   f"(limit {100 * AGREEMENT_LIMIT:g} %){advice}")
    share = np.asarray(tr.attrs.get("ringing_share", []) if tr is not None else [], dtype=float)
    if np.nan_to_num(share).max(initial=0.0) > RINGING_LIMIT:
        h = _step(tr)
        names = _names(tr, share.size)
        over = [k for k in np.argsort(-np.nan_to_num(share)) if share[k] > RINGING_LIMIT]
        f_h = np.asarray(tr.attrs["ringing_frequency"], dtype=float)[over]
        f = undistorted(f_h, h).max()
        parts = ", ".join(f"{names[k]} at {fk:.4g} Hz ({100 * share[k]:.2g} % of its peak)" for k, fk in zip(over, f_h))
        out.append(f"transient: the deviation rings faster than transient.step = {h:.3g} s resolves (fewer "
                   f"than {RESOLVED_STEPS} steps per period): {parts}; the integrator lowers such a frequency "
                   f"(this one from about {f:.4g} Hz) and shifts its phase: set transient.step <= "
                   f"{1 / (STEP_MARGIN * RESOLVED_STEPS * f):.2g} s, or (a circle's full-speed start) give it a "
                   f"trajectory.ramp")
    for name in ("ked", "transient"):
        line = unsettled(name, groups.get(name))
        if line:
            out.append(line)
    for name, key in SPACING_KEYS.items():
        g = groups.get(name)
        # A transient written at every step shows all it resolves: only a coarser output warns.
        every_step = name == "transient" and g is not None and g["time"].shape[0] - 1 >= g.attrs.get("steps", np.inf)
        if g is not None and not every_step and g.attrs.get("samples_per_period", np.inf) < SAMPLES_PER_PERIOD:
            n, t = g.attrs["samples_per_period"], g["time"]
            spacing = (t[-1] - t[0]) / (t.shape[0] - 1)
            highest = 1.0 / (n * spacing)
            # KED's default spacing gives its kept modes 16 samples per period: only a given one warns.
            advice = f"set {key} <= {spacing * n / SAMPLES_PER_PERIOD:.2g} s" + (
                " or leave it out (every step)" if name == "transient" else " or leave it out (16 per period)")
            source = str(g.attrs.get("frequency_source", ""))
            what = {"ked": "kept by ked", "frequencies": "tracked by [frequencies]", "modes": "of [modes]"}.get(source, "reported")
            out.append(f"{name}: output every {spacing:.3g} s samples the highest frequency {what}, "
                       f"{highest:.4g} Hz, {n:.2g} times per period (fewer than {SAMPLES_PER_PERIOD}; "
                       f"its peaks are missed): {advice}")
    return out


def undamped(group):
    """Whether a time-domain group's damping model is all zero (its damping attributes)."""
    return all(not np.any(np.asarray(group.attrs.get(key, 0.0), dtype=float))
               for key in ("damping_ratio", "eta", "rayleigh_alpha", "rayleigh_beta"))


def unsettled(name, group):
    """One line naming the moves of a point-to-point trajectory that never settle within
    their dwell, and why (``""`` when all settle or there are none)."""
    if group is None or "settle_time" not in group:
        return ""
    settle = group["settle_time"][...]
    never = np.flatnonzero(np.isinf(settle))
    if not never.size:
        return ""
    final = group["final_amplitude"][...]
    tolerance = float(group.attrs["settling_tolerance"])
    why = ("undamped: the residual vibration does not decay (give the robot damping)" if undamped(group) else
           "the dwell ends first: lengthen trajectory.dwell, slow the move or shape it (trajectory.shaper)")
    moves = ", ".join(f"move {k + 1} ({1e6 * final[k]:.3g} µm at the end of its dwell)" for k in never)
    return (f"{name}: {moves} never settle within trajectory.settling_tolerance = {1e6 * tolerance:.3g} µm "
            f"(settle_time = inf): {why}")
