r"""Kineto-elastodynamics (KED): piecewise-constant modal superposition (SPEC §2.3 item 5).

The motion is the rigid robot's motion plus a small elastic displacement ``u`` (n_v,) that
stays in the null space of the constraint Jacobian with the actuators locked (the elastic
motion of the instantaneous structure, paper 002 §3).  Linearising the equations of
:mod:`sim.dynamics` about the rigid state ``(q_r, v_r, a_r)``,

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
``J_x(q_r) u`` (:func:`sim.kinematics.pose_jacobian`).

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
from dataclasses import dataclass

import numpy as np

from .dynamics import mass_and_forces
from .fast import Evaluator
from .kinematics import pose_jacobian
from .linalg import flush
from .modal import modes
from .motion import rigid_motion
from .subspace import Tracker

FRAME_CHUNK = 24   # frames per worker task (~9 ms on the 3-RRRU); the tracker restarts at each


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
    omega = np.asarray(omega, dtype=float)
    zeta = np.asarray(zeta, dtype=float)
    a = np.asarray(load_start, dtype=float)
    b = (np.asarray(load_end, dtype=float) - a) / dt
    c1 = b / omega**2
    c0 = (a - 2 * zeta * omega * c1) / omega**2
    wd = omega * np.sqrt(1 - zeta**2)
    sigma = zeta * omega
    A = eta - c0
    B = (eta_dot - c1 + sigma * A) / wd
    decay = np.exp(-sigma * dt)
    co, si = np.cos(wd * dt), np.sin(wd * dt)
    eta_end = decay * (A * co + B * si) + c0 + c1 * dt
    eta_dot_end = decay * ((wd * B - sigma * A) * co - (sigma * B + wd * A) * si) + c1
    return eta_end, eta_dot_end


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
    """

    load: np.ndarray
    omega: np.ndarray
    shapes: np.ndarray
    mass_shapes: np.ndarray
    pose_jacobian: np.ndarray


def frame(model, q, v, a, count, free=None, ev=None, s=None, tracker=None):
    """The :class:`Frame` of the rigid state ``(q, v, a)`` with ``count`` modes.

    ``ev`` (:class:`sim.fast.Evaluator`) evaluates ``M``, ``Q``, ``C_q`` and the end-effector
    Jacobian in one compiled pass; without it the reference kernels are used.  ``s`` (n_a,):
    the actuator values at ``q`` (where they are locked), if known.  ``tracker``
    (:class:`sim.subspace.Tracker`, with ``ev`` and no free motions): the modes by subspace
    iteration from the tracker's last subspace, where its partition applies.
    """
    if ev is None:
        M, Q = mass_and_forces(model, q, v)
        r = modes(model, q, count, M=M, free=free, energies=False)
        return Frame(load=Q - M @ a, omega=r.omega, shapes=r.shapes, mass_shapes=M @ r.shapes,
                     pose_jacobian=pose_jacobian(model, q)[1])
    s = ev.evaluate(q, v).s if s is None else s      # lock the actuators where they are
    tracked = tracker is not None and free is not None and not free
    # The tracker only takes BLAS products of M: no flush (sim.linalg.flush) unless LAPACK gets it.
    E = ev.evaluate(q, v, targets=s, flush=not tracked)
    found = tracker.modes(E.M, E.J) if tracked else None
    M = E.M
    if found is None:
        M = flush(M) if tracked else M
        r = modes(model, q, count, M=M, free=free, energies=False, J=E.J, J_s=E.J_s)
        found = r.omega, r.shapes, M @ r.shapes
    omega, shapes, mass_shapes = found
    return Frame(load=E.Q - M @ a, omega=omega, shapes=shapes, mass_shapes=mass_shapes,
                 pose_jacobian=ev.pose()[1])


def has_free_motions(model, q):
    """True when the model at ``q`` has free (rigid-body) motions with the actuators locked."""
    return modes(model, q, count=1).rigid_count > 0


def _frames(model, ev, states, count, free, tracker=None, progress=None):
    """Frames (list) of the rigid states ``states = (q, v, a, s)`` (arrays, sample axis first;
    ``s`` the actuator values, where they are locked).

    The ``tracker`` starts afresh (a dense eigensolve) every ``FRAME_CHUNK`` states, the unit
    of work shared with the worker threads: each frame then has the same starting subspace,
    and the same numbers, whichever thread computes it.
    """
    out = []
    for k, (q, v, a, s) in enumerate(zip(*states)):
        if tracker is not None and k % FRAME_CHUNK == 0:
            tracker.reset()
        out.append(frame(model, q, v, a, count, free, ev, s, tracker))
        if progress is not None:
            progress.update(1)
    return out


def _tracker(model, count):
    """A :class:`sim.subspace.Tracker` for the frames of ``model``, or None where it does not apply."""
    return Tracker(model, count) if Tracker.applies(model) else None


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
    """Frames of a stream of rigid states, shared between this thread and worker threads.

    States arrive one by one (:meth:`add`); every ``FRAME_CHUNK`` of them go to the worker
    threads as one task.  :meth:`finish` computes the remaining states here, then takes back,
    from the last one, the tasks no worker has started, so that this thread and the workers
    end together.  Frames at different instants are independent, and each is computed by the
    same code from the same starting subspace whichever thread runs it (:func:`_frames`): the
    numbers do not depend on the sharing.

    Threads, not processes: the compiled kernels (the evaluation, the mode tracker and the
    rigid motion's loop) release the GIL, so a thread runs in parallel with the motion from
    the first chunk on, sharing the model and handing back frames without copies.  Each
    thread has its own :class:`sim.fast.Evaluator` and tracker (their work arrays).

    Use as a context manager: leaving it waits for the running tasks and drops the others.

    Parameters
    ----------
    model : Model
    count : int
        Modes per frame.
    workers : int
        Worker threads besides this one (0: everything here).
    progress : tqdm-like, optional
        ``update(k)`` as frames are done.
    """

    def __init__(self, model, count, workers, progress=None):
        self.model, self.count, self.progress = model, count, progress
        self.ev = Evaluator(model)
        self.tracker = _tracker(model, count)
        self.free = None
        self.buffer = []
        self.tasks = []    # (states, future)
        self.local = threading.local()
        self.pool = None if workers < 1 else ThreadPoolExecutor(workers, thread_name_prefix="frames")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)

    def _states(self, rows):
        return tuple(np.array(x) for x in zip(*rows))

    def add(self, q, v, a, s):
        """One rigid state: ``q`` (n_q,), ``v``, ``a`` (n_v,), actuator values ``s`` (n_a,)."""
        if self.free is None:   # free motions: decided once, at the first configuration
            self.free = has_free_motions(self.model, q)
        self.buffer.append((q, v, a, s))
        if self.pool is not None and len(self.buffer) == FRAME_CHUNK:
            states = self._states(self.buffer)
            future = self.pool.submit(self._worker, states)
            if self.progress is not None:
                future.add_done_callback(lambda f: f.cancelled() or self.progress.update(FRAME_CHUNK))
            self.tasks.append((states, future))
            self.buffer = []

    def _worker(self, states):
        """One task, in a worker thread, with that thread's evaluator and tracker."""
        local = self.local
        if not hasattr(local, "ev"):
            local.ev, local.tracker = Evaluator(self.model), _tracker(self.model, self.count)
        return _frames(self.model, local.ev, states, self.count, self.free, local.tracker)

    def _here(self, states):
        return _frames(self.model, self.ev, states, self.count, self.free, self.tracker, self.progress)

    def finish(self):
        """All the frames (list of :class:`Frame`), in the order of :meth:`add`."""
        tail = self._here(self._states(self.buffer)) if self.buffer else []
        self.buffer = []
        done = {}
        for i in range(len(self.tasks) - 1, -1, -1):
            states, future = self.tasks[i]
            if future.cancel():
                done[i] = self._here(states)
        out = []
        for i, (_, future) in enumerate(self.tasks):
            out.extend(done[i] if i in done else future.result())
        return out + tail


def frames_along(model, motion, count, progress=None, workers=None):
    """Frames at every sample of a :class:`sim.motion.RigidMotion` (list, length n).

    ``workers``: threads (default two, or one on a single core); see :class:`FramePool`.
    """
    with FramePool(model, count, _workers(workers, len(motion.q)), progress) as pool:
        for state in zip(motion.q, motion.v, motion.a, motion.actuators):
            pool.add(*state)
        return pool.finish()


def motion_and_frames(model, trajectory, times, count, progress_motion=None, progress_frames=None, workers=None):
    """Rigid motion along ``trajectory`` at ``times`` (n,) and its frames, overlapped.

    The frames of the first samples are computed by a worker thread while this one goes on
    with the motion (:func:`sim.motion.rigid_motion` hands each sample to a
    :class:`FramePool`); the same numbers as :func:`sim.motion.rigid_motion` followed by
    :func:`frames_along`, up to the round-off of locking angle actuators at their wrapped
    rather than unwrapped values.

    Returns
    -------
    motion : RigidMotion
    frames : list of Frame, length n
    """
    with FramePool(model, count, _workers(workers, len(times)), progress_frames) as pool:
        motion = rigid_motion(model, trajectory, times, progress=progress_motion, on_sample=pool.add,
                              condition=False)
        return motion, pool.finish()


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

    def project(self, fr):
        """Modal coordinates and rates (r,) of the current state on the modes of ``fr``."""
        return self.u @ fr.mass_shapes, self.u_dot @ fr.mass_shapes

    def step(self, fr, load_end, dt):
        """Advance over one interval frozen at ``fr``; the load ends at ``load_end`` (n_v,).

        Returns
        -------
        eta, eta_dot : ndarray, shape (r,)
            Modal coordinates at the end of the interval (modes of ``fr``).
        """
        eta, eta_dot = self.project(fr)
        Phi = fr.shapes
        eta, eta_dot = ramp_response(fr.omega, self.zeta, dt, eta, eta_dot, Phi.T @ fr.load, Phi.T @ load_end)
        self.u = Phi @ eta
        self.u_dot = Phi @ eta_dot
        return eta, eta_dot


@dataclass(frozen=True)
class KedResult:
    """KED response at the interval ends ``time`` (n + 1,).

    ``pose_rigid``, ``pose``, ``deviation`` (n + 1, d) [m, rad]; ``frequencies`` (n + 1, r)
    [Hz] of the frozen structure at each instant; ``modal_coordinates`` and
    ``modal_velocities`` (n + 1, r): row 0 on the first interval's modes, row ``i + 1`` at the
    end of interval ``i`` on its modes; ``displacement`` (n + 1, n_v) the elastic state ``u``.
    """

    time: np.ndarray
    pose_rigid: np.ndarray
    pose: np.ndarray
    deviation: np.ndarray
    frequencies: np.ndarray
    modal_coordinates: np.ndarray
    modal_velocities: np.ndarray
    displacement: np.ndarray


def integrate_frames(time, frames, pose_rigid, damping_ratio, u0=None, u_dot0=None):
    """Run the piecewise-constant modal superposition over precomputed frames.

    Parameters
    ----------
    time : ndarray, shape (n + 1,)
        Interval ends [s], increasing.
    frames : sequence of Frame, length n + 1
        Frame ``i`` freezes interval ``i``; the last one gives the final load and Jacobian.
    pose_rigid : ndarray, shape (n + 1, d)
    damping_ratio : float or ndarray, shape (r,)
    u0, u_dot0 : ndarray, shape (n_v,), optional
        Initial elastic state (default zero).

    Returns
    -------
    KedResult
    """
    n_v = frames[0].shapes.shape[0]
    stepper = ModalStepper(damping_ratio, np.zeros(n_v) if u0 is None else u0,
                           np.zeros(n_v) if u_dot0 is None else u_dot0)
    r = frames[0].omega.size
    eta = np.zeros((len(time), r))
    eta_dot = np.zeros((len(time), r))
    U = np.zeros((len(time), n_v))
    U[0] = stepper.u
    eta[0], eta_dot[0] = stepper.project(frames[0])
    for i in range(len(time) - 1):
        eta[i + 1], eta_dot[i + 1] = stepper.step(frames[i], frames[i + 1].load, time[i + 1] - time[i])
        U[i + 1] = stepper.u
    deviation = np.einsum("kdv,kv->kd", np.array([f.pose_jacobian for f in frames]), U)
    freqs = np.array([f.omega for f in frames]) / (2 * np.pi)
    return KedResult(time=np.asarray(time, dtype=float), pose_rigid=pose_rigid, pose=pose_rigid + deviation,
                     deviation=deviation, frequencies=freqs, modal_coordinates=eta, modal_velocities=eta_dot,
                     displacement=U)


def ked(model, trajectory, intervals, count, damping_ratio, duration=None, progress=None):
    """KED response of ``model`` along ``trajectory`` (:class:`sim.trajectory.Trajectory`).

    The rigid motion is sampled only at the ``intervals + 1`` interval ends.

    Returns
    -------
    KedResult
    """
    T = trajectory.duration if duration is None else float(duration)
    time = np.linspace(0.0, T, int(intervals) + 1)
    motion, frames = motion_and_frames(model, trajectory, time, count, progress_motion=progress)
    return integrate_frames(time, frames, motion.pose, damping_ratio)
