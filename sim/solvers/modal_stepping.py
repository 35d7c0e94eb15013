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
import dataclasses
from dataclasses import dataclass

import numpy as np
from numba import njit

from sim.errors import signals_deferred
from sim.solvers.frames import FIELDS, Frames, compile_frames, motion_and_frames
from sim.solvers.frames import load_kernels as load_frames


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
    start)``: the modal state (r,) at the end and the interval's start ``start`` (4, r): the
    modal coordinates, their rates and the modal loads at both ends (no rows: not kept), from
    which :func:`_inner` gives the response inside the interval.  Products by loops: a BLAS
    call costs more than their few hundred operations."""
    u, u_dot = state
    omega, shapes, mass_shapes, zeta = frozen
    load_start, load_end = loads
    eta, eta_dot, start = out
    n_v, r = shapes.shape
    e0, ed0, p0, p1 = np.zeros(r), np.zeros(r), np.zeros(r), np.zeros(r)
    for i in range(n_v):
        for k in range(r):
            e0[k] += u[i] * mass_shapes[i, k]
            ed0[k] += u_dot[i] * mass_shapes[i, k]
            p0[k] += load_start[i] * shapes[i, k]
            p1[k] += load_end[i] * shapes[i, k]
    if start.shape[0]:
        start[0] = e0
        start[1] = ed0
        start[2] = p0
        start[3] = p1
    _ramp(omega, zeta, dt, e0, ed0, p0, p1, eta, eta_dot, start[:0])
    for i in range(n_v):
        x, xd = 0.0, 0.0
        for k in range(r):
            x += shapes[i, k] * eta[k]
            xd += shapes[i, k] * eta_dot[k]
        u[i], u_dot[i] = x, xd


@njit(cache=True)
def _modal_steps(time, frames, zeta, state, out):
    """The intervals between the instants ``time`` (k,): ``frames = (omega, shapes,
    mass_shapes, load)`` and ``zeta`` of those instants stacked on the first axis, from
    ``state = (u, u_dot)``; of ``out = (eta, eta_dot, U, start)`` rows ``1 ..`` of ``eta``,
    ``eta_dot`` (k, r) and the modal displacement ``U`` (k, n_v) filled, and ``start`` (k - 1,
    4, r) each interval's (:func:`_modal_step`)."""
    omega, shapes, mass_shapes, load = frames
    eta, eta_dot, U, start = out
    u = state[0]
    for i in range(time.size - 1):
        _modal_step(state, (omega[i], shapes[i], mass_shapes[i], zeta[i]), (load[i], load[i + 1]),
                    time[i + 1] - time[i], (eta[i + 1], eta_dot[i + 1], start[i]))
        U[i + 1] = u


@njit(cache=True)
def _inner(time, omega, zeta, start, inner):
    """The modal coordinates ``inner`` (n, m - 1, r) at ``j dt / m`` inside each of the ``n``
    intervals of ``time`` (n + 1,), from their frames' ``omega``, ``zeta`` (n, r) and starts
    (:func:`_modal_step`): the ramp responses of the step, stopped part-way."""
    r = omega.shape[1]
    end, end_dot = np.empty(r), np.empty(r)
    for i in range(inner.shape[0]):
        _ramp(omega[i], zeta[i], time[i + 1] - time[i], start[i, 0], start[i, 1], start[i, 2], start[i, 3], end,
              end_dot, inner[i])


def load_kernels(model, count):
    """Compile, or load from numba's cache, the kernels of :func:`ked` for ``model`` with
    ``count`` modes now: the rigid motion's, the frames' (:func:`sim.solvers.frames.load_kernels`)
    and the modal stepping's (``sim run`` does it before the clocks of its analyses start)."""
    load_frames(model, count)
    with signals_deferred():
        load_stepping()


def compile_loops(model, count):
    """Compile, or load from numba's cache, the KED's own kernels for ``model`` with ``count``
    modes without the evaluation: the frames' loop and both modes solvers
    (:func:`sim.solvers.frames.compile_frames`), and the modal stepping."""
    compile_frames(model, count)
    with signals_deferred():
        load_stepping()


def load_stepping():
    """Compile, or load from numba's cache, the modal stepping's kernel (a frame pool's worker
    does it while the motion starts: :class:`sim.solvers.frames.FramePool`)."""
    integrate_frames(np.zeros(1), Frames.empty(1, 1, 1, 1, np.zeros), np.zeros((1, 1)), 0.0, parts=2)


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


def _between(time, parts, steps, pose_rigid, result, pose_at):
    """:class:`KedSamples` at ``parts`` instants per interval from :class:`Superposition`
    ``steps`` (see :func:`integrate_frames`)."""
    n = time.size - 1
    inner = np.zeros((n, parts - 1, steps.omega.shape[1]))
    _inner(time, steps.omega, steps.zeta, steps.start, inner)
    f = (np.arange(1, parts) / parts)[None, :, None]                      # (1, m - 1, 1)
    JPhi0, JPhi1 = steps.modal_jacobians[:, 0], steps.modal_jacobians[:, 1]    # (n, d, r)
    modal = (1 - f) * (inner @ JPhi0.transpose(0, 2, 1)) + f * (inner @ JPhi1.transpose(0, 2, 1))
    # J(f) (c0 + f (c1 - c0)) with J(f) = J0 + f (J1 - J0): a quadratic in f.
    Jc00, Jc01, Jc10, Jc11 = (steps.corrections[:, k] for k in range(4))
    corr = ((1 - f) ** 2 * Jc00[:, None] + (1 - f) * f * (Jc01 + Jc10)[:, None] + f**2 * Jc11[:, None])
    inner_dev = modal + corr
    static = result.deviation_static
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


class Superposition:
    """The piecewise-constant modal superposition over frames handed over in time order, a
    chunk at a time (:meth:`add`): what it keeps of them is the elastic displacement and the
    few numbers of each interval that the output instants between the interval ends need
    (the modal start and loads, the pose Jacobian's products with the modes and the static
    corrections), not the frames -- a long KED of a large model need not hold all its frames.

    Parameters
    ----------
    time : ndarray, shape (n + 1,)
        Interval ends [s], increasing; frame ``i`` freezes interval ``i``.
    start, u0, u_dot0 :
        As :func:`integrate_frames`.

    Attributes
    ----------
    omega, zeta : ndarray, shape (n + 1, r)
        The frames' circular frequencies [rad/s] and damping ratios.
    eta, eta_dot : ndarray, shape (n + 1, r)
        Modal coordinates and rates (:attr:`KedResult.modal_coordinates`).
    U : ndarray, shape (n + 1, n_v)
        The elastic displacement, modal part plus static correction.
    deviation, deviation_static : ndarray, shape (n + 1, d)
    start : ndarray, shape (n, 4, r)
        Each interval's modal coordinates, rates and modal loads at both ends, on its modes.
    modal_jacobians : ndarray, shape (n, 2, d, r)
        ``J_i Phi_i`` and ``J_{i+1} Phi_i``: the pose Jacobians of both ends on interval ``i``'s modes.
    corrections : ndarray, shape (n, 4, d)
        ``J_i c_i, J_i c_{i+1}, J_{i+1} c_i, J_{i+1} c_{i+1}`` (``c`` the static corrections,
        :func:`static_correction`).
    """

    def __init__(self, time, start="undeformed", u0=None, u_dot0=None):
        if start not in ("undeformed", "static"):
            raise ValueError(f"`start` must be 'undeformed' or 'static', got {start!r}")
        self.time = np.asarray(time, dtype=float)
        self.begin, self.u0, self.u_dot0 = start, u0, u_dot0
        self.taken = 0          # frames added
        self.last = None        # the last frame added (Frames of one) and its static correction

    def _first(self, frames):
        """The arrays, sized by the first frames, and the initial state on frame 0's modes."""
        n1 = self.time.size
        _, n_v, r = frames.shapes.shape
        d = frames.pose_jacobian.shape[1]
        self.omega, self.zeta = np.zeros((n1, r)), np.zeros((n1, r))
        self.eta, self.eta_dot, self.U = np.zeros((n1, r)), np.zeros((n1, r)), np.zeros((n1, n_v))
        self.deviation, self.deviation_static = np.zeros((n1, d)), np.zeros((n1, d))
        self.start = np.zeros((n1 - 1, 4, r))
        self.modal_jacobians, self.corrections = np.zeros((n1 - 1, 2, d, r)), np.zeros((n1 - 1, 4, d))
        if self.u0 is None:
            u = frames.static_rest[0].copy() if self.begin == "static" else np.zeros(n_v)
        else:
            u = np.array(self.u0, dtype=float)
        u_dot = np.zeros(n_v) if self.u_dot0 is None else np.array(self.u_dot0, dtype=float)
        self.state = (u, u_dot)
        mass_shapes = np.ascontiguousarray(frames.mass_shapes[0])
        self.eta[0], self.eta_dot[0] = u @ mass_shapes, u_dot @ mass_shapes
        self.U[0] = frames.shapes[0] @ self.eta[0]

    def add(self, frames, zeta):
        """The next frames (:class:`Frames`, oriented along the motion) and their damping
        ratios ``zeta`` (k, r): the intervals they end are stepped through.

        Returns
        -------
        Superposition
            ``self``.
        """
        k, m = self.taken, len(frames)
        if not m:
            return self
        if k + m > self.time.size:
            raise ValueError(f"{k + m} frames for {self.time.size} instants")
        zeta = np.broadcast_to(np.asarray(zeta, dtype=float), frames.omega.shape)
        if not k:
            self._first(frames)
        rows = slice(k, k + m)
        correction = static_correction(frames)
        J = frames.pose_jacobian
        self.omega[rows], self.zeta[rows] = frames.omega, zeta
        self.deviation_static[rows] = _apply(J, frames.static_rest)
        if self.last is not None:       # the interval from the last frame added to this chunk's first
            last, c_last = self.last
            pair = Frames(*(np.concatenate([getattr(last, name), getattr(frames, name)[:1]]) for name in FIELDS))
            self._intervals(k - 1, pair, np.concatenate([c_last, correction[:1]]),
                            np.concatenate([self.zeta[k - 1:k], zeta[:1]]))
        self._intervals(k, frames, correction, zeta)
        self.U[rows] += correction
        self.deviation[rows] = _apply(J, self.U[rows])
        self.last = (Frames(*(getattr(frames, name)[-1:].copy() for name in FIELDS)), correction[-1:].copy())
        self.taken = k + m
        return self

    def _intervals(self, first, frames, c, zeta):
        """The intervals between the frames ``first ..`` given (``frames``, their static
        corrections ``c`` and damping ratios ``zeta``): stepped through from the state, and
        their products for the instants between their ends."""
        span, steps = slice(first, first + len(frames)), slice(first, first + len(frames) - 1)
        c_ = np.ascontiguousarray
        _modal_steps(self.time[span], tuple(c_(getattr(frames, name), dtype=float)
                                            for name in ("omega", "shapes", "mass_shapes", "load")),
                     c_(zeta), self.state, (self.eta[span], self.eta_dot[span], self.U[span], self.start[steps]))
        J, shapes = frames.pose_jacobian, frames.shapes
        self.modal_jacobians[steps, 0] = J[:-1] @ shapes[:-1]
        self.modal_jacobians[steps, 1] = J[1:] @ shapes[:-1]
        for i, (Ja, ca) in enumerate(((J[:-1], c[:-1]), (J[:-1], c[1:]), (J[1:], c[:-1]), (J[1:], c[1:]))):
            self.corrections[steps, i] = _apply(Ja, ca)

    def result(self, pose_rigid, parts=1, pose_at=None):
        """The :class:`KedResult` once every frame is in (``pose_rigid`` (n + 1, d), ``parts``
        and ``pose_at`` as :func:`integrate_frames`)."""
        if self.taken != self.time.size:
            raise ValueError(f"{self.taken} frames for {self.time.size} instants")
        pose_rigid = np.asarray(pose_rigid, dtype=float)
        deviation, static = self.deviation, self.deviation_static
        result = KedResult(time=self.time, pose_rigid=pose_rigid, pose=pose_rigid + deviation, deviation=deviation,
                           deviation_static=static, deviation_dynamic=deviation - static,
                           frequencies=self.omega / (2 * np.pi), modal_coordinates=self.eta,
                           modal_velocities=self.eta_dot, displacement=self.U)
        if parts > 1:
            result = dataclasses.replace(result, samples=_between(self.time, int(parts), self, pose_rigid, result,
                                                                  pose_at))
        return result


def integrate_frames(time, frames, pose_rigid, damping_ratio, u0=None, u_dot0=None, start="undeformed", parts=1,
                     pose_at=None):
    """Run the piecewise-constant modal superposition over precomputed frames
    (:class:`Superposition`, all the frames at once).

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
    steps = Superposition(time, start, u0, u_dot0).add(frames, damping_ratio)
    return steps.result(pose_rigid, parts, pose_at)


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
    motion, frames = motion_and_frames(model, trajectory, time, count, progress=(progress, None), ready=load_stepping)
    return integrate_frames(time, frames, motion.pose, damping_ratio, start=start)
