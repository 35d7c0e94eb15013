"""The model's records: the frozen ``Model`` and its parts (bodies, markers, joints, actuators,
springs, sensors), as :class:`sim.model.builder.ModelBuilder` builds and validates them.

The coordinates and the inertia invariants a body carries are described in
:mod:`sim.model.builder`.
"""
from dataclasses import dataclass, field, replace

import numpy as np

from sim.model import sparse_rows


@dataclass(frozen=True)
class Body:
    """A rigid or flexible body with precomputed inertia invariants (see module docstring)."""

    name: str
    mass: float
    first_moment: np.ndarray
    # The second moments T (3, 3, n_f + 1, n_f + 1) by their nonzeros, in the dense array's
    # order (a beam's are banded: a dense T grows with the square of its elements).
    second_index: np.ndarray     # (nnz, 4) int: (k, l, a, b) of T[k, l, a, b]
    second_value: np.ndarray     # (nnz,)
    rot_inertia: np.ndarray
    rot_coupling: np.ndarray
    # M_ff and K_ff (n_f, n_f), and the basis (6 n_nodes, n_f), by their rows' nonzeros
    # (sim.model.sparse_rows.SparseRows: a beam's are banded; np.asarray gives them dense).
    mass_ff: sparse_rows.SparseRows
    stiffness_ff: sparse_rows.SparseRows
    nodes_B: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    elements: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=int))
    basis: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    substructure: str = ""
    # Geometric stiffening (see sim.model.dynamics): per element, axial stiffness EA/L (n_el,),
    # and its elongation row and slope matrix on the elastic coordinates it touches
    # (sim.kernels.stretch.compact: stretch_index (n_el, m), stretch_A (n_el, m), stretch_G
    # (n_el, m, m)); empty when off.
    stretch_k: np.ndarray = field(default_factory=lambda: np.zeros(0))
    stretch_index: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    stretch_A: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    stretch_G: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0)))
    # Section forces and stresses (sim.model.sections): per element, the stiffness (n_el, 12, 12)
    # in its frame, that frame's axes in the body frame R_BE (n_el, 3, 3), and the sections.
    element_stiffness: np.ndarray = field(default_factory=lambda: np.zeros((0, 12, 12)))
    element_frames: np.ndarray = field(default_factory=lambda: np.zeros((0, 3, 3)))
    sections: tuple = ()

    @property
    def n_f(self):
        return self.mass_ff.shape[0]

    @property
    def second_moment(self):
        """The second moments ``T`` (3, 3, n_f + 1, n_f + 1) as a dense array, made at each call
        (tests and small bodies; the kernels read :attr:`second_index`, :attr:`second_value`)."""
        return dense_moment(self.second_index, self.second_value, self.n_f + 1)

    @property
    def stretch_rows(self):
        """The elongation rows (n_el, n_f), dense, made at each call (tests)."""
        out = np.zeros((self.stretch_k.size, self.n_f))
        np.add.at(out, (np.arange(self.stretch_k.size)[:, None], self.stretch_index), self.stretch_A)   # padding: 0s
        return out

    @property
    def stretch_slopes(self):
        """The slope matrices (n_el, n_f, n_f), dense, made at each call (tests)."""
        out = np.zeros((self.stretch_k.size, self.n_f, self.n_f))
        e = np.arange(self.stretch_k.size)[:, None, None]
        np.add.at(out, (e, self.stretch_index[:, :, None], self.stretch_index[:, None, :]), self.stretch_G)
        return out

    @property
    def flexible(self):
        return self.n_f > 0


@dataclass(frozen=True)
class BodyGroup:
    """Bodies with the same number of elastic coordinates ``n_f``, invariants stacked (g, ...).

    Lets the dynamics kernels run over all bodies of a group at once.
    """

    index: np.ndarray          # (g,) body indices
    q_start: np.ndarray        # (g,) start of each body's coordinates in q
    v_start: np.ndarray        # (g,)
    mass: np.ndarray           # (g,)
    first_moment: np.ndarray   # (g, 3, n_f + 1)
    second_index: np.ndarray   # (nnz, 4): the nonzeros of the bodies' T, all bodies' together
    second_value: np.ndarray   # (g, nnz): each body's T there (0 where it has none)
    rot_inertia: np.ndarray    # (g, 3, 3)
    rot_coupling: np.ndarray   # (g, 3, n_f)
    ff: np.ndarray             # (n_f, w): the columns of each row's nonzeros in some body's M_ff or K_ff, then -1
    mass_ff: np.ndarray        # (g, n_f, w): each body's M_ff there (sim.model.sparse_rows)
    stiffness_ff: np.ndarray   # (g, n_f, w)

    @property
    def n_f(self):
        return self.mass_ff.shape[1]

    @property
    def second_moment(self):
        """The bodies' ``T`` (g, 3, 3, n_f + 1, n_f + 1) dense, made at each call (tests)."""
        return np.stack([dense_moment(self.second_index, x, self.n_f + 1) for x in self.second_value])


def dense_moment(index, value, n):
    """The dense second moments ``T`` (3, 3, n, n) of the nonzeros ``index`` (nnz, 4) ``(k, l,
    a, b)`` and ``value`` (nnz,)."""
    T = np.zeros((3, 3, n, n))
    T[tuple(index.T)] = value
    return T


def sparse_moment(T):
    """``(index, value)``: the nonzeros of the dense second moments ``T`` (3, 3, n, n), in its
    order (see :func:`dense_moment`)."""
    index = np.argwhere(T != 0)
    return index, T[tuple(index.T)]


# _union: up to this many entries of the bodies' dense T together by dense arrays (8 MB).
DENSE_UNION = 2 ** 20


def _union(bodies):
    """The nonzeros of several bodies' ``T`` together, ``(index (nnz, 4), values (g, nnz))``, in
    the dense array's order."""
    first = bodies[0].second_index
    if all(np.array_equal(b.second_index, first) for b in bodies[1:]):      # alike bodies (a robot's legs)
        return first, np.stack([b.second_value for b in bodies])
    n = bodies[0].n_f + 1
    shape = (3, 3, n, n)
    if len(bodies) * 9 * n * n <= DENSE_UNION:      # small bodies: dense arrays, fewer numpy calls
        dense = np.zeros((len(bodies),) + shape)
        for x, b in zip(dense, bodies):
            x[tuple(b.second_index.T)] = b.second_value
        index = np.ascontiguousarray(np.argwhere(np.any(dense != 0, axis=0)), dtype=np.int64)
        return index, np.ascontiguousarray(dense[(slice(None), *index.T)])
    keys = [np.ravel_multi_index(tuple(b.second_index.T), shape) for b in bodies]
    every = sparse_rows.distinct(np.concatenate(keys))
    values = np.zeros((len(bodies), every.size))
    for x, b, k in zip(values, bodies, keys):
        x[np.searchsorted(every, k)] = b.second_value
    return np.stack(np.unravel_index(every, shape), axis=1).astype(np.int64), values


def _body_groups(bodies, q_index):
    """``(bodies, groups)``: the :class:`BodyGroup` of each elastic size, and the bodies with their
    ``mass_ff``, ``stiffness_ff`` and ``second_value`` views of the groups' stacks (held once)."""
    groups, bodies = [], list(bodies)
    for n_f in sorted({b.n_f for b in bodies}):
        idx = np.array([i for i, b in enumerate(bodies) if b.n_f == n_f], dtype=int)
        sel = [bodies[i] for i in idx]
        index, values = _union(sel)
        # One pattern for the group's M_ff and K_ff (the kernels read both on it)
        ff, both = sparse_rows.union([x for b in sel for x in (b.mass_ff, b.stiffness_ff)])
        group = BodyGroup(index=idx, q_start=np.array([q_index[i][0] for i in idx]),
                          v_start=np.array([q_index[i][1] for i in idx]), mass=np.array([b.mass for b in sel]),
                          second_index=index, second_value=values, ff=ff, mass_ff=np.ascontiguousarray(both[0::2]),
                          stiffness_ff=np.ascontiguousarray(both[1::2]),
                          **{k: np.stack([getattr(b, k) for b in sel])
                             for k in ("first_moment", "rot_inertia", "rot_coupling")})
        groups.append(group)
        for j, i in enumerate(idx):
            # Where a body's own nonzeros are the group's (alike bodies), its values are a view too.
            own = (dict(second_index=index, second_value=values[j]) if np.array_equal(index, sel[j].second_index)
                   else {})
            bodies[i] = replace(sel[j], mass_ff=sparse_rows.SparseRows(ff, group.mass_ff[j], n_f),
                                stiffness_ff=sparse_rows.SparseRows(ff, group.stiffness_ff[j], n_f), **own)
    return tuple(bodies), tuple(groups)


@dataclass(frozen=True)
class Marker:
    """A frame on a body (``body = -1``: ground) moving with the node it sits on.

    ``p_BM_B`` undeformed origin, ``R_BM`` axes in body components, ``D`` (3, n_f) and
    ``E`` (3, n_f) the nodal translation and small rotation as functions of ``q_f``.
    """

    name: str
    body: int
    p_BM_B: np.ndarray
    R_BM: np.ndarray
    D: np.ndarray
    E: np.ndarray
    node: int = -1


@dataclass(frozen=True)
class Joint:
    name: str
    kind: str
    marker_i: int
    marker_j: int


@dataclass(frozen=True)
class Actuator:
    """Drive of a joint coordinate; rigid (a driving constraint) unless ``stiffness`` is set,
    in which case it is a spring [N m/rad or N/m] (and damper [N m s/rad or N s/m]) on it.

    ``rotor_inertia`` [kg m^2] is the motor's rotor (and gear input) on the motor side and
    ``gear_ratio`` the motor angle per joint coordinate (rad/rad, or rad/m for a screw:
    ``2 pi / lead``); the joint sees the reflected inertia ``gear_ratio^2 rotor_inertia``
    [kg m^2 or kg] (:attr:`reflected_inertia`)."""

    name: str
    joint: int
    kind: str  # "angle" [rad] or "slide" [m]
    stiffness: float | None = None
    damping: float = 0.0
    rotor_inertia: float = 0.0
    gear_ratio: float = 1.0

    @property
    def reflected_inertia(self):
        """``n^2 J_m`` [kg m^2 or kg]: the rotor's inertia seen on the joint coordinate."""
        return self.gear_ratio ** 2 * self.rotor_inertia


@dataclass(frozen=True)
class Spring:
    """Lumped 6x6 compliance between markers i and j (axes of i; see :mod:`sim.model.springs`)."""

    name: str
    marker_i: int
    marker_j: int
    stiffness: np.ndarray
    damping: np.ndarray


@dataclass(frozen=True)
class Sensor:
    """A scalar a model declares: ``kind`` in {"deflection", "joint"}; see :mod:`sim.model.kinematics`."""

    name: str
    kind: str
    markers: tuple
    axis: int = 1
    units: str = "m"
    description: str = ""


@dataclass(frozen=True)
class Reference:
    """A published value a model declares for one of its results, drawn with them by
    ``sim plot`` where the run matches ``at``.

    ``quantity`` is ``"modes.frequencies"`` (``values``: elastic frequencies [Hz] of the
    computed modes numbered ``modes``, 1-based, default the lowest; ``at``: the end-effector
    pose they hold at) or ``"sensors.<name>"`` (``values``: the sensor's values at the times
    ``at`` [s] of a transient or KED run).
    """

    quantity: str
    values: tuple
    units: str
    source: str
    at: tuple = ()
    modes: tuple = ()
    condition: str = ""


@dataclass(frozen=True)
class Model:
    """Immutable multibody model; build it with :class:`ModelBuilder`."""

    name: str
    bodies: tuple
    markers: tuple
    joints: tuple
    actuators: tuple
    sensors: tuple
    gravity: np.ndarray
    q_home: np.ndarray
    q_index: tuple   # per body: (start of q_b, start of v_b)
    n_q: int
    n_v: int
    ee_marker: int
    pose_kinds: tuple
    pose_names: tuple
    marker_body: np.ndarray      # (n_m,) each marker's body (-1: ground)
    rows: dict                   # primitive tables, see sim.model.constraints
    row_names: tuple
    springs: tuple = ()
    spring_tables: dict = field(default_factory=dict)   # mi, mj, K, C, d_home (entity axis first)
    body_groups: tuple = ()      # BodyGroup per elastic size: invariants stacked, entity axis first
    notes: str = ""
    references: tuple = ()       # Reference: published values of its results
    pose_home: np.ndarray = field(default_factory=lambda: np.zeros(0))
    ranks: tuple = ()            # see sim.model.assembly.generic_ranks
    pose_determined: bool = True  # see sim.model.assembly.pose_determined
    mobility: object = field(default=None, compare=False, repr=False)   # FreeMotions at home (sim.model.mobility)
    free_motions_declared: int = 0   # free motions that move the end effector by design (declare_free_motions)
    free_motions_why: str = ""
    warnings: tuple = ()         # implausible but possible inputs (sim.model.plausible), one line each
    # The constant tables of the compiled kernels (sim.model.tables.constants), built with the model.
    kernel: tuple = field(default=(), compare=False, repr=False)

    def __repr__(self):
        # The dataclass's repr prints every table: 177 000 characters for a Delta.
        flexible = sum(1 for b in self.bodies if b.n_f)
        return (f"Model('{self.name}': {len(self.bodies)} bodies ({flexible} flexible), {self.n_v} velocity "
                f"coordinates, {len(self.joints)} joints, {len(self.actuators)} actuators, end effector "
                f"{' '.join(self.pose_names)})")

    @property
    def body_names(self):
        return tuple(b.name for b in self.bodies)

    @property
    def pose_units(self):
        return tuple("m" if k in ("x", "y", "z") else "rad" for k in self.pose_kinds)

    @property
    def actuator_names(self):
        return tuple(a.name for a in self.actuators)

    def q_slice(self, b):
        """Slice of body ``b``'s coordinates in ``q``."""
        return slice(self.q_index[b][0], self.q_index[b][0] + 7 + self.bodies[b].n_f)

    def v_slice(self, b):
        return slice(self.q_index[b][1], self.q_index[b][1] + 6 + self.bodies[b].n_f)

    @property
    def v_rigid(self):
        """Indices of the reference (rigid) velocity coordinates in ``v``."""
        starts = np.array([s for _, s in self.q_index], dtype=int)
        return (starts[:, None] + np.arange(6)).ravel()

    @property
    def q_rigid(self):
        """Indices of the reference (rigid) coordinates in ``q``: each body's position and
        quaternion."""
        starts = np.array([s for s, _ in self.q_index], dtype=int)
        return (starts[:, None] + np.arange(7)).ravel()

    @property
    def v_elastic(self):
        return np.concatenate([np.arange(s + 6, s + 6 + b.n_f) for b, (_, s) in zip(self.bodies, self.q_index)]
                              + [np.zeros(0)]).astype(int)

    @property
    def q_elastic(self):
        return np.concatenate([np.arange(s + 7, s + 7 + b.n_f) for b, (s, _) in zip(self.bodies, self.q_index)]
                              + [np.zeros(0)]).astype(int)
