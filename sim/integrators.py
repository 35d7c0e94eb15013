r"""Implicit integrators of the constrained equations of motion at acceleration level.

The problem is the index-1 form of :mod:`sim.dynamics` with Baumgarte stabilisation (paper 001
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
split into a known part computed at every factorisation -- ``[[M, J^T], [J, 0]]`` plus, when
the problem provides ``dQ/dv`` and ``d gamma/dv`` (the compiled model does), the velocity
terms ``gamma' h [[-dQ/dv, 0], [2 alpha J - d gamma/dv, 0]]`` (gyroscopic, Coriolis and
Baumgarte-rate terms, which follow the velocities) -- and ``Delta``: the rest (stiffness
``-dQ/dq``, ``d(J^T lam)/dq``, the position terms of the Baumgarte rows, through the Newmark map
``dq/da = beta' h^2``), from a forward-difference Jacobian of ``r`` (one evaluation per
unknown).  ``Delta`` varies slowly and is kept until Newton slows down (rate above
``SLOW_RATE``); the LU factorisation is kept from step to step while Newton contracts strongly
(rate below ``KEEP_RATE``).  The aged matrix is typically off by about a per cent, which
would make simplified Newton contract only linearly at that rate: within each step the
corrections are therefore Broyden (good) quasi-Newton updates of the factorised matrix, which
absorb that drift (:func:`_broyden`).  Convergence: the configuration
correction ``beta' h^2 |delta a|_inf`` [m or rad], or the error it leaves estimated from the
contraction rate ``rho`` as ``rho / (1 - rho)`` times it, falls below ``newton_tol``.

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
import abc
from dataclasses import dataclass

import numpy as np
import scipy.linalg
from numba import njit
from scipy.linalg.lapack import dgetrf as getrf

NEWTON_MAX_ITER = 12
NEWTON_TOL = 1e-12          # m or rad: configuration correction at convergence
SLOW_RATE = 0.25            # contraction rate above which the Jacobian correction is refreshed
KEEP_RATE = 0.05            # contraction rate below which the last factorisation is kept
DIVERGED = 1e12             # |a| or |lam| beyond this (SI) is a divergence
FAILURES = {1: "diverged", 2: "Newton iterations do not contract", 3: "Newton did not converge"}


def _validate_positive(name, value):
    """Return `value` as a float if it is finite and > 0; raise ValueError otherwise."""
    value = float(value)
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"`{name}` must be positive and finite, got {value!r}")
    return value


@dataclass(frozen=True)
class Problem:
    """What an integrator sees: the equations, never bodies or joints.

    Attributes
    ----------
    n_v : int
    evaluate : callable
        ``evaluate(t, q, v) -> (M (n_v, n_v), Q (n_v,), C (n_c,), J (n_c, n_v), gamma (n_c,),
        C_dot (n_c,))``: mass matrix, forces, constraints, their Jacobian, the velocity-
        quadratic (and driving) acceleration right-hand side and the constraint rate.
    integrate : callable
        ``integrate(q, dv) -> q ⊕ dv``.
    velocity_jacobian : bool
        Whether ``evaluate(t, q, v, velocity_jacobian=True)`` also returns ``dQ/dv`` (n_v, n_v)
        and ``d gamma/dv`` (n_c, n_v) (appended to the tuple), and optionally a third item, a
        tangent stiffness ``K_t = -dQ/dq`` (n_v, n_v) of forces that vary fast with the
        configuration (or None).
    iterate : callable, optional
        Compiled Newton iterations of the step residual, the same algorithm as
        :meth:`GeneralizedAlpha._iterate` (the problem's residual and :func:`newton_update`
        in one compiled loop, e.g. :class:`sim.fast.StepIterations`), called as
        ``iterate(a, lam, r, lu, piv, q, base, coef, tol, max_iter, diverged)``; None: the
        Python loop over ``evaluate``.
    """

    n_v: int
    evaluate: object
    integrate: object
    velocity_jacobian: bool = False
    iterate: object = None


@njit(cache=True)
def lu_solve(lu, piv, b):
    """In place: ``b <- A^-1 b`` from LAPACK ``getrf``'s factors of ``A`` (``piv`` 0-based, as
    scipy returns them).  Column-oriented sweeps: ``lu`` is Fortran-ordered."""
    n = b.size
    for i in range(n):
        p = piv[i]
        if p != i:
            b[i], b[p] = b[p], b[i]
    for j in range(n):              # L y = P b, L unit lower triangular
        bj = b[j]
        if bj != 0.0:
            for i in range(j + 1, n):
                b[i] -= lu[i, j] * bj
    for j in range(n - 1, -1, -1):  # U x = y
        b[j] /= lu[j, j]
        bj = b[j]
        if bj != 0.0:
            for i in range(j):
                b[i] -= lu[i, j] * bj


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
    z0 = z.copy()
    for j in range(k - 1):
        s_j, s_next = steps[j], steps[j + 1]
        f = np.dot(s_j, z) / np.dot(s_j, s_j)
        for i in range(z.size):
            z[i] += s_next[i] * f
    if k:
        s = steps[k - 1]
        denom = 1.0 - np.dot(s, z) / np.dot(s, s)
        if abs(denom) < 0.1:            # nearly singular update: restart from H_0
            k = 0
            z[:] = z0
        else:
            for i in range(z.size):
                z[i] /= denom
    steps[k] = z
    return k + 1


@njit(cache=True)
def newton_update(r, lu, piv, steps, k, a, lam, iteration, previous, scale, tol, diverged):
    """One quasi-Newton correction of the step unknowns ``(a, lam)`` (updated in place).

    The core shared by the Python and the compiled Newton loops: ``-A^-1 r`` from the
    factorised iteration matrix, Broyden's update (:func:`_broyden`), the divergence guard
    and the stopping test on the configuration correction ``err = scale |delta a|_inf``
    (``scale = beta' h^2``): done when ``err``, or the error it leaves as estimated from the
    contraction rate ``rho`` (``rho / (1 - rho) err``, Hairer & Wanner §IV.8), is below
    ``tol``.

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
    n = a.size
    z = -r
    lu_solve(lu, piv, z)
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
    if err <= tol or (iteration > 1 and rate < 1 and rate / (1 - rate) * err <= tol):
        return 0, k, err, rate
    if iteration > 2 and rate > 0.9:
        return 2, k, err, rate
    return -1, k, err, rate


class Integrator(abc.ABC):
    """Base class: guards, status and counters; subclasses implement ``_step()``.

    Parameters
    ----------
    problem : Problem
    t0 : float
        Initial time [s].
    q0 : ndarray, shape (n_q,)
    v0 : ndarray, shape (n_v,)
    h : float
        Step [s].
    baumgarte : tuple of float
        ``(alpha, beta)`` [1/s] of ``C_ddot + 2 alpha C_dot + beta^2 C = 0``.
    newton_tol : float
        Configuration correction at convergence [m or rad].
    newton_max_iter : int
        Newton iterations per step (with a fresh iteration matrix, the step is retried once).

    Attributes
    ----------
    t, q, v, a, lam : the state after the last step
    status : {"running", "failed"}
    message : str
    n_steps, n_iterations, n_evaluations, n_factorizations : int
    last_iterations : int
        Newton iterations of the last step.
    """

    order = 2

    def __init__(self, problem, t0, q0, v0, h, baumgarte=(10.0, 10.0), newton_tol=NEWTON_TOL,
                 newton_max_iter=NEWTON_MAX_ITER):
        self.problem = problem
        self.h = _validate_positive("h", h)
        self.baumgarte = tuple(float(x) for x in baumgarte)
        if len(self.baumgarte) != 2 or min(self.baumgarte) < 0:
            raise ValueError(f"`baumgarte` must be two non-negative gains, got {baumgarte!r}")
        self.newton_tol = _validate_positive("newton_tol", newton_tol)
        self.newton_max_iter = int(newton_max_iter)
        self.t, self.q, self.v = float(t0), np.array(q0, dtype=float), np.array(v0, dtype=float)
        self.status, self.message = "running", ""
        self.n_steps = self.n_iterations = self.n_evaluations = self.n_factorizations = self.n_jacobians = 0
        self.last_iterations = 0
        self.residual = 0.0
        self.a, self.lam = self._initial_acceleration()

    def _baumgarte_rhs(self, gamma, C, C_dot):
        alpha, beta = self.baumgarte
        return gamma - 2 * alpha * C_dot - beta**2 * C

    def _initial_acceleration(self):
        """Consistent ``(a, lam)`` at the initial state (least squares: redundant rows allowed)."""
        M, Q, C, J, gamma, C_dot = self.problem.evaluate(self.t, self.q, self.v)
        self.n_evaluations += 1
        n = self.problem.n_v
        A = np.block([[M, J.T], [J, np.zeros((J.shape[0], J.shape[0]))]])
        x = scipy.linalg.lstsq(A, np.concatenate([Q, self._baumgarte_rhs(gamma, C, C_dot)]))[0]
        return x[:n], x[n:]

    def step(self):
        """Advance one step; returns the status message ('' while running).

        Raises
        ------
        RuntimeError
            When stepping a failed integrator (a programming error).
        """
        if self.status != "running":
            raise RuntimeError(f"cannot step a {self.status} integrator")
        ok, message = self._step()
        self.n_steps += 1
        self.status = "running" if ok else "failed"
        self.message = message
        return message

    @abc.abstractmethod
    def _step(self):
        """Advance one step; return ``(ok, message)``."""


class GeneralizedAlpha(Integrator):
    """Generalized-α (Arnold–Brüls form) with Newton iterations; see the module docstring.

    Parameters
    ----------
    rho_inf : float
        Spectral radius at infinite frequency, in [0, 1] (1: no numerical damping).
    **options
        As :class:`Integrator`.
    """

    def __init__(self, problem, t0, q0, v0, h, rho_inf=0.9, **options):
        rho = float(rho_inf)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"`rho_inf` must be in [0, 1], got {rho_inf!r}")
        self.alpha_m, self.alpha_f = self.coefficients(rho)
        self.gamma = 0.5 + self.alpha_f - self.alpha_m
        self.beta = 0.25 * (self.gamma + 0.5) ** 2
        self._delta = None
        self._lu = None
        self._previous = None
        super().__init__(problem, t0, q0, v0, h, **options)
        self.a_hat = self.a.copy()

    @staticmethod
    def coefficients(rho):
        """``(alpha_m, alpha_f)`` for spectral radius ``rho``."""
        return (2 * rho - 1) / (rho + 1), rho / (rho + 1)

    def _residual(self, a, lam, base, velocity_jacobian=False):
        """Step residual (n_v + n_c,) at ``a_{n+1} = a``, the state it implies, ``(M, J)`` and,
        with ``velocity_jacobian``, the velocity part of the iteration matrix (or None)."""
        h, g, b = self.h, self.gamma, self.beta
        t1, offset, v_base, dq_base, c = base
        a_hat = c * a + offset
        v1 = v_base + (h * g) * a_hat
        q1 = self.problem.integrate(self.q, dq_base + (h * h * b) * a_hat)
        out = self.problem.evaluate(t1, q1, v1, velocity_jacobian=True) if velocity_jacobian else \
            self.problem.evaluate(t1, q1, v1)
        M, Q, C, J, gamma, C_dot = out[:6]
        n = a.size
        r = np.empty(n + lam.size)
        np.dot(M, a, out=r[:n])
        r[:n] += lam @ J
        r[:n] -= Q
        np.dot(J, a, out=r[n:])
        r[n:] -= self._baumgarte_rhs(gamma, C, C_dot)
        V = self._velocity_part(J, *out[6:]) if velocity_jacobian else None
        return r, a_hat, v1, q1, M, J, V

    def _velocity_part(self, J, Q_v, gamma_v, K_t=None):
        """``d r / d v * dv/da`` (n, n): ``-dQ/dv`` and ``-d gamma/dv + 2 alpha J`` times
        ``gamma' h`` (the gyroscopic, Coriolis and Baumgarte-rate terms; they follow the
        velocities, which the unresolved stiff modes change from step to step); plus, when the
        problem gives one, ``K_t dq/da = beta' h^2 K_t`` (e.g. geometric stiffening, which
        follows the axial forces)."""
        n, n_c = J.shape[1], J.shape[0]
        c = (1 - self.alpha_f) / (1 - self.alpha_m)
        f = self.h * self.gamma * c
        V = np.zeros((n + n_c, n + n_c))
        V[:n, :n] = -f * Q_v
        if K_t is not None:
            V[:n, :n] += (self.h**2 * self.beta * c) * K_t
        V[n:, :n] = f * (2 * self.baumgarte[0] * J - gamma_v)
        return V

    def _known(self, M, J, V):
        """The part of the iteration matrix computed at every factorisation: ``[[M, J^T], [J, 0]]``
        plus the velocity part ``V`` when the problem provides it."""
        n_c = J.shape[0]
        A = np.block([[M, J.T], [J, np.zeros((n_c, n_c))]])
        return A if V is None else A + V

    def _jacobian_correction(self, a, lam, r, M, J, V, base):
        """``Delta``: forward-difference Jacobian of the residual minus the known part."""
        n = self.problem.n_v
        x = np.concatenate([a, lam])
        A = np.empty((r.size, r.size))
        # The residual is linear in lam and nearly linear in a (through beta' h^2 << 1):
        # steps of order 1 in SI units resolve the position terms far above round-off.
        step = np.maximum(1e-6 * np.abs(x), 1.0)
        for k in range(r.size):
            xk = x.copy()
            xk[k] += step[k]
            A[:, k] = (self._residual(xk[:n], xk[n:], base)[0] - r) / step[k]
        self.n_jacobians += 1
        self.n_evaluations += r.size
        return A - self._known(M, J, V)

    def _factorize(self, M, J, V):
        """LU of the known part plus ``Delta`` at the current state, or None if singular."""
        with np.errstate(all="ignore"):
            lu, piv, info = getrf(self._known(M, J, V) + self._delta, overwrite_a=True)
        self.n_factorizations += 1
        pivots = np.abs(np.diag(lu))
        if info < 0 or not np.all(np.isfinite(pivots)) or pivots.min() <= 1e-13 * pivots.max():
            return None
        return lu, piv

    def _newton(self, fresh):
        h, b = self.h, self.beta
        am, af = self.alpha_m, self.alpha_f
        c = (1 - af) / (1 - am)
        t1 = self.t + h
        # Predictor: linear extrapolation of the accelerations (and multipliers) of the last
        # two steps; it halves the first Newton correction on smooth motions.
        if self._previous is None:
            a, lam = self.a.copy(), self.lam.copy()
        else:
            a, lam = 2 * self.a - self._previous[0], 2 * self.lam - self._previous[1]
        base = (t1, (af * self.a - am * self.a_hat) / (1 - am), self.v + h * (1 - self.gamma) * self.a_hat,
                h * self.v + h**2 * (0.5 - b) * self.a_hat, c)
        r = None
        if self._lu is None or fresh or self._delta is None:
            # The known part of the iteration matrix follows the state; Delta varies slowly.
            # While Newton contracts strongly the last factorisation is kept.
            r, _, _, _, M, J, V = self._residual(a, lam, base, velocity_jacobian=self.problem.velocity_jacobian)
            self.n_evaluations += 1
            if self._delta is None or fresh or self._delta.shape[0] != r.size:
                self._delta = self._jacobian_correction(a, lam, r, M, J, V, base)
            self._lu = self._factorize(M, J, V)
            if self._lu is None:
                return False, 1, np.inf, "singular iteration matrix (redundant or singular constraints)"
        alpha, beta = self.baumgarte
        coef = np.array([c, h * self.gamma, h * h * b, 2 * alpha, beta**2, b * c * h**2])
        iterate = self._iterate if self.problem.iterate is None else self.problem.iterate
        code, iterations, err, rate, evaluations = iterate(a, lam, r, *self._lu, self.q, base, coef,
                                                           self.newton_tol, self.newton_max_iter, DIVERGED)
        self.n_evaluations += evaluations
        self.residual = err
        if code:
            return False, iterations, err, FAILURES[code]
        if rate > SLOW_RATE:
            self._delta = None       # refresh the Jacobian correction on the next step
        if rate > KEEP_RATE or iterations > 4:
            self._lu = None          # refactorise the saddle part on the next step
        a_hat = c * a + base[1]
        self._accept(t1, a, lam, a_hat, base[2] + h * self.gamma * a_hat,
                     self.problem.integrate(self.q, base[3] + h**2 * b * a_hat))
        return True, iterations, err, ""

    def _iterate(self, a, lam, r, lu, piv, q, base, coef, tol, max_iter, diverged):
        """Newton iterations on the step residual from ``(a, lam)`` (updated in place).

        ``r``: the residual there, if at hand (else None); ``lu, piv``: the factorised
        iteration matrix; ``coef[5]``: the configuration scale ``beta' h^2`` of the
        corrections.  The Python loop over :attr:`Problem.evaluate` (``q``, the integrator's
        own, is not used); a problem may provide the same loop compiled
        (:attr:`Problem.iterate`).

        Returns
        -------
        code, iterations, err, rate, evaluations
            ``code`` 0 when converged, else a key of :data:`FAILURES`.
        """
        steps = np.empty((max_iter, a.size + lam.size))
        k, previous, evaluations = 0, np.inf, 0
        err = rate = np.inf
        for iteration in range(1, max_iter + 1):
            if r is None:
                r = self._residual(a, lam, base)[0]
                evaluations += 1
            code, k, err, rate = newton_update(r, lu, piv, steps, k, a, lam, iteration, previous, coef[5], tol,
                                               diverged)
            if code >= 0:
                return code, iteration, err, rate, evaluations
            previous, r = err, None
        return 3, max_iter, err, rate, evaluations

    def _accept(self, t1, a, lam, a_hat, v1, q1):
        self._previous = (self.a, self.lam)
        self.t, self.q, self.v, self.a, self.lam, self.a_hat = t1, q1, v1, a, lam, a_hat

    def _step(self):
        ok, iterations, err, why = self._newton(fresh=False)
        if not ok:
            self.n_iterations += iterations
            ok, iterations, err, why = self._newton(fresh=True)
        self.n_iterations += iterations
        self.last_iterations = iterations
        if ok:
            return True, ""
        return False, (f"{why} at t = {self.t + self.h:.6g} s (Newton correction {err:.3g} m or rad "
                       f"after {iterations} iterations, step {self.h:.3g} s)")


class Newmark(GeneralizedAlpha):
    """Newmark-β, average acceleration (gamma = 1/2, beta = 1/4): energy conserving for
    linear systems, second order, no numerical damping."""

    def __init__(self, problem, t0, q0, v0, h, rho_inf=1.0, **options):
        super().__init__(problem, t0, q0, v0, h, rho_inf=1.0, **options)

    @staticmethod
    def coefficients(rho):
        return 0.0, 0.0


class HHT(GeneralizedAlpha):
    """HHT-α in the generalized-α form (alpha_m = 0, alpha_f = (1 - rho)/(1 + rho))."""

    def __init__(self, problem, t0, q0, v0, h, rho_inf=0.9, **options):
        if not 0.5 <= float(rho_inf) <= 1.0:
            raise ValueError(f"`rho_inf` must be in [0.5, 1] for HHT, got {rho_inf!r}")
        super().__init__(problem, t0, q0, v0, h, rho_inf=rho_inf, **options)

    @staticmethod
    def coefficients(rho):
        return 0.0, (1 - rho) / (1 + rho)


METHODS = {"newmark": Newmark, "hht": HHT, "generalized-alpha": GeneralizedAlpha}
