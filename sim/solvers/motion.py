"""Motion of the rigid robot along an end-effector trajectory (elastic coordinates frozen).

At each time: position by Newton from a third-order predictor (velocity, acceleration and
the acceleration's difference quotient of the previous sample); when plain Newton steps do
not contract fast, the line-search Newton of :func:`sim.model.assembly.assemble` takes over.
Velocity and acceleration from the stacked constraint and end-effector equations over the
reference coordinates,

    [C_q; J_x] v = [0; x_dot],        [C_q; J_x] a = [gamma; x_ddot - x_q],

solved in the least-squares sense through ``[C_q; J_x]^T [C_q; J_x]`` (minimum-norm where
constraints are redundant).  Its eigenvalues give the conditioning; a singular instant stops
with its time.  Long samplings run on the compiled kernels (:mod:`sim.model.evaluator`), where the
square ``[C_q; J_x]`` of a non-redundant robot is factored directly (the sparse LU of
:func:`sim.linalg.sparse_lu`, which skips the zeros of the joints' rows) and its two extreme
eigenvalues are iterated from the previous sample's (:func:`sim.linalg.condition_number`: the
same condition number, to round-off, for a quarter of a dense eigensolve).
"""
from dataclasses import dataclass

import numpy as np
from numba import njit

from sim.model.assembly import (CORRECTOR_CONTRACTION, CORRECTOR_MAX_ITER, SINGULAR_RATIO, TOLERANCE, AssemblyError,
                       assemble, correct, solve_pose)
from sim.errors import SimError
from sim.errors import signals_deferred
from sim.model.evaluator import Evaluator
from sim.model.kinematics import pose_codes
from sim.kernels.common import FLUSH_RTOL, flush as flush_roundoff, runtime
from sim.kernels.equations import function
from sim.kernels.frames import integrate
from sim.kernels.pose import pose_terms
from sim.linalg import condition_number, condition_state, flush, lu_solve, normal_solver, sparse_lu

SEGMENT = 16              # samples per call of the compiled loop (then handed on: on_sample, progress)
ESTIMATE_MARGIN = 10.0    # an estimated condition number above limit / margin is computed exactly


@dataclass(frozen=True)
class RigidMotion:
    """Rigid-robot motion sampled at ``t`` (n,).

    ``q`` (n, n_q), ``v`` and ``a`` (n, n_v), ``pose``/``pose_dot``/``pose_ddot`` (n, d),
    ``actuators``/``actuators_dot``/``actuators_ddot`` (n, n_a) [rad or m and rates],
    ``condition`` (n,): condition number of the inverse-kinematics Jacobian.
    """

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    a: np.ndarray
    pose: np.ndarray
    pose_dot: np.ndarray
    pose_ddot: np.ndarray
    actuators: np.ndarray
    actuators_dot: np.ndarray
    actuators_ddot: np.ndarray
    condition: np.ndarray


@njit(cache=True)
def _factor(A):
    """Sparse LU factors (:func:`sim.linalg.sparse_lu`) of ``A`` (m, n) if square, else of
    ``A^T A``: ``(factors, ok)``, ok False where singular."""
    return sparse_lu(A if A.shape[0] == A.shape[1] else A.T @ A)


@njit(cache=True)
def _prepare(A, rank):
    """Factors for :func:`_solve` of ``A x = b`` at the expected ``rank``: ``(F, ok, V, lam)``.
    At full column rank the LU factors of :func:`_factor` (``V``, ``lam`` empty); below it
    (redundant constraints, free motions) the ``rank`` leading eigenpairs of ``A^T A`` for
    the minimum-norm solution, as :func:`sim.linalg.normal_solver`."""
    if rank == A.shape[1]:
        F, ok = _factor(A)
        return F, ok, np.zeros((A.shape[1], 0)), np.zeros(0)
    F, _ = _factor(np.eye(1))
    lam, V = np.linalg.eigh(A.T @ A)
    lam = lam[::-1][:rank].copy()
    V = V[:, ::-1][:, :rank].copy()
    return F, lam[-1] > 0, V, lam


@njit(cache=True)
def _solve(F, V, lam, A, b):
    """Least-squares (minimum-norm below full rank) solution of ``A x = b``; :func:`_prepare`."""
    if lam.size:
        return V @ ((V.T @ (A.T @ b)) / lam)
    return _lsq(F, A, b)


@njit(cache=True)
def _lsq(F, A, b):
    """Least-squares solution (n,) of ``A x = b`` (exact for a square ``A``) from
    :func:`_factor`'s factors ``F``."""
    if A.shape[0] == A.shape[1]:
        return lu_solve(F, b.reshape((b.size, 1)))[:, 0]
    return lu_solve(F, (A.T @ b).reshape((A.shape[1], 1)))[:, 0]


@njit(cache=True)
def _condition_estimate(F, A, u):
    """Estimated condition number ``sqrt(lambda_max / lambda_min)`` of ``A`` (``lambda`` those
    of ``A^T A``) from :func:`_factor`'s factors ``F``: three power steps on ``A^T A`` and three
    inverse-iteration steps from the unit vectors ``u`` (2, n) of the previous sample (updated
    in place).  Lower bounds of the extremes, so an underestimate: the caller adds a margin
    and checks exactly above it."""
    square = A.shape[0] == A.shape[1]
    x = u[0].copy()
    hi = 0.0
    for _ in range(3):
        y = A.T @ (A @ x)
        hi = np.sqrt(y @ y)
        x = y / hi
    u[0] = x
    x = u[1].copy().reshape((x.size, 1))
    inv = 0.0
    for _ in range(3):      # (A^T A)^-1 x: A^-1 A^-T x, or from the factors of A^T A
        y = lu_solve(F, lu_solve(F, x, True)) if square else lu_solve(F, x)
        inv = np.sqrt((y * y).sum())
        x = y / inv
    u[1] = x[:, 0]
    return np.sqrt(hi * inv)


@njit(cache=True)
def _stack(J, nj, t, e, kinds, rigid, x_target, A, phi_out, phi, Jx, xq, v, with_rates):
    """``A = [C_q; J_x]`` over the reference coordinates (flushed) and the residual
    ``[C; x - x_target]`` (angles wrapped) from the last evaluation; ``Jx`` (d, n_v) and, with
    ``with_rates`` at the velocity ``v``, ``xq`` (d,) of the end effector (marker ``e``)."""
    d = kinds.size
    Jx[:] = 0.0
    x = np.zeros(d)
    pose_terms(kinds, t.p[e], t.A[e], t.Jp[e], t.Jw[e], t.cols[e], v, t.pq[e], t.wq[e], x, Jx, xq, with_rates)
    for i in range(nj):
        phi_out[i] = phi[i]
        for k in range(rigid.size):
            A[i, k] = J[i, rigid[k]]
    for r in range(d):
        res = x[r] - x_target[r]
        if kinds[r] >= 3:
            res = (res + np.pi) % (2 * np.pi) - np.pi
        phi_out[nj + r] = res
        for k in range(rigid.size):
            A[nj + r, k] = Jx[r, rigid[k]]
    flush_roundoff(A, FLUSH_RTOL)


@njit(cache=True)
def _kinematics(q, v, tables, f, phi, J, gamma):
    """The constraint rows (all actuators') at ``(q, v)`` (``f``: the addresses of the evaluation
    of ``tables``, :func:`sim.kernels.equations.addresses`): no ``M``, ``Q``."""
    phi[:] = 0.0
    J[:] = 0.0
    gamma[:] = 0.0
    empty = np.zeros((0, 0))
    none = np.zeros(0)
    function(f[0], tables)(q, v, tables, empty, none, none, phi, J, gamma, empty, empty, empty, none, runtime(False),
                           runtime(False), runtime(True), runtime(False))


@njit(cache=True, nogil=True)
def _segment(k0, k1, times, X, XD, XDD, state, tables, f, kinds, e, rigid, nj, rank, exact, limit, u, warm, out_q, out_v,
             out_a, out_s, out_sd, out_sdd, out_cond):
    """Samples ``k0 .. k1 - 1`` of :func:`rigid_motion` in one compiled loop.

    ``state = (q, v, a, jerk)`` of sample ``k0 - 1``, updated as samples are done.  Each
    sample: the third-order predictor, at most ``CORRECTOR_MAX_ITER`` plain Newton steps (as
    :func:`sim.model.assembly.correct`), then velocity and acceleration by the normal equations (as
    :func:`rigid_state`).  Stops at the first sample it cannot finish (the Python path of
    :func:`rigid_motion` takes it over, with its line search and messages).  ``u``: the
    vectors of :func:`_condition_estimate`, ``warm``: the state of
    :func:`sim.linalg.condition_number`, both carried from sample to sample.

    Returns
    -------
    k : int
        First sample not done (``k1`` when all are).
    """
    q, v, a, jerk = state
    n_v = v.size
    n_rows = nj + out_s.shape[1]
    n_r = rigid.size
    d = kinds.size
    body_q, body_v, body_nf = tables.body_q, tables.body_v, tables.body_nf
    Jx = np.zeros((d, n_v))
    x_pose = np.zeros(d)
    xq = np.zeros(d)
    phi = np.zeros(n_rows)
    J = np.zeros((n_rows, n_v))
    gamma = np.zeros(n_rows)
    A = np.zeros((nj + d, n_r))
    res = np.zeros(nj + d)
    dv = np.zeros(n_v)
    zero = np.zeros(n_v)
    q_try = np.empty_like(q)
    for k in range(k0, k1):
        dt = times[k] - times[k - 1]
        for i in range(n_v):
            dv[i] = dt * v[i] + 0.5 * dt * dt * a[i] + dt ** 3 / 6.0 * jerk[i]
        q1 = np.empty_like(q)
        integrate(q, dv, body_q, body_v, body_nf, q1)
        _kinematics(q1, zero, tables, f, phi, J, gamma)
        _stack(J, nj, tables, e, kinds, rigid, X[k], A, res, phi, Jx, xq, zero, False)
        norm = np.abs(res).max()
        ok = False
        for it in range(CORRECTOR_MAX_ITER + 1):
            if norm < TOLERANCE:
                ok = True
                break
            if it == CORRECTOR_MAX_ITER:
                break
            F, fine, V, lam = _prepare(A, rank)
            if not fine:
                break
            step = _solve(F, V, lam, A, res)
            dv[:] = 0.0
            for i in range(n_r):
                dv[rigid[i]] = -step[i]
            integrate(q1, dv, body_q, body_v, body_nf, q_try)
            _kinematics(q_try, zero, tables, f, phi, J, gamma)
            _stack(J, nj, tables, e, kinds, rigid, X[k], A, res, phi, Jx, xq, zero, False)
            norm_new = np.abs(res).max()
            if not norm_new < CORRECTOR_CONTRACTION * norm:
                break
            q1[:] = q_try
            norm = norm_new
        if not ok:
            return k
        F, fine, V, lam = _prepare(A, rank)
        if not fine:
            return k
        if lam.size:     # below full rank: the eigenvalues are at hand
            cond = np.sqrt(lam[0] / lam[-1])
            if not cond < limit:
                return k
            cond = cond if exact else np.nan
        elif exact:
            cond = condition_number(A, warm[0], warm[1])
            if not cond < limit:
                return k
        else:
            cond = np.nan
            if not _condition_estimate(F, A, u) * ESTIMATE_MARGIN < limit:
                return k
        rhs = np.zeros(nj + d)
        rhs[nj:] = XD[k]
        x = _solve(F, V, lam, A, rhs)
        v1 = np.zeros(n_v)
        for i in range(n_r):
            v1[rigid[i]] = x[i]
        _kinematics(q1, v1, tables, f, phi, J, gamma)
        # x_q at (q1, v1); A (and J_x) at q1 are already built
        pose_terms(kinds, tables.p[e], tables.A[e], tables.Jp[e], tables.Jw[e], tables.cols[e], v1, tables.pq[e],
                   tables.wq[e], x_pose, Jx, xq, True)
        rhs[:nj] = gamma[:nj]
        for r in range(d):
            rhs[nj + r] = XDD[k, r] - xq[r]
        x = _solve(F, V, lam, A, rhs)
        a1 = np.zeros(n_v)
        for i in range(n_r):
            a1[rigid[i]] = x[i]
        if dt > 0:
            jerk[:] = (a1 - a) / dt
        q[:] = q1
        v[:] = v1
        a[:] = a1
        out_q[k] = q1
        out_v[k] = v1
        out_a[k] = a1
        J_s = J[nj:]
        out_s[k] = phi[nj:]
        out_sd[k] = J_s @ v1
        out_sdd[k] = J_s @ a1 - gamma[nj:]
        out_cond[k] = cond
    return k1


def rigid_state(model, q, x_dot, x_ddot, ev=None, A=None):
    """Velocity and acceleration (n_v,) of the rigid robot at ``q`` for end-effector rates.

    Returns ``v, a, cond`` (condition number over the expected rank) and the evaluation of the
    compiled evaluator ``ev`` (:class:`sim.model.evaluator.Evaluator`; one is built if not given) at
    ``(q, v)`` (kinematic terms only: no ``M``, ``Q``).
    ``A`` (n_c + d, n_r): ``[C_q; J_x]`` over the reference coordinates at ``q``, if at hand.
    """
    rigid = model.v_rigid
    ev = Evaluator(model) if ev is None else ev
    if A is None:
        Jc = ev.evaluate(q, np.zeros(model.n_v), bodies=False).J
        A = flush(np.vstack([Jc, ev.pose()[1]])[:, rigid])
    n_c = A.shape[0] - len(model.pose_names)
    ls, cond = normal_solver(A, model.ranks[0])

    def solve(rhs):
        out = np.zeros(model.n_v)
        out[rigid] = ls(rhs)
        return out

    v = solve(np.concatenate([np.zeros(n_c), x_dot]))
    E = ev.evaluate(q, v, bodies=False)
    xq = ev.pose(v)[2]
    return v, solve(np.concatenate([E.gamma, x_ddot - xq])), cond, E


def _fast_segments(model, ev):
    """Model arguments of :func:`_segment`."""
    return (ev.ref, ev.f, pose_codes(model.pose_kinds), int(model.ee_marker),
            np.asarray(model.v_rigid, dtype=np.int64), int(ev.n_joint), int(model.ranks[0]))


def load_kernels(model, ev=None):
    """Compile, or load from numba's cache, the compiled sample loop for ``model`` now (with
    the stop signals held back: :func:`sim.errors.signals_deferred`); returns
    :func:`_fast_segments`' arguments.  ``ev``: an evaluator at hand."""
    ev = Evaluator(model) if ev is None else ev
    fast = _fast_segments(model, ev)
    if fast is None:      # tests take the reference path this way
        return None
    n_v, n_a, d = model.n_v, len(model.actuators), len(model.pose_kinds)
    z = np.zeros
    with signals_deferred():
        _segment(1, 1, z(1), z((1, d)), z((1, d)), z((1, d)), (model.q_home.copy(), z(n_v), z(n_v), z(n_v)),
                 *fast, False, 1 / SINGULAR_RATIO, z((2, len(model.v_rigid))), condition_state(len(model.v_rigid)),
                 z((1, model.n_q)), z((1, n_v)), z((1, n_v)), z((1, n_a)), z((1, n_a)), z((1, n_a)), z(1))
    return fast


def rigid_motion(model, trajectory, times, q_start=None, progress=None, on_sample=None, condition=True):
    """Sample the rigid robot's motion along ``trajectory`` at ``times`` (n,) [s].

    ``on_sample(q, v, a, s)`` (optional) is called with each sample as soon as it is known
    (``s``: the actuator values, not yet unwrapped), so that a consumer can start on it
    while the motion goes on (:func:`sim.solvers.ked.motion_and_frames`).

    ``condition=False``: no condition numbers (``condition`` is NaN), only the guard against
    singular configurations -- an estimate (power and inverse iteration on ``A^T A``) with a
    margin of ``ESTIMATE_MARGIN``, and the exact value where the estimate comes that close
    to the limit.  Saves the condition number's iterations (~4 sparse factorisations per sample).

    The samples run in a compiled loop (:func:`_segment`, every model: translations and
    angles, independent or redundant constraints); the first sample, and any sample it cannot
    finish (leaving the workspace, a singularity, a corrector that does not contract), are
    done here by assembly with continuation, which gives the messages.

    Raises
    ------
    SimError
        When the trajectory leaves the workspace or meets a singular configuration; the
        message names the time.
    """
    times = np.asarray(times, dtype=float)
    x, xd, xdd = trajectory(times)
    n = times.size
    try:
        q = solve_pose(model, x[0], q_start=q_start)
    except SimError as exc:
        raise SimError(f"trajectory start (t = {times[0]:.6g} s): {exc}") from None
    n_a = len(model.actuators)
    out_q, out_v, out_a = np.zeros((n, model.n_q)), np.zeros((n, model.n_v)), np.zeros((n, model.n_v))
    out_s, out_sd, out_sdd = np.zeros((n, n_a)), np.zeros((n, n_a)), np.zeros((n, n_a))
    out_cond = np.full(n, np.nan)
    ev = Evaluator(model)
    fast = load_kernels(model, ev)
    u = np.ones((2, len(model.v_rigid))) / np.sqrt(len(model.v_rigid))   # the estimate's vectors
    warm = condition_state(len(model.v_rigid))                            # the condition numbers'
    v = a = jerk = np.zeros(model.n_v)
    A = None
    k = 0
    while k < n:
        t = times[k]
        if k and fast is not None:
            state = (q.copy(), v.copy(), a.copy(), jerk.copy())
            end = _segment(k, min(n, k + SEGMENT), times, x, xd, xdd, state, *fast, condition, 1 / SINGULAR_RATIO,
                           u, warm, out_q, out_v, out_a, out_s, out_sd, out_sdd, out_cond)
            for j in range(k, end):
                if on_sample is not None:
                    on_sample(out_q[j], out_v[j], out_a[j], out_s[j])
            if progress is not None and end > k:
                progress.update(end - k)
            if end > k:
                q, v, a, jerk = state
                k = end
                continue
        if k:
            dt = t - times[k - 1]
            q_pred = ev.integrate(q, dt * v + 0.5 * dt**2 * a + dt**3 / 6 * jerk)
            corrected = correct(model, q_pred, x[k], ev)
            if corrected is None:
                try:
                    q = assemble(model, q_pred, pose_target=x[k], what=f"the pose at t = {t:.6g} s", ev=ev)
                except AssemblyError as exc:
                    raise SimError(f"the trajectory leaves the workspace at t = {t:.6g} s "
                                   f"(pose {np.round(x[k], 6).tolist()}; {str(exc).split(': ', 1)[-1]})") from None
                A = None
            else:
                q, A = corrected
        a_prev = a
        v, a, cond, E = rigid_state(model, q, xd[k], xdd[k], ev, A)
        if k and t > times[k - 1]:
            jerk = (a - a_prev) / (t - times[k - 1])
        if not cond < 1 / SINGULAR_RATIO:
            raise SimError(f"singular configuration at t = {t:.6g} s (condition number {cond:.3g})")
        s, J_s, g_s = E.s, E.J_s, E.gamma_s
        out_q[k], out_v[k], out_a[k] = q, v, a
        out_s[k], out_sd[k], out_sdd[k] = s, J_s @ v, J_s @ a - g_s
        out_cond[k] = cond if condition else np.nan
        if on_sample is not None:
            on_sample(q, v, a, s)
        if progress is not None:
            progress.update(1)
        k += 1
    act = out_s.copy()
    # Angles are unwrapped so that drives are continuous through +-pi.
    ang = np.array([a.kind == "angle" for a in model.actuators], dtype=bool)
    act[:, ang] = np.unwrap(act[:, ang], axis=0)
    return RigidMotion(t=times, q=out_q, v=out_v, a=out_a, pose=x, pose_dot=xd, pose_ddot=xdd, actuators=act,
                       actuators_dot=out_sd, actuators_ddot=out_sdd, condition=out_cond)
