r"""Servo drives: the cascade position/velocity controller, and the robot linearised with it.

Each actuator's servo is a P position loop inside a PI velocity loop (joint-side units: the
gear's ratio ``n`` and the rotor inertia ``J_m`` are the model's, :class:`sim.model.types.Actuator`):

    tau = kv (kp (r - theta) + f r_dot - theta_dot) + ki z + g tau_ff,     z' = tau_pd,

``tau_pd = kv (kp (r - theta) + f r_dot - theta_dot)`` the PD part, ``theta`` the motor's
angle in joint units (``theta = s`` for a rigid transmission; a compliant actuator's own
coordinate otherwise), ``r`` the reference, ``f = 1`` with velocity feedforward (else 0),
``g = 1`` with torque feedforward (the rigid inverse dynamics), ``kp`` [1/s], ``kv`` [N m s/rad
or N s/m], ``ki`` [1/s] (the integral acts on the PD torque: ``kv ki`` on the velocity error's
integral), optionally clipped at ``torque_limit``.  In the transient this is the torque drive
of :mod:`sim.solvers.integrators` with ``kp -> kv kp``, ``kd -> kv``.

Linearised at a configuration (:func:`plant`), on the motions the joints admit (basis ``N``,
:func:`sim.solvers.damping.reduce` with the actuators free), with the rotors' reflected inertia
``n^2 J_m`` on the rigid actuators' coordinates and, for a compliant actuator, the motor's
coordinate ``theta`` joined to the joint coordinate ``s`` by the transmission's spring ``k``
and damper ``c`` (a two-inertia drive):

    M x'' + C x' + K x = P^T tau + B u,

and, closed by the servo with the integral's state ``y = int kv kp (r - theta) dt`` (``z`` up to
the reference terms, so the same eigenvalues), the first-order system of :func:`closed_loop`:

    M x'' + (C + P^T Kv P) x' + (K + P^T (Kp + Ki Kv) P) x - P^T Ki y = P^T (Kp + Ki Kv F) r + P^T Kv F r' + B u
    y' = Kp (r - P x),

``Kp = diag(kv kp)``, ``Kv = diag(kv)``, ``Ki = diag(ki)``, ``F = diag(f)``; ``y`` is kept for the
actuators with ``ki > 0``.  The reference's rate enters through the state ``w = x' - M^-1 P^T Kv F r``
(a proper state-space form).  The state-space and modal results ignore the torque limit
(linear).  The damping is the servo transient's (:func:`plant`): lumped dampers, Rayleigh on
the bodies, and the modal ratios with the structural loss factor's viscous equivalent at
resonance, ``zeta + eta / 2``, on the lowest ``[damping] modes`` modes of the structure with
its actuators locked (a complex stiffness has no time-domain state space).

A rigid link of inertia ``J_l`` on a servo axis: ``J = J_l + n^2 J_m``, closed-loop
``omega_n = sqrt(kv kp / J)``, ``zeta = kv / (2 sqrt(J kv kp))``; following a ramp of rate
``v`` it lags ``v / kp`` without feedforward, nothing with velocity feedforward.
"""
from dataclasses import dataclass, replace

import numpy as np

from sim.errors import SimError
from sim.model.assembly import RANK_RTOL
from sim.solvers import damping as dmp

FEEDFORWARD = ("none", "velocity", "velocity+torque")
RESPONSE_RTOL = 1e-8      # response(): the modal form against a direct solve
KEYS = ("kp", "kv", "ki", "feedforward", "torque_limit")


@dataclass(frozen=True)
class Servo:
    """Gains of the actuators' servos, each (n_a,).

    Attributes
    ----------
    kp : ndarray
        Position-loop gain [1/s].
    kv : ndarray
        Velocity-loop gain, joint side [N m s/rad or N s/m].
    ki : ndarray
        Velocity-loop integral gain [1/s].
    feedforward : tuple of str
        One of :data:`FEEDFORWARD` per actuator.
    torque_limit : ndarray
        Largest joint-side force [N m or N] (inf: none).
    """

    kp: np.ndarray
    kv: np.ndarray
    ki: np.ndarray
    feedforward: tuple
    torque_limit: np.ndarray

    @classmethod
    def from_table(cls, table, model, where="[servo]"):
        """From a ``[servo]`` table (``kp``, ``kv`` required; ``ki``, ``feedforward``,
        ``torque_limit``, each a number or one per actuator); raises :class:`SimError` with one
        line naming the key at the first mistake."""
        n_a = len(model.actuators)
        if not n_a:
            raise SimError(f"{where}: `{model.name}` has no actuators to servo")
        unknown = sorted(set(table) - set(KEYS))
        if unknown:
            raise SimError(f"{where}: unknown key `{unknown[0]}` ({', '.join(KEYS)})")

        def per(key, default, low, strict):
            value = table.get(key, default)
            if value is None:
                raise SimError(f"{where}: `{key}` is required (a number or {n_a} numbers)")
            x = np.atleast_1d(np.asarray(value, dtype=object))
            if x.ndim != 1 or x.size not in (1, n_a) or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) for v in x):
                raise SimError(f"{where}: `{key}` must be a number or a list of {n_a} numbers (one per "
                               f"actuator: {', '.join(model.actuator_names)}), got {value!r}")
            x = np.broadcast_to(x.astype(float), (n_a,)).copy()
            if not np.all(np.isfinite(x)) or np.any(x <= low if strict else x < low):
                raise SimError(f"{where}: `{key}` must be {'> 0' if strict else '>= 0'} and finite, got {value!r}")
            return x

        kp, kv = per("kp", None, 0.0, True), per("kv", None, 0.0, True)
        ki = per("ki", 0.0, 0.0, False)
        limit = np.full(n_a, np.inf) if table.get("torque_limit") is None else per("torque_limit", None, 0.0, True)
        ff = table.get("feedforward", "velocity")
        ff = [ff] * n_a if isinstance(ff, str) else ff
        if not isinstance(ff, list) or len(ff) != n_a or any(f not in FEEDFORWARD for f in ff):
            raise SimError(f"{where}: `feedforward` must be one of {', '.join(repr(f) for f in FEEDFORWARD)} "
                           f"or a list of {n_a} of them, got {table.get('feedforward')!r}")
        return cls(kp, kv, ki, tuple(ff), limit)

    @property
    def velocity(self):
        """``f`` (n_a,): 1 where the reference's rate is fed forward."""
        return np.array([f != "none" for f in self.feedforward], dtype=float)

    @property
    def torque(self):
        """``g`` (n_a,): 1 where the rigid inverse dynamics' force is fed forward."""
        return np.array([f == "velocity+torque" for f in self.feedforward], dtype=float)

    def drive(self, reference, torque=None, start=None):
        """The transient's torque drive of these servos (:class:`sim.solvers.simulate.Drive`).

        Parameters
        ----------
        reference : callable
            ``reference(t) -> (s, s_dot, s_ddot)`` (n_a,) or, for times (k,), (k, n_a) each.
        torque : callable, optional
            ``torque(t) -> tau`` the rigid inverse dynamics' forces (needed with torque
            feedforward).
        start : Start, optional
            The servos holding a static load at the start (:meth:`holding`); default: the
            integrals empty, the transmissions unloaded.
        """
        from sim.solvers.simulate import Drive

        f, g = self.velocity, self.torque
        if g.any() and torque is None:
            raise SimError("servo feedforward \"velocity+torque\" needs the rigid inverse dynamics (a [trajectory])")
        ff = (lambda t: torque(t) * g) if g.any() else None     # noqa: E731
        start = start or Start(np.zeros_like(self.kp), np.zeros_like(self.kp), np.zeros_like(self.kp))
        return Drive("torque", reference=reference, feedforward=ff, kp=self.kv * self.kp, kd=self.kv, ki=self.ki,
                     limit=self.torque_limit, velocity=lambda t: np.asarray(reference(t)[1]) * f, transmission=True,
                     integral=start.integral, motor_offset=start.motor_offset)

    def holding(self, model, rest, feedforward):
        """:class:`Start`: how the servos hold the joint-side forces ``rest`` (n_a,) at rest
        when their feedforward gives ``feedforward`` (n_a,): the rest by the integral
        (``ki z = rest - feedforward``, the motor at its reference) or, without one, by the
        position loop's error (the motor ``(rest - feedforward) / (kv kp)`` behind its
        reference); behind a compliant transmission the spring carries ``rest``, so the joint
        sits ``rest / k`` behind its motor."""
        need = np.asarray(rest, dtype=float) - np.asarray(feedforward, dtype=float)
        held = self.ki > 0
        integral = np.divide(need, self.ki, out=np.zeros_like(need), where=held)
        lag = np.where(held, 0.0, need / (self.kv * self.kp))
        k = np.array([a.stiffness if a.stiffness is not None else np.inf for a in model.actuators])
        offset = np.where(np.isfinite(k), np.asarray(rest, dtype=float) / k, 0.0)
        return Start(integral, lag, offset)


@dataclass(frozen=True)
class Start:
    """The servos' state at rest under a static load (:meth:`Servo.holding`), each (n_a,).

    Attributes
    ----------
    integral : ndarray
        The integrals ``z`` [N m s or N s].
    lag : ndarray
        The motors' angles behind their references, ``r - theta`` (joint units).
    motor_offset : ndarray
        The motors' angles less their joints' (the transmission's spring loaded).
    """

    integral: np.ndarray
    lag: np.ndarray
    motor_offset: np.ndarray


def check_transient(model, where):
    """Refuse a servo on a compliant transmission without a rotor: the motor's own coordinate
    needs its inertia."""
    bad = [a.name for a in model.actuators if a.stiffness is not None and not a.reflected_inertia > 0]
    if bad:
        raise SimError(f"{where}: drive = \"servo\" on the compliant actuator `{bad[0]}` (a transmission between "
                       f"the motor and the joint) needs the motor's rotor_inertia > 0")


def lag_gain(model, E):
    """``G`` (d, n_a): the rigid robot's end-effector change per change of its actuators' joint
    coordinates, from an evaluation ``E`` at the configuration (its joint rows ``J``, the
    actuators' ``J_s`` and, asked with ``pose=True``, ``J_x``): the servo's share of a deviation
    is ``G (s - s_ref)``, the rest is the structure's.

    ``G = J_x A_r^+ [0; 1]``, ``A = [J; J_s]`` on the rigid coordinates and ``A_r^+`` its
    pseudo-inverse at the robot's generic rank ``r`` (``model.ranks[1]``): the least motion
    that keeps the joints and moves the actuators.  Not the rank of ``A`` at the configuration:
    on a deformed robot a loop's redundant rows (a planar loop's out-of-plane ones) are no
    longer exactly so, and the numerical rank would count them and lock the motion they allow.
    """
    rigid = model.v_rigid
    nj = E.J.shape[0]
    A = np.vstack([E.J[:, rigid], E.J_s[:, rigid]])
    U, sv, Vt = np.linalg.svd(A, full_matrices=False)
    r = int(model.ranks[1]) if len(model.ranks) else int(np.sum(sv > RANK_RTOL * sv[0]))   # as the ranks
    return (E.J_x[:, rigid] @ Vt[:r].T) @ ((U[nj:, :r] / sv[:r]).T)


@dataclass(frozen=True)
class Plant:
    """The robot linearised at a configuration with its drives' hardware: ``M x'' + C x' + K x
    = P^T tau + ...`` on ``m = n + n_c`` coordinates (the ``n`` admissible motions, then the
    ``n_c`` compliant actuators' motor coordinates).

    Attributes
    ----------
    M, C, K : ndarray, shape (m, m)
    P : ndarray, shape (n_a, m)
        Motor angles in joint units ``theta = P x`` [rad or m].
    S : ndarray, shape (n_a, m)
        Joint coordinates ``s = S x``.
    N : ndarray, shape (n_v, n)
        Basis of the admissible motions (velocities ``v = N x[:n]``).
    gear : ndarray, shape (n_a,)
    """

    M: np.ndarray
    C: np.ndarray
    K: np.ndarray
    P: np.ndarray
    S: np.ndarray
    N: np.ndarray
    gear: np.ndarray

    def rows(self, V):
        """Rows ``V`` (k, n_v) of velocity-space quantities as rows (k, m) on ``x``."""
        out = np.zeros((V.shape[0], self.M.shape[0]))
        out[:, :self.N.shape[1]] = V @ self.N
        return out


def plant(model, q, damping=None, modal=None):
    """:class:`Plant` at ``q`` (n_q,).

    ``damping`` (:class:`sim.solvers.damping.Damping`, default none beyond the lumped dampers)
    adds its viscous parts as the servo transient applies them: Rayleigh on the bodies' elastic
    coordinates, and the modal ratios ``zeta_r + eta / 2`` on the lowest ``damping.modes`` modes
    of the structure with its actuators locked (:func:`sim.solvers.damping.schedule`), not on
    the modes of this plant, whose free actuators and rotors the ratios do not describe.
    ``modal``: that structure's ``(F, rates)`` at ``q`` (:meth:`sim.solvers.damping.Schedule.modal`)
    where the caller has them; else computed here."""
    from sim.model.constraints import actuator_values

    damping = dmp.Damping() if damping is None else damping
    red = dmp.reduce(model, q, locked=False)
    J_s = actuator_values(model, q)[1]
    S = J_s @ red.N
    acts = model.actuators
    rigid = np.array([a.stiffness is None for a in acts])
    I_r = np.array([a.reflected_inertia for a in acts])
    k = np.array([a.stiffness or 0.0 for a in acts])
    c = np.array([a.damping if a.stiffness is not None else 0.0 for a in acts])
    M = red.M + (S[rigid].T * I_r[rigid]) @ S[rigid]
    red = replace(red, M=0.5 * (M + M.T))
    C = dmp.viscous_matrix(red, replace(damping, eta=0.0, zeta=0.0))
    if damping.modal and len(model.v_elastic):
        F, rates = dmp.schedule(model, damping, np.zeros(1), q[None]).modal(0.0) if modal is None else modal
        G = red.N[np.asarray(model.v_elastic)].T @ F         # the locked structure's factors on the plant's motions
        C += (G * rates) @ G.T
    n = red.M.shape[0]
    comp = np.flatnonzero(~rigid)
    for i in comp:
        if not I_r[i] > 0:
            raise SimError(f"actuator `{acts[i].name}`: a compliant transmission under a servo needs the motor's "
                           f"rotor_inertia > 0 (the motor's own coordinate)")
    m = n + comp.size
    Ma, Ca, Ka = (np.zeros((m, m)) for _ in range(3))
    Ma[:n, :n], Ca[:n, :n], Ka[:n, :n] = red.M, C, red.K      # K, C hold k s^2 / 2, c s_dot^2 / 2 already
    S_a = np.zeros((len(acts), m))
    S_a[:, :n] = S
    P = S_a.copy()
    for j, i in enumerate(comp):
        col = n + j
        P[i] = 0.0
        P[i, col] = 1.0
        Ma[col, col] = I_r[i]
        for X, value in ((Ka, k[i]), (Ca, c[i])):       # the spring between theta and s
            X[:n, col] -= value * S[i]
            X[col, :n] -= value * S[i]
            X[col, col] += value
    return Plant(Ma, Ca, Ka, P, S_a, red.N, np.array([a.gear_ratio for a in acts]))


@dataclass(frozen=True)
class Closed:
    """First-order form ``X' = A X + B_r r + B_u u`` of a plant, open or closed by servos.

    Attributes
    ----------
    A : ndarray, shape (N, N)
        States ``(x, w, y)``: coordinates (m), velocities shifted by the reference's rate (m),
        integrals (those with ``ki > 0``).
    B_r : ndarray, shape (N, n_a) or None
        Servo references (joint units).
    G : ndarray, shape (m, n_a) or None
        ``x' = w + G r``.
    m : int
    """

    A: np.ndarray
    B_r: np.ndarray
    G: np.ndarray
    m: int

    def force_inputs(self, plant, F):
        """``B_u`` (N, k) of generalised forces ``F`` (m, k) on ``x``."""
        m = self.m
        B = np.zeros((self.A.shape[0], F.shape[1]))
        B[m:2 * m] = np.linalg.solve(plant.M, F)
        return B


def servo_rates(servo):
    """The servos' springs and dampers on the motor angles (joint units), (n_a,) each: the
    second-order part of the law, ``Kp + Ki Kv`` and ``Kv``."""
    return servo.kv * servo.kp + servo.ki * servo.kv, servo.kv


def held(plant, servo):
    """The plant held by its servos, second-order part: ``K + P^T (Kp + Ki Kv) P`` and
    ``C + P^T Kv P`` (m, m) (:func:`servo_rates`), and the actuators with an integral state
    (``ki > 0``), (ny,)."""
    P = plant.P
    spring, damper = servo_rates(servo)
    Kc = plant.K + P.T @ (spring[:, None] * P)
    Cc = plant.C + P.T @ (damper[:, None] * P)
    return Kc, Cc, np.flatnonzero(servo.ki > 0)


def closed_loop(plant, servo=None):
    """:class:`Closed` of ``plant``: the drives free (``servo`` None: the motors are torque
    inputs) or closed by ``servo`` (:class:`Servo`)."""
    M, C, K, P = plant.M, plant.C, plant.K, plant.P
    m = M.shape[0]
    if servo is None:
        A = np.block([[np.zeros((m, m)), np.eye(m)], [-np.linalg.solve(M, K), -np.linalg.solve(M, C)]])
        return Closed(A, None, None, m)
    Kp, Kv, Ki, F = servo.kv * servo.kp, servo.kv, servo.ki, servo.velocity
    Kc, Cc, y = held(plant, servo)
    ny = y.size
    Minv = np.linalg.inv(M)
    A = np.zeros((2 * m + ny, 2 * m + ny))
    A[:m, m:2 * m] = np.eye(m)
    A[m:2 * m, :m] = -Minv @ Kc
    A[m:2 * m, m:2 * m] = -Minv @ Cc
    A[m:2 * m, 2 * m:] = Minv @ (P[y].T * Ki[y])
    A[2 * m:, :m] = -Kp[y, None] * P[y]
    G = Minv @ (P.T * (Kv * F))
    B = np.zeros((2 * m + ny, P.shape[0]))
    B[:m] = G
    B[m:2 * m] = Minv @ (P.T * (Kp + Ki * Kv * F)) - Minv @ Cc @ G
    B[2 * m + np.arange(ny), y] = Kp[y]
    return Closed(A, B, G, m)


def free_motions(model, q):
    """The robot's free motions at ``q`` (:func:`sim.solvers.frames.free_motions`): with the
    actuators held they stay free, servo or not.  ``model``: the robot, or its evaluator where
    the caller holds one (:func:`sim.model.evaluator.held`)."""
    from sim.model.evaluator import held
    from sim.solvers.frames import free_motions as count
    model, ev = held(model)
    return count(model, q, ev)


@dataclass(frozen=True)
class Modes:
    """Complex modes of a closed loop.

    Attributes
    ----------
    eigenvalues : ndarray, shape (k,)
        ``lambda`` with ``Im > 0``, by increasing ``|lambda|`` [rad/s].
    frequencies_hz : ndarray, shape (k,)
        ``|lambda| / 2 pi``.
    damping_ratios : ndarray, shape (k,)
        ``-Re lambda / |lambda|``.
    real_roots : ndarray, shape (j,)
        Real eigenvalues [1/s] (overdamped motions, integral loops; zeros: free motions).
    shapes : ndarray, complex, shape (m, k)
        Coordinate parts of the eigenvectors, unit norm, largest entry real and positive
        (:func:`sim.solvers.modal.phased`).
    """

    eigenvalues: np.ndarray
    frequencies_hz: np.ndarray
    damping_ratios: np.ndarray
    real_roots: np.ndarray
    shapes: np.ndarray


def modes(closed, free=0):
    """:class:`Modes` of ``closed`` (:class:`Closed`).

    ``free``: the robot's free motions (a strut spinning between spherical joints,
    :func:`sim.solvers.frames.free_motions`), which neither the structure nor a servo holds:
    each is a double zero eigenvalue, which round-off splits into a pair of about
    ``sqrt(eps |A|)`` (0.0002 Hz on the 6-PSS): the ``2 free`` eigenvalues of least modulus
    are left out, not reported as modes or real roots."""
    import scipy.linalg
    lam, V = scipy.linalg.eig(closed.A)
    if free:
        keep = np.sort(np.argsort(np.abs(lam))[2 * int(free):])
        lam, V = lam[keep], V[:, keep]
    scale = max(np.abs(lam).max(initial=0.0), 1.0)
    pair = lam.imag > 1e-9 * scale
    real = np.abs(lam.imag) <= 1e-9 * scale
    order = np.flatnonzero(pair)[np.argsort(np.abs(lam[pair]))]
    shapes = V[:closed.m, order]
    if closed.m:
        from sim.solvers.modal import phased
        shapes = phased(shapes)
    mag = np.abs(lam[order])
    return Modes(lam[order], mag / (2 * np.pi), -lam[order].real / np.maximum(mag, 1e-300),
                 np.sort(lam[real].real), shapes)


def _index(model, name, spec):
    if name not in model.actuator_names:
        raise SimError(f"`{spec}`: unknown actuator `{name}` (actuators: {', '.join(model.actuator_names) or 'none'})")
    return list(model.actuator_names).index(name)


def signals(model, q, plant, specs, what):
    """Rows of named inputs ((m, k) generalised forces on ``x``, plus the references' indices) or
    outputs ((k, m) on ``x``), and their units.

    Inputs: ``motor:<actuator>`` (the motor's torque, motor side [N m]; ``n`` times on the
    joint), ``reference:<actuator>`` (the servo's reference, joint units), and those of
    :mod:`sim.solvers.harmonic` (``force:``, ``torque:``, ``actuator:`` a force on the joint
    coordinate).  Outputs: ``motor:<actuator>`` (the motor's angle, motor side [rad]) and those
    of :mod:`sim.solvers.harmonic` (``displacement:``, ``rotation:``, ``pose:``, ``actuator:`` the joint
    coordinate), and ``sensor:<name>`` (a model sensor, linearised by central differences).
    """
    from sim.solvers.harmonic import _rows

    rows, units, refs = [], [], []
    for spec in specs:
        kind, _, name = spec.partition(":")
        if kind == "motor":
            a = _index(model, name, spec)
            if what == "input":
                rows.append(plant.gear[a] * plant.P[a])
                units.append("N m")
            else:
                rows.append(plant.gear[a] * plant.P[a])
                units.append("rad")
            refs.append(-1)
        elif kind == "sensor" and what == "output":
            row = np.zeros(plant.M.shape[0])
            row[:plant.N.shape[1]] = _sensor_row(model, q, plant.N, name, spec)
            rows.append(row)
            units.append(model.sensors[[x.name for x in model.sensors].index(name)].units)
            refs.append(-1)
        elif kind == "reference" and what == "input":
            a = _index(model, name, spec)
            rows.append(np.zeros(plant.M.shape[0]))
            units.append("rad" if model.actuators[a].kind == "angle" else "m")
            refs.append(a)
        else:
            V, unit = _rows(model, q, [spec], what, locked=False)
            rows.append(plant.rows(V)[0])
            units.append(unit[0])
            refs.append(-1)
    return np.array(rows).reshape(len(specs), plant.M.shape[0]), tuple(units), np.array(refs, dtype=int)


def check_signals(model, specs, what):
    """Refuse (:class:`SimError`) a named input or output of :func:`signals` that ``model`` does
    not have, before anything is computed: the actuators and sensors named, the others
    resolved as :mod:`sim.solvers.harmonic` does at home."""
    from sim.solvers.harmonic import _rows

    sensors = [x.name for x in model.sensors]
    for spec in specs:
        kind, _, name = spec.partition(":")
        if kind == "motor" or (kind == "reference" and what == "input"):
            _index(model, name, spec)
        elif kind == "sensor" and what == "output":
            if name not in sensors:
                raise SimError(f"`{spec}`: unknown sensor `{name}` (sensors: {', '.join(sensors) or 'none'})")
        else:
            _rows(model, model.q_home, [spec], what, locked=False)


SENSOR_STEP = 1e-7     # m or rad along each admissible motion: central differences of the sensors


def _sensor_row(model, q, N, name, spec):
    """d sensor / d x (n,) on the admissible motions ``N`` (n_v, n) at ``q``."""
    from sim.model.kinematics import integrate, sensor_values

    names = [x.name for x in model.sensors]
    if name not in names:
        raise SimError(f"`{spec}`: unknown sensor `{name}` (sensors: {', '.join(names) or 'none'})")
    k = names.index(name)
    return np.array([(sensor_values(model, integrate(model, q, SENSOR_STEP * c))[k]
                      - sensor_values(model, integrate(model, q, -SENSOR_STEP * c))[k]) / (2 * SENSOR_STEP)
                     for c in N.T])


def matrices(model, q, inputs, outputs, servo=None, damping=None):
    """``(A, B, C, D)`` of the linearised robot at ``q`` from named ``inputs`` to ``outputs``
    (:func:`signals`), drives free (``servo`` None) or closed; and the units of the inputs and
    outputs and the :class:`Closed` form."""
    p = plant(model, q, damping)
    cl = closed_loop(p, servo)
    Fin, in_units, refs = signals(model, q, p, inputs, "input")
    if servo is None and (refs >= 0).any():
        raise SimError(f"state space input `{inputs[int(np.argmax(refs >= 0))]}`: a servo reference needs "
                       f"drives = \"servo\"")
    Y, out_units, _ = signals(model, q, p, outputs, "output")
    B = cl.force_inputs(p, Fin.T)
    for j in np.flatnonzero(refs >= 0):
        B[:, j] = cl.B_r[:, refs[j]]
    m = cl.m
    C = np.zeros((len(outputs), cl.A.shape[0]))
    C[:, :m] = Y
    D = np.zeros((len(outputs), len(inputs)))
    return cl.A, B, C, D, in_units, out_units, cl


def truncate(A, B, C, D, count):
    """Modal truncation to the ``count`` lowest modes (by ``|lambda|``; a complex pair counts
    once, its two real states kept together; real roots count as one each), the static gain of
    the rest kept in ``D`` (when they have no zero root).  Returns ``(A, B, C, D)``."""
    import scipy.linalg
    lam, V = scipy.linalg.eig(A)
    scale = max(np.abs(lam).max(initial=0.0), 1.0)
    order = np.argsort(np.abs(lam) + 1e-12 * np.abs(lam.imag))
    cols, used = [], np.zeros(lam.size, dtype=bool)
    for i in order:
        if used[i] or lam[i].imag < -1e-9 * scale:
            continue
        if abs(lam[i].imag) > 1e-9 * scale:
            cols.append((True, i))
            j = np.flatnonzero(~used & (np.abs(lam - lam[i].conj()) < 1e-9 * scale) & (lam.imag < 0))
            used[i] = True
            if j.size:
                used[j[0]] = True
        else:
            cols.append((False, i))
            used[i] = True
    T, kept = [], 0
    for k, (pair, i) in enumerate(cols):
        T += [V[:, i].real, V[:, i].imag] if pair else [V[:, i].real]
        if k < count:
            kept = len(T)
    T = np.array(T).T
    Ti = np.linalg.inv(T)
    Am, Bm, Cm = Ti @ A @ T, Ti @ B, C @ T
    Am[np.abs(Am) < 1e-12 * scale] = 0.0
    r = kept
    D = D.copy()
    rest = Am[r:, r:]
    if rest.size and np.linalg.matrix_rank(rest) == rest.shape[0]:
        D -= Cm[:, r:] @ np.linalg.solve(rest, Bm[r:])
    return Am[:r, :r], Bm[:r], Cm[:, :r], D


def response(A, B, C, D, s, rtol=RESPONSE_RTOL):
    """``H(s) = C (s I - A)^-1 B + D`` (n_f, n_out, n_in) at the points ``s`` (n_f,), complex.

    By the eigen-decomposition ``A = V diag(lambda) V^-1`` (one ``O(n^3)`` step; then ``C V
    diag(1 / (s - lambda)) V^-1 B``, linear in ``n`` per point), checked against a solve of
    ``(s I - A)`` at the first and the last point within ``rtol`` of the largest response
    there; where the eigenvectors are too ill-conditioned for that (a defective ``A``), one
    solve per point (``O(n^3)`` each: 45 s for 400 points of the 3-RRRU's 1167 states)."""
    import scipy.linalg
    s = np.asarray(s)
    n = A.shape[0]

    def direct(x):
        return C @ np.linalg.solve(x * np.eye(n) - A, B) + D

    try:
        lam, V = scipy.linalg.eig(A)
        L, R = C @ V, np.linalg.solve(V, B)
        H = np.einsum("ok,fk,kj->foj", L, 1.0 / (s[:, None] - lam[None, :]), R) + D
    except np.linalg.LinAlgError:
        H = None
    if H is not None and len(s):
        for k in {0, len(s) - 1}:
            ref = direct(s[k])
            if not np.abs(H[k] - ref).max() <= rtol * max(np.abs(ref).max(), 1e-300) or not np.isfinite(H).all():
                H = None
                break
    return np.array([direct(x) for x in s]) if H is None else H


def state_space(model, pose=None, inputs=(), outputs=(), drives="open", servo=None, damping=None, modes=None):
    """The robot linearised at a pose as a python-control ``StateSpace``.

    Parameters
    ----------
    model : Model
    pose : sequence of float, optional
        End-effector pose (default: home).
    inputs, outputs : sequence of str
        See :func:`signals` (e.g. ``["motor:m1"]``, ``["pose:x", "motor:m1"]``).
    drives : {"open", "servo"}
        Motors as torque inputs, or closed by ``servo``.
    servo : Servo or dict, optional
        The gains (a ``[servo]`` table as a dict will do); required with ``drives = "servo"``.
    damping : sim.solvers.damping.Damping, optional
    modes : int, optional
        Reduce to the lowest ``modes`` modes (modal truncation, static gain kept).

    Returns
    -------
    control.StateSpace
        States, inputs and outputs named; SI units (``sys.input_labels`` ...).
    """
    import control
    from sim.model.assembly import configuration

    if drives not in ("open", "servo"):
        raise SimError(f"state space drives must be \"open\" or \"servo\", got {drives!r}")
    if isinstance(servo, dict):
        servo = Servo.from_table(servo, model)
    if drives == "servo" and servo is None:
        raise SimError("state space drives = \"servo\" needs the servo's gains (servo=...)")
    _, q = configuration(model, pose, "state space pose")
    A, B, C, D, _, _, _ = matrices(model, q, list(inputs), list(outputs), servo if drives == "servo" else None,
                                   damping)
    if modes is not None:
        A, B, C, D = truncate(A, B, C, D, int(modes))
    return control.ss(A, B, C, D, inputs=list(inputs), outputs=list(outputs))


def frequency_response(model, q, inputs, outputs, frequencies_hz, servo=None, damping=None, p=None):
    """``H`` (n_f, n_out, n_in) by one solve of the dynamic stiffness per frequency, in the
    second-order form (an oracle of the state space, :func:`matrices`):

        (-w^2 M + i w C + K + (1 + ki / (i w)) P^T (Kp + i w Kv) P) X = P^T ((1 + ki / (i w))
        (Kp + i w Kv F)) R + F_u U.

    ``p``: the :class:`Plant` at ``q`` with ``damping``, where the caller has it.
    """
    p = plant(model, q, damping) if p is None else p
    Fin, _, refs = signals(model, q, p, inputs, "input")
    Y, _, _ = signals(model, q, p, outputs, "output")
    H = []
    for f in np.asarray(frequencies_hz, dtype=float):
        w = 2 * np.pi * f
        Z = -w * w * p.M + 1j * w * p.C + p.K
        R = Fin.T.astype(complex)
        if servo is not None:
            gi = 1.0 + servo.ki / (1j * w)
            Z = Z + p.P.T @ ((gi * servo.kv * (servo.kp + 1j * w))[:, None] * p.P)
            for j in np.flatnonzero(refs >= 0):
                a = refs[j]
                R[:, j] = p.P[a] * gi[a] * servo.kv[a] * (servo.kp[a] + 1j * w * servo.velocity[a])
        H.append(Y @ np.linalg.solve(Z, R))
    return np.array(H)
