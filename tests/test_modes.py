"""Natural modes (sim.solvers.modal): beam convergence, flexible arm, NaVARo against Cast3M."""
from functools import lru_cache

import numpy as np
import pytest
from numpy.testing import assert_allclose

import navaro_frame
from conftest import SLENDER_BEAM, load, slender_beam
from problems import (BEAM_RIGID_MODES, BETA_L, FLEXIBLE_ARM_OMEGA, NAVARO_TABLE3_HZ,
                      NAVARO_INDEPENDENT_COORDINATES, NAVARO_SYMMETRIC_POSES, bending_omega)
from sim.model.assembly import solve_pose
from sim.model.beam import Section
from sim.model.dynamics import mass_matrix
from sim.solvers.modal import constraint_null_space, modes

SUPPORTS = tuple(BETA_L)
#: Nodal dof families of a beam along x: bending in x–y (v, theta_z), in x–z (w, theta_y),
#: axial (u), torsion (theta_x).
FAMILIES = {"xy": [1, 5], "xz": [2, 4], "axial": [0], "torsion": [3]}
#: Meshes of the convergence-order fits, per mode: coarser meshes are pre-asymptotic for the
#: higher modes (the free-free third mode on 4 elements), finer ones bring the first mode to
#: the round-off floor of the eigensolver (about 1e-8 with 32 elements, where the spread of
#: the eigenvalues of the full 3D element reaches 1e10).
ORDER_MESHES = {1: (4, 8, 16), 2: (8, 16, 32), 3: (8, 16, 32)}
REFERENCE_MESH = 64


def nodal_shapes(model, result):
    """World nodal displacement/rotation of each mode of a one-body model, (k, n_nodes, 6)."""
    body = model.bodies[0]
    out = []
    for shape in result.shapes.T:
        v, w, qf = shape[:3], shape[3:6], shape[6:]
        d = (body.basis @ qf).reshape(-1, 6)
        d[:, :3] += v + np.cross(w, body.nodes_B)      # body frame = world at home
        d[:, 3:] += w
        out.append(d)
    return np.array(out)


@lru_cache(maxsize=None)
def beam_bending_omega(support, elements, plane):
    """The three lowest bending frequencies [rad/s] of the slender beam in one plane."""
    model = slender_beam(support, elements)
    result = modes(model, model.q_home)
    d = nodal_shapes(model, result)
    norms = np.stack([np.linalg.norm(d[:, :, dofs], axis=(1, 2)) for dofs in FAMILIES.values()], axis=1)
    dominant = np.array(list(FAMILIES))[np.argmax(norms, axis=1)]
    return result.omega[dominant == plane][:3]


def euler_bernoulli_omega(support, plane):
    section = Section.rectangle(SLENDER_BEAM["width"], SLENDER_BEAM["height"], E=SLENDER_BEAM["E"],
                                rho=SLENDER_BEAM["rho"], nu=SLENDER_BEAM["nu"])
    I = section.Iz if plane == "xy" else section.Iy
    return bending_omega(BETA_L[support], SLENDER_BEAM["length"], section.E, I, section.rho, section.A)


@pytest.mark.parametrize("plane", ["xy", "xz"])
@pytest.mark.parametrize("support", SUPPORTS)
def test_beam_bending_frequencies_16_elements(support, plane):
    assert_allclose(beam_bending_omega(support, 16, plane), euler_bernoulli_omega(support, plane), rtol=5e-3,
                    err_msg=f"first three {plane} bending frequencies, {support} beam, 16 elements vs Euler–Bernoulli")


@pytest.mark.parametrize("mode", [1, 2, 3])
@pytest.mark.parametrize("plane", ["xy", "xz"])
@pytest.mark.parametrize("support", SUPPORTS)
def test_beam_bending_convergence_order(support, plane, mode):
    """Cubic Hermite elements: frequency error ~ h^4 (against a fine mesh of the same beam)."""
    meshes = ORDER_MESHES[mode]
    reference = beam_bending_omega(support, REFERENCE_MESH, plane)[mode - 1]
    errors = [abs(beam_bending_omega(support, n, plane)[mode - 1] / reference - 1) for n in meshes]
    order = -np.polyfit(np.log(meshes), np.log(errors), 1)[0]
    assert order > 3.5, f"observed order {order:.2f} of mode {mode} ({plane}, {support}); errors {errors}"


@pytest.mark.parametrize("support", SUPPORTS)
def test_beam_rigid_mode_count(support):
    model = slender_beam(support, 16)
    assert modes(model, model.q_home).rigid_count == BEAM_RIGID_MODES[support]


#: (model, parameters, free motions): the count must not depend on the mesh.
MESH_CASES = {
    "beam_clamped_free_16": ("beam", dict(support="clamped-free", elements=16, **SLENDER_BEAM), 0),
    "beam_clamped_free_128": ("beam", dict(support="clamped-free", elements=128, **SLENDER_BEAM), 0),
    "flexible_arm_16": ("flexible_arm", dict(elements=16), 1),
    "flexible_arm_64": ("flexible_arm", dict(elements=64), 1),
}


@pytest.mark.parametrize("case", MESH_CASES)
def test_rigid_mode_count_independent_of_mesh(case):
    name, params, expected = MESH_CASES[case]
    model = load(name, **params)
    result = modes(model, model.q_home, count=2)
    assert result.rigid_count == expected, (f"{result.rigid_count} rigid-body modes for {case} (expected {expected}); "
                                            f"lowest elastic frequencies {result.omega} rad/s")


# -- flexible arm ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def arm_modes(flexible_arm):
    return modes(flexible_arm, flexible_arm.q_home)


def test_flexible_arm_in_plane_frequencies(flexible_arm, arm_modes):
    d = nodal_shapes(flexible_arm, arm_modes)
    tip = d[:, -1, :3]
    in_plane = np.abs(tip[:, 1]) > np.abs(tip[:, 2])
    assert_allclose(arm_modes.omega[in_plane][:4], FLEXIBLE_ARM_OMEGA, rtol=5e-3,
                    err_msg="in-plane elastic frequencies of the flexible arm (16 elements) vs exact")


def test_flexible_arm_one_rigid_mode(arm_modes):
    assert arm_modes.rigid_count == 1


# -- NaVARo ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def navaro_home_modes(navaro):
    return modes(navaro, navaro.q_home)


@lru_cache(maxsize=None)
def navaro_pose_frequencies(pose):
    model = load("navaro")
    return modes(model, solve_pose(model, pose)).frequencies_hz


@pytest.mark.parametrize("index", NAVARO_TABLE3_HZ)
def test_navaro_matches_table3(navaro_module, index):
    """Cast3M's five lowest frequencies (paper 000 Table 3), the out-of-plane f4 included, within 0.1 %."""
    f = navaro_pose_frequencies(tuple(navaro_module.POSES[index]))
    assert_allclose(f[:5], NAVARO_TABLE3_HZ[index], rtol=1e-3, err_msg=f"NaVARo pose {index}; lowest {f[:8]}")


@pytest.mark.parametrize("index", NAVARO_TABLE3_HZ)
def test_navaro_frame_matches_table3(navaro_module, index):
    """The independent frame (``tests/navaro_frame.py``) against Cast3M, within 0.1 %."""
    f = navaro_frame.frequencies(navaro_module, navaro_module.POSES[index])
    assert_allclose(f[:5], NAVARO_TABLE3_HZ[index], rtol=1e-3, err_msg=f"frame at NaVARo pose {index}; {f[:8]}")


@pytest.mark.parametrize("index", range(1, 9))
def test_navaro_matches_the_frame_at_every_paper_pose(navaro_module, index):
    """The eight poses of paper 000 Fig. 4 (Table 3's): the ten lowest frequencies are the
    independent frame's.  Both are this discretisation's exact linear modes, so they agree to
    round-off (about 1e-11); 1e-8 leaves room for the eigensolvers."""
    pose = tuple(navaro_module.POSES[index])
    assert_allclose(navaro_pose_frequencies(pose)[:10], navaro_frame.frequencies(navaro_module, pose)[:10],
                    rtol=1e-8, err_msg=f"NaVARo pose {index}")


def test_navaro_printed_inputs_miss_the_out_of_plane_mode(navaro_module):
    """With the platform I_y and G as paper 000 prints them, the in-plane modes are unchanged
    and f4 is about 21 % high: why the model corrects both (SPEC §4.1)."""
    model = load("navaro", G=navaro_module.PRINTED_G, platform_Iy=navaro_module.PRINTED_PLATFORM_IY)
    assert model.references == (), "Cast3M's values are declared for the corrected inputs only"
    f = modes(model, model.q_home).frequencies_hz
    table = NAVARO_TABLE3_HZ[1]
    assert_allclose(f[[0, 1, 2, 4]], np.take(table, [0, 1, 2, 4]), rtol=1e-3, err_msg="in-plane modes")
    assert f[3] / table[3] - 1 > 0.2, f"f4 {f[3]:.2f} Hz against Cast3M's {table[3]} Hz"


def test_navaro_home_no_rigid_mode(navaro_home_modes):
    assert navaro_home_modes.rigid_count == 0


def test_navaro_independent_coordinates(navaro):
    N = constraint_null_space(navaro, navaro.q_home)
    assert N.shape[1] == NAVARO_INDEPENDENT_COORDINATES


def test_navaro_refined_modes_continue_cast3m_ones():
    """Mass-weighted MAC tracking at pose 1 from the Cast3M model (clutches rigid, no joint
    masses) to the paper's refined one (2000 N m/rad, 0.3 kg; paper 000 §5.3): Cast3M's
    out-of-plane f4 becomes mode 7, the pairing ``scenarios/navaro_refined.toml`` relies on."""
    from sim.model.dynamics import mass_matrix
    from sim.solvers.tracking import mac, pair_modes

    columns, worst = np.arange(7), np.ones(7)
    previous = None
    # ln(clutch stiffness) from 1e8 N m/rad (rigid to 1e-4 in these modes) to 2000, mass to 0.3 kg
    for s in np.linspace(0.0, 1.0, 31):
        model = load("navaro", clutch_stiffness=float(np.exp(np.interp(s, [0, 1], np.log([1e8, 2000.0])))),
                     joint_mass=0.3 * s)
        result = modes(model, model.q_home, count=14, energies=False)
        if previous is not None:
            table = mac(previous[:, columns], result.shapes, mass_matrix(model, model.q_home))
            new = np.array([j for _, j in pair_modes(table)])
            worst, columns = np.minimum(worst, table[np.arange(7), new]), new
        else:
            assert_allclose(result.frequencies_hz[:5], NAVARO_TABLE3_HZ[1], rtol=1e-3, err_msg="rigid clutches")
        previous = result.shapes
    # repeated roots turn within their plane (MAC of one member ~0.5); single ones stay above 0.99
    assert [sorted(columns[i:j] + 1) for i, j in ((0, 2), (2, 3), (3, 4), (4, 6), (6, 7))] == \
        [[1, 2], [3], [7], [4, 5], [6]], f"refined modes continuing Cast3M's 1-7: {columns + 1}"
    assert worst[[2, 3, 6]].min() > 0.99, f"lowest MAC along the tracks {worst}"
    # the paper's refined model gives 44.10 Hz for the mode it pairs with the measured 42 Hz
    assert_allclose(result.frequencies_hz[6], 44.10, rtol=5e-3, err_msg="refined out-of-plane mode")


@pytest.mark.parametrize("group", NAVARO_SYMMETRIC_POSES, ids=lambda g: "-".join(map(str, g)))
def test_navaro_symmetric_paper_poses(navaro_module, group):
    """Paper poses related by the 120° symmetry (rounded to mm): lowest six modes within 0.1 %."""
    f = [navaro_pose_frequencies(tuple(navaro_module.POSES[i]))[:6] for i in group]
    assert_allclose(f[1:], [f[0]] * 2, rtol=1e-3, err_msg=f"lowest frequencies at NaVARo poses {group}")


@pytest.mark.parametrize("radius", [0.135, 0.21])
def test_navaro_exactly_symmetric_poses(radius):
    """Poses rotated exactly by 120° (platform angle unchanged): identical spectra."""
    angles = np.radians([30.0, 150.0, 270.0])
    f = [navaro_pose_frequencies((radius * np.cos(a), radius * np.sin(a), -np.pi / 3))[:20] for a in angles]
    assert_allclose(f[1:], [f[0]] * 2, rtol=1e-8, err_msg=f"frequencies at symmetric poses of radius {radius}")


MODAL_CASES = {
    "navaro": lambda: load("navaro"),
    "flexible_arm": lambda: load("flexible_arm", elements=16),
    "beam_free_free": lambda: slender_beam("free-free", 8),
}


@pytest.mark.parametrize("case", MODAL_CASES)
def test_mode_shapes_mass_normalised(case):
    model = MODAL_CASES[case]()
    result = modes(model, model.q_home)
    G = result.shapes.T @ mass_matrix(model, model.q_home) @ result.shapes
    assert_allclose(G, np.eye(G.shape[0]), rtol=0, atol=1e-9, err_msg=f"shapes^T M shapes of {case}")


@pytest.mark.parametrize("kind", ["body_energy", "body_strain_energy"])
def test_navaro_body_energy_fractions_sum_to_one(navaro_home_modes, kind):
    fractions = getattr(navaro_home_modes, kind)
    assert_allclose(fractions.sum(axis=1), 1.0, rtol=1e-12, err_msg=f"{kind} fractions summed over bodies")


def test_body_strain_energies_add_up_with_lumped_springs():
    """Each spring's energy is booked to one body: the per-body strain energies of a
    mass-normalised mode add up to omega^2 (a spring-jointed Delta robot)."""
    from pathlib import Path

    from sim.model.loader import load_model
    from sim.solvers.modal import body_energies, modes
    model = load_model(Path(__file__).resolve().parent.parent / "models/delta_surgiscope.py")
    r = modes(model, model.q_home, count=4)
    _, elastic = body_energies(model, model.q_home, r.shapes)
    np.testing.assert_allclose(elastic.sum(axis=1), r.omega**2, rtol=1e-8, err_msg="sum of body strain energies")


#: Models on which the elastic coordinates are independent (partitioned basis): a regular closed
#: chain, compliant drives (reference coordinates left free by the joints), free motions (struts
#: spinning between spherical joints), and lumped springs only (no constraint rows at all).
PARTITIONED_CASES = {
    "rrru3": lambda: load("rrru3", elements_per_link=2),
    "pss6_compliant_drives": lambda: load("pss6", slider_joint="universal"),
    "pss6_free_strut_spin": lambda: load("pss6"),
    "delta_springs": lambda: load("delta_surgiscope"),
}


@pytest.mark.parametrize("case", PARTITIONED_CASES)
def test_partitioned_basis_gives_the_orthonormal_basis_modes(case, monkeypatch):
    """Frequencies to 1e-9 and the same modal subspaces as with an orthonormal basis of the
    constraint null space (the eigenproblem's round-off floor is about 1e-10 here).  The
    Surgiscope's springs (1e8 N/m joint translations on light bars) raise that floor: the same
    geometry computed with other round-off (its leg directions as 90 + 120 k deg or as listed
    angles) moves its frequencies by 9e-10, so it is held to 3e-9."""
    import sim.solvers.modal
    from sim.linalg import partitioned_null_space
    from sim.solvers.modal import PARTITION_RTOL, constraint_jacobian

    model = PARTITIONED_CASES[case]()
    q = model.q_home
    J = constraint_jacobian(model, q)
    assert partitioned_null_space(J, model.v_rigid, model.v_elastic, PARTITION_RTOL) is not None, \
        f"{case}: the partitioned basis must apply (it is the path under test)"
    fast = modes(model, q, 10)
    monkeypatch.setattr(sim.solvers.modal, "partitioned_null_space", lambda *args: None)
    ref = modes(model, q, 10)
    assert fast.rigid_count == ref.rigid_count
    assert_allclose(fast.omega, ref.omega, rtol=3e-9 if case == "delta_springs" else 1e-9,
                    err_msg=f"{case}: frequencies, partitioned vs orthonormal")
    # Repeated roots have no unique shapes: per-mode quantities only for the isolated modes, and
    # the subspace of the lowest k modes with k at a frequency gap.
    gap = np.concatenate([[True], ref.omega[1:] / ref.omega[:-1] - 1 > 1e-4, [False]])   # the next root unknown
    isolated = gap[:-1] & gap[1:]
    assert_allclose(fast.body_energy[isolated], ref.body_energy[isolated], atol=1e-7,
                    err_msg=f"{case}: kinetic energy shares of the isolated modes")
    k = np.flatnonzero(gap[1:-1])[-1] + 1
    overlap = ref.shapes[:, :k].T @ mass_matrix(model, q) @ fast.shapes[:, :k]
    assert_allclose(np.linalg.svd(overlap, compute_uv=False), 1.0, atol=1e-7,
                    err_msg=f"{case}: mass-weighted overlap of the lowest {k} shapes")
    if ref.rigid_count:
        M = mass_matrix(model, q)
        overlap = ref.rigid_shapes.T @ M @ fast.rigid_shapes
        assert_allclose(np.linalg.svd(overlap, compute_uv=False), 1.0, atol=1e-9, err_msg=f"{case}: free motions")


def test_redundant_rows_fall_back_to_the_orthonormal_basis(navaro):
    """NaVARo's planar loops give more constraint rows than reference coordinates can take."""
    from sim.linalg import partitioned_null_space
    from sim.solvers.modal import PARTITION_RTOL, constrained_basis, constraint_jacobian

    J = constraint_jacobian(navaro, navaro.q_home)
    assert partitioned_null_space(J, navaro.v_rigid, navaro.v_elastic, PARTITION_RTOL) is None
    N = constrained_basis(navaro, J)
    assert_allclose(N.T @ N, np.eye(N.shape[1]), atol=1e-12)
    assert N.shape[1] == NAVARO_INDEPENDENT_COORDINATES


def test_static_response_by_the_saddle_point_system():
    """From blocks.BLOCK_MIN coordinates (3-RRRU, 8 elements per link: 204) the static
    deflection under gravity comes from the sparse saddle-point system: the constrained
    basis's answer to 1e-9 of its largest entry, the stiffness given or not; with the
    actuators free (a mechanism: three free motions, which gravity drives) the penalty on the
    free motions and the load's part along them taken off give the basis's least-norm
    deflection of the load's part they leave (to 1e-9; static_response takes the basis there
    below STATIC_SADDLE_MIN coordinates); with the rows redundant (a joint's
    row twice) the system is singular and the basis answers."""
    from sim.model.dynamics import stiffness_matrix
    from sim.model.evaluator import Evaluator
    from sim.model.loader import load_model
    from sim.solvers import modal
    model = load_model("models/rrru3.py", {"elements_per_link": 8})
    ev = Evaluator(model)
    q, rest = model.q_home, np.zeros(model.n_v)
    E = ev.evaluate(q, rest, targets=ev.evaluate(q, rest).s)
    f = E.Q[:, None]
    K = stiffness_matrix(model, q)
    for J in (E.J, E.J[:ev.n_joint]):
        u = modal._static_saddle(model, q, J, f)
        ref = modal.static_response(model, q, f, K=K, J=J, N=modal.constrained_basis(model, J))
        assert u is not None and np.abs(u - ref).max() <= 1e-9 * np.abs(ref).max(), J.shape
        # (the mechanism, below STATIC_SADDLE_MIN coordinates: the basis, as a stiffness given)
        np.testing.assert_array_equal(modal.static_response(model, q, f, J=J), u if J is E.J else ref)
        assert model.n_v < modal.STATIC_SADDLE_MIN
        np.testing.assert_array_equal(modal.static_response(model, q, f, K=K, J=J), ref)
    assert modal._static_saddle(model, q, np.vstack([E.J, E.J[:1]]), f) is None


def test_static_response_of_springs_and_free_motions_by_the_saddle_point_system():
    """The 6-PSS with compliant screws (lumped stiffness) and six free strut spins, 8 elements
    per strut (366 coordinates): its deflections under the end effector's unit wrenches (the
    compliance's loads, which the spins leave alone) and under gravity come from the
    saddle-point system, the constrained basis's least-norm answer to 1e-9 of its largest
    entry, the stiffness given or not; the Cartesian compliance to 1e-9."""
    from sim.model.dynamics import stiffness_matrix
    from sim.model.evaluator import Evaluator
    from sim.model.loader import load_model
    from sim.solvers import modal
    from sim.solvers.compliance import compliance_matrix, wrench_rows
    model = load_model("models/pss6.py", {"elements_per_strut": 8, "slider_joint": "spherical"})
    q = model.q_home
    J = modal.constraint_jacobian(model, q)
    assert modal.free_basis(model, q, modal.constrained_basis(model, J)).shape[1] == 6
    ms = modal.markers(model, q)
    e = model.ee_marker
    G = wrench_rows(model.pose_kinds, ms.Jp[e], ms.Jw[e])
    E = Evaluator(model).evaluate(q, np.zeros(model.n_v), targets=np.zeros(len(model.actuators)))
    loads = np.hstack([G.T, E.Q[:, None]])
    K = stiffness_matrix(model, q)
    ref = modal.static_response(model, q, loads, K=K, J=J, N=modal.constrained_basis(model, J))
    for given in (K, None):
        u = modal._static_saddle(model, q, J, loads, given)
        assert u is not None and np.abs(u - ref).max() <= 1e-9 * np.abs(ref).max()
    C, C_ref = compliance_matrix(G, u[:, :-1]), compliance_matrix(G, ref[:, :-1])
    np.testing.assert_allclose(C, C_ref, rtol=0, atol=1e-9 * np.abs(C_ref).max())


@pytest.mark.parametrize("path, parameters", [("models/rrru3.py", {"elements_per_link": 32}),
                                              ("models/pss6.py", {"elements_per_strut": 16,
                                                                  "slider_joint": "spherical"})])
def test_modes_of_large_models_by_the_frozen_structure_solvers(path, parameters, monkeypatch):
    """From FROZEN_MIN coordinates a few modes come from the frozen structure's solvers
    (subspace iteration on the bodies' blocks: the 3-RRRU; the saddle-point form with its six
    free spins: the 6-PSS with compliant screws): the dense eigensolve's frequencies to 1e-8,
    the subspaces of the lowest k modes wherever a gap separates the k-th from the next (the
    pairs of the symmetric robots are any basis of their plane) to 1e-5, the same free
    motions (their span, mass-normalised), and the bodies' energy shares of every isolated
    mode to 1e-5."""
    from sim.model.loader import load_model
    from sim.solvers import modal
    model = load_model(path, parameters)
    q = model.q_home
    assert model.n_v >= modal.FROZEN_MIN
    fast = modal.modes(model, q, count=8)
    monkeypatch.setattr(modal, "FROZEN_MIN", 10 ** 9)
    dense = modal.modes(model, q, count=8)
    np.testing.assert_allclose(fast.omega, dense.omega, rtol=1e-8)
    M = modal.mass_matrix(model, q)
    f = dense.omega
    gap = np.append(f[1:] / f[:-1] - 1 > 1e-3, False)       # the k-th mode apart from the next
    for k in np.flatnonzero(gap) + 1:
        P, P_ref = (x[:, :k] @ (M @ x[:, :k]).T for x in (fast.shapes, dense.shapes))
        assert np.abs(P - P_ref).max() <= 1e-5 * np.abs(P_ref).max(), k
    assert fast.rigid_count == dense.rigid_count == (6 if "pss6" in path else 0)
    np.testing.assert_allclose(fast.rigid_shapes.T @ M @ fast.rigid_shapes, np.eye(fast.rigid_count), atol=1e-10)
    P, P_ref = (x @ (M @ x).T for x in (fast.rigid_shapes, dense.rigid_shapes))
    np.testing.assert_allclose(P, P_ref, rtol=0, atol=1e-9 * max(np.abs(P_ref).max(), 1.0))
    alone = gap & np.append(True, gap[:-1])
    alone[-1] = False
    assert alone.any()
    for name in ("body_energy", "body_strain_energy"):
        np.testing.assert_allclose(getattr(fast, name)[alone], getattr(dense, name)[alone], rtol=0, atol=1e-5)


def test_modes_of_large_models_hold_no_square_array():
    """The frozen structure's modes hold no (n_v, n_v) array: their traced peak grows with 32 ->
    64 elements per link of the 3-RRRU (n_v 636 -> 1212, 1.91x) by less than n_v^1.3 (2.3x;
    measured 1.99x, 6.9 -> 13.7 MB, where the dense M alone is 3.2 -> 11.8 MB)."""
    import tracemalloc

    from sim.model.loader import load_model
    from sim.solvers import modal
    peaks, sizes = [], []
    for e in (32, 64):
        model = load_model("models/rrru3.py", {"elements_per_link": e})
        modal.modes(model, model.q_home, count=8)       # (numba's own allocations: its kernels loaded)
        tracemalloc.start()
        modal.modes(model, model.q_home, count=8)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        sizes.append(model.n_v)
    assert sizes[0] >= modal.FROZEN_MIN
    assert peaks[1] / peaks[0] < (sizes[1] / sizes[0]) ** 1.3, (peaks, sizes)


def test_static_deflections_with_m_and_k_t_on_their_structure():
    """Large models' static deflections along a path (sim.solvers.start._rest with
    blocks.held) evaluate M and the tangent stiffness on their structure: on the 6-PSS with
    compliant screws and free spins, 16 elements per strut, the same M, K_t, forces and rows
    as the dense evaluation (M to round-off: the dense one is flushed), and the same
    deflection as the constrained basis's least-norm answer to 1e-9, the compliant drives free
    or locked (locked, the basis's Cholesky of its singular N^T K N used to pass with a
    warning and answer 1e27 m); the traced peak below a quarter of the dense evaluation's
    (measured 0.11: 2.0 against 18.8 MB)."""
    import tracemalloc

    from sim.model.evaluator import Evaluator
    from sim.model.loader import load_model
    from sim.model.tables import compliant
    from sim.solvers import modal, start
    model = load_model("models/pss6.py", {"elements_per_strut": 16, "slider_joint": "spherical"})
    ev, q, rest = Evaluator(model), model.q_home, np.zeros(model.n_v)
    h = start.held_structure(model, ev)
    s = ev.kinematics(q).s
    E = ev.evaluate(q, rest, targets=s, velocity_jacobian=True)
    S = ev.evaluate(q, rest, targets=s, velocity_jacobian=True, stores=h.fresh())
    np.testing.assert_allclose(h.sparse(S.M).toarray(), E.M, rtol=0, atol=1e-15 * np.abs(E.M).max())
    np.testing.assert_array_equal(h.sparse(S.K_t).toarray(), E.K_t)
    for name in ("Q", "J", "J_s", "s"):
        np.testing.assert_array_equal(getattr(S, name), getattr(E, name), err_msg=name)
    for lock in (False, True):
        J = np.vstack([E.J, E.J_s[compliant(model)]]) if lock else E.J
        ref = modal.static_response(model, q, E.Q[:, None], J=J, N=modal.constrained_basis(model, J))[:, 0]
        assert np.abs(ref).max() < 1e-3
        for structure in (h, None):
            u = start._rest(model, q, ev, lock, held=structure)[0]
            assert np.abs(u - ref).max() <= 1e-9 * np.abs(ref).max(), (lock, structure is None)
    peaks = []
    for structure in (h, None):
        tracemalloc.start()
        start._rest(model, q, ev, True, held=structure)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert peaks[0] < 0.25 * peaks[1], peaks


def test_modes_of_a_large_locked_loop_are_the_dense_eigensolves(monkeypatch):
    """The tilted four-bar locked by its closure (parts welded, redundant rows), 9 elements per
    part (720 coordinates, above FROZEN_MIN): its frozen structure is turned down by the
    constant solver, and the general solver's dense pencil would leave shapes far from
    converged (residuals to 7 % at 40 elements); modes() then answers by its own basis, bitwise
    the dense eigensolve's."""
    from sim.model.loader import load_model
    from sim.solvers import modal
    model = load_model("models/four_bar.py", {"tilt": 5.0, "parts": 4, "elements": 9})
    assert model.n_v >= modal.FROZEN_MIN
    fast = modal.modes(model, model.q_home, count=6)
    monkeypatch.setattr(modal, "FROZEN_MIN", 10 ** 9)
    dense = modal.modes(model, model.q_home, count=6)
    np.testing.assert_array_equal(fast.omega, dense.omega)
    np.testing.assert_array_equal(fast.shapes, dense.shapes)
