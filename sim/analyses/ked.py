"""Kineto-elastodynamics along the trajectory: group ``ked``.

Table ``[ked]``: ``intervals``, ``modes``, ``start``; the method is in :mod:`sim.solvers.modal_stepping`.
Damping (:mod:`sim.solvers.damping`, the scenario's one ``[damping]`` model, as the transient
and the FRF apply it): each kept mode of each frozen structure gets ``ratio + eta/2`` (the
lowest ``[damping] modes`` of them) plus the diagonal share of the flexible bodies' Rayleigh
material damping (:func:`sim.solvers.damping.modal_ratios`).  With ``start = "static"``
(default) the robot starts in its static equilibrium at rest at the first pose (gravity and
preloads carried), so only the motion sets it vibrating;
``"undeformed"``: gravity is switched on at t = 0 as well.  The deviation is split into the
static deflection at rest along the path and the dynamic rest.
"""
import numpy as np

from sim.analyses import determined, peaks, register, sections, settle
from sim.analyses.servo import STATIC_SERVO

# Default output samples per period of the highest kept frequency (key ``output_step``).
PER_PERIOD = 16
CHUNK = 256         # instants whose skeleton points are computed at once


def prepare(model, scenario):
    """Load the compiled kernels of the KED (see :mod:`sim.analyses`): with servo drives, the
    rigid motion's only."""
    from sim.model.evaluator import Evaluator
    from sim.solvers.modal_stepping import load_kernels
    from sim.solvers.motion import load_kernels as load_motion

    if scenario.data["ked"]["drives"] == "servo":
        load_motion(model, Evaluator(model))
    else:
        load_kernels(model, scenario.data["ked"]["modes"])


def loops(model, scenario):
    """Compile the KED's own loops alone (see :mod:`sim.analyses`; none with servo drives)."""
    from sim.solvers.modal_stepping import compile_loops

    if scenario.data["ked"]["drives"] != "servo":
        compile_loops(model, scenario.data["ked"]["modes"])


def check(model, scenario):
    """Refuse a robot whose actuators leave its end effector free, a shaper tuned above what
    the intervals resolve, and servo drives without gains, on a motor without a rotor or
    unstable at home (see :mod:`sim.analyses`)."""
    from sim.solvers.moves import check_resolution
    from sim.solvers.trajectory import from_scenario

    determined(model, scenario)
    trajectory = from_scenario(scenario.data["trajectory"], model, f"{scenario.path}: [trajectory]")
    check_resolution(trajectory.moves, trajectory.duration / scenario.data["ked"]["intervals"], "ked")
    if scenario.data["ked"]["drives"] == "servo":
        from sim.analyses.servo import check_stable
        check_stable(model, scenario, f"{scenario.path}: [ked]")


@register("ked", prepare=prepare, check=check, loops=loops)
def run(model, scenario, group, progress):
    """Write group ``ked``: time, pose_rigid, pose, deviation (at the output instants: the
    interval ends and, to resolve the kept modes, instants between them), frequencies and
    modal coordinates (at the interval ends, ``frequency_time``).

    Returns
    -------
    dict
        Peak deviation per coordinate and the frequency range [Hz].
    """
    from sim.analyses import damping as robot_damping
    from sim.solvers.damping import material_blocks, modal_ratios
    from sim.errors import SimError
    from sim.model.evaluator import Evaluator
    from sim.solvers.frames import motion_and_frames
    from sim.solvers.modal import SAME_MODE
    from sim.solvers.modal_stepping import Superposition, load_stepping
    from sim.solvers.trajectory import from_scenario

    table = scenario.data["ked"]
    trajectory = from_scenario(scenario.data["trajectory"], model, f"{scenario.path}: [trajectory]")
    n = table["intervals"]
    time = np.linspace(0.0, trajectory.duration, n + 1)
    servo = table["drives"] == "servo"
    ev = Evaluator(model)       # the motion's and the frames' (this thread's)
    if servo:
        result, zeta, parts, motion, servo_summary = _servo(ev, scenario, group, trajectory, time, progress)
    else:
        damping, material = robot_damping(scenario, group), material_blocks(model)
        steps = Superposition(time, start=table["start"])

        def take(start, frames, q):
            """The frames from instant ``start`` on, stepped through as they come (in time
            order; a chunk at a time, never all of them held)."""
            zeta = modal_ratios(damping, frames.omega, frames.shapes, material)
            if zeta.max() >= 1:     # the first instant where a mode is, its most damped mode
                k = np.flatnonzero((zeta >= 1).any(axis=1))[0]
                r = int(np.argmax(zeta[k]))
                raise SimError(f"{scenario.path}: [ked] mode {r + 1} at {frames.omega[k, r] / (2 * np.pi):.4g} Hz "
                               f"(t = {time[start + k]:.6g} s) is damped at or beyond critical (ζ = "
                               f"{zeta[k, r]:.3g}): lower [damping] rayleigh_beta or [ked] modes")
            steps.add(frames, zeta)

        # The frames of the first instants are computed (in another thread) while the motion goes on.
        with progress(n + 1, "ked: rigid motion") as bar_motion, progress(n + 1, "ked: modes") as bar_modes:
            motion, _ = motion_and_frames(ev, trajectory, time, table["modes"], progress=(bar_motion, bar_modes),
                                          ready=load_stepping, take=take, keep=False)
        zeta = steps.zeta
        parts = _parts(table, time, steps.omega)
        result = steps.result(motion.pose, parts=parts, pose_at=lambda t: trajectory(t)[0])
    out = result.samples or result

    units = list(model.pose_units)
    names = " ".join(model.pose_names)
    group.put("time", out.time, "s", "output instants: the interval ends" +
              (f" and {parts - 1} instants evenly between each two" if parts > 1 else ""))
    group.put("pose_rigid", out.pose_rigid, units, f"end-effector coordinates ({names}) of the rigid robot" +
              (" (between the interval ends: the trajectory's)" if parts > 1 else ""))
    group.put("pose", out.pose, units, f"end-effector coordinates ({names}), rigid + linearised elastic")
    group.put("deviation", out.deviation, units,
              "pose - pose_rigid: J_x(q_rigid) u, u the elastic displacement (modal part plus the static "
              "correction of the truncated modes)")
    group.put("deviation_static", out.deviation_static, units,
              "static deflection of the robot at rest at the rigid pose (gravity, preloads; linearised)")
    group.put("deviation_dynamic", out.deviation_dynamic, units, "deviation - deviation_static")
    group.attrs["samples_per_interval"] = int(parts)
    group.put("frequency_time", result.time, "s", "instants of the frozen structures")
    if servo:
        group.put("frequencies", result.frequencies, "Hz",
                  "lowest closed-loop natural frequencies |lambda| / 2 pi of the robot with its servo drives frozen "
                  "at each instant (the kept modes' reduced system), ascending (NaN: fewer complex modes)")
        group.put("damping_ratios", zeta, "1", "their damping ratios -Re lambda / |lambda|")
    else:
        group.put("frequencies", result.frequencies, "Hz",
                  "lowest elastic frequencies of the structure frozen at each instant (actuators locked), ascending")
        group.put("damping_ratios", zeta, "1", "damping ratio of each kept mode of each frozen structure (all models)")
    group.put("modal_coordinates", result.modal_coordinates, "kg^0.5 m",
              "modal coordinates eta (mass-normalised modes" + (" of the robot held by its servos' springs" if servo
                                                                 else "") +
              "): row 0 at t = 0, row i + 1 at the end of interval i, on interval i's modes; a mode's "
              "sign that of the previous frame's shape where it is the same mode (mass-weighted MAC "
              f"above {SAME_MODE:g}), else its shape's largest entry positive")
    group.put("modal_velocities", result.modal_velocities, "kg^0.5 m/s", "time derivatives of modal_coordinates")
    group.attrs["pose_names"] = list(model.pose_names)
    group.attrs["intervals"] = int(n)
    group.attrs["modes"] = int(table["modes"])
    group.attrs["drives"] = table["drives"]
    group.attrs["start"] = table["start"]
    group.attrs["load"] = "Q(q_r, v_r) - M a_r: gravity, springs, quadratic-velocity and inertia of the rigid motion" + (
        "; with the servos' feedforward and the rotors' inertia" if servo else "")
    write_skeleton(model, group, result, motion.q)
    section_summary = sections.write(group, model, result.time, result.displacement,
                                     "the elastic nodal displacements at the interval ends (modal part plus "
                                     "the static correction of the truncated modes)")
    summary = peaks(model, out.deviation, out.deviation_static)
    summary["frequency_range_hz"] = (float(np.nanmin(result.frequencies)), float(np.nanmax(result.frequencies)))
    summary.update(settle.write(group, model, trajectory.moves, out.time, out.pose_rigid, out.deviation_dynamic))
    summary.update(section_summary)
    if servo:
        summary.update(servo_summary)
    return summary


def _parts(table, time, omega):
    """Output instants per interval: ``output_step``'s, or :data:`PER_PERIOD` per period of the
    highest of the circular frequencies ``omega`` [rad/s]."""
    from sim.solvers.modal_stepping import parts_for

    step = table.get("output_step")
    if step is None:
        return parts_for(time, omega / (2 * np.pi), PER_PERIOD)
    return max(1, int(round((time[1] - time[0]) / step))) if time.size > 1 else 1


def _servo(ev, scenario, group, trajectory, time, progress):
    """The KED with the actuators held by their ``[servo]`` (:mod:`sim.solvers.servo_stepping`),
    through the analysis' evaluator ``ev``: its result as the locked KED's record, the
    closed-loop damping ratios (n + 1, r), the output instants per interval, the rigid motion
    and summary items; writes the tracking datasets."""
    from dataclasses import replace

    from sim.analyses import Quantity, damping as robot_damping
    from sim.analyses.servo import gains
    from sim.solvers.reactions import actuator_forces
    from sim.solvers.servo_stepping import ServoSteps, frame_stream
    from sim.solvers.motion import rigid_motion

    model, table = ev.model, scenario.data["ked"]
    servo, damping = gains(model, scenario), robot_damping(scenario, group)
    with progress(time.size, "ked: rigid motion") as bar:
        motion = rigid_motion(ev, trajectory, time, progress=bar, condition=False)
    torque = rest = None
    if servo.torque.any():
        torque = actuator_forces(ev, motion)
        still = replace(motion, v=np.zeros_like(motion.v), a=np.zeros_like(motion.a),
                        actuators_dot=np.zeros_like(motion.actuators_dot),
                        actuators_ddot=np.zeros_like(motion.actuators_ddot))
        rest = actuator_forces(ev, still)
    steps = ServoSteps(time, servo, start=table["start"])
    with progress(time.size, "ked: servo frames") as bar:
        for frame in frame_stream(ev, motion, servo, damping, table["modes"], torque, rest, bar):
            steps.add(frame)    # (stepped through as they come: none is held)
    parts = _parts(table, time, steps.omega)
    res = steps.result(parts)
    joint = ["rad" if a.kind == "angle" else "m" for a in model.actuators]
    names = ", ".join(model.actuator_names)
    pose_units = list(model.pose_units)
    group.put("tracking_error", res.tracking_error, joint,
              f"reference minus joint coordinate s_ref - s ({names}), joint side, linearised")
    if any(a.stiffness is not None for a in model.actuators):
        group.put("motor_error", res.motor_error, joint,
                  f"reference minus motor angle in joint units ({names}): behind a compliant transmission the "
                  f"motor's own")
    group.put("actuator_forces", res.actuator_forces, ["N m" if u == "rad" else "N" for u in joint],
              f"the servos' joint-side forces ({names}), linearised, no torque limit")
    group.put("deviation_servo", res.deviation_servo, pose_units,
              "the servo's share of the deviation: the rigid robot's pose change for the actuators' lag s - s_ref")
    group.put("deviation_structure", res.deviation - res.deviation_servo, pose_units,
              "the structure's share of the deviation: deviation - deviation_servo")
    group.put("deviation_static_servo", res.deviation_static_servo, pose_units, STATIC_SERVO)
    group.put("integral_states", res.integral, "N m s" if all(u == "rad" for u in joint) else "N s",
              "the servos' integral states y = int kv kp (r - theta) dt at the interval ends (those with ki > 0)")
    summary = {f"peak_tracking_error_{a}": Quantity(float(e), u)
               for a, e, u in zip(model.actuator_names, np.abs(res.tracking_error).max(axis=0), joint)}
    over = [a for a, f, limit in zip(model.actuator_names, np.abs(res.actuator_forces).max(axis=0),
                                     servo.torque_limit) if f > limit]
    if over:    # a linear analysis: say so where the real drive would saturate
        summary["torque_limit_exceeded"] = ", ".join(over)
    pose_rigid = np.asarray(trajectory(res.time)[0], dtype=float).reshape(res.time.size, -1)
    return res.result(pose_rigid), res.damping_ratios, parts, motion, summary


def write_skeleton(model, group, result, q_rigid):
    """Subgroup ``skeleton`` (:mod:`sim.analyses.skeleton`): the rigid robot at the rigid
    configurations ``q_rigid`` (n + 1, n_q; or a :class:`sim.solvers.motion.Configurations`),
    the flexible one moved by the linearised elastic displacement the deviation comes from,
    ``p = p_rigid + J_p(q_rigid) u``
    (:attr:`sim.solvers.modal_stepping.KedResult.displacement`)."""
    from sim.analyses import skeleton
    from sim.model.kinematics import skeleton_motion, skeleton_points

    every = skeleton.stride(model, len(result.time))
    rows = np.arange(0, len(result.time), every)
    rigid, points = np.empty((2, rows.size, skeleton.point_count(model), 3))
    for k in range(0, rows.size, CHUNK):    # (their Jacobians' products at every instant: 60 MB on a Delta)
        at = rows[k:k + CHUNK]
        q = q_rigid[at]
        rigid[k:k + CHUNK] = skeleton_points(model, q)
        points[k:k + CHUNK] = rigid[k:k + CHUNK] + skeleton_motion(model, q, result.displacement[at])
    skeleton.write(group, model, result.time, every, points, rigid,
                   "rigid points + J_p(q_rigid) u, u the elastic displacement of the deviation",
                   own_time=result.samples is not None)
