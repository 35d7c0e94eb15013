r"""Lumped compliance of a model: 6x6 springs between markers and compliant actuators.

The equations are the compiled kernels of :mod:`sim.kernels.springs`; the functions here
allocate and call them with the dense marker Jacobians of :func:`sim.kinematics.markers`
(the compiled evaluator, :class:`sim.fast.Evaluator`, calls the same kernels with its local
ones).
"""
from typing import NamedTuple

import numpy as np

from .kernels import springs as kernel


class Lumped(NamedTuple):
    """Terms of the lumped springs and compliant actuators at one state.

    Attributes
    ----------
    Q : ndarray, shape (n_v,)
        Generalized forces.
    K : ndarray, shape (n_v, n_v)
        Linearised stiffness ``sum J_d^T K J_d + sum k J_s^T J_s``.
    C : ndarray, shape (n_v, n_v)
        Linearised damping ``-dQ/dv``.
    energy : float
        Potential of the springs [J] (the compliant actuators' depends on their targets and
        is not counted).
    """

    Q: np.ndarray
    K: np.ndarray
    C: np.ndarray
    energy: float


def compliant_mask(model):
    """Boolean (n_a,): actuators that are springs rather than constraints."""
    return np.array([a.stiffness is not None for a in model.actuators], dtype=bool)


def actuator_tables(model):
    """Compliant actuators: indices (n_c,), stiffness and damping (n_c,), angle flags (n_a,)."""
    idx = np.flatnonzero(compliant_mask(model)).astype(np.int64)
    acts = model.actuators
    return (idx, np.array([acts[a].stiffness for a in idx], dtype=float),
            np.array([acts[a].damping for a in idx], dtype=float),
            np.array([a.kind == "angle" for a in acts], dtype=bool))


def _local(model, ms):
    """Columns (n_m, n_loc) of each marker's body in ``v`` (-1: none) and the marker
    Jacobians of ``ms`` gathered on them: the kernels' local form (a spring touches two
    bodies, not all of ``v``)."""
    n_v = model.n_v
    cols = np.where((model.marker_vcols < n_v) & (model.marker_body >= 0)[:, None], model.marker_vcols, -1)
    safe = np.where(cols < 0, 0, cols)
    keep = cols >= 0
    Jp = np.where(keep[:, None], np.take_along_axis(ms.Jp, safe[:, None, :], axis=2), 0.0)
    Jw = np.where(keep[:, None], np.take_along_axis(ms.Jw, safe[:, None, :], axis=2), 0.0)
    Ja = np.where(keep[:, None, None], np.take_along_axis(ms.Ja, safe[:, None, None, :], axis=3), 0.0)
    return cols.astype(np.int64), Jp, Ja, Jw


def deflections(model, ms):
    """Spring deflections ``d`` (n_s, 6) and Jacobians ``J_d`` (n_s, 6, n_v) at the marker
    state ``ms`` (:func:`sim.kinematics.markers`)."""
    t = model.spring_tables
    n_s = len(model.springs)
    d, Jd = np.zeros((n_s, 6)), np.zeros((n_s, 6, model.n_v + 1))
    if not n_s:
        return d, Jd[..., :-1]
    cols, Jp, Ja, Jw = _local(model, ms)
    loc = np.empty((6, 2, cols.shape[1]))
    for s in range(n_s):
        i, j = t["mi"][s], t["mj"][s]
        kernel.deflection(i, j, t["d_home"][s], ms.p, ms.A, Jp, Ja, Jw, d[s], loc)
        for side, m in enumerate((i, j)):
            np.add.at(Jd[s], (slice(None), cols[m]), loc[:, side])    # column -1: the padding
    return d, Jd[..., :-1]


def lumped(model, ms, v=None, s=None, J_s=None, targets=None):
    """Forces, linearised stiffness and damping, and potential of the lumped springs and
    compliant actuators.

    Parameters
    ----------
    ms : MarkerState
        :func:`sim.kinematics.markers` at ``q``.
    v : ndarray, shape (n_v,), optional
        Velocities (default zero).
    s, J_s : ndarray, shapes (n_a,), (n_a, n_v), optional
        Actuator values and Jacobian (:func:`sim.constraints.actuator_values`); needed for
        the compliant actuators' stiffness and damping, and with ``targets`` for their forces.
    targets : ndarray, shape (n_a,), optional
        What the compliant actuators pull towards (none: no actuator forces).

    Returns
    -------
    Lumped
    """
    n = model.n_v
    v = np.zeros(n) if v is None else np.ascontiguousarray(v, dtype=float)
    Q, K, G = np.zeros(n), np.zeros((n, n)), np.zeros((n, n))
    energy = 0.0
    if model.springs:
        t = model.spring_tables
        cols, Jp, Ja, Jw = _local(model, ms)
        energy = kernel.springs(t["mi"].astype(np.int64), t["mj"].astype(np.int64), t["K"], t["C"], t["d_home"],
                                cols, ms.p, ms.A, Jp, Ja, Jw, v, Q, G, K, True, True)
    idx, k, c, angle = actuator_tables(model)
    if idx.size and J_s is not None:
        Q_a = np.zeros(n)
        kernel.actuator_springs(idx, k, c, angle, np.zeros(angle.size) if s is None else s,
                                np.ascontiguousarray(J_s), np.zeros(angle.size) if targets is None else
                                np.asarray(targets, dtype=float), v, Q_a, G, K, True, True)
        if targets is not None and s is not None:
            Q += Q_a
    return Lumped(Q, K, -G, energy)
