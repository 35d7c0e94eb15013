r"""Constraint equations ``C(q, t) = 0``, the Jacobian ``C_q`` and ``gamma``, from joint primitives.

Every joint is a list of primitive rows between its markers i and j (table
:data:`sim.model.JOINT_ROWS`):

* ``point``: ``p_j - p_i`` (3 rows);
* ``dot``:   ``a_i . b_j`` (perpendicular axes);
* ``ddot``:  ``a_i . (p_j - p_i)`` (point on a plane; also the slide of a prismatic pair);
* ``angle``: ``atan2(x_j . y_i, x_j . x_i)``, the rotation of x_j about z_i (revolute drive).

Actuator rows follow the joint rows: ``s(q) - s_target``, for the rigid actuators only (a
compliant actuator is a spring, :mod:`sim.model.springs`).  ``gamma`` is the velocity-quadratic
part of ``-C_ddot`` (``C_q q_ddot = gamma`` for constant targets); a driving law adds its
second derivative ``s_target_ddot`` (see :func:`constraints`).
The rows are evaluated by the compiled kernel :func:`sim.kernels.rows.rows`.
"""
import numpy as np

from sim.kernels import rows as kernel
from sim.kernels.common import by_reference, wrap
from sim.model.kinematics import markers


def _eval(model, q, v, ms):
    """phi (n_rows,), J (n_rows, n_v), gamma (n_rows,) or None over all joint and actuator rows
    (:func:`sim.kernels.rows.rows`), from the marker state ``ms`` if given."""
    ms = markers(model, q, v) if ms is None else ms
    if v is not None and ms.pd is None:
        raise ValueError("constraints with velocities need the marker state at those velocities")
    n = model.rows["n_total"]
    phi, J, gamma, none = np.zeros(n), np.zeros((n, model.n_v)), np.zeros(n), np.zeros((0, 0))
    kernel.rows(by_reference(ms.tables), by_reference(ms.data), phi, J, gamma, none, False)
    return phi, J, (None if v is None else gamma)


def drive_residual(model, s, targets, angle=None):
    """``s - targets`` (n_a,), angles wrapped to (-pi, pi].

    ``angle`` (n_a,) bool: which actuators are angles, if the caller has the mask.
    """
    res = np.asarray(s, dtype=float) - np.asarray(targets, dtype=float)
    ang = np.array([a.kind == "angle" for a in model.actuators], dtype=bool) if angle is None else angle
    if ang.any():
        res[ang] = wrap(res[ang])
    return res


def constraints(model, q, v=None, targets=None, target_acc=None, ms=None, all_drives=False):
    """Joint and actuator constraints at ``q``.

    Parameters
    ----------
    q : ndarray, shape (n_q,)
    v : ndarray, shape (n_v,), optional
        With velocities, ``gamma`` is returned too.
    targets : ndarray, shape (n_a,), optional
        Actuator targets [rad or m]; ``None`` leaves the actuator rows out (actuators free).
    target_acc : ndarray, shape (n_a,), optional
        Second time derivative of the targets, added to the actuator rows of ``gamma``.
    all_drives : bool
        Keep the rows of the compliant actuators too (the rigid robot: assembly, inverse
        kinematics and dynamics); by default they are springs, not constraints.

    Returns
    -------
    phi : ndarray, shape (n_c,)
    J : ndarray, shape (n_c, n_v)
    gamma : ndarray, shape (n_c,), only when ``v`` is given
    """
    phi, J, gamma = _eval(model, q, v, ms)
    return select(model, phi, J, gamma, targets, target_acc, all_drives)


def select(model, phi, J, gamma, targets=None, target_acc=None, all_drives=False):
    """The rows :func:`constraints` returns, from all joint and actuator rows ``phi`` (n_rows,),
    ``J`` (n_rows, n_v) and ``gamma`` (n_rows,, or None); arguments as there."""
    nj = model.rows["n_joint"]
    if targets is None:
        phi, J = phi[:nj], J[:nj]
        gamma = None if gamma is None else gamma[:nj]
    else:
        phi = np.concatenate([phi[:nj], drive_residual(model, phi[nj:], targets)])
        if gamma is not None and target_acc is not None:
            gamma = gamma.copy()
            gamma[nj:] += target_acc
        compliant = np.array([a.stiffness is not None for a in model.actuators], dtype=bool)
        if compliant.any() and not all_drives:   # compliant drives are springs (sim.model.springs), not constraint rows
            keep = np.concatenate([np.ones(nj, dtype=bool), ~compliant])
            phi, J = phi[keep], J[keep]
            gamma = None if gamma is None else gamma[keep]
    return (phi, J) if gamma is None else (phi, J, gamma)


def actuator_values(model, q, ms=None, v=None):
    """Actuator coordinates (n_a,) [rad or m] and their Jacobian (n_a, n_v) -- of every
    actuator, rigid or compliant.  With ``v``, also ``gamma_s`` (n_a,): ``s_ddot = J_s a -
    gamma_s``."""
    phi, J, gamma = _eval(model, q, v, ms)
    nj = model.rows["n_joint"]
    return (phi[nj:], J[nj:]) if v is None else (phi[nj:], J[nj:], gamma[nj:])
