r"""Mobility of a robot with its actuators locked: the free motions, named.

With the actuators locked, the constrained motions are ``v = N x``, ``N`` a basis of the null
space of the joint and locked-drive rows ``C_q``.  The free motions are those among them that
deform nothing: no elastic coordinate, no lumped spring and no compliant drive moves
(``D N z = 0`` for the deformation rows ``D`` of :func:`sim.model.springs.deformation_rows`,
each of unit scale, so the decision does not depend on the stiffness values).  Such a motion
costs no energy: the robot can drift along it under any load.

A free motion is harmless when it leaves the end effector where it is (a strut spinning about
its axis between two spherical joints); one that moves the end effector means the motors do
not fix the end effector's pose -- a Delta whose forearms are single rods ball-jointed at both
ends lets its platform turn -- and every analysis that follows a prescribed end-effector
motion (KED, frequencies along a path, the transient under prescribed drives, inverse
dynamics) has no answer for it.  Such robots are refused by :func:`require_determined`
unless the model declares the motions intended
(:meth:`sim.model.builder.ModelBuilder.declare_free_motions`).
"""
from dataclasses import dataclass

import numpy as np

from sim.errors import SimError
from sim.linalg import null_space, svd
from sim.model.constraints import constraints
from sim.model.kinematics import pose_jacobian
from sim.model.springs import deformation_rows

NULL_RTOL = 1e-10      # singular values of C_q below this (relative) span its null space
FREE_RTOL = 1e-9       # singular values of the deformation rows below this (relative): free motions
MOVES_TOL = 1e-7       # end-effector change [m or rad] per unit motion above which it moves
SHARE_TOL = 1e-6       # a body's part of a unit motion above which it moves
NOT_FIXED = ("the actuators do not fix the end effector: the analyses that follow its motion (KED, frequencies, "
             "inverse dynamics, the transient under prescribed drives) refuse this robot; "
             "ModelBuilder.declare_free_motions declares such motions intended")


@dataclass(frozen=True)
class FreeMotions:
    """The free motions of a robot at one configuration, actuators locked.

    Attributes
    ----------
    moving : ndarray, shape (n_v, k_m)
        Orthonormal basis (velocity coordinates) of the free motions that move the end
        effector.
    internal : ndarray, shape (n_v, k_i)
        Orthonormal basis of those that leave it in place.
    coordinates : tuple of str
        End-effector coordinates the ``moving`` motions change.
    lines : tuple of str
        One description per group, for ``sim model``, ``sim modes`` and the errors.
    """

    moving: np.ndarray
    internal: np.ndarray
    coordinates: tuple
    lines: tuple

    @property
    def count(self):
        """Number of free motions."""
        return self.moving.shape[1] + self.internal.shape[1]


def free_basis(model, q, N, J_s=None):
    """The free motions in ``N``'s coordinates: ``Z`` (n_N, k), orthonormal, ``D N Z = 0``.

    ``N`` (n_v, n_N): a basis of the constrained motions at ``q``; ``J_s`` (n_a, n_v): the
    actuator Jacobian, if at hand (:func:`sim.model.springs.deformation_rows`).
    """
    D = deformation_rows(model, q, J_s) @ N
    return null_space(D, FREE_RTOL) if D.size else np.eye(N.shape[1])


def free_motions(model, q=None):
    """The free motions of ``model`` at ``q`` (default: home), actuators locked, named.

    Returns
    -------
    FreeMotions
    """
    q = model.q_home if q is None else q
    rigid = model.v_rigid
    N, Z = _reference_free(model, q)
    R = np.zeros((model.n_v, Z.shape[1]))
    if Z.shape[1]:
        R[rigid] = np.linalg.qr(N @ Z)[0]
    J_x = pose_jacobian(model, q)[1]
    U, s, Vt = np.linalg.svd(J_x @ R) if R.shape[1] else (None, np.zeros(0), np.zeros((0, 0)))
    k_m = int(np.sum(s > MOVES_TOL))
    moving, internal = R @ Vt[:k_m].T, R @ Vt[k_m:].T
    change = np.abs(J_x @ moving)
    coordinates = tuple(n for n, c in zip(model.pose_names, change.max(axis=1, initial=0.0)) if c > MOVES_TOL)
    lines = []
    if k_m:
        lines.append(f"{k_m} free motion{'s' * (k_m > 1)} move{'s' * (k_m == 1)} the end effector "
                     f"({', '.join(coordinates)}): {', '.join(_moved(model, moving))}")
    lines += _internal_lines(model, internal)
    return FreeMotions(moving, internal, coordinates, tuple(lines))


def free_count(model, q, J=None, J_s=None):
    """The number of free motions of ``model`` at ``q``, actuators locked (:func:`free_motions`'
    count, without naming them; linear in the model).  ``J`` (n_c, n_v): the joint and locked
    drives' rows, ``J_s`` (n_a, n_v) the actuator Jacobian, if at hand."""
    return _reference_free(model, q, J, J_s)[1].shape[1]


def _reference_free(model, q, J=None, J_s=None):
    """The free motions at ``q`` among the reference motions: ``N`` (n_r, k) an orthonormal
    basis of the bodies' reference motions (``model.v_rigid``'s columns) the rows ``J`` (as
    :func:`free_count`'s; default: the joints' and all actuators') leave free, and ``Z`` (k,
    k_f) those of them the other deformation rows leave free too, in ``N``'s coordinates.

    A free motion moves no elastic coordinate: it is one of the bodies' reference motions (6
    a body) that the rows and the other deformation rows leave free, found among those
    columns alone (the same motions as :func:`free_basis`'s; no n_v x n_v basis)."""
    rigid = model.v_rigid
    if J is None:
        J = constraints(model, q, targets=np.zeros(len(model.actuators)))[1]
    N = null_space(J[:, rigid], NULL_RTOL)
    D = deformation_rows(model, q, J_s, elastic=False)[:, rigid] @ N
    if not D.size:
        return N, np.eye(N.shape[1])
    # Rows of unit scale: the rank relative to 1, as free_basis's with its elastic rows (a D
    # that is round-off, its rows among J's -- a compliant drive locked -- has none).
    _, s, Vt = svd(D, full_matrices=True)
    rank = int(np.sum(s > FREE_RTOL * max(s[0], 1.0)))
    return N, Vt[rank:].T


def _moved(model, basis):
    """Names of the bodies a motion ``basis`` (n_v, k) moves."""
    share = [np.linalg.norm(basis[model.v_slice(b)][:6]) for b in range(len(model.bodies))]
    return [model.bodies[b].name for b, x in enumerate(share) if x > SHARE_TOL]


def _internal_lines(model, basis):
    """Descriptions of the free motions ``basis`` (n_v, k) that leave the end effector in
    place: those of one body alone (a strut's spin about its axis), then the rest."""
    k = basis.shape[1]
    alone = {}
    for b in range(len(model.bodies)):
        others = np.ones(model.n_v, dtype=bool)
        others[model.v_slice(b)] = False
        # the count only: numpy's singular values of the tall (n_v, k) rows (a null-space basis
        # of that many rows would import scipy.linalg, a tenth of a second of a small run)
        s = np.linalg.svd(basis[others], compute_uv=False)
        n = k - int(np.sum(s > 1e-8 * s[0])) if s.size and s[0] > 0 else k
        if n:
            alone[model.bodies[b].name] = n
    lines = []
    if alone:
        n = sum(alone.values())
        each = ", ".join(name if c == 1 else f"{name} ({c})" for name, c in alone.items())
        lines.append(f"{n} free motion{'s' * (n > 1)}, each of one body alone, leave{'s' * (n == 1)} the end "
                     f"effector in place: {each}")
    rest = k - sum(alone.values())
    if rest > 0:
        lines.append(f"{rest} free motion{'s' * (rest > 1)} leave{'s' * (rest == 1)} the end effector in place: "
                     f"{', '.join(_moved(model, basis))}")
    return lines


def require_determined(model):
    """Raise unless the actuators fix the end effector's pose of ``model`` (or the model
    declares the free motions that move it intended).

    Raises
    ------
    SimError
        Naming the free motions that move the end effector and how to declare them.
    """
    mob = model.mobility
    if mob is None or not mob.moving.shape[1] or model.free_motions_declared == mob.moving.shape[1]:
        return
    k = mob.moving.shape[1]
    declared = model.free_motions_declared
    said = f" (the model declares {declared})" if declared else ""
    raise SimError(f"the actuators of `{model.name}` do not fix its end effector: {mob.lines[0]}{said}; "
                   f"a motion that follows the end effector has no answer: add the joints that hold it, or "
                   f"declare the motions intended (ModelBuilder.declare_free_motions({k}, why))")
