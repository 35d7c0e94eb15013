r"""Frequency sensitivities and modal energy ratios (paper 002 §4.2-4.3; the ``[design]`` study).

Sensitivity of an elastic circular frequency to a model parameter ``p`` (paper 002 eq. 59),
for a simple eigenvalue with ``phi^T M phi = 1``:

    d omega_r / dp = (phi_r^T dK/dp phi_r - omega_r^2 phi_r^T dM/dp phi_r) / (2 omega_r),

with ``dK/dp`` and ``dM/dp`` central finite differences of the *matrices*: the model is rebuilt
with ``p (1 +- h)`` and re-assembled at the same end-effector pose, and must keep the same
coordinate layout.  The eigenproblem lives on the constrained subspace of the configuration
(actuators locked), which does not move with section, mass or stiffness parameters; for
parameters that move joints the formula misses the change of that subspace.  A repeated
frequency (a symmetric robot) has no derivative per mode: the branches' derivatives are the
eigenvalues of ``Phi^T (dK - omega^2 dM) Phi / (2 omega)`` over the group, sorted, which is
what is returned for such a group (the one-sided derivative of the sorted frequencies for an
increasing ``p``).

Energy ratios (paper 002 eq. 60-62): the modal kinetic energy ``omega^2 phi^T M_s phi / 2``
and elastic energy ``phi^T K_s phi / 2`` of each substructure ``s`` (bodies grouped by
``Body.substructure``) over the totals; each row sums to 1.  ``M`` is block diagonal over
bodies, so the kinetic partition is exact; the elastic energy of a lumped spring is given to
the substructure of its second marker's body (its first if that one is ground), and that of
a compliant actuator to the body its joint drives.
"""
import numpy as np

from sim.model.dynamics import mass_matrix, stiffness_matrix
from sim.errors import SimError
from sim.solvers.modal import body_energies, modes

DEGENERATE_RTOL = 1e-6   # frequencies closer than this (relative) form one repeated root


def _layout(model):
    return (model.n_q, model.n_v, tuple(model.body_names), tuple(model.q_index),
            tuple(j.name for j in model.joints))


def matrices_at(model, pose, q_start=None):
    """Configuration at ``pose`` (None: home) and ``M``, ``K`` there.

    Returns ``q`` (n_q,), ``M``, ``K`` (n_v, n_v).
    """
    from sim.model.assembly import assemble
    from sim.model.evaluator import Kinematics
    if pose is None:
        q = model.q_home if q_start is None else q_start
    else:
        from sim.model.assembly import solve_pose
        q = solve_pose(model, pose) if q_start is None else \
            assemble(model, q_start, Kinematics(model), pose_target=np.asarray(pose, dtype=float), what="the pose")
    return q, mass_matrix(model, q), stiffness_matrix(model, q)


def matrix_derivatives(build, parameters, name, pose, q, rel_step=1e-4):
    """``dM/dp``, ``dK/dp`` (n_v, n_v) by central differences of rebuilt models.

    Parameters
    ----------
    build : callable
        ``build(parameters_dict) -> Model`` (e.g. ``lambda p: load_model(file, p)``).
    parameters : dict
        Parameter values of the nominal model (``name`` must be among them).
    name : str
    pose : array_like, shape (d,) or None
        Pose at which the rebuilt models are re-assembled (None: their home).
    q : ndarray, shape (n_q,)
        Nominal configuration: starting point of the re-assembly.
    rel_step : float
        Relative step ``h``.

    Raises
    ------
    SimError
        When a rebuilt model changes its coordinate layout.
    """
    value = float(parameters[name])
    delta = rel_step * (abs(value) if value else 1.0)
    out = []
    layout = None
    for sign in (1.0, -1.0):
        model = build({**parameters, name: value + sign * delta})
        if layout is None:
            layout = _layout(model)
        elif _layout(model) != layout:
            raise SimError(f"parameter `{name}`: rebuilding the model changes its coordinates; "
                           "no matrix sensitivity")
        q_p = q if pose is None else matrices_at(model, pose, q_start=q)[0]
        out.append((mass_matrix(model, q_p), stiffness_matrix(model, q_p)))
    (Mp, Kp), (Mm, Km) = out
    return (Mp - Mm) / (2 * delta), (Kp - Km) / (2 * delta)


def frequency_sensitivities(omega, shapes, dM, dK):
    """``d f_r / d p`` [Hz per unit of p] (r,) from matrix derivatives; see module docstring.

    Parameters
    ----------
    omega : ndarray, shape (r,)
        Circular frequencies [rad/s], ascending.
    shapes : ndarray, shape (n_v, r)
        Mass-normalised shapes.
    dM, dK : ndarray, shape (n_v, n_v)
    """
    omega = np.asarray(omega, dtype=float)
    out = np.zeros(omega.size)
    start = 0
    while start < omega.size:
        stop = start + 1
        while stop < omega.size and omega[stop] - omega[start] <= DEGENERATE_RTOL * omega[start]:
            stop += 1
        Phi = shapes[:, start:stop]
        w = omega[start:stop].mean()
        S = Phi.T @ (dK - w**2 * dM) @ Phi / (2 * w)
        out[start:stop] = np.linalg.eigvalsh(0.5 * (S + S.T))
        start = stop
    return out / (2 * np.pi)


EXTRA_MODES = 6   # modes computed beyond the requested count (repeated roots at the cut)


def sensitivities(build, parameters, names, pose=None, count=4, rel_step=1e-4):
    """Sensitivities of the lowest ``count`` frequencies to each named parameter.

    Returns
    -------
    frequencies : ndarray, shape (count,)
        [Hz] of the nominal model.
    S : ndarray, shape (count, len(names))
        ``d f_r / d p`` [Hz per unit of p].
    """
    model = build(dict(parameters))
    q, M, K = matrices_at(model, pose)
    res = modes(model, q, count=count + EXTRA_MODES, M=M, K=K)
    return sensitivities_at(build, parameters, names, pose, q, res, count, rel_step)


def sensitivities_at(build, parameters, names, pose, q, res, count, rel_step=1e-4):
    """:func:`sensitivities` from the nominal configuration ``q`` and its modes ``res``.

    ``res`` should hold a few modes beyond ``count`` so that a repeated frequency at the cut
    is seen whole (its sensitivities need the whole eigenspace).
    """
    k = min(count, res.omega.size)
    S = np.zeros((k, len(names)))
    for j, name in enumerate(names):
        dM, dK = matrix_derivatives(build, parameters, name, pose, q, rel_step)
        S[:, j] = frequency_sensitivities(res.omega, res.shapes, dM, dK)[:k]
    return res.frequencies_hz[:k], S


def energy_ratios(model, q, shapes, M=None):
    """Kinetic and elastic energy ratios per substructure per mode (paper 002 eq. 62).

    Returns
    -------
    names : list of str
        Substructures, in order of first appearance among the bodies.
    kinetic, elastic : ndarray, shape (r, n_sub)
        Rows sum to 1.
    body_kinetic, body_elastic : ndarray, shape (r, n_b)
        The same per body.
    """
    kin, ela = body_energies(model, q, shapes, M)
    kin = kin / np.maximum(kin.sum(axis=1, keepdims=True), 1e-300)
    ela = ela / np.maximum(ela.sum(axis=1, keepdims=True), 1e-300)
    subs = [b.substructure or b.name for b in model.bodies]
    names = list(dict.fromkeys(subs))
    G = np.array([[s == n for n in names] for s in subs], dtype=float)   # (n_b, n_sub)
    return names, kin @ G, ela @ G, kin, ela
