r"""Damping models and complex modes of the constrained, linearised system.

At a configuration ``q`` with the actuators locked, the motions are ``v = N x`` (``N`` an
orthonormal basis of the null space of ``C_q``, :func:`sim.solvers.modal.constraint_null_space`) and

    M_n x'' + C_n x' + K_n (1 + i eta) x = N^T f,
    M_n = N^T M N,  K_n = N^T K N,  C_n = N^T C N.

Damping models, combinable:

* structural (hysteretic): ``K (1 + i eta)`` (paper 004 eq. 33, eta = 0.096 for the Surgiscope);
* Rayleigh material damping of the flexible bodies: ``C_ff = alpha M_ff + beta K_ff`` on each
  body's elastic coordinates (:func:`material_matrix`), nothing on the body frames, so that a
  rigid motion is not damped (rigid links have no material to damp);
* modal damping ratios: ``C = M Phi diag(2 zeta_r omega_r) Phi^T M`` (``Phi`` mass-normalised);
* the lumped dampers of springs and compliant actuators (:func:`sim.model.dynamics.damping_matrix`).

Structural and modal damping keep the undamped mode shapes (proportional damping); Rayleigh
material damping does when the flexible bodies carry all the mass (``N^T C N = alpha M_n +
beta K_n``), otherwise nearly.  Lumped dampers in general do not: :func:`complex_modes` then solves the state-space eigenproblem

    A z = lambda z,   A = [[0, I], [-M^-1 K*, -M^-1 C]],   K* = K (1 + i eta),

whose eigenvalues ``lambda_r = -zeta_r omega_r + i omega_r sqrt(1 - zeta_r^2)`` (viscous) give the
damped natural frequencies ``|Im lambda_r| / 2 pi``.  For pure structural damping
``lambda_r = i omega_r sqrt(1 + i eta)``, whose imaginary part is ``omega_r (1 + eta^2/8 + ...)``;
the receptance peak of such a mode lies at ``omega_r`` itself.

The time-domain analyses use the same models.  KED gives each kept mode of each frozen
structure the ratio :func:`modal_ratios`, ``zeta_r = zeta + eta/2 + psi_r^T C_ff psi_r /
(2 omega_r)`` (structural damping as its viscous equivalent at resonance, ``zeta = eta/2``);
the transient applies the material part as such and the modal part on the lowest modes of the
structure frozen along the path (:class:`Schedule`), so that both damp each mode alike.  The
modal part goes to the lowest :attr:`Damping.modes` modes in both (higher ones: Rayleigh
only).  A scenario states one model for all analyses (its ``[damping]`` table).

References
----------
D. J. Ewins, *Modal Testing*, 2nd ed., 2000, §2.3-2.6 (structural, proportional and
non-proportional damping; complex modes).
"""
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from sim.errors import SimError

KINDS = ("none", "structural", "rayleigh", "modal")
ELASTIC_SHARE_MIN = 0.01   # modes with less of their strain energy in the flexible bodies
#                            (mechanism modes on lumped springs) get no modal damping in the transient
SCHEDULE_FRAMES = 200      # most frozen structures for the transient's modal damping
SOLVE_GROWTH = 1e8         # modal_factor: a solution this much larger than the data came from a singular system
PROPORTIONAL_RTOL = 1e-8   # Caughey test: ||C M^-1 K - K M^-1 C|| relative to ||C M^-1 K||


@dataclass(frozen=True)
class Damping:
    """A damping model: the robot's one model, which every analysis applies (scenario table
    ``[damping]``, :meth:`from_table`).

    Attributes
    ----------
    eta : float
        Structural loss factor (``K (1 + i eta)``).
    alpha, beta : float
        Rayleigh coefficients [1/s, s].
    zeta : float or ndarray, shape (k,)
        Modal damping ratios (one for all modes, or per mode in ascending order; modes beyond
        the list take its last value).
    modes : int or None
        The lowest modes that carry ``zeta`` and ``eta`` in the time domain (:meth:`ratios`:
        KED's kept modes, the transient's :func:`schedule`); higher ones get the Rayleigh part
        only.  None: every mode.
    lumped : bool
        Include the viscous dampers of the model's springs and compliant actuators.
    """

    eta: float = 0.0
    alpha: float = 0.0
    beta: float = 0.0
    zeta: object = 0.0
    modes: object = None
    lumped: bool = True

    def __post_init__(self):
        for name in ("eta", "alpha", "beta"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value >= 0):
                raise SimError(f"damping `{name}` must be a finite number >= 0, got {value!r}")
        z = np.atleast_1d(np.asarray(self.zeta, dtype=float))
        if z.size == 0 or not np.all((z >= 0) & (z < 1)):
            raise SimError(f"damping `zeta` must be in [0, 1), got {self.zeta!r}")
        if self.modes is not None and not (isinstance(self.modes, (int, np.integer)) and self.modes > 0):
            raise SimError(f"damping `modes` must be a positive integer or None, got {self.modes!r}")

    @classmethod
    def from_table(cls, table):
        """From the scenario's ``[damping]`` table (``ratio``, ``eta``, ``rayleigh_alpha``,
        ``rayleigh_beta``, ``modes``)."""
        return cls(eta=table["eta"], alpha=table["rayleigh_alpha"], beta=table["rayleigh_beta"],
                   zeta=table["ratio"], modes=table["modes"])

    @property
    def modal(self):
        """Whether modal ratios or structural damping are set (damping defined on modes)."""
        return bool(self.eta or np.any(np.asarray(self.zeta) > 0))

    def per_mode(self, r):
        """The modal damping ratios of ``r`` ascending modes (r,): the list, its last value
        repeated."""
        z = np.atleast_1d(np.asarray(self.zeta, dtype=float))
        return z[np.minimum(np.arange(r), z.size - 1)]

    def ratios(self, omega):
        """``zeta_r + eta / 2`` per mode, ``omega`` (..., r) ascending: the modal part, zero
        beyond the lowest :attr:`modes`."""
        r = np.shape(omega)[-1]
        z = self.per_mode(r) + 0.5 * self.eta
        if self.modes is not None:
            z[self.modes:] = 0.0
        return np.broadcast_to(z, np.shape(omega))


@dataclass(frozen=True)
class Reduced:
    """The constrained linear system at a configuration.

    Attributes
    ----------
    N : ndarray, shape (n_v, n)
        Orthonormal basis of the admissible motions.
    M, K, C : ndarray, shape (n, n)
        Reduced mass, stiffness and lumped viscous damping.
    q : ndarray, shape (n_q,)
    model : Model
        Whose bodies :attr:`M_f` and :attr:`K_f` are reduced from.
    M_f, K_f : ndarray, shape (n, n)
        The flexible bodies' own ``M_ff``, ``K_ff`` (elastic coordinates only), reduced: the
        material Rayleigh damping is ``alpha M_f + beta K_f``.  Computed when first read (only
        Rayleigh damping reads them; on the servo KED's plants they were a fifth of its time).
    """

    N: np.ndarray
    M: np.ndarray
    K: np.ndarray
    C: np.ndarray
    q: np.ndarray
    model: object = field(repr=False, compare=False)

    @cached_property
    def _material(self):
        """``(M_f, K_f)``: each flexible body's blocks on its rows of ``N``."""
        n = self.N.shape[1]
        elastic, blocks = material_blocks(self.model)
        N_e = self.N[elastic]
        M_f, K_f = np.zeros((n, n)), np.zeros((n, n))
        for rows, M_b, K_b in blocks:
            M_f += N_e[rows].T @ (M_b @ N_e[rows])
            K_f += N_e[rows].T @ (K_b @ N_e[rows])
        return M_f, K_f

    M_f = property(lambda self: self._material[0])
    K_f = property(lambda self: self._material[1])


def reduce(model, q, locked=True):
    """Reduced matrices ``N^T M N``, ``N^T K N``, ``N^T C N`` at ``q`` (actuators locked).

    Parameters
    ----------
    model : Model
    q : ndarray, shape (n_q,)
    locked : bool

    Returns
    -------
    Reduced
    """
    from sim.model.dynamics import damping_matrix, mass_matrix, stiffness_matrix
    from sim.solvers.modal import constraint_null_space

    N = constraint_null_space(model, q, locked)
    free = N.shape == (model.n_v, model.n_v) and np.array_equal(N, np.eye(model.n_v))

    def project(X):
        X = X if free else N.T @ X @ N       # no constraint rows (springs only): N = 1
        return 0.5 * (X + X.T)                 # round-off asymmetry of N^T X N

    dampers = any(a.damping for a in model.actuators if a.stiffness is not None) or \
        bool(model.springs and np.any(model.spring_tables["C"]))
    C = project(damping_matrix(model, q)) if dampers else np.zeros((N.shape[1], N.shape[1]))
    return Reduced(N=N, M=project(mass_matrix(model, q)), K=project(stiffness_matrix(model, q)), C=C, q=q,
                   model=model)


def rayleigh(M, K, alpha, beta):
    """Rayleigh damping ``alpha M + beta K`` (n, n)."""
    return alpha * M + beta * K


def material_blocks(model):
    """The bodies' own mass and stiffness on the elastic coordinates, ``M_ee`` and ``K_ee``
    (n_e, n_e), by their diagonal blocks (one per flexible body; never formed whole, n_e^2):
    ``elastic`` (n_e,) the coordinates' indices in ``v``, and ``blocks``, per flexible body
    ``(rows, M_ff, K_ff)``, ``rows`` the slice of its coordinates among the n_e.  ``M_ff`` and
    ``K_ff`` (:class:`sim.model.sparse_rows.SparseRows`, by their rows' nonzeros) do not depend
    on the configuration (floating frame of reference)."""
    elastic, blocks, i = np.asarray(model.v_elastic, dtype=int), [], 0
    for body in model.bodies:
        if body.n_f:
            blocks.append((slice(i, i + body.n_f), body.mass_ff, body.stiffness_ff))
            i += body.n_f
    return elastic, blocks


def material_matrix(model, alpha, beta):
    """Rayleigh material damping of the flexible bodies, (n_v, n_v): ``alpha M_ff + beta K_ff``
    on each body's elastic coordinates (:func:`material_blocks`), zero on the reference
    coordinates: constant, it damps the deformation rates relative to the body frames only."""
    D = np.zeros((model.n_v, model.n_v))
    if alpha or beta:
        elastic, blocks = material_blocks(model)
        for rows, M_b, K_b in blocks:
            D[np.ix_(elastic[rows], elastic[rows])] = rayleigh(M_b.toarray(), K_b.toarray(), alpha, beta)
    return D


def modal_ratios(damping, omega, shapes, material):
    """Damping ratio of each mode of each frozen structure under ``damping``.

    ``zeta_r + eta / 2 + psi_r^T C_ff psi_r / (2 omega_r)``: the modal part, plus the diagonal
    of the material Rayleigh damping ``C_ff = alpha M_ff + beta K_ff`` in the modes (its exact
    share when the flexible bodies carry all the mass, and ``beta omega_r / 2`` when the
    elastic stiffness is all of ``K``).

    Parameters
    ----------
    damping : Damping
    omega : ndarray, shape (n, r)
        Circular frequencies [rad/s] (0 for unfilled rows).
    shapes : ndarray, shape (n, n_v, r)
        Mass-normalised mode shapes.
    material : tuple or None
        :func:`material_blocks` (read only where ``damping`` has a material part).

    Returns
    -------
    ndarray, shape (n, r)
    """
    zeta = np.array(damping.ratios(omega), dtype=float)
    if damping.alpha or damping.beta:
        elastic, blocks = material
        energy = np.zeros(np.shape(omega))
        for rows, M_b, K_b in blocks:
            X = shapes[:, elastic[rows], :]                                  # (n, n_f, r)
            energy += np.einsum("kfr,kfr->kr", X, damping.alpha * (M_b @ X) + damping.beta * (K_b @ X))
        zeta += np.divide(energy, 2 * omega, out=np.zeros_like(energy), where=omega > 0)
    return zeta


def modal_factor(shapes, mass_shapes, omega, blocks, elastic, J, M_r):
    """``F`` (n_e, r) with ``F diag(c) F^T`` the elastic-coordinate damping that gives each of
    the ``r`` modes exactly the modal damping ``c_r`` and the structure's other modes none
    wherever damping on the elastic coordinates can (``B_h^T F = delta_hr`` for all its modes
    ``h``, ``B_h`` their elastic rows): the modes beyond the kept ones carry the Rayleigh part
    only, as :attr:`Damping.modes` says.

    The structure's motions are lifted from their elastic parts: ``T u`` is the motion of
    least kinetic energy with elastic part ``u`` that its rows ``J`` admit (the reference
    coordinates ``o`` solve ``[[M_oo, J_o^T], [J_o, 0]] (v_o, lambda) = -(M_oe u, J_e u)``).
    Where the elastic part fixes the motion (no motion of the reference coordinates alone),
    ``T B_h = Phi_h``, so that ``F_0 = T^T M Phi`` gives ``B_h^T F_0 = Phi_h^T M Phi_r =
    delta_hr``; ``T^T g = g_e - M_eo x - J_e^T y`` with ``[[M_oo, J_o^T], [J_o, 0]] (x, y) =
    (g_o, 0)``, a system of the reference coordinates' size.  ``F = F_0 (B^T F_0)^-1`` then
    makes the kept modes' ``c_r`` exact also where motions of the reference coordinates alone
    (a strut's spin between spherical joints) couple to the modes, and the higher modes keep a
    little of it.  (The elastic block alone, ``M_ee B (B^T M_ee B)^-1``, spilled damping onto
    the higher modes through the reference coordinates' inertia: a ratio of 0.08 on the
    Delta's 1.3 kHz modes for 0.02 on its lowest 12, 17 on one of the Surgiscope's.)

    Acting on the elastic coordinates only, it leaves the rigid motion undamped.  Modes with
    less than ``ELASTIC_SHARE_MIN`` of their strain energy in the flexible bodies (the mechanism
    swinging on lumped springs, whose dampers are the springs') get a zero column.

    Parameters
    ----------
    shapes, mass_shapes : ndarray, shape (n_v, r)
        Mass-normalised modes ``Phi`` and ``M Phi``.
    omega : ndarray, shape (r,)
        [rad/s].
    blocks : list
        The bodies' ``(rows, M_ff, K_ff)`` (:func:`material_blocks`) on the elastic coordinates
        ``elastic`` (n_e,): the strain energies.
    J : ndarray, shape (n_c, n_v)
        The rows of the structure the modes are of (the joints', the locked actuators').
    M_r : ndarray, shape (n_v, n_o)
        The mass matrix's columns of the reference coordinates (the others than ``elastic``).
    """
    B = shapes[elastic]
    energy = np.zeros(B.shape[1])
    for rows, M_b, K_b in blocks:
        energy += np.einsum("fr,fr->r", B[rows], K_b @ B[rows])
    keep = energy >= ELASTIC_SHARE_MIN * omega**2
    F = np.zeros_like(B)
    if keep.any():
        other = np.ones(shapes.shape[0], dtype=bool)
        other[elastic] = False
        other = np.flatnonzero(other)
        n_o, n_c = other.size, J.shape[0]
        g = mass_shapes[:, keep]
        S = np.block([[M_r[other], J[:, other].T], [J[:, other], np.zeros((n_c, n_c))]])
        rhs = np.concatenate([g[other], np.zeros((n_c, g.shape[1]))])
        try:
            xy = np.linalg.solve(S, rhs)
        except np.linalg.LinAlgError:
            xy = None
        if xy is None or not np.abs(xy).max() * np.abs(S).max() <= SOLVE_GROWTH * np.abs(rhs).max():
            # redundant rows (a planar loop's out-of-plane ones) leave y free, and any y gives
            # the same B^T F_0: the least-squares one (ten times the solve's time)
            xy = np.linalg.lstsq(S, rhs, rcond=None)[0]
        F0 = g[elastic] - M_r[elastic] @ xy[:n_o] - J[:, elastic].T @ xy[n_o:]
        F[:, keep] = np.linalg.solve((B[:, keep].T @ F0).T, F0.T).T
    return F


class Schedule:
    """The transient's viscous damping ``D(t)`` (n_v, n_v): the constant material part plus the
    modal part of the structure frozen at the last instant ``t_k <= t`` (as KED's intervals).

    The integrator reads the modal part as its factors (a low-rank term, up to
    :data:`sim.solvers.integrators.RANK_MAX` modes): the dense :attr:`matrix` is formed only
    when asked for (memory quadratic in the coordinates).

    Parameters
    ----------
    base : ndarray, shape (n_v, n_v), or None
        Constant part (:func:`material_matrix`); None: none (``n_v`` then gives the size).
    elastic : ndarray of int, shape (n_e,)
    times : ndarray, shape (k,)
        Instants of the frozen structures [s], increasing, the first at the start.
    factors : ndarray, shape (k, n_e, r)
        :func:`modal_factor` of each.
    rates : ndarray, shape (k, r)
        ``2 zeta_r omega_r`` [1/s].
    n_v : int, optional
        Velocity coordinates, where ``base`` is None.

    Attributes
    ----------
    matrix : ndarray, shape (n_v, n_v)
        ``D`` at the instant of the last :meth:`at`, formed at the first access; updated in
        place from then on, so a solver holding it sees the new values.
    """

    def __init__(self, base, elastic, times, factors, rates, n_v=None):
        self.base, self.elastic = base, np.ix_(elastic, elastic)
        self.n_v = base.shape[0] if base is not None else int(n_v)
        self.times, self.factors, self.rates = times, factors, rates
        self._matrix = None
        self.index = -1
        self.at(times[0])

    @property
    def matrix(self):
        if self._matrix is None:
            self._matrix = np.zeros((self.n_v, self.n_v)) if self.base is None else self.base.copy()
            self._fill()
        return self._matrix

    def frame(self, t):
        """The frozen structure in force at ``t``: the index ``k`` of the last instant ``t_k <= t``."""
        return max(0, int(np.searchsorted(self.times, t, side="right")) - 1)

    def modal(self, t):
        """The modal part at ``t``: ``(F, rates)``, (n_e, r) and (r,), ``F diag(rates) F^T`` on
        the elastic coordinates (:meth:`frame`)."""
        k = self.frame(t)
        return self.factors[k], self.rates[k]

    def at(self, t):
        """Set the instant to ``t``: :attr:`index` (the frozen structure's), :attr:`matrix` ``D(t)``."""
        k = self.frame(t)
        if k != self.index:
            self.index = k
            if self._matrix is not None:
                self._fill()

    def _fill(self):
        F = self.factors[self.index]
        modal = (F * self.rates[self.index]) @ F.T
        self._matrix[self.elastic] = modal if self.base is None else self.base[self.elastic] + modal


def schedule(model, damping, times, qs):
    """:class:`Schedule` of ``damping`` along the rigid configurations ``qs`` (k, n_q) at
    ``times`` (k,), with modal damping on the lowest ``damping.modes`` modes (all when None;
    at most ``SCHEDULE_FRAMES`` evenly spaced structures); the constant material damping
    (n_v, n_v) when no modal damping is set, None when nothing is damped.  ``model``: the
    robot, or its evaluator where the caller holds one (the frames' in this thread,
    :func:`sim.model.evaluator.held`)."""
    from sim.model.evaluator import held

    model, ev = held(model)
    if not (damping.alpha or damping.beta or damping.modal) or not len(model.v_elastic):
        return None
    if not damping.modal:
        return material_matrix(model, damping.alpha, damping.beta)
    base = material_matrix(model, damping.alpha, damping.beta) if damping.alpha or damping.beta else None
    from sim.model.constraints import actuator_values
    from sim.solvers.frames import FRAME_CHUNK, FramePool, _workers
    from sim.solvers.modal import locked_jacobian

    n_e = len(model.v_elastic)
    pick = np.unique(np.linspace(0, len(times) - 1, min(len(times), SCHEDULE_FRAMES)).round().astype(int))
    count = n_e if damping.modes is None else min(int(damping.modes), n_e)
    zero = np.zeros(model.n_v)
    elastic, blocks = material_blocks(model)
    unit = np.zeros((FRAME_CHUNK, model.n_v, model.v_rigid.size))     # the mass matrix's reference columns
    unit[:, model.v_rigid, np.arange(model.v_rigid.size)] = 1.0
    factors, omega = np.zeros((pick.size, n_e, count)), np.zeros((pick.size, count))

    def take(start, frames, q):
        """The factors of frames ``start ..`` (at the configurations ``q``), as they come: the
        frames are not held (200 of the 3-RRRU with 64 elements per link: 52 MB); the mass
        matrix's columns, a chunk of them to a compiled call.  (In this thread, which
        computes no motion: its evaluator is free.)"""
        M_r = ev.mass_products(q, unit[:len(q)])
        for k in range(len(q)):
            E = ev.kinematics(q[k])
            factors[start + k] = modal_factor(frames.shapes[k], frames.mass_shapes[k], frames.omega[k], blocks,
                                              elastic, locked_jacobian(model, E.J, E.J_s), M_r[k])
        omega[start:start + len(q)] = frames.omega

    with FramePool(ev, count, pick.size, _workers(None, pick.size), take=take) as pool:
        for k in pick:
            pool.add(qs[k], zero, zero, actuator_values(model, qs[k])[0])
        pool.finish()
    rates = 2 * damping.ratios(omega) * omega
    return Schedule(base, elastic, np.asarray(times)[pick], factors, rates, model.n_v)


def rayleigh_coefficients(f1, f2, zeta1, zeta2):
    """Rayleigh ``(alpha, beta)`` giving ratios ``zeta1, zeta2`` at ``f1, f2`` [Hz].

    ``zeta(omega) = alpha / (2 omega) + beta omega / 2``.
    """
    w1, w2 = 2 * np.pi * f1, 2 * np.pi * f2
    A = np.array([[1 / (2 * w1), w1 / 2], [1 / (2 * w2), w2 / 2]])
    alpha, beta = np.linalg.solve(A, [zeta1, zeta2])
    return float(alpha), float(beta)


def modal_damping_matrix(M, shapes, omega, zeta):
    """``M Phi diag(2 zeta omega) Phi^T M`` (n, n) for mass-normalised ``shapes`` (n, k)."""
    MP = M @ shapes
    return (MP * (2 * np.asarray(zeta) * np.asarray(omega))) @ MP.T


def undamped_modes(red):
    """Eigenpairs of ``(K_n, M_n)``: ``omega`` (n,) [rad/s] ascending, mass-normalised ``X`` (n, n)."""
    import scipy.linalg
    lam, X = scipy.linalg.eigh(red.K, red.M)
    return np.sqrt(np.maximum(lam, 0.0)), X


def viscous_matrix(red, damping, omega=None, X=None):
    """Total viscous damping ``C_n`` (n, n): lumped + Rayleigh material + modal ratios."""
    C = red.C.copy() if damping.lumped else np.zeros_like(red.M)
    if damping.alpha or damping.beta:
        C += rayleigh(red.M_f, red.K_f, damping.alpha, damping.beta)
    if np.any(np.asarray(damping.zeta) > 0):
        if omega is None:
            omega, X = undamped_modes(red)
        C += modal_damping_matrix(red.M, X, omega, damping.per_mode(omega.size))
    return C


def is_proportional(M, C, K, rtol=PROPORTIONAL_RTOL):
    """Caughey–O'Kelly test: ``C M^-1 K`` symmetric means the undamped modes diagonalise ``C``."""
    if not np.any(C):
        return True
    A = C @ np.linalg.solve(M, K)
    return np.linalg.norm(A - A.T) <= rtol * max(np.linalg.norm(A), 1e-300)


@dataclass(frozen=True)
class ComplexModes:
    """Complex modes of ``M x'' + C x' + K (1 + i eta) x = 0``, one per conjugate pair.

    Attributes
    ----------
    eigenvalues : ndarray, shape (k,)
        ``lambda_r`` with ``Im >= 0``, by increasing ``|Im|`` [rad/s].
    frequencies_hz : ndarray, shape (k,)
        Undamped-equivalent ``|lambda_r| / 2 pi``.
    damped_hz : ndarray, shape (k,)
        ``|Im lambda_r| / 2 pi``.
    ratios : ndarray, shape (k,)
        ``-Re lambda_r / |lambda_r|`` (viscous ratio; ~eta/2 for structural damping).
    shapes : ndarray, shape (n, k)
        Displacement part of the right eigenvectors, unit-norm, largest entry real and positive
        (:func:`sim.solvers.modal.phased`).
    """

    eigenvalues: np.ndarray
    frequencies_hz: np.ndarray
    damped_hz: np.ndarray
    ratios: np.ndarray
    shapes: np.ndarray


def state_space(M, C, K, eta=0.0):
    """State matrix ``A`` (2n, 2n) (complex when ``eta > 0``) and input map ``[0; M^-1]`` (2n, n)."""
    n = M.shape[0]
    Minv = np.linalg.inv(M)
    Kc = K * (1 + 1j * eta) if eta else K
    A = np.block([[np.zeros((n, n)), np.eye(n)], [-Minv @ Kc, -Minv @ C]])
    return A, np.vstack([np.zeros((n, n)), Minv])


def complex_modes(M, C, K, eta=0.0):
    """Complex modes by the state-space eigenproblem (``scipy.linalg.eig``).

    Parameters
    ----------
    M, C, K : ndarray, shape (n, n)
        Reduced mass, viscous damping and stiffness.
    eta : float
        Structural loss factor.

    Returns
    -------
    ComplexModes
    """
    import scipy.linalg
    n = M.shape[0]
    A, _ = state_space(M, C, K, eta)
    lam, Z = scipy.linalg.eig(A)
    return from_eigenpairs(lam, Z[:n])


def from_eigenpairs(lam, Z):
    """`ComplexModes` from eigenvalues (m,) and displacement parts of eigenvectors (n, m).

    Keeps one eigenvalue of each conjugate pair (``Im > 0``), by increasing ``|Im|``; real roots
    (overdamped or free motions) are not vibration modes and are left out.
    """
    lam = np.asarray(lam, dtype=complex)
    # One of each conjugate pair: Im > 0.
    keep = np.where(lam.imag > 1e-9 * np.abs(lam).max(initial=1.0))[0]
    order = keep[np.argsort(np.abs(lam[keep].imag))]
    from sim.solvers.modal import phased

    lam, shapes = lam[order], phased(np.asarray(Z, dtype=complex)[:, order])
    mag = np.abs(lam)
    return ComplexModes(eigenvalues=lam, frequencies_hz=mag / (2 * np.pi), damped_hz=np.abs(lam.imag) / (2 * np.pi),
                        ratios=-lam.real / np.maximum(mag, 1e-300), shapes=shapes)
