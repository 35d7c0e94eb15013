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


def _dense_cols(model):
    return np.tile(np.arange(model.n_v, dtype=np.int64), (len(model.markers), 1))


def deflections(model, ms):
    """Spring deflections ``d`` (n_s, 6) and Jacobians ``J_d`` (n_s, 6, n_v) at the marker
    state ``ms`` (:func:`sim.kinematics.markers`)."""
    t = model.spring_tables
    n_s = len(model.springs)
    d, Jd = np.zeros((n_s, 6)), np.zeros((n_s, 6, model.n_v))
    loc = np.empty((6, 2, model.n_v))
    home = t["d_home"] if n_s else None
    for s in range(n_s):
        kernel.deflection(t["mi"][s], t["mj"][s], home[s], ms.p, ms.A, ms.Jp, ms.Ja, ms.Jw, d[s], loc)
        Jd[s] = loc[:, 0] + loc[:, 1]
    return d, Jd


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
        energy = kernel.springs(t["mi"].astype(np.int64), t["mj"].astype(np.int64), t["K"], t["C"], t["d_home"],
                                _dense_cols(model), ms.p, ms.A, np.ascontiguousarray(ms.Jp),
                                np.ascontiguousarray(ms.Ja), np.ascontiguousarray(ms.Jw), v, Q, G, K, True, True)
    idx, k, c, angle = actuator_tables(model)
    if idx.size and J_s is not None:
        Q_a = np.zeros(n)
        kernel.actuator_springs(idx, k, c, angle, np.zeros(angle.size) if s is None else s,
                                np.ascontiguousarray(J_s), np.zeros(angle.size) if targets is None else
                                np.asarray(targets, dtype=float), v, Q_a, G, K, True, True)
        if targets is not None and s is not None:
            Q += Q_a
    return Lumped(Q, K, -G, energy)
