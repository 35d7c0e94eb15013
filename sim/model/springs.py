r"""Lumped compliance of a model: 6x6 springs between markers and compliant actuators.

The equations are the compiled kernels of :mod:`sim.kernels.springs`, which the compiled
evaluation (:func:`sim.kernels.equations.evaluate`) calls for the forces, stiffness and damping;
the functions here give the springs' deflections and the rows of the deforming directions,
from the marker kinematics of :func:`sim.model.kinematics.markers`.
"""
import numpy as np

from sim.kernels import springs as kernel
from sim.model.constraints import actuator_values
from sim.model.kinematics import markers


def deflections(model, ms):
    """Spring deflections ``d`` (n_s, 6) and Jacobians ``J_d`` (n_s, 6, n_v) at the marker
    state ``ms`` (:func:`sim.model.kinematics.markers`)."""
    t = model.spring_tables
    n_s = len(model.springs)
    d, Jd = np.zeros((n_s, 6)), np.zeros((n_s, 6, model.n_v + 1))
    if not n_s:
        return d, Jd[..., :-1]
    k = ms.data
    cols = ms.tables.cols
    loc = np.empty((6, 2, cols.shape[1]))
    for s in range(n_s):
        i, j = t["mi"][s], t["mj"][s]
        kernel.deflection(i, j, ms.tables.sp_home[s], k.p, k.A, k.Jp, k.Ja, k.Jw, d[s], loc)
        for side, m in enumerate((i, j)):
            np.add.at(Jd[s], (slice(None), cols[m]), loc[:, side])    # column -1: the padding
    return d, Jd[..., :-1]


def deformation_rows(model, q, J_s=None, elastic=True):
    """Rows (n_d, n_v) whose null space is the motion without any deformation.

    Elastic coordinates (without ``elastic``: not these rows), the stiff directions of every
    lumped spring and the coordinates of the compliant actuators, each row of unit scale, so
    that a rank decision on them does not depend on the stiffness values.  ``J_s`` (n_a,
    n_v): the actuator Jacobian, if at hand.
    """
    rows = [np.eye(model.n_v)[model.v_elastic] if elastic else np.zeros((0, model.n_v))]
    if model.springs:
        _, Jd = deflections(model, markers(model, q))
        for K6, J in zip(model.spring_tables["K"], Jd):
            lam, U = np.linalg.eigh(0.5 * (K6 + K6.T))
            rows.append(U[:, lam > 1e-12 * max(lam.max(), 1e-300)].T @ J)
    mask = np.array([a.stiffness is not None for a in model.actuators], dtype=bool)
    if mask.any():
        rows.append((actuator_values(model, q)[1] if J_s is None else J_s)[mask])
    return np.vstack(rows)
