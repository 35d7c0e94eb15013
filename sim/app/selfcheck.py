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
* ``ked_agreement`` (transient and KED, when both ran): ``|p_ked - p_transient| / p_transient``
  of those peaks; above :data:`AGREEMENT_LIMIT` one of the two misses something (modes,
  intervals, step or a start that rings).
* ``samples_per_period`` (transient and KED): output samples per period of the highest
  natural frequency the run reports (``frequencies``, ``ked``, ``modes``); below
  :data:`SAMPLES_PER_PERIOD` the written series alias that mode and miss its peaks (a
  transient written at every step is not warned about: its step is what limits it).
"""
import numpy as np

DRIFT_LIMIT = 0.01        # largest violation / peak deviation
AGREEMENT_LIMIT = 0.25    # relative difference of the transient's and the KED's peak deviations
SAMPLES_PER_PERIOD = 8    # output samples per period of the highest reported frequency
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
    """``max(violation) / peak`` (NaN when the robot does not deflect)."""
    top = float(np.max(violation)) if len(violation) else 0.0
    return top / peak if peak > 0 else float("nan")


def _peak(group):
    d = group["deviation"]
    return peak_translation(d[...], [str(u) for u in np.atleast_1d(d.attrs["units"])])


def highest_frequency(groups):
    """The highest natural frequency [Hz] any group of the run reports (0 when none does)."""
    found = [float(np.nanmax(g["frequencies"][...])) for name, g in groups.items()
             if name in ("frequencies", "ked", "modes") and "frequencies" in g and g["frequencies"].size
             and np.isfinite(g["frequencies"][...]).any()]
    return max(found, default=0.0)


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
    highest = highest_frequency(groups)
    for g in (tr, ked):
        if g is not None and "time" in g and g["time"].shape[0] > 1 and highest > 0:
            t = g["time"]
            spacing = (t[-1] - t[0]) / (t.shape[0] - 1)
            g.attrs["samples_per_period"] = 1.0 / (spacing * highest) if spacing > 0 else float("inf")
    if tr is not None and "constraint_violation" in tr and "deviation" in tr:
        sensors = [np.abs(d[...]).max() for d in (tr["sensors"].values() if "sensors" in tr else ())
                   if str(d.attrs.get("units")) == "m" and d.size]
        scale = max([tr.attrs["peak_deviation"], *sensors])
        tr.attrs["deflection_scale"] = scale
        tr.attrs["drift_ratio"] = drift_ratio(tr["constraint_violation"][...], scale)
    if tr is not None and ked is not None and "deviation" in tr and "deviation" in ked:
        p_tr, p_ked = tr.attrs["peak_deviation"], ked.attrs["peak_deviation"]
        value = abs(p_ked - p_tr) / p_tr if p_tr > 0 else float("nan")
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
    if tr is not None and ked is not None and tr.attrs.get("ked_agreement", 0) > AGREEMENT_LIMIT:
        out.append(f"transient and ked disagree: peak deviations {tr.attrs['peak_deviation']:.3g} m and "
                   f"{ked.attrs['peak_deviation']:.3g} m differ by {100 * tr.attrs['ked_agreement']:.3g} % "
                   f"(limit {100 * AGREEMENT_LIMIT:g} %): raise ked.modes or ked.intervals, lower "
                   f"transient.step, or give the circle a trajectory.ramp")
    for name, key in SPACING_KEYS.items():
        g = groups.get(name)
        # A transient written at every step shows all it resolves: only a coarser output warns.
        every_step = name == "transient" and g is not None and g["time"].shape[0] - 1 >= g.attrs.get("steps", np.inf)
        if g is not None and not every_step and g.attrs.get("samples_per_period", np.inf) < SAMPLES_PER_PERIOD:
            n, t = g.attrs["samples_per_period"], g["time"]
            spacing = (t[-1] - t[0]) / (t.shape[0] - 1)
            highest = 1.0 / (n * spacing)
            advice = f"set {key} <= {spacing * n / SAMPLES_PER_PERIOD:.2g} s" + (
                " or leave it out (every step)" if name == "transient" else " or leave it out (16 per period)")
            out.append(f"{name}: output every {spacing:.3g} s samples the highest reported frequency, "
                       f"{highest:.4g} Hz, {n:.2g} times per period (fewer than {SAMPLES_PER_PERIOD}; "
                       f"its peaks are missed): {advice}")
    return out
