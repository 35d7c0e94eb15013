r"""Lumped compliance of a model: 6x6 springs between markers and compliant actuators.

The equations are the compiled kernels of :mod:`sim.kernels.springs`; the functions here
allocate and call them with the marker kinematics of :func:`sim.model.kinematics.markers` (their
local Jacobians), as the compiled evaluation (:func:`sim.kernels.equations.evaluate`) does.
"""
from typing import NamedTuple

import numpy as np

from sim.kernels import springs as kernel
from sim.model.constraints import actuator_values
from sim.model.kinematics import markers


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


def deflections(model, ms):
    """Spring deflections ``d`` (n_s, 6) and Jacobians ``J_d`` (n_s, 6, n_v) at the marker
    state ``ms`` (:func:`sim.model.kinematics.markers`)."""
    t = model.spring_tables
    n_s = len(model.springs)
    d, Jd = np.zeros((n_s, 6)), np.zeros((n_s, 6, model.n_v + 1))
    if not n_s:
        return d, Jd[..., :-1]
    k = ms.tables
    cols = k.cols
    loc = np.empty((6, 2, cols.shape[1]))
    for s in range(n_s):
        i, j = t["mi"][s], t["mj"][s]
        kernel.deflection(i, j, t["d_home"][s], k.p, k.A, k.Jp, k.Ja, k.Jw, d[s], loc)
        for side, m in enumerate((i, j)):
            np.add.at(Jd[s], (slice(None), cols[m]), loc[:, side])    # column -1: the padding
    return d, Jd[..., :-1]


def lumped(model, ms, v=None, s=None, J_s=None, targets=None):
    """Forces, linearised stiffness and damping, and potential of the lumped springs and
    compliant actuators.

    Parameters
    ----------
    ms : MarkerState
        :func:`sim.model.kinematics.markers` at ``q``.
    v : ndarray, shape (n_v,), optional
        Velocities (default zero).
    s, J_s : ndarray, shapes (n_a,), (n_a, n_v), optional
        Actuator values and Jacobian (:func:`sim.model.constraints.actuator_values`); needed for
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
        m = ms.tables
        energy = kernel.springs(m.sp_mi, m.sp_mj, m.sp_K, m.sp_C, m.sp_home, m.cols, m.p, m.A, m.Jp, m.Ja, m.Jw, v, Q,
                                Q[:0], G, K, True, True)
    idx, k, c, angle = ms.tables.ca_idx, ms.tables.ca_k, ms.tables.ca_c, ms.tables.angle
    if idx.size and J_s is not None:
        Q_a = np.zeros(n)
        kernel.actuator_springs(idx, k, c, angle, np.zeros(angle.size) if s is None else s,
                                np.ascontiguousarray(J_s), np.zeros(angle.size) if targets is None else
                                np.asarray(targets, dtype=float), v, Q_a, Q_a[:0], G, K, True, True)
        if targets is not None and s is not None:
            Q += Q_a
    return Lumped(Q, K, -G, energy)


def deformation_rows(model, q, J_s=None):
    """Rows (n_d, n_v) whose null space is the motion without any deformation.

    Elastic coordinates, the stiff directions of every lumped spring and the coordinates of
    the compliant actuators, each row of unit scale, so that a rank decision on them does not
    depend on the stiffness values.  ``J_s`` (n_a, n_v): the actuator Jacobian, if at hand.
    """
    rows = [np.eye(model.n_v)[model.v_elastic]]
    if model.springs:
        _, Jd = deflections(model, markers(model, q))
        for K6, J in zip(model.spring_tables["K"], Jd):
            lam, U = np.linalg.eigh(0.5 * (K6 + K6.T))
            rows.append(U[:, lam > 1e-12 * max(lam.max(), 1e-300)].T @ J)
    mask = np.array([a.stiffness is not None for a in model.actuators], dtype=bool)
    if mask.any():
        rows.append((actuator_values(model, q)[1] if J_s is None else J_s)[mask])
    return np.vstack(rows)
