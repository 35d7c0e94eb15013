"""Compiled kernels (``sim.kernels``) against their numpy oracles (``tests/oracles.py``) on many
random states, and their tangents against finite differences of their forces."""
import numpy as np
import pytest

from sim import dynamics
from sim.kernels.stretch import stretch

import oracles
from conftest import load


@pytest.fixture(scope="module", params=[("slider_crank", {"elements": 4, "stiffening": True}),
                                        ("spinup_beam", {"elements": 6})])
def stiffened(request):
    name, params = request.param
    model = load(name, **params)
    (b,) = dynamics._stretch_bodies(model)
    return model, model.bodies[b]


def test_stretch_kernel_matches_oracle_on_random_states(stiffened):
    """Force, tangent and energy to round-off on 50 random elastic states (1e-4 to 1e-1 of the
    body's size: from small vibrations to large sag)."""
    _, body = stiffened
    rng = np.random.default_rng(3)
    for trial in range(50):
        qf = 10.0 ** rng.uniform(-4, -1) * rng.standard_normal(body.n_f)
        force, tangent = np.zeros(body.n_f), np.zeros((body.n_f, body.n_f))
        energy = stretch(qf, body.stretch_rows, body.stretch_k, body.stretch_slopes, force, tangent, True)
        f_ref, t_ref, e_ref = oracles.stretch_terms(qf, body.stretch_rows, body.stretch_k, body.stretch_slopes)
        np.testing.assert_allclose(force, f_ref, rtol=0, atol=1e-12 * np.abs(f_ref).max())
        np.testing.assert_allclose(tangent, t_ref, rtol=0, atol=1e-12 * np.abs(t_ref).max())
        assert energy == pytest.approx(e_ref, rel=1e-12, abs=1e-300)


def test_stretch_force_is_minus_the_gradient_of_its_energy_and_tangent_its_jacobian(stiffened):
    """Central differences: ``f = -dV/dq`` and ``K_t = -df/dq`` (second order, 1e-6 relative)."""
    _, body = stiffened
    rng = np.random.default_rng(5)
    qf = 1e-2 * rng.standard_normal(body.n_f)

    def terms(x):
        f, t = np.zeros(body.n_f), np.zeros((body.n_f, body.n_f))
        e = stretch(x, body.stretch_rows, body.stretch_k, body.stretch_slopes, f, t, True)
        return f, t, e

    force, tangent, _ = terms(qf)
    eps = 1e-6
    grad = np.empty(body.n_f)
    jac = np.empty((body.n_f, body.n_f))
    for i in range(body.n_f):
        dq = np.zeros(body.n_f)
        dq[i] = eps
        fp, _, ep = terms(qf + dq)
        fm, _, em = terms(qf - dq)
        grad[i] = (ep - em) / (2 * eps)
        jac[:, i] = -(fp - fm) / (2 * eps)
    np.testing.assert_allclose(force, -grad, rtol=0, atol=1e-6 * np.abs(force).max())
    np.testing.assert_allclose(tangent, jac, rtol=0, atol=1e-6 * np.abs(tangent).max())
