"""Full FFR transient: the flexible robot driven along the rigid motion.

Table ``[transient]``.  The rigid reference comes from the same model with the elastic
coordinates frozen: along the ``[trajectory]`` (:func:`sim.solvers.motion.rigid_motion`, sampled every
``REFERENCE_STEP``, at least ``REFERENCE_SAMPLES`` samples, more where needed for an
interpolation error below ``REFERENCE_TOL``, a sample on each break of the law where its
acceleration or jerk jumps (:func:`reference_times`), and interpolated by quintic Hermite polynomials
through the actuators' values, rates and accelerations), or, with ``drive_law``, from the
actuator law itself (direct kinematics of the rigid robot).  Drives:

* ``prescribed``: driving constraints follow the rigid actuator motion;
* ``torque``: the rigid inverse-dynamics actuator forces ``tau = -lam_s`` of
  ``M a + J^T lam = Q`` (rigid motion's ``a``), open loop, plus PD (``kp``, ``kd``);
* ``servo``: the ``[servo]`` controllers (:mod:`sim.solvers.closed_loop`) follow the rigid actuator
  motion, with the motors' reflected rotor inertia; the group also holds the actuator forces,
  the motor angles, the tracking errors and the deviation split into the servo's share (the
  rigid robot's pose change for the actuators' lag) and the structure's
  (:func:`sim.analyses.servo.write_tracking`);
* ``free``: actuators neither driven nor loaded.

Damping (:mod:`sim.solvers.damping`, the scenario's one ``[damping]`` model, as KED and the FRF
apply it): the flexible bodies' Rayleigh material damping ``alpha M_ff + beta K_ff`` on their
elastic coordinates, and the modal ratios ``ratio + eta/2`` on the lowest ``modes`` modes of
the structure frozen at (up to 200 of) the rigid reference's configurations
(:func:`sim.solvers.damping.schedule`);
each acts on the deformation rates only, so the rigid motion is not damped, and each kept mode
gets the damping KED gives it.

``start``: ``"static"`` (default) starts from the static deflection at rest at the first pose
(:func:`sim.solvers.start.static_start`: the elastic one, and the compliant drives' deflections
that hold the preloads), ``"undeformed"`` from the rigid configuration; the initial velocities
meet every constraint row (:func:`sim.solvers.start.consistent_state`).  The Baumgarte gains
default to ``BAUMGARTE_RATE / step`` (:func:`sim.solvers.integrators.baumgarte_gains`).  The group holds the static deflection along the path
(:func:`sim.solvers.start.static_deviation`) and the dynamic rest of the deviation.

``drive_law`` (instead of a trajectory): ``{kind = "constant_rate", rate = ...}``
(``s = s_home + rate t``) or ``{kind = "spinup", rate = omega_s, ramp = T}`` (Simo–Vu-Quoc:
``s = omega_s/T (t^2/2 + (T/2pi)^2 (cos(2 pi t/T) - 1))`` for ``t < T``, then
``omega_s (t - T/2)``); ``rate`` is one number or one per actuator [rad/s or m/s].

``initial_state``: per flexible body, elastic fields along its chord (``xi = x/L`` from its
first to its last node, ``y`` its body y axis made normal to the chord):
``axial_displacement``, ``transverse_y_displacement``, ``transverse_z_displacement`` and the
same ``_velocity`` fields [m, m/s], each ``{sine = [b_1, ...], polynomial = [c_0, c_1, ...]}``
meaning ``sum_k b_k sin(k pi xi) + sum_j c_j xi^j``.  The fields are mapped onto the mesh
(nodal translations and slopes), their rigid part at the body's reference node is removed,
the rigid coordinates are re-assembled and the rigid velocities made consistent with the
constraints and the drive.
"""

from typing import NamedTuple

import numpy as np

from sim.analyses import Quantity, determined, peaks, register, sections, settle
from sim.model.rotations import skew
from sim.errors import SimError
from sim.solvers.start import consistent_state, rest_forces, static_deviation, static_start

REFERENCE_STEP = 0.02     # s, spacing of the rigid reference samples (at most)
REFERENCE_SAMPLES = 101   # fewest rigid reference samples over a trajectory
REFERENCE_TOL = 1e-11     # rad or m: largest interpolation error of the drive law (quintic Hermite)
REFERENCE_MAX_SAMPLES = 200_001
BREAK_MERGE = 0.01         # breaks of a law closer than this share of the reference's spacing: one
BREAK_RTOL = 1e-12         # a law's acceleration just before a break: this much of its duration before
REFERENCE_ANGLE = 0.1     # rad or m, largest actuator motion between samples of a drive law (quintic Hermite)
FIELDS = ("axial", "transverse_y", "transverse_z")


def _drive_law(spec, model, where):
    """``law(t) -> (s, s_dot, s_ddot)`` (each (n_a,)) from a ``drive_law`` table."""
    n_a = len(model.actuators)
    kind = spec.get("kind")
    unknown = set(spec) - {"kind", "rate", "ramp"}
    if unknown:
        raise SimError(f"{where} drive_law: unknown key `{sorted(unknown)[0]}` (kind, rate, ramp)")
    try:
        rate = np.broadcast_to(np.asarray(spec.get("rate", 0.0), dtype=float), (n_a,)).copy() \
            if np.size(spec.get("rate", 0.0)) in (1, n_a) else None
    except (TypeError, ValueError):
        rate = None
    if rate is None or not np.all(np.isfinite(rate)):
        raise SimError(f"{where} drive_law.rate must be a number or {n_a} numbers [rad/s or m/s], "
                       f"got {spec.get('rate')!r}")
    from sim.model.constraints import actuator_values
    from sim.solvers.trajectory import ramp_phase
    s0 = actuator_values(model, model.q_home)[0]
    # Laws of a time (n_a,) or of times (k,) -> (k, n_a) (the transient tabulates them).
    if kind == "constant_rate":
        def law(t):
            t = np.asarray(t, dtype=float)[..., None]
            return s0 + rate * t, np.broadcast_to(rate, t.shape[:-1] + (n_a,)).copy(), np.zeros(t.shape[:-1] + (n_a,))
        return law
    if kind == "spinup":
        try:
            T = float(spec.get("ramp", 0.0))
        except (TypeError, ValueError):
            T = float("nan")
        if not T > 0:
            raise SimError(f"{where} drive_law.ramp must be a positive duration [s], got {spec.get('ramp')!r}")

        def law(t):
            # the unit-rate phase of Simo and Vu-Quoc's law
            th, thd, thdd = ramp_phase(np.asarray(t, dtype=float)[..., None], 1.0, T)
            return s0 + rate * th, rate * thd, rate * thdd
        return law
    raise SimError(f"{where} drive_law.kind must be `constant_rate` or `spinup`, got {kind!r}")


def _series(spec, xi, where):
    """Field value and d/dxi at ``xi`` (n,) from ``{sine = [...], polynomial = [...]}``."""
    if not isinstance(spec, dict) or set(spec) - {"sine", "polynomial"}:
        raise SimError(f"{where} must be a table with keys `sine` and/or `polynomial`")
    f, df = np.zeros_like(xi), np.zeros_like(xi)
    for k, b in enumerate(spec.get("sine", []), start=1):
        f += b * np.sin(k * np.pi * xi)
        df += b * k * np.pi * np.cos(k * np.pi * xi)
    for j, c in enumerate(spec.get("polynomial", [])):
        f += c * xi**j
        if j:
            df += j * c * xi ** (j - 1)
    return f, df


def elastic_state(model, spec, where):
    """Elastic coordinates and rates (n_q-shaped offsets on ``q_f`` and ``v``) from ``initial_state``.

    Returns
    -------
    q_f : ndarray, shape (n_q,)
        Zero except on the elastic coordinates.
    v_f : ndarray, shape (n_v,)
    """
    q_f, v_f = np.zeros(model.n_q), np.zeros(model.n_v)
    for name, fields in spec.items():
        if name not in model.body_names or not model.bodies[model.body_names.index(name)].flexible:
            raise SimError(f"{where} initial_state: `{name}` is not a flexible body of `{model.name}`")
        b = model.body_names.index(name)
        body = model.bodies[b]
        allowed = {f"{f}_{kind}" for f in FIELDS for kind in ("displacement", "velocity")}
        bad = set(fields) - allowed
        if bad:
            raise SimError(f"{where} initial_state.{name}: unknown field `{sorted(bad)[0]}` "
                           f"(one of {', '.join(sorted(allowed))})")
        nodes = body.nodes_B
        first, last = nodes[body.elements[0, 0]], nodes[body.elements[-1, 1]]
        L = np.linalg.norm(last - first)
        e_x = (last - first) / L
        e_y = np.array([0.0, 1.0, 0.0]) - e_x * e_x[1]
        if np.linalg.norm(e_y) < 1e-9:
            e_y = np.array([0.0, 0.0, 1.0]) - e_x * e_x[2]
        e_y /= np.linalg.norm(e_y)
        e_z = np.cross(e_x, e_y)
        xi = (nodes - first) @ e_x / L
        c = int(np.argmin(np.linalg.norm(nodes @ np.eye(3), axis=1)))   # reference node: body origin
        for kind, target, sl in (("displacement", q_f, model.q_slice(b)), ("velocity", v_f, model.v_slice(b))):
            u = np.zeros((len(nodes), 3))
            th = np.zeros((len(nodes), 3))
            for f, axis in zip(FIELDS, (e_x, e_y, e_z)):
                key = f"{f}_{kind}"
                if key not in fields:
                    continue
                val, dval = _series(fields[key], xi, f"{where} initial_state.{name}.{key}")
                u += val[:, None] * axis
                if f == "transverse_y":
                    th += (dval / L)[:, None] * e_z
                elif f == "transverse_z":
                    th -= (dval / L)[:, None] * e_y
            # Split the nodal field into the body's elastic basis and a rigid motion about the
            # reference node (the frame's own motion), whatever the reference condition.
            rigid = np.zeros((len(nodes), 6, 6))
            rigid[:, :3, :3] = np.eye(3)
            rigid[:, :3, 3:] = -skew(nodes - nodes[c])
            rigid[:, 3:, 3:] = np.eye(3)
            d = np.concatenate([u, th], axis=1).ravel()
            x = np.linalg.lstsq(np.hstack([body.basis.toarray(), rigid.reshape(-1, 6)]), d, rcond=None)[0]
            target[sl.start + (7 if kind == "displacement" else 6):sl.stop] = x[:body.n_f]
    return q_f, v_f


def hermite_law(t, s, s_dot, s_ddot, s_ddot_left=None):
    """``law(x) -> (s, s_dot, s_ddot)`` from samples of a motion and its two rates: piecewise
    quintic Hermite interpolation, exact (to all three) at the samples, so that the drive
    starts from the rigid motion's own state, and C2 in between; error ``h^6 |s^(6)| / 46080``.
    ``s_ddot_left`` (m, n), optional: the accelerations as limits from the left, for the
    intervals' right ends (default ``s_ddot``), where the motion's acceleration jumps at a
    sample (a trapezoidal profile's knots: the law is then C1 there, and exact on each side).

    Each interval's quintic in ``u = (x - t_i) / h_i`` has the coefficients ``c_0 .. c_2`` of
    its left end and ``c_3 .. c_5`` that meet the right end's value and rates; beyond the
    samples, the end intervals' quintics extend.  Plain numpy: ``scipy.interpolate`` (the same
    interpolant as ``BPoly.from_derivatives``) costs a transient's run more to import than to use.

    Parameters
    ----------
    t : ndarray, shape (m,)
        Increasing sample instants [s].
    s, s_dot, s_ddot : ndarray, shape (m, n)
        Samples and their first two time derivatives.
    """
    t = np.asarray(t, dtype=float)
    h = np.diff(t)[:, None]
    s, s_dot, s_ddot = (np.asarray(x, dtype=float) for x in (s, s_dot, s_ddot))
    right = s_ddot if s_ddot_left is None else np.asarray(s_ddot_left, dtype=float)
    c0, c1, c2 = s[:-1], h * s_dot[:-1], 0.5 * h * h * s_ddot[:-1]
    A = s[1:] - c0 - c1 - c2                    # what c_3 + c_4 + c_5 must add at u = 1
    B = h * s_dot[1:] - c1 - 2 * c2
    C = h * h * right[1:] - 2 * c2
    c = np.stack([c0, c1, c2, 10 * A - 4 * B + 0.5 * C, -15 * A + 7 * B - C, 6 * A - 3 * B + 0.5 * C])

    def law(x):
        x = np.asarray(x, dtype=float)
        i = np.clip(np.searchsorted(t, x, side="right") - 1, 0, t.size - 2)
        hi = h[i, 0][..., None]
        u = ((x - t[i]) / h[i, 0])[..., None]
        k = c[:, i]
        p = k[0] + u * (k[1] + u * (k[2] + u * (k[3] + u * (k[4] + u * k[5]))))
        dp = k[1] + u * (2 * k[2] + u * (3 * k[3] + u * (4 * k[4] + u * 5 * k[5])))
        ddp = 2 * k[2] + u * (6 * k[3] + u * (12 * k[4] + u * 20 * k[5]))
        return p, dp / hi, ddp / (hi * hi)
    return law


def hermite_error(t, s_ddot, edges=None, s_ddot_left=None):
    """Estimated largest interpolation error of :func:`hermite_law` on samples ``t`` uniform
    between the sample indices ``edges`` (ascending, first 0 and last ``len(t) - 1``; default:
    uniform throughout): ``h^6 |s^(6)| / 46080``, with ``s^(6)`` from the fourth differences of
    ``s_ddot`` within each piece (its last sample's from ``s_ddot_left``, where given), times 2
    (the differences underestimate the derivative where the samples are coarse)."""
    edges = [0, len(t) - 1] if edges is None else edges
    left = s_ddot if s_ddot_left is None else s_ddot_left
    error = 0.0
    for i, j in zip(edges[:-1], edges[1:]):
        if j - i < 4:
            return np.inf
        h = t[i + 1] - t[i]
        piece = np.concatenate([s_ddot[i:j], left[j:j + 1]])
        error = max(error, 2.0 * h**2 * np.abs(np.diff(piece, 4, axis=0)).max() / 46080.0)
    return error


def one_sided(ev, trajectory, times, rows, motion):
    """The rigid ``motion`` at ``times`` as limits from the right and from the left:
    ``(right, left)``, each a :class:`sim.solvers.motion.RigidMotion` like ``motion`` whose
    samples ``rows`` (a law's breaks, where a profile's acceleration may jump) are those of the
    rigid robot on the same configuration and velocity with the law's acceleration just after
    and just before (``BREAK_RTOL`` of the duration; the law at a break itself may give either
    side: the break's instant is a sum that rounds); elsewhere the motion's own."""
    import dataclasses

    from sim.solvers.motion import rigid_motion
    from sim.solvers.trajectory import Trajectory

    if not len(rows):
        return motion, motion
    delta = BREAK_RTOL * max(times[-1], 1.0)
    out = []
    for shift in (delta, -delta):
        def law(t, shift=shift):
            x, x_dot, _ = trajectory(t)
            return x, x_dot, trajectory(t + shift)[2]

        side = Trajectory(trajectory.kind, trajectory.duration, law)
        # Each from its own configuration: the breaks are apart, a continuation across them
        # could change branch.
        at = [rigid_motion(ev, side, times[k:k + 1], q_start=motion.q[k], condition=False) for k in rows]
        fields = {}
        for f in dataclasses.fields(motion):
            x = np.array(getattr(motion, f.name), copy=True)
            x[rows] = np.concatenate([getattr(m, f.name) for m in at])
            fields[f.name] = x
        out.append(dataclasses.replace(motion, **fields))
    return tuple(out)


def _piecewise_spline(times, edges, right, left):
    """``f(t) -> (..., n)``: a cubic spline through ``right`` (k, n) at ``times`` (k,) on each
    piece between the samples ``edges``, its last value there from ``left``: values that jump
    at the breaks (forces where a profile's acceleration jumps), which one spline through
    them all would ring around."""
    import scipy.interpolate    # on use: a long import that `sim modes` does without

    splines = [scipy.interpolate.CubicSpline(times[i:j + 1], np.concatenate([right[i:j], left[j:j + 1]]), axis=0)
               for i, j in zip(edges[:-1], edges[1:])]
    cuts = times[edges]

    def f(t):
        x = np.atleast_1d(np.asarray(t, dtype=float))
        piece = np.clip(np.searchsorted(cuts, x, side="right") - 1, 0, len(splines) - 1)
        out = np.empty((x.size, right.shape[1]))
        for p in np.unique(piece):
            out[piece == p] = splines[p](x[piece == p])
        return out[0] if np.ndim(t) == 0 else out
    return f


def reference_times(duration, h, breaks=()):
    """Instants ``(times, edges)`` of a rigid reference over ``[0, duration]`` [s]: uniform, at
    most ``h`` apart, between the law's ``breaks`` (where its acceleration or jerk may jump),
    which are samples (those within ``BREAK_MERGE h`` of the previous one merged into it), at
    least four intervals between two of them; ``edges`` the indices of
    the breaks, ends included (:func:`hermite_error`).  The interpolation between samples is
    then of a smooth law: its error falls as ``h^6``, where an interval straddling a jump in
    the jerk leaves ``h^3``."""
    cuts = np.unique(np.concatenate([[0.0, duration], np.clip(np.asarray(breaks, dtype=float), 0.0, duration)]))
    # Breaks closer than a hundredth of h are one: a jump in the jerk inside so short an
    # interval costs the law nothing, where a piece that short would leave the quintics'
    # coefficients (differences of values, divided by h^2) to round-off.
    keep = [0]
    for k in range(1, cuts.size):
        if cuts[k] - cuts[keep[-1]] > BREAK_MERGE * h:
            keep.append(k)
    cuts = cuts[keep]
    cuts[-1] = duration
    pieces = [np.linspace(a, b, max(4, int(np.ceil((b - a) / h - 1e-9))) + 1)[:-1] for a, b in zip(cuts[:-1], cuts[1:])]
    counts = np.array([p.size for p in pieces])
    return np.concatenate(pieces + [[duration]]), np.concatenate([[0], np.cumsum(counts)])


def _tabulated(law, times, model):
    """The drive ``law`` at ``times`` (k,): ``s, s_dot, s_ddot``, each (k, n_a), tabulated as the
    time loop tabulates it (:meth:`sim.solvers.simulate.Drive.table`)."""
    from sim.solvers.simulate import Drive
    return Drive("prescribed", reference=law).table(times, len(model.actuators))[:3]


class Samples(NamedTuple):
    """The rigid reference's samples: instants ``t`` (m,) [s], configurations ``q`` (m, n_q),
    velocities ``v`` and accelerations ``a`` (m, n_v), and, where the rigid robot cannot follow
    its actuators exactly (:func:`sim.solvers.motion.least_squares_motion`), the joints'
    ``residual`` (m,) of that least-squares reference (None where it can)."""
    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    a: np.ndarray
    residual: object


def reference(model, scenario, table, progress, ev):
    """Rigid reference (``ev``: the analysis' evaluator): ``(law, pose_rigid(t), q0, v0,
    torque(t) or None, duration, samples)``, ``samples`` the :class:`Samples` it was built
    from."""
    from sim.solvers.motion import driven_motion, least_squares_motion, rigid_motion
    from sim.solvers.trajectory import from_scenario

    where = f"{scenario.path}: [transient]"
    traj = scenario.data.get("trajectory")
    duration = table["duration"]
    if table.get("drive_law") is not None:
        if not model.pose_determined:
            # As sim.model.assembly.solve_pose: the rigid reference (and the deviation from it) needs
            # joints that place every body once the actuators are set.
            raise SimError(f"{where} `{model.name}`: its joints do not determine the configuration from the "
                           f"actuators (bodies held by springs only), so there is no rigid reference to "
                           f"deviate from; join those bodies with joints")
        if not model.actuators:
            raise SimError(f"{where} drive_law drives the actuators, and `{model.name}` has none: "
                           f"give a [trajectory] of its end effector instead")
        law = _drive_law(table["drive_law"], model, where)
        if duration is None:
            raise SimError(f"{where} duration is required with drive_law")
        # Sample finely enough that the actuators move at most REFERENCE_ANGLE per sample.
        dt = min(REFERENCE_STEP, REFERENCE_ANGLE / max(np.abs(law(0.0)[1]).max(), np.abs(law(duration)[1]).max(), 1e-12))
        times = np.linspace(0.0, duration, max(4, int(np.ceil(duration / dt)) + 1))
        bar = progress(len(times), "rigid reference")
        drive = _tabulated(law, times, model)
        try:
            motion, residual = driven_motion(ev, times, *drive, progress=bar), None
        except SimError:
            # A rigid robot that cannot follow its actuators (a locked or misaligned loop, a
            # singular one at its change point): the least-squares rigid motion, which the
            # flexible robot, bending to close its loops, deviates from.
            motion, residual = least_squares_motion(model, times, *drive, progress=bar)
        bar.close()
        qs = motion.q
        pose_law = hermite_law(times, motion.pose, motion.pose_dot, motion.pose_ddot)
        pose_rigid = lambda t: pose_law(t)[0]   # noqa: E731
        s, sd, sdd = law(0.0)
        v0 = consistent_state(model, qs[0], np.zeros(model.n_v), s, sd, ev)[1]
        if table["drive"] == "torque" or (table["drive"] == "servo" and _torque_feedforward(model, scenario)):
            raise SimError(f"{where} drive = \"{table['drive']}\" with torque feedforward needs a [trajectory] "
                           f"(rigid inverse dynamics)")
        return law, pose_rigid, qs[0], v0, None, duration, Samples(times, qs, motion.v, motion.a, residual)
    if traj is None:
        raise SimError(f"{where} needs a [trajectory] table or a drive_law")
    trajectory = from_scenario(traj, model)
    duration = trajectory.duration if duration is None else duration
    # At least REFERENCE_SAMPLES samples, so that short, fast motions are resolved too; more
    # where the interpolation error of the drive law would exceed REFERENCE_TOL.  A sample on
    # each of the law's breaks (a point-to-point move's ends).
    h = min(REFERENCE_STEP, duration / (REFERENCE_SAMPLES - 1))
    finest = duration / (REFERENCE_MAX_SAMPLES - 1)
    while True:
        times, edges = reference_times(duration, h, trajectory.breaks)
        bar = progress(len(times), "rigid reference")
        motion = rigid_motion(ev, trajectory, times, progress=bar, condition=False)
        bar.close()
        right, left = one_sided(ev, trajectory, times, edges[1:-1], motion)
        error = hermite_error(times, right.actuators_ddot, edges, left.actuators_ddot)
        if error <= REFERENCE_TOL or h <= finest:
            break
        h = max(finest, h / (1.2 * (error / REFERENCE_TOL) ** (1 / 6)))
    law = hermite_law(times, motion.actuators, motion.actuators_dot, right.actuators_ddot, left.actuators_ddot)
    torque = None
    if table["drive"] == "torque" or (table["drive"] == "servo" and _torque_feedforward(model, scenario)):
        from sim.solvers.reactions import actuator_forces
        import dataclasses
        forces = actuator_forces(ev, right)
        before, rows = forces.copy(), edges[1:-1]
        if rows.size:     # the forces just before the breaks
            at = {f.name: getattr(left, f.name)[rows] for f in dataclasses.fields(left)}
            before[rows] = actuator_forces(ev, dataclasses.replace(left, **at))
        torque = _piecewise_spline(times, edges, forces, before)
    return (law, (lambda t: trajectory(t)[0]), motion.q[0], motion.v[0], torque, duration,
            Samples(times, motion.q, motion.v, motion.a, None))


def _torque_feedforward(model, scenario):
    """Whether the scenario's servos feed the rigid inverse dynamics' forces forward."""
    from sim.analyses.servo import gains
    return bool(gains(model, scenario).torque.any())


def between(model, t, q, times):
    """Configurations (n, n_q) at ``times`` (n,) interpolated between samples ``q`` (m, n_q) at
    ``t`` (m,): linearly, each body's orientation quaternion normalised (the rigid robot drawn
    beside the flexible one where it has no exact motion to solve again: a least-squares
    reference, sampled finely enough for a drawing)."""
    out = np.column_stack([np.interp(times, t, column) for column in np.asarray(q).T])
    for b in range(len(model.bodies)):
        quat = slice(model.q_slice(b).start + 3, model.q_slice(b).start + 7)
        out[:, quat] /= np.linalg.norm(out[:, quat], axis=1, keepdims=True)
    return out


def write_skeleton(model, group, result, samples):
    """Subgroup ``skeleton`` (:mod:`sim.analyses.skeleton`): the flexible robot from the sampled
    configurations; the rigid one from the rigid reference's :class:`Samples`, its points
    interpolated by quintic Hermite polynomials through their positions, velocities and
    accelerations (:func:`hermite_law`: exact at the samples, and between them as close as
    the reference's own interpolation of the drive, which the samples' spacing bounds), or,
    where the reference is a least-squares one (rates by finite differences), its
    configurations interpolated linearly (:func:`between`)."""
    from sim.analyses import skeleton
    from sim.model.kinematics import skeleton_acceleration, skeleton_motion, skeleton_points

    every = skeleton.stride(model, len(result.t))
    times = result.t[::every]
    if samples.residual is None:
        t, q, v, a = samples.t, samples.q, samples.v, samples.a
        rates = (skeleton_points(model, q), skeleton_motion(model, q, v), skeleton_acceleration(model, q, v, a))
        n_p = rates[0].shape[1]
        rigid = hermite_law(t, *(x.reshape(len(t), -1) for x in rates))(times)[0].reshape(len(times), n_p, 3)
        how = ("quintic Hermite interpolation of the rigid reference's samples (points, velocities and "
               "accelerations)")
    else:
        rigid = skeleton_points(model, between(model, samples.t, samples.q, times))
        how = "linear interpolation of the least-squares rigid reference's configurations"
    skeleton.write(group, model, result.t, every, skeleton_points(model, result.q[::every]), rigid,
                   "the integrated configurations", how_rigid=how)


def prepare(model, scenario):
    """Load the compiled kernels of the transient (see :mod:`sim.analyses`)."""
    from sim.solvers.simulate import load_kernels
    load_kernels(model)


def loops(model, scenario):
    """Compile the transient's step loop alone (see :mod:`sim.analyses`)."""
    from sim.solvers.simulate import compile_loop
    compile_loop(model)


def check(model, scenario):
    """Refuse HHT with ``rho_inf`` below its range, a shaper tuned above what the step resolves,
    and, under prescribed drives, a robot whose actuators leave its end effector free: the
    rigid reference would be undetermined (see :mod:`sim.analyses`).  A torque or free drive integrates such a robot as it is."""
    table = scenario.data["transient"]
    if table["method"] == "hht" and table["rho_inf"] < 0.5:
        raise SimError(f"rho_inf = {table['rho_inf']:g} is below HHT's range [0.5, 1]; method = "
                       f"\"generalized-alpha\" takes rho_inf down to 0")
    if table["drive"] == "prescribed":
        determined(model, scenario)
    if table["drive"] == "servo":
        from sim.analyses.servo import check_stable
        check_stable(model, scenario, f"{scenario.path}: [transient]")
    check_marker_sensors(model, table.get("marker_sensors"), "")
    if table.get("drive_law") is None:
        from sim.solvers.moves import check_resolution
        from sim.solvers.trajectory import from_scenario
        check_resolution(from_scenario(scenario.data["trajectory"], model).moves, table["step"], "transient")


@register("transient", prepare=prepare, check=check, loops=loops)
def run(model, scenario, group, progress):
    """Write group ``transient``; see the module docstring.

    Returns
    -------
    dict
        Peak deviation per axis, largest constraint violation, Newton work and timings.

    Raises
    ------
    SimError
        A bad table, or an integration that stops (after writing what was computed).
    """
    from sim.model.constraints import actuator_values
    from sim.model.tables import compliant
    from sim.analyses import damping as robot_damping
    from sim.model.evaluator import Evaluator, size as robot_size
    from sim.model.kinematics import markers
    from sim.solvers.damping import schedule
    from sim.solvers.integrators import Options, baumgarte_gains
    from sim.solvers.simulate import Drive, simulate
    from sim.model.sections import elastic_displacements

    from sim.linalg import NUMPY_MAX, prefetch

    table = scenario.data["transient"]
    where = f"{scenario.path}: [transient]"
    if model.n_v > NUMPY_MAX:
        prefetch()      # the static deflections' bases take scipy.linalg: imported while the reference runs
    ev = Evaluator(model)     # the analysis' one: the reference, the statics, the time loop, the skeleton
    law, pose_rigid, q0, v0, torque, reference_duration, samples = reference(model, scenario, table, progress, ev)
    kind = table["drive"]
    servo = None
    if kind == "servo":
        from sim.analyses.servo import gains as servo_gains
        servo = servo_gains(model, scenario)
    # Compliant drives are springs towards their targets under a prescribed drive (KED's view);
    # under torque or free drives they are force sources: locked in the statics (servos: with
    # their own lag under the load).
    lock = kind != "prescribed"
    static, static_servo = static_deviation(model, ev, samples.t, samples.q, lock=lock, servo=servo)
    q_f, v_f = np.zeros(model.n_q), np.zeros(model.n_v)
    if table.get("initial_state") is not None:
        q_f, v_f = elastic_state(model, table["initial_state"], where)
    holding = None
    if servo is not None and table["start"] == "static":
        # The servos hold the static load from the start: through the integral, or the
        # position loop's error (the joints then start behind their references).  At rest
        # the torque feedforward is the static one, whatever the motion's first instant asks.
        rest = rest_forces(model, ev, q0)[0]
        holding = servo.holding(model, rest, servo.torque * rest)
    if table.get("initial_state") is not None or table["start"] == "static":
        s, sd, _ = law(0.0)
        if holding is not None:
            s = s - holding.lag - holding.motor_offset
        q_guess = q0.copy()
        if table["start"] == "static":
            # The whole static displacement: the elastic one, and the motions of the joints it
            # takes with it -- a compliant drive's deflection among them, which then starts
            # where its spring holds the preload, not at its target (locked: at its target).
            q_guess = static_start(model, q0, ev, lock=lock)
            if not lock:
                s = np.where(compliant(model), actuator_values(model, q_guess)[0], s)
        q_guess[model.q_elastic] += q_f[model.q_elastic]
        free = table["drive"] == "free"
        q0, v0 = consistent_state(model, q_guess, v_f, None if free else s, None if free else sd, ev)
    if servo is not None:
        drive = servo.drive(law, torque, holding)
    else:
        drive = Drive(kind, reference=law, feedforward=torque, kp=table["kp"], kd=table["kd"])
    duration = table["duration"] if table["duration"] is not None else reference_duration
    h = table["step"]
    moves = None
    if table.get("drive_law") is None:
        from sim.solvers.trajectory import from_scenario
        moves = from_scenario(scenario.data["trajectory"], model).moves
    gains = baumgarte_gains(h, table["alpha"], table["beta"])
    damped = schedule(ev, robot_damping(scenario, group), samples.t, samples.q)
    method, fallback = table["method"] or "newmark", None

    def integrate(method):
        with progress(int(round(duration / h)), "transient") as bar:
            options = Options(method=method, rho_inf=table["rho_inf"], baumgarte=gains, newton_tol=table["newton_tol"],
                              newton_max_iter=table["newton_max_iter"])
            return simulate(ev, q0, v0, duration, h, drive, options, output_step=table["output_step"],
                            damping=damped, progress=bar)

    result = integrate(method)
    if result.status == "failed" and table["method"] is None:
        # The default: Newmark keeps every mode undamped, those the step cannot resolve too (a
        # locked loop's stiff ones at a change point), and they can stop Newton; generalized-
        # alpha damps them and keeps second order.  Run again with it, and say so.
        fallback, method = result.message, "generalized-alpha"
        result = integrate(method)
    rigid = np.asarray(pose_rigid(result.t)).reshape(len(result.t), -1)
    summary = write(model, group, result, rigid, static(result.t))
    sensors = check_marker_sensors(model, table.get("marker_sensors"), where + " ")
    write_motion(model, group, sensors, *motion_terms(model, result, drive, sensors))
    if servo is not None:
        from sim.analyses.servo import write_tracking
        summary.update(write_tracking(group, model, ev, result, rigid, law, servo, static_servo(result.t),
                                      split=samples.residual is None))
    if moves is not None:
        summary.update(settle.write(group, model, moves, result.t, rigid, result.pose - rigid - static(result.t)))
    write_skeleton(model, group, result, samples)
    summary.update(sections.write(group, model, result.t, elastic_displacements(model, result.q),
                                  "the elastic nodal displacements (the integrated elastic coordinates)"))
    group.attrs["baumgarte_alpha"], group.attrs["baumgarte_beta"] = gains
    group.attrs["step"] = h      # [s], the time step (sim.app.selfcheck's ringing check)
    # The rigid reference (sim.app.selfcheck warns of a least-squares one and of a branch change)
    group.attrs["reference"] = "exact" if samples.residual is None else "least_squares"
    group.attrs["reference_residual"] = 0.0 if samples.residual is None else float(np.max(samples.residual))
    # Free motions the model declares that move its end effector: the transient drifts along them
    group.attrs["free_motions"] = int(model.free_motions_declared)
    group.attrs["robot_size"] = robot_size(np.vstack([markers(model, model.q_home).p,
                                                      [model.q_home[model.q_slice(b)][:3] for b in range(len(model.bodies))]]))
    group.attrs["start"] = table["start"]
    group.attrs["drive"] = table["drive"]
    group.attrs["method"] = method                 # with rho_inf: sim.app.selfcheck's phase-error estimate
    if fallback is not None:
        group.attrs["newmark_failure"] = fallback  # the default's first attempt (sim.app.selfcheck warns)
    group.attrs["rho_inf"] = float(table["rho_inf"])
    if result.status == "interrupted":
        group.set_status("incomplete", result.message)
        raise result.stop       # the signal's own exit code (143 for SIGTERM)
    if result.status != "complete":
        group.set_status("incomplete", result.message)
        raise SimError(f"{scenario.path}: transient stopped: {result.message}{_cure(table)}")
    return summary


def _cure(table):
    """What else than a smaller step may let a failed transient through: under Newmark's
    average acceleration every mode keeps its amplitude, the stiff ones the step cannot resolve
    too (a locked loop's axial modes, a stiff spring), and they can stop Newton.  (Left to its
    default, a failed Newmark run is run again with generalized-alpha: nothing to advise.)"""
    if table["method"] != "newmark":
        return ""
    return ("; or damp what the step cannot resolve: method = \"generalized-alpha\" (rho_inf = 0.9 "
            "keeps 2nd order and damps the highest frequencies)")


def write_motion(model, group, sensors, velocity, acceleration, forces, values):
    """Datasets of :func:`motion_terms`: the end effector's ``velocity`` and ``acceleration``,
    the ``actuator_forces`` of the flexible robot and the marker sensors
    (``sensors/<marker>_<kind>``, world x, y, z)."""
    names = " ".join(model.pose_names)
    group.put("velocity", velocity, [u + "/s" for u in model.pose_units],
              f"end-effector coordinate rates ({names}) of the flexible robot")
    group.put("acceleration", acceleration, [u + "/s^2" for u in model.pose_units],
              f"end-effector coordinate accelerations ({names}) of the flexible robot, from the "
              f"accelerations solved from the equations of motion at each sample")
    if model.actuators:
        group.put("actuator_forces", forces, ["N m" if a.kind == "angle" else "N" for a in model.actuators],
                  "actuator force or torque along each driven joint coordinate of the flexible robot "
                  "(driving constraint's multiplier; torque drive: its law; NaN: a compliant actuator, a spring) "
                  "(columns: " + ", ".join(model.actuator_names) + ")")
        group.attrs["actuator_names"] = list(model.actuator_names)
    for (kind, name, _), value in zip(sensors, values):
        unit, text = MARKER_SENSORS[kind]
        group.put(f"sensors/{name}_{kind}", value, unit, text.format(m=name), dims=("time", "component"))


def write(model, group, result, pose_rigid, static):
    """Datasets of group ``transient`` and the summary dict; ``static`` (n, d) the
    static deflection at rest along the path."""
    units = list(model.pose_units)
    names = " ".join(model.pose_names)
    deviation = result.pose - pose_rigid
    group.put("time", result.t, "s", "output instants")
    group.put("pose_rigid", pose_rigid, units, f"end-effector coordinates ({names}) of the rigid robot")
    group.put("pose", result.pose, units, f"end-effector coordinates ({names}) of the flexible robot")
    group.put("deviation", deviation, units, "pose - pose_rigid (flexible minus rigid)")
    group.put("deviation_static", static, units,
              "static deflection of the robot at rest at the rigid pose (gravity, preloads; linearised)")
    group.put("deviation_dynamic", deviation - static, units, "deviation - deviation_static")
    group.put("energy", result.energy.sum(axis=1), "J", "kinetic + gravitational + elastic energy (the actuators' "
              "rotors and transmission springs included)")
    group.put("energy_parts", result.energy, "J", "kinetic, gravitational, elastic energy (columns)",
              dims=("time", "energy_part"))
    group.put("constraint_violation", result.constraint_violation, "m, rad",
              "norm of the joint and driving constraints C(q, t)")
    group.put("newton_iterations", result.newton_iterations, "1",
              "largest Newton iteration count of the steps since the previous sample")
    for k, s in enumerate(model.sensors):
        group.put(f"sensors/{s.name}", result.sensors[:, k], s.units, s.description or s.name)
    group.attrs["pose_names"] = list(model.pose_names)
    c = result.counters
    for key, value in c.items():
        group.attrs[key] = value
    steps = max(c["steps"], 1)
    group.attrs["time_per_step_s"] = c["wall_time_s"] / steps
    group.attrs["time_per_iteration_s"] = c["wall_time_s"] / max(c["iterations"], 1)
    summary = peaks(model, deviation, static)
    summary.update(max_constraint_violation=Quantity(float(result.constraint_violation.max()), "m or rad"),
                   steps=int(c["steps"]), newton_iterations_per_step=c["iterations"] / steps,
                   ms_per_step=1e3 * c["wall_time_s"] / steps,
                   ms_per_newton_iteration=1e3 * c["wall_time_s"] / max(c["iterations"], 1))
    for k, s in enumerate(model.sensors):
        summary[f"{s.name}_final"] = Quantity(float(result.sensors[-1, k]), s.units)
    return summary


# What a marker sensor of `[transient] marker_sensors` gives: (units, description).
MARKER_SENSORS = {"position": ("m", "world position of marker {m}'s origin"),
                  "velocity": ("m/s", "world velocity of marker {m}'s origin (J v, the integrated velocities)"),
                  "acceleration": ("m/s^2", "world acceleration of marker {m}'s origin (J a + the velocity-"
                                            "quadratic part; a solved from the equations of motion at the sample)")}


def check_marker_sensors(model, spec, where):
    """``[(kind, marker name, marker index)]`` of a ``marker_sensors`` table ``{kind: [marker,
    ...]}``; SimError naming the unknown kind or marker (after ``where``, a prefix)."""
    names = [m.name for m in model.markers]
    found = []
    for kind, markers in (spec or {}).items():
        if kind not in MARKER_SENSORS:
            raise SimError(f"{where}marker_sensors.{kind}: unknown sensor kind; expected one of "
                           f"{', '.join(MARKER_SENSORS)}")
        if not isinstance(markers, list) or not markers or not all(isinstance(m, str) for m in markers):
            raise SimError(f"{where}marker_sensors.{kind}: expected a non-empty list of marker names")
        for m in markers:
            if m not in names:
                raise SimError(f"{where}marker_sensors.{kind}: `{model.name}` has no marker {m!r} "
                               f"(`sim model FILE` lists them)")
            found.append((kind, m, names.index(m)))
    return found


def motion_terms(model, result, drive, sensors=()):
    """What the transient's samples hold at each instant beside the configuration, as the step
    loop recorded them (the accelerations and multipliers that meet the equations of motion
    there, :class:`sim.solvers.simulate.Result`): the end effector's velocity and
    acceleration, the actuator forces and the marker sensors.

    Parameters
    ----------
    model : Model
    result : sim.solvers.simulate.Result
    drive : sim.solvers.simulate.Drive
    sensors : sequence of (kind, name, marker index)
        :func:`check_marker_sensors`.

    Returns
    -------
    velocity, acceleration : ndarray, shape (n, d)
        End-effector coordinate rates [m/s, rad/s] and second derivatives [m/s^2, rad/s^2].
    forces : ndarray, shape (n, n_a)
        Actuator force or torque [N, N m] along each driven coordinate: the driving constraint's
        multiplier (prescribed), the force the step applied (torque and servo drives), zero
        (free); NaN for a compliant actuator under a prescribed drive (a spring, not a
        constraint).
    values : list of ndarray, shape (n, 3)
        One per sensor [m, m/s, m/s^2].
    """
    n, n_a = len(result.t), len(model.actuators)
    forces = np.zeros((n, n_a))
    if drive.kind == "torque" and n_a:
        forces = result.actuator_forces
    elif drive.kind == "prescribed" and n_a:
        forces[:] = np.nan
        for column, row in enumerate(result.rows):
            if row >= result.n_joint:
                forces[:, row - result.n_joint] = -result.lam[:, column]
    by_kind = {"position": result.marker_position, "velocity": result.marker_velocity,
               "acceleration": result.marker_acceleration}
    values = [by_kind[kind][:, i] for kind, _, i in sensors]
    return result.pose_rates[:, 0], result.pose_rates[:, 1], forces, values
