r"""The time loop of the full FFR transient: drives, problem assembly, output sampling.

:func:`simulate` is the only time loop of the project (STYLE §8.2 rule 6).  It turns a model
and a :class:`Drive` into the :class:`sim.integrators.Problem` of :mod:`sim.dynamics`

    M(q) a + J^T lam = Q_e + Q_v - K q (+ J_s^T tau for torque drives),

samples the state at output instants and returns a :class:`Result`; it writes nothing.

Drives (actuators ``s(q)``, ``J_s = ds/dq``):

* ``prescribed``: driving constraints ``s(q) - s_ref(t) = 0`` (rows after the joint rows);
* ``torque``: actuator forces ``tau = tau_ff(t) + kp (s_ref - s) + kd (s_ref_dot - s_dot)``;
* ``free``: actuators unconstrained and unloaded (the mechanism moves freely).

Bodies built with geometric stiffening (:mod:`sim.dynamics`) get their stiffening forces in
``Q`` (and, through the residual Jacobian, in the iteration matrix); without it, a linear FFR beam spun faster than
its first bending frequency softens without bound (the spin-up beam).
"""
from dataclasses import dataclass, field
from typing import NamedTuple
import time

import numpy as np

from .fast import Evaluator, StepIterations
from .motion import load_kernels as load_kernels_motion
from .integrators import METHODS, Problem
from .kinematics import sensor_values, pose


@dataclass(frozen=True)
class Drive:
    """How the actuators act.

    Attributes
    ----------
    kind : {"prescribed", "torque", "free"}
    reference : callable or None
        ``reference(t) -> (s, s_dot, s_ddot)``, each (n_a,) [rad or m and rates].
    feedforward : callable or None
        ``feedforward(t) -> tau`` (n_a,) [N m or N] (torque drives).
    kp, kd : float
        PD gains (torque drives).
    """

    kind: str
    reference: object = None
    feedforward: object = None
    kp: float = 0.0
    kd: float = 0.0


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
    status : {"complete", "failed", "interrupted"}
    message : str
    counters : dict
        ``steps, iterations, evaluations, factorizations, wall_time_s``.
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


def load_kernels(model):
    """Compile, or load from numba's cache, the transient's kernels for ``model`` now: the
    evaluation, the rigid reference's sample loop and the compiled Newton loop."""
    ev = Evaluator(model)
    load_kernels_motion(model, ev)
    StepIterations(ev, "prescribed")


def make_problem(model, drive, damping=None, fast=None):
    """:class:`sim.integrators.Problem` of ``model`` under ``drive``.

    Parameters
    ----------
    model : Model
    drive : Drive
    damping : ndarray, shape (n_v, n_v), optional
        Linear damping matrix ``D`` (``Q -= D v``).
    fast : sim.fast.Evaluator, optional
        The compiled evaluator to use (one is built otherwise).
    """
    nj = model.rows["n_joint"]
    angle = np.array([a.kind == "angle" for a in model.actuators], dtype=bool)
    driven = np.array([a.stiffness is None for a in model.actuators], dtype=bool)   # rigid drives: constraint rows

    fast = Evaluator(model) if fast is None else fast
    memo = {}

    def reference(t):
        # The drive law is evaluated once per instant: every Newton iteration of a step asks
        # for the same time.
        if memo.get("t") != t:
            memo["t"], memo["ref"] = t, drive.reference(t)
        return memo["ref"]

    def evaluate(t, q, v, velocity_jacobian=False):
        if drive.kind == "prescribed":
            s, sd, sdd = reference(t)
            E = fast.evaluate(q, v, targets=s, target_acc=sdd, velocity_jacobian=velocity_jacobian)
            M, Q, C, J, gamma = E.M, E.Q, E.C, E.J, E.gamma
            C_dot = J @ v
            C_dot[nj:] -= sd[driven]
        else:
            E = fast.evaluate(q, v, velocity_jacobian=velocity_jacobian)
            M, Q, C, J, gamma, s, J_s = E.M, E.Q, E.C, E.J, E.gamma, E.s, E.J_s
            C_dot = J @ v
            if drive.kind == "torque":
                s_ref, sd_ref, _ = reference(t)
                err = s_ref - s
                err[angle] = (err[angle] + np.pi) % (2 * np.pi) - np.pi
                tau = drive.feedforward(t) + drive.kp * err + drive.kd * (sd_ref - J_s @ v)
                Q = Q + J_s.T @ tau
        if damping is not None:
            Q = Q - damping @ v
        if not velocity_jacobian:
            return M, Q, C, J, gamma, C_dot
        Q_v = E.Q_v
        if drive.kind == "torque" and drive.kd:
            Q_v = Q_v - drive.kd * (E.J_s.T @ E.J_s)
        if damping is not None:
            Q_v = Q_v - damping
        return M, Q, C, J, gamma, C_dot, Q_v, E.gamma_v, E.K_t

    return Problem(model.n_v, evaluate, fast.integrate, velocity_jacobian=True,
                   iterate=_compiled_iterations(fast, drive, reference, damping))


def _compiled_iterations(fast, drive, reference, damping):
    """The compiled Newton loop of the problem (:class:`sim.fast.StepIterations`), with the
    drive law evaluated once per step."""
    kernel = StepIterations(fast, drive.kind, drive.kp, drive.kd, damping)
    if drive.kind == "free":
        return kernel

    def iterate(a, lam, r, lu, piv, q, base, *options):
        t1 = base[0]     # the step's end, where the drive law applies
        s, sd, sdd = (np.ascontiguousarray(x, dtype=float) for x in reference(t1))
        ff = np.ascontiguousarray(drive.feedforward(t1), dtype=float) if drive.kind == "torque" else None
        return kernel(a, lam, r, lu, piv, q, base, *options, s_ref=s, sd_ref=sd, sdd_ref=sdd, ff=ff)

    return iterate



class _Markers(NamedTuple):
    p: np.ndarray
    A: np.ndarray


def _sample(model, fast, drive, t, q, v):
    """Outputs at one instant: pose (d,), sensors (n_s,), energy (3,), constraint norm."""
    targets = drive.reference(t)[0] if drive.kind == "prescribed" else None
    M, _, C, *_ = fast.evaluate(q, v, targets=targets)
    ms = _Markers(fast.work["p"], fast.work["A"])
    return (pose(model, q, ms), sensor_values(model, q, ms), np.array([0.5 * v @ M @ v, *fast.potential(q)]),
            np.linalg.norm(C))


def simulate(model, q0, v0, t_end, h, drive, method="newmark", output_step=None, t0=0.0, rho_inf=0.9,
             baumgarte=(10.0, 10.0), newton_tol=None, newton_max_iter=None, damping=None, progress=None):
    """Integrate the full FFR equations from ``(q0, v0)`` at ``t0`` to ``t_end``.

    Parameters
    ----------
    model : Model
    q0 : ndarray, shape (n_q,)
    v0 : ndarray, shape (n_v,)
    t_end, h : float
        Final time and step [s].
    drive : Drive
    method : str
        A key of :data:`sim.integrators.METHODS`.
    output_step : float, optional
        Spacing of the samples [s] (default: every step); rounded to a multiple of ``h``.
    rho_inf, baumgarte, newton_tol, newton_max_iter
        Integrator options (:class:`sim.integrators.Integrator`).
    damping : ndarray, shape (n_v, n_v), or sim.damping.Schedule, optional
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
    # One evaluator for the steps and the samples (the samples read its marker arrays right
    # after their own evaluation).
    fast = Evaluator(model)
    schedule = damping if hasattr(damping, "at") else None
    problem = make_problem(model, drive, damping=damping if schedule is None else schedule.matrix, fast=fast)
    options = {"baumgarte": baumgarte}
    if newton_tol is not None:
        options["newton_tol"] = newton_tol
    if newton_max_iter is not None:
        options["newton_max_iter"] = newton_max_iter
    if method != "newmark":
        options["rho_inf"] = rho_inf
    integrator = METHODS[method](problem, t0, q0, v0, h, **options)
    n_steps = int(round((t_end - t0) / h))
    every = max(1, int(round((output_step or h) / h)))
    rows = {k: [] for k in ("t", "q", "v", "pose", "sensors", "energy", "violation", "iterations")}

    def record(iterations):
        x, s, e, c = _sample(model, fast, drive, integrator.t, integrator.q, integrator.v)
        for key, value in zip(rows, (integrator.t, integrator.q, integrator.v, x, s, e, c, iterations)):
            rows[key].append(value)

    record(0)
    iterations = 0
    status = "complete"
    try:
        for k in range(1, n_steps + 1):
            if schedule is not None:
                schedule.at(integrator.t)     # in place: the problem holds the same matrix
            integrator.step()
            iterations = max(iterations, integrator.last_iterations)
            if integrator.status != "running":
                status = "failed"
                break
            if k % every == 0 or k == n_steps:
                record(iterations)
                iterations = 0
            if progress is not None:
                progress.update(1)
    except KeyboardInterrupt:
        # Ctrl-C: keep the samples computed so far; the caller writes them and stops.
        status = "interrupted"
    message = integrator.message if status == "failed" else (
        f"interrupted at t = {integrator.t:.6g} s" if status == "interrupted" else "")
    n_s = len(model.sensors)
    return Result(t=np.array(rows["t"]), q=np.array(rows["q"]), v=np.array(rows["v"]),
                  pose=np.array(rows["pose"]), sensors=np.array(rows["sensors"]).reshape(len(rows["t"]), n_s),
                  energy=np.array(rows["energy"]), constraint_violation=np.array(rows["violation"]),
                  newton_iterations=np.array(rows["iterations"], dtype=int),
                  status=status, message=message,
                  counters=dict(steps=integrator.n_steps, iterations=integrator.n_iterations,
                                evaluations=integrator.n_evaluations, factorizations=integrator.n_factorizations,
                                jacobians=integrator.n_jacobians,
                                wall_time_s=time.perf_counter() - start))
