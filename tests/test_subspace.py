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
