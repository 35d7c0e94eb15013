r"""Cartesian stiffness of the end effector at a configuration, actuators locked.

The end effector's small displacement ``x = G v`` (d,) collects, for each of the model's
end-effector coordinates, the marker's translation along the world axis (``x``, ``y``, ``z``)
or its small rotation about the world axis (``rx``, ``ry``, ``rz``): rows of the marker's
origin and angular-velocity Jacobians (:func:`wrench_rows`).  Dually a wrench ``w`` (d,) --
forces [N] along and moments [N m] about those axes, applied at the marker -- does the
virtual work ``w . x``, i.e. the generalized load ``f = G^T w``.  With the static response
``u = S f`` of the locked structure (:func:`sim.solvers.modal.static_response`,
``S = N (N^T K N)^-1 N^T``):

    C = G S G^T   (d, d),        K_x = C^-1

``C`` is symmetric and positive semidefinite; it is definite when every end-effector
coordinate deforms something.  Its entries have the units ``[x_i] / [w_j]`` (m/N, rad/N,
m/(N m), rad/(N m)).  At zero angles the small rotations are the Tait-Bryan angles'
increments; elsewhere they are rotations about the world axes, not angle increments (they are
what a process wrench acts on, and the matrix stays symmetric).

The share of the compliance each deformable part carries follows from the strain energy of
the deflection under a unit wrench along coordinate ``j``: ``u_j^T K u_j = C_jj``, split into
each flexible body's ``u^T K_ff u``, each lumped spring's and each compliant drive's
(:func:`sim.solvers.modal.strain_energies`).

References
----------
C. Gosselin, "Stiffness mapping for parallel manipulators", IEEE Trans. Robotics and
Automation 6(3), 1990, 377-382.
"""
from dataclasses import dataclass

import numpy as np

from sim.model.dynamics import stiffness_matrix
from sim.model.kinematics import markers
from sim.solvers.modal import static_response, strain_energies

TRANSLATIONS = ("x", "y", "z")
ROTATIONS = ("rx", "ry", "rz")


@dataclass(frozen=True)
class StiffnessResult:
    """Cartesian compliance and stiffness at one configuration.

    Attributes
    ----------
    compliance : ndarray, shape (d, d)
        ``C`` in end-effector coordinates (see the module docstring).
    stiffness : ndarray, shape (d, d)
        ``C^-1``; NaN where ``C`` is singular (a coordinate that deforms nothing).
    units, stiffness_units : list of list of str
        Units of ``compliance[i][j]`` and ``stiffness[i][j]``.
    displacements : ndarray, shape (n_v, d)
        The deflection ``u_j`` under a unit wrench along each coordinate.
    shares : ndarray, shape (d, n_c)
        Fraction of ``C_jj`` (rows) carried by each deformable part (columns, ``parts``).
    parts : list of str
        Names of the deformable parts: flexible bodies, ``spring:<name>``, ``actuator:<name>``.
    """

    compliance: np.ndarray
    stiffness: np.ndarray
    units: list
    stiffness_units: list
    displacements: np.ndarray
    shares: np.ndarray
    parts: list


def wrench_rows(kinds, Jp, Jw):
    """Rows ``G`` (d, n_v): the end effector's translation along (``x``, ``y``, ``z``) and small
    rotation about (``rx``, ``ry``, ``rz``) the world axes, from the marker's origin and
    angular-velocity Jacobians ``Jp``, ``Jw`` (3, n_v), for the coordinates ``kinds``."""
    return np.array([Jp[TRANSLATIONS.index(k)] if k in TRANSLATIONS else Jw[ROTATIONS.index(k)] for k in kinds])


def load_units(kinds):
    """Unit of the load along each coordinate: N along a translation, N m about a rotation."""
    return ["N" if k in TRANSLATIONS else "N m" for k in kinds]


def _quantities(kinds):
    """Units of the displacement (m, rad) and of the load (N, N m) of each coordinate."""
    return ["m" if k in TRANSLATIONS else "rad" for k in kinds], load_units(kinds)


def _ratio(a, b):
    return f"{a}/{b}" if " " not in b else f"{a}/({b})"


def compliance_units(kinds):
    """Units (d, d) of ``C[i, j]``: displacement of coordinate ``i`` per load along ``j``."""
    moved, load = _quantities(kinds)
    return [[_ratio(a, b) for b in load] for a in moved]


def stiffness_units(kinds):
    """Units (d, d) of ``K_x[i, j]``: load along coordinate ``i`` per displacement of ``j``."""
    moved, load = _quantities(kinds)
    return [[_ratio(a, b) for b in moved] for a in load]


def compliance_matrix(G, U):
    """Symmetrised ``C = G U`` (d, d) from the rows ``G`` (d, n_v) and the deflections ``U``
    (n_v, d) under the unit wrenches ``G^T``."""
    C = G @ U
    return 0.5 * (C + C.T)


def inverse_or_nan(C):
    """``C^-1`` (d, d), or NaN when ``C`` is singular to round-off (a rigid direction)."""
    w = np.linalg.eigvalsh(C)
    if w.size == 0 or w[0] <= 1e-12 * max(w[-1], 0.0):
        return np.full_like(C, np.nan)
    return np.linalg.inv(C)


def stiffness(model, q, K=None):
    """Cartesian compliance and stiffness of the end effector at ``q``, actuators locked.

    Parameters
    ----------
    model : Model
    q : ndarray, shape (n_q,)
        An assembled configuration.
    K : ndarray, shape (n_v, n_v), optional
        Stiffness to use (default :func:`sim.model.dynamics.stiffness_matrix` at ``q``: the
        bodies, lumped springs, compliant drives and geometric stiffening).

    Returns
    -------
    StiffnessResult
    """
    K = stiffness_matrix(model, q) if K is None else K
    ms = markers(model, q)
    e = model.ee_marker
    G = wrench_rows(model.pose_kinds, ms.Jp[e], ms.Jw[e])
    U = static_response(model, q, G.T, K=K)
    C = compliance_matrix(G, U)
    parts, energy, _ = strain_energies(model, q, U, ms)
    shares = energy / np.maximum(energy.sum(axis=1, keepdims=True), 1e-300)
    return StiffnessResult(compliance=C, stiffness=inverse_or_nan(C), units=compliance_units(model.pose_kinds),
                           stiffness_units=stiffness_units(model.pose_kinds),
                           displacements=U, shares=shares, parts=parts)
