"""Identification of model parameters from measured natural frequencies."""

import numpy as np

from sim.analyses import register
from sim.errors import SimError


@register("identification")
def run(model, scenario, group, progress):
    """Write group ``identification``: fitted parameters, cost, covariance, per-configuration
    computed and measured frequencies and errors.

    Parameters
    ----------
    model : Model
        The scenario's model (its parameters give the default initial values).
    scenario : Scenario
        Uses the ``[identification]`` table and its ``configuration_1``, ``configuration_2``, ...
        (the validated scenario holds them in numeric order).
    group : GroupWriter
    progress : callable
        Unused (least squares reports no fixed amount of work).

    Returns
    -------
    dict
        Fitted values, RMS error of the fit and the largest prediction error.
    """
    from sim.solvers.fitting import Configuration, Search, identify
    from sim.model.loader import parameters

    t = scenario.data["identification"]
    where = f"{scenario.path}: [identification]"
    names = t["parameters"]
    defaults = {**parameters(scenario.model_file), **scenario.model_parameters}
    if t["initial"] is None:
        missing = [n for n in names if not isinstance(defaults.get(n), (int, float)) or defaults.get(n, 0) <= 0]
        if missing:
            raise SimError(f"{where} initial: no positive default for {', '.join(missing)}; give `initial`")
    initial = t["initial"] or [float(defaults[n]) for n in names]
    for key, values in (("initial", initial), ("lower", t["lower"]), ("upper", t["upper"]), ("prior", t["prior"]),
                        ("prior_weight", t["prior_weight"])):
        if values is not None and len(values) != len(names):
            raise SimError(f"{where} {key}: {len(values)} values for {len(names)} parameters")
    base = {k: v for k, v in scenario.model_parameters.items() if k not in names}
    if "configuration_1" not in t:
        raise SimError(f"{where}: add a [identification.configuration_1] table (the reference configuration)")
    configurations = []
    for name in [k for k in t if k.startswith("configuration_")]:
        c = t[name]
        if c["modes"] is not None and len(c["modes"]) != len(c["measured_frequencies"]):
            raise SimError(f"{where} {name}.modes: {len(c['modes'])} mode numbers for "
                           f"{len(c['measured_frequencies'])} measured frequencies")
        if (c["shapes"] is None) != (c["shape_outputs"] is None):
            raise SimError(f"{where} {name}: give `shapes` and `shape_outputs` together")
        if c["shapes"] is not None:
            rows, columns = len(c["shapes"]), len(c["shapes"][0])
            if rows != len(c["shape_outputs"]) or columns != len(c["measured_frequencies"]):
                raise SimError(f"{where} {name}.shapes: {rows} x {columns} values; expected one row per output of "
                               f"`shape_outputs` ({len(c['shape_outputs'])}) and one column per measured "
                               f"frequency ({len(c['measured_frequencies'])})")
        configurations.append(Configuration(
            name=name, measured=np.asarray(c["measured_frequencies"]), parameters=c["parameters"], pose=c["pose"],
            modes=c["modes"], merge_repeated=c["merge_repeated"], fit=c["use"] == "fit", weight=c["weight"],
            pairing=c["pairing"], shapes=None if c["shapes"] is None else np.asarray(c["shapes"]),
            shape_outputs=c["shape_outputs"], excitation=tuple(c["excitation"] or ()),
            sensors=tuple(c["sensors"] or ())))
    if t["prior_weight"] is not None and t["prior"] is None:
        raise SimError(f"{where} prior_weight: give `prior` too")
    if t["prior_weight"] is not None and any(w < 0 for w in t["prior_weight"]):
        raise SimError(f"{where} prior_weight: weights must be >= 0, got {t['prior_weight']}")
    search = Search(max_evaluations=t["max_evaluations"], prior=t["prior"], prior_weight=t["prior_weight"],
                    starts=t["starts"])
    r = identify(scenario.model_file, names, initial, configurations, (t["lower"], t["upper"]), base=base,
                 search=search)
    group.put("parameters", r.values, "model units", "fitted parameter values (names: attribute `names`)")
    group.put("initial", r.initial, "model units", "starting values")
    group.put("lower", r.lower, "model units", "lower bounds")
    group.put("upper", r.upper, "model units", "upper bounds")
    group.put("cost", r.cost, "1", "1/2 sum of squared relative frequency residuals of the fitted configurations")
    group.put("rms_error", r.rms_error, "1", "RMS relative frequency error of the fitted modes")
    group.put("covariance", r.covariance, "1",
              "covariance of ln(parameters): sigma^2 (J^T J)^-1, sigma^2 = 2 cost / (m - n)")
    group.put("relative_std", r.std, "1", "relative standard deviation of each fitted parameter")
    group.put("correlation", r.correlation, "1", "correlation matrix of the fitted ln(parameters)")
    group.put("sensitivity", r.sensitivity, "Hz",
              "d f / d ln(parameter) of the fitted modes (rows: fitted modes in configuration order)")
    group.put("singular_values", r.singular_values, "1",
              "singular values of the column-normalised Jacobian, relative to the largest")
    group.put("identifiable", r.identifiable.astype(np.int8), "1", "1 if the parameter is identifiable")
    if len(r.starts_cost) > 1:
        group.put("starts_parameters", r.starts_parameters, "model units",
                  "the minimum reached from each start (row 0: from `initial`; names: attribute `names`)")
        group.put("starts_cost", r.starts_cost, "1", "cost of each start's minimum")
    group.attrs["names"] = list(r.names)
    group.attrs["messages"] = list(r.messages) or ["all parameters identifiable"]
    group.attrs["evaluations"] = r.evaluations
    group.attrs["success"] = r.success
    summary = {name: f"{value:.4g}" for name, value in zip(r.names, r.values)}
    summary["fit_rms_error_pct"] = round(100 * r.rms_error, 2)
    for c in r.configurations:
        group.put(f"{c.name}/frequencies", c.computed, "Hz",
                  "computed frequencies " + ("(fitted)" if c.fit else "(predicted, not fitted)"))
        group.put(f"{c.name}/measured_frequencies", c.measured, "Hz", "measured natural frequencies")
        group.put(f"{c.name}/errors", c.errors, "1", "(computed - measured) / measured, per mode")
        group.put(f"{c.name}/modes", c.modes, "1", "1-based computed mode numbers paired with the measured ones")
        if c.mac is not None:
            group.put(f"{c.name}/mac", c.mac, "1", "MAC of the paired modes with the measured shapes" if c.ordered is None
                      else "lowest MAC of each tracked mode between consecutive steps of the path from configuration_1")
        if c.ordered is not None:
            group.put(f"{c.name}/modes_by_order", c.ordered, "1",
                      "the computed mode numbers sorted order would pair (the tracking pairs `modes`)")
        if c.families is not None:
            group.put(f"{c.name}/families", c.families, "1",
                      "1-based computed modes each measured mode's family ends on, tracked from configuration_1 "
                      "(several where it continues a repeated root; `modes` holds the one nearest in frequency), "
                      "padded with 0")
        if c.excitability is not None:
            group.put(f"{c.name}/excitability", c.excitability, "1",
                      "how strongly the test's excitation drives each computed mode (row 0 = mode 1): the largest "
                      "|b^T phi| over the excitations, relative to the best-driven mode", dims=("mode",))
        if c.visibility is not None:
            group.put(f"{c.name}/visibility", c.visibility, "1",
                      "how strongly the test's sensors see each computed mode (row 0 = mode 1): |C phi|, relative "
                      "to the best-seen mode", dims=("mode",))
        summary[f"{c.name}_max_error_pct"] = round(100 * float(np.abs(c.errors).max()), 1)
    if r.messages:
        summary["note"] = "; ".join(r.messages)
    return summary
