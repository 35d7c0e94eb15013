"""Self-checks of time-domain results: constraint drift against the deflection, the phase
error the time step leaves, and the agreement of the full transient with the KED.

A result can be wrong without failing: joints that drift apart by more than the elastic
deflection, or a modal model that leaves out what the full one shows.  Each time-domain group
stores its checks as attributes, and :func:`warnings` turns those that fail into one line each,
naming the scenario key to change.

* ``drift_share`` (transient, per end-effector coordinate): the largest constraint violation
  over the coordinate's peak deviation (:func:`drift_share`); above :data:`DRIFT_LIMIT` what
  the run reports for that coordinate holds the joints' drift, and the warning names the keys.
  Coordinate by coordinate: a planar robot's small in-plane deviation (the five-bar's x, 34
  nm) sits beside its sag out of the plane (18 um), which would hide a drift ten times the
  limit.  ``drift_ratio``, ``deflection_scale``: the same violation over the largest elastic
  deflection the result reports (the peak deviation or the largest deflection sensor, ``sensors/*``
  in m).
* ``ked_agreement``, ``ked_agreement_peak`` (transient and KED, when both ran; per end-effector
  coordinate): how far the two vibrations differ -- the dynamic parts of the deviations
  (less the static deflection at rest along the path, which both compute alike and which
  dominates a total peak), compared as time histories on the KED's instants over the time
  both cover: the RMS and the largest of each coordinate's difference, over the RMS and the
  largest of the end effector's vibration in that unit (:func:`agreement`).  Above
  :data:`AGREEMENT_LIMIT` (RMS) one of the two misses something (modes, intervals, a step
  whose phase drifts, a start that rings).  Coordinate by coordinate, so that a disagreement
  in a planar robot's plane is seen beside its sag out of it.  NaN for a coordinate at
  round-off.  The warning names, for those coordinates, an oscillation of the transient
  above the KED's highest kept mode (by :data:`KED_BAND_MARGIN`) that holds more than
  :data:`AGREEMENT_LIMIT` of the peak: the KED cannot show it until ``ked.modes`` reaches its
  frequency.
* ``samples_per_period`` (transient and KED): output samples per period of the highest
  natural frequency of interest, ``frequency_source`` its group (the KED's kept modes; for the
  transient those, else the frequencies along the path, else ``[modes]``); below
  :data:`SAMPLES_PER_PERIOD` the written series alias that mode and miss its peaks (a
  transient written at every step is not warned about: its step is what limits it).
* ``phase_error``, ``converged_step`` (transient, per coordinate; the step [s] for all): the
  RMS error the time step leaves in the vibration, estimated from the integrator's frequency
  error and the response's spectrum (:func:`phase_error`), and the largest step that keeps it
  below :data:`PHASE_LIMIT`; above that limit the warning gives that step.
* ``reference``, ``reference_residual`` (transient): ``"exact"``, or ``"least_squares"`` where
  the rigid robot cannot follow its actuators (:func:`sim.solvers.motion.least_squares_motion`)
  and the largest joint residual it keeps; the latter is warned about.  ``branch_time``: the
  first instant the deviation exceeds :data:`BRANCH_SHARE` of the robot's size
  (``robot_size``), warned about (:func:`branch_time`).
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
DEFLECTION_FLOOR = 1e-12  # m or rad: a peak deflection at most this is round-off (a robot's size times ~1e-15)
AGREEMENT_LIMIT = 0.25    # RMS difference of the transient's and the KED's vibrations, share of the vibration
SAMPLES_PER_PERIOD = 8    # output samples per period of the highest reported frequency
RESOLVED_STEPS = 10       # time steps per period of an oscillation integrated to a few per cent
RINGING_LIMIT = 0.25      # share of a coordinate's peak deviation that may oscillate above that
STEP_MARGIN = 1.25        # the advised step resolves the estimated frequency this much better
KED_BAND_MARGIN = 1.2     # above the KED's highest kept frequency by this factor: beyond what it shows
ROUNDOFF_RTOL = 1e-6      # a coordinate's deviation below this share of the largest one (same unit) is round-off
PHASE_LIMIT = 0.05        # estimated RMS error of the vibration from the integrator's phase error, share of it
BRANCH_SHARE = 0.1        # a deviation above this share of the robot's size is no elastic one: another branch
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


def drift_share(violation, deviation, units):
    """``max(violation)`` over each coordinate's peak deviation (d,): the share of what the
    result reports for that coordinate that the joints' drift may make up (the violation's
    norm holds metres and radians alike: each coordinate is judged against it in its own
    unit).  NaN for a coordinate at round-off (beside the largest of its unit, or at most
    :data:`DEFLECTION_FLOOR`)."""
    deviation = np.asarray(deviation, dtype=float)
    top = float(np.max(violation)) if len(violation) else 0.0
    peaks = np.abs(deviation).max(axis=0, initial=0.0)
    units = np.asarray(units)
    largest = np.array([peaks[units == u].max() for u in units])
    with np.errstate(divide="ignore", invalid="ignore"):
        share = top / peaks
    return np.where((peaks > DEFLECTION_FLOOR) & ~at_roundoff(peaks, largest), share, np.nan)


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
    """How far the vibrations of a transient and a KED differ, coordinate by coordinate.

    Both on the same instants: the dynamic parts of the deviations (the deviation less the
    static deflection at rest along the path), whose difference is what the two analyses
    disagree on; a total peak is dominated by the static sag, which both compute alike.  Each
    coordinate's difference is measured against the end effector's vibration in that unit
    (the norm of the transient's translations, or of its rotations): a coordinate that hardly
    vibrates is not called 50 % apart for a difference a thousandth of the motion.

    Parameters
    ----------
    transient, ked : ndarray, shape (n, d)
        Dynamic parts of the end-effector deviations [m, rad] at the same ``n`` instants.
    units : sequence of str
        Units of the ``d`` coordinates.

    Returns
    -------
    rms, peak : ndarray, shape (d,)
        RMS of the difference over the RMS of the transient's vibration in that unit, and the
        largest difference over its largest [1]; NaN for a coordinate whose vibration is at
        round-off in both (:func:`at_roundoff`) beside the largest of its unit, or at most
        :data:`DEFLECTION_FLOOR`.
    """
    tr, kd = np.asarray(transient, dtype=float), np.asarray(ked, dtype=float)
    diff = kd - tr
    units = np.asarray(units)
    top = np.maximum(np.abs(tr).max(axis=0, initial=0.0), np.abs(kd).max(axis=0, initial=0.0))
    largest = np.array([top[units == u].max() for u in units])
    size = {u: np.linalg.norm(tr[:, units == u], axis=1) for u in set(units.tolist())}
    scale_rms = np.array([np.sqrt(np.mean(size[u] ** 2)) if len(tr) else 0.0 for u in units])
    scale_peak = np.array([size[u].max(initial=0.0) for u in units])
    with np.errstate(divide="ignore", invalid="ignore"):
        rms = np.sqrt(np.mean(diff**2, axis=0)) / scale_rms
        peak = np.abs(diff).max(axis=0, initial=0.0) / scale_peak
    valid = (top > DEFLECTION_FLOOR) & ~at_roundoff(top, largest)
    return np.where(valid, rms, np.nan), np.where(valid, peak, np.nan)


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
    ``units``) does not resolve that band, or for a coordinate at round-off: beside the largest
    of its unit, or at most :data:`DEFLECTION_FLOOR` (a motion the drives follow exactly leaves
    a deviation of 1e-16, all of it noise)."""
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
        if peaks[k] > DEFLECTION_FLOOR and not at_roundoff(peaks[k], largest):
            share[k] = np.abs(high[:, k]).max() / peaks[k]
            frequency[k] = bins[band][np.argmax(spectrum[band, k])]
    return share, frequency


def _common(tr, ked):
    """The instants (m,) of the KED within the time the transient covers too (its
    ``duration`` may stop short of the trajectory's, which KED runs whole), and the two
    groups' dynamic deviations (m, d) there (``deviation_dynamic``, else ``deviation`` in
    files without it): the KED's as written, the transient's interpolated (:func:`cubic`)."""
    t_tr, t_ked = tr["time"][...], ked["time"][...]
    slack = 1e-9 * max(abs(t_tr[-1]), 1.0)     # output instants of the two differ by round-off
    inside = (t_ked >= t_tr[0] - slack) & (t_ked <= t_tr[-1] + slack)
    name = "deviation_dynamic" if "deviation_dynamic" in tr and "deviation_dynamic" in ked else "deviation"
    t = np.clip(t_ked[inside], t_tr[0], t_tr[-1])
    return t, cubic(t, t_tr, tr[name][...]), ked[name][...][inside]


def cubic(t, t_x, x):
    """``x`` (n, d) sampled at ``t_x`` (n,) interpolated at ``t`` (m,) within them, by the cubic
    through the four nearest samples: a sinusoid sampled 10 times per period comes out within
    0.4 % of its amplitude (linear interpolation: 5 %, more than the analyses differ by)."""
    x = np.asarray(x, dtype=float).reshape(len(t_x), -1)
    if len(t_x) < 4:
        return np.column_stack([np.interp(t, t_x, c) for c in x.T]) if len(t_x) else x[:0]
    i = np.clip(np.searchsorted(t_x, t) - 2, 0, len(t_x) - 4)
    nodes = i[:, None] + np.arange(4)
    tn = t_x[nodes]                                  # (m, 4)
    out = np.zeros((len(t), x.shape[1]))
    for j in range(4):
        w = np.ones(len(t))
        for k in range(4):
            if k != j:
                w *= (t - tn[:, k]) / (tn[:, j] - tn[:, k])
        out += w[:, None] * x[nodes[:, j]]
    return out


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


def phase_error(time, dynamic, units, h, oscillator, zeta=0.0):
    """The error the time step leaves in a transient's vibration, estimated from its spectrum.

    An implicit integrator of the Newmark family keeps a mode's amplitude (up to its numerical
    damping) but integrates its frequency ``f`` with a relative error ``e(f h)``, ``(2 pi f
    h)^2 / 12`` for Newmark's average acceleration: the phase drifts by ``phi = 2 pi f T e``
    over the time ``T`` the vibration lasts (the run, or its decay time ``1 / (zeta 2 pi f)``
    when sooner), and a sinusoid whose phase drifts linearly to ``phi`` is off by
    ``2 (1 - sin(phi) / phi)`` of its mean square.  Summed over the spectrum of the dynamic
    part (each frequency weighted by its energy), this is the RMS error of the run against the
    same run at an infinitely small step, to leading order ``O(h^2)``; a quasi-static response
    (the slow part) hardly contributes.  Measured against the vibration of the same unit, as
    :func:`agreement`.

    Parameters
    ----------
    time : ndarray, shape (n,)
        Evenly spaced output instants [s].
    dynamic : ndarray, shape (n, d)
        The deviation's dynamic part [m, rad].
    units : sequence of str
    h : float
        Time step [s].
    oscillator : callable
        ``oscillator(omega_h) -> (error, zeta_numerical)`` of the integrator
        (:meth:`sim.solvers.integrators.GeneralizedAlpha.oscillator` with its ``rho_inf``).
    zeta : float
        The modes' physical damping ratio [1].

    Returns
    -------
    ndarray, shape (d,)
        Estimated RMS error per coordinate over the RMS of the vibration in its unit [1]; NaN
        where not assessed (fewer than 64 instants, a coordinate at round-off beside the others
        or at most :data:`DEFLECTION_FLOOR`).
    """
    x = np.asarray(dynamic, dtype=float).reshape(len(time), -1)
    d = x.shape[1]
    n = len(time)
    if n < 64 or not h > 0:
        return np.full(d, np.nan)
    spacing = (time[-1] - time[0]) / (n - 1)
    # Windowed: a run's ends do not meet, and the leakage of that jump (power ~ 1/f^2) would
    # weigh at the high frequencies, whose phase no step keeps, as if it were a vibration there.
    X = np.abs(np.fft.rfft((x - x.mean(axis=0)) * np.hanning(n)[:, None], axis=0)) ** 2
    omega = 2 * np.pi * np.fft.rfftfreq(n, spacing)[1:]
    error, zeta_h = oscillator(omega * h)
    lasts = np.minimum(time[-1] - time[0], 1.0 / np.maximum((zeta + zeta_h) * omega, 1e-300))
    phi = omega * lasts * error
    with np.errstate(invalid="ignore", divide="ignore"):
        off = np.where(phi > 1e-4, 2 * (1 - np.sin(phi) / phi), phi**2 / 3)    # its series below 1e-4
    units = np.asarray(units)
    total = np.array([X[:, units == u].sum() for u in units])
    peaks = np.abs(x).max(axis=0)
    largest = np.array([peaks[units == u].max() for u in units])
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.sqrt((X[1:] * off[:, None]).sum(axis=0) / total)
    return np.where((peaks > DEFLECTION_FLOOR) & ~at_roundoff(peaks, largest), share, np.nan)


def converged_step(time, dynamic, units, h, oscillator, zeta=0.0, limit=PHASE_LIMIT):
    """A step [s] that keeps the estimated phase error (:func:`phase_error`) at most ``limit``
    in every coordinate: the largest on this run's spectrum (bisection on ``log h`` below
    ``h``) over :data:`STEP_MARGIN`, since a finer step resolves (and rings at) a little more of
    the spectrum; ``h`` itself when it does; NaN when even ``h / 1024`` does not (the run holds
    fast content whose phase no step keeps over its length)."""
    worst = lambda step: np.nan_to_num(phase_error(time, dynamic, units, step, oscillator, zeta)).max(initial=0.0)  # noqa: E731
    if worst(h) <= limit:
        return h
    low, high = h / 1024, h
    if worst(low) > limit:
        return float("nan")
    for _ in range(24):
        mid = np.sqrt(low * high)
        low, high = (mid, high) if worst(mid) <= limit else (low, mid)
    return low / STEP_MARGIN


def branch_time(time, deviation, units, size):
    """The first instant [s] at which the translational deviation exceeds :data:`BRANCH_SHARE`
    of the robot's ``size`` [m] (NaN if never): a flexible robot that far from its rigid
    reference has taken another assembly branch (a parallelogram past its change point) or
    left the small deflections a floating-frame model is made for."""
    units = np.asarray(units)
    far = np.linalg.norm(np.asarray(deviation, dtype=float)[:, units == "m"], axis=1) > BRANCH_SHARE * size
    return float(time[np.argmax(far)]) if far.any() else float("nan")


def _down(x):
    """``x`` > 0 rounded down to two significant digits (a bound quoted as ``<=`` must hold)."""
    unit = 10.0 ** (np.floor(np.log10(x)) - 1)
    return np.floor(x / unit * (1 + 1e-12)) * unit


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
        tr.attrs["drift_share"] = drift_share(tr["constraint_violation"][...], tr["deviation"][...], _units(tr))
    if tr is not None and "deviation" in tr and "time" in tr and _step(tr) > 0:
        share, frequency = ringing(tr["time"][...], tr["deviation"][...], _units(tr), _step(tr))
        tr.attrs["ringing_share"], tr.attrs["ringing_frequency"] = share, frequency
    if tr is not None and "deviation" in tr and "robot_size" in tr.attrs:
        tr.attrs["branch_time"] = branch_time(tr["time"][...], tr["deviation"][...], _units(tr),
                                              float(tr.attrs["robot_size"]))
    if tr is not None and "deviation_dynamic" in tr and "method" in tr.attrs and _step(tr) > 0:
        from sim.solvers.integrators import METHODS
        method = METHODS[str(tr.attrs["method"])]
        rho = float(tr.attrs.get("rho_inf", 1.0))
        args = (tr["time"][...], tr["deviation_dynamic"][...], _units(tr), _step(tr),
                lambda w: method.oscillator(w, rho), float(tr["damping/ratio"][()]) if "damping/ratio" in tr else 0.0)
        tr.attrs["phase_error"] = phase_error(*args)
        tr.attrs["converged_step"] = converged_step(*args)
    if tr is not None and ked is not None and all("deviation" in g and "time" in g for g in (tr, ked)):
        rms, peak = agreement(*_common(tr, ked)[1:], _units(tr))
        for g in (tr, ked):
            g.attrs["ked_agreement"], g.attrs["ked_agreement_peak"] = rms, peak


def warnings(groups):
    """One line per failed check of :func:`check`'s attributes (empty when all pass)."""
    out = []
    tr, ked = groups.get("transient"), groups.get("ked")
    if tr is not None and "newmark_failure" in tr.attrs:
        out.append(f"transient: Newmark, the default, stopped ({tr.attrs['newmark_failure']}): the result is "
                   f"generalized-alpha's (rho_inf = {float(tr.attrs['rho_inf']):g}), which damps what the step "
                   f"cannot resolve; set transient.method to choose")
    if tr is not None and str(tr.attrs.get("reference", "exact")) == "least_squares":
        out.append(f"transient: the rigid robot cannot follow its actuators (a locked or misaligned loop, or one "
                   f"at its change point): its joints would be off by up to {tr.attrs['reference_residual']:.3g} m or "
                   f"rad; the deviation is measured from the least-squares rigid motion (attribute `reference`)")
    if tr is not None and np.isfinite(tr.attrs.get("branch_time", np.nan)):
        t, dev = tr["time"][...], tr["deviation"][...]
        units = np.asarray(_units(tr))
        far = np.linalg.norm(dev[:, units == "m"], axis=1).max()
        out.append(f"transient: from t = {tr.attrs['branch_time']:.4g} s the flexible robot is more than "
                   f"{100 * BRANCH_SHARE:g} % of the robot's size ({tr.attrs['robot_size']:.3g} m) from its rigid "
                   f"reference, {far:.3g} m at most: no elastic deviation -- it took another assembly branch (a "
                   f"change point passed) or bends beyond small deflections; read its pose, not its deviation")
    drift = np.asarray(tr.attrs.get("drift_share", []) if tr is not None else [], dtype=float)
    if np.nan_to_num(drift).max(initial=0.0) > DRIFT_LIMIT:
        names, units = _names(tr, drift.size), _units(tr)
        over = [k for k in np.argsort(-np.nan_to_num(drift)) if drift[k] > DRIFT_LIMIT]
        top = float(np.max(tr["constraint_violation"][...]))
        parts = ", ".join(f"{names[k]} ({top / drift[k]:.3g} {units[k]}: {100 * drift[k]:.3g} %)" for k in over)
        out.append(f"transient: constraint violation up to {top:.3g} m or rad is more than {100 * DRIFT_LIMIT:g} % of the "
                   f"peak deviation of {parts}: what the run reports there holds the joints' drift: raise "
                   f"transient.alpha and transient.beta (default 4/step) or lower transient.step")
    apart = np.asarray(tr.attrs.get("ked_agreement", []) if tr is not None and ked is not None else [],
                       dtype=float)
    if np.nan_to_num(apart, nan=0.0).max(initial=0.0) > AGREEMENT_LIMIT:
        names, units = _names(tr, apart.size), _units(tr)
        worst = np.asarray(tr.attrs["ked_agreement_peak"], dtype=float)
        _, on_tr, on_ked = _common(tr, ked)
        rms_tr, rms_ked = (np.sqrt(np.mean(d**2, axis=0)) for d in (on_tr, on_ked))
        over = [k for k in np.argsort(-np.nan_to_num(apart, nan=0.0)) if apart[k] > AGREEMENT_LIMIT]
        parts = [f"{names[k]} {100 * apart[k]:.3g} % RMS ({100 * worst[k]:.3g} % of the peak at worst; RMS "
                 f"{rms_tr[k]:.3g} against {rms_ked[k]:.3g} {units[k]})" for k in over]
        beyond = _beyond_ked(tr, ked, over, names, units)
        drive = str(tr.attrs.get("drive", "prescribed"))
        ked_drives = str(ked.attrs.get("drives", "locked"))
        free = int(tr.attrs.get("free_motions", 0))
        advice = (f": the robot has {free} free motion{'s' * (free > 1)} that move its end effector (declared by "
                  f"the model): the transient drifts along them, the KED, which locks them, does not -- no step or "
                  f"mode count makes the two agree" if free else
                  f": the transient's actuators follow a {drive} drive, KED's their targets (locked, or compliant "
                  f"springs towards them), so the difference includes the drive's own tracking error; compare "
                  f"with transient.drive = \"prescribed\"" if drive != "prescribed" and ked_drives != "servo" else
                  f": KED's actuators follow their servos, the transient's a {drive} drive, so the difference "
                  f"includes the servos' tracking error; compare with both on servo drives (transient.drive = "
                  f"\"servo\") or both locked (ked.drives = \"locked\")" if (drive == "servo") != (ked_drives == "servo")
                  else
                  f"{beyond}: raise ked.modes until the KED keeps it, or give the circle a trajectory.ramp" if beyond
                  else ": lower transient.step (its phase drifts), raise ked.modes or ked.intervals, or give the "
                       "circle a trajectory.ramp")
        out.append(f"transient and ked disagree on the vibration (the deviations' dynamic parts over the time both "
                   f"cover, transient against ked): {', '.join(parts)} (limit {100 * AGREEMENT_LIMIT:g} % RMS)"
                   f"{advice}")
    phase = np.asarray(tr.attrs.get("phase_error", []) if tr is not None else [], dtype=float)
    if np.nan_to_num(phase).max(initial=0.0) > PHASE_LIMIT:
        names = _names(tr, phase.size)
        over = [k for k in np.argsort(-np.nan_to_num(phase)) if phase[k] > PHASE_LIMIT]
        parts = ", ".join(f"{names[k]} {100 * phase[k]:.2g} %" if phase[k] < 1 else f"{names[k]} {100 * phase[k]:.0f} %" for k in over)
        step = float(tr.attrs["converged_step"])
        out.append(f"transient: transient.step = {_step(tr):.3g} s leaves an estimated phase error of {parts} RMS of "
                   f"the vibration (the integrator's frequency error accumulated over the run; limit "
                   f"{100 * PHASE_LIMIT:g} %): " + (f"set transient.step <= {_down(step):.2g} s" if np.isfinite(step) else
                   "it rings faster than any step keeps in phase over the run: give the motion a smooth start "
                   "(trajectory.ramp) or damp what the step cannot resolve (method = \"generalized-alpha\")"))
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
    """Whether a time-domain group's damping model (its subgroup ``damping``) is all zero."""
    model = group.get("damping")
    return model is None or all(not np.any(model[key][()]) for key in ("ratio", "eta", "rayleigh_alpha", "rayleigh_beta")
                                if key in model)


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
    why = ("undamped: the residual vibration does not decay (give the robot damping: [damping] ratio)"
           if undamped(group) else
           "the dwell ends first: lengthen trajectory.dwell, slow the move or shape it (trajectory.shaper)")
    moves = ", ".join(f"move {k + 1} ({1e6 * final[k]:.3g} µm at the end of its dwell)" for k in never)
    return (f"{name}: {moves} never settle within trajectory.settling_tolerance = {1e6 * tolerance:.3g} µm "
            f"(settle_time = inf): {why}")
