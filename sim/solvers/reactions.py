r"""The rigid robot's multipliers along a motion: actuator forces and joint reactions (inverse
dynamics and kineto-statics, paper 003).

Along a :class:`sim.solvers.motion.RigidMotion` the elastic coordinates are frozen, so only the
reference coordinates ``r = model.v_rigid`` enter.  With all joint rows and the actuator rows
stacked in ``J`` (:func:`sim.model.constraints.constraints`), the equations of motion
(:mod:`sim.model.dynamics`) are solved for the multipliers at each instant::

    J_r^T lam = Q_r - M_rr a_r.

``J_r^T`` is square and regular for a robot with as many actuators as degrees of freedom and
independent constraints.  Planar loops modelled in 3D (redundant constraints) or redundant
actuation leave ``lam`` undetermined: this module then returns the **minimum-norm
least-squares multipliers** (truncated SVD at the model's direct rank ``ranks[1]``),
which give the correct actuator forces and joint reactions only up to the self-equilibrated
part that rigid bodies cannot resolve.  A square, regular ``J_r`` is solved by its sparse LU
(:func:`sim.linalg.sparse_lu`: the same solution at a small fraction of the SVD's cost), all
instants in one compiled loop.

* Actuator force (N m for an angle, N for a slide): ``tau = -lam_actuator``, the generalized
  force the drive applies along its joint coordinate ``s`` (``J_s^T tau`` in ``Q``).
* Joint reaction: the generalized force of a joint's rows on the body of its marker j is
  ``-J_rows^T lam_rows``; on that body's reference coordinates ``(v_WB_W, w_WB_B)`` it is the
  force ``F`` (world) and the moment ``R_WB g_w`` about the body origin, moved to the joint
  point (marker j origin): ``M_j = R_WB g_w - (p_j - r_WB) x F``.  Reported in world axes or
  in the joint frame (marker i axes).  When marker j is on the ground the wrench is computed
  on marker i's body and negated (the wrench on the ground side).  The drive torque of an
  actuated joint is not part of its reaction; it is the actuator force.
* Power ``sum_k tau_k s_dot_k`` equals ``d(T + V)/dt`` (constraint forces of ideal joints do
  no work); kinetic and potential energy come from the same evaluation.

Every sample is one compiled evaluation (:class:`sim.model.evaluator.Evaluator`) of ``M``, ``Q``, the
rows and the marker frames.

The condition number of ``[C_q; J_s]`` on the reference coordinates, the direct
(actuators-locked) Jacobian, is ``sigma_1 / sigma_r`` at the direct rank ``r``: from the
eigenvalues of ``J_r^T J_r``, for a square ``J_r`` its two extreme ones iterated from the
previous instant's (:func:`sim.linalg.condition_number`, the same value to round-off).  A
parallel singularity shows as a condition number above ``1 / SINGULAR_RATIO``.
"""
from dataclasses import dataclass

import numpy as np
from numba import njit

from sim.kernels.common import FLUSH_RTOL, compile_for, flush, runtime
from sim.kernels.equations import inverse_terms
from sim.linalg import condition_number, condition_state, lu_solve, singular_values, sparse_lu
from sim.model.assembly import SINGULAR_RATIO
from sim.errors import SimError, signals_deferred
from sim.model.evaluator import Evaluator, held
from sim.model.kinematics import body_frames
from sim.model import JOINT_ROWS

FRAMES = ("world", "joint")


@dataclass(frozen=True)
class InverseDynamics:
    """Kineto-statics along a rigid motion sampled at ``t`` (n,) [s].

    ``actuator_forces`` (n, n_a) [N m or N], the rotors' (:func:`rotor_forces`) included;
    ``joint_reactions`` (n, n_j, 6): force [N] then
    moment [N m] of each joint on the body of its marker j, at marker j's origin, in
    ``frame``; ``multipliers`` (n, n_c) over joint then actuator rows; ``kinetic_energy``,
    ``potential_energy`` (gravity plus frozen elastic) [J], ``actuator_power`` [W],
    ``condition`` (n,) of the direct Jacobian, ``residual`` (n,) [N or N m] of the
    least-squares solve (zero unless the motion is not dynamically consistent).
    """

    t: np.ndarray
    actuator_forces: np.ndarray
    joint_reactions: np.ndarray
    multipliers: np.ndarray
    kinetic_energy: np.ndarray
    potential_energy: np.ndarray
    actuator_power: np.ndarray
    condition: np.ndarray
    residual: np.ndarray
    frame: str = "world"

    def first_singular(self):
        """Index of the first sample whose direct Jacobian is singular, or ``None``."""
        bad = np.flatnonzero(~(self.condition < 1 / SINGULAR_RATIO))
        return int(bad[0]) if bad.size else None


def joint_row_slices(model):
    """Row slice of each joint in the constraint vector (tuple, one per joint)."""
    out, r = [], 0
    for joint in model.joints:
        width = sum(3 if prim[0] == "point" else 1 for prim in JOINT_ROWS[joint.kind])
        out.append(slice(r, r + width))
        r += width
    return tuple(out)


def multipliers(model, q, v, a, ev):
    """Minimum-norm least-squares multipliers of ``J_r^T lam = Q_r - M_rr a_r`` at one instant.

    Parameters
    ----------
    q : ndarray, shape (n_q,)
    v, a : ndarray, shape (n_v,)
        Velocities and accelerations; only the reference components are used.
    ev : sim.model.evaluator.Evaluator
        The model's compiled evaluator.

    Returns
    -------
    lam : ndarray, shape (n_c,)
        Over all joint rows, then the actuator rows.
    condition : float
        ``sigma_1 / sigma_r`` of ``J_r`` at the direct rank ``r = model.ranks[1]``.
    residual : float
        Norm of ``J_r^T lam - (Q_r - M_rr a_r)``.
    """
    Jr, rhs = ev.inverse_terms(q[None], v[None], a[None])[:2]
    lam, condition, residual = _solve(model, Jr, rhs)
    return lam[0], float(condition[0]), float(residual[0])


def compile_loops(model):
    """Compile, or load from numba's cache, the inverse dynamics' own kernels for ``model``
    (the motion's terms, the square solve) without compiling or calling the evaluation
    (:mod:`sim.app.parallel_compile`)."""
    ev = Evaluator(model, load=False)
    none, n_r = np.zeros((0, model.n_v)), len(model.v_rigid)
    arguments = ev.inverse_arguments(np.zeros((0, model.n_q)), none, none)
    Jr, rhs = arguments[-1][:2]
    with signals_deferred():
        compile_for(inverse_terms, *arguments)
        if ev.n_rows == n_r:        # J_r square: _solve's compiled path
            compile_for(_square, Jr, rhs, *condition_state(n_r), 1.0)


def _along(model, motion, ev):
    """The kineto-statics of ``motion`` chunk by chunk (chunks bound the memory): per chunk,
    ``(sl, Jr, p, A, T, V, lam, condition, residual)`` (:meth:`Evaluator.inverse_terms`,
    :func:`_solve`; ``sl`` the chunk's slice of the samples), the condition numbers carried
    from one sample to the next."""
    n, n_c, n_r, n_m = motion.t.size, model.rows["n_total"], len(model.v_rigid), len(model.markers)
    warm = condition_state(n_r)
    chunk = max(1, min(n, int(2e7 // max(1, n_c * n_r + 12 * n_m))))
    for c0 in range(0, n, chunk):
        sl = slice(c0, min(n, c0 + chunk))
        Jr, rhs, p, A, T, V = ev.inverse_terms(motion.q[sl], motion.v[sl], motion.a[sl])
        yield (sl, Jr, p, A, T, V, *_solve(model, Jr, rhs, warm))


def _solve(model, Jr, rhs, warm=None):
    """``J_r^T lam = rhs`` for a stack of instants: ``Jr`` (n, n_c, n_r) the rows on the
    reference coordinates, ``rhs`` (n, n_r) ``Q_r - M_rr a_r``.  Returns ``lam`` (n, n_c), the
    condition numbers (n,) at the direct rank and the residual norms (n,).  ``warm``: the
    state of :func:`sim.linalg.condition_number` carried along a motion (square ``J_r``)."""
    import scipy.linalg
    rank = model.ranks[1]
    if Jr.shape[1] == Jr.shape[2] == rank:
        warm = condition_state(Jr.shape[2]) if warm is None else warm
        lam, condition, regular = _square(Jr, rhs, *warm, 1 / SINGULAR_RATIO)
    else:
        s = singular_values(Jr)
        with np.errstate(divide="ignore", invalid="ignore"):
            condition = np.where(s[:, rank - 1] > 0, s[:, 0] / s[:, rank - 1], np.inf)
        lam, regular = np.empty(Jr.shape[:2]), np.zeros(len(Jr), bool)
    for k in np.flatnonzero(~regular):
        # gesvd: the divide-and-conquer default (gesdd) is several times slower at these sizes.
        U, sk, Vt = scipy.linalg.svd(Jr[k], full_matrices=False, lapack_driver="gesvd")
        # J_r^T = V S U^T, so the minimum-norm solution is U S^-1 V^T rhs over the kept values.
        lam[k] = U[:, :rank] @ ((Vt[:rank] @ rhs[k]) / sk[:rank])
    residual = np.linalg.norm(np.einsum("kcr,kc->kr", Jr, lam) - rhs, axis=1)
    return lam, condition, residual


@njit(cache=True, nogil=True)
def _square(Jr, rhs, basis, shift, limit):
    """:func:`_solve` where ``J_r`` is square: each instant's condition number
    (:func:`sim.linalg.condition_number`, from the previous instant's) and, where below
    ``limit``, the one solution by the sparse LU of ``J_r`` (:func:`sim.linalg.sparse_lu`).
    Returns ``lam`` (n, n_c), the condition numbers (n,) and where ``lam`` was solved (n,)."""
    n, m = Jr.shape[0], Jr.shape[1]
    lam, condition, regular = np.empty((n, m)), np.empty(n), np.zeros(n, dtype=np.bool_)
    for k in range(n):
        A = Jr[k].copy()
        flush(A, FLUSH_RTOL)
        condition[k] = condition_number(A, basis, shift)
        if condition[k] < limit:
            F, regular[k] = sparse_lu(A)
            if regular[k]:
                lam[k] = lu_solve(F, rhs[k].reshape((m, 1)), runtime(True))[:, 0]
    return lam, condition, regular


def joint_wrenches(model, q, lam, ev, frame="world"):
    """Reaction wrench of every joint from its rows' multipliers.

    Parameters
    ----------
    q : ndarray, shape (n_q,)
    lam : ndarray, shape (n_c,) or (n_joint_rows,)
    ev : sim.model.evaluator.Kinematics
        The model's kinematics (or its ``Evaluator``).
    frame : {"world", "joint"}
        Axes of the result: world, or the joint frame (marker i axes).

    Returns
    -------
    ndarray, shape (n_j, 6)
        Force [N] and moment [N m] on the body of marker j, about marker j's origin.
    """
    if frame not in FRAMES:
        raise ValueError(f"`frame` must be one of {FRAMES}, got {frame!r}")
    E = ev.kinematics(q, markers=True)
    return _wrenches(model, q[None], lam[None], E.J[None][:, :, model.v_rigid], E.markers.p[None],
                     E.markers.A[None], frame)[0]


def _wrench_tables(model):
    """Per joint, for :func:`_wrenches`: its first row; which joints load a body (``live``);
    for those, the sign (-1: marker j on the ground, the wrench on the ground side), the body
    that receives the reaction, that body's six reference columns among ``model.v_rigid``,
    and the markers i and j."""
    start = np.array([sl.start for sl in joint_row_slices(model)], dtype=int)
    on_j = np.array([model.markers[j.marker_j].body >= 0 for j in model.joints], dtype=bool)
    body = np.array([model.markers[j.marker_j if o else j.marker_i].body for j, o in zip(model.joints, on_j)],
                    dtype=int)
    live = body >= 0
    b = body[live]
    cols = np.array([model.q_index[x][1] for x in b], dtype=int).reshape(-1, 1) + np.arange(6)
    cols = np.searchsorted(np.asarray(model.v_rigid), cols)
    mi = np.array([j.marker_i for j in model.joints], dtype=int)[live]
    mj = np.array([j.marker_j for j in model.joints], dtype=int)[live]
    return start, live, np.where(on_j, 1.0, -1.0)[live], b, cols, mi, mj


def _wrenches(model, q, lam, Jr, p, A, frame, tables=None):
    """:func:`joint_wrenches` for a stack of instants: ``q`` (n, n_q), the joint multipliers
    ``lam`` (n, >= n_jr), the rows ``Jr`` (n, >= n_jr, n_r) on the reference coordinates,
    the marker origins ``p`` (n, n_m, 3) and axes ``A`` (n, n_m, 3, 3); (n, n_j, 6)."""
    start, live, sign, b, cols, mi, mj = _wrench_tables(model) if tables is None else tables
    n = len(q)
    out = np.zeros((n, len(model.joints), 6))
    if not live.any():
        return out
    nj = model.rows["n_joint"]
    # generalized force of each joint's rows: -sum_rows J_row lam_row (a joint's rows are contiguous)
    G = -np.add.reduceat(Jr[:, :nj] * lam[:, :nj, None], start, axis=1)
    g = G[:, np.flatnonzero(live)[:, None], cols]
    r_WB, R_WB = body_frames(model, q)
    force = g[..., :3]
    moment = np.einsum("nkij,nkj->nki", R_WB[:, b], g[..., 3:6]) - np.cross(p[:, mj] - r_WB[:, b], force)
    wrench = sign[:, None] * np.concatenate([force, moment], axis=-1)
    if frame == "joint":
        wrench = np.concatenate([np.einsum("nkji,nkj->nki", A[:, mi], wrench[..., :3]),
                                 np.einsum("nkji,nkj->nki", A[:, mi], wrench[..., 3:])], axis=-1)
    out[:, live] = wrench
    return out


def inverse_dynamics(model, motion, frame="world", progress=None):
    """Actuator forces, joint reactions, energies and power along a rigid motion.

    Parameters
    ----------
    model : Model or Evaluator
        The robot, or its evaluator where the caller holds one (:func:`sim.model.evaluator.held`).
    motion : RigidMotion
        From :func:`sim.solvers.motion.rigid_motion`.
    frame : {"world", "joint"}
        Axes of the joint reactions.
    progress : tqdm-like, optional
        Updated once per sample.

    Returns
    -------
    InverseDynamics
        Singular instants are not raised here: check ``condition`` (or
        :meth:`InverseDynamics.first_singular`); their forces are the truncated-SVD values.
    """
    if frame not in FRAMES:
        raise ValueError(f"`frame` must be one of {FRAMES}, got {frame!r}")
    model, ev = held(model)
    n = motion.t.size
    nj = model.rows["n_joint"]
    tables = _wrench_tables(model)
    lam, wrench = np.empty((n, model.rows["n_total"])), np.empty((n, len(model.joints), 6))
    T, V, condition, residual = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    for sl, Jr, p, A, *values in _along(model, motion, ev):
        T[sl], V[sl], lam[sl], condition[sl], residual[sl] = values
        wrench[sl] = _wrenches(model, motion.q[sl], lam[sl], Jr, p, A, frame, tables)
        if progress is not None:
            progress.update(sl.stop - sl.start)
    tau = -lam[:, nj:] + rotor_forces(model, motion)
    return InverseDynamics(t=motion.t, actuator_forces=tau, joint_reactions=wrench, multipliers=lam,
                           kinetic_energy=T, potential_energy=V, actuator_power=np.sum(tau * motion.actuators_dot, axis=1),
                           condition=condition, residual=residual, frame=frame)


def actuator_forces(model, motion):
    """Actuator forces (n, n_a) [N m or N] that drive the rigid robot along ``motion``.

    The open-loop input of a torque-driven transient (and a servo's torque feedforward);
    shares the kernel of :func:`inverse_dynamics`, plus the torque ``n^2 J_m s_ddot`` that
    accelerates the rigid actuators' rotors (:attr:`sim.model.types.Actuator.reflected_inertia`).
    ``model``: the robot, or its evaluator where the caller holds one
    (:func:`sim.model.evaluator.held`).

    Raises
    ------
    SimError
        At the first instant where the direct (actuators-locked) Jacobian is singular,
        naming the time and the condition number.
    """
    model, ev = held(model)
    nj = model.rows["n_joint"]
    tau = np.empty((motion.t.size, len(model.actuators)))
    for sl, *_, lam, condition, _ in _along(model, motion, ev):
        bad = np.flatnonzero(~(condition < 1 / SINGULAR_RATIO))
        if bad.size:
            check_regular(motion.t[sl][bad[0]], condition[bad[0]])
        tau[sl] = -lam[:, nj:]
    return tau + rotor_forces(model, motion)


def rotor_forces(model, motion):
    """The forces (n, n_a) [N m or N] that accelerate the rigid actuators' rotors along
    ``motion``: ``n^2 J_m s_ddot`` (:attr:`sim.model.types.Actuator.reflected_inertia`; a
    compliant actuator's rotor is on its prescribed motor side)."""
    rotor = np.array([0.0 if a.stiffness is not None else a.reflected_inertia for a in model.actuators])
    return rotor * motion.actuators_ddot


def check_regular(t, condition):
    """Raise SimError if the direct Jacobian at time ``t`` [s] is singular."""
    if not condition < 1 / SINGULAR_RATIO:
        raise SimError(f"parallel (actuators-locked) singular configuration at t = {t:.6g} s "
                       f"(condition number {condition:.3g})")
