r"""The time loop of the full FFR transient: drives, output sampling, the result record.

:func:`simulate` is the only time loop of the project (STYLE §8.2 rule 6).  It hands a
model's compiled tables, a :class:`Drive` and the damping to an integrator of
:mod:`sim.solvers.integrators` (which solves ``M(q) a + J^T lam = Q`` with the drive's terms in one
compiled loop), has it sample the state at output instants and returns a :class:`Result`; it
writes nothing.
"""
from dataclasses import dataclass, field
import time

import numpy as np

from sim.errors import signals_deferred
from sim.model.evaluator import Evaluator, held
from sim.solvers.integrators import METHODS, GeneralizedAlpha, Options
from sim.model.kinematics import pose, sensor_values
from sim.solvers.motion import load_kernels as load_kernels_motion


@dataclass(frozen=True)
class Drive:
    """How the actuators act.

    Attributes
    ----------
    kind : {"prescribed", "torque", "free"}
    reference : callable or None
        ``reference(t) -> (s, s_dot, s_ddot)``, each (n_a,) [rad or m and rates].  A law that
        also takes times (k,) and returns (k, n_a) arrays is tabulated in one call per chunk
        of steps; any other is called once per step (:meth:`table`).
    feedforward : callable or None
        ``feedforward(t) -> tau`` (n_a,) [N m or N] (torque drives), likewise.
    kp, kd : float or ndarray, shape (n_a,)
        PD gains (torque drives) [N m/rad or N/m, N m s/rad or N s/m].
    ki : float or ndarray, shape (n_a,)
        Gain [1/s] on the time integral of the PD force (torque drives).
    limit : float or ndarray, shape (n_a,)
        Largest actuator force [N m or N] (torque drives; inf: none).
    velocity : callable or None
        ``velocity(t) -> s_dot`` (n_a,): the rate reference of the PD law when it differs from
        the reference's own rate (a servo without velocity feedforward: zero).
    transmission : bool
        Torque drives: a compliant actuator's force acts on its motor (its reflected rotor
        inertia), joined to the joint by the actuator's spring (servo drives); else on the joint.
    integral : float or ndarray, shape (n_a,)
        The integral ``z`` at the start (torque drives; a servo holding a static load through
        its integral).
    motor_offset : float or ndarray, shape (n_a,)
        The motors' angles less their joints' at the start (transmissions: a spring that
        starts loaded) [rad or m].
    """

    kind: str
    reference: object = None
    feedforward: object = None
    kp: object = 0.0
    kd: object = 0.0
    ki: object = 0.0
    limit: object = np.inf
    velocity: object = None
    transmission: bool = False
    integral: object = 0.0
    motor_offset: object = 0.0

    def table(self, times, n_a):
        """The laws at ``times`` (k,): ``s, s_dot, s_ddot, tau_ff``, each (k, n_a) (zeros where
        the drive has none).  Laws that take an array of times (``(k,) -> (k, n_a)``) are
        called once; others once per instant."""
        times = np.asarray(times, dtype=float)
        k = times.size
        ref = (np.zeros((k, n_a)),) * 3 if self.reference is None or self.kind == "free" else \
            _tabulate(self.reference, times, n_a, 3)
        ff = _tabulate(self.feedforward, times, n_a, 1)[0] if self.kind == "torque" and self.feedforward else \
            np.zeros((k, n_a))
        if self.kind == "torque" and self.velocity is not None:
            ref = (ref[0], _tabulate(self.velocity, times, n_a, 1)[0], ref[2])
        return (*ref, ff)


def _tabulate(law, times, n_a, parts):
    """``law`` at ``times`` as ``parts`` arrays (k, n_a): one vectorised call when the law
    accepts arrays, else one call per instant."""
    k = times.size
    try:
        out = law(times)
        out = (out,) if parts == 1 else tuple(out)
        arrays = tuple(np.array(np.broadcast_to(np.asarray(x, dtype=float), (k, n_a))) for x in out)   # writable
        if len(arrays) == parts and (k == 1 or n_a != k or _consistent(law, times, arrays, parts)):
            return arrays
    except (ValueError, TypeError, IndexError):
        pass
    rows = [law(x) for x in times]
    rows = [(r,) if parts == 1 else tuple(r) for r in rows]
    return tuple(np.array([np.asarray(r[j], dtype=float).reshape(n_a) for r in rows]).reshape(k, n_a)
                 for j in range(parts))


def _consistent(law, times, arrays, parts):
    """Whether the vectorised call agrees with a scalar call at the last instant (an
    ambiguous shape when there are as many instants as actuators)."""
    last = law(times[-1])
    last = (last,) if parts == 1 else tuple(last)
    return all(np.allclose(np.asarray(x, dtype=float), y[-1]) for x, y in zip(last, arrays))


@dataclass(frozen=True)
class Result:
    """Sampled transient.

    Attributes
    ----------
    t : ndarray, shape (n,)
    q : ndarray, shape (n, n_q)
    v : ndarray, shape (n, n_v)
    pose : ndarray, shape (n, d)
    sensors : ndarray, shape (n, n_s)
    energy : ndarray, shape (n, 3)
        Kinetic, gravitational and elastic energy [J].
    constraint_violation : ndarray, shape (n,)
        Norm of ``C`` (joint and driving rows) [m, rad].
    newton_iterations : ndarray, shape (n,)
        Newton iterations of the step ending at each sample (0 at t0).
    actuator_forces : ndarray, shape (n, n_a)
        Forces of torque drives [N m or N] (zero under other drives).
    motor_angles : ndarray, shape (n, n_a)
        Angles of the motors behind transmissions (servo drives on compliant actuators) in
        joint units [rad or m]; zero for the others.
    a : ndarray, shape (n, n_v)
        Accelerations that meet the equations of motion at each sample.
    lam : ndarray, shape (n, n_c)
        The multipliers of the constraint rows ``rows`` (n_c,; joints, and with prescribed
        drives the rigid actuators') at each sample [N, N m].
    pose_rates : ndarray, shape (n, 2, d)
        End-effector coordinate velocity and acceleration [m/s, rad/s; m/s^2, rad/s^2].
    marker_position, marker_velocity, marker_acceleration : ndarray, shape (n, n_m, 3)
        The markers' origins, their velocities and accelerations, world [m, m/s, m/s^2].
    rows, n_joint
        The constraint rows of ``lam`` (indices among the joint rows, then the actuators')
        and the number of joint rows.
    status : {"complete", "failed", "interrupted"}
    message : str
    counters : dict
        ``steps, iterations, evaluations, factorizations, wall_time_s``.
    stop : KeyboardInterrupt or None
        What interrupted the run (a :class:`sim.errors.Interrupted` names the signal), for the
        caller to raise again once it has kept the samples.
    """

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    pose: np.ndarray
    sensors: np.ndarray
    energy: np.ndarray
    constraint_violation: np.ndarray
    newton_iterations: np.ndarray
    status: str
    message: str
    counters: dict = field(default_factory=dict)
    stop: BaseException = field(default=None, repr=False, compare=False)
    actuator_forces: np.ndarray = None
    motor_angles: np.ndarray = None
    a: np.ndarray = None
    lam: np.ndarray = None
    pose_rates: np.ndarray = None
    marker_velocity: np.ndarray = None
    marker_acceleration: np.ndarray = None
    marker_position: np.ndarray = None
    rows: np.ndarray = None
    n_joint: int = 0


def load_kernels(model):
    """Compile, or load from numba's cache, the transient's kernels for ``model`` now: the
    evaluation, the rigid reference's sample loop and the step loop."""
    load_kernels_motion(model, Evaluator(model))
    compile_loop(model)


def compile_loop(model):
    """Compile, or load from numba's cache, the transient's own kernel, the step loop, without
    compiling or calling the evaluation (an unassembled model will do;
    :mod:`sim.app.parallel_compile`)."""
    ev = Evaluator(model, load=False)
    with signals_deferred():
        GeneralizedAlpha(ev, Drive("free"), 0.0, model.q_home, np.zeros(model.n_v), 1e-4, consistent=False).compile()


class _Markers:
    """Marker origins and axes of the samples (what :func:`sim.model.kinematics.pose` reads)."""

    def __init__(self, p, A):
        self.p, self.A = p, A


def simulate(model, q0, v0, t_end, h, drive, options=None, output_step=None, damping=None, progress=None):
    """Integrate the full FFR equations from ``(q0, v0)`` at ``options.t0`` to ``t_end``.

    Parameters
    ----------
    model : Model or sim.model.evaluator.Evaluator
        The robot, or its evaluator where the caller holds one (:func:`sim.model.evaluator.held`).
    q0 : ndarray, shape (n_q,)
    v0 : ndarray, shape (n_v,)
    t_end, h : float
        Final time and step [s].
    drive : Drive
    options : sim.solvers.integrators.Options, optional
        The method (a key of :data:`sim.solvers.integrators.METHODS`, default Newmark), its
        ``rho_inf``, the Baumgarte gains, Newton's tolerance and iterations, the solver and the
        initial time ``t0``.
    output_step : float, optional
        Spacing of the samples [s] (default: every step); rounded to a multiple of ``h``.
    damping : ndarray, shape (n_v, n_v), or sim.solvers.damping.Schedule, optional
        Linear damping ``D`` (``Q -= D v``), constant or piecewise constant in time (set at
        the start of each step).
    progress : tqdm-like, optional
        Updated with the number of steps taken.

    Returns
    -------
    Result
        ``status = "failed"`` with a one-line ``message`` (time, residual) when the
        integration stops early; the samples computed so far are kept.
    """
    start = time.perf_counter()
    model, ev = held(model)
    options = Options() if options is None else options
    t0 = options.t0
    integrator = METHODS[options.method](ev, drive, t0, q0, v0, h, options, damping=damping)
    n_steps = int(round((t_end - t0) / h))
    every = max(1, int(round((output_step or h) / h)))
    out = integrator.samples(1 + n_steps // every + (1 if n_steps % every else 0))
    integrator.record(out)
    status, stop = "complete", None
    try:
        integrator.advance(n_steps, out, every, progress=progress)
        if integrator.status != "running":
            status = "failed"
    except KeyboardInterrupt as exc:
        # Ctrl-C (or another stop signal): keep the samples computed so far; the caller
        # writes them and raises the stop again.
        status, stop = "interrupted", exc
    message = integrator.message if status == "failed" else (
        f"interrupted at t = {integrator.t:.6g} s" if status == "interrupted" else "")
    k = integrator.n_samples
    frames = _Markers(out.p[:k], out.A[:k])
    poses, sensors = pose(model, out.q[:k], frames), sensor_values(model, out.q[:k], frames)
    return Result(t=out.t[:k].copy(), q=out.q[:k].copy(), v=out.v[:k].copy(), pose=poses, sensors=sensors,
                  energy=out.energy[:k].copy(), constraint_violation=out.violation[:k].copy(),
                  newton_iterations=out.iterations[:k].astype(int), status=status, message=message,
                  counters=dict(steps=integrator.n_steps, iterations=integrator.n_iterations,
                                evaluations=integrator.n_evaluations, factorizations=integrator.n_factorizations,
                                jacobians=integrator.n_jacobians, wall_time_s=time.perf_counter() - start),
                  stop=stop, actuator_forces=out.tau[:k].copy(),
                  motor_angles=out.motor[:k].copy(), a=out.a[:k].copy(), lam=out.lam[:k].copy(),
                  pose_rates=out.ee[:k].copy(), marker_velocity=out.pd[:k].copy(),
                  marker_acceleration=out.ap[:k].copy(), marker_position=out.p[:k].copy(),
                  rows=integrator.rows.copy(), n_joint=int(ev.n_joint))
