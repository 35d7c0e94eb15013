"""Assembly and inverse kinematics: Newton on ``C(q) = 0`` over the reference coordinates.

Elastic coordinates are held fixed (the rigid robot).  Each iteration takes the minimum-norm
least-squares step ``dx = -J_r^+ phi`` (SVD), which copes with the redundant constraints of
planar loops modelled in 3D.  Poses are reached by continuation from the home pose so that the
assembly mode (branch) of the home configuration is kept.
"""
import numpy as np

from sim.model.constraints import drive_residual
from sim.errors import SimError
from sim.kernels.common import wrap
from sim.model.evaluator import Kinematics
from sim.model.springs import deformation_rows
from sim.linalg import lstsq, null_space, singular_values, svd

NEWTON_MAX_ITER = 30
TOLERANCE = 1e-11          # residual (m or rad) for convergence
CONTINUATION_STEP = 0.1    # m or rad per continuation step (halved where Newton fails)
SINGULAR_RATIO = 1e-5      # sigma_min / sigma_max below which a Jacobian is singular (Newton reaches
#                            only ~sqrt(tol) at a stretch singularity, where the ratio bottoms near 1e-6)
RANK_RTOL = 1e-7           # relative singular value below which a direction is not in the rank
GENERIC_SAMPLES = 3        # configurations near home whose ranks count with home's
GENERIC_STEP = 0.05        # their distance from home along the joints' motions (m or rad)


class AssemblyError(SimError):
    """The configuration cannot be reached (outside the workspace, or singular)."""


def residual(model, q, targets, pose_target, ev, columns=None):
    """Residual ``phi`` (n_c,) of the rigid robot's constraints, targets and pose, and its
    Jacobian (n_c, n_r) over the reference coordinates (``columns``: over these of ``v``),
    by the kinematics ``ev`` (:class:`sim.model.evaluator.Kinematics`, or an ``Evaluator``)."""
    # The rigid robot: every actuator with a target is a driving constraint, compliant or not.
    E = ev.kinematics(q, pose=pose_target is not None)
    phi, J = E.C, E.J
    if targets is not None:
        phi, J = np.concatenate([phi, drive_residual(model, E.s, targets)]), np.vstack([J, E.J_s])
    if pose_target is not None:
        res = E.x - pose_target
        rot = np.array([k.startswith("r") for k in model.pose_kinds])
        res[rot] = wrap(res[rot])
        phi, J = np.concatenate([phi, res]), np.vstack([J, E.J_x])
    return phi, J[:, model.v_rigid if columns is None else columns]


def assemble(model, q0, ev, targets=None, pose_target=None, what="the configuration", tol=TOLERANCE,
             deformed=False):
    """Configuration near ``q0`` satisfying the joint constraints (and targets/pose if given).

    Parameters
    ----------
    q0 : ndarray, shape (n_q,)
        Starting configuration; its elastic coordinates are kept (``deformed``: changed as
        little as closes the loops, see below).
    ev : sim.model.evaluator.Kinematics
        The model's kinematics (or its ``Evaluator``).
    targets : ndarray, shape (n_a,), optional
        Actuator values [rad or m] to impose.
    pose_target : ndarray, shape (d,), optional
        End-effector coordinates to impose.
    deformed : bool
        Newton over all the coordinates, elastic ones too (minimum-norm steps): a deformed
        overconstrained loop (a planar loop of spatial joints sagging out of its plane) may
        not close by its reference coordinates alone (to second order in the deflection).

    Raises
    ------
    AssemblyError
        When Newton does not bring the residual below ``tol``.
    """
    q = q0.copy()
    dv = np.zeros(model.n_v)
    columns = np.arange(model.n_v) if deformed else model.v_rigid     # the coordinates Newton moves
    phi, J = residual(model, q, targets, pose_target, ev, columns)
    norm = np.abs(phi).max(initial=0.0)
    for _ in range(NEWTON_MAX_ITER):
        if norm < tol:
            return q
        step = -lstsq(J, phi, cond=1e-10)
        # Backtracking keeps Newton from jumping to another assembly branch.
        for _halving in range(12):
            dv[columns] = step
            q_try = ev.integrate(q, dv)
            phi_try, J_try = residual(model, q_try, targets, pose_target, ev, columns)
            norm_try = np.abs(phi_try).max(initial=0.0)
            if norm_try < norm or norm_try < tol:
                break
            step = 0.5 * step
        else:
            break
        q, phi, J, norm = q_try, phi_try, J_try, norm_try
    if norm < tol:
        return q
    raise AssemblyError(f"cannot assemble {what}: constraint residual {norm:.3g} after Newton iterations")


def _min_ratio(J, rank):
    s = singular_values(J)
    if rank == 0 or s.size == 0:
        return 1.0
    return s[rank - 1] / s[0] if rank <= s.size else 0.0


def regularity(model, q, ev):
    """Conditioning of the rigid robot at ``q``: ``(inverse, direct)`` ratios sigma_r / sigma_1.

    ``inverse`` is for the constraints plus end-effector coordinates (legs' inverse
    kinematics), ``direct`` for the constraints plus locked actuators (parallel/type-2
    singularities); ``r`` is the robot's rank (:func:`generic_ranks`).  ``ev``: the model's
    kinematics (:class:`sim.model.evaluator.Kinematics`, or an ``Evaluator``).
    """
    E = ev.kinematics(q, pose=True)
    return conditioning(model, E.J, E.J_s, E.J_x)


def conditioning(model, J, J_s, J_x):
    """``(inverse, direct)`` ratios of :func:`regularity` from the joint constraints' Jacobian
    ``J`` (n_joint, n_v), the actuators' ``J_s`` (n_a, n_v; every drive, compliant or not: the
    rigid robot) and the end effector's ``J_x`` (d, n_v) at one configuration."""
    rigid = model.v_rigid
    ranks = model.ranks
    return (_min_ratio(np.vstack([J, J_x])[:, rigid], ranks[0]),
            _min_ratio(np.vstack([J, J_s])[:, rigid], ranks[1]))


def pose_determined(model, ev):
    """Whether the joints fix the configuration once the end effector is placed.

    The motions left free by the joints and the end-effector coordinates (reference
    coordinates only) must deform nothing: a strut spinning about its axis between two
    spherical joints is a genuine free motion, whereas a body held only by lumped springs
    would need a static equilibrium, not inverse kinematics, to be placed.  ``ev``: the
    model's kinematics (:class:`sim.model.evaluator.Kinematics`).
    """
    _, J = residual(model, model.q_home, None, ev.kinematics(model.q_home, pose=True).x, ev)
    N = null_space(J, RANK_RTOL)
    if N.shape[1] == 0:
        return True
    D = deformation_rows(model, model.q_home, elastic=False)[:, model.v_rigid] @ N     # (its elastic rows: zero there)
    return not (D.size and np.abs(D).max() > 1e-9)


def generic_ranks(model, ev):
    """Ranks of the two regularity Jacobians of the robot (built once per model; ``ev``: its
    kinematics, :class:`sim.model.evaluator.Kinematics`).

    The largest over the home configuration and ``GENERIC_SAMPLES`` configurations a random
    ``GENERIC_STEP`` away along the joints' motions: a rank only drops at singular
    configurations, and a home is often one (a serial arm stretched out, a leg folded).  Its
    ranks taken for the robot's would make every minimum-norm solve of the motion drop a
    direction the robot does have, and report a healthy condition number all along.
    """
    rigid = model.v_rigid
    rng = np.random.default_rng(0)      # the same model, the same ranks
    samples = [model.q_home]
    N = null_space(residual(model, model.q_home, None, None, ev)[1], RANK_RTOL)
    for _ in range(GENERIC_SAMPLES if N.shape[1] else 0):
        c = rng.standard_normal(N.shape[1])
        dv = np.zeros(model.n_v)
        dv[rigid] = GENERIC_STEP * N @ (c / np.linalg.norm(c))
        try:
            samples.append(assemble(model, ev.integrate(model.q_home, dv), ev, what="a configuration near home"))
        except AssemblyError:
            continue
    return tuple(np.max([_ranks(model, q, ev) for q in samples], axis=0).tolist())


def _ranks(model, q, ev):
    """Numerical ranks of ``[C_q; J_x]`` and ``[C_q; J_s]`` (reference coordinates) at ``q``."""
    E = ev.kinematics(q, pose=True)
    out = []
    for targets, pose_target in ((None, E.x), (E.s.copy(), None)):
        _, J = residual(model, q, targets, pose_target, ev)
        s = svd(J, compute_uv=False)
        out.append(int(np.sum(s > RANK_RTOL * s[0])) if s.size else 0)
    return out


def solve_pose(model, pose, q_start=None, check=True):
    """Configuration of the rigid robot with the end effector at ``pose`` (by one
    :class:`sim.model.evaluator.Kinematics` of the model, built here).

    Parameters
    ----------
    pose : array_like, shape (d,)
        End-effector coordinates in the order of ``model.pose_names`` (m, rad).
    q_start : ndarray, optional
        Configuration to continue from (default: home).

    Returns
    -------
    q : ndarray, shape (n_q,)

    Raises
    ------
    SimError
        Wrong number of coordinates, pose outside the workspace, or singular configuration.
    """
    pose = np.asarray(pose, dtype=float).ravel()
    names = ", ".join(model.pose_names)
    if not model.pose_determined:
        raise SimError(f"`{model.name}`: its joints do not determine the configuration from the end-effector "
                       f"pose (bodies held by springs only); set the pose through the model's parameters")
    if pose.size != len(model.pose_names):
        raise SimError(f"pose needs {len(model.pose_names)} values ({names}), got {pose.size}")
    if not np.all(np.isfinite(pose)):
        raise SimError(f"pose ({names}) = {pose.tolist()} is not finite")
    ev = Kinematics(model)
    q = model.q_home if q_start is None else q_start
    start = ev.kinematics(q, pose=True).x
    label = "(" + ", ".join(f"{n}={x:g}" for n, x in zip(model.pose_names, pose)) + ")"
    # Continuation in s from 0 to 1; a failed step is halved, down to a floor, before giving up.
    s, ds = 0.0, min(1.0, CONTINUATION_STEP / max(np.abs(pose - start).max(), 1e-300))
    while s < 1.0:
        s_next = min(1.0, s + ds)
        try:
            q = assemble(model, q, ev, pose_target=start + (pose - start) * s_next, what=f"pose {label}")
            s = s_next
        except AssemblyError as exc:
            ds *= 0.5
            if ds < 1e-3:
                raise AssemblyError(f"pose {label} is outside the workspace of `{model.name}` "
                                    f"({str(exc).split(': ', 1)[-1]})") from None
    if check:
        inverse, direct = regularity(model, q, ev)
        if min(inverse, direct) < SINGULAR_RATIO:
            kind = "serial (leg)" if inverse < direct else "parallel"
            raise AssemblyError(f"pose {label} of `{model.name}` is a {kind} singular configuration "
                                f"(Jacobian condition number {1 / max(min(inverse, direct), 1e-300):.3g})")
    return q


def configuration(model, pose, where):
    """Assemble the model at an end-effector pose.

    Parameters
    ----------
    model : Model
    pose : sequence of float or None
        End-effector coordinates in ``model.pose_names`` order (m, rad); ``None`` for home.
    where : str
        Origin of `pose` for messages (``"--pose"``, ``"a.toml: [modes] pose"``).

    Returns
    -------
    pose : ndarray, shape (d,)
    q : ndarray, shape (n_q,)

    Raises
    ------
    SimError
        Wrong number of coordinates, or an unreachable or singular pose.
    """
    if pose is None:
        return np.asarray(model.pose_home, dtype=float), model.q_home
    pose = np.asarray(pose, dtype=float)
    names = tuple(model.pose_names)
    if pose.shape != (len(names),):
        raise SimError(f"{where}: expected {len(names)} values ({' '.join(names)}), "
                       f"got {pose.size}")
    try:
        return pose, solve_pose(model, pose)
    except SimError as exc:
        raise SimError(f"{where}: {exc}") from None
