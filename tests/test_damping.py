"""Damping models and complex modes (sim.solvers.damping) against closed forms."""
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg

from sim.solvers import damping as dmp
from sim.model.loader import load_model

CHAIN = Path(__file__).with_name("spring_chain_model.py")


@pytest.fixture(scope="module")
def system():
    """Reduced matrices of a 3-dof chain (closed-form checks need only M, K)."""
    M = np.diag([1.0, 2.0, 1.5])
    K = np.array([[3e4, -2e4, 0.0], [-2e4, 5e4, -3e4], [0.0, -3e4, 3e4]])
    return M, K


def test_rayleigh_complex_modes_match_closed_form(system):
    """Proportional viscous damping: lambda = -zeta w + i w sqrt(1 - zeta^2), zeta = a/2w + b w/2."""
    M, K = system
    alpha, beta = 2.0, 1e-4
    w = np.sqrt(scipy.linalg.eigh(K, M, eigvals_only=True))
    zeta = alpha / (2 * w) + beta * w / 2
    cm = dmp.complex_modes(M, dmp.rayleigh(M, K, alpha, beta), K)
    np.testing.assert_allclose(cm.damped_hz, w * np.sqrt(1 - zeta**2) / (2 * np.pi), rtol=1e-10)
    np.testing.assert_allclose(cm.ratios, zeta, rtol=1e-9)
    np.testing.assert_allclose(cm.frequencies_hz, w / (2 * np.pi), rtol=1e-10)


def test_structural_eigenvalues(system):
    """K (1 + i eta): lambda = i w sqrt(1 + i eta) for every mode."""
    M, K = system
    eta = 0.096
    w = np.sqrt(scipy.linalg.eigh(K, M, eigvals_only=True))
    cm = dmp.complex_modes(M, np.zeros_like(M), K, eta)
    np.testing.assert_allclose(cm.eigenvalues, 1j * w * np.sqrt(1 + 1j * eta), rtol=1e-10)


def test_modal_damping_matrix_is_diagonal_in_modes(system):
    """Phi^T C Phi = diag(2 zeta w) for C built from mass-normalised modes."""
    M, K = system
    lam, X = scipy.linalg.eigh(K, M)
    w = np.sqrt(lam)
    zeta = np.array([0.01, 0.02, 0.05])
    C = dmp.modal_damping_matrix(M, X, w, zeta)
    np.testing.assert_allclose(X.T @ C @ X, np.diag(2 * zeta * w), atol=1e-9 * np.abs(C).max())
    cm = dmp.complex_modes(M, C, K)
    np.testing.assert_allclose(cm.ratios, zeta, rtol=1e-8)


def test_rayleigh_coefficients_reproduce_ratios():
    alpha, beta = dmp.rayleigh_coefficients(5.0, 50.0, 0.02, 0.03)
    for f, z in ((5.0, 0.02), (50.0, 0.03)):
        w = 2 * np.pi * f
        assert alpha / (2 * w) + beta * w / 2 == pytest.approx(z, rel=1e-12)


def test_proportionality_test_and_nonproportional_complex_modes():
    """A damper on one spring only is non-proportional; its complex modes solve the quadratic
    eigenproblem det(lambda^2 M + lambda C + K) = 0 (checked by the residual of each pair)."""
    model = load_model(CHAIN, {"c1": 40.0})
    red = dmp.reduce(model, model.q_home)
    assert not dmp.is_proportional(red.M, red.C, red.K)
    assert dmp.is_proportional(red.M, dmp.rayleigh(red.M, red.K, 1.0, 1e-4), red.K)
    cm = dmp.complex_modes(red.M, red.C, red.K)
    for lam, phi in zip(cm.eigenvalues[:4], cm.shapes[:, :4].T):
        res = (lam**2 * red.M + lam * red.C + red.K) @ phi
        assert np.linalg.norm(res) < 1e-8 * np.linalg.norm(red.K @ phi)
    # The damped axial modes are complex: their shapes are not real up to a phase.
    axial = np.argmin(np.abs(cm.frequencies_hz - 8.238))
    phi = cm.shapes[:, axial]
    assert np.abs(phi.imag).max() > 1e-4 * np.abs(phi).max()


def test_damping_rejects_bad_values():
    from sim.errors import SimError
    with pytest.raises(SimError, match="eta"):
        dmp.Damping(eta=-0.1)
    with pytest.raises(SimError, match="zeta"):
        dmp.Damping(zeta=1.5)
