"""Readable multiples of SI units, shared by the run summary (``sim run``), the figures and the
report, so that all three show a deviation in the same unit (µm, mm; µrad, mrad); the text of
a summary value (:func:`summary_text`)."""
import numpy as np

# Readable multiples of the SI units: (factor, name) from the largest down.
SCALES = {"m": ((1.0, "m"), (1e-3, "mm"), (1e-6, "µm"), (1e-9, "nm")),
          "rad": ((1.0, "rad"), (1e-3, "mrad"), (1e-6, "µrad"), (1e-9, "nrad")),
          "s": ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"))}


def readable(values, unit):
    """``(factor, unit)`` showing ``values`` [unit] with one to three integer digits: metres as
    mm or µm, radians as mrad or µrad, seconds as ms; other units unchanged (factor 1)."""
    peak = float(np.nanmax(np.abs(values))) if np.size(values) else 0.0
    for factor, name in SCALES.get(unit, ()):
        if peak >= factor:
            return factor, name
    return (SCALES[unit][-1] if unit in SCALES and peak > 0 else (1.0, unit))


def summary_text(value):
    """Compact text of a summary value (with its unit: :class:`sim.analyses.Quantity`)."""
    from sim.analyses import Quantity

    if isinstance(value, Quantity):
        if value.unit in ("m", "rad") and np.isscalar(value.value) and np.isfinite(value.value):
            # as the figures show it (sim.app.units): 34.1 µm, not 3.41e-05 m; a round-off (a
            # planar robot's out-of-plane deviation) in SI: 2.7e-16 m, not 2.7e-07 nm
            factor, unit = readable(value.value, value.unit)
            if abs(value.value) < 1e-3 * factor:
                factor, unit = 1.0, value.unit
            return f"{summary_text(float(value.value) / factor)} {unit}"
        return f"{summary_text(value.value)} {value.unit}"

    if isinstance(value, tuple) and len(value) == 2 and all(np.isscalar(v) for v in value):
        return f"{value[0]:.4g} .. {value[1]:.4g}"
    if isinstance(value, (np.ndarray, list, tuple)):
        return np.array2string(np.asarray(value), precision=4, separator=", ")
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
