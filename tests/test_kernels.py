"""Compiled kernels (``sim.kernels``) against their numpy oracles (``tests/oracles.py``) on many
random states, and their tangents against finite differences of their forces."""
import numpy as np
import pytest

from sim.model.tables import stretched
from sim.kernels.stretch import compact, stretch

import oracles
from conftest import load


@pytest.fixture(scope="module", params=[("slider_crank", {"elements": 4, "stiffening": True}),
                                        ("spinup_beam", {"elements": 6})])
def stiffened(request):
    name, params = request.param
    model = load(name, **params)
    (b,) = stretched(model)
    return model, model.bodies[b]


def test_stretch_kernel_matches_oracle_on_random_states(stiffened):
    """Force, tangent and energy to round-off on 50 random elastic states (1e-4 to 1e-1 of the
    body's size: from small vibrations to large sag); the kernel on each element's own
    coordinates, the oracle on the dense tables."""
    _, body = stiffened
    rng = np.random.default_rng(3)
    for trial in range(50):
        qf = 10.0 ** rng.uniform(-4, -1) * rng.standard_normal(body.n_f)
        force, tangent = np.zeros(body.n_f), np.zeros((body.n_f, body.n_f))
        idx, A, G = compact(body.stretch_rows, body.stretch_slopes)
        energy = stretch(qf, idx, A, body.stretch_k, G, force, tangent, True, np.empty(2 * idx.shape[1]))
        f_ref, t_ref, e_ref = oracles.stretch_terms(qf, body.stretch_rows, body.stretch_k, body.stretch_slopes)
        np.testing.assert_allclose(force, f_ref, rtol=0, atol=1e-12 * np.abs(f_ref).max())
        np.testing.assert_allclose(tangent, t_ref, rtol=0, atol=1e-12 * np.abs(t_ref).max())
        assert energy == pytest.approx(e_ref, rel=1e-12, abs=1e-300)


def test_stretch_force_is_minus_the_gradient_of_its_energy_and_tangent_its_jacobian(stiffened):
    """Central differences: ``f = -dV/dq`` and ``K_t = -df/dq`` (second order, 1e-6 relative)."""
    _, body = stiffened
    rng = np.random.default_rng(5)
    qf = 1e-2 * rng.standard_normal(body.n_f)
    idx, A, G = compact(body.stretch_rows, body.stretch_slopes)

    def terms(x):
        f, t = np.zeros(body.n_f), np.zeros((body.n_f, body.n_f))
        e = stretch(x, idx, A, body.stretch_k, G, f, t, True, np.empty(2 * idx.shape[1]))
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


# --- lumped springs and compliant actuators -----------------------------------------------------

LUMPED = [("delta_surgiscope", {}), ("delta_surgiscope", {"joints": "rigid"}),
          ("navaro", {"clutch_stiffness": 2000.0}), ("pss6", {"compliant_drives": True})]


@pytest.fixture(scope="module", params=LUMPED + [("spring_chain", {"c1": 30.0})], ids=lambda p: f"{p[0]}{p[1]}")
def lumped_model(request):
    name, params = request.param
    if name == "spring_chain":
        import spring_chain_model
        return spring_chain_model.build(**params)
    return load(name, **params)


def lumped(model, ms, v=None, s=None, J_s=None, targets=None):
    """Forces ``Q`` (n_v,), linearised stiffness ``K`` and damping ``C`` (n_v, n_v) and
    potential of the lumped springs and compliant actuators from their kernels alone (the
    compiled evaluation calls them the same way, among the bodies' terms), at the marker
    state ``ms``; the actuators' with ``s``, ``J_s`` and (forces) ``targets``."""
    from types import SimpleNamespace

    from sim.kernels import springs as kernel

    n = model.n_v
    v = np.zeros(n) if v is None else np.ascontiguousarray(v, dtype=float)
    Q, K, G = np.zeros(n), np.zeros((n, n)), np.zeros((n, n))
    energy = 0.0
    m, d = ms.tables, ms.data
    if model.springs:
        energy = kernel.springs((m.sp_mi, m.sp_mj, m.sp_K, m.sp_C, m.sp_home), (m.cols, d.p, d.A, d.Jp, d.Ja, d.Jw),
                                v, Q, Q[:0], G, K, True, True)
    if m.ca_idx.size and J_s is not None:
        Q_a = np.zeros(n)
        kernel.actuator_springs((m.ca_idx, m.ca_k, m.ca_c, m.angle),
                                (np.zeros(m.angle.size) if s is None else s, np.ascontiguousarray(J_s)),
                                np.zeros(m.angle.size) if targets is None else np.asarray(targets, dtype=float), v,
                                (Q_a, Q_a[:0], G, K), (True, True))
        if targets is not None and s is not None:
            Q += Q_a
    return SimpleNamespace(Q=Q, K=K, C=-G, energy=energy)


def test_lumped_kernels_match_oracle_on_random_states(lumped_model):
    """Forces, linearised stiffness and damping, and potential of the springs and compliant
    actuators (their kernels, :func:`lumped`) against the numpy statement, to round-off, on 20
    random states each (rotations of ~0.5 rad, elastic coordinates of ~2 mm)."""
    from conftest import random_state
    from sim.model.constraints import actuator_values
    from sim.model.kinematics import markers
    from sim.model.springs import deflections
    model = lumped_model
    rng = np.random.default_rng(11)
    for trial in range(20):
        q, v = random_state(model, 100 + trial)
        ms = markers(model, q)
        s, J_s = actuator_values(model, q, ms)
        targets = s + 0.1 * rng.standard_normal(s.size)
        got = lumped(model, ms, v, s, J_s, targets)
        Q = oracles.spring_forces(model, ms, v) + oracles.actuator_spring_forces(model, s, J_s, v, targets)
        K = oracles.spring_stiffness(model, ms) + oracles.actuator_stiffness(model, J_s)
        C = oracles.spring_damping(model, ms)
        mask = np.array([a.stiffness is not None for a in model.actuators], dtype=bool)
        if mask.any():
            c = np.array([a.damping for a in model.actuators])[mask]
            C = C + J_s[mask].T @ (c[:, None] * J_s[mask])
        scale = max(np.abs(Q).max(), 1e-300)
        np.testing.assert_allclose(got.Q, Q, rtol=0, atol=1e-12 * scale)
        np.testing.assert_allclose(got.K, K, rtol=0, atol=1e-12 * np.abs(K).max())
        np.testing.assert_allclose(got.C, C, rtol=0, atol=1e-12 * max(np.abs(C).max(), 1e-300))
        if model.springs:
            d, Jd = deflections(model, ms)
            d_ref, Jd_ref = oracles.deflections(model, ms)
            np.testing.assert_allclose(d, d_ref, rtol=0, atol=1e-14)
            np.testing.assert_allclose(Jd, Jd_ref, rtol=0, atol=1e-13 * np.abs(Jd_ref).max())
            energy = 0.5 * np.einsum("ni,nij,nj->", d_ref, model.spring_tables["K"], d_ref)
            assert got.energy == pytest.approx(energy, rel=1e-12, abs=1e-300)


def test_spring_force_is_minus_the_gradient_of_its_energy(lumped_model):
    """Central differences on the manifold (``q ⊕ s e_k``): ``Q = -dV/dq`` at rest, and at the
    home state, where every spring is unloaded, ``K = -dQ/dq`` (1e-6 relative)."""
    from conftest import fd_jacobian, random_state
    from sim.model.kinematics import markers
    model = lumped_model
    if not model.springs:
        pytest.skip("no lumped springs")
    q, _ = random_state(model, 4)
    Q = lumped(model, markers(model, q)).Q
    grad = fd_jacobian(lambda x: lumped(model, markers(model, x)).energy, model, q)
    np.testing.assert_allclose(Q, -grad, rtol=0, atol=1e-6 * np.abs(Q).max())
    q = model.q_home
    K = lumped(model, markers(model, q)).K
    jac = fd_jacobian(lambda x: lumped(model, markers(model, x)).Q, model, q)
    np.testing.assert_allclose(K, -jac, rtol=0, atol=1e-6 * np.abs(K).max())
