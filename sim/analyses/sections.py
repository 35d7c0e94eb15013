"""Subgroups ``section_forces`` and ``stress`` of the time-domain and static groups
(:mod:`sim.model.sections` holds the equations and conventions).

``section_forces/time`` (n,) and ``section_forces/<body>`` (n, n_nodes, 6): N, Vy, Vz, T, My,
Mz at each node of each flexible body, section frame (``section_forces/<body>_nodes`` (n_nodes,
3): the nodes in the body frame); ``stress/<body>`` (n, n_nodes, 2): the
largest normal and von Mises stress in the section; ``stress/peak_von_mises`` (n, n_flex) the
largest over each body's nodes; ``stress/peak`` (n_flex,) with ``peak_time``, ``peak_node`` and
``peak_position`` (the node in the body frame): where and when.  Attribute ``stress_bodies``:
the flexible bodies' names (the ``flexible_body`` axis), ``stress_body_first_points`` the index of
each one's first node among the skeleton's points.
"""
import numpy as np

CHUNK = 256     # instants whose section forces are computed at once


def write(group, model, time, u, what):
    """Write the two subgroups; the summary entry: the largest von Mises stress, where and when.

    Parameters
    ----------
    group : GroupWriter
    model : Model
    time : ndarray, shape (n,)
        Instants [s] (one, 0, for a static result).
    u : ndarray, shape (n, n_v)
        Displacements whose elastic part loads the sections
        (:func:`sim.model.sections.elastic_displacements` of configurations).
    what : str
        What ``u`` is, for the descriptions.

    Returns
    -------
    dict
    """
    from sim.model.kinematics import body_point_starts
    from sim.model.sections import UNITS, flexible_bodies, section_forces, stresses

    bodies = flexible_bodies(model)
    if not bodies:
        return {}
    for sub in ("section_forces", "stress"):
        group.put(f"{sub}/time", time, "s", f"instants of the {sub.replace('_', ' ')}", dims=("time",))
    peaks, peak_normal, at = [], [], []
    for b in bodies:
        body = model.bodies[b]
        F = np.empty((len(u), len(body.nodes_B), 6))
        span = model.v_slice(b)
        elastic = np.arange(span.start + 6, span.stop)
        for k in range(0, len(u), CHUNK):    # (the elements' ends' forces of every instant at once: 90 MB)
            F[k:k + CHUNK] = section_forces(body, u[k:k + CHUNK, elastic])
        normal, mises = stresses(body, F)
        node_dim = f"{body.name}_node"
        group.put(f"section_forces/{body.name}", F, list(UNITS),
                  "section forces N, Vy, Vz, T, My, Mz at each node of the body, in the section frame (x along the "
                  "element, y, z its principal axes): the force and moment the part beyond the section exerts on "
                  f"the part before it (N > 0 in tension), element stiffness times {what}",
                  dims=("time", node_dim, "section_force"))
        group.put(f"section_forces/{body.name}_nodes", body.nodes_B, "m", "the body's nodes in its frame (undeformed)",
                  dims=(node_dim, "component"))
        group.put(f"stress/{body.name}", np.stack([normal, mises], axis=-1), "Pa",
                  "largest normal stress |N|/A + bending and von Mises stress (with the torsion stress) in the "
                  "section at each node (sim.model.sections)", dims=("time", node_dim, "stress"))
        peaks.append(mises.max(axis=1))
        peak_normal.append(normal.max(axis=1))
        k, n = np.unravel_index(np.argmax(mises), mises.shape)
        at.append((mises[k, n], time[k], n, body.nodes_B[n]))
    dims = ("time", "flexible_body")
    group.put("stress/peak_von_mises", np.array(peaks).T, "Pa",
              "largest von Mises stress over each flexible body's nodes (attribute stress_bodies)", dims=dims)
    group.put("stress/peak_normal", np.array(peak_normal).T, "Pa",
              "largest normal stress over each flexible body's nodes", dims=dims)
    group.put("stress/peak", np.array([a[0] for a in at]), "Pa", "largest von Mises stress of each flexible body "
              "over the run", dims=("flexible_body",))
    group.put("stress/peak_time", np.array([a[1] for a in at]), "s", "when", dims=("flexible_body",))
    group.put("stress/peak_node", np.array([a[2] for a in at]), "1", "where: the node", dims=("flexible_body",))
    group.put("stress/peak_position", np.array([a[3] for a in at]), "m", "where: the node in the body frame",
              dims=("flexible_body", "component"))
    names = [model.bodies[b].name for b in bodies]
    group.attrs["stress_bodies"] = names
    # Where each body's nodes are among the skeleton's points (sim export puts the forces there).
    group.attrs["stress_body_first_points"] = [int(body_point_starts(model)[b]) for b in bodies]
    w = int(np.argmax([a[0] for a in at]))
    peak, t, n, x = at[w]
    when = f", t = {t:.4g} s" if len(time) > 1 else ""
    return {"peak_von_mises_stress": f"{peak / 1e6:.4g} MPa in {names[w]} at node {n} "
                                     f"({', '.join(f'{c:.3g}' for c in x)} m in its frame){when}"}
