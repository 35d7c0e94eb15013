"""The robot's skeleton over time, stored by the time-domain groups for ``sim animate``.

Subgroup ``skeleton`` of ``transient`` and ``ked``: ``segments`` (n_s, 2), ``points`` (n_t, n_p, 3)
of the flexible robot and ``points_rigid`` (n_t, n_p, 3) of the rigid robot at the group's
output instants (:func:`sim.model.kinematics.skeleton` gives the points and segments).  The
two point datasets hold at most :data:`MAX_VALUES` numbers together; a longer run keeps every
k-th instant, stores them as ``skeleton/time`` and says so in the group attribute
``skeleton_every`` (k; 1: every output instant).  ``skeleton_end_effector_point``: the index of
the end-effector marker's point.
"""
import numpy as np

MAX_VALUES = 20_000_000   # numbers in points and points_rigid together (160 MB of float64)


def point_count(model):
    """Number of skeleton points ``n_p``: the flexible bodies' nodes, the other markers."""
    flexible = [b for b, body in enumerate(model.bodies) if body.flexible]
    nodes = sum(len(model.bodies[b].nodes_B) for b in flexible)
    return nodes + int(np.sum(~np.isin(model.marker_body, flexible)))


def stride(model, n_t):
    """Keep every ``stride``-th of ``n_t`` instants so that the skeleton fits :data:`MAX_VALUES`."""
    per_instant = 2 * 3 * point_count(model)
    return max(1, int(np.ceil(n_t * per_instant / MAX_VALUES)))


def write(group, model, time, every, points, points_rigid, how, own_time=False, how_rigid=None):
    """Write subgroup ``skeleton`` of a time-domain group.

    Parameters
    ----------
    group : GroupWriter
        Holds the group's ``time`` (n,) already.
    model : Model
    time : ndarray, shape (n,)
        The group's output instants [s].
    every : int
        The points are at ``time[::every]`` (:func:`stride`).
    points, points_rigid : ndarray, shape (n_t, n_p, 3)
        Flexible and rigid robot [m], world frame.
    how : str
        How the flexible points were obtained, for their description.
    how_rigid : str, optional
        How the rigid points were obtained, where not exactly at the rigid configurations.
    own_time : bool
        ``time`` is not the group's ``time`` (KED's frames between denser output instants):
        the skeleton gets its own.
    """
    from sim.model.kinematics import marker_points, skeleton

    dims = ("time", "point", "component")
    if every > 1 or own_time:
        group.put("skeleton/time", time[::every], "s",
                  "instants of the skeleton" + (" (KED's interval ends)" if own_time else "") +
                  (f": every {every}th {'interval end' if own_time else 'output instant'} (the skeleton is "
                   f"limited to {MAX_VALUES:.0e} numbers)" if every > 1 else ""),
                  dims=("time",))
    group.put("skeleton/segments", skeleton(model, model.q_home)[1], "1", "pairs of point indices joined by a line",
              dims=("segment", "end"))
    group.put("skeleton/points", points, "m", "points drawing the flexible robot (flexible-body nodes, rigid-body "
              f"and ground markers), world frame: {how}", dims=dims)
    group.put("skeleton/points_rigid", points_rigid, "m",
              "the same points on the rigid robot (elastic coordinates zero, the rigid reference motion)" +
              (f": {how_rigid}" if how_rigid else ""), dims=dims)
    group.attrs["skeleton_every"] = int(every)
    group.attrs["skeleton_end_effector_point"] = int(marker_points(model)[model.ee_marker])
