"""The 12-dof beam element (sim.model.beam) and the clamped stiffness of a beam body."""
import numpy as np
import pytest
from numpy.testing import assert_allclose

from conftest import load
from problems import bar_extension, cantilever_tip_deflection, consistent_mass, shaft_twist
from sim.model import beam
from sim.model.builder import beam_structure_matrices
from sim.model.types import dense_moment

#: Element cases: (L, E, G, rho, A, Iy, Iz, J, Ip) with distinct values so that no two terms
#: can be swapped unnoticed.
ELEMENTS = {
    "steel_flat": (0.25, 2.1e11, 8.1e10, 7800.0, 2e-4, 1.667e-9, 6.667e-9, 4.6e-9, 8.334e-9),
    "navaro_leg": (0.21, 74e9, 28.9e9, 2800.0, 2.4e-4, 1.152e-8, 2.000e-9, 5.902e-9, 1.352e-8),
    "long_alu": (3.0, 7e10, 2.6e10, 2700.0, 1e-3, 3e-7, 5e-8, 1e-7, 4e-7),
}


def element_matrices(case):
    """The engine's matrices of one element along x (:func:`sim.model.builder.beam_structure_matrices`,
    what every beam body is built from): stiffness, and mass as the model uses it, the trace of
    the second-moment matrices (translation) plus the section's rotary inertia."""
    L, E, G, rho, A, Iy, Iz, J, Ip = ELEMENTS[case]
    section = beam.Section(E=E, G=G, rho=rho, A=A, Iy=Iy, Iz=Iz, J=J, Ip=Ip)
    full = beam_structure_matrices(np.array([[0.0, 0.0, 0.0], [L, 0.0, 0.0]]), np.array([[0, 1]]), [section],
                                   np.array([[0.0, 0.0, 1.0]]))
    return full["K"].toarray(), np.einsum("kkij->ij", full["I"]) + full["Mrot"].toarray()     # I dense: 12 coordinates


def rigid_motions(L):
    """(12, 6): translations x, y, z, then small rotations about x, y, z of the element about
    node 1 (at the origin; node 2 at (L, 0, 0)): ``u = t + w x p``, ``theta = w``."""
    p = (np.zeros(3), np.array([L, 0.0, 0.0]))
    out = np.zeros((12, 6))
    for k in range(6):
        t = np.eye(3)[k] if k < 3 else np.zeros(3)
        w = np.eye(3)[k - 3] if k >= 3 else np.zeros(3)
        for node in range(2):
            out[6 * node:6 * node + 3, k] = t + np.cross(w, p[node])
            out[6 * node + 3:6 * node + 6, k] = w
    return out


@pytest.mark.parametrize("case", ELEMENTS)
def test_stiffness_is_symmetric(case):
    K, _ = element_matrices(case)
    assert_allclose(K, K.T, rtol=0, atol=1e-14 * np.abs(K).max(), err_msg="element stiffness K - K^T")


@pytest.mark.parametrize("case", ELEMENTS)
def test_stiffness_has_six_zero_eigenvalues_and_is_psd(case):
    K, _ = element_matrices(case)
    lam = np.linalg.eigvalsh(K)
    zero = np.abs(lam) < 1e-10 * lam.max()
    assert zero.sum() == 6, f"element stiffness has {zero.sum()} zero eigenvalues: {lam}"
    assert lam[~zero].min() > 0, f"element stiffness is not positive semidefinite: {lam}"


@pytest.mark.parametrize("case", ELEMENTS)
def test_stiffness_null_space_is_rigid_motion(case):
    K, _ = element_matrices(case)
    R = rigid_motions(ELEMENTS[case][0])
    assert np.linalg.matrix_rank(R) == 6
    # K R = 0 with six zero eigenvalues (test above): the null space is exactly span(R).
    assert_allclose(K @ R, 0.0, atol=1e-12 * np.abs(K).max() * np.abs(R).max(),
                    err_msg="element stiffness times the rigid-body motions")


@pytest.mark.parametrize("case", ELEMENTS)
def test_mass_matches_przemieniecki(case):
    L, _E, _G, rho, A, Iy, Iz, _J, Ip = ELEMENTS[case]
    _, M = element_matrices(case)
    expected = consistent_mass(L, rho, A, Iy, Iz, Ip)
    assert_allclose(M, expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max(),
                    err_msg="quadrature consistent mass vs Przemieniecki closed form")


@pytest.mark.parametrize("case", ELEMENTS)
def test_mass_translation_kinetic_energy(case):
    L, _E, _G, rho, A, *_ = ELEMENTS[case]
    _, M = element_matrices(case)
    velocity = np.array([0.3, -1.2, 0.7])
    v = rigid_motions(L)[:, :3] @ velocity
    assert_allclose(0.5 * v @ M @ v, 0.5 * rho * A * L * velocity @ velocity, rtol=1e-13,
                    err_msg="kinetic energy of a rigid translation")


def tip_flexibility(model, node_dof):
    """Tip response of the clamped beam body to a unit load on nodal dof ``node_dof`` of the tip."""
    body = model.bodies[0]
    n_nodes = len(body.nodes_B)
    row = 6 * (n_nodes - 1) + node_dof
    col = int(np.flatnonzero(body.basis.rows([row])[0])[0])
    load_vector = np.zeros(body.n_f)
    load_vector[col] = 1.0
    return np.linalg.solve(np.asarray(body.stiffness_ff), load_vector)[col]


LOADS = {
    # dof of the tip node and the exact response to a unit load (E = 2.1e11, nu = 0.3)
    "bending_xy": (1, lambda L, s: cantilever_tip_deflection(1.0, L, s["E"], s["Iz"])),
    "bending_xz": (2, lambda L, s: cantilever_tip_deflection(1.0, L, s["E"], s["Iy"])),
    "axial": (0, lambda L, s: bar_extension(1.0, L, s["E"], s["A"])),
    "torsion": (3, lambda L, s: shaft_twist(1.0, L, s["G"], s["J"])),
}


@pytest.mark.parametrize("elements", [1, 8])
@pytest.mark.parametrize("load_case", LOADS)
def test_cantilever_static_tip_response(load_case, elements):
    length, width, height = 1.3, 0.02, 0.01
    model = load("beam", support="clamped-free", elements=elements, length=length, width=width, height=height)
    section = beam.Section.rectangle(width, height, E=2.1e11, rho=7800.0, nu=0.3)
    props = {k: getattr(section, k) for k in ("E", "G", "A", "Iy", "Iz", "J")}
    dof, exact = LOADS[load_case]
    assert_allclose(tip_flexibility(model, dof), exact(length, props), rtol=1e-10,
                    err_msg=f"cantilever tip response ({load_case}) from the body stiffness K_ff")


def _cantilever(plane=None, elements=6, pinned=None):
    from sim import ModelBuilder, Section
    b = ModelBuilder("cantilever", gravity=(0.0, 0.0, 0.0))
    nodes = np.linspace([0.0, 0.0, 0.0], [1.0, 0.0, 0.0], elements + 1)
    b.add_beam_body("beam", nodes, np.column_stack([np.arange(elements), np.arange(1, elements + 1)]),
                    Section.rectangle(0.02, 0.01, E=2.1e11, rho=7800.0, nu=0.3), plane=plane, pinned=pinned)
    b.add_marker("root", "beam", nodes[0])
    b.add_marker("ground", None, nodes[0])
    b.add_marker("tip", "beam", nodes[-1])
    b.add_joint("clamp", "fixed", "ground", "root")
    b.set_end_effector("tip", ("x", "y", "z"))
    return b.build()


def test_planar_beam_keeps_the_in_plane_modes():
    """A cantilever with only its in-plane elastic coordinates (plane normal z): 3 per free
    node, a selection of the nodal coordinates, and exactly the 3D beam's in-plane modes
    (bending about z and axial): the same frequencies to 1e-9."""
    from sim.solvers.modal import modes
    full, planar = _cantilever(), _cantilever(plane=(0.0, 0.0, 2.0))
    basis = planar.bodies[0].basis
    assert basis.shape == (42, 18) and np.count_nonzero(basis) == 18, "3 coordinates per free node, selected"
    f_full = modes(full, full.q_home, count=30).frequencies_hz
    f_planar = modes(planar, planar.q_home, count=8).frequencies_hz
    # the in-plane ones among the 3D beam's: each planar frequency is one of them
    for f in f_planar:
        assert np.min(np.abs(f_full - f)) <= 1e-9 * f, (f, f_full)
    # bending in the plane of the 0.02 m side: 1.8751^2 sqrt(EI/(rho A L^4)) / 2 pi, EI about z
    EI, rhoA = 2.1e11 * 0.01 * 0.02**3 / 12, 7800.0 * 0.02 * 0.01
    assert f_planar[0] == pytest.approx(1.87510407**2 * np.sqrt(EI / rhoA) / (2 * np.pi), rel=1e-4)


def test_chord_frame_and_plane_keep_a_selection_basis():
    """The pinned (chord) frame, alone or with a plane, keeps the basis a selection of nodal
    coordinates (the kernels' sparse inertia terms): a chord along x fixes single columns."""
    for plane, count in ((None, 42 - 6), ((0.0, 0.0, 1.0), 21 - 3)):
        B = _cantilever(plane=plane, pinned=6).bodies[0].basis
        assert B.shape[1] == count and np.count_nonzero(B) == B.shape[1], (plane, B.shape)


def test_plane_errors_name_the_body():
    with pytest.raises(ValueError, match=r"body `beam`: `plane` must be a nonzero normal vector"):
        _cantilever(plane=(0.0, 0.0, 0.0))
    with pytest.raises(ValueError, match=r"body `beam`: element 0 is not in the plane normal to \[1.0, 0.0, 0.0\]"):
        _cantilever(plane=(1.0, 0.0, 0.0))


def _curved_rod(n_el):
    """Nodes, elements, sections and z references of a bent steel rod of ``n_el`` elements
    (out of every plane: all couplings of the second moments present)."""
    s = np.linspace(0.0, 1.0, n_el + 1)
    nodes = np.column_stack([0.8 * s, 0.2 * np.sin(2.0 * s), 0.1 * s ** 2])
    section = beam.Section(*ELEMENTS["steel_flat"][1:])
    return nodes, np.column_stack([np.arange(n_el), np.arange(1, n_el + 1)]), [section] * n_el, \
        np.tile([0.0, 0.0, 1.0], (n_el, 1))


@pytest.mark.parametrize("path", ["dense", "nonzeros"])
@pytest.mark.parametrize("basis", ["selection", "general"])
def test_second_moments_by_nonzeros_are_the_dense_projection(basis, path, monkeypatch):
    """A body's ``T = B_z^T I B_z`` formed by ``builder._projected_dense`` (dense arrays up to
    ``DENSE_NODAL`` nodal coordinates) and by ``builder._projected`` (by the nonzeros above: both
    paths forced here) against the dense product of the same nodal ``I``: a clamped selection
    ``B`` (the band kept) and a dense orthonormal one (4 modes' worth), within 1e-14 of ``T``'s
    largest entry, zeros where the dense one has them; the nodal ``I`` by nonzeros and dense
    the same."""
    from sim.model import builder
    from sim.model.builder import _projected, _projected_dense
    nodes, elements, sections, z_ref = _curved_rod(6)
    monkeypatch.setattr(builder, "DENSE_NODAL", 10 ** 6)
    I = beam_structure_matrices(nodes, elements, sections, z_ref)["I"]
    monkeypatch.setattr(builder, "DENSE_NODAL", 0)
    sparse = beam_structure_matrices(nodes, elements, sections, z_ref)["I"]
    n = 6 * len(nodes)
    assert I.shape == (3, 3, n, n)
    assert_allclose(dense_moment(*sparse, n), I, rtol=0, atol=1e-15 * np.abs(I).max())
    # each element's 12 x 12 block lands on its two nodes only: the band of a chain
    k, l, i, j = sparse[0].T
    assert np.abs(i // 6 - j // 6).max() == 1 and I[:, :, 0, 12:].max() == 0.0
    B = np.eye(n)[:, 6:] if basis == "selection" else np.linalg.qr(np.random.default_rng(1).normal(size=(n, 4)))[0]
    x0 = np.zeros(n)
    x0.reshape(-1, 6)[:, :3] = nodes
    Bz = np.column_stack([x0, B])
    ref = Bz.T @ I @ Bz
    got = _projected_dense(I, x0, B) if path == "dense" else dense_moment(*_projected(sparse, n, x0, B), B.shape[1] + 1)
    assert_allclose(got, ref, rtol=0, atol=1e-14 * np.abs(ref).max())
    if basis == "selection":        # banded: the elastic block couples neighbouring nodes only
        a, b = np.indices(got.shape[2:]) - 1
        assert np.all(got[ref == 0] == 0) and np.all(got[:, :, (a >= 0) & (b >= 0) & (abs(a // 6 - b // 6) > 1)] == 0)


def test_group_tables_by_dense_arrays_are_those_by_nonzeros(monkeypatch):
    """A body group's union of nonzeros and its kernel tables (``T`` and the antisymmetric
    parts' ``W``) formed by dense arrays (small bodies, ``DENSE_UNION``) and by sorting the
    nonzeros (large ones): bitwise the same, on bodies whose nonzeros differ (the Delta's arms
    in three orientations)."""
    from sim.model import tables, types
    model = load("delta_pick")
    dense = tables._groups(model), [types._union([model.bodies[i] for i in g.index]) for g in model.body_groups]
    monkeypatch.setattr(types, "DENSE_UNION", 0)
    monkeypatch.setattr(tables, "DENSE_UNION", 0)
    sparse = tables._groups(model), [types._union([model.bodies[i] for i in g.index]) for g in model.body_groups]
    flex = [g for g in model.body_groups if g.n_f]
    assert flex and not all(np.array_equal(model.bodies[g.index[0]].second_index, model.bodies[i].second_index)
                            for g in flex for i in g.index)
    for a, b in zip(dense[0] + tuple(dense[1]), sparse[0] + tuple(sparse[1])):
        for x, y in zip(a, b):
            assert x.dtype == y.dtype and x.shape == y.shape and x.flags.c_contiguous == y.flags.c_contiguous
            assert np.array_equal(x, y)


def test_model_holds_no_square_array():
    """The 3-RRRU's rods at 16, 32 and 64 elements: no array of the bodies, the groups or the
    kernel tables has the dense second moments' size ``9 (n_f + 1)^2``, and all of them together
    grow with the elements (at most 2.1 times the bytes for twice the elements: M_ff, K_ff and
    the basis by their rows' nonzeros, sim.model.sparse_rows; dense, 3.4 times); the second
    moments' nonzeros likewise; the bodies' elastic mass and stiffness are views of the groups'
    (held once), and the same matrices as the dense products of the nodal ones."""
    def arrays(x):
        if isinstance(x, np.ndarray):
            yield x
        elif isinstance(x, (tuple, list)):
            for y in x:
                yield from arrays(y)
        elif hasattr(x, "__dataclass_fields__"):
            for f in x.__dataclass_fields__:
                yield from arrays(getattr(x, f))
    nnz, total = [], []
    for elements in (16, 32, 64):
        model = load("rrru3", elements_per_link=elements)
        n_f = max(b.n_f for b in model.bodies)
        held = list(arrays(model.bodies)) + list(arrays(model.body_groups)) + list(arrays(model.kernel))
        assert max(a.size for a in held) < 9 * (n_f + 1) ** 2
        total.append(sum(a.nbytes for a in held))
        rod = next(b for b in model.bodies if b.n_f == n_f)
        group = next(g for g in model.body_groups if g.n_f == n_f)
        assert rod.mass_ff.values.base is group.mass_ff and rod.stiffness_ff.values.base is group.stiffness_ff
        assert rod.mass_ff.cols is group.ff and rod.mass_ff.cols.shape[1] <= 18
        nnz.append(len(rod.second_value))
    assert nnz[1] <= 2.1 * nnz[0] and nnz[2] <= 2.1 * nnz[1]
    assert total[1] <= 2.1 * total[0] and total[2] <= 2.1 * total[1], total


def test_stiffening_is_held_per_element():
    """A stiffened rod of 32 elements (a selection basis) holds each element's elongation row
    and slope matrix on the few coordinates it touches (at most 12), not dense (n_el, n_f,
    n_f); their dense forms are the element matrices placed at those coordinates."""
    model = load("slider_crank", stiffening=True, elements=32)
    rod = next(b for b in model.bodies if b.stretch_k.size)
    assert rod.stretch_G.shape[1:] == (rod.stretch_index.shape[1],) * 2 and rod.stretch_index.shape[1] <= 12
    assert rod.stretch_G.size <= 32 * 12 * 12 < rod.n_f ** 2
    # the element's slope matrix: symmetric, its row and matrix on its own coordinates only
    dense = rod.stretch_slopes
    assert np.array_equal(dense, np.swapaxes(dense, 1, 2))
    for e in range(32):
        touched = np.flatnonzero(np.any(dense[e] != 0, axis=0) | (rod.stretch_rows[e] != 0))
        assert set(touched) <= set(rod.stretch_index[e]) and np.ptp(touched) < 12
