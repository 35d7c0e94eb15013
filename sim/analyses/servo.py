"""Servo drives in the analyses: the ``[servo]`` gains, the transient's tracking record, the
closed-loop modes of ``[modes]`` and ``[frequencies]`` (``drives = "servo"``) and the
``[state_space]`` group (:mod:`sim.solvers.closed_loop`)."""

import numpy as np

from sim.analyses import register
from sim.errors import SimError


def gains(model, scenario):
    """:class:`sim.solvers.closed_loop.Servo` of the scenario's ``[servo]`` table."""
    from sim.solvers.closed_loop import Servo

    table = scenario.data.get("servo")
    if table is None:
        raise SimError(f"{scenario.path}: drives by servo need a [servo] table (kp, kv)")
    return Servo.from_table({k: v for k, v in table.items() if v is not None}, model, f"{scenario.path}: [servo]")


def tracking(model, ev, q, t, law):
    """The actuators' tracking along a transient.

    Parameters
    ----------
    model : Model
    ev : sim.model.evaluator.Kinematics
        The analysis' evaluator.
    q : ndarray, shape (n, n_q)
        Sampled configurations.
    t : ndarray, shape (n,)
    law : callable
        The references, ``law(t) -> (s, s_dot, s_ddot)``.

    Returns
    -------
    s : ndarray, shape (n, n_a)
        Joint coordinates [rad or m].
    error : ndarray, shape (n, n_a)
        ``s_ref - s`` (angles wrapped).
    share : ndarray, shape (n, d)
        The servo's share of the end-effector deviation: the rigid robot's pose change for the
        actuators' lag ``s - s_ref`` (linearised at the sampled configuration: ``G (s - s_ref)``,
        ``G = J_x N (J_s N)^+`` on the rigid coordinates, ``N`` the joints' null space); the rest
        of the deviation is the structure's.
    """
    from sim.kernels.common import wrap
    from sim.solvers.closed_loop import lag_gain

    n_a, d = len(model.actuators), len(model.pose_names)
    s, error, share = np.zeros((len(t), n_a)), np.zeros((len(t), n_a)), np.zeros((len(t), d))
    ref = np.asarray(law(np.asarray(t, dtype=float))[0]).reshape(len(t), n_a)
    angle = np.array([a.kind == "angle" for a in model.actuators])
    for i, qi in enumerate(q):
        E = ev.kinematics(qi, pose=True)
        s[i] = E.s
        e = ref[i] - E.s
        error[i] = np.where(angle, wrap(e), e)
        share[i] = -lag_gain(model, E) @ error[i]
    return s, error, share


STATIC_SERVO = ("the servos' share of deviation_static: the rigid robot's pose change for the joints' lag behind "
                "their references at rest under the static load (deviation_servo - deviation_static_servo: the "
                "servos' dynamic share)")


def write_tracking(group, model, ev, result, rigid, law, servo, static, split=True):
    """The servo transient's datasets: actuator forces, motor angles, tracking errors and the
    deviation's split into the servo's and the structure's shares (``rigid`` (n, d) the rigid
    robot's poses; ``static`` (n, d) the servos' share of the static deflection at the output
    instants, :func:`sim.solvers.start.static_deviation`).  ``split`` False: a locked loop, whose rigid robot cannot move with its
    actuators, has no servo share to tell (the rigid kinematics that defines it admits no
    motion): the split is left out and the summary says why.  Returns summary items."""
    from sim.analyses import Quantity

    s, error, share = tracking(model, ev, result.q, result.t, law)
    joint = ["rad" if a.kind == "angle" else "m" for a in model.actuators]
    gear = np.array([a.gear_ratio for a in model.actuators])
    names = ", ".join(model.actuator_names)
    compliant = np.array([a.stiffness is not None for a in model.actuators])
    group.put("motor_angles", np.where(compliant, result.motor_angles, s) * gear, "rad",
              f"motor-side angles of the actuators ({names}): gear_ratio times the joint coordinate, or "
              f"behind a compliant transmission the motor's own")
    group.put("tracking_error", error, joint, f"reference minus joint coordinate s_ref - s ({names}), joint side")
    pose_units = list(model.pose_units)
    group.attrs["actuator_names"] = list(model.actuator_names)
    group.attrs["servo_kp"], group.attrs["servo_kv"] = servo.kp, servo.kv
    group.attrs["servo_ki"], group.attrs["servo_feedforward"] = servo.ki, list(servo.feedforward)
    out = {"peak_tracking_error": Quantity(float(np.abs(error).max()) if error.size else 0.0, "rad or m")}
    if not split:
        why = "undefined: the rigid robot cannot move with its actuators (a locked or misaligned loop)"
        group.attrs["servo_split"] = why
        out["servo_split"] = why
        return out
    deviation = result.pose - rigid
    group.put("deviation_servo", share, pose_units,
              "the servo's share of the deviation: the rigid robot's pose change for the actuators' "
              "lag s - s_ref (linearised at the sampled configuration)")
    group.put("deviation_structure", deviation - share, pose_units,
              "the structure's share of the deviation: deviation - deviation_servo")
    group.put("deviation_static_servo", static, pose_units, STATIC_SERVO)
    for n, p, u in zip(model.pose_names, np.abs(share).max(axis=0) if len(share) else np.zeros(len(pose_units)),
                       pose_units):
        out[f"peak_deviation_servo_{n}"] = Quantity(float(p), u)
    return out


def check_stable(model, scenario, where):
    """Refuse servos under which the robot at home is unstable (a closed-loop eigenvalue with
    a positive real part: a time-domain analysis would grow without bound), and a servo on a
    compliant transmission without a rotor; one line naming the mode and the gains to change."""
    from sim.solvers.damping import Damping
    from sim.solvers.closed_loop import check_transient

    servo = gains(model, scenario)
    check_transient(model, where)
    md = closed_modes(model, model.q_home, servo, Damping.from_table(scenario.data["damping"]))
    scale = max(np.abs(md.eigenvalues).max(initial=0.0), np.abs(md.real_roots).max(initial=0.0), 1.0)
    grows = np.flatnonzero(md.eigenvalues.real > 1e-9 * scale)
    if grows.size:
        k = grows[0]
        rotors = max((a.reflected_inertia for a in model.actuators), default=0.0)
        raise SimError(f"{where}: the robot closed by its [servo] is unstable at home: its mode at "
                       f"{md.frequencies_hz[k]:.4g} Hz grows (damping ratio {md.damping_ratios[k]:.3g}); lower ki "
                       f"(the integral), or raise kv (joint side, N m s/rad or N s/m"
                       + (f"; the rotors put up to {rotors:.3g} kg m^2 or kg on the joints, n^2 J_m" if rotors else "")
                       + ")")
    if (md.real_roots > 1e-9 * scale).any():
        raise SimError(f"{where}: the robot closed by its [servo] is unstable at home: a motion grows at "
                       f"{md.real_roots.max():.3g} 1/s without oscillating; check the gains' signs and units")


def closed_modes(model, q, servo, damping=None):
    """:class:`sim.solvers.closed_loop.Modes` of the robot at ``q`` closed by ``servo``."""
    from sim.solvers.closed_loop import closed_loop, free_motions, modes, plant
    return modes(closed_loop(plant(model, q, damping), servo), free_motions(model, q))


def write_modes(group, result, count, prefix=""):
    """Datasets ``<prefix>frequencies`` ... of closed-loop modes (the ``count`` lowest) into
    ``group``."""
    k = min(count, result.frequencies_hz.size)
    group.put(f"{prefix}frequencies", result.frequencies_hz[:k], "Hz",
              "closed-loop natural frequencies |lambda| / 2 pi (servo drives), ascending")
    group.put(f"{prefix}damping_ratios", result.damping_ratios[:k], "1", "closed-loop damping ratios -Re lambda / |lambda|")
    group.put(f"{prefix}eigenvalues_real", result.eigenvalues[:k].real, "1/s", "Re lambda of the closed-loop modes")
    group.put(f"{prefix}eigenvalues_imag", result.eigenvalues[:k].imag, "rad/s", "Im lambda of the closed-loop modes")
    group.put(f"{prefix}real_roots", result.real_roots, "1/s",
              "real eigenvalues of the closed loop (integral loops, overdamped motions)")


def check(model, scenario):
    """Validate the ``[servo]`` gains and the inputs and outputs (see :mod:`sim.analyses`)."""
    from sim.solvers.closed_loop import check_signals

    t = scenario.data["state_space"]
    if t["drives"] == "servo":
        gains(model, scenario)
    try:
        check_signals(model, t["inputs"], "input")
        check_signals(model, t["outputs"], "output")
    except SimError as exc:
        raise SimError(f"{scenario.path}: [state_space] {exc}") from None


@register("state_space", check=check)
def run(model, scenario, group, progress):
    """Write group ``state_space``: ``A, B, C, D`` of the robot linearised at the pose with its
    drives, and its frequency response (the Bode plot's data).

    Returns
    -------
    dict
        The states' count and the lowest closed-loop (or open-loop) frequencies.
    """
    from sim.analyses import damping as robot_damping
    from sim.model.assembly import configuration
    from sim.solvers.closed_loop import Closed, free_motions, matrices, modes, response, truncate

    t = scenario.data["state_space"]
    where = f"{scenario.path}: [state_space]"
    if not t["f_max"] > t["f_min"]:
        raise SimError(f"{where} f_max must exceed f_min, got {t['f_min']} and {t['f_max']}")
    servo = gains(model, scenario) if t["drives"] == "servo" else None
    pose, q = configuration(model, t["pose"], f"{where} pose")
    damping = robot_damping(scenario, group)
    try:
        A, B, C, D, in_units, out_units, _ = matrices(model, q, t["inputs"], t["outputs"], servo, damping)
    except SimError as exc:
        raise SimError(f"{where} {exc}") from None
    if t["modes"] is not None:
        A, B, C, D = truncate(A, B, C, D, t["modes"])
    f = np.geomspace(t["f_min"], t["f_max"], t["points"])
    s = 2j * np.pi * f
    H = response(A, B, C, D, s)
    units = [f"{o}/{i}" for o in out_units for i in in_units]
    group.put("A", A, "SI (1/s, 1/s^2)", "state matrix, states x' = A x + B u (positions, rates, integrals)",
              dims=("state", "state_to"))
    group.put("B", B, "SI", "input matrix (inputs: attribute inputs)", dims=("state", "input"))
    group.put("C", C, "SI", "output matrix (outputs: attribute outputs)", dims=("output", "state"))
    group.put("D", D, "SI", "feedthrough matrix", dims=("output", "input"))
    group.put("frequency", f, "Hz", "frequencies of the response")
    group.put("magnitude", np.abs(H), units, "|H[f, output, input]| = |C (i w - A)^-1 B + D|")
    group.put("phase", np.unwrap(np.angle(H), axis=0), "rad", "phase of H[f, output, input], unwrapped")
    group.put("pose", pose, list(model.pose_units), "end-effector pose, coordinates " + " ".join(model.pose_names))
    md = modes(Closed(A, None, None, 0), free_motions(model, q))
    group.put("frequencies", md.frequencies_hz, "Hz", "|lambda| / 2 pi of the state matrix's complex pairs")
    group.put("damping_ratios", md.damping_ratios, "1", "-Re lambda / |lambda|")
    group.attrs["inputs"], group.attrs["outputs"] = list(t["inputs"]), list(t["outputs"])
    group.attrs["input_units"], group.attrs["output_units"] = list(in_units), list(out_units)
    group.attrs["drives"] = t["drives"]
    return {"states": int(A.shape[0]),
            "frequencies_hz": tuple(np.round(md.frequencies_hz[:5], 2).tolist())}
