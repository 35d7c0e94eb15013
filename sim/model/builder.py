r"""Frozen multibody model: bodies, markers, joints, actuators; built and validated once.

Coordinates
-----------
Each body ``b`` owns a slice of the configuration ``q`` and of the velocity ``v``::

    q_b = (r_WB (3), p_WB (4, Euler parameters), q_f (n_f))
    v_b = (v_WB_W (3), w_WB_B (3), q_f_dot (n_f))

``r_WB`` is the frame origin in world, ``w_WB_B`` the angular velocity in body components,
``q_f`` the elastic coordinates (nodal displacements and small rotations in the body frame,
the clamped reference node removed, or modal amplitudes of that clamped body).  A rigid body
is a body with ``n_f = 0``.  Configurations are updated on the manifold by :func:`integrate`.

Inertia invariants
------------------
With ``z = (1, q_f)`` the deformed position of any material point in the body frame is
``u = S(x) B_z z`` (``B_z = [x_0, B]``, ``x_0`` the undeformed nodal vector, ``B`` the
reference-condition or modal basis).  Every body carries, computed once:

* ``mass`` [kg];
* ``first_moment`` (3, n_f+1): ``int rho u dV = first_moment @ z``;
* ``second_moment`` ``T`` (3, 3, n_f+1, n_f+1): ``int rho u_k u_l dV = z^T T[k, l] z``, held by its
  nonzeros ``second_index``, ``second_value`` (a beam's ``T`` is banded);
* ``rot_inertia`` (3, 3), ``rot_coupling`` (3, n_f): rotary inertia of the beam sections
  and of attached inertias (constant, linear FFR theory);
* ``mass_ff``, ``stiffness_ff`` (n_f, n_f).

From these the mass matrix, the quadratic-velocity vector and gravity cost O(n_f^2) per body
(see :mod:`sim.bodies`).  The structure follows Shabana's FFR inertia shape integrals.

References
----------
A. A. Shabana, *Dynamics of Multibody Systems*, 4th ed., 2013, ch. 5.
S. Briot, W. Khalil, *Dynamics of Parallel Robots*, Springer, 2015 (markers and loops).
"""
import contextvars
import dataclasses
import os
import resource

import numpy as np

from sim.kernels.stretch import compact
from sim.model import beam, plausible
from sim.model.rotations import frame_from_axes, quat_from_matrix
from sim.model.sections import COMPONENTS, UNITS
from sim.model.sparse_rows import SparseRows, summed
from sim.model.types import (Actuator, Body, Joint, Marker, Model, Reference, Sensor, Spring, _body_groups,
                             sparse_moment)

# Whether ``build()`` assembles by default: a model file calls it itself, and a process that
# only compiles kernels for the model's structure (sim.app.parallel_compile) turns it off
# through sim.model.loader.load_model(..., assemble=False).
ASSEMBLE = contextvars.ContextVar("assemble", default=True)

JOINT_KINDS = ("fixed", "revolute", "prismatic", "cylindrical", "universal", "spherical")
POSE_KINDS = ("x", "y", "z", "rx", "ry", "rz")
#: Rows of each joint kind, as primitives on markers i and j (axis 0, 1, 2 = x, y, z).
#: ``point``: p_j - p_i; ``dot a b``: a_i . b_j; ``ddot a``: a_i . (p_j - p_i).
JOINT_ROWS = {
    "spherical": [("point",)],
    "universal": [("point",), ("dot", 2, 2)],
    "revolute": [("point",), ("dot", 2, 0), ("dot", 2, 1)],
    "cylindrical": [("ddot", 0), ("ddot", 1), ("dot", 2, 0), ("dot", 2, 1)],
    "prismatic": [("ddot", 0), ("ddot", 1), ("dot", 2, 0), ("dot", 2, 1), ("dot", 0, 1)],
    "fixed": [("point",), ("dot", 2, 0), ("dot", 2, 1), ("dot", 0, 1)],
}
#: Joint coordinate an actuator drives: angle of x_j about z_i, or slide z_i . (p_j - p_i).
ACTUATED = {"revolute": "angle", "cylindrical": "slide", "prismatic": "slide"}


# n x n arrays a beam body's invariants hold at once where its basis is not a selection (B,
# M_ff, K_ff and the products; a selection's are by rows, sim.model.sparse_rows: linear)
DENSE_MATRICES = 6
# Peak bytes per element of a clamped beam body's build, all by rows (measured: 440 kB at 1024
# elements; the elements' 12 x 12 second moments and their entries' indices dominate)
BUILD_BYTES = 500e3


def available_memory():
    """Bytes of memory this process can still take: the least of the memory available now
    (Linux ``MemAvailable``, else the physical memory), the room under its address-space limit
    (``ulimit -v``: ``RLIMIT_AS`` less its present size) and under its control group's limit
    (a container's or a batch job's: cgroup v2 ``memory.max``, v1 ``memory.limit_in_bytes``,
    less what the group uses)."""
    found = [_system_memory()]
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit != resource.RLIM_INFINITY:
        size = _read_number("/proc/self/statm", 0)
        found.append(limit - (size or 0) * resource.getpagesize())
    found.append(_cgroup_room())
    return max(0.0, min(float(f) for f in found if f is not None))


def _system_memory():
    """Linux ``MemAvailable`` [bytes], else the physical memory, else infinity."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return float("inf")


def _read_number(path, field=0):
    """Field ``field`` of the first line of ``path`` as an integer, None if absent or not one
    (cgroup v2 writes ``max`` for no limit)."""
    try:
        with open(path) as handle:
            return int(handle.readline().split()[field])
    except (OSError, ValueError, IndexError):
        return None


def _cgroup_room():
    """Bytes left under this process's control group's memory limit, None without one."""
    try:
        with open("/proc/self/cgroup") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, group = line.split(":", 2)
        if controllers == "":                     # v2: one hierarchy
            base, limit, usage = f"/sys/fs/cgroup{group}", "memory.max", "memory.current"
        elif "memory" in controllers.split(","):  # v1: the memory controller's own
            base, limit, usage = "/sys/fs/cgroup/memory", "memory.limit_in_bytes", "memory.usage_in_bytes"
        else:
            continue
        most = _read_number(os.path.join(base, limit))
        if most is not None and most < 2**60:       # v1 says "no limit" with a huge number
            return most - (_read_number(os.path.join(base, usage)) or 0)
    return None


def _rigid_invariants(name, mass, com_B, inertia_C_B):
    c = np.asarray(com_B, dtype=float)
    I_C = np.asarray(inertia_C_B, dtype=float)
    # int rho r r^T about the mass centre, from the inertia tensor: E = tr(I)/2 * 1 - I.
    E = 0.5 * np.trace(I_C) * np.eye(3) - I_C
    index, value = sparse_moment((mass * np.outer(c, c) + E)[:, :, None, None])
    return dict(name=name, mass=float(mass), first_moment=(mass * c)[:, None], second_index=index, second_value=value,
                rot_inertia=np.zeros((3, 3)), rot_coupling=np.zeros((3, 0)), mass_ff=SparseRows.zeros(0),
                stiffness_ff=SparseRows.zeros(0))


def beam_structure_matrices(nodes_B, elements, sections, z_ref_B, stiffening=False):
    """Full nodal matrices of a beam structure in its body frame.

    Parameters
    ----------
    nodes_B : ndarray, shape (n_nodes, 3)
    elements : ndarray of int, shape (n_el, 2)
    sections : sequence of :class:`sim.model.beam.Section`, length n_el
    z_ref_B : ndarray, shape (n_el, 3)
        Vectors fixing each element's local z axis (body components).
    stiffening : bool
        Also each element's elongation row ``stretch_rows`` (n_el, 12) and slope matrix
        ``stretch_G`` (n_el, 12, 12) of the geometric stiffening on its coordinates ``dofs``
        (n_el, 12).

    Returns
    -------
    dict with ``K`` (n, n) (:class:`sim.model.sparse_rows.SparseRows`, as ``Mrot``), ``S`` (3, n)
    first-moment matrix, ``I`` the second-moment matrices (3, 3, n, n), dense up to
    :data:`DENSE_NODAL` coordinates, above by their nonzeros ``(index (nnz, 4), value (nnz,))``
    (:func:`_summed`; banded: each element's 12 coordinates), ``Jrot`` (3, 3), ``Grot`` (3, n),
    ``Mrot`` (n, n),
    ``R_BE`` (n_el, 3, 3), ``L`` (n_el,), ``mass`` -- with ``n = 6 n_nodes``.
    """
    n = 6 * len(nodes_B)
    P1, P2 = nodes_B[elements[:, 0]], nodes_B[elements[:, 1]]
    L = np.linalg.norm(P2 - P1, axis=1)
    R_BE = np.stack([frame_from_axes(b - a, z) for a, b, z in zip(P1, P2, z_ref_B)])
    prop = {k: np.array([getattr(s, k) for s in sections], dtype=float) for k in ("E", "G", "rho", "A", "Iy", "Iz", "J")}
    prop["Ip"] = np.array([s.polar for s in sections])
    T = beam.rotation_12(R_BE)
    dofs = (6 * elements[:, :, None] + np.arange(6)).reshape(-1, 12)
    K_loc = beam.stiffness(L, prop["E"], prop["G"], prop["A"], prop["Iy"], prop["Iz"], prop["J"])
    K_e = T @ K_loc @ np.transpose(T, (0, 2, 1))
    Nt, Nr = beam.shape_functions(L)
    # S_e(xi) = R_BE Nt T^T maps the element's body-frame nodal dofs to body-frame displacements.
    S_e = np.einsum("eab,egbj,eij->egai", R_BE, Nt, T)
    Th_e = np.einsum("eab,egbj,eij->egai", R_BE, Nr, T)
    w_t = GW[None, :] * (prop["rho"] * prop["A"] * L)[:, None]              # (n_el, n_g)
    Jsec = np.zeros((len(L), 3, 3))
    Jsec[:, 0, 0], Jsec[:, 1, 1], Jsec[:, 2, 2] = prop["rho"] * prop["Ip"], prop["rho"] * prop["Iy"], prop["rho"] * prop["Iz"]
    Jsec_B = R_BE @ Jsec @ np.transpose(R_BE, (0, 2, 1))
    I_e = np.einsum("eg,egki,eglj->kleij", w_t, S_e, S_e)   # (3, 3, n_el, 12, 12)
    S1 = np.einsum("eg,egki->kei", w_t, S_e)
    Mr_e = np.einsum("g,e,egai,eab,egbj->eij", GW, L, Th_e, Jsec_B, Th_e)
    Gr_e = np.einsum("g,e,eab,egbj->eaj", GW, L, Jsec_B, Th_e)
    S = np.zeros((3, n))
    Grot = np.zeros((3, n))
    ii, jj = dofs[:, :, None], dofs[:, None, :]
    K = SparseRows.of_entries(ii, jj, K_e, (n, n))
    Mrot = SparseRows.of_entries(ii, jj, Mr_e, (n, n))
    for k in range(3):
        np.add.at(S[k], dofs, S1[k])
        np.add.at(Grot[k], dofs, Gr_e[:, k])
    kl = np.indices((3, 3)).reshape(2, 9, 1, 1, 1)
    if n <= DENSE_NODAL:        # a few hundred kB: numpy's per-call cost dominates the nonzeros'
        I = np.zeros((3, 3, n, n))
        np.add.at(I, (kl[0], kl[1], ii[None], jj[None]), I_e.reshape(9, *ii.shape[:1], 12, 12))
    else:
        at = np.broadcast_arrays(kl[0], kl[1], ii[None], jj[None])
        I = _summed(np.stack([x.ravel() for x in at], axis=1), I_e.reshape(-1), n)
    out = dict(K=K, S=S, I=I, Jrot=np.einsum("e,eab->ab", L, Jsec_B), Grot=Grot, Mrot=Mrot,
               R_BE=R_BE, L=L, K_local=K_loc, mass=float(np.sum(prop["rho"] * prop["A"] * L)),
               stretch_k=prop["E"] * prop["A"] / L)
    if not stiffening:
        return out
    # Second-order axial strain u' + (v'^2 + w'^2)/2: elongation rows and slope matrices
    # int (v'^2 + w'^2) dx = q_loc^T G q_loc (the unit geometric stiffness of each element).
    a_loc = np.zeros(12)
    a_loc[0], a_loc[6] = -1.0, 1.0
    l = L[:, None, None]
    one = np.ones_like(l)
    g = np.block([[36 * one, 3 * l, -36 * one, 3 * l], [3 * l, 4 * l**2, -3 * l, -l**2],
                  [-36 * one, -3 * l, 36 * one, -3 * l], [3 * l, -l**2, -3 * l, 4 * l**2]]) / (30 * l)
    flip = np.array([1.0, -1.0, 1.0, -1.0])
    G_loc = np.zeros((len(L), 12, 12))
    ixy, ixz = np.ix_([1, 5, 7, 11], [1, 5, 7, 11]), np.ix_([2, 4, 8, 10], [2, 4, 8, 10])
    G_loc[:, ixy[0], ixy[1]] = g
    G_loc[:, ixz[0], ixz[1]] = g * np.outer(flip, flip)
    return dict(out, stretch_rows=T @ a_loc, stretch_G=T @ G_loc @ np.transpose(T, (0, 2, 1)), dofs=dofs)


def _stretch_tables(mats, n, B):
    """A stiffened body's per-element tables on its elastic coordinates (:func:`compact`): a
    ``B`` that selects columns by indexing each element's 12 coordinates, another one densely
    (``B^T G_e B`` per element)."""
    rows, slopes, dofs = mats["stretch_rows"], mats["stretch_G"], mats["dofs"]
    keep = _keep(B)
    if keep is None:
        B = np.asarray(B)
        e = np.arange(len(dofs))[:, None]
        full_rows, full_G = np.zeros((len(dofs), n)), np.zeros((len(dofs), n, n))
        full_rows[e, dofs] = rows
        full_G[e[:, :, None], dofs[:, :, None], dofs[:, None, :]] = slopes
        return compact(full_rows @ B, B.T @ full_G @ B)
    pos = np.full(n, -1, dtype=np.int64)
    pos[keep] = np.arange(keep.size)
    at = pos[dofs]                                       # each element coordinate's elastic index
    order = np.argsort(np.where(at >= 0, at, n), axis=1, kind="stable")    # ascending, fixed ones last
    at = np.take_along_axis(at, order, axis=1)
    kept = at >= 0
    rows = np.take_along_axis(rows, order, axis=1) * kept
    e = np.arange(len(dofs))[:, None, None]
    slopes = slopes[e, order[:, :, None], order[:, None, :]] * (kept[:, :, None] & kept[:, None, :])
    return compact(rows, slopes, at)


# Up to this many nodal coordinates a body's second moments are assembled and projected as
# dense arrays (beam_structure_matrices, _projected_dense): numpy's per-call cost on the
# nonzeros' small arrays made a NaVARo link 5-8x slower, and a model is built dozens of times in
# an identification; above, by their nonzeros (linear memory).
DENSE_NODAL = 128


def _summed(index, value, n):
    """The nonzeros ``(index, value)`` of second moments (3, 3, n, n) given as entries ``index``
    (nnz, 4), ``value`` (nnz,) that may repeat, in the dense array's order: the entries of one
    place added in the order given (as ``np.add.at`` into the dense array adds them)."""
    order, first, value = summed(np.ravel_multi_index(tuple(index.T), (3, 3, n, n)), value)
    return index[order[first]], value


def _projected_dense(I, x0, B):
    """The body's second moments ``T = B_z^T I B_z`` (3, 3, m, m), ``B_z = [x0, B]`` (n, m), of
    the dense nodal ones ``I`` (3, 3, n, n), dense: a ``B`` that selects columns by indexing,
    another one by products."""
    keep = _keep(B)
    if keep is None:
        Bz = np.column_stack([x0, np.asarray(B)])
        return Bz.T @ I @ Bz
    T = np.empty((3, 3, len(keep) + 1, len(keep) + 1))
    T[:, :, 1:, 1:] = I[:, :, keep][:, :, :, keep]
    T[:, :, 0, 1:] = (x0 @ I)[:, :, keep]
    T[:, :, 1:, 0] = (I @ x0)[:, :, keep]
    T[:, :, 0, 0] = x0 @ I @ x0
    return T


def _projected(I, n, x0, B):
    """The body's second moments ``T = B_z^T I B_z`` (3, 3, m, m), ``B_z = [x0, B]`` (n, m), of the
    nodal ones ``I`` (3, 3, n, n), both by their nonzeros (:func:`_summed`), zeros dropped: a
    ``B`` that selects columns is applied by indexing (the band kept), another one by sparse
    products."""
    index, value = I
    k, l, i, j = index.T
    keep = _keep(B)
    if keep is None:
        import scipy.sparse
        T = np.zeros((3, 3, B.shape[1] + 1, B.shape[1] + 1))
        Bz = np.column_stack([x0, np.asarray(B)])
        for a in range(3):
            for b in range(3):
                at = (k == a) & (l == b)
                T[a, b] = Bz.T @ (scipy.sparse.csr_matrix((value[at], (i[at], j[at])), shape=(n, n)) @ Bz)
        return sparse_moment(T)
    pos = np.zeros(n, dtype=np.int64)
    pos[keep] = np.arange(1, keep.size + 1)       # T's index of each kept coordinate (0: none)
    # Row and column 0: x0^T I[k, l] and I[k, l] x0; their corner x0^T I[k, l] x0.
    row, col = value * x0[i], value * x0[j]
    corner = row * x0[j]
    zero = np.zeros_like(k)
    inner = (pos[i] > 0) & (pos[j] > 0)
    parts = [(np.stack([k, l, pos[i], pos[j]], axis=1)[inner], value[inner]),
             (np.stack([k, l, zero, pos[j]], axis=1)[pos[j] > 0], row[pos[j] > 0]),
             (np.stack([k, l, pos[i], zero], axis=1)[pos[i] > 0], col[pos[i] > 0]),
             (np.stack([k, l, zero, zero], axis=1), corner)]
    index, value = _summed(np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
                           B.shape[1] + 1)
    return index[value != 0], value[value != 0]


GW = beam.GAUSS_W


class ModelBuilder:
    """Mutable description of a model; :meth:`build` validates it and returns a :class:`Model`.

    Positions and orientations are given in world coordinates at the home configuration
    (an approximate one is enough: :meth:`build` assembles it exactly).

    Parameters
    ----------
    name : str
    gravity : array_like, shape (3,)
        Gravity acceleration in world [m/s^2]; required (pass zeros for none).
    """

    def __init__(self, name, gravity):
        self.name = name
        self.gravity = np.asarray(gravity, dtype=float)
        self._bodies = []     # dicts
        self._markers = []
        self._joints = []
        self._actuators = []
        self._sensors = []
        self._springs = []
        self._problems = []
        self._ee = None
        self.notes = ""
        self._references = []
        self._declared = None

    # -- bodies ----------------------------------------------------------------------------
    def _body_index(self, name):
        for i, b in enumerate(self._bodies):
            if b["name"] == name:
                return i
        return None

    def _new_body(self, name):
        if self._body_index(name) is not None:
            self._problems.append(f"body `{name}` defined twice")

    def add_rigid_body(self, name, mass, com, inertia, position=(0, 0, 0), orientation=None, substructure=None):
        """Rigid body; ``com`` (world, home) and ``inertia`` (3, 3) about the mass centre in world axes.

        The body frame is at ``position`` with axes ``orientation`` (R_WB, identity by default).
        """
        self._new_body(name)
        R = np.eye(3) if orientation is None else np.asarray(orientation, dtype=float)
        o = np.asarray(position, dtype=float)
        if not (np.isfinite(mass) and mass > 0):
            self._problems.append(f"body `{name}`: mass must be > 0, got {mass!r}")
        I_W = np.asarray(inertia, dtype=float)
        if not np.allclose(I_W, I_W.T) or np.linalg.eigvalsh(0.5 * (I_W + I_W.T)).min() < 0:
            self._problems.append(f"body `{name}`: inertia must be symmetric positive semidefinite")
        com_B = R.T @ (np.asarray(com, dtype=float) - o)
        self._bodies.append(dict(name=name, kind="rigid", R_WB=R, r_WB=o, mass=float(mass), com_B=com_B,
                                 inertia_B=R.T @ I_W @ R, substructure=substructure or name, points=[]))

    def add_beam_body(self, name, nodes, elements, section, z_ref=(0, 0, 1), clamp=0, orientation=None,
                      modes=None, substructure=None, stiffening=False, pinned=None, plane=None):
        """Flexible body made of 3D Euler–Bernoulli beam elements (floating frame of reference).

        Parameters
        ----------
        nodes : array_like, shape (n_nodes, 3)
            Node positions in world at home [m].
        elements : array_like of int, shape (n_el, 2)
        section : Section or sequence of Section (one per element)
        z_ref : array_like, shape (3,) or (n_el, 3)
            World vector(s) fixing the element local z axis (principal axis of ``Iy``).
        clamp : int
            Reference node: its displacement and rotation are zero in the body frame, whose
            origin sits there.
        orientation : (3, 3), optional
            Body axes in world at home; world-aligned by default.
        modes : int, optional
            Keep only this many clamped-body modes as elastic coordinates (default: all nodal dofs).
        stiffening : bool
            Geometric stiffening: axial strain ``u' + (v'^2 + w'^2)/2`` per element, so that
            axial (e.g. centrifugal) forces stiffen bending (:mod:`sim.model.dynamics`).
        pinned : int, optional
            Pinned (chord-frame) reference condition instead of the clamp: node ``clamp``
            keeps zero displacement and twist but rotates freely about the transverse axes,
            node ``pinned`` moves only along the chord between them.  With ``modes``, the
            basis is then the simply-supported modes (e.g. a sine-mode Ritz rod).
        plane : array_like, shape (3,), optional
            World normal of a plane holding the beam: keep only its in-plane elastic
            coordinates, each node's translations in the plane and rotation about the normal
            (axial and in-plane bending; out-of-plane bending and torsion left out).  Half
            the coordinates and a quarter of the inertia terms, for a body whose loads and
            motion stay in that plane (a planar mechanism without out-of-plane gravity): the
            same in-plane response, up to round-off.
        """
        self._new_body(name)
        nodes = np.asarray(nodes, dtype=float)
        elements = np.asarray(elements, dtype=int)
        n_el = len(elements)
        sections = [section] * n_el if isinstance(section, beam.Section) else list(section)
        if len(sections) != n_el:
            self._problems.append(f"body `{name}`: {len(sections)} sections for {n_el} elements")
        span = float(np.linalg.norm(np.ptp(nodes, axis=0))) if nodes.ndim == 2 and len(nodes) else 0.0
        for s in sections[:1] if isinstance(section, beam.Section) else sections:
            problems = s.problems()
            self._problems += [f"body `{name}`: {p}" for p in problems]
            if not problems and span > 0:
                self._problems += [f"body `{name}`: {p}" for p in plausible.section_problems(s.depth, span)]
        if elements.size == 0 or elements.min() < 0 or elements.max() >= len(nodes):
            self._problems.append(f"body `{name}`: element connectivity refers to missing nodes")
        elif np.any(np.linalg.norm(nodes[elements[:, 1]] - nodes[elements[:, 0]], axis=1) <= 0):
            self._problems.append(f"body `{name}`: zero-length element")
        if not 0 <= clamp < len(nodes):
            self._problems.append(f"body `{name}`: clamp node {clamp} does not exist")
        if pinned is not None and not (0 <= pinned < len(nodes) and pinned != clamp):
            self._problems.append(f"body `{name}`: pinned node {pinned} must be another existing node")
        z_ref = np.broadcast_to(np.asarray(z_ref, dtype=float), (n_el, 3))
        if plane is not None:
            plane = np.asarray(plane, dtype=float).reshape(-1)
            if plane.shape != (3,) or not np.all(np.isfinite(plane)) or np.linalg.norm(plane) == 0:
                self._problems.append(f"body `{name}`: `plane` must be a nonzero normal vector (3 numbers), "
                                      f"got {plane.tolist()}")
                plane = None
            else:
                plane = plane / np.linalg.norm(plane)
                if elements.size and elements.min() >= 0 and elements.max() < len(nodes):
                    axes = nodes[elements[:, 1]] - nodes[elements[:, 0]]
                    off = np.abs(axes @ plane) > 1e-9 * np.linalg.norm(axes, axis=1)
                    if off.any():
                        self._problems.append(f"body `{name}`: element {int(np.argmax(off))} is not in the plane "
                                              f"normal to {plane.tolist()}")
        R = np.eye(3) if orientation is None else np.asarray(orientation, dtype=float)
        self._bodies.append(dict(name=name, kind="beam", R_WB=R, r_WB=nodes[clamp] if 0 <= clamp < len(nodes) else nodes[0],
                                 nodes_W=nodes, elements=elements, sections=sections, z_ref_W=z_ref, clamp=clamp,
                                 modes=modes, substructure=substructure or name, points=[],
                                 stiffening=bool(stiffening), pinned=pinned, plane=plane))

    def add_point_mass(self, body, mass, inertia=None, node=None, position=None):
        """Attach a mass (and an inertia about its centre, world axes at home) to a body.

        On a flexible body the mass sits at ``node`` (or the node at ``position``); on a rigid
        body at ``position`` (world, home).
        """
        b = self._body_index(body)
        if b is None:
            self._problems.append(f"point mass: unknown body `{body}`")
            return
        if not (np.isfinite(mass) and mass > 0):
            self._problems.append(f"point mass on `{body}`: mass must be > 0, got {mass!r}")
        J = np.zeros((3, 3)) if inertia is None else np.asarray(inertia, dtype=float)
        self._bodies[b]["points"].append(dict(mass=float(mass), inertia=J, node=node, position=position))

    # -- markers, joints, actuators ---------------------------------------------------------
    def add_marker(self, name, body, position, axes=None):
        """Marker ``name`` on ``body`` (None for ground) at ``position`` (world, home).

        ``axes`` (3, 3) are the marker axes (columns) in world at home; world-aligned by default.
        On a flexible body the position must coincide with a node.
        """
        if any(m["name"] == name for m in self._markers):
            self._problems.append(f"marker `{name}` defined twice")
        b = -1 if body is None else self._body_index(body)
        if b is None:
            self._problems.append(f"marker `{name}`: unknown body `{body}`")
            b = -1
        A = np.eye(3) if axes is None else np.asarray(axes, dtype=float)
        if not np.allclose(A.T @ A, np.eye(3), atol=1e-9) or np.linalg.det(A) < 0:
            self._problems.append(f"marker `{name}`: axes are not a right-handed orthonormal frame")
        self._markers.append(dict(name=name, body=b, position=np.asarray(position, dtype=float), axes=A))
        return name

    def _marker_index(self, name, where):
        for i, m in enumerate(self._markers):
            if m["name"] == name:
                return i
        self._problems.append(f"{where}: unknown marker `{name}`")
        return -1

    def add_joint(self, name, kind, marker_i, marker_j):
        """Joint between markers (i on the first body, j on the second).

        Conventions: revolute/cylindrical/prismatic axis = z of both markers; universal:
        first axis z_i, second axis z_j (perpendicular); spherical: coincident origins.
        """
        if kind not in JOINT_KINDS:
            self._problems.append(f"joint `{name}`: unknown kind `{kind}` (one of {', '.join(JOINT_KINDS)})")
        if any(j.name == name for j in self._joints):
            self._problems.append(f"joint `{name}` defined twice")
        self._joints.append(Joint(name, kind, self._marker_index(marker_i, f"joint `{name}`"),
                                  self._marker_index(marker_j, f"joint `{name}`")))
        return name

    def add_spring(self, name, marker_i, marker_j, stiffness, damping=None):
        """Lumped compliance between two markers (bearing, clutch, screw).

        ``stiffness`` and ``damping``: (6, 6) in marker i axes, translations then rotations
        [N/m, N/rad, N m/m, N m/rad]; the spring is unloaded at the home configuration.
        """
        K = np.asarray(stiffness, dtype=float)
        C = np.zeros((6, 6)) if damping is None else np.asarray(damping, dtype=float)
        for label, X in (("stiffness", K), ("damping", C)):
            if X.shape != (6, 6) or not np.all(np.isfinite(X)):
                self._problems.append(f"spring `{name}`: {label} must be a finite 6x6 matrix")
            elif not np.allclose(X, X.T) or np.linalg.eigvalsh(0.5 * (X + X.T)).min() < -1e-9 * max(1.0, np.abs(X).max()):
                self._problems.append(f"spring `{name}`: {label} must be symmetric positive semidefinite")
        self._springs.append(Spring(name, self._marker_index(marker_i, f"spring `{name}`"),
                                    self._marker_index(marker_j, f"spring `{name}`"), K, C))
        return name

    def add_actuator(self, name, joint, stiffness=None, damping=0.0, rotor_inertia=0.0, gear_ratio=1.0):
        """Actuator on the coordinate of ``joint`` (revolute: angle; prismatic/cylindrical: slide).

        With ``stiffness`` [N m/rad or N/m] the drive is compliant (a spring on the joint
        coordinate towards its target, e.g. a ball screw), with optional ``damping``.

        ``rotor_inertia`` [kg m^2]: the motor's rotor on the motor side (a base-mounted motor:
        its carrier's rotation is neglected); ``gear_ratio`` ``n`` > 0: motor angle per joint
        coordinate [rad/rad; rad/m for a screw of lead ``L``: ``n = 2 pi / L``].  The joint
        sees ``n^2 rotor_inertia``.  With ``stiffness`` too, the transmission is a spring
        between the motor (its own coordinate, joint-side units) and the joint (servo drives,
        :mod:`sim.solvers.closed_loop`).
        """
        if not (np.isfinite(rotor_inertia) and rotor_inertia >= 0):
            self._problems.append(f"actuator `{name}`: rotor_inertia must be >= 0, got {rotor_inertia!r}")
        if not (np.isfinite(gear_ratio) and gear_ratio > 0):
            self._problems.append(f"actuator `{name}`: gear_ratio must be > 0, got {gear_ratio!r}")
        if stiffness is not None and not (np.isfinite(stiffness) and stiffness > 0):
            self._problems.append(f"actuator `{name}`: stiffness must be > 0, got {stiffness!r}")
        if not (np.isfinite(damping) and damping >= 0):
            self._problems.append(f"actuator `{name}`: damping must be >= 0, got {damping!r}")
        idx = [i for i, j in enumerate(self._joints) if j.name == joint]
        if not idx:
            self._problems.append(f"actuator `{name}`: unknown joint `{joint}`")
            return
        kind = ACTUATED.get(self._joints[idx[0]].kind)
        if kind is None:
            self._problems.append(f"actuator `{name}`: joint `{joint}` of kind {self._joints[idx[0]].kind} has no drivable coordinate")
            return
        self._actuators.append(Actuator(name, idx[0], kind, None if stiffness is None else float(stiffness),
                                        float(damping), float(rotor_inertia), float(gear_ratio)))

    def add_sensor(self, name, kind, markers, axis=1, units=None, description=""):
        """Declare a scalar output (see :func:`sim.model.kinematics.sensor_values`): ``kind``
        ``"deflection"`` (markers a, m, b; ``axis`` of a), ``"joint"`` (markers i, j) or
        ``"section"`` (one marker on a flexible body; ``axis`` the section force, 0..5 or its name
        N, Vy, Vz, T, My, Mz).  ``units`` default: the section force's (N, N m), else m."""
        if kind == "section":
            if axis in COMPONENTS:
                axis = COMPONENTS.index(axis)
            if axis not in range(6):
                self._problems.append(f"sensor `{name}`: axis must be one of {', '.join(COMPONENTS)} "
                                      f"(or 0..5), got {axis!r}")
                axis = 0
            if len(markers) != 1:
                self._problems.append(f"sensor `{name}`: a section sensor takes one marker, got {len(markers)}")
        default = UNITS[axis] if kind == "section" else "m"
        self._sensors.append(Sensor(name, kind, tuple(markers), axis, units or default, description))

    def add_reference(self, quantity, values, *, units, source, at=(), modes=(), condition=""):
        """Declare a published value of one of the model's results (see :class:`Reference`).

        Parameters
        ----------
        quantity : str
            ``"modes.frequencies"`` or ``"sensors.<name>"`` of a declared sensor.
        values : sequence of float
            The published values, in SI ``units``.
        units : str
        source : str
            Where they are published (shown in the figure's legend).
        at : sequence of float
            The end-effector pose of a frequency reference (one value per pose coordinate),
            or the times [s] of a sensor reference (one per value).
        modes : sequence of int, optional
            For frequencies: the computed modes (1-based) they compare with, one per value,
            when not the lowest (a published list may leave out modes the model has).
        condition : str, optional
            What else the value assumes (speed, initial state), shown with it.
        """
        self._references.append(Reference(quantity, tuple(float(v) for v in np.ravel(values)), units, source,
                                          tuple(float(v) for v in np.ravel(at)),
                                          tuple(int(k) for k in np.ravel(modes)), condition))

    def _reference_problems(self, r):
        if r.quantity == "modes.frequencies":
            if r.at and len(r.at) != len(self._ee[1]):
                yield f"`at` must give the pose, {len(self._ee[1])} coordinates, got {len(r.at)}"
            if r.modes and (len(r.modes) != len(r.values) or min(r.modes) < 1):
                yield f"`modes` must give one mode number (from 1) per value, got {list(r.modes)}"
        elif r.quantity.startswith("sensors."):
            if len(r.at) != len(r.values):
                yield f"one time in `at` per value, got {len(r.at)} for {len(r.values)}"
            if not any(x.name == r.quantity[8:] for x in self._sensors):
                yield f"unknown sensor `{r.quantity[8:]}`"
        else:
            yield "expected `modes.frequencies` or `sensors.<name>`"
        if not r.values or not all(np.isfinite(r.values)):
            yield "values must be finite numbers"

    def set_end_effector(self, marker, kinds, names=None):
        """End-effector coordinates: ``kinds`` from x, y, z (world position) and rx, ry, rz
        (Z-Y-X Tait–Bryan angles of the marker axes); ``names`` as shown to users."""
        bad = [k for k in kinds if k not in POSE_KINDS]
        if bad:
            self._problems.append(f"end effector: unknown coordinates {bad} (from {POSE_KINDS})")
        self._ee = (marker, tuple(kinds), tuple(names or kinds))

    def declare_free_motions(self, count, why):
        """Declare that, with the actuators locked, ``count`` free motions move the end effector
        by design (a passive, unactuated axis of the end effector, say), so that the analyses that
        follow a prescribed end-effector motion run on the robot anyway.

        Free motions that leave the end effector in place (a strut spinning between two
        spherical joints) need no declaration.  Without it, a robot whose actuators leave its
        end effector free is refused by those analyses (:func:`sim.model.mobility.require_determined`).

        Parameters
        ----------
        count : int
            The number of such motions; it must be the number the model has.
        why : str
            What they are, for the reader of ``sim model``.
        """
        if not (isinstance(count, (int, np.integer)) and count > 0):
            self._problems.append(f"declare_free_motions: count must be a positive integer, got {count!r}")
        self._declared = (int(count) if isinstance(count, (int, np.integer)) else 0, str(why))

    # -- build ------------------------------------------------------------------------------
    def build(self, assemble=None):
        """Validate everything, precompute invariants, assemble the home configuration.

        Parameters
        ----------
        assemble : bool, optional
            Assemble the home configuration (default: yes, except within
            :func:`sim.model.loader.load_model` with ``assemble=False``).  Unassembled, the
            model has its structure and tables but only the approximate home configuration it
            was given, and no generic ranks: enough to compile kernels for it, nothing more.

        Raises
        ------
        ValueError
            Listing every problem found, one per line.
        """
        problems = list(self._problems)
        if not self._bodies:
            problems.append("the model has no body")
        if self._ee is None:
            problems.append("no end effector declared (set_end_effector)")
        if not (self.gravity.shape == (3,) and np.all(np.isfinite(self.gravity))):
            problems.append(f"gravity must be 3 finite numbers, got {self.gravity!r}")
        bodies, frames = [], []
        if not problems:
            for spec in self._bodies:
                try:
                    body, frame = _make_body(spec)
                except ValueError as exc:
                    problems.append(f"body `{spec['name']}`: {exc}")
                    continue
                bodies.append(body)
                frames.append(frame)
        markers = []
        if not problems:
            for m in self._markers:
                try:
                    markers.append(_make_marker(m, bodies, frames))
                except ValueError as exc:
                    problems.append(f"marker `{m['name']}`: {exc}")
        ee = -1
        if not problems:
            ee = [i for i, m in enumerate(markers) if m.name == self._ee[0]]
            if not ee:
                problems.append(f"end effector: unknown marker `{self._ee[0]}`")
            ee = ee[0] if ee else -1
        for j in self._joints:
            if j.marker_i >= 0 and j.marker_i == j.marker_j:
                problems.append(f"joint `{j.name}` connects a marker to itself")
            elif j.marker_i >= 0 and j.marker_j >= 0 and self._markers[j.marker_i]["body"] == self._markers[j.marker_j]["body"]:
                problems.append(f"joint `{j.name}` connects two markers of the same body")
        for sp in self._springs:
            if sp.marker_i >= 0 and sp.marker_i == sp.marker_j:
                problems.append(f"spring `{sp.name}` connects a marker to itself")
        for s in self._sensors:
            for m in s.markers:
                if not any(x["name"] == m for x in self._markers):
                    problems.append(f"sensor `{s.name}`: unknown marker `{m}`")
                elif s.kind == "section":
                    body = self._markers[self._marker_index(m, "")]["body"]
                    if body < 0 or self._bodies[body]["kind"] != "beam":
                        problems.append(f"sensor `{s.name}`: marker `{m}` is not on a flexible (beam) body")
        problems += [f"reference `{r.quantity}`: {p}" for r in self._references for p in self._reference_problems(r)]
        if problems:
            raise ValueError("invalid model `" + self.name + "`: " + "; ".join(_grouped(problems)))
        sensors = tuple(Sensor(s.name, s.kind, tuple(next(i for i, x in enumerate(markers) if x.name == m)
                                                     for m in s.markers), s.axis, s.units, s.description)
                        for s in self._sensors)
        parts = (tuple(bodies), tuple(markers), tuple(self._joints), tuple(self._actuators), sensors)
        model = _finalise(self.name, parts, self.gravity, frames, (ee, self._ee[1], self._ee[2]), self.notes)
        warnings = [w for spec, body in zip(self._bodies, bodies) if spec["kind"] == "beam"
                    for w in plausible.heavy(body.name, body.mass, float(np.linalg.norm(np.ptp(spec["nodes_W"], axis=0))))]
        model = dataclasses.replace(model, warnings=tuple(warnings))
        if self._springs:
            sp = self._springs
            tables = dict(mi=np.array([s.marker_i for s in sp]), mj=np.array([s.marker_j for s in sp]),
                          K=np.array([s.stiffness for s in sp]), C=np.array([s.damping for s in sp]),
                          d_home=np.zeros((len(sp), 6)))
            model = _replace(model, springs=tuple(sp), spring_tables=tables)
        if self._references:
            model = dataclasses.replace(model, references=tuple(self._references))
        if ASSEMBLE.get() if assemble is None else assemble:
            from sim.model.assembly import assemble, generic_ranks
            from sim.model.evaluator import Kinematics
            from sim.model.kinematics import pose
            # One for the whole assembly: the replacements below change none of the tables the
            # markers' and the rows' kernels read (only the springs' home deflections).
            ev = Kinematics(model)
            q = assemble(model, model.q_home, ev, what="the home configuration")
            model = _replace(model, q_home=q, pose_home=pose(model, q))
            if self._springs:
                from sim.model.kinematics import markers
                from sim.model.springs import deflections
                tables = dict(model.spring_tables, d_home=deflections(model, markers(model, q))[0])
                model = _replace(model, spring_tables=tables)
            model = _replace(model, ranks=generic_ranks(model, ev))
            from sim.model.assembly import pose_determined
            model = _replace(model, pose_determined=pose_determined(model, ev))
            from sim.model.mobility import free_motions
            model = dataclasses.replace(model, mobility=free_motions(model))
        if self._declared:
            model = dataclasses.replace(model, free_motions_declared=self._declared[0],
                                        free_motions_why=self._declared[1])
        return model


def _grouped(problems):
    """``problems`` with those said alike of several bodies (``body `a`: text``) said once,
    ``bodies `a`, `b`: text``, in the order of their first appearance."""
    bodies = {}
    for p in problems:
        head, sep, text = p.partition("`: ")
        key = text if sep and head.startswith("body `") else p
        bodies.setdefault(key, []).append(head[len("body "):] + "`" if sep and head.startswith("body `") else None)
    out = []
    for text, names in bodies.items():
        names = [n for n in names if n is not None]
        out.append(text if not names else f"body {names[0]}: {text}" if len(names) == 1
                   else f"bodies {', '.join(names)}: {text}")
    return out


def _replace(model, **changes):
    """A copy of ``model`` with ``changes``, its kernel tables rebuilt (:mod:`sim.model.tables`)."""
    from sim.model.tables import constants
    model = dataclasses.replace(model, **changes)
    return dataclasses.replace(model, kernel=constants(model))


def _make_body(spec):
    """Body invariants and home frame (r_WB, R_WB) from a builder spec."""
    R_WB, r_WB = spec["R_WB"], spec["r_WB"]
    if spec["kind"] == "rigid":
        mass, com, I_B = spec["mass"], spec["com_B"], spec["inertia_B"]
        for pm in spec["points"]:   # lump attached masses into the rigid body (parallel axes)
            if pm["position"] is None:
                raise ValueError("a point mass on a rigid body needs a position")
            c = R_WB.T @ (np.asarray(pm["position"], dtype=float) - r_WB)
            new_mass = mass + pm["mass"]
            new_com = (mass * com + pm["mass"] * c) / new_mass
            I_B = (I_B + mass * _shift(com - new_com) + R_WB.T @ pm["inertia"] @ R_WB
                   + pm["mass"] * _shift(c - new_com))
            mass, com = new_mass, new_com
        return Body(**_rigid_invariants(spec["name"], mass, com, I_B), substructure=spec["substructure"]), (r_WB, R_WB)
    nodes_B = (spec["nodes_W"] - r_WB) @ R_WB
    z_ref_B = spec["z_ref_W"] @ R_WB
    n = 6 * len(nodes_B)
    # A basis that may not be a selection (modes, a pinned frame, a plane) holds dense n x n
    # arrays, and with stiffening two n x n slope matrices per element (nodal and projected; a
    # selection's are the elements' own, 12 x 12).  A clamped body's are by rows: linear.
    general = spec["modes"] is not None or spec["pinned"] is not None or spec.get("plane") is not None
    need = ((DENSE_MATRICES + 2 * len(spec["elements"]) * bool(spec["stiffening"])) * 8.0 * n * n * general
            + BUILD_BYTES * len(spec["elements"]))
    if need > 0.8 * available_memory():
        raise ValueError(f"{len(spec['elements'])} elements ({n} nodal coordinates) need about {need / 2**30:.3g} GiB "
                         f"for the body's matrices, more than the {available_memory() / 2**30:.3g} GiB available: "
                         f"use fewer elements, or a modal basis")
    mats = beam_structure_matrices(nodes_B, spec["elements"], spec["sections"], z_ref_B, spec["stiffening"])
    mass = mats["mass"]
    masses = []
    for pm in spec["points"]:
        node = pm["node"]
        if node is None:
            d = np.linalg.norm(spec["nodes_W"] - np.asarray(pm["position"], dtype=float), axis=1)
            node = int(np.argmin(d))
            if d[node] > 1e-9 * max(1.0, np.abs(spec["nodes_W"]).max()):
                raise ValueError(f"point mass at {list(pm['position'])} is not at a node")
        t, r = 6 * node + np.arange(3), 6 * node + 3 + np.arange(3)
        J_B = R_WB.T @ pm["inertia"] @ R_WB
        for k in range(3):
            mats["S"][k, t[k]] += pm["mass"]
            masses += [((k, l, t[k], t[l]), pm["mass"]) for l in range(3)]
        mats["Jrot"] += J_B
        mats["Grot"][:, r] += J_B
        mats["Mrot"] = mats["Mrot"].plus(SparseRows.of_entries(r[:, None], r[None, :], J_B, (n, n)))
        mass += pm["mass"]
    if masses and isinstance(mats["I"], np.ndarray):
        for (k, l, i, j), m in masses:
            mats["I"][k, l, i, j] += m
    elif masses:    # added after the elements' (the sums' order of a dense array's += at each)
        mats["I"] = _summed(np.concatenate([mats["I"][0], np.array([m[0] for m in masses])]),
                            np.concatenate([mats["I"][1], [m[1] for m in masses]]), n)
    # The clamp fixes the reference node; the pinned frame (below) leaves it some rotations.
    B = SparseRows.selection(np.setdiff1d(np.arange(n), 6 * spec["clamp"] + np.arange(6)) if spec["pinned"] is None
                             else np.arange(n), n)
    plane = spec.get("plane")
    if plane is not None:
        B = _in_plane(B, len(nodes_B), R_WB.T @ plane)
    if spec["pinned"] is not None:
        # Pinned (chord) frame: the reference node keeps its rotations about the transverse
        # axes, the far node slides along the chord; B spans the nodal vectors that satisfy it.
        a, b = spec["clamp"], spec["pinned"]
        e = nodes_B[b] - nodes_B[a]
        e = e / np.linalg.norm(e)
        t1 = np.cross(e, [1.0, 0, 0] if abs(e[0]) < 0.9 else [0, 1.0, 0])
        t1 /= np.linalg.norm(t1)
        t2 = np.cross(e, t1)
        G = np.zeros((6, n))
        G[:3, 6 * a:6 * a + 3] = np.eye(3)
        G[3, 6 * a + 3:6 * a + 6] = e
        G[4, 6 * b:6 * b + 3] = t1
        G[5, 6 * b:6 * b + 3] = t2
        B = _constrained(B, G)
    if spec["modes"] is not None and isinstance(mats["I"], np.ndarray):
        M_full = np.einsum("kkij->ij", mats["I"]) + mats["Mrot"].toarray()
    elif spec["modes"] is not None:
        (k, l, i, j), value = mats["I"][0].T, mats["I"][1]
        M_full = mats["Mrot"].toarray()
        np.add.at(M_full, (i[k == l], j[k == l]), value[k == l])
    if spec["modes"] is not None:     # a modal basis: the body's dense pencil, on purpose
        B = np.asarray(B)
        Kc, Mc = B.T @ mats["K"].toarray() @ B, B.T @ M_full @ B
        r = int(spec["modes"])
        if not 0 < r <= B.shape[1]:
            raise ValueError(f"`modes` must be in 1..{B.shape[1]}, got {spec['modes']}")
        import scipy.linalg
        _, phi = scipy.linalg.eigh(Kc, Mc, subset_by_index=[0, r - 1])
        B = B @ phi
    x0 = np.zeros(n)
    x0.reshape(-1, 6)[:, :3] = nodes_B
    # M_ff = sum_k T[k, k, 1:, 1:] + B^T M_rot B
    c = B.shape[1]
    if isinstance(mats["I"], np.ndarray):
        T = _projected_dense(mats["I"], x0, B)
        index, value = sparse_moment(T)
        mass_ff = SparseRows.of_dense(np.einsum("kkab->ab", T[:, :, 1:, 1:]))
    else:
        index, value = _projected(mats["I"], n, x0, B)
        k, l, a, b = index.T
        inner = (k == l) & (a > 0) & (b > 0)
        mass_ff = SparseRows.of_entries(a[inner] - 1, b[inner] - 1, value[inner], (c, c))
    keep = _keep(B)
    if keep is None:    # a basis that is not a selection: its products dense (n, c)
        B = np.asarray(B)
        S, G_rot = mats["S"] @ B, mats["Grot"] @ B
        M_rot, K = (SparseRows.of_dense(B.T @ (mats[k] @ B)) for k in ("Mrot", "K"))
        B = SparseRows.of_dense(B)
    else:
        S, G_rot = mats["S"][:, keep], mats["Grot"][:, keep]
        M_rot, K = mats["Mrot"].take(keep), mats["K"].take(keep)
    body = Body(name=spec["name"], mass=mass, first_moment=np.column_stack([mats["S"] @ x0, S]),
                second_index=index, second_value=value, rot_inertia=mats["Jrot"], rot_coupling=G_rot,
                mass_ff=mass_ff.plus(M_rot), stiffness_ff=K, nodes_B=nodes_B,
                elements=spec["elements"], basis=B,
                substructure=spec["substructure"], element_stiffness=mats["K_local"], element_frames=mats["R_BE"],
                sections=tuple(spec["sections"]))
    if spec["stiffening"]:
        idx, A, G = _stretch_tables(mats, n, B)
        body = dataclasses.replace(body, stretch_k=mats["stretch_k"], stretch_index=idx, stretch_A=A, stretch_G=G)
    return body, (r_WB, R_WB)


def _in_plane(B, nodes, normal):
    """The columns of ``B`` (6 nodes, c) restricted to each node's in-plane motion for the plane
    of unit ``normal`` (body frame): translations in it, rotation about the normal.  For a
    normal along a body axis, a selection of ``B``'s columns (the kernels keep their sparsity)."""
    axis = int(np.argmax(np.abs(normal)))
    keep = _keep(B)
    if abs(abs(normal[axis]) - 1.0) < 1e-12 and keep is not None:
        kept = np.zeros(6, dtype=bool)
        kept[:3] = True
        kept[axis] = False                           # translation along the normal
        kept[3 + axis] = True                        # rotation about it
        return SparseRows.selection(keep[np.tile(kept, nodes)[keep]], B.shape[0])
    import scipy.linalg
    B = np.asarray(B)
    return B @ scipy.linalg.null_space(_out_of_plane(nodes, normal) @ B)


def _constrained(B, G):
    """Columns spanning the motions of ``B`` (n, c) that the rows of ``G`` (k, n) leave free:
    ``B`` without the columns they fix when each row picks out one column (the kernels keep
    the sparsity of a selection), else an orthonormal basis of the null space of ``G B``."""
    keep = _keep(B)
    GB = G[:, keep] if keep is not None else G @ np.asarray(B)
    GB[np.abs(GB) <= 1e-12 * max(1.0, np.abs(GB).max(initial=0.0))] = 0.0
    picks = GB != 0
    if np.all(picks.sum(axis=1) <= 1):
        return SparseRows.selection(keep[~picks.any(axis=0)], B.shape[0]) if keep is not None \
            else B[:, ~picks.any(axis=0)]
    import scipy.linalg
    return np.asarray(B) @ scipy.linalg.null_space(GB)


def _keep(B):
    """The coordinate each column of the basis ``B`` (n, c) picks where it is a selection
    (:class:`sim.model.sparse_rows.SparseRows`, or dense with one entry +-1 a column), else None."""
    if isinstance(B, SparseRows):
        return B.selected()
    if np.count_nonzero(B) == B.shape[1] and np.all(np.abs(B[B != 0]) == 1):
        return B.argmax(axis=0) if np.all(B[B != 0] == 1) else None
    return None


def _out_of_plane(nodes, normal):
    """Rows picking each node's out-of-plane motion: translation along ``normal`` and rotations
    about two in-plane axes (3 nodes, 6 nodes)."""
    t1 = np.cross(normal, [1.0, 0, 0] if abs(normal[0]) < 0.9 else [0, 1.0, 0])
    t1 /= np.linalg.norm(t1)
    t2 = np.cross(normal, t1)
    G = np.zeros((3 * nodes, 6 * nodes))
    for k in range(nodes):
        G[3 * k, 6 * k:6 * k + 3] = normal
        G[3 * k + 1, 6 * k + 3:6 * k + 6] = t1
        G[3 * k + 2, 6 * k + 3:6 * k + 6] = t2
    return G


def _shift(d):
    """Parallel-axis term ``|d|^2 1 - d d^T`` (times the mass)."""
    return d @ d * np.eye(3) - np.outer(d, d)


def _make_marker(m, bodies, frames):
    b = m["body"]
    if b < 0:
        return Marker(m["name"], -1, m["position"], m["axes"], np.zeros((3, 0)), np.zeros((3, 0)))
    body = bodies[b]
    r_WB, R_WB = frames[b]
    p_B = R_WB.T @ (m["position"] - r_WB)
    R_BM = R_WB.T @ m["axes"]
    if not body.flexible and body.nodes_B.size == 0:
        return Marker(m["name"], b, p_B, R_BM, np.zeros((3, 0)), np.zeros((3, 0)))
    d = np.linalg.norm(body.nodes_B - p_B, axis=1)
    node = int(np.argmin(d))
    if d[node] > 1e-9 * max(1.0, np.abs(body.nodes_B).max()):
        raise ValueError(f"position {np.round(m['position'], 6).tolist()} is not at a node of body `{body.name}`")
    rows = body.basis.rows(slice(6 * node, 6 * node + 6))
    return Marker(m["name"], b, body.nodes_B[node], R_BM, rows[:3], rows[3:], node)


def _finalise(name, parts, gravity, frames, end_effector, notes):
    """The :class:`Model` of the built ``parts = (bodies, markers, joints, actuators, sensors)``
    at the bodies' home ``frames`` ((r, R) each), with the ``end_effector = (marker, kinds,
    names)``: the coordinates' layout and the home state."""
    bodies, markers, joints, actuators, sensors = parts
    ee, kinds, names = end_effector
    q_index, iq, iv = [], 0, 0
    q0 = []
    for body, (r, R) in zip(bodies, frames):
        q_index.append((iq, iv))
        iq += 7 + body.n_f
        iv += 6 + body.n_f
        q0 += [r, quat_from_matrix(R), np.zeros(body.n_f)]
    n_q, n_v = iq, iv
    rows, row_names = _row_tables(joints, actuators)
    bodies, groups = _body_groups(bodies, q_index)
    model = Model(name=name, bodies=bodies, markers=markers, joints=joints, actuators=actuators, sensors=sensors,
                 gravity=gravity, q_home=np.concatenate(q0), q_index=tuple(q_index), n_q=n_q, n_v=n_v, ee_marker=ee,
                 pose_kinds=kinds, pose_names=names, marker_body=np.array([m.body for m in markers], dtype=int),
                 rows=rows, row_names=row_names, notes=notes, body_groups=groups)
    return _replace(model)


def _row_tables(joints, actuators):
    """Primitive index tables, in row order: all joint rows, then actuator rows.

    ``rows[kind]`` is a dict of integer arrays plus ``row`` (the row number of each entry;
    for ``point`` the first of its three rows).
    """
    tables = {k: {"row": [], "mi": [], "mj": [], "ai": [], "aj": []} for k in ("point", "dot", "ddot", "angle")}
    names, r = [], 0
    for j in joints:
        for prim in JOINT_ROWS[j.kind]:
            t = tables[prim[0]]
            t["row"].append(r)
            t["mi"].append(j.marker_i)
            t["mj"].append(j.marker_j)
            t["ai"].append(prim[1] if len(prim) > 1 else 0)
            t["aj"].append(prim[2] if len(prim) > 2 else 0)
            width = 3 if prim[0] == "point" else 1
            names += [f"{j.name}:{prim[0]}{'xyz'[c] if width == 3 else ''}" for c in range(width)]
            r += width
    n_joint_rows = r
    for a in actuators:
        j = joints[a.joint]
        t = tables["angle" if a.kind == "angle" else "ddot"]
        t["row"].append(r)
        t["mi"].append(j.marker_i)
        t["mj"].append(j.marker_j)
        t["ai"].append(2)
        t["aj"].append(0)
        names.append(f"{a.name}:{a.kind}")
        r += 1
    out = {k: {f: np.asarray(v, dtype=int) for f, v in t.items()} for k, t in tables.items()}
    out["n_joint"] = n_joint_rows
    out["n_total"] = r
    return out, tuple(names)
