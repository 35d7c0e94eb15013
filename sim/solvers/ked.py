r"""Kineto-elastodynamics (KED): piecewise-constant modal superposition.

The motion is the rigid robot's motion plus a small elastic displacement ``u`` (n_v,) that
stays in the null space of the constraint Jacobian with the actuators locked (the elastic
motion of the instantaneous structure, paper 002 §3).  Linearising the equations of
:mod:`sim.model.dynamics` about the rigid state ``(q_r, v_r, a_r)``,

    M u_ddot + K u = F,        F = Q(q_r, v_r) - M a_r,

where ``Q`` holds gravity, the lumped springs and the quadratic-velocity (centrifugal and
Coriolis) forces of the rigid motion, so ``F`` is the whole d'Alembert load of the rigid motion
*including* its velocity-quadratic part (the coordinates ``v`` are not inertial, so ``-M a_r``
alone would miss, e.g., the centrifugal load on a rotating link).  External forces enter
through ``Q`` when a model declares them.  The constraint and rigid-actuator reactions do no
work on ``u`` and drop out of the projection; a compliant actuator (a spring) carries its
share of the load, so its drive deflects by the force it transmits.

The trajectory is cut into ``n`` intervals ``[t_i, t_{i+1}]``.  On interval ``i``, ``M`` and
``K`` are frozen at the configuration ``q_r(t_i)`` and the lowest ``r`` modes (``Phi``,
``omega``; ``Phi^T M Phi = 1``) are kept with modal damping ``zeta``; the modal load
``N = Phi^T F`` is linear in time between its values at the two ends, and each modal
coordinate is advanced exactly (Duhamel integral in closed form, paper 002 eq. 72-76,
:func:`ramp_response`).  At ``t_{i+1}`` the physical state ``u = Phi eta``,
``u_dot = Phi eta_dot`` is passed to the next interval's modes by mass projection,
``eta = Phi'^T M' u`` (paper 002 eq. 77).  The end-effector deviation is the linearised
``J_x(q_r) u`` (:func:`sim.model.kinematics.pose_jacobian`).

References
----------
Y. Zhao, "Kineto-elastodynamic characteristics of the six-degree-of-freedom parallel structure
seismic simulator", J. Robotics 2011 (paper 002), §3-4.4.
A. K. Chopra, *Dynamics of Structures*, 2nd ed., §5.2 (exact recurrence for piecewise-linear
excitation).
"""
import multiprocessing
import os
import threading
from concurrent.futures import ThreadPoolExecutor
import dataclasses
from dataclasses import dataclass, fields
from typing import NamedTuple

import numpy as np
from numba import njit

from sim.model.assembly import SINGULAR_RATIO
from sim.errors import SimError, signals_deferred
from sim.model.evaluator import Evaluator
from sim.model.kinematics import pose_codes
from sim.kernels.common import compile_for, runtime
from sim.kernels.equations import function
from sim.kernels.pose import pose_terms
from sim.solvers.modal import modes
from sim.solvers.motion import load_kernels as load_kernels_motion
from sim.solvers.motion import rigid_motion
from sim.solvers.subspace import MAX_ITER, SEED_ITER, Tracker, definite, mass_product, solver, solver_address

FRAME_CHUNK = 24   # frames per worker task (short next to a run); the tracker restarts at each


def ramp_response(omega, zeta, dt, eta, eta_dot, load_start, load_end):
    r"""Exact state at ``dt`` of ``eta_ddot + 2 zeta omega eta_dot + omega^2 eta = N(t)``.

    ``N`` is linear from ``load_start`` (t = 0) to ``load_end`` (t = dt).  The solution is the
    particular response to the ramp, ``c0 + c1 t`` with ``c1 = b / omega^2``,
    ``c0 = (a - 2 zeta omega c1) / omega^2``, plus the free damped response fitted to the
    initial state -- the closed form of the Duhamel integral of paper 002 eq. 75-76.
    Vectorised over modes (all arguments broadcast).

    Parameters
    ----------
    omega : ndarray, shape (r,)
        Undamped circular frequencies [rad/s], > 0.
    zeta : float or ndarray, shape (r,)
        Damping ratios in [0, 1).
    dt : float
        Interval length [s].
    eta, eta_dot : ndarray, shape (r,)
        Modal coordinates and rates at the start.
    load_start, load_end : ndarray, shape (r,)
        Modal loads at the two ends.

    Returns
    -------
    eta, eta_dot : ndarray, shape (r,)
        At the end of the interval.

    Notes
    -----
    The particular part divides by ``omega^2`` and ``omega^3``; relative round-off grows like
    ``eps / (omega dt)^2``, harmless for ``omega dt > 1e-3`` (one interval is then a
    thousandth of a period or more).
    """
    shape = np.broadcast(omega, zeta, eta, eta_dot, load_start, load_end).shape
    args = [np.ascontiguousarray(np.broadcast_to(np.asarray(x, dtype=float), shape)).ravel()
            for x in (omega, zeta, eta, eta_dot, load_start, load_end)]
    eta_end, eta_dot_end = np.empty(args[0].size), np.empty(args[0].size)
    _ramp(args[0], args[1], float(dt), *args[2:], eta_end, eta_dot_end, np.zeros((0, args[0].size)))
    return eta_end.reshape(shape), eta_dot_end.reshape(shape)


@njit(cache=True)
def _ramp(omega, zeta, dt, eta, eta_dot, a, b_end, eta_end, eta_dot_end, inner):
    """:func:`ramp_response` on arrays (r,), results in ``eta_end``, ``eta_dot_end``; and the
    coordinates ``inner[j - 1]`` (r,) at ``j dt / m`` (``m = inner.shape[0] + 1``), where the
    load has the same slope: the same particular and free parts, the free part's phase and
    decay advanced by one rotation of ``dt / m`` per sample (one complex multiplication, not
    three transcendental functions; its rounding, ~eps per sample, does not reach the end
    state, which the closed form gives)."""
    m = inner.shape[0] + 1
    h = dt / m
    for i in range(omega.size):
        w, z = omega[i], zeta[i]
        b = (b_end[i] - a[i]) / dt
        c1 = b / w**2
        c0 = (a[i] - 2 * z * w * c1) / w**2
        wd = w * np.sqrt(1 - z**2)
        sigma = z * w
        A = eta[i] - c0
        B = (eta_dot[i] - c1 + sigma * A) / wd
        if m > 1:
            d_step = np.exp(-sigma * h)
            c_step, s_step = np.cos(wd * h), np.sin(wd * h)
            co, si = d_step * c_step, d_step * s_step     # decay times the phase's cosine and sine
            for j in range(1, m):
                inner[j - 1, i] = A * co + B * si + c0 + c1 * (j * h)
                co, si = d_step * (co * c_step - si * s_step), d_step * (si * c_step + co * s_step)
        decay = np.exp(-sigma * dt)
        co, si = np.cos(wd * dt), np.sin(wd * dt)
        eta_end[i] = decay * (A * co + B * si) + c0 + c1 * dt
        eta_dot_end[i] = decay * ((wd * B - sigma * A) * co - (sigma * B + wd * A) * si) + c1


@njit(cache=True)
def _modal_step(state, frozen, loads, dt, out):
    """One interval of the modal superposition, in place: ``state = (u, u_dot)`` (n_v,)
    advanced over ``dt`` on the modes ``frozen = (omega, shapes, mass_shapes, zeta)`` under the
    load going linearly over ``loads = (load_start, load_end)`` (n_v,); ``out = (eta, eta_dot,
    inner)``: the modal state (r,) at the end and ``inner[j - 1]`` (r,) the modal coordinates at
    ``j dt / m`` (``m = inner.shape[0] + 1``; no rows: none), the same ramp response stopped
    part-way with the load reached there.  Products by loops: a BLAS call costs more than
    their few hundred operations."""
    u, u_dot = state
    omega, shapes, mass_shapes, zeta = frozen
    load_start, load_end = loads
    eta, eta_dot, inner = out
    n_v, r = shapes.shape
    e0, ed0, p0, p1 = np.zeros(r), np.zeros(r), np.zeros(r), np.zeros(r)
    for i in range(n_v):
        for k in range(r):
            e0[k] += u[i] * mass_shapes[i, k]
            ed0[k] += u_dot[i] * mass_shapes[i, k]
            p0[k] += load_start[i] * shapes[i, k]
            p1[k] += load_end[i] * shapes[i, k]
    _ramp(omega, zeta, dt, e0, ed0, p0, p1, eta, eta_dot, inner)
    for i in range(n_v):
        x, xd = 0.0, 0.0
        for k in range(r):
            x += shapes[i, k] * eta[k]
            xd += shapes[i, k] * eta_dot[k]
        u[i], u_dot[i] = x, xd


@njit(cache=True)
def _modal_steps(time, frames, zeta, state, out):
    """All the intervals of :func:`integrate_frames`: ``frames = (omega, shapes, mass_shapes,
    load)`` and ``zeta`` stacked on the first axis, from ``state = (u, u_dot)``; of ``out =
    (eta, eta_dot, U, inner)`` rows ``1 ..`` of ``eta``, ``eta_dot``, ``U`` filled, and
    ``inner`` (n - 1, m - 1, r) the modal coordinates inside the intervals
    (:func:`_modal_step`)."""
    omega, shapes, mass_shapes, load = frames
    eta, eta_dot, U, inner = out
    u = state[0]
    for i in range(time.size - 1):
        _modal_step(state, (omega[i], shapes[i], mass_shapes[i], zeta[i]), (load[i], load[i + 1]),
                    time[i + 1] - time[i], (eta[i + 1], eta_dot[i + 1], inner[i]))
        U[i + 1] = u


@dataclass(frozen=True)
class Frame:
    """The frozen structure of one instant of the rigid motion.

    Attributes
    ----------
    load : ndarray, shape (n_v,)
        ``F = Q - M a_r`` (see the module docstring) [N, N m].
    omega : ndarray, shape (r,)
        Lowest elastic circular frequencies [rad/s].
    shapes : ndarray, shape (n_v, r)
        Their mass-normalised shapes ``Phi`` (constrained subspace, actuators locked).
    mass_shapes : ndarray, shape (n_v, r)
        ``M Phi`` with the mass matrix of this instant: the mass projection onto these modes
        (``eta = Phi^T M u``) needs no more of ``M``.
    pose_jacobian : ndarray, shape (d, n_v)
        End-effector coordinates' Jacobian, for the linearised deviation.
    static_load : ndarray, shape (n_v,)
        ``K_c^-1 F``: the static displacement under the load held constant (constrained
        motions, actuators locked), for the static correction of the truncated modes.
    static_rest : ndarray, shape (n_v,)
        ``K_c^-1 Q(q, 0)``: the static deflection of the robot at rest at this pose (gravity,
        lumped-spring preloads).
    """

    load: np.ndarray
    omega: np.ndarray
    shapes: np.ndarray
    mass_shapes: np.ndarray
    pose_jacobian: np.ndarray
    static_load: np.ndarray
    static_rest: np.ndarray


def free_motions(model, q, ev):
    """The number of free (rigid-body) motions of the model at ``q`` with the actuators locked.

    Where the locked rows determine the reference coordinates (``J_r`` square and regular)
    and the bodies' elastic stiffness is positive definite, every constrained motion strains
    a body (``v = [G x; x]``, energy ``x^T K_ee x > 0``): none, and no eigensolve to tell.
    Otherwise the structural decision of :func:`sim.solvers.modal.modes` (the null space of
    the deformation rows).  ``ev``: the model's :class:`sim.model.evaluator.Evaluator`.
    """
    J = ev.evaluate(q, np.zeros(model.n_v), targets=np.zeros(len(model.actuators))).J
    rigid = model.v_rigid
    if J.shape[0] == rigid.size:
        sigma = np.linalg.svd(J[:, rigid], compute_uv=False)
        if sigma[-1] > SINGULAR_RATIO * sigma[0] and definite(model):
            return 0
    return modes(model, q, count=1).rigid_count


@dataclass(frozen=True)
class Frames:
    """The frames of ``n`` instants, stacked: the record :func:`integrate_frames` steps through.

    Attributes
    ----------
    load : ndarray, shape (n, n_v)
    omega : ndarray, shape (n, r)
    shapes, mass_shapes : ndarray, shape (n, n_v, r)
    pose_jacobian : ndarray, shape (n, d, n_v)
    static_load, static_rest : ndarray, shape (n, n_v)
        Row ``k`` of each: the fields of :class:`Frame` at instant ``k``.
    """

    load: np.ndarray
    omega: np.ndarray
    shapes: np.ndarray
    mass_shapes: np.ndarray
    pose_jacobian: np.ndarray
    static_load: np.ndarray
    static_rest: np.ndarray

    @classmethod
    def empty(cls, n, n_v, r, d, make=np.empty):
        """``n`` frames to be filled (``make``: ``np.zeros`` for values to compute with);
        ``omega`` zero (a frame left unfilled has none)."""
        return cls(make((n, n_v)), np.zeros((n, r)), make((n, n_v, r)), make((n, n_v, r)), make((n, d, n_v)),
                   make((n, n_v)), make((n, n_v)))

    @classmethod
    def stack(cls, frames):
        """From a sequence of :class:`Frame`."""
        return cls(*(np.stack([getattr(f, name) for f in frames]).astype(float) for name in FIELDS))

    def __len__(self):
        return self.load.shape[0]

    def __getitem__(self, k):
        return Frame(*(getattr(self, name)[k] for name in FIELDS))

    def __iter__(self):
        return (self[k] for k in range(len(self)))

    def put(self, k, fr):
        """Store the :class:`Frame` ``fr`` as instant ``k``."""
        for name in FIELDS:
            getattr(self, name)[k] = getattr(fr, name)


# The fields of Frame, which Frames stacks under the same names.
FIELDS = tuple(f.name for f in fields(Frame))


class FrameModel(NamedTuple):
    """The model's part of :func:`_frame_loop` (:func:`_loop_arguments`): the evaluation of
    ``tables`` at the addresses ``f`` (:func:`sim.kernels.equations.addresses`) into the
    markers' kinematics ``data`` (the evaluator's, by reference), the
    end-effector marker ``e`` and its coordinate codes ``kinds``, the ``n_all`` rows and the
    locked ones ``keep`` (joints and rigid actuators), whether the tangent stiffness is wanted
    (``stiff``), and the address ``solve`` of the modes solver
    (:func:`sim.solvers.subspace.solver_address`)."""

    tables: object
    data: object
    f: np.ndarray
    kinds: np.ndarray
    e: int
    n_all: int
    keep: np.ndarray
    stiff: bool
    solve: int


@njit(cache=True, nogil=True)
def _frame_loop(states, model, layout, seed, options, out, sweeps):
    """The frames of the rigid states ``states = (qs, vs, accs, ss)`` (n, ...; the actuators
    locked at ``ss`` (n, n_a)) in one compiled loop, the tracker starting from ``seed``: the
    evaluation of the :class:`FrameModel` ``model`` (``M`` not flushed; with the forces at rest
    ``Q(q, 0)`` and, with ``stiff``, the tangent stiffness of the springs, compliant drives and
    stiffening), the modes and static displacements by its solver with the tracker's
    ``layout`` (:meth:`sim.solvers.subspace.Tracker.layout`) and ``options = (settings,
    max_iter, seed_iter)``, the load and the end-effector Jacobian
    (:func:`sim.kernels.pose.pose_terms`) into ``out``, the arrays of :class:`Frames` (n, ...);
    ``sweeps`` (n,) the solver's count per frame: -1 a dense solve, -2 where it turned the
    frame down (left unfilled, for :func:`_general` to take; the tracker then starts afresh),
    -3 where the stiffness is not positive definite on the elastic motions (unfilled too).
    The same steps as :meth:`sim.solvers.subspace.Tracker.modes`.  Returns the last subspace.

    The solver is called through its address, so that this loop compiles once for every
    model and links neither solver: each compiles on its own, and only where a model needs it.
    """
    qs, vs, accs, ss = states
    tables, data, f, kinds, e, n_all, keep, stiff, solve = model
    settings, max_iter, seed_iter = options
    load, omega, shapes, mass_shapes, jac, static_load, static_rest = out
    n_v = vs.shape[1]
    r = omega.shape[1]
    M = np.zeros((n_v, n_v))
    Q = np.zeros(n_v)
    Q0 = np.zeros(n_v)
    phi = np.zeros(n_all)
    J = np.zeros((keep.size, n_v))
    J_all = J if keep.size == n_all else np.zeros((n_all, n_v))    # all rows locked: no copy
    gamma = np.zeros(n_all)
    Kt = np.zeros((n_v, n_v)) if stiff else np.zeros((0, 0))
    empty = np.zeros((0, 0))
    rest = np.zeros(n_v)
    F = np.zeros((n_v, 2))
    a = np.zeros((n_v, 1))
    x, xq, zero3 = np.zeros(kinds.size), np.zeros(kinds.size), np.zeros(3)
    none = np.zeros((0, 0))
    X, X_prev, fresh = seed, none, True
    order = np.full(n_v, -1)    # the basis's dependent columns, chosen afresh
    off, on = runtime(False), runtime(True)
    with_K = runtime(stiff)
    evaluate = function(f[0], tables)
    modes = solver(solve)
    for k in range(vs.shape[0]):
        J_all.ravel()[:] = 0.0     # the rows accumulate; M's blocks are overwritten and the rest stays zero
        if stiff:
            Kt.ravel()[:] = 0.0
        evaluate(qs[k], vs[k], tables, data, (M, Q, Q0, phi, J_all, gamma, empty, empty, Kt), ss[k],
                 (off, with_K, off, on))
        if keep.size < n_all:
            for i in range(keep.size):
                for j in range(n_v):
                    J[i, j] = J_all[keep[i], j]
        # Element by element here and below: slice assignments compile shape checks and
        # broadcasting, much of a cold start's compilation for a few hundred numbers.
        for i in range(n_v):
            a[i, 0] = accs[k, i]
        Ma = mass_product(M, layout, a)
        for i in range(n_v):
            F[i, 0] = Q[i] - Ma[i, 0]
            F[i, 1] = Q0[i]
        lam, sh, msh, X_new, sweeps[k], U = modes(M, Kt, J, layout, (order, X, X_prev), settings,
                                                  seed_iter if fresh else max_iter, F)
        if sweeps[k] < -1:     # turned down, or no positive stiffness: left unfilled
            X, X_prev, fresh = seed, none, True
            continue
        X_prev = none if fresh else X
        X, fresh = X_new, False
        for i in range(r):
            omega[k, i] = np.sqrt(max(lam[i], 0.0))
        for i in range(n_v):
            for j in range(r):
                shapes[k, i, j] = sh[i, j]
                mass_shapes[k, i, j] = msh[i, j]
            load[k, i] = F[i, 0]
            static_load[k, i] = U[i, 0]
            static_rest[k, i] = U[i, 1]
            for j in range(kinds.size):
                jac[k, j, i] = 0.0
        pose_terms(kinds, (data.p[e], data.A[e], data.Jp[e], data.Jw[e], tables.cols[e], zero3, zero3), rest,
                   (x, jac[k], xq), off)
    return X


def _loop_arguments(model, ev, tracker, general=False):
    """The arguments of :func:`_frame_loop` between the states and the output: ``model``,
    ``layout``, ``seed`` and ``options``, with the tracker's solver
    (:func:`sim.solvers.subspace._constant` where its stiffness is constant, else
    :func:`sim.solvers.subspace._general`), or the general one."""
    frame = FrameModel(ev.ref, ev.data_ref, ev.f, pose_codes(model.pose_kinds), int(model.ee_marker), int(ev.n_rows),
                       np.flatnonzero(ev.keep), bool(ev.stiff), solver_address(tracker.constant and not general))
    return frame, tracker.layout(), tracker.seed, (tracker.settings(), MAX_ITER, SEED_ITER)


def _out(frames, rows=slice(None)):
    """The arrays of :class:`Frames` ``frames`` (rows ``rows``), as :func:`_frame_loop` writes them."""
    return tuple(getattr(frames, name)[rows] for name in FIELDS)


def _frames(model, ev, tracker, states, out, k0, progress=None):
    """The frames of the rigid states ``states = (q, v, a, s)`` (arrays, sample axis first;
    ``s`` the actuator values, where they are locked) into ``out`` (:class:`Frames`) from
    row ``k0``, by :func:`_frame_loop`; the frames its solver turned down (the constant
    stiffness's partitioned basis near a singular configuration) again with the general one.

    The ``tracker`` starts afresh from its seed (or a dense eigensolve) every ``FRAME_CHUNK``
    states, the unit of work shared with the worker threads: each frame then has the same
    starting subspace, and the same numbers, whichever thread computes it.
    """
    loop = _loop_arguments(model, ev, tracker)
    for c0 in range(0, len(states[0]), FRAME_CHUNK):
        chunk = slice(c0, min(len(states[0]), c0 + FRAME_CHUNK))
        rows = slice(k0 + chunk.start, k0 + chunk.stop)
        sweeps = np.zeros(chunk.stop - chunk.start, dtype=np.int64)
        part = tuple(np.ascontiguousarray(x[chunk], dtype=float) for x in states)
        _frame_loop(part, *loop, _out(out, rows), sweeps)
        down = np.flatnonzero(sweeps == -2)
        if down.size:
            redo = np.zeros(down.size, dtype=np.int64)
            refill = Frames.empty(down.size, model.n_v, tracker.count, len(model.pose_kinds))
            _frame_loop(tuple(x[down] for x in part), *_loop_arguments(model, ev, tracker, general=True),
                        _out(refill), redo)
            for i, k in enumerate(down):
                out.put(rows.start + k, refill[i])
            sweeps[down] = redo
            tracker.turned_down += down.size
        tracker.sweeps.extend(sweeps.tolist())
        if progress is not None:
            progress.update(len(sweeps))


def _seed(model, ev, tracker, state):
    """The Ritz vectors (n, p) of the tracker's dense start at ``state = (q, v, a, s)``
    (arrays of one sample)."""
    tracker.seed = np.zeros((0, 0))
    sweeps = np.zeros(1, dtype=np.int64)
    return _frame_loop(tuple(np.ascontiguousarray(x, dtype=float) for x in state), *_loop_arguments(model, ev, tracker),
                       _out(Frames.empty(1, model.n_v, tracker.count, len(model.pose_kinds))), sweeps)


def _workers(workers, n):
    """Worker threads to use besides this one for ``n`` frames (0: all here).

    ``workers`` None: two threads in all where there are two cores or more.  Always 0 in a
    worker process (a parameter sweep's case): the sweep already keeps the cores busy.
    """
    workers = min(2, os.cpu_count() or 1) if workers is None else int(workers)
    if multiprocessing.parent_process() is not None:
        return 0
    return max(0, min(workers - 1, n // FRAME_CHUNK - 1))


class FramePool:
    """Frames of a stream of ``n`` rigid states, shared between this thread and worker threads.

    States arrive one by one (:meth:`add`); the first makes the trackers' common start
    (:meth:`_prepare`, in a worker while the next states come), and every ``FRAME_CHUNK`` of
    them go to the worker threads as one task.  :meth:`finish` computes the remaining states
    here, then takes back, from the last one, the tasks no worker has started, so that this
    thread and the workers end together.  Frames at different instants are independent, and
    each is computed by the same code from the same starting subspace whichever thread runs
    it (:func:`_frames`; every chunk's tracker starts from the seed made at the first state):
    the numbers do not depend on the sharing.

    Threads, not processes: the compiled kernels (the frames' loop and the rigid motion's)
    release the GIL, so a thread runs in parallel with the motion from the first chunk on,
    writing its frames straight into the shared :class:`Frames`.  Each thread has its own
    :class:`sim.model.evaluator.Evaluator` and tracker (their work arrays).

    Use as a context manager: leaving it waits for the running tasks and drops the others.

    Parameters
    ----------
    model : Model
    count : int
        Modes per frame.
    n : int
        States to come.
    workers : int
        Worker threads besides this one (0: everything here).
    progress : tqdm-like, optional
        ``update(k)`` as frames are done.
    """

    def __init__(self, model, count, n, workers, progress=None):
        self.model, self.count, self.progress = model, count, progress
        self.frames = Frames.empty(n, model.n_v, count, len(model.pose_kinds))
        self.free = None
        self.first = None       # the first state
        self.failure = None     # what stopped _prepare
        self.seed = None   # the trackers' common start: Ritz vectors at the first state ...
        self.seeded = threading.Event()     # ... once known
        self.buffer = []
        self.start = 0     # row of the first buffered state
        self.tasks = []    # (start, states, future)
        self.local = threading.local()
        self.pool = None if workers < 1 else ThreadPoolExecutor(workers, thread_name_prefix="frames")
        if self.pool is not None:   # a worker gets ready while the motion starts
            self.pool.submit(self._ready)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)

    def _states(self, rows):
        return tuple(np.array(x) for x in zip(*rows))

    def _ready(self):
        """A worker's preparation: its evaluator, and the stepping kernel loaded."""
        self._parts()
        integrate_frames(np.zeros(1), Frames.empty(1, 1, 1, 1, np.zeros), np.zeros((1, 1)), 0.0)

    def add(self, q, v, a, s):
        """One rigid state: ``q`` (n_q,), ``v``, ``a`` (n_v,), actuator values ``s`` (n_a,)."""
        if self.first is None:
            self.first = (q, v, a, s)
            if self.pool is not None:    # the seed while the first chunk's states come
                self.pool.submit(self._prepare)
        self.buffer.append((q, v, a, s))
        if self.pool is not None and len(self.buffer) == FRAME_CHUNK:
            states = self._states(self.buffer)
            future = self.pool.submit(self._compute, self.start, states)
            if self.progress is not None:
                future.add_done_callback(lambda f: f.cancelled() or self.progress.update(FRAME_CHUNK))
            self.tasks.append((self.start, states, future))
            self.start += FRAME_CHUNK
            self.buffer = []

    def _parts(self):
        """This thread's evaluator and tracker (None until the free motions are known)."""
        local = self.local
        if not hasattr(local, "ev"):
            with signals_deferred():    # compiles in the main thread (see sim.errors.signals_deferred)
                local.ev, local.tracker = Evaluator(self.model), None
        if local.tracker is None and self.free is not None:
            local.tracker = Tracker(self.model, self.count, self.free)
        return local.ev, local.tracker

    def _prepare(self):
        """At the first state: the free motions (decided once for the motion) and the trackers'
        seed, its Ritz vectors; the frames' tasks wait for them."""
        try:
            ev = self._parts()[0]
            with signals_deferred():    # where it runs in the main thread (see sim.errors.signals_deferred)
                self.free = free_motions(self.model, self.first[0], ev)
            self.seed = _seed(self.model, ev, self._parts()[1], tuple(np.array([x]) for x in self.first))
        except BaseException as exc:
            self.failure = exc
            raise
        finally:    # whatever happens, no task waits for ever
            self.seeded.set()

    def _compute(self, start, states, progress=None):
        """Frames of ``states`` into rows ``start ..``, with this thread's evaluator and tracker
        (once :meth:`_prepare` is done)."""
        self.seeded.wait()
        if self.failure is not None:    # the first task's error, wherever it is asked for
            raise self.failure
        ev, tracker = self._parts()
        tracker.seed = np.zeros((0, 0)) if self.seed is None else self.seed
        _frames(self.model, ev, tracker, states, self.frames, start, progress)

    def finish(self):
        """All the frames (:class:`Frames`), in the order of :meth:`add`."""
        if self.pool is None and self.first is not None:
            self._prepare()
        if self.buffer:
            self._compute(self.start, self._states(self.buffer), self.progress)
        self.buffer = []
        for start, states, future in reversed(self.tasks):
            if future.cancel():
                self._compute(start, states, self.progress)
        for _, _, future in self.tasks:
            if not future.cancelled():   # the others were done here
                future.result()
        return self.frames


def _stable(frames, times):
    """``frames``, or a :class:`sim.errors.SimError` naming the first instant of ``times``
    where the frozen structure had no positive stiffness (its frame unfilled, see
    :func:`_frame_loop`)."""
    bad = np.flatnonzero(~(frames.omega[:, :1] > 0).all(axis=1)) if frames.omega.shape[1] else []
    if len(bad):
        raise SimError(f"the robot frozen at t = {times[bad[0]]:.6g} s has no positive stiffness on its elastic "
                       f"motions (buckled under its axial loads, or a motion that nothing holds)")
    return frames


def frames_along(model, motion, count, progress=None, workers=None):
    """Frames (:class:`Frames`) at every sample of a :class:`sim.solvers.motion.RigidMotion`.

    ``workers``: threads (default two, or one on a single core); see :class:`FramePool`.
    """
    n = len(motion.q)
    with FramePool(model, count, n, _workers(workers, n), progress) as pool:
        for state in zip(motion.q, motion.v, motion.a, motion.actuators):
            pool.add(*state)
        return _stable(pool.finish(), getattr(motion, "t", np.arange(n, dtype=float)))


def load_kernels(model, count):
    """Compile, or load from numba's cache, the kernels of :func:`ked` for ``model`` with
    ``count`` modes now: the rigid motion's, the frames' and the modal stepping's (a first
    call would otherwise do it, ~0.1 s in a process; ``sim run`` does it before the clocks
    of its analyses start)."""
    load_kernels_motion(model, Evaluator(model))
    compile_loops(model, count)


def compile_loops(model, count):
    """Compile, or load from numba's cache, the KED's own kernels for ``model`` with ``count``
    modes (the frames' loop, the modal stepping) without compiling or calling the evaluation
    (an unassembled model will do; :mod:`sim.app.parallel_compile`), and both modes solvers
    (:func:`sim.solvers.subspace.solver_address`): the one of the constant stiffness, the
    general one for any other robot that comes next, or for this one where it has free
    motions or turns the constant solver down."""
    with signals_deferred():
        tracker = Tracker(model, count)
        loop = _loop_arguments(model, Evaluator(model, load=False), tracker)
        solver_address(not tracker.constant)
        states = (np.zeros((0, model.n_q)), np.zeros((0, model.n_v)), np.zeros((0, model.n_v)),
                  np.zeros((0, len(model.actuators))))
        compile_for(_frame_loop, states, *loop, _out(Frames.empty(0, model.n_v, count, len(model.pose_kinds))),
                    np.zeros(0, dtype=np.int64))
        integrate_frames(np.zeros(1), Frames.empty(1, 1, 1, 1, np.zeros), np.zeros((1, 1)), 0.0)


def motion_and_frames(model, trajectory, times, count, progress_motion=None, progress_frames=None, workers=None,
                      q_start=None):
    """Rigid motion along ``trajectory`` at ``times`` (n,) and its frames, overlapped.

    The frames of the first samples are computed by a worker thread while this one goes on
    with the motion (:func:`sim.solvers.motion.rigid_motion` hands each sample to a
    :class:`FramePool`); the same numbers as :func:`sim.solvers.motion.rigid_motion` followed by
    :func:`frames_along`, up to the round-off of locking angle actuators at their wrapped
    rather than unwrapped values.  ``q_start``: as :func:`sim.solvers.motion.rigid_motion`'s.

    Returns
    -------
    motion : RigidMotion
    frames : Frames
        ``n`` instants.
    """
    with FramePool(model, count, len(times), _workers(workers, len(times)), progress_frames) as pool:
        motion = rigid_motion(model, trajectory, times, q_start=q_start, progress=progress_motion,
                              on_sample=pool.add, condition=False)
        return motion, _stable(pool.finish(), times)


class ModalStepper:
    """Piecewise-constant modal superposition, one interval per :meth:`step`.

    The state is the physical elastic displacement and velocity ``u``, ``u_dot`` (n_v,); each
    step projects it on the interval's modes, advances the modal coordinates exactly and maps
    them back.

    Parameters
    ----------
    damping_ratio : float or ndarray, shape (r,)
        Modal damping ratio(s) zeta in [0, 1).
    u, u_dot : ndarray, shape (n_v,)
        Initial elastic state (zero: the robot starts undeformed and at rest, paper 002
        eq. 63 with ``U(0) = 0``, as the full transient does).
    """

    def __init__(self, damping_ratio, u, u_dot):
        self.zeta = np.asarray(damping_ratio, dtype=float)
        self.u = np.asarray(u, dtype=float).copy()
        self.u_dot = np.asarray(u_dot, dtype=float).copy()

    def step(self, fr, load_end, dt):
        """Advance over one interval frozen at ``fr``; the load ends at ``load_end`` (n_v,).

        Returns
        -------
        eta, eta_dot : ndarray, shape (r,)
            Modal coordinates at the end of the interval (modes of ``fr``).
        """
        r = fr.omega.size
        eta, eta_dot = np.empty(r), np.empty(r)
        c = np.ascontiguousarray
        _modal_step((self.u, self.u_dot), (c(fr.omega), c(fr.shapes), c(fr.mass_shapes),
                                           np.broadcast_to(self.zeta, r).astype(float)),
                    (c(fr.load), c(load_end, dtype=float)), float(dt), (eta, eta_dot, np.zeros((0, r))))
        return eta, eta_dot


@dataclass(frozen=True)
class KedSamples:
    """KED response at ``parts`` instants per interval, ``time`` (n parts + 1,): the interval
    ends and the instants between them.  ``pose_rigid``, ``pose``, ``deviation``,
    ``deviation_static``, ``deviation_dynamic`` (n parts + 1, d) as in :class:`KedResult`.

    Between interval ends the modal coordinates are the interval's exact ramp response; the
    static correction and the pose Jacobian go linearly from one frame's to the next (they
    are frozen per frame, and this makes the samples meet the interval ends), the static
    deflection at rest likewise; the rigid pose is the motion law's (``pose_at``), or linear
    between the frames' without one.
    """

    time: np.ndarray
    pose_rigid: np.ndarray
    pose: np.ndarray
    deviation: np.ndarray
    deviation_static: np.ndarray
    deviation_dynamic: np.ndarray


@dataclass(frozen=True)
class KedResult(KedSamples):
    """KED response at the interval ends ``time`` (n + 1,).

    ``pose_rigid``, ``pose``, ``deviation`` (n + 1, d) [m, rad]; ``deviation_static`` (n + 1, d)
    the static deflection of the robot at rest at each pose (:attr:`Frame.static_rest`),
    ``deviation_dynamic = deviation - deviation_static``; ``frequencies`` (n + 1, r) [Hz] of
    the frozen structure at each instant; ``modal_coordinates`` and ``modal_velocities``
    (n + 1, r): row 0 on the first interval's modes, row ``i + 1`` at the end of interval
    ``i`` on its modes; ``displacement`` (n + 1, n_v) the elastic displacement ``u``: the modal
    part plus the static correction of the truncated modes.  ``samples``: the response between
    the interval ends as well (:class:`KedSamples`), when asked for.
    """

    frequencies: np.ndarray
    modal_coordinates: np.ndarray
    modal_velocities: np.ndarray
    displacement: np.ndarray
    samples: "KedSamples" = None


def _apply(A, x):
    """``A[k] @ x[k]`` (n, a) for ``A`` (n, a, b), ``x`` (n, b): batched matrix-vector
    products (BLAS; ``einsum`` loops over them one scalar at a time)."""
    return (A @ x[..., None])[..., 0]


def _between(time, frames, inner, correction, static, pose_rigid, result, pose_at):
    """:class:`KedSamples` from the modal coordinates ``inner`` (n, parts - 1, r) between the
    interval ends (:func:`_modal_steps`; see :func:`integrate_frames`)."""
    n, parts = inner.shape[0], inner.shape[1] + 1
    f = (np.arange(1, parts) / parts)[None, :, None]                      # (1, m - 1, 1)
    J0, J1 = frames.pose_jacobian[:-1], frames.pose_jacobian[1:]           # (n, d, n_v)
    JPhi0 = J0 @ frames.shapes[:-1]                                       # (n, d, r)
    JPhi1 = J1 @ frames.shapes[:-1]
    modal = (1 - f) * (inner @ JPhi0.transpose(0, 2, 1)) + f * (inner @ JPhi1.transpose(0, 2, 1))
    c0, c1 = correction[:-1], correction[1:]                               # (n, n_v)
    # J(f) (c0 + f (c1 - c0)) with J(f) = J0 + f (J1 - J0): a quadratic in f.
    Jc00, Jc01 = _apply(J0, c0), _apply(J0, c1)
    Jc10, Jc11 = _apply(J1, c0), _apply(J1, c1)
    corr = ((1 - f) ** 2 * Jc00[:, None] + (1 - f) * f * (Jc01 + Jc10)[:, None] + f**2 * Jc11[:, None])
    inner_dev = modal + corr
    inner_static = (1 - f) * static[:-1, None] + f * static[1:, None]
    inner_time = time[:-1, None] + f[..., 0] * np.diff(time)[:, None]

    def merge(ends, between):
        """Interval ends and the instants between them, in time order."""
        return np.concatenate([np.concatenate([ends[:-1, None], between], axis=1).reshape(n * parts, -1),
                               ends[-1:]]) if n else ends

    t = merge(time[:, None], inner_time[..., None])[:, 0]
    deviation = merge(result.deviation, inner_dev)
    deviation_static = merge(static, inner_static)
    rigid = (np.column_stack([np.interp(t, time, column) for column in pose_rigid.T]) if pose_at is None
             else np.asarray(pose_at(t), dtype=float).reshape(t.size, -1))
    rigid[::parts] = pose_rigid                                            # the frames' own values
    return KedSamples(time=t, pose_rigid=rigid, pose=rigid + deviation, deviation=deviation,
                      deviation_static=deviation_static, deviation_dynamic=deviation - deviation_static)


def parts_for(time, frequencies, per_period):
    """Instants per interval that sample the highest of ``frequencies`` [Hz] ``per_period``
    times per period at least (1: the interval ends do)."""
    top = float(np.max(frequencies, initial=0.0))
    dt = float(np.max(np.diff(time), initial=0.0))
    return max(1, int(np.ceil(dt * top * per_period)))


def static_correction(frames):
    """``K_c^-1 F - Phi Omega^-2 Phi^T F`` (n, n_v) at each frame: the quasi-static response of
    the modes the frame leaves out (mode-acceleration method), which the modal part lacks.

    Stiff directions whose modes lie far above the kept ones (the axial modes of links that
    carry the end-effector loads) respond to the slowly varying loads of a motion
    quasi-statically; without this term the truncated sum misses their deflection.
    """
    omega = np.where(frames.omega > 0, frames.omega, np.inf)     # unfilled rows: no modal part
    modal_load = _apply(frames.shapes.transpose(0, 2, 1), frames.load) / omega**2
    return frames.static_load - _apply(frames.shapes, modal_load)


def integrate_frames(time, frames, pose_rigid, damping_ratio, u0=None, u_dot0=None, start="undeformed", parts=1,
                     pose_at=None):
    """Run the piecewise-constant modal superposition over precomputed frames.

    Parameters
    ----------
    time : ndarray, shape (n + 1,)
        Interval ends [s], increasing.
    frames : Frames or sequence of Frame, length n + 1
        Frame ``i`` freezes interval ``i``; the last one gives the final load and Jacobian.
    pose_rigid : ndarray, shape (n + 1, d)
    damping_ratio : float or ndarray, shape (r,) or (n + 1, r)
        Modal damping ratios, per mode and optionally per frame (:func:`sim.solvers.damping.modal_ratios`).
    u0, u_dot0 : ndarray, shape (n_v,), optional
        Initial elastic state (default zero; with ``start = "static"``, ``u0`` defaults to the
        static deflection at rest of the first frame).
    start : {"undeformed", "static"}
        Start from the undeformed robot or from its static equilibrium at rest (gravity and
        preloads already carried), elastic velocities zero.
    parts : int
        With ``parts > 1``, also the response at ``parts`` instants per interval
        (:attr:`KedResult.samples`): the output can resolve the kept modes with frames only as
        dense as the motion needs.
    pose_at : callable, optional
        ``pose_at(t)`` (m,) -> (m, d): the rigid pose at any times (the trajectory), for the
        samples between the interval ends (default: linear between the frames').

    Returns
    -------
    KedResult
        The deviation is ``J_x (Phi eta + static_correction)``.
    """
    frames = frames if isinstance(frames, Frames) else Frames.stack(frames)
    omega, shapes, mass_shapes, load = (np.ascontiguousarray(getattr(frames, name), dtype=float)
                                        for name in ("omega", "shapes", "mass_shapes", "load"))
    n, n_v, r = shapes.shape
    time = np.asarray(time, dtype=float)
    zeta = np.broadcast_to(np.asarray(damping_ratio, dtype=float), (n, r)).copy()
    if start not in ("undeformed", "static"):
        raise ValueError(f"`start` must be 'undeformed' or 'static', got {start!r}")
    if u0 is None:
        u = frames.static_rest[0].copy() if start == "static" else np.zeros(n_v)
    else:
        u = np.array(u0, dtype=float)
    u_dot = np.zeros(n_v) if u_dot0 is None else np.array(u_dot0, dtype=float)
    eta, eta_dot, U = np.zeros((n, r)), np.zeros((n, r)), np.zeros((n, n_v))
    eta[0], eta_dot[0] = u @ mass_shapes[0], u_dot @ mass_shapes[0]
    U[0] = shapes[0] @ eta[0]
    inner = np.zeros((max(n - 1, 0), int(parts) - 1, r))
    _modal_steps(time, (omega, shapes, mass_shapes, load), zeta, (u, u_dot), (eta, eta_dot, U, inner))
    correction = static_correction(frames)
    U += correction
    deviation = _apply(frames.pose_jacobian, U)
    static = _apply(frames.pose_jacobian, frames.static_rest)
    result = KedResult(time=time, pose_rigid=pose_rigid, pose=pose_rigid + deviation, deviation=deviation,
                       deviation_static=static, deviation_dynamic=deviation - static,
                       frequencies=omega / (2 * np.pi), modal_coordinates=eta, modal_velocities=eta_dot,
                       displacement=U)
    if parts > 1:
        result = dataclasses.replace(result, samples=_between(time, frames, inner, correction, static,
                                                              np.asarray(pose_rigid, dtype=float), result, pose_at))
    return result


def ked(model, trajectory, intervals, count, damping_ratio, duration=None, progress=None, start="undeformed"):
    """KED response of ``model`` along ``trajectory`` (:class:`sim.solvers.trajectory.Trajectory`).

    The rigid motion is sampled only at the ``intervals + 1`` interval ends; ``start`` as
    :func:`integrate_frames`.

    Returns
    -------
    KedResult
    """
    T = trajectory.duration if duration is None else float(duration)
    time = np.linspace(0.0, T, int(intervals) + 1)
    motion, frames = motion_and_frames(model, trajectory, time, count, progress_motion=progress)
    return integrate_frames(time, frames, motion.pose, damping_ratio, start=start)
