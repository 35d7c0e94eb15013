"""Natural frequencies along the trajectory, tracked by MAC: group ``frequencies``.

Table ``[frequencies]``: ``count`` tracked modes at ``samples`` instants; with ``drives =
"servo"`` also the lowest ``count`` complex modes of the robot closed by its ``[servo]`` drives
at each instant (:mod:`sim.solvers.closed_loop`), tracked by the MAC of their complex shapes.  The modes are those
of KED's frozen structures (actuators locked; :func:`sim.solvers.frames.frames_along`, its
compiled frame loop with subspace tracking).  Two extra modes are computed at every instant so
that a tracked mode crossing the ``count``-th one is still found; pairing uses the
mass-weighted MAC with ``M`` of the later instant (:func:`sim.solvers.tracking.track_modes`,
here on the frames as they come: the MAC of each instant with the one before, then the tracks).
"""
import numpy as np

from sim.errors import SimError

from sim.analyses import determined, register

EXTRA_MODES = 2   # modes computed beyond `count`, so that crossings at the top are followed


def prepare(model, scenario):
    """Load the compiled kernels (rigid motion, KED's frame loop, the mass products) and the mode pairing's
    modules (scipy.optimize: 0.2 s); see :mod:`sim.analyses`."""
    import importlib

    importlib.import_module("sim.solvers.tracking")
    from sim.errors import signals_deferred
    from sim.model.evaluator import Evaluator
    from sim.solvers.frames import load_kernels
    load_kernels(model, scenario.data["frequencies"]["count"] + EXTRA_MODES)
    with signals_deferred():
        Evaluator(model).mass_products(model.q_home[None], np.zeros((1, model.n_v, 1)))


def _first_pose(model, scenario, ev):
    """The configuration (n_q,) at the trajectory's start and the number of modes to compute
    there, ``min(count + EXTRA_MODES, elastic modes)``.

    Raises
    ------
    SimError
        ``count`` exceeds the robot's elastic modes.
    """
    from sim.linalg import rank
    from sim.model.mobility import NULL_RTOL
    from sim.solvers.frames import free_motions
    from sim.solvers.modal import locked_jacobian
    from sim.solvers.motion import rigid_motion
    from sim.solvers.trajectory import from_scenario

    k = scenario.data["frequencies"]["count"]
    trajectory = from_scenario(scenario.data["trajectory"], model, f"{scenario.path}: [trajectory]")
    q0 = rigid_motion(ev, trajectory, np.zeros(1), condition=False).q[0]
    E = ev.kinematics(q0)
    # The elastic modes: the constrained motions less the free ones, counted (the modal
    # analysis or a basis of the constrained motions would be cubic, or square, in the model).
    elastic = model.n_v - rank(locked_jacobian(model, E.J, E.J_s), NULL_RTOL) - free_motions(model, q0, ev)
    available = min(k + EXTRA_MODES, elastic)
    if available < k:
        raise SimError(f"{scenario.path}: [frequencies] count = {k} exceeds the {available} elastic modes "
                       f"of `{model.name}`")
    return q0, available


def check(model, scenario):
    """Refuse a robot whose actuators leave its end effector free, and a ``count`` above the
    robot's elastic modes (see :mod:`sim.analyses`)."""
    from sim.model.evaluator import Evaluator
    determined(model, scenario)
    _first_pose(model, scenario, Evaluator(model))


def loops(model, scenario):
    """Compile the KED's frame loop alone, which the frequencies run on (see :mod:`sim.analyses`)."""
    from sim.solvers.frames import compile_frames
    compile_frames(model, scenario.data["frequencies"]["count"] + EXTRA_MODES)


@register("frequencies", prepare=prepare, check=check, loops=loops)
def run(model, scenario, group, progress):
    """Write group ``frequencies``: frequency_time, frequencies (m, k) tracked, MAC and order.

    Returns
    -------
    dict
        ``{"frequency_range_hz": (lo, hi)}`` over the tracked modes.
    """
    from sim.model.evaluator import Evaluator
    from sim.solvers.frames import motion_and_frames
    from sim.solvers.tracking import follow, weighted_mac
    from sim.solvers.trajectory import from_scenario

    table = scenario.data["frequencies"]
    trajectory = from_scenario(scenario.data["trajectory"], model, f"{scenario.path}: [trajectory]")
    m, k = table["samples"], table["count"]
    time = np.linspace(0.0, trajectory.duration, m)
    ev = Evaluator(model)
    q0, available = _first_pose(model, scenario, ev)
    # The frozen structures of KED (actuators locked), through its compiled frame loop, the
    # frames of the first instants computed (in another thread) while the motion goes on, and
    # taken as they come: what the tracking keeps of them is their frequencies and the MAC
    # between consecutive instants (sim.solvers.tracking.track_modes, a chunk at a time).
    count = min(k + EXTRA_MODES, available)
    omegas, raw = np.zeros((m, count)), np.zeros((max(m - 1, 0), count, count))
    metric = Evaluator(model)       # the MAC's own (the motion's goes on meanwhile)
    last = [None]                   # the shapes of the last instant taken

    def take(start, frames, q):
        """Frames ``start ..``: their frequencies, and the MAC of each with the instant before
        in the metric of the later one (``M Phi`` of its own shapes comes with the frames, of
        the earlier instant's from one compiled pass)."""
        n = len(frames)
        omegas[start:start + n] = frames.omega
        before = np.concatenate([last[0][None], frames.shapes[:-1]]) if start else frames.shapes[:-1]
        later = slice(0 if start else 1, n)
        if len(before):
            raw[start - 1 if start else 0:start + n - 1] = weighted_mac(
                before, frames.shapes[later], metric.mass_products(q[later], before), frames.mass_shapes[later])
        last[0] = frames.shapes[-1].copy()

    with progress(m, "frequencies: rigid motion") as bar_motion, progress(m, "frequencies: modes") as bar_modes:
        motion, _ = motion_and_frames(ev, trajectory, time, count, progress=(bar_motion, bar_modes), q_start=q0,
                                      take=take)
    order, macs = follow(raw)
    tracked = np.take_along_axis(omegas, order, axis=1)[:, :k] / (2 * np.pi)
    group.put("frequency_time", time, "s", "sampling instants")
    group.put("frequencies", tracked, "Hz", "elastic frequencies, column j = tracked mode j (identity kept by MAC)")
    group.put("frequencies_sorted", omegas[:, :k] / (2 * np.pi), "Hz", "the same, ascending at each instant")
    group.put("mode_order", order, "1",
              f"column of the ascending modes (of {omegas.shape[1]} computed) that continues each track",
              dims=("frequency_time", "track"))
    group.put("mac", macs, "1", "mass-weighted MAC between the tracked shapes of the previous instant (rows) "
              "and the ascending shapes of this instant (columns), M of this instant",
              dims=("frequency_time", "track", "ascending"))
    group.put("mac_tracked", np.take_along_axis(macs, order[:, None, :], axis=2)[:, np.arange(k), np.arange(k)],
              "1", "MAC of each track between consecutive instants (1 = unchanged shape)")
    group.put("pose_rigid", motion.pose, list(model.pose_units), "end-effector coordinates at the sampling instants")
    group.attrs["pose_names"] = list(model.pose_names)
    group.attrs["mac_metric"] = "mass-weighted, M(q) of the later instant"
    summary = {"frequency_range_hz": (float(tracked.min()), float(tracked.max()))}
    if table["drives"] == "servo":
        summary.update(_servo(model, scenario, group, time, motion.q, k, progress))
    return summary


def _servo(model, scenario, group, time, qs, k, progress):
    """The lowest ``k`` closed-loop modes at each configuration ``qs`` (m, n_q) of the path at ``time`` (m,),
    tracked by the mass-weighted MAC of their complex shapes (:mod:`sim.solvers.closed_loop`;
    ``EXTRA_MODES`` more at each instant, so that a crossing at the top is followed).

    The shapes are carried from each instant to the next through the velocity coordinates and
    compared in the later instant's mass matrix, rotors included, as the locked modes are
    (:func:`_sparse_instant`, :func:`_dense_instant`).  The damping is the
    servo transient's: the modal ratios on the locked structure's lowest modes frozen along the
    path (:func:`sim.solvers.damping.schedule`, :func:`sim.solvers.closed_loop.plant`)."""
    from sim.analyses import damping as robot_damping
    from sim.analyses.servo import gains
    from sim.model.evaluator import Evaluator
    from sim.solvers import servo_stepping
    from sim.solvers.closed_loop import free_motions
    from sim.solvers.damping import Schedule, schedule
    from sim.solvers.tracking import follow

    servo, damping = gains(model, scenario), robot_damping(scenario, group)
    modal = schedule(model, damping, time, qs) if damping.modal else None
    K = k + EXTRA_MODES
    f, z = np.full((len(qs), K), np.nan), np.full((len(qs), K), np.nan)
    raw = np.zeros((max(len(qs) - 1, 0), K, K))
    previous = None     # the last instant's shapes in velocity coordinates (n_v + motors, K)
    # Large robots with rigid transmissions: the closed loop on the joints' saddle point
    # (servo_stepping._Sparse.closed, about linear in the model); else the dense plant.
    ev = Evaluator(model)
    # The free motions (struts spinning) stay free under the servos: double zero eigenvalues,
    # which both paths leave out.
    free = free_motions(ev, qs[0]) if len(qs) else 0
    fast = (servo_stepping.sparse_structure(ev, servo, damping, modal, qs[0], K, servo_stepping.CLOSED_MIN, free)
            if len(qs) else None)
    with progress(len(qs), "frequencies: servo modes") as bar:
        for i, q in enumerate(qs):
            got = None if fast is None else _sparse_instant(fast, ev, q, time[i], K, previous)
            if got is None:
                frame = modal.modal(time[i]) if isinstance(modal, Schedule) else None
                got = _dense_instant(model, q, servo, damping, frame, K, previous, free)
            freq, ratio, previous, mac = got
            f[i, :freq.size], z[i, :freq.size] = freq, ratio
            if mac is not None:
                raw[i - 1] = mac
            bar.update(1)
    order, macs = follow(raw)
    tracked = np.take_along_axis(f, order, axis=1)[:, :k]
    group.put("servo_frequencies", tracked, "Hz", "the lowest closed-loop natural frequencies |lambda| / 2 pi of "
              "the robot with its servo drives, column j = tracked mode j (identity kept by the MAC of the complex "
              "shapes; NaN: fewer complex modes)")
    group.put("servo_damping_ratios", np.take_along_axis(z, order, axis=1)[:, :k], "1",
              "their damping ratios -Re lambda / |lambda|")
    group.put("servo_frequencies_sorted", f[:, :k], "Hz", "the same, ascending at each instant")
    group.put("servo_mac_tracked", np.take_along_axis(macs, order[:, None, :], axis=2)[:, np.arange(k), np.arange(k)],
              "1", "mass-weighted MAC of each servo track between consecutive instants (1 = unchanged shape)")
    return {"servo_frequency_range_hz": (float(np.nanmin(tracked)), float(np.nanmax(tracked)))}


def _sparse_instant(fast, ev, q, t, count, previous):
    """The closed loop at ``q`` (time ``t``) on the joints' saddle point
    (:meth:`sim.solvers.servo_stepping._Sparse.closed`): frequencies [Hz] and damping ratios
    (j,), the shapes in the extended velocity coordinates (n_v + motors, count), zero beyond ``j``, and their MAC
    with the ``previous`` instant's (count, count; None at the first); None where Arnoldi does
    not converge (the instant goes to the dense plant).  The earlier shapes are projected on
    this instant's admissible motions (the dense path's ``N N^T``; the motors' coordinates as
    they are) and compared in its mass matrix with the rotors."""
    import scipy.sparse.linalg as splinalg

    from sim.solvers import servo_stepping
    from sim.solvers.modal import constraint_jacobian
    from sim.solvers.tracking import weighted_mac

    n_v = ev.model.n_v
    e = ev.evaluate(q, np.zeros(n_v))
    J = constraint_jacobian(ev.model, q, locked=False)
    try:
        lam, U = fast.closed(q, t, e, J, count)
    except (splinalg.ArpackNoConvergence, servo_stepping.SingularSaddle):
        return None
    X = np.zeros((fast.n_x, count), dtype=complex)
    X[:, :lam.size] = U
    mac = None
    if previous is not None:
        carried = previous.copy()
        carried[:n_v] -= J.T @ np.linalg.solve(J @ J.T, J @ previous[:n_v])
        mac = weighted_mac(carried, X, fast.mass(e, carried), fast.mass(e, X))
    return np.abs(lam) / (2 * np.pi), -lam.real / np.abs(lam), X, mac


def _dense_instant(model, q, servo, damping, modal, count, previous, free=0):
    """:func:`_sparse_instant`'s results by the dense plant on its null-space basis
    (:func:`sim.solvers.closed_loop.plant`, ``modal`` the locked structure's factors there;
    ``free`` the robot's free motions, left out: :func:`sim.solvers.closed_loop.modes`),
    the shapes in the extended velocity coordinates (n_v + motors, count): the earlier
    instant's are carried to this one's basis (``N`` is orthonormal: ``x' = N'^T N x``, the
    motors' coordinates as they are) and compared in its mass matrix, rotors included."""
    from sim.solvers.closed_loop import closed_loop, modes, plant
    from sim.solvers.tracking import weighted_mac

    p = plant(model, q, damping, modal)
    closed = modes(closed_loop(p, servo), free)
    j = min(count, closed.frequencies_hz.size)
    n = p.N.shape[1]
    X = np.zeros((p.M.shape[0], count), dtype=complex)
    X[:, :j] = closed.shapes[:, :j]
    mac = None
    if previous is not None:
        carried = np.concatenate([p.N.T @ previous[:model.n_v], previous[model.n_v:]])
        mac = weighted_mac(carried, X, p.M @ carried, p.M @ X)
    return (closed.frequencies_hz[:j], closed.damping_ratios[:j], np.concatenate([p.N @ X[:n], X[n:]]), mac)

