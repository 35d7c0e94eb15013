"""The compiled evaluator (sim.fast) reproduces the reference kernels to round-off."""
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose

from sim.constraints import actuator_values, constraints
from sim.dynamics import mass_and_forces
from sim.fast import Evaluator
from sim.kinematics import integrate
from sim.loader import load_model

import oracles

ROOT = Path(__file__).resolve().parent.parent
CASES = {
    "navaro": ("models/navaro.py", {}),
    "navaro_compliant": ("models/navaro.py", {"clutch_stiffness": 2000.0, "joint_mass": 0.3}),
    "rrru3": ("models/rrru3.py", {"elements_per_link": 2}),
    "slider_crank": ("models/slider_crank.py", {"elements": 4, "stiffening": True}),
    "flexible_arm": ("models/flexible_arm.py", {"elements": 4}),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def state(request):
    path, params = CASES[request.param]
    model = load_model(ROOT / path, params)
    rng = np.random.default_rng(7)
    dv = 1e-2 * rng.standard_normal(model.n_v)
    dv[model.v_elastic] *= 1e-2
    q = integrate(model, model.q_home, dv)
    v = rng.standard_normal(model.n_v)
    s = actuator_values(model, q)[0] + 0.01
    return request.param, model, q, v, s, 0.3 * rng.standard_normal(len(model.actuators))


def test_mass_and_forces_match_reference(state):
    name, model, q, v, s, _ = state
    M, Q, *_ = Evaluator(model).evaluate(q, v, targets=s)
    M_ref, Q_ref = mass_and_forces(model, q, v, targets=s)
    assert_allclose(M, M_ref, rtol=1e-12, atol=1e-12 * np.abs(M_ref).max(), err_msg=f"{name}: M")
    assert_allclose(Q, Q_ref, rtol=1e-10, atol=1e-10 * np.abs(Q_ref).max(), err_msg=f"{name}: Q")


def test_constraints_match_reference(state):
    name, model, q, v, s, sdd = state
    _, _, C, J, gamma, s_all, J_s, *_ = Evaluator(model).evaluate(q, v, targets=s, target_acc=sdd)
    C_ref, J_ref, g_ref = constraints(model, q, v, targets=s, target_acc=sdd)
    assert_allclose(C, C_ref, atol=1e-13, err_msg=f"{name}: C")
    assert_allclose(J, J_ref, atol=1e-12 * np.abs(J_ref).max(), err_msg=f"{name}: J")
    assert_allclose(gamma, g_ref, rtol=1e-10, atol=1e-10 * np.abs(g_ref).max(), err_msg=f"{name}: gamma")
    s_ref, J_s_ref = actuator_values(model, q)
    assert_allclose(s_all, s_ref, atol=1e-13, err_msg=f"{name}: actuator values")
    assert_allclose(J_s, J_s_ref, atol=1e-12 * np.abs(J_s_ref).max(initial=1.0), err_msg=f"{name}: actuator Jacobian")


def test_free_actuators_leave_joint_rows_only(state):
    name, model, q, v, _, _ = state
    _, _, C, J, gamma, *_ = Evaluator(model).evaluate(q, v)
    assert C.shape == (model.rows["n_joint"],) and J.shape == (model.rows["n_joint"], model.n_v), name


def test_integrate_matches_reference(state):
    name, model, q, v, _, _ = state
    dv = 0.3 * v
    assert_allclose(Evaluator(model).integrate(q, dv), integrate(model, q, dv), atol=1e-14, err_msg=f"{name}: q ⊕ dv")


def test_pose_terms_match_reference(state):
    from sim.kinematics import pose_rates
    name, model, q, v, _, _ = state
    ev = Evaluator(model)
    ev.evaluate(q, v)
    x, J, xq = ev.pose(v)
    x_ref, J_ref, _, xq_ref = pose_rates(model, q, v)
    assert_allclose(x, x_ref, atol=1e-13, err_msg=f"{name}: pose")
    assert_allclose(J, J_ref, atol=1e-12, err_msg=f"{name}: pose Jacobian")
    assert_allclose(xq, xq_ref, rtol=1e-10, atol=1e-10, err_msg=f"{name}: pose x_q")


def test_actuator_gamma_matches_reference(state):
    name, model, q, v, _, _ = state
    gamma_s = Evaluator(model).evaluate(q, v).gamma_s
    s_ref, J_ref, g_ref = actuator_values(model, q, v=v)
    assert_allclose(gamma_s, g_ref, rtol=1e-10, atol=1e-10, err_msg=f"{name}: actuator gamma")


def test_potential_matches_reference(state):
    from sim.dynamics import potential
    name, model, q, _, _, _ = state
    assert_allclose(Evaluator(model).potential(q), potential(model, q), rtol=1e-12, atol=1e-14, err_msg=name)


def test_velocity_jacobians_match_central_differences(state):
    """``dQ/dv`` and ``d gamma/dv``: Q and gamma are quadratic in v, so central differences
    with unit steps are exact up to round-off (of order eps |Q| and eps |gamma|)."""
    name, model, q, v, s, sdd = state
    ev = Evaluator(model)
    E = ev.evaluate(q, v, targets=s, target_acc=sdd, velocity_jacobian=True)
    Q_v = np.empty_like(E.Q_v)
    g_v = np.empty_like(E.gamma_v)
    for k in range(model.n_v):
        dv = np.zeros(model.n_v)
        dv[k] = 1.0
        plus, minus = ev.evaluate(q, v + dv, targets=s, target_acc=sdd), ev.evaluate(q, v - dv, targets=s,
                                                                                    target_acc=sdd)
        Q_v[:, k] = (plus.Q - minus.Q) / 2
        g_v[:, k] = (plus.gamma - minus.gamma) / 2
    scale = np.abs(E.Q).max() + np.abs(Q_v).max()
    assert_allclose(E.Q_v, Q_v, atol=1e-13 * scale, err_msg=f"{name}: dQ/dv")
    assert_allclose(E.gamma_v, g_v, atol=1e-13 * (np.abs(E.gamma).max() + np.abs(g_v).max()),
                    err_msg=f"{name}: dgamma/dv")
    assert np.abs(E.Q_v).max() > 1e-3 and np.abs(E.gamma_v).max() > 1e-3, f"{name}: trivial velocity Jacobians"


def against_oracle(model, drive, h, steps, damping=None, method="newmark", rho_inf=1.0):
    """States after ``steps`` steps of ``h`` from rest at home: :func:`sim.simulate.simulate`
    (the compiled step loop) and the plain generalized-α of ``tests/oracles.py`` (Newton with a
    fresh finite-difference Jacobian at every iteration, on the public evaluator)."""
    from sim.integrators import METHODS
    from sim.simulate import simulate
    res = simulate(model, model.q_home, np.zeros(model.n_v), steps * h, h, drive, method=method, rho_inf=rho_inf,
                   newton_tol=1e-13, damping=damping)
    assert res.status == "complete", res.message
    am, af = METHODS[method].coefficients(rho_inf)
    q, v = oracles.generalized_alpha(Evaluator(model), drive, model.q_home, np.zeros(model.n_v), h, steps, am, af,
                                     damping=damping)
    return res, q, v


@pytest.mark.parametrize("kind", ["prescribed", "torque", "free"])
def test_step_loop_matches_oracle(kind):
    """The compiled step loop against the plain generalized-α oracle, with each drive kind
    (and damping with the torque drive): same states to the Newton tolerance."""
    from sim.simulate import Drive
    model = load_model(ROOT / "models/rrru3.py", {"elements_per_link": 1})
    s0 = actuator_values(model, model.q_home)[0]
    law = (lambda t: (s0 + 0.05 * np.sin(3 * t), 0.15 * np.cos(3 * t) + 0 * s0, -0.45 * np.sin(3 * t) + 0 * s0))
    damping = None
    if kind == "prescribed":
        drive = Drive("prescribed", reference=law)
    elif kind == "torque":
        drive = Drive("torque", reference=law, feedforward=lambda t: np.full(s0.size, 2.0 * np.sin(5 * t)),
                      kp=500.0, kd=5.0)
        damping = 1e-4 * np.diag(np.arange(1.0, model.n_v + 1))
    else:
        drive = Drive("free")
    res, q, v = against_oracle(model, drive, 1e-3, 20, damping)
    assert np.abs(res.q[-1] - model.q_home).max() > 1e-5          # the robot has moved
    assert_allclose(res.q, q, rtol=0, atol=1e-10)
    assert_allclose(res.v, v, rtol=0, atol=1e-7)


@pytest.mark.parametrize("name, params", [("delta_surgiscope", {}), ("navaro", {"clutch_stiffness": 2000.0})])
def test_step_loop_covers_lumped_compliance(name, params):
    """Lumped springs and compliant actuators pulled along a prescribed law, generalized-α
    with numerical damping: the compiled step loop against the oracle."""
    from sim.simulate import Drive
    model = load_model(ROOT / f"models/{name}.py", params)
    s0 = actuator_values(model, model.q_home)[0]
    law = (lambda t: (s0 + 0.02 * np.sin(40 * t), 0.8 * np.cos(40 * t) + 0 * s0, -32 * np.sin(40 * t) + 0 * s0))
    res, q, v = against_oracle(model, Drive("prescribed", reference=law), 1e-3, 10, method="generalized-alpha",
                               rho_inf=0.8)
    assert np.abs(res.q[-1] - model.q_home).max() > 1e-5
    assert_allclose(res.q, q, rtol=0, atol=1e-10)


def test_step_loop_covers_geometric_stiffening():
    """The stiffened slider-crank (the axial force's tangent stiffness matters): the compiled
    step loop against the oracle."""
    from sim.simulate import Drive
    model = load_model(ROOT / CASES["slider_crank"][0], CASES["slider_crank"][1])
    s0 = actuator_values(model, model.q_home)[0]
    law = (lambda t: (s0 + 150.0 * t, np.full(s0.size, 150.0), np.zeros(s0.size)))
    res, q, _ = against_oracle(model, Drive("prescribed", reference=law), 5e-5, 40)
    assert np.abs(res.q[-1][model.q_elastic]).max() > 1e-7          # the rod has deformed
    assert_allclose(res.q, q, rtol=0, atol=1e-10)
