"""Frequency response functions at one configuration, actuators locked."""

import numpy as np

from sim.analyses import register


@register("frf")
def run(model, scenario, group, progress):
    """Write group ``frf``: frequency, H (real and imaginary parts), natural frequencies.

    Parameters
    ----------
    model : Model
    scenario : Scenario
        Uses the ``[frf]`` table (inputs, outputs, pose, frequency grid, method) and the robot's
        ``[damping]`` model (every mode carries its ``ratio``; ``eta`` as ``K (1 + i eta)``).
    group : GroupWriter
    progress : callable
        Unused: one factorisation and a superposition.

    Returns
    -------
    dict
        Peak |H| of the first pair and the damped natural-frequency range.
    """
    from sim.analyses import damping as robot_damping
    from sim.model.assembly import configuration
    from sim.solvers.harmonic import frf

    t = scenario.data["frf"]
    where = f"{scenario.path}: [frf]"
    if not t["f_max"] > t["f_min"]:
        from sim.errors import SimError
        raise SimError(f"{where} f_max must exceed f_min, got {t['f_min']} and {t['f_max']}")
    pose, q = configuration(model, t["pose"], f"{where} pose")
    grid = np.geomspace if t["spacing"] == "log" else np.linspace
    f = grid(t["f_min"], t["f_max"], t["points"])
    damping = robot_damping(scenario, group)
    servo = None
    if t["drives"] == "servo":
        from sim.analyses.servo import gains
        servo = gains(model, scenario)
    r = frf(model, q, t["inputs"], t["outputs"], f, damping, t["method"], servo=servo)
    units = [u for row in r.units for u in row]
    group.put("frequency", f, "Hz", "excitation frequency")
    group.put("H_real", r.H.real, units,
              "real part of the receptance H[f, output, input]; units per (output, input) pair, "
              "row-major")
    group.put("H_imag", r.H.imag, units, "imaginary part of H[f, output, input]")
    group.put("magnitude", np.abs(r.H), units, "|H[f, output, input]|")
    group.put("phase", np.angle(r.H), "rad", "phase of H[f, output, input]")
    k = min(t["count"], r.damped_hz.size)
    group.put("natural_frequencies", r.natural_hz[:k], "Hz", "undamped natural frequencies, ascending")
    group.put("damped_frequencies", r.damped_hz[:k], "Hz",
              "damped natural frequencies |Im lambda| / 2 pi of the complex modes")
    group.put("damping_ratios", r.ratios[:k], "1", "-Re lambda / |lambda| of the complex modes")
    group.put("pose", pose, list(model.pose_units), "end-effector pose, coordinates " + " ".join(model.pose_names))
    group.attrs["inputs"] = list(r.inputs)
    group.attrs["outputs"] = list(r.outputs)
    group.attrs["input_units"] = list(r.input_units)
    group.attrs["output_units"] = list(r.output_units)
    group.attrs["method"] = r.method
    group.attrs["drives"] = t["drives"]
    return {"damped_frequencies_hz": tuple(np.round(r.damped_hz[:min(k, 5)], 2).tolist()),
            "peak_H": f"{np.abs(r.H[:, 0, 0]).max():.3g} {r.units[0][0]} at "
                      f"{f[np.argmax(np.abs(r.H[:, 0, 0]))]:.3g} Hz"}
