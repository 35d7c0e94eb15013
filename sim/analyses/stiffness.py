"""Cartesian stiffness of the end effector at one pose, actuators locked: group ``stiffness``."""

import numpy as np

from sim.analyses import Quantity, register, sections
from sim.errors import SimError


@register("stiffness")
def run(model, scenario, group, progress):
    """Write group ``stiffness``: compliance, stiffness, the deflection under ``load`` and the
    share of the compliance each deformable part carries (:mod:`sim.solvers.compliance`).

    Parameters
    ----------
    model : Model
    scenario : Scenario
        Uses ``[stiffness] pose`` (default home) and ``load`` (default none).
    group : GroupWriter
    progress : callable
        Unused: one factorisation.

    Returns
    -------
    dict
        The largest translational compliance and, with a load, the deflection per coordinate.
    """
    from sim.model.assembly import configuration
    from sim.solvers.compliance import TRANSLATIONS, load_units, stiffness

    table = scenario.data["stiffness"]
    where = f"{scenario.path}: [stiffness]"
    pose, q = configuration(model, table["pose"], f"{where} pose")
    names, kinds = list(model.pose_names), model.pose_kinds
    load = table["load"]
    if load is not None and len(load) != len(names):
        raise SimError(f"{where} load: expected {len(names)} values (the wrench along {' '.join(names)}: "
                       f"N along, N m about the world axes), got {len(load)}")
    r = stiffness(model, q)
    flat = [u for row in r.units for u in row]
    group.put("pose", pose, list(model.pose_units), "end-effector pose, coordinates " + " ".join(names))
    group.put("compliance", r.compliance, flat,
              "Cartesian compliance C[i, j]: displacement of end-effector coordinate i (translation along, "
              "small rotation about the world axis) per unit load along j (force along, moment about that axis) "
              "at the end-effector marker, actuators locked; units per (i, j) pair, row-major", dims=("coordinate", "along"))
    group.put("stiffness", r.stiffness, [u for row in r.stiffness_units for u in row],
              "Cartesian stiffness C^-1 in the same coordinates; NaN when a coordinate deforms nothing",
              dims=("along", "coordinate"))
    group.put("compliance_share", r.shares, "1",
              "share of the diagonal compliance C[j, j] (rows) carried by each deformable part (columns, "
              "attribute parts): its strain energy under a unit load along j; rows sum to 1", dims=("coordinate", "part"))
    group.put("deflections", r.displacements, "mixed (m, rad) per unit load",
              "deflection in the generalized velocity coordinates under a unit load along each coordinate "
              "(columns)", dims=("velocity_coordinate", "coordinate"))
    group.attrs["pose_names"] = names
    group.attrs["parts"] = list(r.parts)
    translational = [i for i, k in enumerate(kinds) if k in TRANSLATIONS]
    summary = {}
    if translational:
        c = np.linalg.eigvalsh(r.compliance[np.ix_(translational, translational)])[-1]
        group.attrs["largest_translational_compliance"] = float(c)
        summary["largest_translational_compliance"] = Quantity(float(c), "m/N")
    if load is not None:
        load = np.asarray(load, dtype=float)
        deflection = r.compliance @ load
        group.put("load", load, load_units(kinds),
                  "end-effector wrench: forces along and moments about the world axes, one per end-effector coordinate")
        group.put("deflection", deflection, list(model.pose_units),
                  "static deflection of the end effector under `load`, C @ load (linear)")
        for n, d, u in zip(names, deflection, model.pose_units):
            summary[f"deflection_{n}"] = Quantity(float(d), u)
        summary.update(sections.write(group, model, np.zeros(1), (r.displacements @ load)[None],
                                      "the elastic nodal displacements under `load`"))
    if r.parts:
        # The most compliant direction among the translations (compliances of different units
        # do not compare), else among the rotations.
        among = translational or list(range(len(names)))
        j = among[int(np.argmax(np.diag(r.compliance)[among]))]
        top = int(np.argmax(r.shares[j]))
        summary[f"most_compliant_part_along_{names[j]}"] = f"{r.parts[top]} ({100 * r.shares[j, top]:.0f} %)"
    return summary

