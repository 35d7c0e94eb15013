"""Warm-started subspace iteration (sim.solvers.subspace) against dense eigensolves."""
import sim  # noqa: F401  (single-threaded BLAS before numpy)
import numpy as np
import pytest
import scipy.linalg

from sim.model.evaluator import Evaluator
from sim.model.loader import load_model
from sim.solvers.modal import modes
from sim.solvers.motion import rigid_motion
from sim.solvers.subspace import RESIDUAL_TOL, Tracker, subspace_iteration
from sim.solvers.trajectory import circle

from conftest import MODELS


def _pencil(rng, n, spread):
    """SPD ``K`` with eigenvalues over ``spread`` decades and SPD ``M``."""
    Q = np.linalg.qr(rng.normal(size=(n, n)))[0]
    K = Q @ np.diag(np.logspace(0, spread, n)) @ Q.T
    B = rng.normal(size=(n, n))
    return 0.5 * (K + K.T), B @ B.T / n + np.eye(n)


def _parts(K):
    """``K^-1``, ``L^-1`` and one diagonal block, as subspace_iteration takes them."""
    L_inv = np.linalg.inv(np.linalg.cholesky(K))
    return L_inv.T @ L_inv, L_inv, np.array([0, K.shape[0]])


def test_subspace_iteration_converges_to_dense_pairs_from_a_perturbed_start():
    """From the subspace of a nearby pencil: the lowest r pairs to the residual tolerance,
    eigenvalues to ~1e-12, and mass-normalised vectors spanning the dense solve's."""
    rng = np.random.default_rng(3)
    n, r, p = 40, 5, 13
    K, M = _pencil(rng, n, 4)
    lam_ref, V_ref = scipy.linalg.eigh(K, M)
    E = rng.normal(size=(n, n))
    M_near = M + 1e-3 * (E @ E.T) / n       # the previous instant's mass
    X0 = np.ascontiguousarray(scipy.linalg.eigh(K, M_near)[1][:, :p])
    lam, X, sweeps = subspace_iteration(*_parts(K), M, X0, r, RESIDUAL_TOL, 50)
    assert sweeps > 0, "converged by iteration, not by the dense fallback"
    np.testing.assert_allclose(lam[:r], lam_ref[:r], rtol=1e-11)
    np.testing.assert_allclose(X.T @ M @ X, np.eye(p), atol=1e-12)
    for i in range(r):
        res = np.linalg.norm(K @ X[:, i] - lam[i] * M @ X[:, i]) / np.linalg.norm(K @ X[:, i])
        assert res <= RESIDUAL_TOL
        assert abs(abs(V_ref[:, i] @ M @ X[:, i]) - 1.0) < 1e-9, f"mode {i}"


def test_subspace_iteration_cold_start_and_fallback_are_the_dense_solve():
    rng = np.random.default_rng(5)
    K, M = _pencil(rng, 30, 3)
    lam_ref = scipy.linalg.eigh(K, M, eigvals_only=True)
    lam, X, sweeps = subspace_iteration(*_parts(K), M, np.zeros((30, 0)), 4, RESIDUAL_TOL, 50)
    assert sweeps == -1 and X.shape == (30, 8)     # p = min(2 r, r + 8) (Bathe)
    np.testing.assert_allclose(lam, lam_ref[:8], rtol=1e-12)
    # A random start and no sweeps allowed: the dense solve takes over.
    lam, X, sweeps = subspace_iteration(*_parts(K), M, rng.normal(size=(30, 8)), 4, RESIDUAL_TOL, 0)
    assert sweeps == -1
    np.testing.assert_allclose(lam, lam_ref[:8], rtol=1e-12)


def test_subspace_iteration_rate_is_the_eigenvalue_ratio():
    """Mode r converges like (lambda_r / lambda_{p+1})^k: asking six more decades of the
    residual costs log(1e-6) / log(lambda_r / lambda_{p+1}) more sweeps (within one and a half),
    fewer when the gap after mode p is wider."""
    rng = np.random.default_rng(11)
    n, r, p = 30, 3, 6
    Q = np.linalg.qr(rng.normal(size=(n, n)))[0]
    X0 = np.ascontiguousarray(Q[:, :p] + 1e-2 * rng.normal(size=(n, p)))
    extra = []
    for gap in (3.0, 100.0):
        lam = np.concatenate([np.arange(1.0, p + 1), gap * p + np.arange(n - p)])
        K = Q @ np.diag(lam) @ Q.T
        parts = _parts(0.5 * (K + K.T))
        coarse, fine = (subspace_iteration(*parts, np.eye(n), X0, r, tol, 80)[2] for tol in (1e-6, 1e-12))
        predicted = np.log(1e-6) / np.log(r / lam[p])
        assert 0 < coarse and abs(fine - coarse - predicted) <= 1.5, (gap, coarse, fine, predicted)
        extra.append(fine - coarse)
    assert extra[1] < extra[0]


@pytest.fixture(scope="module")
def rrru3_states():
    model = load_model(MODELS / "rrru3.py", {"elements_per_link": 2})
    t = np.linspace(0.0, 0.2, 21)
    motion = rigid_motion(model, circle([0.0, 0.0, -0.7], 0.1, 2.0, 0.2), t)
    ev = Evaluator(model)
    return model, motion, [ev.evaluate(q, v, targets=s) for q, v, s in zip(motion.q, motion.v, motion.actuators)]


def test_tracker_follows_the_dense_modes_along_a_motion(rrru3_states):
    """3-RRRU along an arc: frequencies to 1e-10 (eigenvalues converge like the square of
    the residual) and the modal subspace (M-orthogonal projector) to 10 RESIDUAL_TOL of the
    dense solve of sim.solvers.modal.modes, mostly by iteration."""
    model, motion, evals = rrru3_states
    assert Tracker.applies(model)
    tracker = Tracker(model, 4)
    for k, E in enumerate(evals):
        omega, shapes, mass_shapes = tracker.modes(E.M, E.J)
        ref = modes(model, motion.q[k], 4, M=E.M, free=False, energies=False, J=E.J, J_s=E.J_s)
        np.testing.assert_allclose(omega, ref.omega, rtol=1e-10)
        np.testing.assert_allclose(mass_shapes, E.M @ shapes, rtol=0, atol=1e-12 * np.abs(mass_shapes).max())
        P, P_ref = shapes @ mass_shapes.T, ref.shapes @ (E.M @ ref.shapes).T
        assert np.abs(P - P_ref).max() <= 10 * RESIDUAL_TOL * np.abs(P_ref).max(), f"instant {k}"
        assert np.abs(E.J @ shapes).max() <= 1e-12 * np.abs(E.J).max() * np.abs(shapes).max()
    assert tracker.sweeps[0] == -1 and all(0 < s < 10 for s in tracker.sweeps[1:]), tracker.sweeps


def test_tracker_takes_the_general_basis_where_it_cannot_partition(rrru3_states):
    """Redundant rows, or a singular J_r (a row repeated in place of another, which frees a
    motion): the general basis (sim.solvers.subspace._general: an SVD of the rows), the dense
    solve's modes."""
    model, motion, evals = rrru3_states
    E = evals[0]
    J = E.J.copy()
    J[1] = J[0]
    for rows, free in ((np.vstack([E.J, E.J[:1]]), 0), (J, 1)):
        tracker = Tracker(model, 4, free)
        omega, shapes, mass_shapes = tracker.modes(E.M, rows)
        ref = modes(model, motion.q[0], 4, M=E.M, energies=False, J=rows, J_s=E.J_s)
        assert ref.rigid_count == free
        np.testing.assert_allclose(omega, ref.omega, rtol=1e-9)
        P, P_ref = shapes @ mass_shapes.T, ref.shapes @ (E.M @ ref.shapes).T
        assert np.abs(P - P_ref).max() <= 1e-8 * np.abs(P_ref).max()
        assert np.abs(rows @ shapes).max() <= 1e-12 * np.abs(rows).max() * np.abs(shapes).max()
        assert tracker.sweeps == [-1] and tracker.order[0] == -1


@pytest.mark.parametrize("name", ["navaro", "five_bar"])
def test_rows_beyond_the_reference_coordinates_partition_with_elastic_ones(name):
    """Planar loops of spatial joints (the NaVARo's parallelograms, the five-bar): the rows
    outnumber the reference coordinates (96 > 78, 27 > 24), the out-of-plane ones, redundant
    for the rigid robot, made independent by the elastic coordinates.  The general solver
    takes all the reference coordinates and as many elastic ones as dependent (chosen once,
    kept along the motion) instead of an SVD of the rows (4x faster on the NaVARo): the dense
    solve's modes at every instant of a motion."""
    model = load_model(MODELS / f"{name}.py")
    ev = Evaluator(model)
    from sim.model.kinematics import pose_jacobian
    home = pose_jacobian(model, model.q_home)[0]
    motion = rigid_motion(model, circle(home, 0.01, 4.0, 0.3), np.linspace(0.0, 0.3, 6))
    tracker = Tracker(model, 4, 0)
    n_r = len(model.v_rigid)
    chosen = None
    for q, s in zip(motion.q, motion.actuators):
        E = ev.evaluate(q, np.zeros(model.n_v), targets=s)
        assert E.J.shape[0] > n_r and np.linalg.matrix_rank(E.J) == E.J.shape[0]
        omega, shapes, mass_shapes = tracker.modes(E.M, E.J, Kt=E.K_t if ev.stiff else None)
        ref = modes(model, q, 4, M=E.M, energies=False, J=E.J, J_s=E.J_s)
        np.testing.assert_allclose(omega, ref.omega, rtol=1e-9)
        P, P_ref = shapes @ mass_shapes.T, ref.shapes @ (E.M @ ref.shapes).T
        assert np.abs(P - P_ref).max() <= 10 * RESIDUAL_TOL * np.abs(P_ref).max()
        assert tracker.order[n_r] >= 0                          # the partition, not the SVD
        chosen = tracker.order[n_r:].copy() if chosen is None else chosen
        np.testing.assert_array_equal(tracker.order[n_r:], chosen)     # kept along the motion


@pytest.mark.parametrize("name, applies", [("rrru3", True), ("slider_crank", True), ("delta_surgiscope", False),
                                           ("pss6", False), ("spinup_beam", False), ("rrrt3", False)])
def test_tracker_applies_only_to_constant_body_stiffness(name, applies):
    """Lumped springs (Surgiscope), compliant screws (6-PSS), geometric stiffening (spin-up
    beam) or no elastic coordinates (3-RRRT): the general path."""
    assert Tracker.applies(load_model(MODELS / f"{name}.py", {})) is applies


@pytest.fixture(scope="module")
def rrru3_fine():
    """The 3-RRRU with 24 elements per link (432 elastic coordinates: the band path's size)
    along an arc, its evaluations with the actuators locked."""
    model = load_model(MODELS / "rrru3.py", {"elements_per_link": 24})
    t = np.linspace(0.0, 0.3, 13)
    motion = rigid_motion(model, circle([0.0, 0.0, -0.7], 0.1, 2.0, 0.3), t)
    ev = Evaluator(model)
    return model, motion, [ev.evaluate(q, v, targets=s, rest=True) for q, v, s in zip(motion.q, motion.v, motion.actuators)]


def test_band_path_products_are_the_dense_ones(rrru3_fine):
    """The band path's reduced mass, applied by M_ee's nonzeros and the joints' coupling columns,
    is the dense N^T M N to round-off (1e-13 of its largest entry); its band factors of K_ee
    solve with a residual within round-off of the products (1e-13) and as the dense inverse
    does to 1e-8 (K_ee's condition number); its mass product over v is M's, by the dense
    M's nonzeros and by the parts of M the frames keep on its store alike."""
    from sim.solvers import subspace
    model, motion, evals = rrru3_fine
    tracker = Tracker(model, 6)
    assert subspace.BAND_MIN <= model.v_elastic.size and tracker.K_band.size and not tracker.K_inv.size
    layout = tracker.layout()
    E = evals[4]
    M, J = np.ascontiguousarray(E.M), np.ascontiguousarray(E.J)
    R = subspace.reference_columns(M, layout.blocks)
    _, _, c, W, S = subspace._coupling(R, J, layout.rigid, layout.elastic, layout.owner)
    Mn = subspace._reduced_mass(M, layout.elastic, layout.owner, c, W, S)
    N = np.vstack([np.linalg.solve(J[:, layout.rigid], -J[:, layout.elastic]), np.eye(layout.elastic.size)])
    order = np.concatenate([layout.rigid, layout.elastic])
    N_v = np.empty_like(N)
    N_v[order] = N
    np.testing.assert_allclose(Mn, N_v.T @ M @ N_v, rtol=0, atol=1e-12 * np.abs(Mn).max())
    X = np.random.default_rng(2).normal(size=(layout.elastic.size, 9))
    mass = subspace._structured_mass(subspace.band_values(M, layout), layout, c, W, S)
    np.testing.assert_allclose(subspace._mass_times(mass, X), Mn @ X, rtol=0, atol=1e-13 * np.abs(Mn @ X).max())
    K = subspace.elastic_stiffness(model)
    stiff = (layout.K_inv, layout.K_inv_chol, layout.bounds, layout.band, layout.K_band)
    Y = subspace._stiffness_solve(stiff, X)
    # Backward stable: the residual within round-off of the products' magnitudes.
    assert (np.abs(K @ Y - X) <= 1e-13 * (np.abs(K) @ np.abs(Y))).all()
    Y_d = subspace.block_product(np.linalg.inv(K), layout.bounds, X)
    np.testing.assert_allclose(Y, Y_d, rtol=0, atol=1e-8 * np.abs(Y).max())
    V = np.random.default_rng(3).normal(size=(model.n_v, 4))
    np.testing.assert_allclose(subspace.mass_product(M, layout, V), M @ V, rtol=0, atol=1e-13 * np.abs(M @ V).max())
    # ... and from the parts the frames keep of M on its store (R, val; M's reference rows read
    # from its reference columns, equal to round-off)
    parts = subspace.parts_product(R, subspace.band_values(M, layout), layout, V)
    np.testing.assert_allclose(parts, M @ V, rtol=0, atol=1e-13 * np.abs(M @ V).max())


def test_band_path_modes_and_statics_are_the_dense_paths(rrru3_fine, monkeypatch):
    """Along an arc, the tracker on the band path (iterative fresh start, no dense reduced
    mass) against the same tracker on the dense path (dense inverse, dense start): the same
    sweeps, frequencies to 1e-10 (measured 3e-12), the modal subspace (M-orthogonal projector)
    and the static displacements to 1e-9 of their largest entries (both iterate to
    RESIDUAL_TOL from starts that agree to START_TOL; measured 1e-11), and the dense modes of
    sim.solvers.modal."""
    from sim.solvers import subspace
    model, motion, evals = rrru3_fine
    found = {}
    for band in (True, False):
        monkeypatch.setattr(subspace, "BAND_MIN", model.v_elastic.size if band else model.v_elastic.size + 1)
        tracker = Tracker(model, 6)
        assert bool(tracker.K_band.size) == band
        found[band] = [tracker.modes(E.M, E.J, np.column_stack([E.Q, E.Q0])) for E in evals]
        found[band, "sweeps"] = tracker.sweeps
    assert found[True, "sweeps"] == found[False, "sweeps"] and found[True, "sweeps"][0] == -1
    for k, E in enumerate(evals):
        (omega, shapes, mass_shapes, static), (omega_d, shapes_d, mass_shapes_d, static_d) = found[True][k], found[False][k]
        np.testing.assert_allclose(omega, omega_d, rtol=1e-10)
        P, P_d = shapes @ mass_shapes.T, shapes_d @ mass_shapes_d.T
        assert np.abs(P - P_d).max() <= 1e-9 * np.abs(P_d).max(), f"instant {k}"
        np.testing.assert_allclose(static, static_d, rtol=0, atol=1e-9 * np.abs(static_d).max())
        np.testing.assert_allclose(mass_shapes, E.M @ shapes, rtol=0, atol=1e-12 * np.abs(mass_shapes).max())
    # sim.solvers.modal's dense modes (another basis, a generalized eigensolve): both paths
    # within 2e-9 of them at this size, the conditioning of K_ee growing with the elements.
    ref = modes(model, motion.q[6], 6, M=evals[6].M, free=False, energies=False, J=evals[6].J, J_s=evals[6].J_s)
    np.testing.assert_allclose(found[True][6][0], ref.omega, rtol=1e-8)


def test_band_path_forms_no_dense_stiffness(rrru3_fine):
    """On the band path the tracker keeps no (n_v, n_v) stiffness (the constant solver reads its
    band factors); the general solver's layout forms it, as the model's."""
    from sim.model.dynamics import stiffness_matrix
    model, _, evals = rrru3_fine
    tracker = Tracker(model, 6)
    E = evals[0]
    tracker.modes(E.M, E.J)
    assert tracker.K_band.size and tracker._K_body is None and tracker.layout().K_body.size == 0
    np.testing.assert_array_equal(tracker.layout(general=True).K_body, stiffness_matrix(model))
