"""The initial state of a time integration, and the robot's statics at rest.

A transient starts where the robot stands before it moves: at rest in static equilibrium at
its first pose (:func:`static_start`: the elastic deflection under gravity and preloads, the
compliant drives' deflections that hold them), its coordinates assembled and its velocities
consistent with every constraint row (:func:`consistent_state`).  Under servo drives the
servos hold that load from the start, through their integral or the position loop's lag
(:meth:`sim.solvers.closed_loop.Servo.holding`, with the rest forces :func:`rest_forces`); the
static deflection along a path (:func:`static_deviation`) then includes their lag
(:func:`servo_sag`), so that what remains of the deviation is the vibration.
"""
import numpy as np

from sim.linalg import lstsq

def consistent_state(model, q_guess, v_elastic, targets, rates, ev):
    """Assemble the rigid coordinates (elastic ones kept) and solve the rigid velocities
    (then the least change of all velocities that meets every constraint row), by the
    model's kinematics ``ev`` (:class:`sim.model.evaluator.Kinematics`, or an ``Evaluator``).

    ``targets``/``rates`` (n_a,) or None (actuators free: rigid velocities of least norm).
    """
    from sim.model.assembly import AssemblyError, assemble

    try:
        q = assemble(model, q_guess, ev, targets=targets, what="the initial state")
    except AssemblyError:
        # A deformed overconstrained loop (the NaVARo's parallelograms sagging out of their
        # plane) closes only with its elastic coordinates: the least change of all of them.
        q = assemble(model, q_guess, ev, targets=targets, what="the initial state", deformed=True)
    nj = model.rows["n_joint"]
    E = ev.kinematics(q)
    J = np.vstack([E.J, E.J_s])     # every actuator's row: the rigid robot
    rhs = np.zeros(J.shape[0])
    if rates is not None:
        rhs[nj:] = rates
    else:
        J, rhs = J[:nj], rhs[:nj]
    rigid = model.v_rigid
    v = v_elastic.copy()
    v[rigid] = lstsq(J[:, rigid], rhs - J @ v_elastic, cond=1e-10)
    # A deformed overconstrained loop (a planar loop of spatial joints, deflected out of its
    # plane) may leave no rigid velocity that meets every row: the least change of all the
    # velocities (elastic ones too) that does.
    v += lstsq(J, rhs - J @ v, cond=1e-10)
    return q, v


def rest_forces(model, ev, qs):
    """The actuators' forces (k, n_a) [N m or N] that hold the rigid robot at rest at the
    configurations ``qs`` (k, n_q) (:func:`sim.solvers.reactions.actuator_forces` of
    a motion at rest, by the evaluator ``ev``)."""
    from sim.solvers.reactions import actuator_forces
    from sim.solvers.motion import RigidMotion

    qs = np.atleast_2d(np.asarray(qs, dtype=float))
    k, n_a, d = len(qs), len(model.actuators), len(model.pose_kinds)
    zero = np.zeros
    still = RigidMotion(t=zero(k), q=qs, v=zero((k, model.n_v)), a=zero((k, model.n_v)), pose=zero((k, d)),
                        pose_dot=zero((k, d)), pose_ddot=zero((k, d)), actuators=zero((k, n_a)),
                        actuators_dot=zero((k, n_a)), actuators_ddot=zero((k, n_a)), condition=zero(k))
    return actuator_forces(ev, still)


def servo_sag(model, ev, servo, qs):
    """The servos' share (k, d) of the end effector's static deflection at rest at the rigid
    configurations ``qs`` (k, n_q): the joints' lag behind their references where a position
    loop (no integral) or a compliant transmission carries the load that the torque
    feedforward leaves (:meth:`sim.solvers.closed_loop.Servo.holding`), through the rigid robot's
    kinematics (:func:`sim.solvers.closed_loop.lag_gain`)."""
    from sim.solvers.closed_loop import lag_gain

    out = []
    for q, tau in zip(qs, rest_forces(model, ev, qs)):
        start = servo.holding(model, tau, servo.torque * tau)
        out.append(-lag_gain(model, ev.kinematics(q, pose=True)) @ (start.lag + start.motor_offset))
    return np.array(out).reshape(len(qs), len(model.pose_kinds))


def static_start(model, q, ev, lock=False):
    """The configuration (n_q,) of the robot at rest at the rigid configuration ``q`` under its
    static loads, to first order: ``q ⊕ u``, ``u`` of :func:`rest_deflection` (rigid
    actuators locked; the compliant ones deflected, or with ``lock`` locked too)."""
    from sim.model.kinematics import integrate

    return integrate(model, q, rest_deflection(model, q, ev, lock))


def rest_deflection(model, q, ev, lock=False, load=None):
    """Static displacement (n_v,) of the robot at rest at ``q``, rigid actuators locked where
    they are (``lock``: the compliant ones too): gravity and preloads, and ``load`` (n_v,), a
    generalized force held constant, :func:`sim.solvers.modal.static_response`.  Its reference
    coordinates are the joints' motions that go with the deflection (a compliant drive's).
    ``ev``: the model's :class:`sim.model.evaluator.Evaluator`."""
    return _rest(model, q, ev, lock, load)[0]


def _rest(model, q, ev, lock=False, load=None, held=None):
    """:func:`rest_deflection` at ``q`` by the evaluator ``ev``, and the evaluation at ``q``
    it solved with (the end effector's terms too).  ``held``: where the model is large
    (:func:`held_structure`), ``M`` and the tangent stiffness are evaluated on their structure
    (no (n_v, n_v) array), the stiffness handed on sparse."""
    from sim.model.tables import compliant
    from sim.solvers.modal import static_response

    rest = np.zeros(model.n_v)
    stiff = held is not None and ev.stiff
    E = ev.evaluate(q, rest, targets=ev.kinematics(q).s, pose=True, velocity_jacobian=stiff,
                    stores=None if held is None else held.fresh())
    Q = E.Q if load is None else E.Q + load
    if not Q.any():      # no gravity, no preloads: nothing to solve for
        return rest, E
    J = np.vstack([E.J, E.J_s[compliant(model)]]) if lock else E.J
    K = held.K_body + held.sparse(E.K_t) if stiff and E.K_t is not None else None
    return static_response(model, q, Q[:, None], K=K, J=J, J_s=E.J_s)[:, 0], E


def held_structure(model, ev):
    """The model's ``M`` and tangent stiffness on their structure for :func:`_rest`
    (:func:`sim.solvers.blocks.held`) from :data:`sim.solvers.subspace.STORE_MIN` coordinates
    (the frames' and the transient's limit: below it the dense arrays are small and their
    evaluation compiled already), else None; with the bodies' stiffness (``Held.K_body``)."""
    from sim.solvers.blocks import held
    from sim.solvers.modal import body_stiffness
    from sim.solvers.subspace import STORE_MIN
    structure = held(ev.tables, ev.stiff) if model.n_v >= STORE_MIN else None
    return structure and structure._replace(K_body=body_stiffness(model))


STATIC_RTOL = 1e-6       # the static deflection's spline: largest error at a checked midpoint,
                         # relative to the deflection's largest value
STATIC_START = 33        # samples of the first pass of the static deflection (then refined)


def static_deviation(model, ev, times, qs, lock=False, servo=None):
    """``(static, static_servo)``, each ``f(t) -> (n, d)``: the end-effector's static deflection
    at rest along the rigid configurations ``qs`` at ``times`` (linearised, ``J_x u``; ``lock``
    as :func:`rest_deflection`), interpolated by a cubic spline (it follows the configuration).
    ``servo`` (:class:`sim.solvers.closed_loop.Servo`): the actuators are held by these servos,
    whose lag under the load adds its share (:func:`servo_sag`), ``static_servo`` (zeros
    without servos).

    The deflection is solved at as few of the samples as the spline needs
    (:func:`_refined`: within ``STATIC_RTOL`` of its largest value at every checked midpoint):
    the reference is sampled for its drive law's accelerations, far more finely than the
    deflection varies, and each sample is a static solution of the flexible robot."""
    from sim.model.tables import compliant

    d = len(model.pose_kinds)
    # At rest on the rigid robot (no elastic coordinates, no rates) only gravity, springs and
    # compliant drives load the structure: without them there is nothing to evaluate.
    elastic = bool(len(model.v_elastic) and (model.gravity.any() or model.springs or compliant(model).any()))
    if not elastic and servo is None:
        return _spline(times, np.zeros((len(qs), d))), _spline(times, np.zeros((len(qs), d)))

    structure = held_structure(model, ev) if elastic else None

    def deflection(rows):
        out = np.zeros((len(rows), 2 * d))      # the whole static deflection, the servos' share
        if elastic:
            for i, k in enumerate(rows):
                u, E = _rest(model, qs[k], ev, lock, held=structure)
                out[i, :d] = E.J_x @ u
        if servo is not None:
            out[:, d:] = servo_sag(model, ev, servo, qs[rows])
            out[:, :d] += out[:, d:]
        return out

    rows, values = _refined(times, deflection, STATIC_RTOL)
    return _spline(times[rows], values[:, :d]), _spline(times[rows], values[:, d:])


def _refined(times, f, rtol, start=STATIC_START):
    """The samples ``rows`` (ascending indices of ``times``, first and last included) and
    ``f(rows)`` (len(rows), p) at them, enough for the cubic spline through them to stay within
    ``rtol`` of ``f``'s largest value at the midpoint of every interval checked.

    From ``start`` samples evenly spread, each interval's middle sample is solved and checked
    against the spline through the others; the intervals whose middle is off are halved
    again (the checked samples join the spline), down to consecutive samples."""
    n = len(times)
    rows = np.unique(np.linspace(0, n - 1, min(n, start)).round().astype(int))
    values = f(rows)
    pending = np.ones(len(rows) - 1, dtype=bool)    # intervals still to check
    while True:
        left, right = rows[:-1][pending], rows[1:][pending]
        split = right - left > 1
        left, right = left[split], right[split]
        if not left.size:
            return rows, values
        middle = (left + right) // 2
        found = f(middle)
        spline = _spline(times[rows], values)
        scale = max(np.abs(values).max(), np.abs(found).max())
        off = np.abs(spline(times[middle]) - found).max(axis=1) > rtol * scale
        order = np.argsort(np.concatenate([rows, middle]), kind="stable")
        rows = np.concatenate([rows, middle])[order]
        values = np.concatenate([values, found])[order]
        # The two halves of an interval whose middle was off are checked again.
        check = np.zeros(len(rows), dtype=bool)
        at = np.searchsorted(rows, middle[off])
        check[at - 1] = True
        check[at] = True
        pending = check[:-1]


def _spline(times, values):
    """``f(t) -> (n, d)``: the cubic spline through ``values`` (k, d) at ``times`` (k,)."""
    if not values.any():     # no gravity, no preloads: no spline to import and build
        return lambda t: np.zeros((np.size(t), values.shape[1]))
    import scipy.interpolate    # on use: a long import that `sim modes` does without
    spline = scipy.interpolate.CubicSpline(times, values, axis=0)
    return lambda t: spline(np.atleast_1d(t))
