"""The compiled evaluator of the solvers: a model's kernel tables, its own work arrays and
the equations at a state.

The equations are the compiled kernels of :mod:`sim.kernels` (bodies, markers, joint rows,
springs, stiffening; :func:`sim.kernels.equations.evaluate` runs them all), the same ones the
public functions of :mod:`sim.model.dynamics`, :mod:`sim.model.kinematics` and :mod:`sim.model.constraints`
call.  An :class:`Evaluator` holds the model's tables (:class:`sim.kernels.equations.Tables`),
one :class:`sim.kernels.equations.Data` (the markers' kinematics the kernels write) and the
row bookkeeping
(drives, compliant actuators) that the time loops, the rigid motion, KED, the frequencies along
a path and the inverse dynamics share; ``tests/test_fast.py`` checks it against the numpy
statements of ``tests/oracles.py`` on random states of every shipped model.
"""
from typing import NamedTuple

import numpy as np

from sim.errors import signals_deferred
from sim.model import dynamics
from sim.model.constraints import drive_residual
from sim.kernels.common import by_reference, compile_for, record_type
from sim.kernels.equations import (ADDRESSES, DATA, Data, addresses, data, evaluate, inverse_terms, mass_products,
                                   potential)
from sim.kernels.frames import integrate
from sim.kernels.store import empty_store
from sim.kernels.markers import markers as kernel_markers
from sim.kernels.rows import rows as kernel_rows
from sim.model.kinematics import _pose_terms
from sim.model.tables import compliant, stretched, tables

SIZE_MIN = 1e-3      # m, the smallest robot size (all markers at one point)


def size(points):
    """A robot's size [m]: the diagonal of the box around ``points`` (n, 3) [m] (its markers
    and bodies at home), at least :data:`SIZE_MIN`."""
    return max(float(np.linalg.norm(np.ptp(points, axis=0))), SIZE_MIN)


def compile_evaluation(model):
    """Compile, or load from numba's cache, the kernels an :class:`Evaluator` of ``model``
    adds to the model's assembly (the tables by reference, the evaluation, the potential)
    without calling them: an unassembled model will do (:mod:`sim.app.parallel_compile`)."""
    t = tables(model)
    with signals_deferred():
        compile_for(by_reference, t)
        compile_for(by_reference, data(t))
        addresses(record_type(t))


class Evaluation(NamedTuple):
    """Equations at one state; see :meth:`Evaluator.evaluate`."""

    M: np.ndarray
    Q: np.ndarray
    C: np.ndarray
    J: np.ndarray
    gamma: np.ndarray
    s: np.ndarray
    J_s: np.ndarray
    gamma_s: np.ndarray
    Q_v: np.ndarray = None
    gamma_v: np.ndarray = None
    K_t: np.ndarray = None
    Q0: np.ndarray = None
    x: np.ndarray = None
    J_x: np.ndarray = None
    x_q: np.ndarray = None
    markers: Data = None


class Kinematics:
    """The rigid robot's kinematics by the compiled kernels: holds the model's tables
    (``tables``, and ``ref`` by reference) and its own work arrays (``data``, and ``data_ref``
    by reference: each evaluation writes the markers' kinematics there, and what a caller
    needs of them comes back in the :class:`Evaluation`).  It calls the markers' and the
    constraint rows' kernels only (:meth:`kinematics`), never the whole evaluation, whose
    compilation is the longest of all: assembly and inverse kinematics while a model is built
    take one.

    An explicit object (STYLE rule 1: no hidden caches): build one per task and pass it down
    to everything that evaluates.

    Parameters
    ----------
    model : Model
    load : bool
        False: ``ref`` and ``data_ref`` are only the numba types of the records, for compiling
        the loops that take them (:class:`Evaluator`); no kernel can be called with them.
    """

    def __init__(self, model, load=True):
        self.model = model
        self.tables = t = tables(model)
        self.data = data(t)
        if load:
            self.ref, self.data_ref = by_reference(t), by_reference(self.data)    # what the kernels are given
        else:
            self.ref, self.data_ref = record_type(t), DATA
        self.n_q, self.n_v = model.n_q, model.n_v
        self.cols = t.cols
        self.n_rows = model.rows["n_total"]
        self.n_joint = model.rows["n_joint"]

    def integrate(self, q, dv):
        """``q ⊕ dv`` (n_q,), as :func:`sim.model.kinematics.integrate`."""
        out = np.empty_like(q)
        integrate(q, dv, self.tables.body_q, self.tables.body_v, self.tables.body_nf, out)
        return out

    def kinematics(self, q, v=None, pose=False, markers=False):
        """The kinematic terms at ``(q, v)`` (``v`` None: at rest), for the rigid robot, which
        needs no mass matrix: the markers (:func:`sim.kernels.markers.markers`) and the
        constraint rows (:func:`sim.kernels.rows.rows`): the terms of
        :meth:`Evaluator.evaluate` but the bodies' (the same kernels, the same numbers).

        Returns
        -------
        Evaluation
            ``M``, ``Q`` None; ``C``, ``J``, ``gamma`` of the joint rows, ``s``, ``J_s``,
            ``gamma_s`` of all actuators; ``x``, ``J_x``, ``x_q`` with ``pose``, the
            :class:`~sim.kernels.equations.Data` with ``markers``, as there.
        """
        v = np.zeros(self.n_v) if v is None else np.ascontiguousarray(v, dtype=float)
        phi, J, gamma = np.zeros(self.n_rows), np.zeros((self.n_rows, self.n_v)), np.zeros(self.n_rows)
        kernel_markers(np.ascontiguousarray(q, dtype=float), v, self.ref, self.data_ref, False)
        kernel_rows(self.ref, self.data_ref, phi, J, gamma, _NONE, False)
        nj = self.n_joint
        return Evaluation(None, None, phi[:nj], J[:nj], gamma[:nj], phi[nj:], J[nj:], gamma[nj:],
                          **self._markers(v, pose, markers))

    def _markers(self, v, pose, markers):
        """The :class:`Evaluation` fields of the markers' kinematics just written: the end
        effector's terms at the velocity ``v`` (``pose``), a copy of the data (``markers``)."""
        d, extra = self.data, {}
        if pose:
            e = self.model.ee_marker
            extra.update(zip(("x", "J_x", "x_q"), _pose_terms(self.model.pose_kinds, d.p[e], d.A[e], d.Jp[e], d.Jw[e],
                                                                self.cols[e], self.n_v, v, d.pq[e], d.wq[e])))
        if markers:
            extra["markers"] = Data(*(x.copy() for x in d))
        return extra


_NONE = np.zeros((0, 0))
_NO_EXTRA = {}      # the Evaluation's optional fields when none is asked for (never written)
_NO_STORE = empty_store()     # dQ/dv where M and K_t are written on stores (not asked for)


class Evaluator(Kinematics):
    """Compiled ``(M, Q, C, J, gamma)`` of a model: the whole evaluation
    (:func:`sim.kernels.equations.evaluate`) besides the :class:`Kinematics`, whose tables and
    data the compiled loops are given too (they write its data).

    Build one per analysis and pass it down to everything that evaluates.

    Parameters
    ----------
    model : Model
    load : bool
        Compile, or load from numba's cache, the evaluation now (and measure the robot:
        ``size`` [m], else inf).  False: nothing is compiled,
        and ``ref``, ``data_ref`` and ``f`` are only the numba types of the records and the addresses, for
        compiling the loops that take them (:func:`sim.kernels.common.compile_for`) in a
        process that does not evaluate (:mod:`sim.app.parallel_compile`); no kernel can be
        called with them.
    """

    def __init__(self, model, load=True):
        super().__init__(model, load)
        t = self.tables
        # For the compiled loops (sim.kernels.equations.function).
        self.f = addresses(self.ref) if load else ADDRESSES
        self.compliant = compliant(model)
        self.keep = np.concatenate([np.ones(self.n_joint, dtype=bool), ~self.compliant])
        # Whether any force has a tangent stiffness (K_t) besides the bodies' constant K_ff.
        self.stiff = dynamics._has_lumped(model) or bool(stretched(model))
        self._no_targets = np.zeros(0)
        self._empty = np.zeros((0, 0))
        self.size = np.inf
        if not load:
            return
        # Compile (or load from cache) every kernel now, with Ctrl-C held back: an interrupt
        # that lands inside llvmlite's compiler callbacks is lost and leaves numba broken.
        with signals_deferred():
            zero = np.zeros(self.n_v)
            # (one machine code whatever the flags: no second call with the velocity Jacobian,
            # whose dense (n_v, n_v) arrays each thread's evaluator would allocate for nothing)
            self.evaluate(model.q_home, zero, targets=np.zeros(len(model.actuators)))
            self.potential(model.q_home)
            self.integrate(model.q_home, zero)
            home = self.kinematics(model.q_home, markers=True).markers
        # The robot's size [m]: the diagonal of the box around its markers and its bodies at
        # home (the scale of a constraint violation that means the joints came apart).
        self.size = size(np.vstack([home.p, [model.q_home[k:k + 3] for k in t.body_q]]))

    def mass_products(self, qs, X):
        """``M(qs[k]) X[k]`` (m, n_v, p) at the configurations ``qs`` (m, n_q), ``X`` (m, n_v, p),
        in one compiled call (``M`` as :meth:`evaluate`'s with ``flush=False``)."""
        qs = np.ascontiguousarray(qs, dtype=float)
        X = np.ascontiguousarray(X, dtype=float)
        out = np.empty_like(X)
        mass_products(qs, self.ref, self.data_ref, self.f, X, out)
        return out

    def inverse_terms(self, qs, vs, accs):
        """What the inverse dynamics needs of each sample of a rigid motion ``qs`` (m, n_q),
        ``vs``, ``accs`` (m, n_v), in one compiled call
        (:func:`sim.kernels.equations.inverse_terms`).

        Returns
        -------
        Jr : ndarray, shape (m, n_rows, n_r)
            The constraint Jacobian (joint rows, then every actuator's) on the reference
            coordinates ``model.v_rigid``.
        rhs : ndarray, shape (m, n_r)
            ``(Q - M a)`` on the reference coordinates.
        p, A : ndarray, shapes (m, n_m, 3), (m, n_m, 3, 3)
            The markers' origins and axes.
        T, V : ndarray, shape (m,)
            Kinetic energy ``v M v / 2`` and potential (gravity plus elastic) [J].
        """
        arguments = self.inverse_arguments(qs, vs, accs)
        inverse_terms(*arguments)
        return arguments[-1]

    def inverse_arguments(self, qs, vs, accs):
        """The arguments of :func:`sim.kernels.equations.inverse_terms` for :meth:`inverse_terms`,
        its results ``(Jr, rhs, p, A, T, V)`` the last (allocated, not filled)."""
        rigid = np.asarray(self.model.v_rigid, dtype=np.int64)
        m, n_m = len(qs), len(self.model.markers)
        Jr, rhs = np.empty((m, self.n_rows, rigid.size)), np.empty((m, rigid.size))
        p, A, T, V = np.empty((m, n_m, 3)), np.empty((m, n_m, 3, 3)), np.empty(m), np.empty(m)
        return (tuple(np.ascontiguousarray(x, dtype=float) for x in (qs, vs, accs)), self.ref, self.data_ref, self.f,
                rigid, (Jr, rhs, p, A, T, V))

    def potential(self, q):
        """Gravitational and elastic energy [J] at ``q``, as :func:`sim.model.dynamics.potential`."""
        return potential(np.ascontiguousarray(q, dtype=float), self.ref, self.data_ref)

    def evaluate(self, q, v, targets=None, target_acc=None, velocity_jacobian=False, flush=True, rest=False,
                 pose=False, markers=False, stores=None):
        """The equations at ``(q, v)``, as in the reference kernels (the rigid robot's
        kinematic terms alone: :meth:`~Kinematics.kinematics`).

        ``flush=False``: ``M`` not flushed
        (:func:`sim.linalg.flush`), for callers whose products with it are few and small
        (a third of the evaluation on the 3-RRRU).  ``rest=True``: also ``Q0 = Q(q, 0)``, the
        forces at rest (no velocity terms, no damping), from the same pass.  ``pose=True``: also
        the end effector's terms at ``(q, v)``; ``markers=True``: the markers' kinematics there.

        Returns
        -------
        Evaluation
            ``M`` (n_v, n_v), ``Q`` (n_v,) of :func:`sim.model.dynamics.mass_and_forces`
            (``targets`` also pull compliant actuators); ``C``, ``J``, ``gamma`` of
            :func:`sim.model.constraints.constraints` (joint rows, plus the rigid actuators' rows
            when ``targets`` is given); ``s``, ``J_s`` the values and Jacobian of all actuators.
            With ``velocity_jacobian``: ``Q_v = dQ/dv`` (n_v, n_v) of the velocity-dependent
            forces and ``gamma_v = d gamma/dv`` (same rows as ``J``); ``K_t`` the tangent
            stiffness of the geometric stiffening and the linearised lumped compliance (None
            when the model has neither).  With ``rest``: ``Q0`` (n_v,).  With ``pose``: ``x``
            (d,), ``J_x`` (d, n_v), ``x_q`` (d,) of :func:`sim.model.kinematics.pose_terms`
            (``x_ddot = J_x a + x_q``).  With ``markers``: a copy of the evaluator's
            :class:`~sim.kernels.equations.Data` written at ``(q, v)`` (the caller's to keep).

            ``stores = (M, K_t)``: two :class:`sim.kernels.store.Store` on a structure that
            holds them (:func:`sim.solvers.blocks.held`), zero, to write ``M`` and the tangent
            stiffness on instead of (n_v, n_v) arrays (``K_t``'s values empty: none); the
            :class:`Evaluation`'s ``M`` and ``K_t`` are then these stores, ``Q_v``,
            ``gamma_v`` None (``velocity_jacobian`` is then the tangent stiffness alone).
        """
        model = self.model
        Q = np.zeros(self.n_v)
        phi = np.zeros(self.n_rows)
        J = np.zeros((self.n_rows, self.n_v))
        gamma = np.zeros(self.n_rows)
        Q0 = np.zeros(self.n_v if rest else 0)
        if stores is not None:      # M and K_t on their structure; no dQ/dv
            M, K_t = stores
            with_K = bool(velocity_jacobian and K_t.values.size)
            out = (by_reference(M), Q, Q0, phi, J, gamma, by_reference(_NO_STORE), self._empty, by_reference(K_t))
            flags, velocity_jacobian = (False, with_K, False, True), False
        else:
            M = np.zeros((self.n_v, self.n_v))
            if velocity_jacobian:
                G, Gg, K_t = (np.zeros((self.n_v, self.n_v)), np.zeros((self.n_rows, self.n_v)),
                              np.zeros((self.n_v,) * 2))
            else:
                G = Gg = K_t = self._empty
            out, flags = (M, Q, Q0, phi, J, gamma, G, Gg, K_t), (velocity_jacobian, velocity_jacobian, flush, True)
            with_K = velocity_jacobian
        pull = self._no_targets if targets is None else np.ascontiguousarray(targets, dtype=float)
        evaluate(q, v, self.ref, self.data_ref, out, pull, flags)
        extra = self._markers(v, pose, markers) if pose or markers else _NO_EXTRA
        G = G if velocity_jacobian else None
        K_t = K_t if with_K and self.stiff else None
        Q0 = Q0 if rest else None
        nj = self.n_joint
        s, J_s, gamma_s = phi[nj:].copy(), J[nj:].copy(), gamma[nj:].copy()
        if targets is None:
            return Evaluation(M, Q, phi[:nj], J[:nj], gamma[:nj], s, J_s, gamma_s, G,
                              Gg[:nj] if velocity_jacobian else None, K_t, Q0, **extra)
        phi[nj:] = drive_residual(model, s, targets, self.tables.angle)
        if target_acc is not None:
            gamma[nj:] += target_acc
        if self.compliant.any():   # compliant actuators are springs, not constraints
            keep = self.keep
            return Evaluation(M, Q, phi[keep], J[keep], gamma[keep], s, J_s, gamma_s, G,
                              Gg[keep] if velocity_jacobian else None, K_t, Q0, **extra)
        return Evaluation(M, Q, phi, J, gamma, s, J_s, gamma_s, G, Gg if velocity_jacobian else None, K_t, Q0,
                          **extra)


def held(model):
    """``(model, ev)`` from a model or an :class:`Evaluator`: a public function that takes
    either builds its evaluator at its top from a model, and a caller that holds one passes it
    instead, so that no second one is built below (the data goes down the layers once)."""
    if isinstance(model, Evaluator):
        return model.model, model
    return model, Evaluator(model)
