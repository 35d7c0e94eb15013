"""Design study at one pose (paper 002 §4.2-4.3): group ``design``.

Table ``[design]``::

    parameters = ["strut_radius", "screw_radius"]   # model parameters (numbers)
    pose = [...]        # end-effector pose (default: home)
    count = 4           # modes
    rel_step = 1e-4     # relative step of the matrix finite differences

Sensitivities ``d f_r / d p`` by the analytic formula with finite-difference matrices, and the
kinetic and elastic energy ratios of each substructure in each mode (:mod:`sim.solvers.sensitivity`).
"""
import numpy as np

from sim.analyses import register
from sim.errors import SimError

KEYS = ("parameters", "pose", "count", "rel_step")


def _options(table, scenario, model, where):
    unknown = set(table) - set(KEYS)
    if unknown:
        raise SimError(f"{where} unknown key `{sorted(unknown)[0]}` (keys: {', '.join(KEYS)})")
    from sim.model.loader import parameters as model_parameters
    known = model_parameters(scenario.model_file)
    names = table.get("parameters", [])
    if not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
        raise SimError(f"{where} `parameters` must be a list of model parameter names")
    for n in names:
        value = scenario.model_parameters.get(n, known.get(n))
        if n not in known or isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SimError(f"{where} `parameters`: `{n}` is not a numeric parameter of {scenario.model_file.name} "
                           f"({', '.join(known)})")
    values = {n: float(scenario.model_parameters.get(n, known[n])) for n in names}
    pose = table.get("pose")
    if pose is not None:
        pose = np.asarray(pose, dtype=float)
        if pose.shape != (len(model.pose_names),):
            raise SimError(f"{where} `pose` needs {len(model.pose_names)} values ({', '.join(model.pose_names)})")
    count = table.get("count", 4)
    rel_step = table.get("rel_step", 1e-4)
    if not (isinstance(count, int) and count >= 1):
        raise SimError(f"{where} `count` must be a positive integer")
    if not (isinstance(rel_step, float) and 0 < rel_step < 0.1):
        raise SimError(f"{where} `rel_step` must be a number in (0, 0.1)")
    return names, {**scenario.model_parameters, **values}, pose, count, rel_step


@register("design")
def run(model, scenario, group, progress):
    """Write group ``design``: frequencies, sensitivities, energy ratios (per substructure and body).

    Returns
    -------
    dict
        Sensitivity of the first frequency to each parameter [Hz per unit].
    """
    from sim.solvers.sensitivity import EXTRA_MODES, energy_ratios, matrices_at, sensitivities_at
    from sim.model.loader import load_model
    from sim.solvers.modal import modes

    where = f"{scenario.path}: [design]"
    names, params, pose, count, rel_step = _options(scenario.data["design"], scenario, model, where)

    def build(p):
        return load_model(scenario.model_file, p)

    # One configuration and one modal analysis serve the sensitivities and the energy ratios.
    q, M, K = matrices_at(model, pose)
    res = modes(model, q, count=count + EXTRA_MODES, M=M, K=K)
    freqs, S = sensitivities_at(build, params, names, pose, q, res, count, rel_step)
    subs, kin, ela, body_kin, body_ela = energy_ratios(model, q, res.shapes[:, :freqs.size], M)
    group.put("frequencies", freqs, "Hz", "elastic frequencies at the pose, ascending")
    group.put("sensitivities", S, "Hz per parameter unit",
              "d f_r / d p: modes (rows) x parameters (columns, attribute `parameters`)")
    group.put("energy_ratios_kinetic", kin, "1", "modal kinetic energy share of each substructure (columns, "
              "attribute `substructures`) in each mode (rows); rows sum to 1")
    group.put("energy_ratios_elastic", ela, "1", "modal elastic energy share of each substructure; rows sum to 1")
    group.put("energy_ratios_body_kinetic", body_kin, "1", "kinetic energy share of each body (attribute body_names)")
    group.put("energy_ratios_body_elastic", body_ela, "1", "elastic energy share of each body (lumped drives and "
              "springs with the body they drive)")
    group.put("pose", model.pose_home if pose is None else pose, list(model.pose_units), "pose of the study")
    group.attrs["parameters"] = names
    group.attrs["parameter_values"] = [params[n] for n in names]
    group.attrs["substructures"] = subs
    group.attrs["body_names"] = list(model.body_names)
    return {f"dfreq1_d_{n}_hz": float(S[0, j]) for j, n in enumerate(names)}
