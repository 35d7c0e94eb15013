r"""Implicit integrators of the constrained equations of motion at acceleration level.

The problem is the index-1 form of :mod:`sim.model.dynamics` with Baumgarte stabilisation (paper 001
eq. 60): at every instant the unknowns ``(a, lam)`` solve

    M(q) a + J(q)^T lam = Q(t, q, v),        J a = gamma - 2 alpha C_dot - beta^2 C,

and the Newmark family advances ``(q, v)`` from the accelerations.  The generalized-α method
(Chung–Hulbert; Arnold–Brüls for multibody systems) solves the equations exactly at
``t_{n+1}`` and integrates a pseudo-acceleration ``ahat``:

    (1 - alpha_m) ahat_{n+1} + alpha_m ahat_n = (1 - alpha_f) a_{n+1} + alpha_f a_n
    v_{n+1} = v_n + h ((1 - gamma) ahat_n + gamma ahat_{n+1})
    q_{n+1} = q_n ⊕ (h v_n + h^2 ((1/2 - beta) ahat_n + beta ahat_{n+1}))

``alpha_m = alpha_f = 0`` is Newmark-β (average acceleration for ``gamma = 1/2``,
``beta = 1/4``: second order, no numerical damping).  With ``rho_inf`` (spectral radius at
infinite frequency) generalized-α uses ``alpha_m = (2 rho - 1)/(rho + 1)``,
``alpha_f = rho/(rho + 1)``; the HHT-α variant uses ``alpha_m = 0``,
``alpha_f = (1 - rho)/(1 + rho)`` (``rho`` in [1/2, 1]); both take ``gamma = 1/2 + alpha_f -
alpha_m``, ``beta = (gamma + 1/2)^2 / 4``, stay second order and damp the high frequencies
(stiff axial beam modes) so that they do not force tiny steps.

Newton iterations per step run on ``(a_{n+1}, lam)`` from the predictor
``a_{n+1} = 2 a_n - a_{n-1}`` (``a_n`` on the first step) on the step residual

    r(a, lam) = [M a + J^T lam - Q ;  J a - gamma + 2 alpha C_dot + beta^2 C]

evaluated at ``q_{n+1}(a), v_{n+1}(a)``.  The iteration matrix is the Jacobian of ``r``,
split into a known part computed at every factorisation -- ``[[M, J^T], [J, 0]]`` plus the
velocity terms ``gamma' h [[-dQ/dv, 0], [2 alpha J - d gamma/dv, 0]]`` (gyroscopic, Coriolis,
damping and Baumgarte-rate terms, which follow the velocities) and the tangent stiffness of the
forces that vary fast with the configuration, ``beta' h^2 [[K_t, 0], [0, 0]]`` (geometric
stiffening, lumped springs) -- and ``Delta``: the rest (the bodies' stiffness, ``d(J^T
lam)/dq``, the position terms of the Baumgarte rows, through the Newmark map ``dq/da = beta'
h^2``), from a forward-difference Jacobian of ``r`` (one evaluation per unknown; on the block
path one per group of unknowns that share no row of the Jacobian's structure,
:func:`sim.solvers.blocks.pattern`, and ``Delta`` held on that structure).  ``Delta`` varies
slowly and is kept until Newton slows down (rate above ``SLOW_RATE``); the LU factorisation
is kept from step to step while Newton contracts strongly (rate below ``KEEP_RATE``) and the
step took at most ``ITERATION_LIMIT`` iterations, a limit raised while refactorising does not
lower the count (:func:`keep_factors`).  The aged matrix is typically off by about a per cent, which
would make simplified Newton contract only linearly at that rate: within each step the
corrections are therefore Broyden (good) quasi-Newton updates of the factorised matrix, which
absorb that drift (:func:`_broyden`).  A step the kept matrix cannot take is tried again
with the matrix fresh at the predictor, then with Newton's method proper (the matrix fresh at
every iterate: a floating frame whipped by a stiff local mode changes it within the step); a
step whose joint rows then exceed ``GAP_RATIO`` of the robot's size has diverged (Newton
proper converges on absurd steps too).  Convergence: the configuration
correction ``beta' h^2 |delta a|_inf`` [m or rad], or (from the third iteration) the error it
leaves estimated from the contraction rate ``rho`` as ``rho / (1 - rho)`` times it, falls below
``newton_tol``.

From :data:`sim.solvers.blocks.BLOCK_MIN` unknowns the iteration matrix is factorised by
blocks (:mod:`sim.solvers.blocks`): each flexible body's elastic coordinates that couple to
nothing outside the body are eliminated by a banded LU, the rest (reference coordinates,
marker nodes, joint rows) by a dense one, and the modal damping, which couples every body, is
added by Woodbury's identity; below, LAPACK's dense LU.  The same matrix either way: the
forward differences' round-off (entries below ``DROP_RTOL`` of their row) is zeroed in both.

The whole step -- predictor, drive law, residual, factorisation (LAPACK ``getrf``, see
:mod:`sim.kernels.lapack`), Newton and Broyden updates, acceptance, output samples -- runs in
one compiled loop over a chunk of steps (:func:`_run`); Python only tabulates the drive law
for the chunk and the damping schedule between chunks.

The drives (actuators ``s(q)``, ``J_s = ds/dq``) enter the residual as

* ``prescribed``: driving constraints ``s(q) - s_ref(t) = 0`` (rows after the joint rows);
  compliant actuators are springs pulled towards ``s_ref``;
* ``torque``: actuator forces ``tau = tau_ff(t) + tau_pd + ki z``, ``tau_pd = kp (s_ref - s) +
  kd (s_ref_dot - s_dot)`` (gains per actuator), ``z`` the time integral of ``tau_pd``
  (trapezoidal over the step, carried from step to step, not an unknown of Newton: its
  derivative enters the iteration matrix through ``kd (1 + ki h / 2)`` and the forward-difference
  correction), clipped to ``|tau| <= limit``; while clipped, ``z`` is held (anti-windup) and the
  force does not depend on the state, so Newton sees no drive stiffness or damping there (a step
  that crosses the limit may take more iterations).  :mod:`sim.solvers.closed_loop` maps a cascade
  position/velocity servo onto this law;
  With ``Drive.transmission`` (servo drives), a compliant actuator's force acts on its motor
  (reflected inertia ``n^2 J_m``), joined to the joint coordinate by the actuator's spring and
  damper; the motor's coordinate is condensed within the step (:func:`_transmission`);
* ``free``: actuators unconstrained and unloaded,

and on every kind the rigid actuators' reflected rotor inertia ``I = n^2 J_m`` as the force
``-I s_ddot = -I (J_s a - gamma_s)`` on the joint coordinate (the actuator forces of
prescribed drives then include the torque that accelerates the rotors);

and a linear damping ``D`` (constant or piecewise constant in time) as ``Q -= D v``.

References
----------
N. M. Newmark, "A method of computation for structural dynamics", J. Eng. Mech. Div. 85 (1959).
H. M. Hilber, T. J. R. Hughes, R. L. Taylor, Earthquake Eng. Struct. Dyn. 5 (1977) 283–292.
J. Chung, G. M. Hulbert, J. Appl. Mech. 60 (1993) 371–375.
M. Arnold, O. Brüls, "Convergence of the generalized-α scheme for constrained mechanical
systems", Multibody Syst. Dyn. 18 (2007) 185–202.
J. Baumgarte, Comput. Methods Appl. Mech. Eng. 1 (1972) 1–16.
E. Hairer, G. Wanner, *Solving Ordinary Differential Equations II*, 2nd ed., Springer, 1996,
§IV.8 (stopping criterion of simplified Newton iterations).
C. T. Kelley, *Iterative Methods for Linear and Nonlinear Equations*, SIAM, 1995, §7-8
(Broyden's method, storage of the steps).
"""

import time
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np
from numba import njit, types

from sim.kernels.common import (borrow, borrowed, compile_for, fp_control, pattern_vector, reference, restore_fp,
                                runtime, subnormals_off, wrap)
from sim.kernels.equations import PATTERN_MIN, function, potential_function, store_address, store_function
from sim.kernels.frames import integrate
from sim.kernels.lapack import getrf
from sim.kernels.pose import marker_terms, pose_terms
from sim.kernels.store import couple, empty_store, product as store_product, writer
from sim.linalg import lstsq
from sim.model.kinematics import pose_codes
from sim.model.sparse_rows import distinct
from sim.solvers.blocks import ACTIVE, BLOCK_MIN, BLOCKED, DROP_RTOL, MODE, SHARED, add_low_rank, blocks, \
    low_rank, lu_pattern, no_pattern, pattern, saddle_lstsq, solve, stores, to_dense, transpose
from sim.solvers.blocks import factor as block_factor

NEWTON_MAX_ITER = 12
# m or rad: configuration correction at convergence.  Four orders below the micrometre a robot
# designer reads, and below the step's own error; 1e-12 moves Simeon's mid-span deflection by
# 5e-7 of its peak and costs half an iteration more per step (3.5 instead of 3.1).
NEWTON_TOL = 1e-10
SLOW_RATE = 0.25            # contraction rate above which the Jacobian correction is refreshed
KEEP_RATE = 0.05            # contraction rate below which the last factorisation is kept
ITERATION_LIMIT = 4         # a step of more iterations refactorises, while that lowers the count
DIVERGED = 1e12             # |a| or |lam| beyond this (SI) is a divergence
PIVOT_RTOL = 1e-13          # smallest LU pivot, relative to the largest, of a regular matrix
FAILURES = {1: "diverged", 2: "Newton iterations do not contract", 3: "Newton did not converge",
            4: "singular iteration matrix (redundant or singular constraints)", 5: "the joints came apart"}
GAP_RATIO = 0.01            # a joint's violation above this share of the robot's size [m or rad]: diverged
DRIVE_KINDS = {"free": 0, "prescribed": 1, "torque": 2}
# rows of Scheme.servo: the integral z and PD force tau_pd at the last accepted instant, the
# same at the last evaluated iterate, and the actuator force there and at the accepted instant
SERVO_ROWS = Z, E, Z1, E1, TAU1, TAU, TH, THD, THDD, TH1, THD1, THDD1 = range(12)
# (TH, THD, THDD: a transmission's motor angle, rate and acceleration, accepted; TH1...: at the iterate)
ATTEMPTS = 3                # kept matrix, matrix fresh at the predictor, Newton proper
CALL_TIME = 0.1             # s a compiled call of the step loop is sized to take (progress and
#                           Ctrl-C between calls; each call types its records in Python: 0.4 ms)
FIRST_CHUNK = 16            # steps of the first call, before the step's cost is known
BAUMGARTE_RATE = 4.0        # default Baumgarte gains alpha = beta = BAUMGARTE_RATE / step.  Newmark's
#                           trapezoidal rule maps the constraint error's decay to (1 - r/2) / (1 + r/2) per
#                           step: -1/3 here.  The drift the integration leaves at velocity level (second
#                           order in the step, along a curved path) is balanced at C ~ 2 b step / r: 20 times
#                           less than at r = 0.2 (the five-bar: 0.13 nm, 0.4 % of its in-plane deviation);
#                           r = 2 (dead-beat) took 28 % more Newton iterations on the slider-crank, r = 4 12 %
STORE_MIN = 600            # velocity coordinates from which the block path holds M, dQ/dv and K_t on
#                           their stores (below, dense arrays cost less memory than 6 MB and their
#                           plain writes less time than the stores' positions)
RANK_MAX = 64               # modal damping on at most this many modes stays a low-rank term (blocks)

# counters of State.counts
# (CURRENT: the work arrays hold the equations of the current state, to the Newton tolerance:
# those of the accepted step's last iterate, so that an output sample needs no evaluation.)
# (RAISED: how far the iteration count that refactorises is raised above ITERATION_LIMIT;
# PENDING: the iterations of the step whose count alone asked for the factorisation the next
# step runs on, 0 when none.  FP_WORD: the floating-point control word the running call of
# _run found, which it puts back on return; -1 between calls.)
STEPS, ITERATIONS, EVALUATIONS, FACTORIZATIONS, JACOBIANS, LAST, MAX_SINCE, SAMPLES, HAVE_PREV, LU_OK, \
    DELTA_OK, CURRENT, RAISED, PENDING, FP_WORD = range(15)


def baumgarte_gains(h, alpha=None, beta=None):
    """Baumgarte gains ``(alpha, beta)`` [1/s] of ``C'' + 2 alpha C' + beta^2 C = 0`` for the step
    ``h`` [s]: each as given, else ``BAUMGARTE_RATE / h``."""
    rate = BAUMGARTE_RATE / h
    return (rate if alpha is None else float(alpha), rate if beta is None else float(beta))


@dataclass(frozen=True)
class Options:
    """How an integrator steps (:class:`GeneralizedAlpha` and its kin;
    :func:`sim.solvers.simulate.simulate`).

    Attributes
    ----------
    method : str
        A key of :data:`METHODS` (:func:`sim.solvers.simulate.simulate` picks the class by it).
    rho_inf : float
        Spectral radius at infinite frequency, in [0, 1] (1: no numerical damping; HHT: in
        [0.5, 1]; Newmark: 1 whatever is given).
    baumgarte : tuple of float or None
        ``(alpha, beta)`` [1/s] of ``C_ddot + 2 alpha C_dot + beta^2 C = 0`` (None:
        :func:`baumgarte_gains` of the step).
    newton_tol : float
        Configuration correction at convergence [m or rad].
    newton_max_iter : int
        Newton iterations per step (with a fresh iteration matrix, the step is retried once).
    solver : {"auto", "dense", "block"}
        How the iteration matrix is factorised: LAPACK's dense LU, or the bodies' elastic
        blocks eliminated first (:mod:`sim.solvers.blocks`); "auto" takes the blocks from
        :data:`sim.solvers.blocks.BLOCK_MIN` unknowns.  The same matrix either way.
    t0 : float
        Initial time [s] of :func:`sim.solvers.simulate.simulate`.
    """

    method: str = "newmark"
    rho_inf: float = 0.9
    baumgarte: tuple = None
    newton_tol: float = NEWTON_TOL
    newton_max_iter: int = NEWTON_MAX_ITER
    solver: str = "auto"
    t0: float = 0.0


def _validate_positive(name, value):
    """Return `value` as a float if it is finite and > 0; raise ValueError otherwise."""
    value = float(value)
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"`{name}` must be positive and finite, got {value!r}")
    return value


class Scheme(NamedTuple):
    """Constants of the step: ``h`` [s], generalized-α ``alpha_m, alpha_f, gamma, beta``,
    ``c = (1 - alpha_f)/(1 - alpha_m)``, Baumgarte ``2 alpha`` and ``beta^2`` [1/s, 1/s^2],
    Newton ``tol`` [m or rad], ``max_iter``, ``diverged``, the largest constraint violation
    ``gap`` [m or rad] of a step that has not diverged; the drive ``kind``
    (:data:`DRIVE_KINDS`) and, per actuator (n_a,), its gains ``kp, kd``, the integral gain
    ``ki`` [1/s], the force ``limit`` [N m or N] (inf: none), the reflected rotor ``inertia``
    [kg m^2 or kg], the ``transmission`` (3, n_a) -- stiffness, damping and the motor's
    reflected inertia of the actuators whose torque acts on a motor joined to the joint by a
    spring (zero stiffness: none) -- and the drive's state ``servo`` (:data:`SERVO_ROWS`, n_a),
    which the step updates in place; the end effector's coordinate codes ``pose_kinds`` (d,)
    and marker ``ee``, for the output samples' rates."""

    h: float
    alpha_m: float
    alpha_f: float
    gamma: float
    beta: float
    c: float
    alpha2: float
    beta2: float
    tol: float
    max_iter: int
    diverged: float
    gap: float
    kind: int
    kp: np.ndarray
    kd: np.ndarray
    ki: np.ndarray
    limit: np.ndarray
    inertia: np.ndarray
    transmission: np.ndarray
    servo: np.ndarray
    pose_kinds: np.ndarray
    ee: int


class Problem(NamedTuple):
    """What every compiled function of the step reads besides the state and the work arrays:
    the evaluation of the tables ``t`` at the addresses ``f``
    (:func:`sim.kernels.equations.addresses`; on the block path a third, the evaluation on
    stores: :func:`sim.kernels.equations.store_address`), writing the markers' kinematics into ``data``
    (the evaluator's :class:`sim.kernels.equations.Data`), the :class:`Scheme` ``sch``, the constraint
    ``rows`` (n_c,) among the evaluation's, the damping ``D`` (n_v, n_v; empty: none or
    low-rank) and ``cols`` (n_rows, w): the columns each row of ``J`` can fill
    (:func:`row_columns`), ascending, padded with -1.  The drive law at one instant travels
    beside it as ``law = (s, sd, sdd, ff)`` (n_a,) each."""

    t: object
    data: object
    f: np.ndarray
    sch: Scheme
    rows: np.ndarray
    D: np.ndarray
    cols: np.ndarray


def row_columns(t, n_rows):
    """The columns of ``v`` each constraint row's Jacobian can fill: those of its primitive's
    two markers (:func:`sim.kernels.rows.rows` writes nothing else), ascending, padded with -1.

    Parameters
    ----------
    t : sim.kernels.equations.Tables
    n_rows : int

    Returns
    -------
    ndarray of int64, shape (n_rows, w)
    """
    sets = [np.empty(0, dtype=np.int64)] * n_rows
    for k in range(len(t.row)):
        both = np.concatenate([t.cols[t.mi[k]], t.cols[t.mj[k]]])
        for r in range(t.row[k], t.row[k] + (3 if t.kinds[k] == 0 else 1)):   # a point: 3 rows
            sets[r] = distinct(both[both >= 0]).astype(np.int64)
    out = np.full((n_rows, max([c.size for c in sets], default=0)), -1, dtype=np.int64)
    for r, c in enumerate(sets):
        out[r, :c.size] = c
    return out


class State(NamedTuple):
    """What the compiled loop advances, in place: ``time = (t, last correction)``, ``q``
    (n_q,), ``v, a, a_hat, a_prev`` (n_v,), ``lam, lam_prev`` (n_c,), the factorised iteration
    matrix ``lu`` (n, n, Fortran order), ``piv`` (n,), the Jacobian correction ``delta`` (n, n)
    (``n = n_v + n_c``), ``counts`` (indexed by ``STEPS``, ``ITERATIONS``, ...), the block
    factorisation ``blocks`` (:class:`sim.solvers.blocks.Blocks`) and the correction's
    ``pattern`` (:class:`sim.solvers.blocks.Pattern`).  On the block path
    (``blocks.info[SHARED]``), where the structure leaves the bodies an interior, the known
    part and the correction are held on that pattern (:class:`Work`'s ``known`` and ``delta``
    (0, 0)), the correction taken by its column groups, and the matrix factorised by blocks
    from there (fewer evaluations, time and memory linear in the coordinates); ``lu`` is then
    a (2, 2) array of the dense factors' type, which the loop replaces with the (n, n) factors
    at the first factorisation the blocks do not serve (:func:`_factorize`).  Without that structure ``lu`` is the transposed
    view of ``known``: the matrix is assembled, and factorised, in place of its known part."""

    time: np.ndarray
    q: np.ndarray
    v: np.ndarray
    a: np.ndarray
    a_hat: np.ndarray
    a_prev: np.ndarray
    lam: np.ndarray
    lam_prev: np.ndarray
    lu: np.ndarray
    piv: np.ndarray
    delta: np.ndarray
    counts: np.ndarray
    blocks: tuple
    pattern: tuple


class Work(NamedTuple):
    """Scratch arrays of the compiled step (allocated once per integrator); ``low`` (n_v, r)
    and ``low_rate`` (r,): the modal part of the damping, ``Q -= low diag(low_rate) low^T v``,
    kept apart from ``D`` (it couples every elastic coordinate; :mod:`sim.solvers.blocks`);
    ``Kt`` (n_v, n_v) empty where the model has no tangent stiffness (``Evaluator.stiff``);
    ``y`` (m,): the step's iterate ``(a, lam)``.  On the block path (a :class:`State` ``pattern``)
    ``M``, ``G = dQ/dv`` and ``Kt`` are (0, 0) and held on that structure instead, as the
    :class:`sim.kernels.store.Store` ``Ms``, ``Gs``, ``Ks`` (:func:`sim.solvers.blocks.stores`;
    the evaluation writes them there, linear in the elements); elsewhere these are empty."""

    q1: np.ndarray
    v1: np.ndarray
    dq: np.ndarray
    offset: np.ndarray
    v_base: np.ndarray
    dq_base: np.ndarray
    M: np.ndarray
    Q: np.ndarray
    phi: np.ndarray
    J: np.ndarray
    gamma: np.ndarray
    G: np.ndarray
    Gg: np.ndarray
    Kt: np.ndarray
    r: np.ndarray
    r2: np.ndarray
    x: np.ndarray
    steps: np.ndarray
    known: np.ndarray
    low: np.ndarray
    low_rate: np.ndarray
    y: np.ndarray
    Ms: tuple
    Gs: tuple
    Ks: tuple


class Samples(NamedTuple):
    """Output samples, preallocated: ``t`` (k,), ``q`` (k, n_q), ``v`` (k, n_v), ``energy`` (k, 3)
    (kinetic, gravitational, elastic [J]), ``violation`` (k,) (norm of the constraint rows),
    ``iterations`` (k,) (most Newton iterations of a step since the previous sample), marker
    origins ``p`` (k, n_m, 3) and axes ``A`` (k, n_m, 3, 3), actuator forces of torque drives
    ``tau`` (k, n_a) [N m or N] and the angles of the motors behind transmissions ``motor``
    (k, n_a) [rad or m, joint units; zero for the others]; the accelerations ``a`` (k, n_v) and
    multipliers ``lam`` (k, n_c) that meet the equations at the sample, the end effector's
    coordinate rates ``ee`` (k, 2, d) (velocity, acceleration) and the markers' velocities
    ``pd`` and accelerations ``ap`` (k, n_m, 3)."""

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    energy: np.ndarray
    violation: np.ndarray
    iterations: np.ndarray
    p: np.ndarray
    A: np.ndarray
    tau: np.ndarray
    motor: np.ndarray
    a: np.ndarray
    lam: np.ndarray
    ee: np.ndarray
    pd: np.ndarray
    ap: np.ndarray


@njit(cache=True)
def _broyden(z, steps, k):
    """Newton correction with Broyden's (good) updates of the iteration matrix within a step.

    In place on ``z``, which enters as ``-H_0 r``, the correction with the factorised matrix
    ``H_0^-1``: the rank-one updates from this step's previous corrections ``s_0 .. s_{k-1}``
    (rows of ``steps``; stored as the steps themselves: ``H_{j+1} = (1 + s_{j+1} s_j^T /
    |s_j|^2) H_j``, C. T. Kelley, *Iterative Methods for Linear and Nonlinear Equations*,
    SIAM 1995, §7.3 and §8.4) turn it into the quasi-Newton correction, stored as ``s_k``.
    The iteration matrix kept over many steps drifts by about one per cent (its correction
    ``Delta`` ages); the updates absorb that within the step, where plain simplified Newton
    would contract only linearly at that rate.  Returns the number of stored steps.
    """
    steps[k] = z            # H_0's correction, kept for a restart (the row then receives the result)
    for j in range(k - 1):
        s_j, s_next = steps[j], steps[j + 1]
        f = np.dot(s_j, z) / np.dot(s_j, s_j)
        for i in range(z.size):
            z[i] += s_next[i] * f
    if k:
        s = steps[k - 1]
        denom = 1.0 - np.dot(s, z) / np.dot(s, s)
        if abs(denom) < 0.1:            # nearly singular update: restart from H_0
            z[:] = steps[k]
            k = 0
        else:
            for i in range(z.size):
                z[i] /= denom
    steps[k] = z
    return k + 1


@njit(cache=True)
def newton_update(r, factors, steps, k, unknowns, iteration, previous, limits):
    """One quasi-Newton correction of the step unknowns ``(a, lam)`` (updated in place; the
    residual ``r`` (m,) is overwritten: it becomes the correction).

    The core shared by the Python and the compiled Newton loops: ``-A^-1 r`` from the
    factorised iteration matrix (dense ``lu, piv``, or ``blk``'s blocks:
    :func:`sim.solvers.blocks.solve`), Broyden's update (:func:`_broyden`), the divergence guard
    and the stopping test on the configuration correction ``err = scale |delta a|_inf``
    (``scale = beta' h^2``): done when ``err``, or from the third iteration on the error it
    leaves as estimated from the contraction rate ``rho`` (``rho / (1 - rho) err``, Hairer &
    Wanner §IV.8), is below ``tol``.  The second correction's ratio to the first says little:
    the first carries the predictor's error, and the iteration matrix, exact there, ages
    within the step where the forces are stiffly nonlinear.

    Returns
    -------
    code : int
        -1 go on, 0 converged, else a key of :data:`FAILURES` (1 diverged, 2 the rate is
        above 0.9 after two iterations).
    k : int
        Stored Broyden steps.
    err, rate : float
        The correction and its ratio to the previous one (``previous``: inf at the first).
    """
    lu, piv, blk = factors
    a, lam = unknowns
    scale, tol, diverged = limits
    n = a.size
    z = r                   # in place: the residual is not read again
    for i in range(z.size):
        z[i] = -z[i]
    solve(lu, piv, blk, z)
    k = _broyden(z, steps, k)
    big = 0.0
    ok = True
    for i in range(n):
        a[i] += z[i]
        big = max(big, abs(z[i]))
        ok = ok and abs(a[i]) < diverged
    for i in range(lam.size):
        lam[i] += z[n + i]
        ok = ok and abs(lam[i]) < diverged
    err = scale * big
    if not (ok and np.isfinite(err)):
        return 1, k, err, np.inf
    rate = err / previous
    if err <= tol or (iteration > 2 and rate < 1 and rate / (1 - rate) * err <= tol):
        return 0, k, err, rate
    if iteration > 2 and rate > 0.9:
        return 2, k, err, rate
    return -1, k, err, rate


# --- the compiled step ------------------------------------------------------------------------


@njit(cache=True, inline="always")
def _dot(A, i, y):
    """``A[i] . y`` as a plain loop: for the short rows here, a BLAS call costs more than the
    arithmetic.  On ``A``'s entries, not on a view of the row, which takes and releases a
    reference count."""
    acc = 0.0
    for j in range(y.size):
        acc += A[i, j] * y[j]
    return acc


@njit(cache=True, inline="always")
def _dot_row(J, row, cols, y):
    """``J[row] . y`` over the row's columns ``cols[row]`` (:func:`row_columns`)."""
    acc = 0.0
    for c in range(cols.shape[1]):
        j = cols[row, c]
        if j < 0:
            break
        acc += J[row, j] * y[j]
    return acc


@njit(cache=True, inline="always")
def _clear_rows(J, cols):
    """``J = 0`` on the rows' columns ``cols`` (:func:`row_columns`): the entries an evaluation
    adds to (the others stay zero)."""
    for row in range(cols.shape[0]):
        for c in range(cols.shape[1]):
            j = cols[row, c]
            if j < 0:
                break
            J[row, j] = 0.0


@njit(cache=True, inline="always")
def _add_row(Q, J, row, cols, f):
    """``Q += f J[row]`` over the row's columns ``cols[row]``."""
    for c in range(cols.shape[1]):
        j = cols[row, c]
        if j < 0:
            break
        Q[j] += J[row, j] * f


@njit(cache=True, inline="always")
def _row(row, nj, phi, gamma, s, sdd, angle):
    """Row ``row`` of the evaluation as a constraint of the problem: value ``C`` and
    acceleration right-hand side ``gamma``; a driving row (``row >= nj``) is ``s - s_ref``
    (wrapped for angles), with the law's acceleration (its rate: :func:`_equations`)."""
    C = phi[row]
    rhs = gamma[row]
    if row >= nj:
        i = row - nj
        C -= s[i]
        if angle[i]:
            C = wrap(C)
        rhs += sdd[i]
    return C, rhs


@njit(cache=True, inline="always")
def _evaluate(q, v, pb, w, targets, flags):
    """The evaluation at ``(q, v)`` into the work arrays: ``M``, ``dQ/dv`` and ``K_t`` on their
    stores on the block path (``w.Ms``), else dense."""
    t, f = pb.t, pb.f
    if w.Ms.values.size:
        store_function(f[2], t)(q, v, t, pb.data, (w.Ms, w.Q, w.Q[:0], w.phi, w.J, w.gamma, w.Gs, w.Gg, w.Ks),
                                targets, flags)
    else:
        function(f[0], t)(q, v, t, pb.data, (w.M, w.Q, w.Q[:0], w.phi, w.J, w.gamma, w.G, w.Gg, w.Kt), targets, flags)


@njit(cache=True)
def _equations(q1, v1, a, lam, pb, law, w, jacobian):
    """Residual ``w.r = [M a + J^T lam - Q ; J a - gamma + 2 alpha C_dot + beta^2 C]`` at the
    state ``(q1, v1)``; with ``jacobian``, ``w.G = dQ/dv``, ``w.Gg = d gamma/dv`` and the
    tangent stiffness ``w.Kt`` too (drive and damping terms included), added to what they
    hold (:func:`_clear_jacobian` first).  ``f``: the addresses of the evaluation of the
    tables ``t`` (:func:`sim.kernels.equations.addresses`)."""
    t, sch, rows, D, cols = pb.t, pb.sch, pb.rows, pb.D, pb.cols
    s, sd, sdd, ff = law
    n = a.size
    nj = t.n_joint
    # M needs no reset: the evaluation writes every body's block and M has no other entries;
    # J only on its rows' columns, which hold every entry the evaluation adds to.
    _clear_rows(w.J, cols)
    _evaluate(q1, v1, pb, w, s if sch.kind == 1 else s[:0], (jacobian, jacobian, jacobian, runtime(True)))
    Q, J = w.Q, w.J
    if sch.kind == 2:
        sv = sch.servo
        for k in range(w.phi.size - nj):
            row = nj + k
            if sch.transmission[0, k] > 0.0:
                Q_k = _transmission(sch, k, s[k], sd[k], ff[k], w.phi[row], _dot_row(J, row, cols, v1), t.angle[k])
                _add_row(Q, J, row, cols, Q_k)
                continue
            err = s[k] - w.phi[row]
            if t.angle[k]:
                err = wrap(err)
            pd = sch.kp[k] * err + sch.kd[k] * (sd[k] - _dot_row(J, row, cols, v1))
            z = sv[Z, k] + 0.5 * sch.h * (sv[E, k] + pd)      # trapezoidal integral of tau_pd
            tau = ff[k] + pd + sch.ki[k] * z
            free = abs(tau) <= sch.limit[k]
            if not free:
                tau = sch.limit[k] if tau > 0 else -sch.limit[k]
                z = sv[Z, k]                                # held while clipped (anti-windup)
            sv[Z1, k], sv[E1, k], sv[TAU1, k] = z, pd, tau
            _add_row(Q, J, row, cols, tau)
            c = sch.kd[k] * (1.0 + 0.5 * sch.h * sch.ki[k])
            if jacobian and c != 0.0 and free:
                for ci in range(cols.shape[1]):
                    i = cols[row, ci]
                    if i < 0:
                        break
                    if J[row, i] != 0.0:
                        if w.Ms.values.size:
                            Gw = writer(w.Gs)
                            for cj in range(cols.shape[1]):
                                j = cols[row, cj]
                                if j < 0:
                                    break
                                couple(Gw, i, j, J[row, j] * (-c * J[row, i]))
                        else:
                            _add_row(w.G[i], J, row, cols, -c * J[row, i])
    for k in range(sch.inertia.size):
        if sch.inertia[k] != 0.0:
            # the rotor's inertia force -I s_ddot on the joint coordinate
            row = nj + k
            _add_row(Q, J, row, cols, -sch.inertia[k] * (_dot_row(J, row, cols, a) - w.gamma[row]))
    if D.shape[0]:
        for i in range(n):
            Q[i] -= _dot(D, i, v1)
        if jacobian and w.Ms.values.size:
            Gs = w.Gs
            for j in range(n):
                for e in range(Gs.ptr[j], Gs.ptr[j + 1]):
                    i = Gs.rows[e]
                    if i >= n:
                        break
                    Gs.values[e] -= D[i, j]
        elif jacobian:
            G = w.G
            for i in range(n):
                for j in range(n):
                    G[i, j] -= D[i, j]
    for k in range(w.low.shape[1]):      # the low-rank damping (not in G: _factorize adds it)
        u = 0.0
        for i in range(n):
            u += w.low[i, k] * v1[i]
        u *= w.low_rate[k]
        if u != 0.0:
            for i in range(n):
                Q[i] -= w.low[i, k] * u
    # The products below are written as updates along contiguous rows, several independent
    # sums per pass: one dot product at a time waits on each addition's latency.
    r = w.r
    _mass_times(t, w, a, r)
    for i in range(n):
        r[i] -= Q[i]
    for k in range(rows.size):
        row = rows[k]
        C, rhs = _row(row, nj, w.phi, w.gamma, s, sdd, t.angle)
        Jv, Ja, lk = 0.0, 0.0, lam[k]
        for c in range(cols.shape[1]):   # C_dot = J v, J a and J^T lam in one pass, on J's nonzeros
            j = cols[row, c]
            if j < 0:
                break
            J_rj = J[row, j]
            Jv += J_rj * v1[j]
            Ja += J_rj * a[j]
            r[j] += J_rj * lk
        C_dot = Jv - sd[row - nj] if row >= nj else Jv
        r[n + k] = Ja - (rhs - sch.alpha2 * C_dot - sch.beta2 * C)


@njit(cache=True, inline="always")
def _mass_times(t, w, x, y):
    """``y = M x`` (n_v,) for the bodies' block-diagonal ``M`` of the tables ``t`` (the work
    arrays ``w``'): on its store (the block path), else by the nonzeros of each body's block
    from ``PATTERN_MIN`` coordinates (a beam's elastic block is banded), else block by block,
    along contiguous rows (several independent sums per pass); each row's terms added in
    ascending column order either way, so the same sums."""
    n = x.size
    if w.Ms.values.size:
        store_product(w.Ms, n, x, y)
        return
    M = w.M
    if n >= PATTERN_MIN:
        groups = t.groups
        for g in range(len(groups)):
            ff = groups[g].ff
            for v0 in groups[g].v_start:
                pattern_vector(M, v0, ff, x, y)
        return
    for b in range(t.body_v.size):
        v0 = t.body_v[b]
        v1 = v0 + 6 + t.body_nf[b]
        y[v0:v1] = 0.0
        for j in range(v0, v1):          # M symmetric: column j of M is its row j
            xj = x[j]
            for i in range(v0, v1):
                y[i] += M[j, i] * xj


@njit(cache=True, inline="always")
def _wrap(x, angle):
    return wrap(x) if angle else x


@njit(cache=True)
def _transmission(sch, k, s_ref, sd_ref, ff, s, s_dot, angle):
    """The force on joint coordinate ``s`` of actuator ``k`` through its transmission spring,
    its motor (reflected inertia ``I``) driven by the drive law, and the motor's state at the
    iterate into ``sch.servo``.  The motor's coordinate is condensed within the step: Newmark's
    average-acceleration update makes its angle and rate linear in its acceleration
    ``A``, which ``I A = tau - f`` (``f = k (theta - s) + c (theta_dot - s_dot)``, ``tau`` the drive
    law on the motor's angle, clipped) gives in closed form."""
    sv, h = sch.servo, sch.h
    K, C, I = sch.transmission[0, k], sch.transmission[1, k], sch.transmission[2, k]
    # Newmark's average acceleration whatever the scheme (second order; generalized-alpha's
    # gamma > 1/2 on the true acceleration would be first order)
    bh2, gh = 0.25 * h * h, 0.5 * h
    th = sv[TH, k] + h * sv[THD, k] + 0.25 * h * h * sv[THDD, k]     # the predictor's part
    thd = sv[THD, k] + 0.5 * h * sv[THDD, k]
    kp, kd, ki = sch.kp[k], sch.kd[k], sch.ki[k]
    P0 = kp * _wrap(s_ref - th, angle) + kd * (sd_ref - thd)       # tau_pd = P0 + P1 A
    P1 = -(kp * bh2 + kd * gh)
    g = 1.0 + 0.5 * h * ki
    T0 = ff + ki * (sv[Z, k] + 0.5 * h * sv[E, k]) + g * P0        # tau = T0 + T1 A
    T1 = g * P1
    F0 = K * _wrap(th - s, angle) + C * (thd - s_dot)               # f = F0 + F1 A
    F1 = K * bh2 + C * gh
    A = (T0 - F0) / (I - T1 + F1)
    tau = T0 + T1 * A
    z = sv[Z, k] + 0.5 * h * (sv[E, k] + P0 + P1 * A)
    if abs(tau) > sch.limit[k]:
        tau = sch.limit[k] if tau > 0 else -sch.limit[k]
        A = (tau - F0) / (I + F1)
        z = sv[Z, k]                                    # held while clipped (anti-windup)
    sv[Z1, k], sv[E1, k], sv[TAU1, k] = z, P0 + P1 * A, tau
    sv[TH1, k], sv[THD1, k], sv[THDD1, k] = th + bh2 * A, thd + gh * A, A
    return F0 + F1 * A


@njit(cache=True, inline="always")
def _residual(a, lam, st, pb, law, w, jacobian):
    """:func:`_equations` at ``a_{n+1} = a``: ``a_hat = c a + offset``, ``v1 = v_base + h gamma
    a_hat``, ``q1 = q ⊕ (dq_base + h^2 beta a_hat)`` (the step's bases in ``w``)."""
    t, sch = pb.t, pb.sch
    hg, hhb = sch.h * sch.gamma, sch.h * sch.h * sch.beta
    for i in range(a.size):
        a_hat = sch.c * a[i] + w.offset[i]
        w.v1[i] = w.v_base[i] + hg * a_hat
        w.dq[i] = w.dq_base[i] + hhb * a_hat
    integrate(st.q, w.dq, t.body_q, t.body_v, t.body_nf, w.q1)
    _equations(w.q1, w.v1, a, lam, pb, law, w, jacobian)


@njit(cache=True, inline="always")
def _clear_jacobian(w, pat):
    """Zero ``dQ/dv``, ``d gamma/dv`` and ``K_t`` before an evaluation adds to them: on their
    stores where they are held there, on the structure ``pat`` where it holds the iteration
    matrix (their entries are among its own), else whole."""
    w.Gg[:] = 0.0
    if w.Ms.values.size:
        w.Gs.values[:] = 0.0
        w.Ks.values[:] = 0.0
        return
    n = w.G.shape[0]
    if pat.ptr.size:
        for k in range(n):
            for e in range(pat.ptr[k], pat.ptr[k + 1]):
                i = pat.rows[e]
                if i >= n:
                    break
                w.G[i, k] = 0.0
                if w.Kt.size:
                    w.Kt[i, k] = 0.0
    else:
        w.G[:] = 0.0
        w.Kt[:] = 0.0


@njit(cache=True, inline="always")
def _coordinate_entry(w, i, j, f, g):
    """Entry ``(i, j)`` (both velocity coordinates) of the known part (:func:`_known`)."""
    x = w.M[i, j] - f * w.G[i, j]
    if w.Kt.size:       # empty where the model has no tangent stiffness
        x += g * w.Kt[i, j]
    return x


@njit(cache=True, inline="always")
def _row_entry(w, row, j, f, g, sch):
    """Entry of constraint row ``row`` at velocity coordinate ``j`` of the known part."""
    Jr = w.J[row, j]
    return Jr + f * (sch.alpha2 * Jr - w.Gg[row, j]) + g * sch.beta2 * Jr


@njit(cache=True, inline="always")
def _known(sch, rows, w, pat):
    """The part of the iteration matrix computed at every factorisation: ``[[M, J^T], [J, 0]]``
    plus the velocity terms ``gamma' h [[-dQ/dv, 0], [2 alpha J - d gamma/dv, 0]]`` and,
    through the Newmark map, the tangent stiffness ``beta' h^2 K_t`` and the Baumgarte rows'
    position term ``beta' h^2 beta^2 J`` (``gamma' h = h gamma c``, ``beta' h^2 = h^2 beta
    c``).  With the default gains ``beta = 4 / h`` that last term is ``4 c J``, four times the
    rows' own: left to the forward differences, which are kept over many steps, its staleness
    cost Newton a third of an iteration per step.  On the structure ``pat`` (``pat.known``)
    where it holds the matrix (``M``, ``dQ/dv`` and ``K_t`` then on their stores, on the same
    structure: entry by entry), else into ``w.known`` (m, m)."""
    n = w.v1.size
    f = sch.h * sch.gamma * sch.c
    g = sch.h * sch.h * sch.beta * sch.c
    if pat.ptr.size:
        Ms, Gs, Ks = w.Ms.values, w.Gs.values, w.Ks.values
        for k in range(pat.ptr.size - 1):
            for e in range(pat.ptr[k], pat.ptr[k + 1]):
                i = pat.rows[e]
                if i < n and k < n:
                    if Ms.size:
                        x = Ms[e] - f * Gs[e]
                        if Ks.size:
                            x += g * Ks[e]
                    else:
                        x = _coordinate_entry(w, i, k, f, g)
                elif i < n:
                    x = w.J[rows[k - n], i]
                else:
                    x = _row_entry(w, rows[i - n], k, f, g, sch) if k < n else 0.0
                pat.known[e] = x
        return
    A = w.known
    A[:] = 0.0
    for i in range(n):
        for j in range(n):
            A[i, j] = _coordinate_entry(w, i, j, f, g)
    for k in range(rows.size):
        row = rows[k]
        for j in range(n):
            A[j, n + k] = w.J[row, j]
            A[n + k, j] = _row_entry(w, row, j, f, g, sch)


@njit(cache=True, inline="always")
def _base(a, lam, st, pb, law, w):
    """Before the forward differences: the unknowns ``(a, lam)`` into ``w.x`` and ``(r0, base,
    rates)``, the residual there (in ``w.r``), the one the differences are taken from and the
    low-rank damping's rates, which are set to zero meanwhile: that damping is exact in the
    iteration matrix (:func:`_factorize`'s end), and its round-off in the differences would
    couple every body."""
    w.x[:a.size] = a
    w.x[a.size:] = lam
    r0 = w.r.copy()
    rates = w.low_rate.copy()
    base = r0
    if rates.size:
        w.low_rate[:] = 0.0
        _residual(a, lam, st, pb, law, w, runtime(False))
        base = w.r.copy()
        st.counts[EVALUATIONS] += 1
    return r0, base, rates


@njit(cache=True, inline="always")
def _step_size(x):
    """The forward difference's step for the unknown ``x``: the residual is linear in lam and
    nearly linear in a (through beta' h^2 << 1): steps of order 1 in SI units resolve the
    position terms far above round-off."""
    return max(1e-6 * abs(x), 1.0)


@njit(cache=True, inline="always")
def _dense_delta(a, lam, st, pb, law, w):
    """The Jacobian correction ``st.delta`` (m, m) column by column: one evaluation per unknown
    (forward differences of the residual, whose value at ``(a, lam)`` is ``w.r``, less the
    known part ``w.known``)."""
    n = a.size
    m = w.r.size
    x = w.x
    r0, base, rates = _base(a, lam, st, pb, law, w)
    for k in range(m):
        step = _step_size(x[k])
        keep = x[k]
        x[k] += step
        _residual(x[:n], x[n:], st, pb, law, w, runtime(False))
        x[k] = keep
        for i in range(m):
            st.delta[i, k] = (w.r[i] - base[i]) / step - w.known[i, k]
    w.low_rate[:] = rates
    # Differences below DROP_RTOL of their row's largest entry are the residual's
    # round-off: zero, so that the bodies' elastic blocks stay uncoupled where they are
    # (sim.solvers.blocks); the dense path factorises the same matrix.
    for i in range(m):
        big = 0.0
        for j in range(m):
            big = max(big, abs(w.known[i, j] + st.delta[i, j]))
        floor = DROP_RTOL * big
        for j in range(m):
            if abs(st.delta[i, j]) <= floor:
                st.delta[i, j] = 0.0
    w.r[:] = r0
    st.counts[EVALUATIONS] += m


@njit(cache=True, inline="always")
def _grouped_delta(a, lam, st, pb, law, w):
    """The Jacobian correction on its pattern (``st.pattern``, :func:`sim.solvers.blocks.pattern`):
    one evaluation per group of columns that share no row, all of them perturbed at once (each
    row then differs by its one column's step); the entries as :func:`_dense_delta` takes them,
    with the same round-off floor (the row's largest entry of ``known + delta``)."""
    pat = st.pattern
    n = a.size
    m = w.r.size
    x = w.x
    r0, base, rates = _base(a, lam, st, pb, law, w)
    steps = np.empty(m)
    n_g = pat.group_ptr.size - 1
    for g in range(n_g):
        for p in range(pat.group_ptr[g], pat.group_ptr[g + 1]):
            k = pat.group_cols[p]
            steps[k] = _step_size(x[k])
            x[k] += steps[k]
        _residual(x[:n], x[n:], st, pb, law, w, runtime(False))
        for p in range(pat.group_ptr[g], pat.group_ptr[g + 1]):
            k = pat.group_cols[p]
            x[k] = a[k] if k < n else lam[k - n]
            for e in range(pat.ptr[k], pat.ptr[k + 1]):
                i = pat.rows[e]
                pat.values[e] = (w.r[i] - base[i]) / steps[k] - pat.known[e]
    w.low_rate[:] = rates
    # The round-off floor of each row from known + delta (the matrix is zero off the pattern)
    floor = steps
    floor[:] = 0.0
    for k in range(m):
        for e in range(pat.ptr[k], pat.ptr[k + 1]):
            i = pat.rows[e]
            floor[i] = max(floor[i], abs(pat.known[e] + pat.values[e]))
    for k in range(m):
        for e in range(pat.ptr[k], pat.ptr[k + 1]):
            if abs(pat.values[e]) <= DROP_RTOL * floor[pat.rows[e]]:
                pat.values[e] = 0.0
    w.r[:] = r0
    st.counts[EVALUATIONS] += n_g


@njit(cache=True, inline="always")
def _factorize(a, lam, st, pb, law, w, fresh):
    """Residual at ``(a, lam)`` into ``w.r``, the known part of the iteration matrix, its
    correction ``delta`` (forward differences of the residual, one evaluation per unknown)
    when stale or ``fresh``, and the LU factors of their sum into ``st.lu``.  Returns False
    when the matrix is singular."""
    sch, rows, pat = pb.sch, pb.rows, st.pattern
    m = w.r.size
    fv = sch.h * sch.gamma * sch.c      # d v / d a
    _clear_jacobian(w, pat)
    _residual(a, lam, st, pb, law, w, runtime(True))
    st.counts[EVALUATIONS] += 1
    st.counts[CURRENT] = 1
    _known(sch, rows, w, pat)
    if fresh or st.counts[DELTA_OK] == 0:
        if pat.ptr.size:
            _grouped_delta(a, lam, st, pb, law, w)
        else:
            _dense_delta(a, lam, st, pb, law, w)
        st.counts[CURRENT] = 0           # the work arrays hold the last perturbed state
        st.counts[JACOBIANS] += 1
        st.counts[DELTA_OK] = 1
    blk = st.blocks
    blocked = False
    top, low = 0.0, np.inf
    info = 0
    if pat.ptr.size:
        # The matrix on its structure (known part and correction): the blocks read it there;
        # where they do not serve, the dense LU of it, in memory allocated at the first such
        # factorisation (the structure alone holds the matrix otherwise).
        if blk.info[MODE] == 2 or (blk.info[MODE] == 0 and m >= BLOCK_MIN):
            blocked, top, low = block_factor(pat, blk, st.piv)
            if blocked and w.low.shape[1]:
                blocked = low_rank(st.piv, blk, w.low, w.low_rate, fv)
        if not blocked:
            if st.lu.shape[0] != m:
                st.lu = np.zeros((m, m)).T
            to_dense(pat, st.lu)
    elif blk.info[SHARED]:
        # lu is w.known's memory (transposed view): the sum in place of the known part
        # (rebuilt at the next factorisation), transposed in place for the dense LU.
        A = w.known
        for i in range(m):
            for j in range(m):
                A[i, j] += st.delta[i, j]
        transpose(A)
    else:
        for j in range(m):
            for i in range(m):
                st.lu[i, j] = w.known[i, j] + st.delta[i, j]
    lu = st.lu
    if not blocked:
        blk.info[ACTIVE] = 0
        add_low_rank(lu, w.low, w.low_rate, fv)
        info = getrf(lu, st.piv)
        if blk.lu_rows.size:
            lu_pattern(lu, blk)
        top, low = 0.0, np.inf
        for i in range(m):
            d = abs(lu[i, i])
            top = max(top, d)
            low = min(low, d)
    st.counts[FACTORIZATIONS] += 1
    ok = info >= 0 and np.isfinite(top) and low > PIVOT_RTOL * top
    st.counts[LU_OK] = 1 if ok else 0
    return ok


@njit(cache=True, inline="always")
def _newton(a, lam, st, pb, law, w, fresh, full):
    """One attempt at the step from the predictor: ``(code, iterations, err, rate)``, ``code``
    0 when converged, else a key of :data:`FAILURES`.

    ``fresh``: the iteration matrix is computed anew at the predictor.  ``full``: at every
    iterate (Newton's method proper, converging on the correction alone), for the steps where
    the matrix varies too much within the step for the kept one to contract -- e.g. a floating
    frame whipped by a stiff local mode (a compliant drive on a light hub).
    """
    sch = pb.sch
    # The known part follows the state; delta varies slowly; while Newton contracts
    # strongly the last factorisation is kept.
    refresh = st.counts[LU_OK] == 0 or fresh or full or st.counts[DELTA_OK] == 0
    scale = sch.h * sch.h * sch.beta * sch.c
    k, previous = 0, np.inf
    err = rate = np.inf
    for iteration in range(1, sch.max_iter + 1):
        if refresh:
            if not _factorize(a, lam, st, pb, law, w, fresh or full):
                return 4, iteration, np.inf, np.inf
            k = 0
        else:
            _residual(a, lam, st, pb, law, w, runtime(False))
            st.counts[EVALUATIONS] += 1
            st.counts[CURRENT] = 1
        refresh = full
        # Newton proper is judged on its correction alone (its rate says nothing until it
        # reaches its quadratic range): as a first iteration.
        code, k, err, rate = newton_update(w.r, (st.lu, st.piv, st.blocks), w.steps, k, (a, lam),
                                           1 if full else iteration, previous, (scale, sch.tol, sch.diverged))
        if code >= 0:
            return code, iteration, err, rate
        previous = err
    return 3, sch.max_iter, err, rate


@njit(cache=True)
def keep_factors(counts, rate, iterations, most):
    """Whether the next step keeps the factorised iteration matrix (``counts[LU_OK]``, the
    counters of :class:`State` updated in place): not when the accepted step's Newton
    contracted slowly (``rate`` above ``KEEP_RATE``), nor after a step of more than the
    iteration limit.

    The limit adapts: a factorisation asked for by the count alone that leaves the next step
    at as many iterations raises it by one (up to ``most``), one that lowers the count lowers
    it again (down to ``ITERATION_LIMIT``).  On large models the count is set by the
    residual's round-off against the tolerance, not by the matrix's age; a factorisation then
    buys nothing and costs many evaluations (the 3-RRRU with 128 elements per link: one
    every other step, for 4.5 iterations a step with or without it)."""
    if counts[PENDING]:
        if iterations >= counts[PENDING]:
            counts[RAISED] = min(counts[RAISED] + 1, most - ITERATION_LIMIT)
        elif counts[RAISED]:
            counts[RAISED] -= 1
        counts[PENDING] = 0
    if rate > KEEP_RATE:
        counts[LU_OK] = 0            # refactorise on the next step
    elif iterations > ITERATION_LIMIT + counts[RAISED]:
        counts[LU_OK] = 0
        counts[PENDING] = iterations


@njit(cache=True, inline="always")
def _step(st, pb, law, w):
    """Advance ``st`` by one step (drive law ``s, sd, sdd, ff`` at its end); returns the
    failure code (0: accepted) and the Newton iterations of the last attempt."""
    t, sch, rows = pb.t, pb.sch, pb.rows
    h, g, b, am, af = sch.h, sch.gamma, sch.beta, sch.alpha_m, sch.alpha_f
    n = st.a.size
    for i in range(n):
        w.offset[i] = (af * st.a[i] - am * st.a_hat[i]) / (1 - am)
        w.v_base[i] = st.v[i] + h * (1 - g) * st.a_hat[i]
        w.dq_base[i] = h * st.v[i] + h * h * (0.5 - b) * st.a_hat[i]
    a, lam = w.y[:n], w.y[n:]       # the iterate (no allocation per step)
    code, iterations, err = 0, 0, 0.0
    for attempt in range(ATTEMPTS):
        # Predictor: linear extrapolation of the last two steps' accelerations and multipliers
        # (it halves the first Newton correction on smooth motions).
        if st.counts[HAVE_PREV]:
            for i in range(n):
                a[i] = 2 * st.a[i] - st.a_prev[i]
            for i in range(lam.size):
                lam[i] = 2 * st.lam[i] - st.lam_prev[i]
        else:
            a[:] = st.a
            lam[:] = st.lam
        code, iterations, err, rate = _newton(a, lam, st, pb, law, w, attempt == 1, attempt == 2)
        st.counts[ITERATIONS] += iterations
        if code == 0:
            break
    st.time[1] = err
    st.counts[STEPS] += 1
    st.counts[LAST] = iterations
    if code:
        return code, iterations
    # Newton proper may converge where the step is absurd (a crank turning radians per step):
    # the joints then come apart.  The joint rows of the last iterate (within newton_tol); not
    # the drives', which an inconsistent start leaves behind their law for a few steps.
    gap = 0.0
    for k in range(rows.size):
        if rows[k] < t.n_joint:
            gap = max(gap, abs(w.phi[rows[k]]))
    if not gap <= sch.gap:
        st.time[1] = gap
        return 5, iterations
    if rate > SLOW_RATE:
        st.counts[DELTA_OK] = 0      # refresh the Jacobian correction on the next step
    keep_factors(st.counts, rate, iterations, sch.max_iter)
    for i in range(n):
        a_hat = sch.c * a[i] + w.offset[i]
        st.v[i] = w.v_base[i] + h * g * a_hat
        w.dq[i] = w.dq_base[i] + h * h * b * a_hat
        st.a_hat[i] = a_hat
    integrate(st.q, w.dq, t.body_q, t.body_v, t.body_nf, w.q1)
    st.q[:] = w.q1
    st.a_prev[:] = st.a
    st.lam_prev[:] = st.lam
    st.a[:] = a
    st.lam[:] = lam
    if sch.kind == 2:       # the drive's state at the accepted iterate
        sch.servo[Z] = sch.servo[Z1]
        sch.servo[E] = sch.servo[E1]
        sch.servo[TAU] = sch.servo[TAU1]
        sch.servo[TH] = sch.servo[TH1]
        sch.servo[THD] = sch.servo[THD1]
        sch.servo[THDD] = sch.servo[THDD1]
    st.counts[HAVE_PREV] = 1
    st.time[0] += h
    return 0, iterations


@njit(cache=True, inline="always")
def _record(st, pb, law, w, out):
    """Output sample of the current state into ``out`` (:class:`Samples`, as a record: :func:`_run`
    borrows it).

    The markers and constraint rows are evaluated at the state; the mass matrix (for the
    kinetic energy) is the last Newton iterate's when the work arrays hold it (flag
    ``CURRENT``: a configuration within ``newton_tol`` of the accepted one), else the whole
    equations are evaluated."""
    t, data, f, sch, rows, cols = pb.t, pb.data, pb.f, pb.sch, pb.rows, pb.cols
    s, _, sdd, _ = law
    j = st.counts[SAMPLES]
    n = st.v.size
    if st.counts[CURRENT] == 0:
        _equations(st.q, st.v, np.zeros(n), np.zeros(rows.size), pb, law, w, runtime(False))
        st.counts[CURRENT] = 1
    else:
        _clear_rows(w.J, cols)
        _evaluate(st.q, st.v, pb, w, s[:0], (runtime(False), runtime(False), runtime(False), runtime(False)))
    out.t[j] = st.time[0]
    out.q[j] = st.q
    out.v[j] = st.v
    out.p[j] = data.p
    out.A[j] = data.A
    out.tau[j] = sch.servo[TAU]
    out.motor[j] = sch.servo[TH]
    out.a[j] = st.a
    out.lam[j] = st.lam
    _rates(st, t, data, sch, out.ee[j], out.pd[j], out.ap[j])
    kinetic = 0.0                        # v^T M v / 2
    Mv = w.r2[:n]
    _mass_times(t, w, st.v, Mv)
    for i in range(n):
        kinetic += 0.5 * st.v[i] * Mv[i]
    violation = 0.0
    for k in range(rows.size):
        C = _row(rows[k], t.n_joint, w.phi, w.gamma, s, sdd, t.angle)[0]
        violation += C * C
    gravity, elastic = potential_function(f[1], t)(st.q, t, data)
    # The rotors: the rigid actuators' reflected inertia n^2 J_m on their rates and, behind a
    # transmission, the motors' own and their springs.
    nj = t.n_joint
    for k in range(sch.inertia.size):
        if sch.inertia[k] > 0.0:
            rate = _dot_row(w.J, nj + k, cols, st.v)
            kinetic += 0.5 * sch.inertia[k] * rate * rate
        if sch.transmission[0, k] > 0.0:
            twist = _wrap(sch.servo[TH, k] - w.phi[nj + k], t.angle[k])
            kinetic += 0.5 * sch.transmission[2, k] * sch.servo[THD, k] ** 2
            elastic += 0.5 * sch.transmission[0, k] * twist * twist
    out.energy[j, 0], out.energy[j, 1], out.energy[j, 2] = kinetic, gravity, elastic
    out.violation[j] = np.sqrt(violation)
    out.iterations[j] = st.counts[MAX_SINCE]
    st.counts[MAX_SINCE] = 0
    st.counts[SAMPLES] += 1


@njit(cache=True)
def _rates(st, t, data, sch, ee, pd, ap):
    """The end effector's coordinate rates ``ee`` (2, d) (velocity, acceleration) and the
    markers' velocities ``pd`` and accelerations ``ap`` (n_m, 3) at the state ``st``, from the
    markers' kinematics ``data`` evaluated there (their columns in the tables ``t``):
    ``x_dot = J_x v``, ``x_ddot = J_x a + x_q`` (:func:`sim.kernels.pose.pose_terms`),
    ``p_ddot = J_p a + p_q``."""
    d, n = sch.pose_kinds.size, st.v.size
    x, Jx, xq = np.zeros(d), np.zeros((d, n)), np.zeros(d)
    pose_terms(sch.pose_kinds, marker_terms(t, data, sch.ee), st.v, (x, Jx, xq), runtime(True))
    cols = t.cols[sch.ee]
    for r in range(d):
        rate, acc = 0.0, xq[r]
        for c in cols:
            if c >= 0:
                rate += Jx[r, c] * st.v[c]
                acc += Jx[r, c] * st.a[c]
        ee[0, r], ee[1, r] = rate, acc
    for i in range(data.p.shape[0]):
        for k in range(3):
            acc = data.pq[i, k]
            for c in range(t.cols.shape[1]):
                col = t.cols[i, c]
                if col >= 0:
                    acc += data.Jp[i, k, c] * st.a[col]
            pd[i, k], ap[i, k] = data.pd[i, k], acc


@njit(cache=True)
def _factor_rows(st):
    """The rows of ``st.lu`` in the step loop's state record."""
    return st.lu.shape[0]


@njit(cache=True)
def _factors(st):
    """The dense factors ``st.lu`` of the step loop's state record, once the loop has allocated
    them (an array the record owns)."""
    return st.lu


EQUATIONS, RECORD, ADVANCE = range(3)     # tasks of _run


@njit(cache=True)
def _run(task, span, st, pb, laws, w, out):
    """The compiled entry point (one, so that the evaluation is compiled into one loop only).

    ``task``: ``EQUATIONS``, the residual at the current state for ``a = 0, lam = 0`` into
    ``w`` (:func:`_equations`; drive tables' row 0); ``RECORD``, a sample into ``out``;
    ``ADVANCE``, steps ``k0 + 1 .. k0 + count`` of ``total`` (row ``i`` of the drive tables
    ``S, SD, SDD, FF`` (count, n_a) at the end of step ``k0 + 1 + i``), sampled into ``out``
    after every ``every``-th step and the last (``every = 0``: no samples).  Returns
    ``(code, done)``: the failure code (0: all steps taken) and the steps taken.

    Subnormal numbers are read and written as zero meanwhile (:func:`subnormals_off`; the
    control word found is kept in ``st.counts[FP_WORD]`` for the caller to put back should
    the call stop on an exception; -1 between calls).
    """
    word = subnormals_off()
    st.counts[FP_WORD] = word
    code, done = _tasks(task, span, st, pb, laws, w, out)
    fp_control(word)
    st.counts[FP_WORD] = -1
    return code, done


@njit(cache=True, inline="always")
def _tasks(task, span, st, pb, laws, w, out):
    """:func:`_run`'s work."""
    count, k0, every, total = span
    rows = pb.rows
    # Borrowed (the caller holds the tables and the samples for the call): each step's rows of
    # the tables, passed on to every evaluation, and the samples' fields then cost no
    # reference counts.
    S, SD, SDD, FF = borrow(laws[0]), borrow(laws[1]), borrow(laws[2]), borrow(laws[3])
    samples = borrowed(out)
    if task == EQUATIONS:
        _equations(st.q, st.v, np.zeros(st.v.size), np.zeros(rows.size), pb, (S[0], SD[0], SDD[0], FF[0]), w,
                   runtime(False))
        st.counts[CURRENT] = 1
        return 0, 0
    # One call site of _record (it is inlined, with the evaluation's calls: compile time).
    for i in range(count if task == ADVANCE else 1):
        if task == ADVANCE:
            code, iterations = _step(st, pb, (S[i], SD[i], SDD[i], FF[i]), w)
            st.counts[MAX_SINCE] = max(st.counts[MAX_SINCE], iterations)
            if code:
                return code, i
            k = k0 + i + 1
            if not (every > 0 and (k % every == 0 or k == total)):
                continue
        _record(st, pb, (S[i], SD[i], SDD[i], FF[i]), w, samples)
    return 0, count if task == ADVANCE else 0


# --- the integrator ---------------------------------------------------------------------------


class GeneralizedAlpha:
    """Generalized-α (Arnold–Brüls form) with Newton iterations; see the module docstring.

    Parameters
    ----------
    ev : sim.model.evaluator.Evaluator
        The model's compiled tables.
    drive : sim.solvers.simulate.Drive
        How the actuators act; its laws are tabulated at the steps' ends.
    t0 : float
        Initial time [s].
    q0 : ndarray, shape (n_q,)
    v0 : ndarray, shape (n_v,)
    h : float
        Step [s].
    options : Options, optional
        ``rho_inf``, the Baumgarte gains, Newton's tolerance and iterations, the solver.
    damping : ndarray, shape (n_v, n_v), or sim.solvers.damping.Schedule, optional
        Linear damping ``D`` (``Q -= D v``), constant or piecewise constant in time (the value
        at the start of each step).
    consistent : bool
        Start from the consistent acceleration and multipliers of ``(q0, v0)`` (a first
        evaluation); False: from zero, nothing evaluated (for :meth:`compile`).

    Attributes
    ----------
    t, q, v, a, lam : the state after the last step
    status : {"running", "failed"}
    message : str
    n_steps, n_iterations, n_evaluations, n_factorizations, n_jacobians, last_iterations : int
    """

    order = 2

    def __init__(self, ev, drive, t0, q0, v0, h, options=None, damping=None, consistent=True):
        options = Options() if options is None else options
        rho_inf, newton_max_iter, solver = options.rho_inf, options.newton_max_iter, options.solver
        rho = float(rho_inf)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"`rho_inf` must be in [0, 1], got {rho_inf!r}")
        h = _validate_positive("h", h)
        baumgarte = baumgarte_gains(h) if options.baumgarte is None else tuple(float(x) for x in options.baumgarte)
        if len(baumgarte) != 2 or min(baumgarte) < 0:
            raise ValueError(f"`baumgarte` must be two non-negative gains, got {baumgarte!r}")
        tol = _validate_positive("newton_tol", options.newton_tol)
        am, af = self.coefficients(rho)
        gamma = 0.5 + af - am
        kind = DRIVE_KINDS[drive.kind]
        n_a = ev.n_rows - ev.n_joint
        per = lambda x: np.array(np.broadcast_to(np.asarray(x, dtype=float), (n_a,)))     # noqa: E731
        # The reflected rotor inertia of the rigid actuators (a compliant one's rotor sits on its
        # motor side, whose motion the drive prescribes -- or, through a transmission, on the
        # motor's own coordinate).
        acts = ev.model.actuators
        inertia = np.array([0.0 if a.stiffness is not None else a.reflected_inertia for a in acts])
        transmission = np.zeros((3, n_a))
        if kind == 2 and getattr(drive, "transmission", False):
            for i, a in enumerate(acts):
                if a.stiffness is not None:
                    transmission[:, i] = a.stiffness, a.damping, a.reflected_inertia
        servo = np.zeros((len(SERVO_ROWS), n_a))
        if kind == 2:
            servo[Z] = per(getattr(drive, "integral", 0.0))
        self.scheme = Scheme(h, am, af, gamma, 0.25 * (gamma + 0.5) ** 2, (1 - af) / (1 - am), 2 * baumgarte[0],
                             baumgarte[1] ** 2, tol, int(newton_max_iter), DIVERGED, GAP_RATIO * ev.size, kind,
                             per(drive.kp), per(drive.kd), per(getattr(drive, "ki", 0.0)),
                             per(getattr(drive, "limit", np.inf)), per(inertia), transmission,
                             servo, pose_codes(ev.model.pose_kinds),
                             int(ev.model.ee_marker))
        self.ev, self.drive = ev, drive
        self.schedule = damping if hasattr(damping, "at") else None
        # Modal damping on a few modes: the material part in D, the modal one as a low-rank term
        # (the schedule's dense matrix is then never formed).
        rank = self.schedule.factors.shape[2] if self.schedule is not None else 0
        if not 0 < rank <= RANK_MAX:
            rank = 0
            self.D = np.zeros((0, 0)) if damping is None else \
                (self.schedule.matrix if self.schedule is not None else np.ascontiguousarray(damping, dtype=float))
        elif self.schedule.base is not None and self.schedule.base.any():
            self.D = np.ascontiguousarray(self.schedule.base, dtype=float)
        else:
            self.D = np.zeros((0, 0))
        n_v, n_rows = ev.n_v, ev.n_rows
        # Constraint rows: the joints', and with prescribed drives the rigid actuators'.
        self.rows = np.flatnonzero(ev.keep if kind == 1 else np.arange(n_rows) < ev.n_joint).astype(np.int64)
        self.cols = row_columns(ev.tables, n_rows)
        m = n_v + self.rows.size
        n_c = self.rows.size
        blk = blocks(ev.tables.body_v, ev.tables.body_nf, m, solver, rank)
        # The block path: the iteration matrix on its structure, its correction taken by column
        # groups; no square array of the unknowns until a factorisation falls back to the dense
        # LU (until then a (2, 2) Fortran-ordered array: the dense factors' numba type).
        pat = pattern(ev.tables, self.rows, self.D, m, blk.ranges) if blk.info[SHARED] else no_pattern()
        known = np.zeros((0, 0) if pat.ptr.size else (m, m))
        if pat.ptr.size:
            lu = np.zeros((2, 2), order="F")
        else:       # on the block path without a structure, the factors in the known part's memory
            lu = known.T if blk.info[SHARED] else np.zeros((m, m), order="F")
        delta = np.zeros((0, 0) if pat.ptr.size else (m, m))
        # M, dQ/dv and K_t on that structure too (written there by the evaluation on stores, at
        # its own machine-code address, compiled for these models only)
        held = bool(pat.ptr.size) and n_v >= STORE_MIN
        dense = (0, 0) if held else (n_v, n_v)
        Ms, Gs, Ks = stores(ev.tables, pat, ev.stiff) if held else (empty_store(),) * 3
        self.f = np.append(ev.f, store_address(ev.ref)) if held and not isinstance(ev.f, types.Type) else ev.f
        self.state = State(np.array([float(t0), 0.0]), np.array(q0, dtype=float), np.array(v0, dtype=float),
                           np.zeros(n_v), np.zeros(n_v), np.zeros(n_v), np.zeros(n_c), np.zeros(n_c),
                           lu, np.zeros(m, dtype=np.int32), delta, np.r_[np.zeros(FP_WORD, dtype=np.int64), -1], blk, pat)
        self.work = Work(np.empty(ev.n_q), np.empty(n_v), np.empty(n_v), np.zeros(n_v), np.zeros(n_v), np.zeros(n_v),
                         np.zeros(dense), np.zeros(n_v), np.zeros(n_rows), np.zeros((n_rows, n_v)),
                         np.zeros(n_rows), np.zeros(dense), np.zeros((n_rows, n_v)),
                         np.zeros(dense if ev.stiff else (0, 0)),
                         np.zeros(m), np.zeros(m), np.zeros(m), np.zeros((int(newton_max_iter), m)),
                         known, np.zeros((n_v, rank)), np.zeros(rank), np.zeros(m), Ms, Gs, Ks)
        if rank:
            self._low_rank()
        self.status, self.message = "running", ""
        self._refs = None
        self._no_samples = self.samples(0)
        self._chunk = FIRST_CHUNK      # steps of the next compiled call (advance)
        if consistent:
            self._initial_acceleration()

    def _low_rank(self):
        """The schedule's modal damping at its last instant into ``work.low, low_rate``."""
        w, sc = self.work, self.schedule
        if w.low.shape[1]:
            w.low[sc.elastic[0][:, 0]] = sc.factors[sc.index]
            w.low_rate[:] = sc.rates[sc.index]

    @staticmethod
    def coefficients(rho):
        """``(alpha_m, alpha_f)`` for spectral radius ``rho``."""
        return (2 * rho - 1) / (rho + 1), rho / (rho + 1)

    @classmethod
    def oscillator(cls, omega_h, rho_inf=0.9):
        """How the method integrates an undamped oscillator ``x'' + omega^2 x = 0`` with steps
        ``h``: the relative frequency error and the numerical damping ratio.

        The step maps ``(x, h v, h^2 a, h^2 ahat)`` linearly (the module's equations with
        ``a = -omega^2 x``); its principal eigenvalues ``r exp(+-i theta)`` give the discrete
        frequency ``theta / h`` and the decay ``-ln r`` per ``theta``.  Newmark's average
        acceleration: ``theta = 2 atan(omega h / 2)``, no decay (:func:`sim.app.selfcheck`
        uses this to estimate a transient's phase error).

        Parameters
        ----------
        omega_h : ndarray, shape (n,)
            ``omega h`` [rad], positive.
        rho_inf : float

        Returns
        -------
        error, zeta : ndarray, shape (n,)
            ``1 - theta / (omega h)`` [1] and ``-ln r / theta`` [1].
        """
        w = np.atleast_1d(np.asarray(omega_h, dtype=float))
        am, af = cls.coefficients(float(rho_inf))
        gamma = 0.5 + af - am
        beta = 0.25 * (gamma + 0.5) ** 2
        n = w.size
        L, R = np.zeros((n, 4, 4)), np.zeros((n, 4, 4))     # L s_{n+1} = R s_n, s = (x, hv, h^2 a, h^2 ahat)
        L[:, 0, 2], L[:, 0, 3], R[:, 0, 2], R[:, 0, 3] = -(1 - af), 1 - am, af, -am
        L[:, 1, 1], L[:, 1, 3], R[:, 1, 1], R[:, 1, 3] = 1.0, -gamma, 1.0, 1 - gamma
        L[:, 2, 0], L[:, 2, 3], R[:, 2, 0], R[:, 2, 1], R[:, 2, 3] = 1.0, -beta, 1.0, 1.0, 0.5 - beta
        L[:, 3, 2], L[:, 3, 0] = 1.0, w**2
        lam = np.linalg.eigvals(np.linalg.solve(L, R))
        principal = lam[np.arange(n), np.argmax(np.abs(lam.imag), axis=1)]
        theta = np.abs(np.angle(principal))
        return 1.0 - theta / w, -np.log(np.abs(principal)) / np.maximum(theta, 1e-300)

    # state and counters -------------------------------------------------------------------
    t = property(lambda self: float(self.state.time[0]))
    q = property(lambda self: self.state.q.copy())
    v = property(lambda self: self.state.v.copy())
    a = property(lambda self: self.state.a.copy())
    lam = property(lambda self: self.state.lam.copy())
    n_steps = property(lambda self: int(self.state.counts[STEPS]))
    n_iterations = property(lambda self: int(self.state.counts[ITERATIONS]))
    n_evaluations = property(lambda self: int(self.state.counts[EVALUATIONS]))
    n_factorizations = property(lambda self: int(self.state.counts[FACTORIZATIONS]))
    n_jacobians = property(lambda self: int(self.state.counts[JACOBIANS]))
    last_iterations = property(lambda self: int(self.state.counts[LAST]))
    n_samples = property(lambda self: int(self.state.counts[SAMPLES]))
    residual = property(lambda self: float(self.state.time[1]))
    # factorisations by blocks (sim.solvers.blocks) so far
    n_blocked = property(lambda self: int(self.state.blocks.info[BLOCKED]))

    def _drive(self, times):
        """The drive law at ``times`` (k,): ``S, SD, SDD, FF``, each (k, n_a)."""
        return self.drive.table(times, self.ev.n_rows - self.ev.n_joint)

    def _initial_acceleration(self):
        """Consistent ``(a, lam)`` at the initial state (least squares: redundant rows allowed)."""
        st, w, n = self.state, self.work, self.ev.n_v
        self._call(EQUATIONS, self._no_samples)
        st.counts[EVALUATIONS] += 1
        sch = self.scheme
        if sch.transmission[0].any():
            # The motors start at their joints' angle (plus the drive's offset: a loaded
            # transmission) and rate.
            nj = self.ev.n_joint
            joint = w.phi[nj:]
            offset = np.broadcast_to(np.asarray(getattr(self.drive, "motor_offset", 0.0), dtype=float), joint.shape)
            sch.servo[TH], sch.servo[THD] = joint + offset * (sch.transmission[0] > 0), w.J[nj:] @ st.v
            self._call(EQUATIONS, self._no_samples)
            st.counts[EVALUATIONS] += 1
        J = w.J[self.rows]
        J_s = w.J[self.ev.n_joint:]
        bodies = self.ev.tables.body_v, self.ev.tables.body_nf
        if w.r.size >= BLOCK_MIN:
            # M block diagonal over the bodies: no dense (m, m) system (memory; whichever
            # factorisation the steps take, so that the two start alike)
            x = saddle_lstsq(self._mass_blocks(), bodies, J, J_s, sch.inertia, -w.r)
        else:
            M = w.M
            if w.Ms.values.size:     # (scipy.linalg only there: a small run does without it)
                import scipy.linalg
                M = scipy.linalg.block_diag(*self._mass_blocks())
            M = M + (J_s.T * sch.inertia) @ J_s       # the rotors' reflected inertia
            A = np.block([[M, J.T], [J, np.zeros((J.shape[0], J.shape[0]))]])
            x = lstsq(A, -w.r, cond=np.finfo(float).eps)
        st.a[:], st.lam[:] = x[:n], x[n:]
        st.a_hat[:] = st.a
        # the drive's state at t0: the integral as it starts, not advanced over a step
        sch.servo[E] = sch.servo[E1]
        sch.servo[TAU] = np.clip(sch.servo[TAU1] - sch.ki * (sch.servo[Z1] - sch.servo[Z]), -sch.limit, sch.limit)
        motor = sch.transmission[2]
        sch.servo[THDD] = np.divide(sch.servo[TAU], motor, out=np.zeros_like(motor), where=motor > 0)

    def _mass_blocks(self):
        """Each body's block of the mass matrix the work arrays hold (dense; from its store on
        the block path), (6 + nf, 6 + nf) each."""
        w, t = self.work, self.ev.tables
        if not w.Ms.values.size:
            return [w.M[v:v + 6 + nf, v:v + 6 + nf] for v, nf in zip(t.body_v, t.body_nf)]
        S, out = w.Ms, []
        for v, nf in zip(t.body_v, t.body_nf):
            lo, hi = S.ptr[v], S.ptr[v + 6 + nf]
            rows, cols = S.rows[lo:hi], np.repeat(np.arange(6 + nf), np.diff(S.ptr[v:v + 7 + nf]))
            on = (rows >= v) & (rows < v + 6 + nf)
            block = np.zeros((6 + nf, 6 + nf))
            block[rows[on] - v, cols[on]] = S.values[lo:hi][on]
            out.append(block)
        return out

    def samples(self, count):
        """Empty :class:`Samples` for ``count`` output instants."""
        n_m = self.ev.data.p.shape[0]
        return Samples(np.zeros(count), np.zeros((count, self.ev.n_q)), np.zeros((count, self.ev.n_v)),
                       np.zeros((count, 3)), np.zeros(count), np.zeros(count, dtype=np.int64),
                       np.zeros((count, n_m, 3)), np.zeros((count, n_m, 3, 3)),
                       np.zeros((count, self.ev.n_rows - self.ev.n_joint)),
                       np.zeros((count, self.ev.n_rows - self.ev.n_joint)), np.zeros((count, self.ev.n_v)),
                       np.zeros((count, self.rows.size)), np.zeros((count, 2, len(self.ev.model.pose_kinds))),
                       np.zeros((count, n_m, 3)), np.zeros((count, n_m, 3)))

    def record(self, out):
        """Sample the current state into ``out`` (:class:`Samples`)."""
        self._room(out, 1)
        self._call(RECORD, out)

    def _room(self, out, due):
        """Raise ValueError unless ``out`` holds ``due`` samples after the :attr:`n_samples`
        recorded so far (the loop writes them unchecked)."""
        if self.n_samples + due > out.t.shape[0]:
            raise ValueError(f"the samples hold {out.t.shape[0]} instants: {self.n_samples} recorded, "
                             f"{due} more due (Samples for the integrator's whole run: samples(count))")

    def _arguments(self, task, out, count=1, k0=0, every=0, total=0):
        """The arguments of :func:`_run`, with the drive law at the ``count`` next steps' ends
        (at the current instant for a sample or the equations)."""
        h = self.scheme.h
        # The steps' ends as the loop accumulates its time (t += h, step by step), so that the
        # drive sees the same instants however the steps are split into calls.
        times = np.add.accumulate(np.r_[self.t, np.full(count, h)])[1:] if task == ADVANCE else np.array([self.t])
        st, pb, w = self._records()
        return task, (count, k0, every, total), st, pb, self._drive(times), w, out

    def _records(self):
        """The :class:`State`, the :class:`Problem` and the :class:`Work` by reference, as
        :func:`_run` takes them (made once; their arrays are this integrator's).

        A named tuple passed to a compiled function has each of its arrays' reference counts
        raised on entry and lowered on exit, and again where it is unpacked: on a small model
        a thousand atomic operations per step, a quarter of it.  A record is one count, raised
        where it is passed and where a field is read."""
        if self._refs is None:        # (the state's blocks and pattern and the scheme: records too)
            # The evaluator's tables and data as records of their own, typed as its records
            # (ev.ref, ev.data_ref): the same compiled evaluation.
            pb = Problem(self.ev.tables, self.ev.data, self.f, self.scheme, self.rows, self.D, self.cols)
            # Borrowed (no reference counts on their arrays in the loop): this integrator holds
            # every array of them (its state, work, scheme, rows, D, cols and evaluator).
            self._refs = tuple(reference(x, borrowing=True) for x in (self.state, pb, self.work))
        return self._refs

    def _call(self, task, out, count=1, k0=0, every=0, total=0):
        try:
            result = _run(*self._arguments(task, out, count, k0, every, total))
        except BaseException:
            if self.state.counts[FP_WORD] >= 0:     # the loop stopped before it could put it back
                restore_fp(self.state.counts[FP_WORD])
                self.state.counts[FP_WORD] = -1
            raise
        m = self.work.r.size
        if self.state.lu.shape[0] != m and _factor_rows(self._refs[0]) == m:
            # the dense factors' memory, allocated by the loop (the record's field): held here too
            self.state = self.state._replace(lu=_factors(self._refs[0]))
        return result

    def compile(self):
        """Compile, or load from numba's cache, the step loop without taking a step (the
        evaluator may hold types only: :class:`sim.model.evaluator.Evaluator` ``load=False``),
        and on the block path the evaluation on stores, which the loop calls (a process that
        compiles the loops for another, :mod:`sim.app.parallel_compile`, takes it off that
        one's hands)."""
        if self.work.Ms.values.size:
            store_address(self.ev.ref)
        compile_for(_run, *self._arguments(ADVANCE, self.samples(1), 1, 0, 1, 1))

    def advance(self, count, out=None, every=0, total=None, progress=None):
        """Take up to ``count`` steps; stop early on a failure (:attr:`status`, :attr:`message`).

        Parameters
        ----------
        count : int
        out : Samples, optional
            Where to record samples: after every ``every``-th step (counted from the
            integrator's first step) and after step ``total``.
        progress : tqdm-like, optional
            Updated with the steps taken.

        Returns
        -------
        int
            Steps taken.

        Raises
        ------
        RuntimeError
            When stepping a failed integrator (a programming error).
        ValueError
            When ``out`` has no room for the samples: the compiled loop writes them from
            :attr:`n_samples` on, unchecked.
        """
        if self.status != "running":
            raise RuntimeError(f"cannot step a {self.status} integrator")
        out = self._no_samples if out is None else out
        sch = self.scheme
        total = self.n_steps + count if total is None else total
        if out is not self._no_samples and every > 0:
            first, last = self.n_steps, self.n_steps + count
            due = last // every - first // every + (first < total <= last and total % every != 0)
            self._room(out, due)
        taken = 0
        while taken < count:
            k0 = self.n_steps
            chunk = min(self._chunk, count - taken)
            if self.schedule is not None:
                # Each step uses D at its start: the chunk ends where the schedule changes, the
                # starts summed as the loop sums its time (t += h), so that D changes on the same
                # step however the steps are split into calls (t + k h rounds otherwise).
                starts = np.add.accumulate(np.r_[self.t, np.full(chunk - 1, sch.h)])
                index = np.searchsorted(self.schedule.times, starts, side="right")
                chunk = max(1, int(np.count_nonzero(index == index[0])))
                self.schedule.at(self.t)
                self._low_rank()
            start = time.perf_counter()
            code, done = self._call(ADVANCE, out, chunk, k0, every if out is not self._no_samples else 0, total)
            elapsed = time.perf_counter() - start
            if done and elapsed > 0:
                # Calls of about CALL_TIME: few on a small model, where each costs its typing,
                # short ones on a large model, which stays responsive to progress and Ctrl-C.
                self._chunk = max(1, int(done * CALL_TIME / elapsed))
            taken += done + (1 if code else 0)
            if progress is not None:
                progress.update(done)
            if code:
                self.status = "failed"
                detail = (f"constraint violation {self.residual:.3g} m or rad, above {GAP_RATIO:.0%} of the "
                          f"robot's size; step {sch.h:.3g} s): lower the step" if code == 5 else
                          f"Newton correction {self.residual:.3g} m or rad after {self.last_iterations} "
                          f"iterations, step {sch.h:.3g} s)")
                self.message = f"{FAILURES[code]} at t = {self.t + sch.h:.6g} s ({detail}"
                break
        return taken

    def step(self):
        """Advance one step; returns the status message ('' while running)."""
        self.advance(1)
        return self.message


class Newmark(GeneralizedAlpha):
    """Newmark-β, average acceleration (gamma = 1/2, beta = 1/4): energy conserving for
    linear systems, second order, no numerical damping."""

    def __init__(self, ev, drive, t0, q0, v0, h, options=None, **rest):
        super().__init__(ev, drive, t0, q0, v0, h, replace(options or Options(), rho_inf=1.0), **rest)

    @staticmethod
    def coefficients(rho):
        return 0.0, 0.0


class HHT(GeneralizedAlpha):
    """HHT-α in the generalized-α form (alpha_m = 0, alpha_f = (1 - rho)/(1 + rho))."""

    def __init__(self, ev, drive, t0, q0, v0, h, options=None, **rest):
        options = options or Options(method="hht")
        if not 0.5 <= float(options.rho_inf) <= 1.0:
            raise ValueError(f"`rho_inf` must be in [0.5, 1] for HHT, got {options.rho_inf!r}")
        super().__init__(ev, drive, t0, q0, v0, h, options, **rest)

    @staticmethod
    def coefficients(rho):
        return 0.0, (1 - rho) / (1 + rho)


METHODS = {"newmark": Newmark, "hht": HHT, "generalized-alpha": GeneralizedAlpha}
