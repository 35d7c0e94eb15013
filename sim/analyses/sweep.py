"""Frequency or stiffness map over a grid of end-effector poses: group ``sweep``.

Table ``[sweep]``::

    axes = ["x", "y"]          # two end-effector coordinates spanning the grid
    x = [-0.2, 0.2, 50]        # per axis: [min, max, number of points]
    y = [-0.2, 0.2, 50]
    pose = [...]               # the other coordinates (default: home)
    count = 4                  # frequencies per pose
    analysis = "stiffness"     # map the end effector's compliance instead (sim.solvers.compliance)
    workers = 2                # processes (default: min(2, cores)); 1 runs in this process

The grid is walked row by row in snake order, each pose reached by Newton from a tangent
prediction off the neighbouring solved pose (usually one iteration), so the map costs about
one modal analysis per pose.  A pose that cannot be reached or is singular gets NaN
frequencies and ``mask = False``; it does not stop the map.  Rows are shared among processes
(:func:`sim.solvers.cases.run_cases`), each process rebuilding the model from its file.
"""
import os

import numpy as np

from sim.analyses import Quantity, register
from sim.errors import SimError

KEYS = ("axes", "pose", "count", "workers", "scheduler", "analysis")


def _grid(table, model, where):
    axes = table.get("axes")
    if not (isinstance(axes, list) and len(axes) == 2 and all(isinstance(a, str) for a in axes)):
        raise SimError(f"{where} `axes` must name two end-effector coordinates, e.g. [\"x\", \"y\"]")
    names = list(model.pose_names)
    for a in axes:
        if a not in names:
            raise SimError(f"{where} `axes`: unknown coordinate `{a}` (the model has {', '.join(names)})")
    unknown = set(table) - set(KEYS) - set(axes)
    if unknown:
        raise SimError(f"{where} unknown key `{min(unknown)}` (keys: {', '.join(KEYS)}, and one per axis)")
    values = []
    for a in axes:
        spec = table.get(a)
        if not (isinstance(spec, list) and len(spec) == 3 and all(isinstance(v, (int, float)) for v in spec)
                and spec[2] == int(spec[2]) and spec[2] >= 1):
            raise SimError(f"{where} `{a}` must be [min, max, number of points]")
        values.append(np.linspace(float(spec[0]), float(spec[1]), int(spec[2])))
    base = table.get("pose")
    base = np.asarray(model.pose_home if base is None else base, dtype=float)
    if base.shape != (len(names),):
        raise SimError(f"{where} `pose` needs {len(names)} values ({', '.join(names)})")
    count = table.get("count", 4)
    if not (isinstance(count, int) and count >= 1):
        raise SimError(f"{where} `count` must be a positive integer")
    workers = table.get("workers", min(2, os.cpu_count() or 1))
    if not (isinstance(workers, int) and workers >= 1):
        raise SimError(f"{where} `workers` must be a positive integer")
    return [names.index(a) for a in axes], values, base, count, workers


def _reach(model, pose, previous, ev):
    """Configuration (n_q,) at ``pose``, continued from ``previous`` = ``(q, pose)`` of the
    last solved pose, or from home when None.

    The grid step is a unit of time of the rigid motion along the straight line between the
    two poses: the predictor takes the line's velocity and acceleration at the last pose
    (second order) and the rigid motion's corrector (plain Newton steps,
    :func:`sim.solvers.motion.rigid_sample`) usually lands in one step; the line-search
    Newton and then the continuation from home are the fallbacks.
    """
    from sim.model.assembly import assemble, solve_pose
    from sim.solvers.motion import rigid_sample

    if previous is None:
        return solve_pose(model, pose, check=False)
    q0, pose0 = previous
    tangent = rigid_sample(model, q0, pose0, pose - pose0, ev=ev, condition=False)
    if tangent is not None:
        _, v, a, _ = tangent
        corrected = rigid_sample(model, ev.integrate(q0, v + 0.5 * a), pose, ev=ev, condition=False)
        if corrected is not None:
            return corrected[0]
    try:
        return assemble(model, q0, pose_target=pose, ev=ev)
    except SimError:
        return solve_pose(model, pose, q_start=q0, check=False)


def rows_frequencies(model_file, parameters, index, values, base, rows, count):
    """Frequencies of grid rows ``rows`` (snake order, continuation). One process's work.

    Returns
    -------
    ndarray, shape (len(rows), n_1, count)
        NaN where the pose is unreachable or singular.
    """
    return rows_map(model_file, parameters, index, values, base, rows, count, "modes")


def _frequencies(model, ev, count):
    """``measure(qs, ss) -> (n, count)`` frequencies [Hz] of the robot frozen at the
    configurations ``qs`` (n, n_q), actuators locked at ``ss`` (n, n_a), by the compiled frames
    of the KED (:func:`sim.solvers.frames.frames_at`: M and the tangent stiffness on their
    structure), each pose's search started from the last pose's modes (the snake order keeps
    them neighbours); 0 where the frozen robot has no positive stiffness."""
    from sim.solvers.frames import frames_at, free_motions
    from sim.solvers.subspace import Tracker

    tracker = Tracker(model, count, free_motions(model, model.q_home, ev))

    def measure(qs, ss):
        return frames_at(ev, qs, ss, count, tracker).omega / (2 * np.pi)
    return measure


def _compliance(model, ev):
    """``measure(qs, ss) -> (n, d * d)`` the end effector's Cartesian compliance (row-major,
    :mod:`sim.solvers.compliance`) at the configurations ``qs`` (n, n_q), actuators locked at
    ``ss`` (n, n_a)."""
    from sim.model.dynamics import stiffness_matrix
    from sim.solvers.modal import static_response
    from sim.solvers.compliance import compliance_matrix, wrench_rows
    from sim.solvers.start import held_structure

    held = held_structure(model, ev)     # large models: M and K_t on their structure, K sparse
    K_body, e, cols = held.K_body if held else stiffness_matrix(model), model.ee_marker, ev.tables.cols
    zero = np.zeros(model.n_v)

    def measure(qs, ss):
        out = np.empty((len(qs), len(model.pose_kinds) ** 2))
        for k, (q, s) in enumerate(zip(qs, ss)):
            locked = ev.evaluate(q, zero, targets=s, velocity_jacobian=ev.stiff, flush=False, markers=True,
                                 stores=held and held.fresh())
            # The marker's local Jacobians on their columns (-1: none, the padding column).
            Jp, Jw = (np.zeros((3, model.n_v + 1)) for _ in range(2))
            Jp[:, cols[e]], Jw[:, cols[e]] = locked.markers.Jp[e], locked.markers.Jw[e]
            G = wrench_rows(model.pose_kinds, Jp[:, :-1], Jw[:, :-1])
            K_t = locked.K_t if not held or locked.K_t is None else held.sparse(locked.K_t)
            K = K_body if K_t is None else K_body + K_t
            out[k] = compliance_matrix(G, static_response(model, q, G.T, K=K, J=locked.J, J_s=locked.J_s)).ravel()
        return out
    return measure


def rows_map(model_file, parameters, index, values, base, rows, count, analysis):
    """Frequencies (``analysis = "modes"``) or compliance (``"stiffness"``) of grid rows ``rows``
    (snake order, continuation). One process's work.

    Returns
    -------
    ndarray, shape (len(rows), n_1, count) or (len(rows), n_1, d * d)
        NaN where the pose is unreachable or singular.
    """
    from sim.model.assembly import SINGULAR_RATIO, conditioning
    from sim.model.evaluator import Evaluator
    from sim.model.loader import load_model

    model = load_model(model_file, parameters)
    ev = Evaluator(model)
    if analysis == "stiffness":
        measure, width = _compliance(model, ev), len(model.pose_kinds) ** 2
    else:
        measure, width = _frequencies(model, ev, count), count
    out = np.full((len(rows), values[1].size, width), np.nan)
    previous = None
    for r, i in enumerate(rows):
        columns = range(values[1].size) if r % 2 == 0 else range(values[1].size - 1, -1, -1)
        reached, qs, ss = [], [], []
        for j in columns:
            pose = base.copy()
            pose[index[0]], pose[index[1]] = values[0][i], values[1][j]
            try:
                q = _reach(model, pose, previous, ev)
                E = ev.kinematics(q, pose=True)
                if min(conditioning(model, E.J, E.J_s, E.J_x)) < SINGULAR_RATIO:
                    continue
            except SimError:
                continue
            previous = (q, pose)
            reached.append(j)
            qs.append(q)
            ss.append(E.s)
        if reached:     # the row's poses at once, in its order (actuators locked where they are)
            out[r, reached] = measure(np.array(qs), np.array(ss))
    return out


@register("sweep")
def run(model, scenario, group, progress):
    """Write group ``sweep``: the grid axes, frequencies (n_0, n_1, count) and mask (n_0, n_1).

    Returns
    -------
    dict
        Frequency range of the lowest mode over the reachable poses, and their number.
    """
    from sim.solvers.cases import run_cases

    if "parameters" in scenario.data["sweep"]:
        # The other kind of sweep: any analysis over a grid of model parameters.
        from sim.analyses.parameter_sweep import run_parameter_grid
        return run_parameter_grid(model, scenario, group, progress)
    where = f"{scenario.path}: [sweep]"
    index, values, base, count, workers = _grid(scenario.data["sweep"], model, where)
    analysis = scenario.data["sweep"].get("analysis", "modes")
    n0 = values[0].size
    blocks = [b for b in np.array_split(np.arange(n0), min(workers, n0)) if b.size]
    cases = [(str(scenario.model_file), scenario.model_parameters, index, values, base, b.tolist(), count, analysis)
             for b in blocks]
    with progress(len(cases), "sweep: grid rows") as bar:
        scheduler = scenario.data["sweep"].get("scheduler") or ("serial" if workers == 1 else None)
        results = run_cases(rows_map, cases, scheduler=scheduler, workers=workers, progress=bar)
    failed = [r.error for r in results if not r.ok]
    if failed:
        raise SimError(f"{where} the map failed: {failed[0]}")
    values_map = np.concatenate([r.value for r in results], axis=0)
    mask = np.all(np.isfinite(values_map), axis=2)
    names = [model.pose_names[i] for i in index]
    for name, i, v in zip(names, index, values):
        group.put(name, v, model.pose_units[i], f"grid values of end-effector coordinate {name}")
    group.put("mask", mask, "1", "True where the pose was reached and regular")
    group.put("pose", base, list(model.pose_units), "fixed coordinates of the grid poses")
    group.attrs["axes"] = names
    group.attrs["pose_names"] = list(model.pose_names)
    group.attrs["analysis"] = analysis
    if analysis == "stiffness":
        return _write_compliance(model, group, values_map, mask, names)
    group.put("frequencies", values_map, "Hz",
              f"lowest {count} elastic frequencies at each grid pose ({names[0]} index, {names[1]} index, mode); "
              "NaN outside the workspace or at singular poses")
    if not mask.any():
        return {"reachable_poses": 0}
    f1 = values_map[..., 0][mask]
    return {"frequency_range_hz": (float(f1.min()), float(f1.max())), "reachable_poses": int(mask.sum())}


def _write_compliance(model, group, flat, mask, names):
    """Datasets of a stiffness map: ``compliance`` (n_0, n_1, d, d) from its row-major ``flat``
    (n_0, n_1, d * d), and the largest translational compliance (n_0, n_1); the summary."""
    from sim.solvers.compliance import TRANSLATIONS, compliance_units

    d = len(model.pose_kinds)
    C = flat.reshape(flat.shape[:2] + (d, d))
    group.put("compliance", C, [u for row in compliance_units(model.pose_kinds) for u in row],
              f"Cartesian compliance of the end effector at each grid pose ({names[0]} index, {names[1]} index, "
              "coordinate i, coordinate j), as group `stiffness`'s; NaN outside the workspace or at singular poses",
              dims=(names[0], names[1], "coordinate", "along"))
    t = [i for i, k in enumerate(model.pose_kinds) if k in TRANSLATIONS]
    if not t:
        return {"reachable_poses": int(mask.sum())}
    largest = np.full(mask.shape, np.nan)
    largest[mask] = np.linalg.eigvalsh(C[mask][:, t][:, :, t])[:, -1]
    group.put("largest_translational_compliance", largest, "m/N",
              "largest eigenvalue of the translational block of the compliance at each grid pose: the end "
              "effector's displacement per newton in its most compliant direction")
    if not mask.any():
        return {"reachable_poses": 0}
    return {"translational_compliance_range": Quantity((float(np.nanmin(largest)), float(np.nanmax(largest))), "m/N"),
            "reachable_poses": int(mask.sum())}
