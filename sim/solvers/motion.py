"""Motion of the rigid robot along an end-effector trajectory, or driven by its actuators
(:func:`driven_motion`: the same loop with the actuators' values as the targets; elastic
coordinates frozen).

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
from typing import NamedTuple

import numpy as np
from numba import njit

from sim.model.assembly import SINGULAR_RATIO, TOLERANCE, AssemblyError, assemble, solve_pose
from sim.errors import SimError
from sim.errors import signals_deferred
from sim.model.evaluator import Evaluator, held
from sim.model.kinematics import pose_codes
from sim.kernels.common import FLUSH_RTOL, compile_for, flush as flush_roundoff, runtime, wrap
from sim.kernels.equations import function
from sim.kernels.frames import integrate
from sim.kernels.pose import marker_terms, pose_terms
from sim.linalg import condition_number, condition_state, lu_solve_vector, sparse_lu

SEGMENT = 16              # samples per call of the compiled loop where they are handed on (on_sample)
LONG_SEGMENT = 512        # ... where only a progress bar waits for them (each call costs the typing of its tables)
CORRECTOR_MAX_ITER = 3    # plain Newton steps from the predictor before the line-search Newton takes over ...
CORRECTOR_CONTRACTION = 0.1  # ... or as soon as a step cuts the residual by less than this factor
ESTIMATE_MARGIN = 10.0    # an estimated condition number above limit / margin is computed exactly


class Loop(NamedTuple):
    """The model's part of the sample loop :func:`_segment` (:func:`_fast_segments`)."""

    tables: object          # the evaluator's tables, by reference
    data: object            # the evaluator's Data (markers' kinematics), by reference
    f: np.ndarray           # the addresses of their evaluation (sim.kernels.equations.addresses)
    kinds: np.ndarray       # codes of the targets: the end effector's coordinates or the actuators'
    e: int                  # the end-effector marker
    rigid: np.ndarray       # the reference coordinates (columns of v)
    nj: int                 # joint rows
    rank: int               # expected rank of [C_q; J_x]
    pkinds: np.ndarray      # codes of the end effector's coordinates
    drive: bool             # targets are the actuators' values


class Targets(NamedTuple):
    """Sample times ``times`` (n,) and targets ``X``, ``XD``, ``XDD`` (n, d) with their rates."""

    times: np.ndarray
    X: np.ndarray
    XD: np.ndarray
    XDD: np.ndarray


class Output(NamedTuple):
    """What :func:`_segment` writes per sample: ``q`` (n, n_q), ``v``, ``a`` (n, n_v), the
    actuators' ``s``, ``sd``, ``sdd`` (n, n_a), ``cond`` (n,), ``pose`` (3, n, d)."""

    q: np.ndarray
    v: np.ndarray
    a: np.ndarray
    s: np.ndarray
    sd: np.ndarray
    sdd: np.ndarray
    cond: np.ndarray
    pose: np.ndarray


@dataclass(frozen=True)
class RigidMotion:
    """Rigid-robot motion sampled at ``t`` (n,).

    ``q`` (n, n_q), ``v`` and ``a`` (n, n_v) (:func:`rigid_motion` with ``keep`` False: a
    :class:`Configurations`, None and None), ``pose``/``pose_dot``/``pose_ddot`` (n, d),
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
    the minimum-norm solution."""
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
        return lu_solve_vector(F, b.reshape((b.size, 1)), runtime(False))[:, 0]
    return lu_solve_vector(F, (A.T @ b).reshape((A.shape[1], 1)), runtime(False))[:, 0]


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
        y = (lu_solve_vector(F, lu_solve_vector(F, x, runtime(True)), runtime(False)) if square
             else lu_solve_vector(F, x, runtime(False)))
        inv = np.sqrt((y * y).sum())
        x = y / inv
    u[1] = x[:, 0]
    return np.sqrt(hi * inv)


@njit(cache=True)
def _stack(loop, terms, x_target, A, phi_out, Jx, xq, v, with_rates):
    """``A = [C_q; J_x]`` over the reference coordinates (flushed) and the residual
    ``[C; x - x_target]`` (angles wrapped) from the rows ``terms = (phi, J, gamma)`` of the last
    evaluation; ``Jx`` (d, n_v) and, with ``with_rates`` at the velocity ``v``, ``xq`` (d,) of
    the end effector (marker ``loop.e``).  With ``loop.drive``, ``x`` is the actuators' values
    instead (the rows after the joints': ``Jx`` their rows of ``J``, ``xq = -gamma``;
    ``kinds`` 3 for an angle, 0 for a length)."""
    phi, J, gamma = terms
    t, data, e, kinds, rigid, nj = loop.tables, loop.data, loop.e, loop.kinds, loop.rigid, loop.nj
    d = kinds.size
    Jx[:] = 0.0
    x = np.zeros(d)
    if loop.drive:
        for r in range(d):
            x[r] = phi[nj + r]
            xq[r] = -gamma[nj + r]
            for k in range(Jx.shape[1]):
                Jx[r, k] = J[nj + r, k]
    else:
        pose_terms(kinds, marker_terms(t, data, e), v, (x, Jx, xq), with_rates)
    for i in range(nj):
        phi_out[i] = phi[i]
        for k in range(rigid.size):
            A[i, k] = J[i, rigid[k]]
    for r in range(d):
        res = x[r] - x_target[r]
        if kinds[r] >= 3:
            res = wrap(res)
        phi_out[nj + r] = res
        for k in range(rigid.size):
            A[nj + r, k] = Jx[r, rigid[k]]
    flush_roundoff(A, FLUSH_RTOL)


@njit(cache=True)
def _kinematics(q, v, tables, data, f, phi, J, gamma):
    """The constraint rows (all actuators') at ``(q, v)`` (``f``: the addresses of the evaluation
    of ``tables``, :func:`sim.kernels.equations.addresses`), the markers' kinematics into
    ``data``: no ``M``, ``Q``."""
    phi[:] = 0.0
    J[:] = 0.0
    gamma[:] = 0.0
    empty = np.zeros((0, 0))
    none = np.zeros(0)
    function(f[0], tables)(q, v, tables, data, (empty, none, none, phi, J, gamma, empty, empty, empty), none,
                           (runtime(False), runtime(False), runtime(True), runtime(False)))


@njit(cache=True, nogil=True)
def _segment(k0, k1, targets, state, predicted, loop, check, carry, out):
    """Samples ``k0 .. k1 - 1`` of :func:`rigid_motion` in one compiled loop: the rigid
    motion's only sample step.

    The targets (a :class:`Targets`) are the end effector's coordinates (codes ``loop.kinds``)
    and rates or, with ``loop.drive``, the actuators' (:func:`_stack`); then ``out.pose``
    (3, n, d) receives the end effector's coordinates (codes ``loop.pkinds``), velocity and
    acceleration (along a trajectory they are the targets, and it is left as it is).

    ``state = (q, v, a, jerk)`` of sample ``k0 - 1``, updated as samples are done; with
    ``predicted``, ``q`` is instead sample ``k0``'s prediction (a configuration found
    otherwise: the start, a line-search Newton's result).  Each sample: the third-order
    predictor, at most ``CORRECTOR_MAX_ITER`` plain Newton steps, each cutting the residual by
    ``CORRECTOR_CONTRACTION``, then velocity and acceleration by the normal equations (the
    minimum-norm solution below full rank) and the condition number (``check = (exact,
    limit)``: exact, otherwise an estimate with a margin; refused from ``limit`` on).
    ``carry = (u, warm)``: the vectors of :func:`_condition_estimate` and the state of
    :func:`sim.linalg.condition_number`, carried from sample to sample.

    Returns
    -------
    k : int
        First sample not done (``k1`` when all are).  Its best configuration so far is left
        in ``out.q[k]`` and, where the exact condition number refused it, that number in
        ``out.cond[k]`` (inf: a singular factorisation).
    """
    q, v, a, jerk = state
    times, X, XD, XDD = targets
    tables, data, f, kinds, e, rigid, nj, rank, pkinds, drive = loop
    exact, limit = check
    u, warm = carry
    out_q, out_v, out_a, out_s, out_sd, out_sdd, out_cond, out_pose = out
    n_v = v.size
    n_rows = nj + out_s.shape[1]
    n_r = rigid.size
    d = kinds.size
    body_q, body_v, body_nf = tables.body_q, tables.body_v, tables.body_nf
    Jx = np.zeros((d, n_v))
    xq = np.zeros(d)
    dp = pkinds.size
    Jp_pose, x_pose, xq_pose = np.zeros((dp, n_v)), np.zeros(dp), np.zeros(dp)
    phi = np.zeros(n_rows)
    J = np.zeros((n_rows, n_v))
    gamma = np.zeros(n_rows)
    A = np.zeros((nj + d, n_r))
    res = np.zeros(nj + d)
    dv = np.zeros(n_v)
    zero = np.zeros(n_v)
    q_try = np.empty_like(q)
    for k in range(k0, k1):
        dt = times[k] - times[k - 1] if k > 0 else 0.0
        q1 = np.empty_like(q)
        if predicted and k == k0:
            q1[:] = q
        else:
            for i in range(n_v):
                dv[i] = dt * v[i] + 0.5 * dt * dt * a[i] + dt ** 3 / 6.0 * jerk[i]
            integrate(q, dv, body_q, body_v, body_nf, q1)
        out_q[k] = q1
        _kinematics(q1, zero, tables, data, f, phi, J, gamma)
        _stack(loop, (phi, J, gamma), X[k], A, res, Jx, xq, zero, runtime(False))
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
            _kinematics(q_try, zero, tables, data, f, phi, J, gamma)
            _stack(loop, (phi, J, gamma), X[k], A, res, Jx, xq, zero, runtime(False))
            norm_new = np.abs(res).max()
            if not norm_new < CORRECTOR_CONTRACTION * norm:
                break
            q1[:] = q_try
            out_q[k] = q1
            norm = norm_new
        if not ok:
            return k
        F, fine, V, lam = _prepare(A, rank)
        if not fine:
            out_cond[k] = np.inf
            return k
        if lam.size:     # below full rank: the eigenvalues are at hand
            cond = np.sqrt(lam[0] / lam[-1])
            if not cond < limit:
                out_cond[k] = cond
                return k
            cond = cond if exact else np.nan
        elif exact:
            cond = condition_number(A, warm[0], warm[1])
            if not cond < limit:
                out_cond[k] = cond
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
        _kinematics(q1, v1, tables, data, f, phi, J, gamma)
        # x_q at (q1, v1); A (and J_x) at q1 are already built
        Jp_pose[:] = 0.0
        pose_terms(pkinds, marker_terms(tables, data, e), v1, (x_pose, Jp_pose, xq_pose), runtime(True))
        if drive:
            for r in range(d):
                xq[r] = -gamma[nj + r]
        else:
            xq[:] = xq_pose
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
        # Rates of a few rows: loops (a BLAS call per product costs more than its arithmetic).
        for r in range(out_s.shape[1]):
            sd_r, sdd_r = 0.0, -gamma[nj + r]
            for c in range(n_v):
                sd_r += J[nj + r, c] * v1[c]
                sdd_r += J[nj + r, c] * a1[c]
            out_s[k, r], out_sd[k, r], out_sdd[k, r] = phi[nj + r], sd_r, sdd_r
        out_cond[k] = cond
        if drive:       # along a trajectory, the pose is the target
            for r in range(dp):
                xd_r, xdd_r = 0.0, xq_pose[r]
                for c in range(n_v):
                    xd_r += Jp_pose[r, c] * v1[c]
                    xdd_r += Jp_pose[r, c] * a1[c]
                out_pose[0, k, r], out_pose[1, k, r], out_pose[2, k, r] = x_pose[r], xd_r, xdd_r
    return k1


def _fast_segments(model, ev, rank=None, drive=False):
    """Model arguments of :func:`_segment`, along an end-effector trajectory or, with ``drive``,
    an actuator law (``rank``: the inverse or direct rank, by default the model's; any number
    to compile for an unassembled model, which has none)."""
    pkinds = pose_codes(model.pose_kinds)
    kinds = np.array([3 if a.kind == "angle" else 0 for a in model.actuators], dtype=np.int64) if drive else pkinds
    rank = int(model.ranks[1 if drive else 0]) if rank is None else int(rank)
    return Loop(ev.ref, ev.data_ref, ev.f, kinds, int(model.ee_marker), np.asarray(model.v_rigid, dtype=np.int64),
                int(ev.n_joint), rank, pkinds, bool(drive))


class _Samples:
    """The samples of :func:`_segment` for ``n`` samples of ``model`` and the state it carries
    from sample to sample (``state``, the condition numbers' ``u`` and ``warm``).

    The compiled loop writes each segment into a window of rows (:class:`Output`: the
    segment's and the sample before it, whose time gives the first step), from which
    :meth:`run` copies the finished samples: the actuators' values and rates, the condition
    numbers and the pose at every sample, and the configurations, velocities and
    accelerations ``q``, ``v``, ``a`` with ``keep``; without it only the configurations'
    reference coordinates (``reference`` (n, 7 n_b), the elastic ones being those of the first
    sample all along: the motion is rigid) -- a Delta with 64 elements per arm and 3200 samples
    holds 2 MB of them instead of 88 MB.
    """

    def __init__(self, model, n, q, keep=True, window=LONG_SEGMENT):
        n_v, n_a, n_r, d = model.n_v, len(model.actuators), len(model.v_rigid), len(model.pose_kinds)
        kept = n if keep else 0
        self.keep, self.index = keep, model.q_rigid
        self.q, self.v, self.a = np.zeros((kept, model.n_q)), np.zeros((kept, n_v)), np.zeros((kept, n_v))
        self.reference = None if keep else np.zeros((n, self.index.size))
        self.first = q.copy()       # (keep False: its elastic coordinates are every sample's)
        self.s, self.sd, self.sdd = np.zeros((n, n_a)), np.zeros((n, n_a)), np.zeros((n, n_a))
        self.cond = np.full(n, np.nan)
        self.pose = np.zeros((3, n, d))     # end-effector coordinates and rates
        m = min(n, window) + 1
        self.window = Output(np.zeros((m, model.n_q)), np.zeros((m, n_v)), np.zeros((m, n_v)), np.zeros((m, n_a)),
                             np.zeros((m, n_a)), np.zeros((m, n_a)), np.full(m, np.nan), np.zeros((3, m, d)))
        self.base = 0       # the sample in the window's first row
        self.state = (q.copy(), np.zeros(n_v), np.zeros(n_v), np.zeros(n_v))
        self.u = np.ones((2, n_r)) / np.sqrt(n_r)       # the estimate's vectors
        self.warm = condition_state(n_r)                # the condition numbers'

    def run(self, k0, k1, times, X, XD, XDD, fast, predicted, exact, limit):
        """:func:`_segment` over samples ``k0 .. k1 - 1`` (at most the window's), the finished
        ones copied out; the first not done (its best configuration and refused condition
        number: :meth:`unfinished`)."""
        args = self.arguments(k0, k1, times, X, XD, XDD, fast, predicted, exact, limit)
        end = self.base + _segment(*args)
        w, rows = self.window, slice(k0 - self.base, end - self.base)
        self.s[k0:end], self.sd[k0:end], self.sdd[k0:end] = w.s[rows], w.sd[rows], w.sdd[rows]
        self.cond[k0:end] = w.cond[rows]
        self.pose[:, k0:end] = w.pose[:, rows]
        if self.keep:
            self.q[k0:end], self.v[k0:end], self.a[k0:end] = w.q[rows], w.v[rows], w.a[rows]
        else:
            self.reference[k0:end] = w.q[rows][:, self.index]
        return end

    def arguments(self, k0, k1, times, X, XD, XDD, fast, predicted, exact, limit):
        """The arguments of :func:`_segment` for :meth:`run`: the targets from the sample
        before ``k0`` on, and the window's rows counted from there."""
        self.base = b = max(k0 - 1, 0)
        self.window.cond[k0 - b] = np.nan
        return (k0 - b, k1 - b, Targets(times[b:k1], X[b:k1], XD[b:k1], XDD[b:k1]), self.state, predicted, fast,
                (bool(exact), float(limit)), (self.u, self.warm), self.window)

    def sample(self, k):
        """Sample ``k`` of the last :meth:`run`: ``(q, v, a, s)``, the kept rows or (``keep``
        False) copies of the window's."""
        if self.keep:
            return self.q[k], self.v[k], self.a[k], self.s[k]
        w, j = self.window, k - self.base
        return w.q[j].copy(), w.v[j].copy(), w.a[j].copy(), self.s[k]

    def unfinished(self, k):
        """The sample ``k`` the last :meth:`run` did not finish: its best configuration (a
        copy) and the condition number that refused it (NaN where none did)."""
        return self.window.q[k - self.base].copy(), self.window.cond[k - self.base]

    def configurations(self):
        """The configurations: ``q`` (n, n_q) with ``keep``, else a :class:`Configurations`."""
        return self.q if self.keep else Configurations(self.reference, self.first, self.index)


@dataclass(frozen=True)
class Configurations:
    """The configurations of a rigid motion by their reference coordinates (:func:`rigid_motion`
    with ``keep`` False): row ``k``, or rows ``[a:b:c]``, as full configurations (n_q,) or
    (m, n_q) -- the elastic coordinates are ``base``'s at every sample.

    ``reference`` (n, 7 n_b): the reference coordinates ``base[index]`` of each sample.
    """

    reference: np.ndarray
    base: np.ndarray
    index: np.ndarray

    def __len__(self):
        return len(self.reference)

    def __getitem__(self, rows):
        part = self.reference[rows]
        q = np.repeat(self.base[None], len(part) if part.ndim == 2 else 1, axis=0)
        q[:, self.index] = part
        return q if part.ndim == 2 else q[0]


def load_kernels(model, ev, drive=False):
    """Compile, or load from numba's cache, the compiled sample loop for ``model`` now (with
    the stop signals held back: :func:`sim.errors.signals_deferred`); returns
    :func:`_fast_segments`' arguments for the evaluator ``ev`` (``drive``: for an actuator
    law)."""
    fast = _fast_segments(model, ev, drive=drive)
    with signals_deferred():
        _Samples(model, 1, model.q_home).run(*_no_samples(model), fast, False, False, 1 / SINGULAR_RATIO)
    return fast


def compile_loop(model):
    """Compile, or load from numba's cache, the sample step :func:`_segment` for ``model``
    without compiling or calling the evaluation (an unassembled model will do;
    :mod:`sim.app.parallel_compile`)."""
    fast = _fast_segments(model, Evaluator(model, load=False), rank=0)
    with signals_deferred():
        compile_for(_segment, *_Samples(model, 1, model.q_home).arguments(*_no_samples(model), fast, False, False,
                                                                          1 / SINGULAR_RATIO))


def _no_samples(model):
    """``k0, k1, times, X, XD, XDD`` of :func:`_segment` for no sample."""
    d = len(model.pose_kinds)
    return 1, 1, np.zeros(1), np.zeros((1, d)), np.zeros((1, d)), np.zeros((1, d))


def rigid_sample(model, q, pose, pose_dot=None, pose_ddot=None, *, ev, condition=True):
    """The rigid robot at one end-effector sample, from the prediction ``q`` (n_q,) by the
    corrector of the rigid motion (:func:`_segment`: plain Newton, no line search).

    Parameters
    ----------
    pose, pose_dot, pose_ddot : array_like, shape (d,)
        End-effector coordinates and their rates (default zero).
    ev : sim.model.evaluator.Evaluator
    condition : bool
        Compute the condition number and refuse a singular configuration; False: neither.

    Returns
    -------
    (q, v, a, cond) or None
        Configuration (n_q,), velocity and acceleration (n_v,) and condition number (NaN
        without ``condition``); None where Newton does not contract fast enough from ``q``
        or the configuration is singular.
    """
    rows = [np.asarray(x if x is not None else np.zeros(len(model.pose_kinds)), dtype=float).reshape(1, -1)
            for x in (pose, pose_dot, pose_ddot)]
    out = _Samples(model, 1, np.asarray(q, dtype=float))
    limit = 1 / SINGULAR_RATIO if condition else np.inf
    if out.run(0, 1, np.zeros(1), *rows, _fast_segments(model, ev), True, condition, limit) == 0:
        return None
    return out.q[0], out.v[0], out.a[0], out.cond[0]


def rigid_motion(model, trajectory, times, q_start=None, progress=None, on_sample=None, condition=True, keep=True):
    """Sample the rigid robot's motion along ``trajectory`` at ``times`` (n,) [s].

    ``model``: the robot, or its evaluator where the caller holds one
    (:func:`sim.model.evaluator.held`).  ``on_sample(q, v, a, s)`` (optional) is called with
    each sample as soon as it is known
    (``s``: the actuator values, not yet unwrapped), so that a consumer can start on it
    while the motion goes on (:func:`sim.solvers.frames.motion_and_frames`).

    ``keep=False`` (with ``on_sample``, which then gets each sample's own arrays): the motion's
    ``v`` and ``a`` are None and its ``q`` a :class:`Configurations` (the reference coordinates,
    rows made full where asked for): memory that does not grow with the model times the samples.

    ``condition=False``: no condition numbers (``condition`` is NaN), only the guard against
    singular configurations -- an estimate (power and inverse iteration on ``A^T A``) with a
    margin of ``ESTIMATE_MARGIN``, and the exact value where the estimate comes that close
    to the limit.  Saves the condition number's iterations (~4 sparse factorisations per sample).

    Every sample is taken by the compiled loop (:func:`_segment`, every model: translations
    and angles, independent or redundant constraints).  The first from the start pose found
    by continuation (:func:`sim.model.assembly.solve_pose`), and any sample whose corrector
    does not contract (a fast or sharp motion, the workspace's edge) from the line-search
    Newton of :func:`sim.model.assembly.assemble`, which gives the messages.

    Raises
    ------
    SimError
        When the trajectory leaves the workspace or meets a singular configuration; the
        message names the time.
    """
    model, ev = held(model)
    times = np.asarray(times, dtype=float)
    x, xd, xdd = trajectory(times)
    try:
        q = solve_pose(model, x[0], q_start=q_start)
    except SimError as exc:
        raise SimError(f"trajectory start (t = {times[0]:.6g} s): {exc}") from None

    def place(q, k, ev):
        t = times[k]
        try:
            return assemble(model, q, pose_target=x[k], what=f"the pose at t = {t:.6g} s", ev=ev)
        except AssemblyError as exc:
            raise SimError(_unreached(model, t, x[k], xdd, q_start, exc)) from None

    if not (keep or on_sample):
        raise ValueError("rigid_motion: keep=False hands the samples to on_sample only")
    out = _follow(model, ev, times, (x, xd, xdd), q, place, False, progress, on_sample, condition, keep)
    act = out.s.copy()
    # Angles are unwrapped so that drives are continuous through +-pi.
    ang = np.array([a.kind == "angle" for a in model.actuators], dtype=bool)
    act[:, ang] = np.unwrap(act[:, ang], axis=0)
    v, a = (out.v, out.a) if keep else (None, None)
    return RigidMotion(t=times, q=out.configurations(), v=v, a=a, pose=x, pose_dot=xd, pose_ddot=xdd, actuators=act,
                       actuators_dot=out.sd, actuators_ddot=out.sdd, condition=out.cond)


def _unreached(model, t, pose, accelerations, q_start, exc):
    """Why the rigid motion could not reach ``pose`` at ``t``: it is outside the workspace, or
    -- reached from the start by continuation -- the motion's accelerations carried the
    sample's first guess away (a table whose rows are rounded: its spline's second
    derivative is the rounding's noise, thousands of times the motion's own)."""
    where = f"at t = {t:.6g} s (pose {np.round(pose, 6).tolist()}"
    try:
        solve_pose(model, pose, q_start=q_start)
    except SimError:
        return f"the trajectory leaves the workspace {where}; {str(exc).split(': ', 1)[-1]})"
    return (f"the trajectory's pose {where}) is in the workspace but was not followed to it: the "
            f"accelerations, up to {np.abs(accelerations).max():.3g} (pose units/s^2), are too large for the "
            f"motion; a table's rows rounded to few digits or noisy give such accelerations (its spline's second "
            f"derivative): smooth the table, give fewer rows or more digits")


def driven_motion(model, times, s, s_dot, s_ddot, q_start=None, progress=None, condition=False):
    """Sample the rigid robot driven by its actuators at ``times`` (n,) [s]: its direct
    kinematics, by the same compiled loop as :func:`rigid_motion` with the actuators' values
    as the targets (``[C_q; C_s,q] v = [0; s_dot]`` and so on).

    Parameters
    ----------
    model : Model or sim.model.evaluator.Evaluator
        The robot, or its evaluator where the caller holds one (:func:`sim.model.evaluator.held`).
    times : ndarray, shape (n,)
    s, s_dot, s_ddot : ndarray, shape (n, n_a)
        The actuators' values (unwrapped angles [rad], lengths [m]) and rates at ``times``.
    q_start : ndarray, shape (n_q,), optional
        Where the assembly of the first sample starts (default the model's home).
    condition : bool
        Condition numbers of ``[C_q; C_s,q]`` (otherwise NaN; singular configurations are
        refused either way).

    Returns
    -------
    RigidMotion
        ``actuators`` are ``s`` and its rates; ``pose`` and its rates those of the end effector.

    Raises
    ------
    SimError
        When the actuators' values cannot be assembled or meet a singular configuration;
        the message names the time.
    """
    model, ev = held(model)
    times = np.asarray(times, dtype=float)
    s, sd, sdd = (np.array(x, dtype=float).reshape(times.size, -1) for x in (s, s_dot, s_ddot))

    def place(q, k, ev):
        return assemble(model, q, targets=s[k], what=f"the rigid robot at t = {times[k]:.6g} s", ev=ev)

    q = model.q_home if q_start is None else np.asarray(q_start, dtype=float)
    out = _follow(model, ev, times, (s, sd, sdd), place(q, 0, ev), place, True, progress, None, condition)
    return RigidMotion(t=times, q=out.q, v=out.v, a=out.a, pose=out.pose[0], pose_dot=out.pose[1],
                       pose_ddot=out.pose[2], actuators=s, actuators_dot=sd, actuators_ddot=sdd,
                       condition=out.cond)


def _follow(model, ev, times, targets, q, place, drive, progress, on_sample, condition, keep=True):
    """The samples of :func:`rigid_motion` (``drive`` False) or :func:`driven_motion` from the
    configuration ``q`` at ``times[0]``, with the evaluator ``ev``: segments of the compiled
    loop, and ``place(q, k, ev)`` (line-search Newton from ``q``, raising :class:`SimError`) at
    sample ``k`` where its corrector does not contract.  Returns the :class:`_Samples`
    (``keep``: as theirs)."""
    X, XD, XDD = targets
    n = times.size
    fast = load_kernels(model, ev, drive)
    segment = SEGMENT if on_sample is not None else LONG_SEGMENT
    out = _Samples(model, n, q, keep, segment)
    limit = 1 / SINGULAR_RATIO
    k, predicted = 0, True
    while k < n:
        # A sample found otherwise is finished alone, with its exact condition number.
        k1 = k + 1 if predicted else min(n, k + segment)
        end = out.run(k, k1, times, X, XD, XDD, fast, predicted, condition or predicted, limit)
        if predicted and end > k and not condition:
            out.cond[k] = np.nan
        for j in range(k, end):
            if on_sample is not None:
                on_sample(*out.sample(j))
        if progress is not None and end > k:
            progress.update(end - k)
        if end == k1:
            k, predicted = end, False
            continue
        best, cond = out.unfinished(end)
        if predicted and end == k:     # placed, yet not finished: singular
            why = "Newton does not converge there" if np.isnan(cond) else f"condition number {cond:.3g}"
            raise SimError(f"singular configuration at t = {times[end]:.6g} s ({why})")
        out.state[0][:] = place(best, end, ev)
        k, predicted = end, True
    return out


LSQ_TOL = 1e-13           # rad or m: the least-squares motion's Gauss-Newton step at convergence
LSQ_MAX_ITER = 40
LSQ_INDEPENDENT = 1e-16   # the actuators' rows are independent where their Gram matrix's eigenvalues
                          # span less than this ratio (singular values 1e-8)
LSQ_REGULAR = 1e-10       # Tikhonov weight of the step, relative to the largest diagonal of J_j^T J_j: keeps
#                           steps small where the joints' rows lose rank (a change point), so the motion
#                           continues on its branch


def least_squares_motion(model, times, s, s_dot, s_ddot, q_start=None, progress=None):
    """The rigid robot whose actuators follow ``s`` exactly and whose joints are as closely met as
    they can be: at each time, ``min ||C_j(q)||^2`` over the reference coordinates subject to
    ``C_s(q) = s``, by Gauss-Newton on the KKT system

        [J_j^T J_j + mu I, J_s^T; J_s, 0] [dq; lam] = [-J_j^T C_j; s - s(q)]

    from the previous sample (continuation).  Where the rigid robot can follow its actuators
    (:func:`driven_motion`) the two coincide; where it cannot -- a locked mechanism, a loop
    with a misaligned joint, a singular one past its change point -- this is the reference a
    flexible robot that bends to close its loops deviates from.

    Parameters
    ----------
    times : ndarray, shape (n,)
    s, s_dot, s_ddot : ndarray, shape (n, n_a)
        The actuators' values and rates (the rigid ones are followed; compliant ones are springs).
    q_start : ndarray, shape (n_q,), optional

    Returns
    -------
    motion : RigidMotion
        Velocities from the same least-squares problem at velocity level, accelerations their
        differences; ``condition`` NaN.
    residual : ndarray, shape (n,)
        ``||C_j(q)||`` at each time [m or rad]: how far the rigid robot is from closing its joints.
    """
    from sim.model.constraints import constraints
    from sim.model.kinematics import integrate, pose_jacobian

    times = np.asarray(times, dtype=float)
    n = times.size
    s, sd, sdd = (np.array(x, dtype=float).reshape(n, -1) for x in (s, s_dot, s_ddot))
    rigid, nj = model.v_rigid, model.rows["n_joint"]
    r = rigid.size
    q = (model.q_home if q_start is None else np.asarray(q_start, dtype=float)).copy()
    Q, V = np.zeros((n, model.n_q)), np.zeros((n, model.n_v))
    pose, pose_dot = np.zeros((n, len(model.pose_names))), np.zeros((n, len(model.pose_names)))
    residual = np.zeros(n)
    v = np.zeros(model.n_v)

    def kkt(J):
        Jj, Js = J[:nj, rigid], J[nj:, rigid]
        H = Jj.T @ Jj
        H += LSQ_REGULAR * max(np.diag(H).max(initial=0.0), 1.0) * np.eye(r)
        K = np.block([[H, Js.T], [Js, np.zeros((Js.shape[0], Js.shape[0]))]])
        # H is positive definite (regularised): K is regular where the actuators' rows are
        # independent, and LU solves it (an SVD least squares cost 20x as much, most of a
        # locked loop's run); the least-squares solution where they are not.
        gram = np.linalg.eigvalsh(Js @ Js.T) if Js.size else np.ones(1)
        return Jj, (K, gram.min() > LSQ_INDEPENDENT * max(gram.max(), 1e-300))

    def solve(system, rhs):
        K, regular = system
        x = np.linalg.solve(K, rhs) if regular else np.linalg.lstsq(K, rhs, rcond=None)[0]
        return x[:r]

    for k in range(n):
        if k:
            step = np.zeros(model.n_v)
            step[rigid] = (times[k] - times[k - 1]) * v[rigid]
            q = integrate(model, q, step)
        for _ in range(LSQ_MAX_ITER):
            phi, J = constraints(model, q, targets=s[k])
            Jj, K = kkt(J)
            rhs = np.concatenate([-Jj.T @ phi[:nj], -phi[nj:]])
            dx = solve(K, rhs)
            dv = np.zeros(model.n_v)
            dv[rigid] = dx
            q = integrate(model, q, dv)
            if np.abs(dx).max() < LSQ_TOL:
                break
        phi, J = constraints(model, q, targets=s[k])
        Jj, K = kkt(J)
        rates = solve(K, np.concatenate([np.zeros(r), sd[k][: K[0].shape[0] - r]]))
        v = np.zeros(model.n_v)
        v[rigid] = rates
        x, J_x = pose_jacobian(model, q)
        Q[k], V[k], pose[k], pose_dot[k] = q, v, x, J_x @ v
        residual[k] = np.linalg.norm(phi[:nj])
        if progress is not None:
            progress.update(1)
    A = np.gradient(V, times, axis=0) if n > 1 else np.zeros_like(V)
    pose_ddot = np.gradient(pose_dot, times, axis=0) if n > 1 else np.zeros_like(pose_dot)
    motion = RigidMotion(t=times, q=Q, v=V, a=A, pose=pose, pose_dot=pose_dot, pose_ddot=pose_ddot,
                         actuators=s, actuators_dot=sd, actuators_ddot=sdd, condition=np.full(n, np.nan))
    return motion, residual
