"""The frozen structures along a rigid motion: KED's frames, in one compiled loop.

At each instant of the rigid motion the robot is frozen (actuators locked at their values)
and its lowest modes, the load of the motion ``F = Q - M a_r``, the static displacements
under ``F`` and at rest, and the end effector's Jacobian are computed (:class:`Frame`) by the
compiled :func:`_frame_loop` with subspace tracking (:mod:`sim.solvers.subspace`).  The
frames of a motion are shared between this thread and worker threads (:class:`FramePool`),
overlapped with the motion itself (:func:`motion_and_frames`).  KED steps through them
(:mod:`sim.solvers.modal_stepping`); the ``[frequencies]`` analysis reads their modes.
"""
import multiprocessing
import os
import threading
from collections import deque
from itertools import islice
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields
from typing import NamedTuple

import numpy as np
from numba import njit, types

from sim.errors import SimError, signals_deferred
from sim.kernels.common import by_reference, compile_for, runtime
from sim.kernels.equations import function, store_address, store_function
from sim.kernels.pose import pose_terms
from sim.kernels.store import empty_store, product as store_product
from sim.model.assembly import SINGULAR_RATIO
from sim.model.evaluator import Evaluator, held
from sim.model.kinematics import pose_codes
from sim.model.mobility import free_count
from sim.solvers.modal import continued, signs
from sim.solvers.motion import load_kernels as load_kernels_motion
from sim.solvers.motion import rigid_motion
from sim.solvers.subspace import (MAX_ITER, SEED_ITER, Mass, Tracker, definite, mass_product, parts_product, solver,
                                  solver_address)


FRAME_CHUNK = 24   # frames per worker task (short next to a run); the tracker restarts at each
AHEAD = 2          # streamed: chunks this thread computes past the one a worker has, at most
FEED = 4           # streamed: chunks a worker has in flight or finished, at most (2: it idled, 10 % on the Delta)
BACKLOG = 16       # streamed: chunks of states waiting for their frames beyond which this thread computes them
#                    before it takes more (the motion runs ahead of the frames: their states would be held)


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
        Their mass-normalised shapes ``Phi`` (constrained subspace, actuators locked), with
        the signs of :func:`_orient` along a motion.
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
    the deformation rows), taken on the reference motions alone
    (:func:`sim.model.mobility.free_count`: no modal analysis, cubic in the model, for a
    count).  ``ev``: the model's :class:`sim.model.evaluator.Evaluator`.
    """
    E = ev.kinematics(q)     # the locked rows without the mass matrix (n_v, n_v) the evaluation forms
    J = np.vstack([E.J, E.J_s[~ev.compliant]])
    rigid = model.v_rigid
    if J.shape[0] == rigid.size:
        sigma = np.linalg.svd(J[:, rigid], compute_uv=False)
        if sigma[-1] > SINGULAR_RATIO * sigma[0] and definite(model):
            return 0
    return free_count(model, q, J, E.J_s)


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
    (``stiff``), the address ``solve`` of the modes solver
    (:func:`sim.solvers.subspace.solver_address`), and where ``M`` and ``K_t`` are held: on
    the stores ``Ms`` where it has values (records; the evaluation on stores at ``f[2]``,
    :func:`sim.kernels.equations.store_address`, with ``nothing``, an empty one, for ``dQ/dv``)
    -- on the band path ``M`` only, its values this call's own, with ``pos`` the positions of
    the band's values (:meth:`sim.solvers.subspace.Tracker.mass_store`; ``Ks`` empty); for the
    saddle-point solver ``M`` and ``K_t`` on its structure, their values the structure's own
    (:meth:`sim.solvers.subspace.Tracker.saddle_stores`; ``pos`` (0, 0)) -- else dense (n_v,
    n_v) arrays."""

    tables: object
    data: object
    f: np.ndarray
    kinds: np.ndarray
    e: int
    n_all: int
    keep: np.ndarray
    stiff: bool
    solve: int
    Ms: object
    Ks: object
    nothing: object
    pos: np.ndarray


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
    tables, data, f, kinds, e, n_all, keep, stiff, solve, Ms, Ks, nothing, pos = model
    settings, max_iter, seed_iter = options
    load, omega, shapes, mass_shapes, jac, static_load, static_rest = out
    n_v = vs.shape[1]
    r = omega.shape[1]
    held = Ms.values.size > 0
    band = held and pos.shape[0] > 0     # the band path: the parts of M it reads (Mass); else all of it
    M = np.zeros((0, 0) if held else (n_v, n_v))
    R = np.zeros((n_v if band else 0, 6))
    val = np.zeros(pos.shape)
    ma = np.zeros(n_v)
    Q = np.zeros(n_v)
    Q0 = np.zeros(n_v)
    phi = np.zeros(n_all)
    J = np.zeros((keep.size, n_v))
    J_all = J if keep.size == n_all else np.zeros((n_all, n_v))    # all rows locked: no copy
    gamma = np.zeros(n_all)
    Kt = np.zeros((n_v, n_v)) if stiff and not held else np.zeros((0, 0))
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
            Ks.values[:] = 0.0
        if held:
            store_function(f[2], tables)(qs[k], vs[k], tables, data, (Ms, Q, Q0, phi, J_all, gamma, nothing, empty,
                                                                       Ks), ss[k], (off, with_K, off, on))
            if band:
                _gather(Ms, pos, R, val)
        else:
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
        if band:
            ma[:] = parts_product(R, val, layout, a)[:, 0]
        elif held:
            store_product(Ms, n_v, accs[k], ma)
        else:
            ma[:] = mass_product(M, layout, a)[:, 0]
        for i in range(n_v):
            F[i, 0] = Q[i] - ma[i]
            F[i, 1] = Q0[i]
        lam, sh, msh, X_new, sweeps[k], U = modes(Mass(M, R, val), Kt, J, layout, (order, X, X_prev), settings,
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


@njit(cache=True, nogil=True)
def _gather(Ms, pos, R, val):
    """The parts ``R`` (n_v, 6) and ``val`` (n_e, w) of :class:`sim.solvers.subspace.Mass` from
    the store ``Ms`` of ``M``: entry ``(i, j)`` of a body's reference columns at ``first[j] + i -
    start[j]``, the band's at ``pos`` (-1: past a row's last, zero)."""
    values, start, first = Ms.values, Ms.start, Ms.first
    for i in range(R.shape[0]):
        s0 = start[i]
        for j in range(6):
            R[i, j] = values[first[s0 + j] + i - s0]
    for i in range(pos.shape[0]):
        for t in range(pos.shape[1]):
            p = pos[i, t]
            val[i, t] = values[p] if p >= 0 else 0.0


def _loop_arguments(model, ev, tracker, general=False):
    """The arguments of :func:`_frame_loop` between the states and the output: ``model``,
    ``layout``, ``seed`` and ``options``, with the tracker's solver
    (:func:`sim.solvers.subspace._constant` where its stiffness is constant, else
    :func:`sim.solvers.saddle.modes` where the tracker takes it, else
    :func:`sim.solvers.subspace._general`), or the general one."""
    saddle = not general and tracker.use_saddle(ev)     # the general solver's structures by the saddle-point form
    none = np.zeros((0, 0), dtype=np.int64)
    stiff = empty_store()
    if saddle:      # M and K_t on its structure, in its own arrays
        (store, stiff), pos = tracker.saddle_stores(ev.tables, ev.stiff), none
    else:           # (the general solver reads the dense M)
        store, pos = (empty_store(), none) if general else tracker.mass_store(ev.tables)
    f = ev.f
    if store.ptr.size:
        address = store_address(ev.ref)     # compiled, or loaded from numba's cache, for this model only
        f = f if isinstance(f, types.Type) else np.append(f, address)
        if not saddle:
            store = store._replace(values=np.zeros(store.rows.size))    # this call's (a thread's) own
    frame = FrameModel(ev.ref, ev.data_ref, f, pose_codes(model.pose_kinds), int(model.ee_marker), int(ev.n_rows),
                       np.flatnonzero(ev.keep), bool(ev.stiff),
                       solver_address(tracker.constant and not general, saddle), by_reference(store),
                       by_reference(stiff), by_reference(empty_store()), pos)
    return frame, tracker.layout(True if general else None), tracker.seed, (tracker.settings(), MAX_ITER, SEED_ITER)


def _out(frames, rows=slice(None)):
    """The arrays of :class:`Frames` ``frames`` (rows ``rows``), as :func:`_frame_loop` writes them."""
    return tuple(getattr(frames, name)[rows] for name in FIELDS)


def _frames(model, ev, tracker, states, out, k0, progress=None, follow=False):
    """The frames of the rigid states ``states = (q, v, a, s)`` (arrays, sample axis first;
    ``s`` the actuator values, where they are locked) into ``out`` (:class:`Frames`) from
    row ``k0``, by :func:`_frame_loop`; the frames its solver turned down (the constant
    stiffness's partitioned basis near a singular configuration) again with the general one.

    The ``tracker`` starts afresh from its seed (or a dense eigensolve) every ``FRAME_CHUNK``
    states, the unit of work shared with the worker threads: each frame then has the same
    starting subspace, and the same numbers, whichever thread computes it.  With ``follow``
    (one thread), its seed becomes each chunk's last subspace instead: the next chunk, or
    the next call, starts there.
    """
    loop = _loop_arguments(model, ev, tracker)
    for c0 in range(0, len(states[0]), FRAME_CHUNK):
        chunk = slice(c0, min(len(states[0]), c0 + FRAME_CHUNK))
        rows = slice(k0 + chunk.start, k0 + chunk.stop)
        sweeps = np.zeros(chunk.stop - chunk.start, dtype=np.int64)
        part = tuple(np.ascontiguousarray(x[chunk], dtype=float) for x in states)
        X = _frame_loop(part, *loop, _out(out, rows), sweeps)
        if follow and X.size:
            tracker.seed = X
            loop = loop[:2] + (X,) + loop[3:]
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
    :class:`sim.model.evaluator.Evaluator` and tracker (their work arrays): this thread the
    caller's, which its own evaluations (the motion's) leave free by the time it computes
    frames (:meth:`finish`).

    Use as a context manager: leaving it waits for the running tasks and drops the others.

    ``take``: the frames are not gathered into one :class:`Frames` of all the instants
    (:meth:`finish`) but handed over chunk by chunk, in time order, to ``take(start, frames,
    q)`` (:class:`Frames` of up to ``FRAME_CHUNK`` instants from row ``start``, oriented as all
    the frames at once would be, :func:`_orient`, and their configurations ``q`` (k, n_q)):
    in this thread, as the workers finish them (while the motion goes on: ``take`` must not
    use the motion's evaluator, which the motion's next samples need), and the rest in
    :meth:`finish`.  The pool then holds a few chunks (``FEED`` a worker, ``AHEAD`` here, the
    one handed over), not ``n`` frames of ``n_v (2 r + d + 3)`` numbers each (the KED of a
    Delta with 64 elements per arm and 3200 intervals: 1.1 GB); and, where the states come
    faster than their frames, ``BACKLOG`` chunks of states at most: this thread then computes
    the frames of those waiting before :meth:`add` returns.

    Parameters
    ----------
    model : Model or Evaluator
        The robot, or this thread's evaluator where the caller holds one
        (:func:`sim.model.evaluator.held`).
    count : int
        Modes per frame.
    n : int
        States to come.
    workers : int
        Worker threads besides this one (0: everything here).
    progress : tqdm-like, optional
        ``update(k)`` as frames are done.
    ready : callable, optional
        What a worker also gets ready while the motion starts (KED: its modal stepping's
        kernel, :func:`sim.solvers.modal_stepping.load_stepping`).
    take : callable, optional
        Where the frames go, chunk by chunk (see above).
    """

    def __init__(self, model, count, n, workers, progress=None, ready=None, take=None):
        model, ev = held(model)
        self.model, self.count, self.progress, self.ready, self.take = model, count, progress, ready, take
        # all the frames in one record, or (streamed) each chunk's its own
        self.frames = None if take is not None else Frames.empty(n, model.n_v, count, len(model.pose_kinds))
        self.previous = None    # streamed: the shapes of the last frame handed over, where filled
        self.free = None
        self.store = None       # the trackers' M's structure (Tracker.mass_store), from the first
        self.first = None       # the first state
        self.failure = None     # what stopped _prepare
        self.seed = None   # the trackers' common start: Ritz vectors at the first state ...
        self.seeded = threading.Event()     # ... once known
        self.buffer = []
        self.start = 0     # row of the first buffered state
        # [start, states, future, frames], states as given (the caller's rows, stacked when
        # computed); future None where no worker may take the task (streamed without workers),
        # frames those computed and not yet handed over (streamed)
        self.tasks = deque()
        self.local = threading.local()
        self.local.ev, self.local.tracker = ev, None     # this thread's
        self.workers = workers
        self.pool = None if workers < 1 else ThreadPoolExecutor(workers, thread_name_prefix="frames")
        if self.pool is not None:   # a worker gets ready while the motion starts
            self.pool.submit(self._ready)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)

    def _ready(self):
        """A worker's preparation: its evaluator, and what the caller needs ready."""
        self._parts()
        if self.ready is not None:
            self.ready()

    def add(self, q, v, a, s):
        """One rigid state: ``q`` (n_q,), ``v``, ``a`` (n_v,), actuator values ``s`` (n_a,),
        held (not copied) until its frame is computed."""
        if self.first is None:
            self.first = (q, v, a, s)
            if self.pool is not None:    # the seed while the first chunk's states come
                self.pool.submit(self._prepare)
        self.buffer.append((q, v, a, s))
        if (self.pool is not None or self.take is not None) and len(self.buffer) == FRAME_CHUNK:
            task = [self.start, self.buffer, None, None]
            if self.take is None:       # every task to the workers at once (finish takes some back)
                self._submit(task)
            self.tasks.append(task)
            self.start += FRAME_CHUNK
            self.buffer = []
        if self.take is not None:
            self._feed()
            backlog = len(self.tasks) > BACKLOG
            if backlog and self.pool is None and not self.seeded.is_set():
                self._prepare()     # (no worker to make the seed)
            self._hand(wait=backlog)

    def _submit(self, task):
        """``task`` to the workers."""
        task[2] = future = self.pool.submit(self._compute, task[0], task[1])
        if self.progress is not None:
            done = len(task[1])     # (not the task: a cycle through it would hold its frames)
            future.add_done_callback(lambda f: f.cancelled() or self.progress.update(done))

    def _feed(self):
        """Streamed: the next tasks to the workers, ``FEED`` a worker in flight or finished at
        most (their frames are held until they are handed over)."""
        if self.pool is None:
            return
        busy = 0
        for task in self.tasks:
            if task[3] is not None:     # computed, waiting to be handed over
                continue
            if task[2] is None:
                if busy >= FEED * self.workers:
                    return
                self._submit(task)
            if not task[2].cancelled():
                busy += 1

    def _parts(self):
        """This thread's evaluator and tracker (None until the free motions are known)."""
        local = self.local
        if not hasattr(local, "ev"):
            with signals_deferred():    # compiles in the main thread (see sim.errors.signals_deferred)
                local.ev, local.tracker = Evaluator(self.model), None
        if local.tracker is None and self.free is not None:
            local.tracker = Tracker(self.model, self.count, self.free, self.store)
            if self.store is None:    # the first: its M's structure, made once for every thread's
                self.store = local.tracker.mass_store(local.ev.tables)
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

    def _compute(self, start, rows, progress=None):
        """Frames of the states ``rows`` (as :meth:`add` took them) into rows ``start ..`` of
        all the frames, or (streamed) into a record of their own, which it returns; with this
        thread's evaluator and tracker (once :meth:`_prepare` is done)."""
        self.seeded.wait()
        if self.failure is not None:    # the first task's error, wherever it is asked for
            raise self.failure
        ev, tracker = self._parts()
        tracker.seed = np.zeros((0, 0)) if self.seed is None else self.seed
        states = tuple(np.array(x) for x in zip(*rows))
        if self.frames is not None:
            _frames(self.model, ev, tracker, states, self.frames, start, progress)
            return self.frames
        out = Frames.empty(len(rows), self.model.n_v, self.count, len(self.model.pose_kinds))
        _frames(self.model, ev, tracker, states, out, 0, progress)
        return out

    def _hand(self, wait):
        """Streamed: the next chunks to ``take``, in order -- those the workers have finished,
        or (``wait``) all of them: this thread computes each no worker has started, and while
        a worker has the next one, the first no worker has started after it (it would
        otherwise wait for every chunk, the workers taking them one by one ahead of it), up
        to ``AHEAD`` chunks."""
        tasks = self.tasks
        while tasks:
            head = tasks[0]
            start, rows, future, frames = head
            if frames is None:
                if future is not None and future.done():
                    head[3] = future.result()
                elif not wait:
                    return
                elif future is None or future.cancel():
                    head[3] = self._compute(start, rows, self.progress)
                else:    # (a few chunks ahead at most: they are held until the head is in)
                    done = sum(t[3] is not None for t in islice(tasks, 1, AHEAD + 1))
                    ahead = None if done >= AHEAD else next(
                        (t for t in islice(tasks, 1, None) if t[3] is None and (t[2] is None or t[2].cancel())), None)
                    if ahead is None:
                        head[3] = future.result()
                    else:
                        ahead[3] = self._compute(ahead[0], ahead[1], self.progress)
                continue
            tasks.popleft()
            self._feed()
            q = np.array([state[0] for state in rows])
            del head, rows, future      # the states go with the chunk
            _orient(frames, self.previous)
            filled = frames.omega.shape[1] and frames.omega[-1, 0] > 0
            self.previous = frames.shapes[-1] if filled else None
            self.take(start, frames, q)
            del frames

    def finish(self):
        """All the frames (:class:`Frames`), in the order of :meth:`add`; streamed, the rest of
        them to ``take``, and None."""
        if self.pool is None and self.first is not None and not self.seeded.is_set():
            self._prepare()
        if self.take is not None:
            if self.buffer:
                self.tasks.append([self.start, self.buffer, None, None])
                self.buffer = []
            self._feed()
            self._hand(wait=True)
            return None
        if self.buffer:
            self._compute(self.start, self.buffer, self.progress)
        self.buffer = []
        for start, states, future, _ in reversed(self.tasks):
            if future.cancel():
                self._compute(start, states, self.progress)
        for _, _, future, _ in self.tasks:
            if not future.cancelled():   # the others were done here
                future.result()
        return _orient(self.frames)


def _orient(frames, previous=None):
    """``frames`` with the signs of their modes fixed, in place (``shapes`` and
    ``mass_shapes``), frame after frame by :func:`sim.solvers.modal.signs` with the previous
    frame's shapes: a mode that is the previous frame's keeps its sign, another has its
    largest entry positive, so that a mode and KED's modal coordinate do not change sign
    along the motion where the solver's would (the subspace's Ritz vectors, a fresh start at
    each chunk).  A sequential pass once every frame is in: the signs depend on the frames
    only, not on the threads that computed them.  Frames left unfilled (no positive
    stiffness, for :func:`_stable` to report) are skipped, and the next starts afresh.

    ``previous`` (n_v, r): the shapes, oriented, of the frame just before ``frames[0]`` (the
    last chunk's, :class:`FramePool` with ``take``; None: none, or unfilled): the chunks get the
    signs of all the frames oriented at once."""
    shapes, mass_shapes = frames.shapes, frames.mass_shapes
    filled = frames.omega[:, 0] > 0 if frames.omega.shape[1] else np.zeros(len(frames), dtype=bool)
    idx = np.flatnonzero(filled)
    if not idx.size:
        return frames
    # Frame by frame, a mode keeps the previous frame's signed shape's sign where it is the
    # same mode (signs): with the solver's shapes, c = previous . M current; the sign is then
    # the product of the c's signs since the last frame where it was not the same mode,
    # times that frame's own (largest entry positive), which is all signs is asked for.
    # (products of every consecutive pair on views, not of copies of the filled frames, which
    # would double the frames' memory; a pair that is not consecutive is not the same mode)
    pairs = np.einsum("kir,kir->kr", shapes[:-1], mass_shapes[1:])
    before = previous is not None and idx[0] == 0
    if before:
        # the frame before as row -1, its signs final (own sign 1): c of the oriented shape is
        # its sign times the solver's, so the products below are those of the whole motion
        pairs = np.concatenate([np.einsum("ir,ir->r", previous, mass_shapes[0])[None], pairs])
        idx = np.concatenate([[-1], idx])
    linked, flip = continued(pairs[idx[:-1] + before])
    same = np.zeros((idx.size, shapes.shape[2]), dtype=bool)
    same[1:] = (np.diff(idx) == 1)[:, None] & linked
    flips = np.ones(same.shape)
    flips[1:] = flip
    flips[~same] = 1.0
    run = np.cumprod(flips, axis=0)
    start = np.maximum.accumulate(np.where(same, 0, np.arange(idx.size)[:, None]), axis=0)
    cols = np.arange(shapes.shape[2])
    own = np.ones(same.shape)
    fresh = np.flatnonzero((~same).any(axis=1))
    fresh = fresh[idx[fresh] >= 0]
    own[fresh] = signs(shapes[idx[fresh]])
    s = own[start, cols] * run * run[start, cols]
    for j in np.flatnonzero((s != 1.0).any(axis=1)):    # in place: a fancy index would copy
        shapes[idx[j]] *= s[j]
        mass_shapes[idx[j]] *= s[j]
    return frames


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

    ``model``: the robot, or its evaluator (:func:`sim.model.evaluator.held`); ``workers``: threads (default two, or one on a single core); see :class:`FramePool`.
    """
    n = len(motion.q)
    with FramePool(model, count, n, _workers(workers, n), progress) as pool:
        for state in zip(motion.q, motion.v, motion.a, motion.actuators):
            pool.add(*state)
        return _stable(pool.finish(), getattr(motion, "t", np.arange(n, dtype=float)))


def frozen(model, q, count):
    """The robot frozen at rest at ``q`` (n_q,), its actuators locked at their values there:
    its :class:`Frame` (the lowest ``count`` modes by :func:`_frame_loop`'s solvers from a fresh
    start: linear in the model, no (n_v, n_v) array from 600 coordinates) or None where it has
    no positive stiffness or its solver turned it down (then the general solver's dense pencil
    answers the frames: on a locked loop's redundant rows, the four-bar with 40 elements, its
    shapes are within 3e-7 of the modal analysis' own in the mass norm and 5e-6 in the strain
    energy's, frequencies 1e-8, but their force residuals ``K phi - omega^2 M phi`` reach 7 % of
    ``K phi``, round-off in the stiff axial directions; the modal analysis' basis gives 1e-6),
    and the number of its free motions (:func:`free_motions`).
    ``model``: the robot, or its evaluator (:func:`sim.model.evaluator.held`)."""
    model, ev = held(model)
    q = np.ascontiguousarray(q, dtype=float)
    free = free_motions(model, q, ev)
    tracker = Tracker(model, count, free)
    out = frames_at(ev, q[None], ev.kinematics(q).s[None], count, tracker)
    return (out[0] if out.omega[0, 0] > 0 and not tracker.turned_down else None), free


def frames_at(model, qs, ss, count, tracker):
    """The frames (:class:`Frames`, ``count`` modes) of the robot frozen at rest at the
    configurations ``qs`` (n, n_q), its actuators locked at ``ss`` (n, n_a), each structure's
    solver started from the last one's subspace, and the first from the ``tracker``'s seed,
    which the last then replaces (a map's rows, one after the other; the tracker a
    :class:`sim.solvers.subspace.Tracker` of the model with ``count`` modes).  ``model``: the
    robot, or its evaluator (:func:`sim.model.evaluator.held`)."""
    model, ev = held(model)
    rest = np.zeros((len(qs), model.n_v))
    out = Frames.empty(len(qs), model.n_v, count, len(model.pose_kinds))
    states = (np.ascontiguousarray(qs, dtype=float), rest, rest, np.ascontiguousarray(ss, dtype=float))
    _frames(model, ev, tracker, states, out, 0, follow=True)
    return out


def motion_and_frames(model, trajectory, times, count, progress=(None, None), workers=None, q_start=None, ready=None,
                      take=None, keep=True):
    """Rigid motion along ``trajectory`` at ``times`` (n,) and its frames, overlapped.

    ``model``: the robot, or its evaluator where the caller holds one (the motion's and this
    thread's frames'; :func:`sim.model.evaluator.held`).

    The frames of the first samples are computed by a worker thread while this one goes on
    with the motion (:func:`sim.solvers.motion.rigid_motion` hands each sample to a
    :class:`FramePool`); the same numbers as :func:`sim.solvers.motion.rigid_motion` followed by
    :func:`frames_along`, up to the round-off of locking angle actuators at their wrapped
    rather than unwrapped values.  ``progress``: the motion's and the frames' progress bars
    (tqdm-like, each optional).  ``q_start``: as :func:`sim.solvers.motion.rigid_motion`'s;
    ``ready``: as :class:`FramePool`'s.  ``take``: as :class:`FramePool`'s, each chunk checked
    by :func:`_stable` (the frames are then handed over as they come, never all held).
    ``keep``: as :func:`sim.solvers.motion.rigid_motion`'s (False: the motion's configurations
    by their reference coordinates, no velocities or accelerations).

    Returns
    -------
    motion : RigidMotion
    frames : Frames or None
        ``n`` instants (None with ``take``).
    """
    model, ev = held(model)
    if take is not None:
        given = take

        def take(start, frames, q):
            given(start, _stable(frames, times[start:]), q)

    progress_motion, progress_frames = progress
    with FramePool(ev, count, len(times), _workers(workers, len(times)), progress_frames, ready, take) as pool:
        motion = rigid_motion(ev, trajectory, times, q_start=q_start, progress=progress_motion,
                              on_sample=pool.add, condition=False, keep=keep)
        frames = pool.finish()
        return motion, None if take is not None else _stable(frames, times)


def compile_frames(model, count):
    """Compile, or load from numba's cache, the frames' loop for ``model`` with ``count``
    modes without compiling or calling the evaluation (an unassembled model will do;
    :mod:`sim.app.parallel_compile`), and both modes solvers
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


def load_kernels(model, count):
    """Compile, or load from numba's cache, the kernels of the frames along a motion for
    ``model`` with ``count`` modes now: the rigid motion's and the frames' (``sim run`` does
    it before the clocks of its analyses start)."""
    load_kernels_motion(model, Evaluator(model))
    compile_frames(model, count)
