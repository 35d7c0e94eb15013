"""Motion of the rigid robot along an end-effector trajectory (elastic coordinates frozen).

At each time: position by Newton from a third-order predictor (velocity, acceleration and
the acceleration's difference quotient of the previous sample); when plain Newton steps do
not contract fast, the line-search Newton of :func:`sim.assembly.assemble` takes over.
Velocity and acceleration from the stacked constraint and end-effector equations over the
reference coordinates,

    [C_q; J_x] v = [0; x_dot],        [C_q; J_x] a = [gamma; x_ddot - x_q],

solved in the least-squares sense through ``[C_q; J_x]^T [C_q; J_x]`` (minimum-norm where
constraints are redundant).  Its eigenvalues give the conditioning; a singular instant stops
with its time.  Long samplings run on the compiled kernels (:mod:`sim.fast`).
"""
from dataclasses import dataclass

import numpy as np

from .assembly import SINGULAR_RATIO, AssemblyError, assemble, correct, solve_pose
from .constraints import constraints
from .errors import SimError
from .fast import Evaluator
from .kinematics import markers, pose_jacobian, pose_rates
from .linalg import flush, normal_solver


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


def rigid_state(model, q, x_dot, x_ddot, ev=None, A=None):
    """Velocity and acceleration (n_v,) of the rigid robot at ``q`` for end-effector rates.

    Returns ``v, a, cond`` (condition number over the expected rank); with the compiled
    evaluator ``ev`` (:class:`sim.fast.Evaluator`), also its evaluation at ``(q, v)`` (kinematic
    terms only: no ``M``, ``Q``).
    ``A`` (n_c + d, n_r): ``[C_q; J_x]`` over the reference coordinates at ``q``, if at hand.
    """
    rigid = model.v_rigid
    if A is None:
        if ev is None:
            ms = markers(model, q)
            _, Jc = constraints(model, q, ms=ms)
            _, Jx = pose_jacobian(model, q, ms)
        else:
            Jc = ev.evaluate(q, np.zeros(model.n_v), bodies=False).J
            Jx = ev.pose()[1]
        A = flush(np.vstack([Jc, Jx])[:, rigid])
    n_c = A.shape[0] - len(model.pose_names)
    ls, cond = normal_solver(A, model.home_ranks[0])

    def solve(rhs):
        out = np.zeros(model.n_v)
        out[rigid] = ls(rhs)
        return out

    v = solve(np.concatenate([np.zeros(n_c), x_dot]))
    if ev is None:
        ms = markers(model, q, v)
        _, _, gamma = constraints(model, q, v, ms=ms)
        _, _, _, xq = pose_rates(model, q, v, ms)
        return v, solve(np.concatenate([gamma, x_ddot - xq])), cond
    E = ev.evaluate(q, v, bodies=False)
    xq = ev.pose(v)[2]
    return v, solve(np.concatenate([E.gamma, x_ddot - xq])), cond, E


def rigid_motion(model, trajectory, times, q_start=None, progress=None, on_sample=None):
    """Sample the rigid robot's motion along ``trajectory`` at ``times`` (n,) [s].

    ``on_sample(q, v, a, s)`` (optional) is called with each sample as soon as it is known
    (``s``: the actuator values, not yet unwrapped), so that a consumer can start on it
    while the motion goes on (:func:`sim.ked.motion_and_frames`).

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
    out = {k: [] for k in ("q", "v", "a", "act", "act_d", "act_dd", "cond")}
    ev = Evaluator(model)
    v = a = jerk = np.zeros(model.n_v)
    A = None
    for k, t in enumerate(times):
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
        out["q"].append(q)
        out["v"].append(v)
        out["a"].append(a)
        out["act"].append(s)
        out["act_d"].append(J_s @ v)
        out["act_dd"].append(J_s @ a - g_s)
        out["cond"].append(cond)
        if on_sample is not None:
            on_sample(q, v, a, s)
        if progress is not None:
            progress.update(1)
    act = np.array(out["act"]).reshape(n, -1)
    # Angles are unwrapped so that drives are continuous through +-pi.
    ang = np.array([a.kind == "angle" for a in model.actuators], dtype=bool)
    act[:, ang] = np.unwrap(act[:, ang], axis=0)
    return RigidMotion(t=times, q=np.array(out["q"]), v=np.array(out["v"]), a=np.array(out["a"]), pose=x,
                       pose_dot=xd, pose_ddot=xdd, actuators=act,
                       actuators_dot=np.array(out["act_d"]).reshape(n, -1),
                       actuators_ddot=np.array(out["act_dd"]).reshape(n, -1), condition=np.array(out["cond"]))
