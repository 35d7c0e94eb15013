"""Natural frequencies along the trajectory, tracked by MAC: group ``frequencies``.

Table ``[frequencies]``: ``count`` tracked modes at ``samples`` instants.  Two extra modes are
computed at every instant so that a tracked mode crossing the ``count``-th one is still found;
pairing uses the mass-weighted MAC with ``M`` of the later instant
(:func:`sim.solvers.tracking.track_modes`).
"""
import numpy as np

from sim.errors import SimError

from sim.analyses import register

EXTRA_MODES = 2   # modes computed beyond `count`, so that crossings at the top are followed


@register("frequencies")
def run(model, scenario, group, progress):
    """Write group ``frequencies``: frequency_time, frequencies (m, k) tracked, MAC and order.

    Returns
    -------
    dict
        ``{"frequency_range_hz": (lo, hi)}`` over the tracked modes.
    """
    from sim.model.evaluator import Evaluator
    from sim.solvers.ked import has_free_motions
    from sim.solvers.modal import locked_jacobian, modes
    from sim.solvers.motion import rigid_motion
    from sim.solvers.tracking import track_modes
    from sim.solvers.trajectory import from_scenario

    table = scenario.data["frequencies"]
    trajectory = from_scenario(scenario.data["trajectory"], model, f"{scenario.path}: [trajectory]")
    m, k = table["samples"], table["count"]
    time = np.linspace(0.0, trajectory.duration, m)
    with progress(m, "frequencies: rigid motion") as bar:
        motion = rigid_motion(model, trajectory, time, progress=bar, condition=False)
    free = has_free_motions(model, motion.q[0])
    ev = Evaluator(model)
    rest = np.zeros(model.n_v)
    omegas, shapes, masses = [], [], []
    with progress(m, "frequencies: modes") as bar:
        for q in motion.q:
            E = ev.evaluate(q, rest)     # M and the rows, compiled, in one evaluation
            M = E.M
            r = modes(model, q, k + EXTRA_MODES, M=M, free=free, energies=False,
                      J=locked_jacobian(model, E.J, E.J_s), J_s=E.J_s)
            omegas.append(r.omega)
            shapes.append(r.shapes)
            masses.append(M)
            bar.update(1)
    available = min(o.size for o in omegas)
    if available < k:
        raise SimError(f"{scenario.path}: [frequencies] count = {k} exceeds the {available} elastic modes "
                       f"of `{model.name}`")
    order, macs = track_modes(shapes, masses)
    omegas = np.array(omegas)
    tracked = np.take_along_axis(omegas, order, axis=1)[:, :k] / (2 * np.pi)
    group.put("frequency_time", time, "s", "sampling instants")
    group.put("frequencies", tracked, "Hz", "elastic frequencies, column j = tracked mode j (identity kept by MAC)")
    group.put("frequencies_sorted", omegas[:, :k] / (2 * np.pi), "Hz", "the same, ascending at each instant")
    group.put("mode_order", order, "1",
              f"column of the ascending modes (of {k + EXTRA_MODES} computed) that continues each track")
    group.put("mac", macs, "1", "mass-weighted MAC between the tracked shapes of the previous instant (rows) "
              "and the ascending shapes of this instant (columns), M of this instant")
    group.put("mac_tracked", np.take_along_axis(macs, order[:, None, :], axis=2)[:, np.arange(k), np.arange(k)],
              "1", "MAC of each track between consecutive instants (1 = unchanged shape)")
    group.put("pose_rigid", motion.pose, list(model.pose_units), "end-effector coordinates at the sampling instants")
    group.attrs["pose_names"] = list(model.pose_names)
    group.attrs["mac_metric"] = "mass-weighted, M(q) of the later instant"
    return {"frequency_range_hz": (float(tracked.min()), float(tracked.max()))}
