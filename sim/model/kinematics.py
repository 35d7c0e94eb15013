r"""Pure kinematics: body frames, marker poses with Jacobians, end-effector pose, sensors.

A marker ``M`` on body ``B`` sits at node ``n`` (or at a fixed point of a rigid body):

    p_WM = r_WB + R_WB (p_BM_B + D q_f),        a_W = R_WB (a_B + (E q_f) x a_B)

for each marker axis ``a_B`` (a column of ``R_BM``); ``D`` and ``E`` give the node's elastic
translation and small rotation.  With ``v_b = (v_WB_W, w_WB_B, q_f_dot)``:

    p_dot = v + R (w x u + D q_f_dot),          a_dot = R (w x a' + (E q_f_dot) x a_B)

and the velocity-quadratic parts of the accelerations (all accelerations zero), used for the
constraint right-hand side ``gamma``:

    p_ddot_q = R w x (w x u + 2 D q_f_dot),     a_ddot_q = R w x (w x a' + 2 (E q_f_dot) x a_B)
"""
from dataclasses import dataclass

import numpy as np

from sim.kernels import frames, markers as kernel, pose as pose_kernel
from sim.kernels.common import by_reference
from sim.kernels.equations import Tables, data
from sim.model.rotations import quat_to_matrix
from sim.model.sections import section_forces
from sim.model.sparse_rows import SparseRows
from sim.model.tables import tables

_BODY_Q, _BODY_V, _BODY_NF = (Tables._fields.index(f) for f in ("body_q", "body_v", "body_nf"))


def _starts(model):
    return np.array([s for s, _ in model.q_index], dtype=int), np.array([s for _, s in model.q_index], dtype=int)


def body_frames(model, q):
    """Body frames.  Returns ``r_WB`` (..., n_b, 3) and ``R_WB`` (..., n_b, 3, 3) for ``q`` (..., n_q)."""
    sq, _ = _starts(model)
    r = q[..., sq[:, None] + np.arange(3)]
    p = q[..., sq[:, None] + 3 + np.arange(4)]
    return r, quat_to_matrix(p)


def integrate(model, q, dv):
    """Configuration ``q ⊕ dv`` (n_q,): translations and elastic coordinates add, rotations
    compose, ``R_WB <- R_WB exp(skew(dw_B))``, the rotation increment being in body components
    (:func:`sim.kernels.frames.integrate`)."""
    t = model.kernel
    out = np.empty(model.n_q)
    frames.integrate(np.ascontiguousarray(q, dtype=float), np.ascontiguousarray(dv, dtype=float),
                     t[_BODY_Q], t[_BODY_V], t[_BODY_NF], out)
    return out


@dataclass(frozen=True)
class MarkerState:
    """Marker kinematics, entity axis first.

    ``p`` (n_m, 3) origins; ``A`` (n_m, 3, 3) axes as columns (world); ``Jp`` (n_m, 3, n_v),
    ``Ja`` (n_m, 3 axes, 3, n_v), ``Jw`` (n_m, 3, n_v) Jacobians of origin, axes and angular
    velocity; with velocities: ``pd``, ``Ad`` first derivatives (Ad[m, :, k] = axis k),
    ``pq``, ``Aq`` velocity-quadratic accelerations and ``wq`` (n_m, 3) the velocity-quadratic
    derivative ``R_WB (w_B x E q_f_dot)`` of the angular velocity.  ``tables``, ``data``: the
    kernels' records of the model and of the same kinematics with local Jacobians
    (:class:`sim.kernels.equations.Tables`, :class:`~sim.kernels.equations.Data`), for the
    kernels that take them.
    """

    p: np.ndarray
    A: np.ndarray
    Jp: np.ndarray
    Ja: np.ndarray
    Jw: np.ndarray
    pd: np.ndarray | None = None
    Ad: np.ndarray | None = None
    pq: np.ndarray | None = None
    Aq: np.ndarray | None = None
    wq: np.ndarray | None = None
    tables: tuple | None = None
    data: tuple | None = None


def _dense(local, cols, n_v):
    """Local Jacobians (n_m, ..., n_loc) on the columns ``cols`` (n_m, n_loc; -1: none) of
    ``v`` as dense ones (n_m, ..., n_v)."""
    n_m, n_loc = cols.shape
    flat = local.reshape(n_m, -1, n_loc)
    out = np.zeros(flat.shape[:2] + (n_v + 1,))
    out[np.arange(n_m)[:, None, None], np.arange(flat.shape[1])[None, :, None], cols[:, None, :]] = flat
    return out[..., :n_v].reshape(local.shape[:-1] + (n_v,))    # column -1 (none): the padding column n_v


def markers(model, q, v=None):
    """Poses, Jacobians and (with ``v``) rates of all markers; see the module docstring and
    :func:`sim.kernels.markers.markers`, which computes them.

    Returns
    -------
    MarkerState
    """
    t = tables(model)
    d = data(t)
    zero = v is None
    v = np.zeros(model.n_v) if zero else np.ascontiguousarray(v, dtype=float)
    kernel.markers(np.ascontiguousarray(q, dtype=float), v, by_reference(t), by_reference(d), False)
    Jp, Ja, Jw = (_dense(x, t.cols, model.n_v) for x in (d.Jp, d.Ja, d.Jw))
    if zero:
        return MarkerState(d.p, d.A, Jp, Ja, Jw, tables=t, data=d)
    return MarkerState(d.p, d.A, Jp, Ja, Jw, d.pd, d.Ad, d.pq, d.Aq, d.wq, t, d)


def pose(model, q, ms=None):
    """End-effector coordinates (d,) in the model's declared order (m, rad).

    ``ms`` needs only marker origins ``p`` (..., n_m, 3) and axes ``A`` (..., n_m, 3, 3) (any
    object with those arrays); with leading dimensions (samples), the result is (..., d).
    """
    ms = markers(model, q) if ms is None else ms
    e = model.ee_marker
    p, A = ms.p[..., e, :], np.ascontiguousarray(ms.A[..., e, :, :], dtype=float)
    angles = np.empty(A.shape[:-2] + (3,))
    pose_kernel.angles_of(A.reshape(-1, 3, 3), angles.reshape(-1, 3))
    return np.stack([p[..., "xyz".index(k)] if k in "xyz" else angles[..., ("rx", "ry", "rz").index(k)]
                     for k in model.pose_kinds], axis=-1)


def pose_jacobian(model, q, ms=None):
    """End-effector coordinates (d,) and their Jacobian (d, n_v)."""
    ms = markers(model, q) if ms is None else ms
    e = model.ee_marker
    return pose_terms(model.pose_kinds, ms.p[e], ms.A[e], ms.Jp[e], ms.Jw[e])[:2]


def pose_rates(model, q, v, ms=None):
    """End-effector coordinates (d,), Jacobian (d, n_v), rates (d,) and the velocity-quadratic
    part ``x_q`` (d,) of their second derivative: ``x_ddot = J a + x_q``."""
    ms = markers(model, q, v) if ms is None else ms
    e = model.ee_marker
    x, J, xq = pose_terms(model.pose_kinds, ms.p[e], ms.A[e], ms.Jp[e], ms.Jw[e], v, ms.pq[e], ms.wq[e])
    return x, J, J @ v, xq


def pose_codes(kinds):
    """Codes (d,) of end-effector coordinate names for :func:`sim.kernels.pose.pose_terms`."""
    return np.array([pose_kernel.KINDS.index(k) for k in kinds], dtype=np.int64)


def pose_terms(kinds, p, A, Jp, Jw, v=None, pq=None, wq=None, cols=None):
    """End-effector coordinates from the end-effector marker's kinematics
    (:func:`sim.kernels.pose.pose_terms`, which holds the equations).

    Parameters
    ----------
    kinds : tuple of str
        Coordinates, from x, y, z (origin) and rx, ry, rz (Z-Y-X Tait–Bryan angles of the axes).
    p : ndarray, shape (3,)
    A : ndarray, shape (3, 3)
        Marker origin and axes (columns) in world.
    Jp, Jw : ndarray, shape (3, n_v)
        Jacobians of the origin and of the world angular velocity (or (3, m) on the columns
        ``cols`` of ``v``: local Jacobians).
    v : ndarray, shape (n_v,), optional
    pq, wq : ndarray, shape (3,), optional
        Velocity-quadratic accelerations of the origin and of the angular velocity.
    cols : ndarray of int, shape (m,), optional
        Columns of ``v`` of local ``Jp``, ``Jw`` (-1: none); default: dense.

    Returns
    -------
    x : ndarray, shape (d,)
    J : ndarray, shape (d, n_v)
    x_q : ndarray, shape (d,), only with ``v``: ``x_ddot = J a + x_q``
    """
    n_v = Jp.shape[1] if cols is None else (v.size if v is not None else int(cols.max(initial=-1)) + 1)
    cols = np.arange(n_v, dtype=np.int64) if cols is None else cols
    return _pose_terms(kinds, p, A, Jp, Jw, cols, n_v, v, pq, wq)


def _pose_terms(kinds, p, A, Jp, Jw, cols, n_v, v=None, pq=None, wq=None):
    d = len(kinds)
    x, J, xq = np.zeros(d), np.zeros((d, n_v)), np.zeros(d)
    rates = v is not None
    zero = np.zeros(3)
    if cols.flags.writeable:    # read-only as the tables' (the evaluator's): one compilation of the kernel
        cols = cols.view()
        cols.setflags(write=False)
    marker = (np.ascontiguousarray(p, dtype=float), np.ascontiguousarray(A, dtype=float),
              np.ascontiguousarray(Jp, dtype=float), np.ascontiguousarray(Jw, dtype=float), cols,
              np.ascontiguousarray(pq, dtype=float) if rates else zero,
              np.ascontiguousarray(wq, dtype=float) if rates else zero)
    pose_kernel.pose_terms(pose_codes(kinds), marker, np.ascontiguousarray(v, dtype=float) if rates else np.zeros(n_v),
                           (x, J, xq), rates)
    return (x, J, xq) if rates else (x, J)


def sensor_values(model, q, ms=None):
    """Values (n_s,) of the model's sensors (..., n_s with sampled marker states, as
    :func:`pose`).

    ``deflection`` (markers a, m, b): distance of m from the chord a–b, signed along axis
    ``axis`` of marker a (made perpendicular to the chord).  ``joint`` (markers i, j): angle of
    x_j about z_i [rad].  ``section`` (marker m on a flexible body): section force ``axis`` (0..5:
    N, Vy, Vz, T, My, Mz) at m's node (:func:`sim.model.sections.section_forces`).
    """
    ms = markers(model, q) if ms is None else ms
    p, A = ms.p, ms.A
    out = []
    for s in model.sensors:
        if s.kind == "section":
            marker = model.markers[s.markers[0]]
            u_f = np.asarray(q, dtype=float)[..., model.q_slice(marker.body)][..., 7:]
            out.append(section_forces(model.bodies[marker.body], u_f)[..., marker.node, s.axis])
        elif s.kind == "deflection":
            a, m, b = s.markers
            chord = p[..., b, :] - p[..., a, :]
            e = chord / np.linalg.norm(chord, axis=-1, keepdims=True)
            axis = A[..., a, :, s.axis]
            n = axis - e * np.sum(e * axis, axis=-1, keepdims=True)
            n /= np.linalg.norm(n, axis=-1, keepdims=True)
            out.append(np.sum((p[..., m, :] - p[..., a, :]) * n, axis=-1))
        else:
            i, j = s.markers
            x_j = A[..., j, :, 0]
            out.append(np.arctan2(np.sum(x_j * A[..., i, :, 1], axis=-1), np.sum(x_j * A[..., i, :, 0], axis=-1)))
    return np.stack(out, axis=-1) if out else np.zeros(p.shape[:-2] + (0,))


def skeleton(model, q):
    """Points and segments that draw the robot.

    Points (:func:`skeleton_points`): every node of the flexible bodies, the markers of the
    rigid bodies and of the ground.  Segments: the beam elements, and on each rigid body its
    markers joined to the first one (joints need none: their two markers coincide).

    Returns
    -------
    p : ndarray, shape (n_p, 3)
        World positions [m].
    segments : ndarray of int, shape (n_s, 2)
    """
    segments, start = [], 0
    for b, body in enumerate(model.bodies):
        if body.flexible:
            segments += [(start + i, start + j) for i, j in body.elements]
            start += len(body.nodes_B)
        else:
            count = int(np.sum(model.marker_body == b))
            segments += [(start, start + k) for k in range(1, count)]
            start += count
    return skeleton_points(model, q), np.array(segments, dtype=int).reshape(-1, 2)


def _body_points(model, q):
    """Per body, the skeleton's points in its frame: ``(R_WB (..., 3, 3), r_WB (..., 3),
    p_BP_B (..., n, 3), D)``, ``D`` (3 n, n_f) the nodal translations of a flexible body's
    elastic coordinates by rows (:class:`sim.model.sparse_rows.SparseRows`; None for a rigid body)."""
    q = np.asarray(q, dtype=float)
    sq, _ = _starts(model)
    r_WB = q[..., sq[:, None] + np.arange(3)]                        # (..., n_b, 3)
    R_WB = quat_to_matrix(q[..., sq[:, None] + 3 + np.arange(4)])    # (..., n_b, 3, 3)
    for b, body in enumerate(model.bodies):
        D = None
        if body.flexible:
            rows = (6 * np.arange(len(body.nodes_B))[:, None] + np.arange(3)).ravel()
            D = SparseRows(body.basis.cols[rows], body.basis.values[rows], body.n_f)
            p_BP_B = body.nodes_B + D.apply(q[..., sq[b] + 7:sq[b] + 7 + body.n_f]).reshape(
                q.shape[:-1] + body.nodes_B.shape)
        else:
            p_BP_B = np.array([model.markers[m].p_BM_B for m in np.flatnonzero(model.marker_body == b)]).reshape(-1, 3)
        yield R_WB[..., b, :, :], r_WB[..., b, :], p_BP_B, D


def _ground_points(model, shape):
    ground = np.array([model.markers[m].p_BM_B for m in np.flatnonzero(model.marker_body < 0)]).reshape(-1, 3)
    return np.broadcast_to(ground, shape + ground.shape)


def skeleton_points(model, q):
    """The points of :func:`skeleton` (same order), for one or many configurations (moved by a
    displacement to first order: :func:`skeleton_motion`).

    Parameters
    ----------
    model : Model
    q : ndarray, shape (..., n_q)

    Returns
    -------
    p : ndarray, shape (..., n_p, 3)
        World positions [m]: ``p = r_WB + R_WB (p_BP_B + D q_f)`` for the flexible bodies'
        nodes, ``r_WB + R_WB p_BM_B`` for the rigid bodies' markers, ``p_WM`` of the ground's.
    """
    q = np.asarray(q, dtype=float)
    parts = [r[..., None, :] + local @ np.swapaxes(R, -1, -2) for R, r, local, _ in _body_points(model, q)]
    ground = _ground_points(model, parts[0].shape[:-2] if parts else q.shape[:-1])
    return np.concatenate(parts + [ground], axis=-2)


def _body_motion(body, sv, dv, R, local, D):
    """``J dv`` (..., n, 3) of one body's skeleton points (:func:`skeleton_motion`), from its
    :func:`_body_points` and its start ``sv`` in ``v``."""
    dv = np.asarray(dv, dtype=float)
    moved = np.cross(dv[..., None, sv + 3:sv + 6], local)
    if D is not None:
        moved = moved + D.apply(dv[..., sv + 6:sv + 6 + body.n_f]).reshape(dv.shape[:-1] + (-1, 3))
    return dv[..., None, sv:sv + 3] + moved @ np.swapaxes(R, -1, -2)


def skeleton_motion(model, q, dv):
    """Displacement of the points of :func:`skeleton` by ``dv`` to first order: the points'
    Jacobian applied without forming it, ``J dv = dr + R_WB (dtheta_B x p_BP + D dq_f)``.

    Parameters
    ----------
    q : ndarray, shape (..., n_q)
    dv : ndarray, shape (..., n_v)
        A displacement in velocity coordinates (body translations in world axes, rotations
        in body axes, elastic coordinates); a mode shape, say.

    Returns
    -------
    dp : ndarray, shape (broadcast of the leading dimensions, n_p, 3)
    """
    dv = np.asarray(dv, dtype=float)
    _, sv = _starts(model)
    parts = [_body_motion(model.bodies[b], sv[b], dv, R, local, D) for b, (R, _, local, D) in
             enumerate(_body_points(model, q))]
    shape = np.broadcast_shapes(np.shape(q)[:-1], dv.shape[:-1])
    parts = [np.broadcast_to(part, shape + part.shape[-2:]) for part in parts]
    return np.concatenate(parts + [np.zeros(shape + _ground_points(model, ()).shape)], axis=-2)


def skeleton_acceleration(model, q, v, a):
    """Accelerations of the points of :func:`skeleton` at the state ``(q, v)`` with the
    accelerations ``a``: :func:`skeleton_motion` of ``a`` and the terms quadratic in the
    velocities, ``R_WB (w x (w x p_BP_B) + 2 w x D dq_f)`` (``w`` the body's angular velocity in
    its frame, ``dq_f`` its elastic rates).

    Parameters
    ----------
    q : ndarray, shape (..., n_q)
    v, a : ndarray, shape (..., n_v)

    Returns
    -------
    ddp : ndarray, shape (broadcast of the leading dimensions, n_p, 3)
        [m/s^2], world frame.
    """
    q, v = np.asarray(q, dtype=float), np.asarray(v, dtype=float)
    _, sv = _starts(model)
    shape = np.broadcast_shapes(q.shape[:-1], v.shape[:-1], np.shape(a)[:-1])
    parts = []
    for b, (R, _, local, D) in enumerate(_body_points(model, q)):
        w = v[..., None, sv[b] + 3:sv[b] + 6]
        inner = np.cross(w, local)
        if D is not None:
            n_f = model.bodies[b].n_f
            inner = inner + 2.0 * D.apply(v[..., sv[b] + 6:sv[b] + 6 + n_f]).reshape(v.shape[:-1] + (-1, 3))
        part = np.cross(w, inner) @ np.swapaxes(R, -1, -2)
        parts.append(np.broadcast_to(part, shape + part.shape[-2:]))
    quadratic = np.concatenate(parts + [np.zeros(shape + _ground_points(model, ()).shape)], axis=-2)
    return skeleton_motion(model, q, a) + quadratic


def body_point_starts(model):
    """Index (n_b + 1,) of each body's first point among the points of :func:`skeleton` (its
    nodes on a flexible body, its markers on a rigid one), then of the ground's markers."""
    counts = [len(body.nodes_B) if body.flexible else int(np.sum(model.marker_body == b))
              for b, body in enumerate(model.bodies)]
    return np.concatenate([[0], np.cumsum(counts)]).astype(int)


def marker_points(model):
    """Index (n_m,) of each marker's origin among the points of :func:`skeleton`: its node on
    a flexible body, itself on a rigid body or the ground."""
    index = np.empty(len(model.markers), dtype=int)
    starts = body_point_starts(model)
    for b, body in enumerate(model.bodies):
        idx = np.flatnonzero(model.marker_body == b)
        index[idx] = starts[b] + (np.array([model.markers[m].node for m in idx], dtype=int) if body.flexible
                                  else np.arange(idx.size))
    idx = np.flatnonzero(model.marker_body < 0)
    index[idx] = starts[-1] + np.arange(idx.size)
    return index
