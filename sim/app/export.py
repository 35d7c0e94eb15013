"""``sim export``: a time-domain result's skeleton as a VTK time series for ParaView.

One VTK unstructured grid (``.vtu``, written by meshio) per stored skeleton instant -- the robot's
points (flexible bodies' nodes, rigid bodies' and ground markers) where the flexible robot is,
joined by lines (the beam elements, each rigid body's markers to its first) -- and the index
``<out>.vtu.series`` (ParaView's file-series JSON: each file with its time) that ParaView opens
as one time series.  Point data: ``deviation`` (3,) [m], the flexible minus the rigid robot's
point; on the flexible bodies' nodes ``section_forces`` (6,) N, Vy, Vz, T, My, Mz [N, N m] in the
section frame and ``normal_stress``, ``von_mises_stress`` [Pa] (:mod:`sim.model.sections`;
zero on the other points), each at the stored instant nearest the frame's.

The files are written into a new directory next to the output (``tempfile.mkdtemp``) and moved
into place (``os.replace``) once all are written, so that a failure leaves no partial series.
"""
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

from sim.errors import SimError

FORMATS = ("vtk",)
GROUPS = ("transient", "ked")        # the groups with a motion over time


def _section_data(path, group, time, n_points):
    """Point data (dict of name -> (n_f, n_points, ...)) of the section forces and stresses at
    the instants nearest ``time`` (n_f,); empty when the group has none."""
    from sim.app.results import _value, open_result

    with open_result(path) as handle:
        node = handle[group]
        if "section_forces" not in node or "stress" not in node:
            return {}
        names = [str(_value(n)) for n in np.atleast_1d(node.attrs.get("stress_bodies", []))]
        starts = np.atleast_1d(node.attrs.get("stress_body_first_points", []))
        stored = node["section_forces/time"][()]
        k = np.abs(stored[None, :] - np.asarray(time)[:, None]).argmin(axis=1)
        forces = np.zeros((len(time), n_points, 6))
        stress = np.zeros((len(time), n_points, 2))
        for name, start in zip(names, starts):
            F, S = node[f"section_forces/{name}"][()][k], node[f"stress/{name}"][()][k]
            forces[:, start:start + F.shape[1]] = F
            stress[:, start:start + S.shape[1]] = S
    return {"section_forces": forces, "normal_stress": stress[..., 0], "von_mises_stress": stress[..., 1]}


def export(path, group=None, out=None, fmt="vtk"):
    """Write a result group's skeleton over time as a VTK time series.

    Parameters
    ----------
    path : str or Path
        Result file.
    group : {"transient", "ked"}, optional
        Default: the first of them the file has with a skeleton.
    out : str or Path, optional
        The series index, ``*.vtu.series`` (default: ``RESULTS_<group>.vtu.series`` beside the
        result file); the frames ``<stem>_<k>.vtu`` go beside it.
    fmt : str
        ``"vtk"``.

    Returns
    -------
    series : Path
    frames : int

    Raises
    ------
    SimError
        Not a result file, no such group or one without a skeleton over time, an unknown format.
    """
    import meshio

    from sim.app.animate import load_motion

    path = Path(path)
    if fmt not in FORMATS:
        raise SimError(f"--format `{fmt}`: expected one of {', '.join(FORMATS)}")
    if group is not None and group not in GROUPS:
        raise SimError(f"--group `{group}`: expected one of {', '.join(GROUPS)} (a motion over time)")
    if out is not None and not str(out).endswith(".vtu.series"):
        raise SimError(f"--out {out}: the series index must end in .vtu.series")
    if group is None:
        from sim.app.results import open_result

        with open_result(path) as handle:
            group = next((g for g in GROUPS if g in handle and "skeleton" in handle[g]), None)
        if group is None:
            raise SimError(f"{path}: nothing to export: no {' or '.join(GROUPS)} group with skeleton data")
    motion = load_motion(path, group, frames=sys.maxsize)
    out = Path(out) if out else path.with_name(f"{path.stem}_{group}.vtu.series")
    stem = out.name[:-len(".vtu.series")]
    points = motion.rigid + motion.deflection
    data = _section_data(path, group, motion.time, points.shape[1])
    cells = [("line", motion.segments)]
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{stem}-", dir=out.parent))
    try:
        files = []
        for k, t in enumerate(motion.time):
            name = f"{stem}_{k:05d}.vtu"
            point_data = {"deviation": motion.deflection[k], **{key: value[k] for key, value in data.items()}}
            meshio.write(work / name, meshio.Mesh(points[k], cells, point_data=point_data))
            files.append({"name": name, "time": float(t)})
        (work / out.name).write_text(json.dumps({"file-series-version": "1.0", "files": files}))
        for f in files:
            os.replace(work / f["name"], out.parent / f["name"])
        os.replace(work / out.name, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out, len(files)
