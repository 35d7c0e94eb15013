r"""Kineto-elastodynamics with the robot closed by its servo drives.

The locked KED (:mod:`sim.solvers.modal_stepping`) keeps the elastic motion ``u`` in the null space of
the joints' and the actuators' rows: the drives are rigid.  Here the actuators are free and
their servos (:mod:`sim.solvers.closed_loop`) hold them; ``u`` is the motion away from the rigid
robot that follows the references exactly, on the joints' null space ``N`` and, behind a
compliant transmission, the motor's own coordinate (the plant's ``x``,
:func:`sim.solvers.closed_loop.plant`).  Linearised about the rigid motion ``(q_r, v_r, a_r)``
with the servo law written for the deviation ``delta = theta - r`` of the motor angles from
their references (``z`` the integral of the PD torque from ``z(0) = 0``, ``y`` the closed
loop's integral state of :func:`sim.solvers.closed_loop.closed_loop`):

    M x'' + (C + P^T Kv P) x' + (K + P^T (Kp + Ki Kv) P) x - P^T Ki y = L(t),     y' = -Kp P x,

    L = N^T (Q - M_v a_r) - S^T (n^2 J_m) r'' + P^T (g tau_ff + Kv (f - 1) (r' + Ki (r - r_0))),

``Q - M_v a_r`` the d'Alembert load of the locked KED, whose share along the free actuators is
minus the torques the rigid motion needs (``N^T`` keeps it: the actuators' rows are not
projected out); the rotors' inertia (on the motor coordinate behind a transmission); and what
the servo adds to its feedback: the torque feedforward ``g tau_ff`` (the rigid inverse dynamics)
and, without velocity feedforward (``f = 0``), the reference's rate that the velocity loop
opposes.  With both feedforwards the servo supplies exactly the rigid motion's torques and
``L`` is the structure's inertial load alone; without them the servo lags until its error
makes the torque (``r' / kp`` on a ramp).

The trajectory is cut into intervals, as in the locked KED; on each the matrices are frozen at
its start and reduced to the lowest ``r`` undamped modes ``Phi`` of the robot held by its
servo springs (``(K + P^T (Kp + Ki Kv) P) Phi = M Phi Omega^2``), damping kept as the full
projected matrix ``Phi^T C_c Phi`` (the servo's damper ``kv`` does not keep the modes real),
the integral states beside them.  The first-order system ``X' = A X + b(t)``, ``X = (eta,
eta', y)``, is advanced exactly under the load linear over the interval (the exponential of
the augmented matrix, Van Loan 1978), and the state passes to the next interval's modes by
mass projection.  The truncated modes respond quasi-statically (mode acceleration:
``K_c^-1 - Phi Omega^-2 Phi^T`` applied to ``L + P^T Ki y``).  The damping is the servo
transient's: lumped dampers and Rayleigh material damping, and the modal ratios (``zeta``,
``eta / 2``) on the lowest ``modes`` modes of the structure, actuators locked, frozen along the
path (:func:`sim.solvers.damping.schedule`: an elastic-coordinate damping matrix), projected on
the plant's coordinates; the torque limit is not applied (a linear analysis).

References
----------
C. F. Van Loan, "Computing integrals involving the matrix exponential", IEEE Trans. Automatic
Control 23 (1978) 395-404.
"""
from dataclasses import dataclass

import numpy as np

import scipy.sparse as sparse
import scipy.sparse.linalg as splinalg

from sim.errors import SimError
from sim.solvers import closed_loop as sv
from sim.solvers.damping import Schedule, schedule
from sim.solvers.modal import signs

FREE_RTOL = 1e-10   # an eigenvalue of (K_c, M) below this share of trace(K_c) / trace(M): a free motion
FREE_SHIFT = 1.0    # 1/s^2: the shift (0.16 Hz) at which the sparse structure finds the free motions, far below
#                     any servo-held mode's eigenvalue and far above the free ones' round-off
SPARSE_MIN = 300    # velocity coordinates from which the frozen structures are solved sparse (_Sparse; the
#                     3-RRRU's KED: 2.8 dense against 3.6 s at 204, 6.5 against 4.2 s at 348, 27.9 against 6.0 at 636)
CLOSED_MIN = 160    # ... and the closed-loop modes of [frequencies] (a sample of the 3-RRRU: 15 dense against
#                     18 ms at 132, 51 against 22 ms at 204, 270 against 33 ms at 348)


@dataclass(frozen=True)
class ServoFrames:
    """The frozen closed-loop structures at ``n`` instants, stacked on the first axis, in the
    extended velocity space ``(v, theta_c)`` (n_x = n_v + the compliant actuators' motors).

    Attributes
    ----------
    load, rest : ndarray, shape (n, n_x)
        ``L(t_k)`` and the load at rest at the same pose (gravity, preloads, the torque
        feedforward at rest), as generalised forces [N, N m].
    omega : ndarray, shape (n, r)
        Undamped circular frequencies of the robot held by its servo springs [rad/s].
    shapes, mass_shapes : ndarray, shape (n, n_x, r)
        Their mass-normalised shapes ``Psi`` and ``M~ Psi`` (``eta = Psi^T M~ u``), signed
        along the motion by :func:`sim.solvers.modal.signs`.
    damping : ndarray, shape (n, r, r)
        ``Psi^T C_c Psi`` (plus ``eta omega`` on the diagonal).
    integral : ndarray, shape (n, r, ny)
        ``Phi^T P^T Ki``: modal forces per integral state.
    rates : ndarray, shape (n, ny, n_x)
        ``-Kp P``: the integral states' rates per displacement.
    static_load : ndarray, shape (n, n_x)
        ``K_c^-1 L``.
    static_integral : ndarray, shape (n, n_x, ny)
        ``K_c^-1 P^T Ki``.
    static_rest : ndarray, shape (n, n_x)
        The equilibrium at rest (integral states included where ``ki > 0``).
    y_rest : ndarray, shape (n, ny)
        Its integral states.
    forcing : ndarray, shape (n, n_a)
        The servo's own torques along the rigid motion, ``g tau_ff + Kv (f - 1) (r' + Ki (r - r_0))``.
    pose_jacobian : ndarray, shape (n, d, n_v)
    joints, motors : ndarray, shape (n, n_a, n_x)
        Rows giving the actuators' joint coordinates ``s - r`` and motor angles ``theta - r``
        (joint units) of a displacement.
    lag : ndarray, shape (n, d, n_a)
        :func:`sim.solvers.closed_loop.lag_gain`.
    """

    load: np.ndarray
    rest: np.ndarray
    omega: np.ndarray
    shapes: np.ndarray
    mass_shapes: np.ndarray
    damping: np.ndarray
    integral: np.ndarray
    rates: np.ndarray
    static_load: np.ndarray
    static_integral: np.ndarray
    static_rest: np.ndarray
    y_rest: np.ndarray
    forcing: np.ndarray
    pose_jacobian: np.ndarray
    joints: np.ndarray
    motors: np.ndarray
    lag: np.ndarray

    @classmethod
    def one(cls, values):
        """The frames of one instant from its fields' ``values`` (a dict, each without the
        leading axis)."""
        return cls(**{name: np.asarray(values[name], dtype=float)[None] for name in cls.__dataclass_fields__})

    @classmethod
    def stack(cls, frames):
        """The ``frames`` (a sequence of :class:`ServoFrames`) as one, in order."""
        if not frames:
            return cls(**{name: np.zeros(0) for name in cls.__dataclass_fields__})
        return cls(**{name: np.concatenate([getattr(f, name) for f in frames]) for name in cls.__dataclass_fields__})

    def __len__(self):
        return len(self.omega)

    def __iter__(self):
        """Each instant's frames (views), in order."""
        for k in range(len(self)):
            yield ServoFrames(**{name: getattr(self, name)[k:k + 1] for name in self.__dataclass_fields__})

    def system(self, k, C=None):
        """``A`` (2r + ny, 2r + ny) of frame ``k``: states ``(eta, eta', y)``.  The integrals
        act on the whole displacement, the truncated modes' quasi-static part ``C y`` (and
        ``c``, a load: :meth:`correction`) included: otherwise they would wind up against
        the part of the static deflection the kept modes miss.  ``C``: the frame's
        :meth:`correction` ``C`` where the caller has it."""
        r, ny = self.omega.shape[1], self.rates.shape[1]
        A = np.zeros((2 * r + ny, 2 * r + ny))
        A[:r, r:2 * r] = np.eye(r)
        A[r:2 * r, :r] = -np.diag(self.omega[k] ** 2)
        A[r:2 * r, r:2 * r] = -self.damping[k]
        A[r:2 * r, 2 * r:] = self.integral[k]
        A[2 * r:, :r] = self.rates[k] @ self.shapes[k]
        A[2 * r:, 2 * r:] = self.rates[k] @ (self.correction(k)[1] if C is None else C)
        return A

    def correction(self, k):
        """The truncated modes' quasi-static displacement at frame ``k``: ``(c, C)`` with
        ``u_high = c + C y``, (n_x,) and (n_x, ny)."""
        w2 = self.omega[k] ** 2
        psi = self.shapes[k]
        return (self.static_load[k] - psi @ ((psi.T @ self.load[k]) / w2),
                self.static_integral[k] - psi @ (self.integral[k] / w2[:, None]))


class _Sparse:
    """The frozen structure held by the servos in the velocity coordinates, sparse: the
    joints' rows ``J`` stay rows of a saddle-point matrix instead of being reduced away on a
    null-space basis ``N``, so that nothing of size n_v^2 is factorised or multiplied densely.

    On the extended coordinates ``(v, theta_c)`` (the compliant actuators' motor angles after
    the velocities, as :class:`ServoFrames`), with ``J_r``, ``J_c`` the rigid and compliant
    actuators' rows, ``k``, ``c`` the transmissions' spring and damper (whose ``k J_c^T J_c``,
    ``c J_c^T J_c`` the model's ``K``, ``C`` hold already, the motor locked), the servos' springs
    and dampers ``kv kp + ki kv``, ``kv`` (:func:`sim.solvers.closed_loop.servo_rates`) on the
    motor angles and the rotors ``I``, the plant's matrices are ``N^T X N`` of

        K_c = [[K + J_r^T diag(kv kp + ki kv) J_r, -J_c^T diag(k)], [-diag(k) J_c, diag(k + kv kp + ki kv)]],
        M_c = [[M + J_r^T diag(I) J_r, 0], [0, diag(I)]],
        C_c = [[C + J_r^T diag(kv) J_r, -J_c^T diag(c)], [-diag(c) J_c, diag(c + kv)]],

    ``N`` the dense path's orthonormal basis of the admissible motions extended by the motor
    angles (which no joint row holds).  Its modes ``Phi`` give the shapes ``psi = N Phi`` that
    solve ``K_c psi = M_c psi omega^2 + J^T mu``, ``J psi = 0``; its static solutions ``N (N^T
    K_c N)^-1 N^T f`` are the saddle point's ``[[K_c, J^T], [J, 0]] (u, mu) = (f, 0)``; its rest
    with integral states the saddle point with the integral axes' rows ``P_y`` (the motor
    angles') locked too, their multipliers ``-diag(ki) y``; and ``Phi^T X Phi = psi^T X psi``.
    The modes come from shift-invert Lanczos at 0 (``scipy.sparse.linalg.eigsh``) with the
    saddle point's sparse LU as the inverse: ``S M_c``, ``S = N (N^T K_c N)^-1 N^T``, is
    self-adjoint in the ``M_c`` inner product and zero off the admissible motions.
    """

    def __init__(self, model, servo, damping, modal, elastic, free=0):
        from sim.model.tables import stretched
        self.model, self.servo, self.damping, self.modal, self.elastic = model, servo, damping, modal, elastic
        self.free = int(free)
        acts = model.actuators
        self.comp = np.flatnonzero([a.stiffness is not None for a in acts])
        self.rigid = np.flatnonzero([a.stiffness is None for a in acts])
        self.inertia = np.array([a.reflected_inertia for a in acts])
        self.k = np.array([acts[i].stiffness for i in self.comp], dtype=float)
        self.c = np.array([acts[i].damping for i in self.comp], dtype=float)
        self.n_x = model.n_v + self.comp.size
        self.spring, self.damper = sv.servo_rates(servo)
        self.y = np.flatnonzero(servo.ki > 0)
        # The bodies' K_ff (the stiffness where it does not depend on the configuration: no
        # springs, no geometric stiffening; the compliant drives' k J_c^T J_c and c J_c^T J_c
        # added by their rows) and the Rayleigh material damping, by entries.
        self.lumped = bool(model.springs) or bool(stretched(model))
        self.K_ff = _material(model, 0.0, 1.0)
        self.rayleigh = _material(model, damping.alpha, damping.beta) if damping.alpha or damping.beta else None

    def motors(self, J_s):
        """:func:`motor_rows` of the actuators' rows ``J_s`` (n_a, n_v)."""
        return motor_rows(J_s, self.comp)

    def mass(self, e, X):
        """:func:`mass_product` at the evaluation ``e``."""
        return mass_product(e, X, self.inertia, self.comp)

    def held(self, q, t, e, J):
        """The structure held by the servos at ``q`` (time ``t`` for the messages; ``e`` the
        evaluation there, ``J`` the joints' rows (n_j, n_v)): ``K_c``, ``M_c`` (sparse, n_x x
        n_x), the static solution ``static(F)`` (F (n_x, ...) -> (n_x, k)) and the damping's
        product ``damp(X)`` = ``C_c X`` (X (n_x, k)): lumped, Rayleigh, the modal ratios of the
        locked structure's schedule, the transmissions' dampers and the servos'."""
        from sim.model.dynamics import damping_matrix, stiffness_matrix
        model, n_v, n_x = self.model, self.model.n_v, self.n_x
        r, cp = self.rigid, self.comp
        J_r, J_c = sparse.csr_matrix(e.J_s[r]), sparse.csr_matrix(e.J_s[cp])
        if self.lumped:
            K = sparse.csr_matrix(stiffness_matrix(model, q))
        else:
            K = self.K_ff + J_c.T @ sparse.diags(self.k) @ J_c
        K_vv = K + J_r.T @ sparse.diags(self.spring[r]) @ J_r
        M_vv = sparse.csr_matrix(e.M) + J_r.T @ sparse.diags(self.inertia[r]) @ J_r
        if cp.size:
            couple = -(J_c.T @ sparse.diags(self.k))
            Kc = sparse.bmat([[K_vv, couple], [couple.T, sparse.diags(self.k + self.spring[cp])]])
            Mc = sparse.block_diag([M_vv, sparse.diags(self.inertia[cp])])
        else:
            Kc, Mc = K_vv, M_vv
        Kc, Mc = (0.5 * (Kc + Kc.T)).tocsc(), (0.5 * (Mc + Mc.T)).tocsc()
        Jj = sparse.hstack([sparse.csr_matrix(J), sparse.csr_matrix((J.shape[0], cp.size))]).tocsr()
        if self.free:   # the free motions' M_c W as rows beside the joints' (their share of a load taken out)
            Jj = sparse.vstack([Jj, sparse.csr_matrix(self._free_motions(Kc, Mc, Jj, t).T)]).tocsr()
        n_j = Jj.shape[0]
        lu = _saddle(Kc, Jj, t)

        def static(F):
            """``N (N^T K_c N)^-1 N^T F`` (with free motions ``W``: on their ``M_c``-orthogonal
            complement, ``F``'s share ``M_c W W^T F`` out), F (n_x, ...) -> (n_x, k)."""
            F = F.reshape(n_x, -1)
            if not F.shape[1]:
                return F.copy()
            return lu.solve(np.vstack([F, np.zeros((n_j, F.shape[1]))]))[:n_x]

        C = None
        if self.damping.lumped and self.lumped:
            C = damping_matrix(model, q)
            C = C if C.any() else None
        elif self.damping.lumped and self.c.any():
            C = J_c.T @ sparse.diags(self.c) @ J_c
        F, rates = self.modal.modal(t) if isinstance(self.modal, Schedule) else (None, None)
        J_s = sparse.csr_matrix(e.J_s)
        P = sparse.csr_matrix(self.motors(e.J_s))

        def damp(X):
            """``C_c X``, X (n_x, k) -> (n_x, k)."""
            out = P.T @ (self.damper[:, None] * (P @ X))
            V = X[:n_v]
            if C is not None:
                out[:n_v] += C @ V
            if self.rayleigh is not None:
                out[:n_v] += self.rayleigh @ V
            if F is not None:
                out[self.elastic] += F @ (rates[:, None] * (F.T @ V[self.elastic]))
            if cp.size:     # the transmissions' dampers between the motors and the joints
                out[:n_v] -= J_s[cp].T @ (self.c[:, None] * X[n_v:])
                out[n_v:] += self.c[:, None] * (X[n_v:] - J_s[cp] @ V)
            return out

        return Kc, Mc, static, damp

    def _free_motions(self, Kc, Mc, Jj, t):
        """``M_c W`` (n_x, free) of the free motions ``W`` (``M_c``-orthonormal; struts spinning
        between spherical joints: admissible motions of no stiffness), the ``free`` eigenvectors
        of least eigenvalue by shift-invert Lanczos at ``-FREE_SHIFT`` (the saddle point of ``K_c
        + FREE_SHIFT M_c`` is regular where ``K_c``'s is not); :class:`SingularSaddle` where they
        are not free (the dense plant then decides)."""
        n_x = Kc.shape[0]
        lu = _saddle(Kc + FREE_SHIFT * Mc, Jj, t)
        n_j = Jj.shape[0]
        op = splinalg.LinearOperator((n_x, n_x), matvec=lambda x: lu.solve(np.concatenate([x, np.zeros(n_j)]))[:n_x],
                                     dtype=float)
        lam, W = splinalg.eigsh(Kc, k=self.free, M=Mc, sigma=-FREE_SHIFT, OPinv=op, which="LM")
        if not np.abs(lam).max() < FREE_RTOL * Kc.diagonal().sum() / Mc.diagonal().sum():
            raise SingularSaddle(f"the robot held by its servos at t = {t:.6g} s: its {self.free} free motions are "
                                 f"not (eigenvalues up to {np.abs(lam).max():.3g} 1/s^2)")
        MW = Mc @ W
        return MW @ np.linalg.inv(np.linalg.cholesky(W.T @ MW)).T      # M_c W', W' = W L^-T M_c-orthonormal

    def frame(self, q, t, e, J, count):
        """The ``count`` lowest modes at ``q`` (:meth:`held`'s arguments): ``omega`` (r,), ``psi``
        (n_x, r) mass-normalised, ``psi^T C_c psi`` (r, r), and the static solution ``static``.

        Raises ``scipy.sparse.linalg.ArpackNoConvergence`` where Lanczos does not converge."""
        n_x = self.n_x
        Kc, Mc, static, damp = self.held(q, t, e, J)
        op = splinalg.LinearOperator((n_x, n_x), matvec=lambda x: static(x)[:, 0], dtype=float)
        lam, psi = splinalg.eigsh(Kc, k=int(count), M=Mc, sigma=0.0, OPinv=op, which="LM")
        order = np.argsort(lam)
        lam, psi = lam[order], psi[:, order]
        if not lam[0] > FREE_RTOL * Kc.diagonal().sum() / Mc.diagonal().sum():
            raise SimError(f"the robot held by its servos at t = {t:.6g} s has a free motion "
                           f"(eigenvalue {lam[0]:.3g} 1/s^2): a motion no actuator or structure holds")
        psi = psi / np.sqrt(np.einsum("ik,ik->k", psi, Mc @ psi))      # mass-normalised
        Cc = psi.T @ damp(psi)
        return np.sqrt(lam), psi, 0.5 * (Cc + Cc.T), static

    def closed(self, q, t, e, J, count):
        """The ``count`` lowest complex modes of the closed loop at ``q`` (:meth:`held`'s
        arguments): eigenvalues ``lambda`` (k,) with ``Im > 0`` by increasing ``|lambda|``
        (``k <= count``: fewer where the closed loop has fewer), and the shapes' coordinate
        parts ``u`` (n_x, k), unit norm, the largest entry real and positive
        (:func:`sim.solvers.modal.phased`).

        The first-order system of :func:`sim.solvers.closed_loop.closed_loop` on ``z = (u, w,
        y)`` (``w = u'``, the integral states) with the joints' rows kept: its inverse maps
        ``(a, b, c)`` to ``w = a`` and the saddle point ``K_c u + J^T mu - P_y^T Ki y = -(M_c b
        + C_c a)``, ``J u = 0``, ``-Kp P_y u = c`` (as :meth:`rest`: one solve and an ny x ny
        system).  Arnoldi on that inverse (``scipy.sparse.linalg.eigs``) finds the eigenvalues
        of least modulus; the directions off the admissible motions have none (``1 / lambda =
        0``).

        Raises ``scipy.sparse.linalg.ArpackNoConvergence`` where Arnoldi does not converge."""
        from sim.solvers.modal import phased
        n_x = self.n_x
        Kc, Mc, static, damp = self.held(q, t, e, J)
        y = self.y
        ny = y.size
        J_y = self.motors(e.J_s)[y]
        kp, ki = (self.servo.kv * self.servo.kp)[y], self.servo.ki[y]
        SJ = static(J_y.T)
        G = J_y @ SJ

        def inverse(z):
            a, b, c = z[:n_x], z[n_x:2 * n_x], z[2 * n_x:]
            Sf = static(-(Mc @ b + damp(a[:, None])[:, 0]))[:, 0]
            if not ny:
                return np.concatenate([Sf, a])
            nu = np.linalg.solve(G, J_y @ Sf + c / kp)
            return np.concatenate([Sf - SJ @ nu, a, -nu / ki])

        size = 2 * n_x + ny
        op = splinalg.LinearOperator((size, size), matvec=inverse, dtype=float)
        k = min(2 * int(count) + ny + 4, size - 2)
        while True:
            mu, V = splinalg.eigs(op, k=k, which="LM")
            lam = 1.0 / mu
            scale = max(np.abs(lam).max(), 1.0)
            pair = np.flatnonzero(lam.imag > 1e-9 * scale)
            # enough pairs below the largest modulus found (its partner may be missing)
            inner = pair[np.abs(lam[pair]) < np.abs(lam).max() * (1 - 1e-9)]
            if inner.size >= count or k >= size - 2:
                break
            k = min(2 * k, size - 2)
        order = inner[np.argsort(np.abs(lam[inner]))][:int(count)]
        return lam[order], phased(V[:n_x, order])

    def rest(self, static, J_y, f):
        """The equilibrium at rest under ``f`` (n_x,) with the integral axes' rows ``J_y``
        (ny, n_x) locked too, from :meth:`frame`'s ``static``: ``(x, y)``.  ``K_c x + J^T mu -
        J_y^T diag(ki) y = f``, ``J x = 0``, ``J_y x = 0``: with ``nu = -diag(ki) y``, ``x = S (f
        - J_y^T nu)`` and ``(J_y S J_y^T) nu = J_y S f`` (ny x ny; no second factorisation)."""
        Sf, SJ = static(f)[:, 0], static(J_y.T)
        nu = np.linalg.solve(J_y @ SJ, J_y @ Sf)
        return Sf - SJ @ nu, -nu / self.servo.ki[self.y]


def mass_product(e, X, inertia, compliant):
    """``M_c X`` (n_x, k) in the extended coordinates ``(v, theta_c)``, X (n_x, k): the mass
    matrix of the evaluation ``e`` with the rotors ``inertia`` (n_a,) on the rigid actuators'
    rows ``J_r`` and on the compliant ones' motor angles (``compliant``: their indices)."""
    n_v = e.M.shape[0]
    rigid = np.setdiff1d(np.arange(len(inertia)), compliant)
    J_r = e.J_s[rigid]
    return np.concatenate([e.M @ X[:n_v] + J_r.T @ (inertia[rigid, None] * (J_r @ X[:n_v])),
                           inertia[compliant, None] * X[n_v:]])


def motor_rows(J_s, compliant):
    """``P`` (n_a, n_v + n_c): the motor angles (joint units) of a displacement in the extended
    coordinates ``(v, theta_c)``, from the actuators' rows ``J_s`` (n_a, n_v): a rigid
    transmission's is its joint row, a compliant one's its motor coordinate (``compliant``
    (n_c,): their indices, in the motor coordinates' order)."""
    n_a, n_v = J_s.shape
    P = np.zeros((n_a, n_v + len(compliant)))
    P[:, :n_v] = J_s
    P[compliant] = 0.0
    P[compliant, n_v + np.arange(len(compliant))] = 1.0
    return P


class SingularSaddle(SimError):
    """The joints' saddle point of the servo-held structure is singular: a motion no actuator or
    structure holds (where the free motions counted at the start do not account for it)."""


def _saddle(Kc, Jj, t):
    """Sparse LU of ``[[K_c, J^T], [J, 0]]`` (time ``t`` for the message)."""
    try:
        return splinalg.splu(sparse.bmat([[Kc, Jj.T], [Jj, None]], format="csc"))
    except RuntimeError:
        raise SingularSaddle(f"the robot held by its servos at t = {t:.6g} s has a free motion (its saddle-point "
                             f"matrix is singular): a motion no actuator or structure holds") from None


def sparse_structure(model, servo, damping, modal, q, count, least=None, free=None):
    """:class:`_Sparse` where the frozen structures held by ``servo`` are solved sparse, else
    None: from ``least`` velocity coordinates (default :data:`SPARSE_MIN`), with independent
    joint rows at ``q`` (n_q,) (the saddle point is then regular; redundant rows keep the dense
    plant, whose null-space basis ignores them), rotors behind the compliant transmissions
    (else the dense plant says what is missing) and ``count`` modes fewer than half the
    admissible motions (Lanczos and Arnoldi find fewer than all of them); free motions are
    left out (:meth:`_Sparse._free_motions`; ``free``: their number where the caller has it).
    ``modal``: the locked structure's :class:`sim.solvers.damping.Schedule` along the path,
    where the damping has a modal part.  ``model``: the robot, or its evaluator where the
    caller holds one (:func:`sim.model.evaluator.held`)."""
    from sim.model.evaluator import held
    from sim.solvers.modal import constraint_jacobian, constraint_null_space
    model, ev = held(model)
    if model.n_v < (SPARSE_MIN if least is None else least):
        return None
    if any(a.stiffness is not None and not a.reflected_inertia > 0 for a in model.actuators):
        return None
    rows = constraint_jacobian(model, q, locked=False).shape[0]
    admissible = constraint_null_space(model, q, False).shape[1]
    motors = sum(a.stiffness is not None for a in model.actuators)
    if model.n_v - admissible != rows or not int(count) < (admissible + motors) // 2:
        return None
    free = sv.free_motions(ev, q) if free is None else free
    return _Sparse(model, servo, damping, modal, np.asarray(model.v_elastic, dtype=int), free)


def _material(model, alpha, beta):
    """``alpha M_ff + beta K_ff`` of the flexible bodies on their elastic coordinates, sparse
    (n_v, n_v) (:func:`sim.solvers.damping.material_blocks`)."""
    from sim.solvers.damping import material_blocks
    elastic, blocks = material_blocks(model)
    rows, cols, values = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)], [np.zeros(0)]
    for part, M_b, K_b in blocks:
        at = elastic[part]
        for X, c in ((M_b, alpha), (K_b, beta)):
            if c:
                i, j, v = X.entries()
                rows.append(at[i])
                cols.append(at[j])
                values.append(c * v)
    return sparse.csr_matrix((np.concatenate(values), (np.concatenate(rows), np.concatenate(cols))),
                             shape=(model.n_v, model.n_v))


def servo_frames(model, motion, servo, damping, count, torque=None, torque_rest=None, progress=None):
    """:class:`ServoFrames` at the samples of ``motion``, all of them: :func:`frame_stream`'s,
    stacked (same arguments)."""
    return ServoFrames.stack(list(frame_stream(model, motion, servo, damping, count, torque, torque_rest, progress)))


def frame_stream(model, motion, servo, damping, count, torque=None, torque_rest=None, progress=None):
    """The frozen structures held by the servos at the samples of ``motion``
    (:class:`sim.solvers.motion.RigidMotion`), one at a time: a :class:`ServoFrames` of one
    instant each, in time order (a consumer such as :class:`ServoSteps` holds none of them
    for long: 0.4 MB each on the 3-RRRU with 64 elements per link).

    Parameters
    ----------
    model : Model or sim.model.evaluator.Evaluator
        The robot, or its evaluator where the caller holds one (:func:`sim.model.evaluator.held`).
    motion : RigidMotion
        ``n`` samples; its actuators are the servos' references.
    servo : sim.solvers.closed_loop.Servo
    damping : sim.solvers.damping.Damping
    count : int
        Modes kept (at most the plant's coordinates).
    torque, torque_rest : ndarray, shape (n, n_a), optional
        The rigid inverse dynamics' actuator forces along the motion and at rest at its poses
        (needed with torque feedforward).
    progress : tqdm-like, optional

    Raises
    ------
    SimError
        Where the robot held by its servos has a free motion (naming the time).

    Notes
    -----
    From :data:`SPARSE_MIN` velocity coordinates, with independent joint rows, each instant is
    solved sparse (:class:`_Sparse`: the joints' saddle point,
    about linear in the coordinates); else densely on the plant's null-space basis
    (:func:`sim.solvers.closed_loop.plant`, about cubic).  The two agree to round-off
    (``tests/test_ked_servo.py``).
    """
    import scipy.linalg

    from sim.model.evaluator import held
    from sim.solvers.modal import constraint_jacobian

    model, ev = held(model)
    n, n_v, n_a = len(motion.t), model.n_v, len(model.actuators)
    g, f = servo.torque, servo.velocity
    if g.any() and (torque is None or torque_rest is None):
        raise SimError("servo feedforward \"velocity+torque\" needs the rigid inverse dynamics")
    acts = model.actuators
    comp = np.flatnonzero([a.stiffness is not None for a in acts])
    rigid = np.flatnonzero([a.stiffness is None for a in acts])
    inertia = np.array([a.reflected_inertia for a in acts])
    n_c = comp.size
    n_x = n_v + n_c
    y = np.flatnonzero(servo.ki > 0)
    ny = y.size
    PKi = servo.ki[y]
    angle = np.array([a.kind == "angle" for a in acts])
    ref = np.where(angle, np.unwrap(motion.actuators, axis=0), motion.actuators)
    forcing = servo.kv * (f - 1.0) * (motion.actuators_dot + servo.ki * (ref - ref[:1]))
    if g.any():
        forcing = forcing + g * torque
    tau_rest = g * torque_rest if g.any() else np.zeros((n, n_a))
    # The servo transient's damping: lumped and Rayleigh in the plant, the modal ratios from the
    # locked structure's schedule (its lowest `modes` modes), not the servo plant's own modes.
    modal = schedule(ev, damping, motion.t, motion.q) if damping.modal else None

    previous = None     # the last instant's signed shapes
    # The free motions (struts spinning between spherical joints) stay free under the servos:
    # no load holds or moves them; the frames leave them out (both paths: _Sparse._free_motions).
    free = sv.free_motions(ev, motion.q[0]) if n else 0
    fast = sparse_structure(ev, servo, damping, modal, motion.q[0], count, free=free) if n else None
    for k in range(n):
        q = motion.q[k]
        e = ev.evaluate(q, motion.v[k], rest=True, pose=True)
        J_s = e.J_s
        Jr = J_s[rigid]
        acc = motion.actuators_ddot[k]
        load = np.concatenate([e.Q - e.M @ motion.a[k] + Jr.T @ (forcing[k, rigid] - inertia[rigid] * acc[rigid]),
                               forcing[k, comp] - inertia[comp] * acc[comp]])
        rest = np.concatenate([e.Q0 + Jr.T @ tau_rest[k, rigid], tau_rest[k, comp]])
        motors = motor_rows(J_s, comp)
        joints = np.concatenate([J_s, np.zeros((n_a, n_c))], axis=1)
        try:
            solved = None if fast is None else fast.frame(q, motion.t[k], e, constraint_jacobian(model, q, locked=False),
                                                          count)
        except (splinalg.ArpackNoConvergence, SingularSaddle):
            solved = None       # this instant by the dense plant (which says where a motion is free)
        if solved is not None:
            omega, psi, modal_damping, static = solved
            mpsi = fast.mass(e, psi)
            sign = signs(psi, mpsi, previous)
            psi, mpsi, previous = psi * sign, mpsi * sign, psi * sign
            J_y = motors[y]
            x_rest, y_rest = fast.rest(static, J_y, rest) if ny else (static(rest)[:, 0], np.zeros(0))
            values = dict(load=load, rest=rest, omega=omega, shapes=psi, mass_shapes=mpsi,
                          damping=modal_damping * np.outer(sign, sign), integral=(J_y @ psi).T * PKi,
                          rates=-(servo.kv[y] * servo.kp[y])[:, None] * J_y,
                          static_load=static(load)[:, 0], static_integral=static(J_y.T * PKi),
                          static_rest=x_rest, y_rest=y_rest, forcing=forcing[k], pose_jacobian=e.J_x,
                          joints=joints, motors=motors, lag=sv.lag_gain(model, e))
            if progress is not None:
                progress.update(1)
            yield ServoFrames.one(values)
            continue
        p = sv.plant(model, q, damping, modal.modal(motion.t[k]) if isinstance(modal, Schedule) else None)
        N, m = p.N, p.M.shape[0]
        nn = N.shape[1]
        Kc, Cc, _ = sv.held(p, servo)
        r = min(int(count), m - free)
        lam, Phi = scipy.linalg.eigh(Kc, p.M, subset_by_index=[0, r + free - 1])
        W, lam, Phi = Phi[:, :free], lam[free:], Phi[:, free:]     # the free motions apart
        if not lam[0] > FREE_RTOL * np.trace(Kc) / np.trace(p.M):
            raise SimError(f"the robot held by its servos at t = {motion.t[k]:.6g} s has a free motion "
                           f"(eigenvalue {lam[0]:.3g} 1/s^2): a motion no actuator or structure holds")
        omega = np.sqrt(lam)

        def ext(X):
            """Plant coordinates (m, ...) to the extended velocity space (n_x, ...)."""
            return np.concatenate([N @ X[:nn], X[nn:]])

        def to_x(L):
            """Generalised forces (n_x, ...) on the plant's coordinates (m, ...)."""
            return np.concatenate([N.T @ L[:n_v], L[n_v:]])

        psi = ext(Phi)
        mpsi = mass_product(e, psi, inertia, comp)
        # The modes' signs (sim.solvers.modal.signs): the previous instant's where a mode is
        # the same mode, else the largest entry positive; before anything else is formed from them.
        sign = signs(psi, mpsi, previous)
        Phi, psi, mpsi, previous = Phi * sign, psi * sign, mpsi * sign, psi * sign
        PyKi = p.P[y].T * PKi                                      # (m, ny)
        # The static solutions on the free motions' M-orthogonal complement: K_c + M W W^T M is
        # regular, and with the loads' share along W taken out its solution is K_c's there.
        MW = p.M @ W

        def apart(L):
            return L - MW @ (W.T @ L)

        Ks = Kc + MW @ MW.T
        lu = scipy.linalg.lu_factor(Ks)
        if ny:
            Z = np.block([[Ks, -apart(PyKi)], [p.P[y], np.zeros((ny, ny))]])
            sol = np.linalg.solve(Z, np.concatenate([apart(to_x(rest)), np.zeros(ny)]))
            x_rest, y_rest = sol[:m], sol[m:]
        else:
            x_rest, y_rest = scipy.linalg.lu_solve(lu, apart(to_x(rest))), np.zeros(0)
        values = dict(load=load, rest=rest, omega=omega, shapes=psi, mass_shapes=mpsi,
                      damping=Phi.T @ Cc @ Phi, integral=Phi.T @ PyKi,
                      rates=-(servo.kv[y] * servo.kp[y])[:, None] * motors[y],
                      static_load=ext(scipy.linalg.lu_solve(lu, apart(to_x(load)))),
                      static_integral=ext(scipy.linalg.lu_solve(lu, apart(PyKi))).reshape(n_x, ny),
                      static_rest=ext(x_rest), y_rest=y_rest, forcing=forcing[k],
                      pose_jacobian=e.J_x, joints=joints, motors=motors, lag=sv.lag_gain(model, e))
        if progress is not None:
            progress.update(1)
        yield ServoFrames.one(values)


@dataclass(frozen=True)
class ServoKed:
    """KED response with servo drives at the output instants ``time`` (k,): the interval ends
    and ``parts - 1`` instants between each two.

    Attributes
    ----------
    time : ndarray, shape (k,)
    deviation, deviation_static : ndarray, shape (k, d)
        ``J_x u`` and the equilibrium at rest's, linearised.
    tracking_error : ndarray, shape (k, n_a)
        ``r - s``, joint side [rad or m].
    motor_error : ndarray, shape (k, n_a)
        ``r - theta``: the motors' lag (joint units; ``= tracking_error`` without a transmission).
    actuator_forces : ndarray, shape (k, n_a)
        The servos' joint-side forces [N m or N] (no torque limit).
    deviation_servo : ndarray, shape (k, d)
        The servos' share ``G (s - r)`` (:func:`sim.solvers.closed_loop.lag_gain`).
    deviation_static_servo : ndarray, shape (k, d)
        Their share of ``deviation_static``: ``G`` times the joints' lag at rest under the load.
    ends : slice
        The interval ends among the instants.
    frame_time : ndarray, shape (n,)
    frequencies, damping_ratios : ndarray, shape (n, r)
        Closed-loop ``|lambda| / 2 pi`` [Hz] and ``-Re lambda / |lambda|`` of the reduced
        system at each frame, ascending (NaN: fewer complex modes).
    modal_coordinates, modal_velocities : ndarray, shape (n, r)
        ``eta``, ``eta'`` at the frames (row ``i + 1`` on interval ``i``'s modes).
    integral : ndarray, shape (n, ny)
    displacement : ndarray, shape (n, n_v)
        The elastic displacement ``u`` at the frames (modal part plus the truncated modes').
    """

    time: np.ndarray
    deviation: np.ndarray
    deviation_static: np.ndarray
    tracking_error: np.ndarray
    motor_error: np.ndarray
    actuator_forces: np.ndarray
    deviation_servo: np.ndarray
    deviation_static_servo: np.ndarray
    ends: slice
    frame_time: np.ndarray
    frequencies: np.ndarray
    damping_ratios: np.ndarray
    modal_coordinates: np.ndarray
    modal_velocities: np.ndarray
    integral: np.ndarray
    displacement: np.ndarray


    def result(self, pose_rigid):
        """The record of the locked KED (:class:`sim.solvers.modal_stepping.KedResult`, its samples at
        every instant) from the rigid poses ``pose_rigid`` (k, d) at :attr:`time`."""
        from sim.solvers.modal_stepping import KedResult, KedSamples

        e, dev, static = self.ends, self.deviation, self.deviation_static
        samples = KedSamples(time=self.time, pose_rigid=pose_rigid, pose=pose_rigid + dev, deviation=dev,
                             deviation_static=static, deviation_dynamic=dev - static)
        return KedResult(time=self.frame_time, pose_rigid=pose_rigid[e], pose=pose_rigid[e] + dev[e],
                         deviation=dev[e], deviation_static=static[e], deviation_dynamic=dev[e] - static[e],
                         frequencies=self.frequencies, modal_coordinates=self.modal_coordinates,
                         modal_velocities=self.modal_velocities, displacement=self.displacement,
                         samples=samples if self.time.size > self.frame_time.size else None)


def closed_modes(A, r):
    """Frequencies [Hz] and damping ratios (r,) of the complex pairs of ``A``, ascending by
    ``|lambda|`` (NaN where fewer)."""
    import scipy.linalg
    lam = scipy.linalg.eigvals(A)
    scale = max(np.abs(lam).max(initial=0.0), 1.0)
    pair = lam[lam.imag > 1e-9 * scale]
    pair = pair[np.argsort(np.abs(pair))][:r]
    f, z = np.full(r, np.nan), np.full(r, np.nan)
    f[:pair.size] = np.abs(pair) / (2 * np.pi)
    z[:pair.size] = -pair.real / np.abs(pair)
    return f, z


def integrate(time, frames, servo, start="static", parts=1):
    """Advance the closed-loop KED over the frames (:func:`servo_frames`, or an iterable of
    one instant's each, :func:`frame_stream`): :class:`ServoSteps` with ``parts`` output
    instants per interval.

    Parameters
    ----------
    time : ndarray, shape (n,)
        Frame instants (interval ends) [s].
    frames : ServoFrames or iterable of ServoFrames
    servo : sim.solvers.closed_loop.Servo
        The gains (for the actuators' forces).
    start : {"static", "undeformed"}
        From the equilibrium at rest at the first pose, or undeformed.
    parts : int
        Output instants per interval.

    Returns
    -------
    ServoKed
    """
    steps = ServoSteps(time, servo, start)
    for frame in frames:
        steps.add(frame)
    return steps.result(parts)


class ServoSteps:
    """The closed-loop KED stepped through the frames as they come (:func:`frame_stream`),
    each frame reduced at once to what the output needs, so that none is held after the next:
    :meth:`add` each in time order, then :meth:`result` at any number of output instants per
    interval (chosen from :attr:`omega`, which only the last frame completes).

    On interval ``i`` (frames ``i``, ``i + 1``, ``dt``) the state ``(eta, eta', y)`` on
    frame ``i``'s modes ``Psi_i`` follows ``x' = A_i x + b(t)``, the modal load and the integral
    states' rate from the truncated modes' load part linear in time: the exact step
    ``expm(Z dt)`` of the system ``Z`` augmented by the load's two coefficients gives the
    interval's end, ``expm(Z dt / parts)`` from its start the instants between (at
    :meth:`result`, so the ends do not depend on ``parts``).  At a fraction ``f`` of the
    interval the displacement is ``u = B_i w`` on the interval's basis ``B_i = [Psi_i, c_i,
    C_i, c_{i+1}, C_{i+1}]`` (the truncated modes' quasi-static part, :meth:`ServoFrames.correction`,
    linear between the frames) with ``w = (eta, 1 - f, (1 - f) y, f, f y)``, and the frozen
    rows that read the output (the pose Jacobian, the joints' and the motors' rows ``R``) go
    linearly from frame ``i``'s to ``i + 1``'s: ``R u = (1 - f) (R_i B_i) w + f (R_{i+1}
    B_i) w``.  Those two products, (d + 2 n_a, r + 2 + 2 ny), are all an interval keeps.
    The next interval starts from ``u = Psi_i eta`` (and ``u'``), projected on frame ``i +
    1``'s modes by ``Psi_{i+1}^T M~_{i+1}``.

    Parameters
    ----------
    time : ndarray, shape (n,)
        Frame instants (interval ends) [s].
    servo : sim.solvers.closed_loop.Servo
    start : {"static", "undeformed"}
        From the equilibrium at rest at the first pose, or undeformed.
    """

    def __init__(self, time, servo, start="static"):
        if start not in ("static", "undeformed"):
            raise ValueError(f"`start` must be 'static' or 'undeformed', got {start!r}")
        self.time, self.servo, self.start = np.asarray(time, dtype=float), servo, start
        self.frames = []        # per frame: (rows R u_static (d + 2 n_a,), lag (d, n_a), forcing (n_a,))
        self.intervals = []     # per interval: (Z, x0, x1, R_i B_i, R_{i+1} B_i)
        self.eta, self.eta_dot, self.y = [], [], []
        self.freq, self.zeta, self.omega_rows, self.displacement = [], [], [], []
        self.last = None        # the last frame: (frames, (c, C), A, rows R)
        self.first = None       # R u of the first instant
        self.u = None           # the displacement and its rate at the last frame, on its interval's modes

    @property
    def omega(self):
        """The frames' undamped circular frequencies (k, r) [rad/s], those added so far."""
        return np.array(self.omega_rows)

    def add(self, fr):
        """Step to the next frame ``fr`` (a :class:`ServoFrames` of one instant)."""
        import scipy.linalg

        k = len(self.frames)
        r, ny = fr.omega.shape[1], fr.rates.shape[1]
        n_v, size = fr.pose_jacobian.shape[2], 2 * r + ny
        c, C = fr.correction(0)
        A = fr.system(0, C)
        f, z = closed_modes(A, r)
        n_x = fr.shapes.shape[1]
        R = np.concatenate([np.pad(fr.pose_jacobian[0], ((0, 0), (0, n_x - n_v))), fr.joints[0], fr.motors[0]])
        self.frames.append((R @ fr.static_rest[0], fr.lag[0], fr.forcing[0]))
        self.freq.append(f)
        self.zeta.append(z)
        self.omega_rows.append(fr.omega[0])
        if k == 0:
            u = fr.static_rest[0].copy() if self.start == "static" else np.zeros(n_x)
            yv = fr.y_rest[0].copy() if self.start == "static" else np.zeros(ny)
            eta, eta_dot = fr.mass_shapes[0].T @ u, np.zeros(r)
            u0 = fr.shapes[0] @ eta + c + C @ yv
            self.first = R @ u0         # the output rows of the first instant (at rest: no rates)
            self.displacement.append(u0[:n_v])
            self.u = (u, np.zeros(n_x))
        else:
            if k >= self.time.size:
                raise ValueError(f"ServoSteps: more frames than the {self.time.size} instants")
            prev, (c0, C0), A0, R0 = self.last
            dt = self.time[k] - self.time[k - 1]
            psi = prev.shapes[0]
            u, u_dot = self.u
            eta, eta_dot, yv = prev.mass_shapes[0].T @ u, prev.mass_shapes[0].T @ u_dot, self.y[-1]
            b0, b1 = psi.T @ prev.load[0], psi.T @ fr.load[0]
            y0, y1 = prev.rates[0] @ c0, prev.rates[0] @ c
            Z = np.zeros((size + 2, size + 2))
            Z[:size, :size] = A0
            Z[r:2 * r, size] = b0
            Z[r:2 * r, size + 1] = b1 - b0
            Z[2 * r:size, size] = y0
            Z[2 * r:size, size + 1] = y1 - y0
            Z[size + 1, size] = 1.0 / dt
            x0 = np.concatenate([eta, eta_dot, yv, [1.0, 0.0]])
            x1 = scipy.linalg.expm(Z * dt) @ x0
            B = np.concatenate([psi, c0[:, None], C0, c[:, None], C], axis=1)
            self.intervals.append((Z, x0, x1, R0 @ B, R @ B))
            eta, eta_dot, yv = x1[:r], x1[r:2 * r], x1[2 * r:size]
            self.displacement.append((psi @ eta + c + C @ yv)[:n_v])
            self.u = (psi @ eta, psi @ eta_dot)
        self.eta.append(eta)
        self.eta_dot.append(eta_dot)
        self.y.append(yv)
        self.last = (fr, (c, C), A, R)

    def result(self, parts=1):
        """The :class:`ServoKed` at ``parts`` output instants per interval."""
        import scipy.linalg

        n = len(self.frames)
        if n != self.time.size:
            raise ValueError(f"ServoSteps: {n} frames for {self.time.size} instants")
        servo = self.servo
        r, ny = self.eta[0].size, self.y[0].size
        d, n_a = self.frames[0][1].shape
        size = 2 * r + ny
        y_rows = np.zeros((n_a, ny))   # integral state -> its actuator
        y_rows[np.flatnonzero(servo.ki > 0), np.arange(ny)] = 1.0
        count = (n - 1) * parts + 1
        rows, rates, Y = np.zeros((count, d + 2 * n_a)), np.zeros((count, d + 2 * n_a)), np.zeros((count, ny))
        k, f = np.zeros(count, dtype=int), np.zeros(count)
        rows[0], Y[0] = self.first, self.y[0]        # the first instant, on frame 0 alone
        for i, (Z, x0, x1, P, Q) in enumerate(self.intervals):
            dt = self.time[i + 1] - self.time[i]
            E = scipy.linalg.expm(Z * (dt / parts))
            X = [x0]
            for _ in range(parts - 1):
                X.append(E @ X[-1])
            X = np.array(X[1:] + [x1])                  # (parts, size + 2): j = 1 .. parts
            g = np.arange(1, parts + 1) / parts
            eta, eta_dot, yv = X[:, :r], X[:, r:2 * r], X[:, 2 * r:size]
            h = 1 - g
            w = np.concatenate([eta, h[:, None], h[:, None] * yv, g[:, None], g[:, None] * yv], axis=1)
            at = slice(1 + i * parts, 1 + (i + 1) * parts)
            rows[at] = h[:, None] * (w @ P.T) + g[:, None] * (w @ Q.T)
            rates[at] = h[:, None] * (eta_dot @ P[:, :r].T) + g[:, None] * (eta_dot @ Q[:, :r].T)
            Y[at] = yv
            k[at], f[at] = i, g
            k[at.stop - 1], f[at.stop - 1] = i + 1, 0.0     # the interval's end: the next frame's instant
        k1 = np.minimum(k + 1, n - 1)
        static, lag, forcing = (np.array(x) for x in zip(*self.frames))
        fc = f[:, None]
        static = (1 - fc) * static[k] + fc * static[k1]
        lag = (1 - fc[..., None]) * lag[k] + fc[..., None] * lag[k1]
        forcing = (1 - fc) * forcing[k] + fc * forcing[k1]
        lag_s, delta, delta_dot = rows[:, d:d + n_a], rows[:, d + n_a:], rates[:, d + n_a:]
        kv, ki = servo.kv, servo.ki
        force = forcing - (kv * servo.kp + ki * kv) * delta - kv * delta_dot + ki * (Y @ y_rows.T)
        time = self.time
        return ServoKed(time=time[k] + f * (time[k1] - time[k]), deviation=rows[:, :d], deviation_static=static[:, :d],
                        tracking_error=-lag_s, motor_error=-delta, actuator_forces=force,
                        deviation_servo=np.einsum("kda,ka->kd", lag, lag_s),
                        deviation_static_servo=np.einsum("kda,ka->kd", lag, static[:, d:d + n_a]),
                        ends=slice(0, None, parts), frame_time=time, frequencies=np.array(self.freq),
                        damping_ratios=np.array(self.zeta), modal_coordinates=np.array(self.eta),
                        modal_velocities=np.array(self.eta_dot), integral=np.array(self.y),
                        displacement=np.array(self.displacement))
