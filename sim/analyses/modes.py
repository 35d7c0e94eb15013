"""Natural frequencies and mode shapes at one pose, actuators locked."""

import numpy as np

from sim.analyses import register
from sim.model.assembly import configuration


def _frozen(model, scenario):
    """The modes' count when they come from the frozen structure's compiled solvers
    (:func:`sim.solvers.modal._frozen_modes`: large models), else None."""
    from sim.solvers.modal import FROZEN_COUNT_MAX, FROZEN_MIN
    count = scenario.data["modes"]["count"]
    return count if model.n_v >= FROZEN_MIN and count is not None and 0 < count <= FROZEN_COUNT_MAX else None


def prepare(model, scenario):
    """Load the frozen structure's compiled kernels where the modes come from them (see
    :mod:`sim.analyses`; no ``loops``: a cold cache compiles them here, while the cold start's
    helper would compile the rigid motion, which the modes do not need)."""
    count = _frozen(model, scenario)
    if count:
        from sim.solvers.frames import compile_frames
        compile_frames(model, count)


@register("modes", prepare=prepare)
def run(model, scenario, group, progress):
    """Write group ``modes``: pose, frequencies, mode shapes and body energy fractions.

    Parameters
    ----------
    model : Model
    scenario : Scenario
        Uses ``[modes] pose`` (default home) and ``count``.
    group : GroupWriter
    progress : callable
        Unused: one eigenproblem needs no progress bar.

    Returns
    -------
    dict
        ``{"frequency_range_hz": (lowest, highest)}``.
    """
    from sim.model.kinematics import marker_points, skeleton, skeleton_motion
    from sim.solvers.modal import modes

    table = scenario.data["modes"]
    pose, q = configuration(model, table["pose"], f"{scenario.path}: [modes] pose")
    result = modes(model, q, count=table["count"])
    frequencies = np.asarray(result.frequencies_hz, dtype=float)

    group.put("pose", pose, list(model.pose_units),
              "end-effector pose, coordinates " + " ".join(model.pose_names))
    group.put("frequencies", frequencies, "Hz", "elastic natural frequencies, ascending")
    group.put("mode_shapes", result.shapes, "mixed (m, rad)",
              "mass-normalised mode shapes, one column per mode, in the generalized "
              "velocity coordinates; sign: each column's entry of largest magnitude positive")
    group.put("body_energy", result.body_energy, "1",
              "kinetic-energy fraction of each body (columns, see attribute body_names) "
              "in each mode (rows)")
    group.put("body_strain_energy", result.body_strain_energy, "1",
              "strain-energy fraction of each body (columns) in each mode (rows)")
    points, segments = skeleton(model, q)
    group.put("skeleton/points", points, "m", "points drawing the robot at this pose (flexible-body "
              "nodes, rigid-body and ground markers), world frame", dims=("point", "component"))
    group.put("skeleton/segments", segments, "1", "pairs of point indices joined by a line",
              dims=("segment", "end"))
    group.put("skeleton/mode_displacements", skeleton_motion(model, q, result.shapes.T), "m kg^-1/2",
              "displacement of each point (axis 1) in each mass-normalised mode (axis 0), world frame",
              dims=("mode", "point", "component"))
    group.attrs["skeleton_end_effector_point"] = int(marker_points(model)[model.ee_marker])
    group.attrs["body_names"] = list(model.body_names)
    group.attrs["pose_names"] = list(model.pose_names)
    group.attrs["rigid_modes"] = int(result.rigid_count)
    summary = {}
    if table["drives"] == "servo":
        # The robot closed by its servos: complex modes beside the locked ones.
        from sim.analyses import damping as robot_damping
        from sim.analyses.servo import closed_modes, gains, write_modes
        closed = closed_modes(model, q, gains(model, scenario), robot_damping(scenario, group))
        write_modes(group, closed, table["count"], "servo/")
        summary["servo_frequencies_hz"] = tuple(np.round(closed.frequencies_hz[:5], 2).tolist())
    if frequencies.size == 0:
        return {"frequency_range_hz": (), **summary}
    return {"frequency_range_hz": (float(frequencies.min()), float(frequencies.max())), **summary}
