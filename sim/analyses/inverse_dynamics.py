"""Inverse dynamics / kineto-statics of the rigid robot along the trajectory."""

import numpy as np

from sim.analyses import Quantity, determined, register
from sim.model.assembly import SINGULAR_RATIO
from sim.errors import SimError

REACTION_UNITS = ["N", "N", "N", "N m", "N m", "N m"]


def loops(model, scenario):
    """Compile the inverse dynamics' own kernels alone (see :mod:`sim.analyses`)."""
    from sim.solvers.reactions import compile_loops
    compile_loops(model)


@register("inverse_dynamics", check=determined, loops=loops)
def run(model, scenario, group, progress):
    """Write group ``inverse_dynamics``: actuator forces, joint reactions, energy, power.

    Parameters
    ----------
    model : Model
    scenario : Scenario
        Uses ``[trajectory]`` and ``[inverse_dynamics] samples, frame``.
    group : GroupWriter
    progress : callable
        ``progress(total, desc)`` -> tqdm bar.

    Returns
    -------
    dict
        Peak absolute actuator force per actuator (model order) and the worst condition
        number of the direct Jacobian.

    Raises
    ------
    SimError
        Trajectory outside the workspace, or a serial or parallel singular instant (named by
        its time and condition number); the samples before a parallel singularity are kept.
    """
    from sim.model.evaluator import Evaluator
    from sim.solvers.reactions import check_regular, inverse_dynamics
    from sim.solvers.motion import rigid_motion
    from sim.solvers.trajectory import from_scenario

    table = scenario.data["inverse_dynamics"]
    where = f"{scenario.path}: [inverse_dynamics]"
    trajectory = from_scenario(scenario.data["trajectory"], model)
    times = np.linspace(0.0, trajectory.duration, table["samples"])
    ev = Evaluator(model)       # the motion's and the inverse dynamics'
    try:
        with progress(times.size, "rigid motion") as bar:
            motion = rigid_motion(ev, trajectory, times, progress=bar)
    except SimError as exc:
        raise SimError(f"{where} {exc}") from None
    with progress(times.size, "inverse dynamics") as bar:
        result = inverse_dynamics(ev, motion, frame=table["frame"], progress=bar)
    bad = result.first_singular()
    n = times.size if bad is None else bad
    _write(model, group, result, motion, n)
    if bad is not None:
        try:
            check_regular(result.t[bad], result.condition[bad])
        except SimError as exc:
            raise SimError(f"{where} {exc}") from None
    peaks = np.abs(result.actuator_forces).max(axis=0)
    units = sorted({"N m" if a.kind == "angle" else "N" for a in model.actuators})
    return {"peak_actuator_forces": Quantity(peaks, " or ".join(units)), "condition_max": float(result.condition.max())}


def _write(model, group, result, motion, n):
    """Datasets of the first ``n`` samples."""
    units = ["N m" if a.kind == "angle" else "N" for a in model.actuators]
    frame = ("world axes" if result.frame == "world"
             else "joint frame (axes of the joint's marker i)")
    group.put("time", result.t[:n], "s", "sample times along the trajectory")
    group.put("pose", motion.pose[:n], list(model.pose_units),
              "end-effector pose of the rigid robot, coordinates " + " ".join(model.pose_names))
    group.put("actuator_forces", result.actuator_forces[:n], units,
              "actuator force or torque along each driven joint coordinate (columns: "
              + ", ".join(model.actuator_names) + ")")
    group.put("actuator_velocities", motion.actuators_dot[:n],
              ["rad/s" if a.kind == "angle" else "m/s" for a in model.actuators],
              "rates of the driven joint coordinates")
    for k, joint in enumerate(model.joints):
        group.put(f"joint_reactions/{joint.name}", result.joint_reactions[:n, k], REACTION_UNITS,
                  f"reaction of joint {joint.name} on the body of its marker j: force then "
                  f"moment about the joint point, {frame}; drive torques excluded", dims=("time", "wrench"))
    group.put("kinetic_energy", result.kinetic_energy[:n], "J", "kinetic energy of the rigid robot")
    group.put("potential_energy", result.potential_energy[:n], "J",
              "gravity potential energy (plus the constant elastic energy of frozen elastic "
              "coordinates)")
    group.put("actuator_power", result.actuator_power[:n], "W",
              "sum of actuator force times actuator velocity (= d(T + V)/dt)")
    group.put("condition", result.condition[:n], "1",
              "condition number of the constraint plus locked-actuator Jacobian (parallel "
              f"singularity when above {1 / SINGULAR_RATIO:.0e})")
    group.put("condition_inverse", motion.condition[:n], "1",
              "condition number of the constraint plus end-effector Jacobian (serial "
              f"singularity when above {1 / SINGULAR_RATIO:.0e})")
    group.attrs["actuator_names"] = list(model.actuator_names)
    group.attrs["joint_names"] = [j.name for j in model.joints]
    group.attrs["pose_names"] = list(model.pose_names)
    group.attrs["frame"] = result.frame
    group.attrs["multipliers"] = ("minimum-norm least squares" if model.ranks[1] < model.rows["n_total"]
                                  else "unique")
