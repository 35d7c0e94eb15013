"""The compiled kernels, through the public functions and the evaluator (sim.model.evaluator), reproduce the
numpy statements of ``tests/oracles.py`` to round-off on random states of several models."""
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose

from sim.model.constraints import actuator_values, constraints
from sim.model.dynamics import damping_matrix, mass_and_forces, mass_matrix, potential, stiffness_matrix
from sim.kernels.equations import GROUPS, PATTERN_MIN
from sim.model.evaluator import Evaluator
from sim.model.kinematics import integrate, markers
from sim.model.loader import load_model

import oracles

ROOT = Path(__file__).resolve().parent.parent
CASES = {
    "navaro": ("models/navaro.py", {}),
    "navaro_compliant": ("models/navaro.py", {"clutch_stiffness": 2000.0, "joint_mass": 0.3}),
    "rrru3": ("models/rrru3.py", {"elements_per_link": 2}),
    "slider_crank": ("models/slider_crank.py", {"elements": 4, "stiffening": True}),
    "flexible_arm": ("models/flexible_arm.py", {"elements": 4}),
    "delta_surgiscope": ("models/delta_surgiscope.py", {}),
    "pss6_compliant": ("models/pss6.py", {"compliant_drives": True}),
    # Six rods of six elastic sizes: seven body groups, beyond the GROUPS the evaluation unrolls.
    "delta_rods_mixed": ("tests/delta_rods_model.py", {"elements": [1, 2, 3, 4, 5, 6]}),
}


N_STATES = 6


@pytest.fixture(scope="module", params=sorted(CASES))
def states(request):
    """``N_STATES`` random states of one model: ``(q, v, s, s_ddot)``, actuator targets ``s``
    off the actuator values by ~0.01 (compliant actuators pulled), their accelerations."""
    path, params = CASES[request.param]
    model = load_model(ROOT / path, params)
    out = []
    for k in range(N_STATES):
        rng = np.random.default_rng(7 + k)
        dv = 1e-2 * rng.standard_normal(model.n_v) * (1 + 20 * k)      # from near home to ~0.6 rad
        dv[model.v_elastic] *= 1e-2
        q = oracles.integrate(model, model.q_home, dv)
        v = rng.standard_normal(model.n_v)
        s = oracles.actuator_values(model, q)[0] + 0.01 * rng.standard_normal(len(model.actuators))
        out.append((q, v, s, 0.3 * rng.standard_normal(len(model.actuators))))
    return request.param, model, out


def test_a_case_has_more_body_groups_than_the_evaluation_unrolls():
    """The tables' body groups are padded to a multiple of GROUPS (a tuple's length is part of
    its type): a case above keeps the longer tuple covered."""
    path, params = CASES["delta_rods_mixed"]
    t = Evaluator(load_model(ROOT / path, params)).tables
    assert sum(g.q_start.size > 0 for g in t.groups) > GROUPS, "the mixed Delta no longer has more body groups than GROUPS"


@pytest.fixture(scope="module")
def state(states):
    name, model, out = states
    return (name, model, *out[1])


def test_mass_and_forces_match_oracle(states):
    """``M``, ``Q`` (bodies, stiffening, springs, compliant actuators) of the public function and
    of the evaluator against the numpy statements, on every state."""
    name, model, out = states
    ev = Evaluator(model)
    for q, v, s, _ in out:
        M_ref, Q_ref = oracles.mass_and_forces(model, q, v, targets=s)
        for M, Q in (mass_and_forces(model, q, v, targets=s), ev.evaluate(q, v, targets=s)[:2]):
            assert_allclose(M, M_ref, rtol=1e-12, atol=1e-12 * np.abs(M_ref).max(), err_msg=f"{name}: M")
            assert_allclose(Q, Q_ref, rtol=1e-10, atol=1e-10 * np.abs(Q_ref).max(), err_msg=f"{name}: Q")
        assert_allclose(mass_matrix(model, q), M_ref, rtol=1e-12, atol=1e-12 * np.abs(M_ref).max())


def test_undeformed_bodies_match_oracle(states):
    """``M``, ``Q`` where the bodies are undeformed (the rigid robot's states, which take the
    kernel's short cut), and undeformed but with elastic velocities (which do not)."""
    name, model, out = states
    ev = Evaluator(model)
    elastic = model.v_elastic
    for q, v, s, _ in out[:3]:
        q = q.copy()
        for b, (qs, vs) in enumerate(zip(*oracles._starts(model))):
            q[qs + 7:qs + 7 + model.bodies[b].n_f] = 0.0
        for v_f in (np.zeros(len(elastic)), v[elastic]):
            w = v.copy()
            w[elastic] = v_f
            M_ref, Q_ref = oracles.mass_and_forces(model, q, w, targets=s)
            M, Q = ev.evaluate(q, w, targets=s)[:2]
            assert_allclose(M, M_ref, rtol=1e-12, atol=1e-12 * np.abs(M_ref).max(), err_msg=f"{name}: M")
            assert_allclose(Q, Q_ref, rtol=1e-10, atol=1e-10 * np.abs(Q_ref).max(), err_msg=f"{name}: Q")


def test_forces_at_rest_match_oracle(states):
    """The evaluation's forces at rest ``Q0`` (same pass as ``Q`` at ``v``) against the numpy
    statements at ``v = 0``: gravity, elastic, stiffening, springs and compliant actuators
    without their damping; ``Q`` at ``v`` unchanged by asking for them."""
    name, model, out = states
    ev = Evaluator(model)
    for q, v, s, _ in out:
        Q0_ref = oracles.mass_and_forces(model, q, np.zeros(model.n_v), targets=s)[1]
        E = ev.evaluate(q, v, targets=s, rest=True)
        assert_allclose(E.Q0, Q0_ref, rtol=1e-10, atol=1e-10 * np.abs(Q0_ref).max(), err_msg=f"{name}: Q0")
        assert_allclose(E.Q, ev.evaluate(q, v, targets=s).Q, rtol=1e-14, err_msg=f"{name}: Q")   # sums regrouped
        assert np.abs(E.Q - E.Q0).max() > 1e-3, name    # the velocity terms are there [N, N m]


def test_mass_products_match_oracle(states):
    """``M(q_k) X_k`` of the evaluator's compiled pass (body by body) on every state at once."""
    name, model, out = states
    qs = np.array([q for q, *_ in out])
    X = np.random.default_rng(3).standard_normal((len(out), model.n_v, 3))
    ref = np.array([oracles.mass_and_forces(model, q, np.zeros(model.n_v))[0] for q in qs]) @ X
    assert_allclose(Evaluator(model).mass_products(qs, X), ref, rtol=0, atol=1e-12 * np.abs(ref).max(), err_msg=name)


def test_mass_products_by_nonzeros_match_oracle():
    """From PATTERN_MIN coordinates the mass products go by the nonzeros of the bodies' blocks
    (sim.kernels.common.pattern_product), the groups beyond GROUPS included: the mixed Delta
    with rods of 3 to 8 elements (seven body groups) against the numpy statements."""
    model = load_model(ROOT / "tests/delta_rods_model.py", {"elements": [3, 4, 5, 6, 7, 8]})
    assert model.n_v >= PATTERN_MIN and len(model.body_groups) > GROUPS
    qs = []
    for k in range(3):
        rng = np.random.default_rng(11 + k)
        dv = 1e-2 * rng.standard_normal(model.n_v) * (1 + 20 * k)
        dv[model.v_elastic] *= 1e-2
        qs.append(oracles.integrate(model, model.q_home, dv))
    qs = np.array(qs)
    X = np.random.default_rng(5).standard_normal((len(qs), model.n_v, 4))
    ref = np.array([oracles.mass_and_forces(model, q, np.zeros(model.n_v))[0] for q in qs]) @ X
    assert_allclose(Evaluator(model).mass_products(qs, X), ref, rtol=0, atol=1e-12 * np.abs(ref).max())


def test_stiffness_and_damping_match_oracle(states):
    """The linearised stiffness (bodies, stiffening tangent, springs, locked compliant
    actuators) and damping (springs, compliant actuators) against the numpy statements."""
    name, model, out = states
    for q, *_ in out:
        K_ref = oracles.stiffness_matrix(model, q)
        assert_allclose(stiffness_matrix(model, q), K_ref, rtol=0, atol=1e-12 * np.abs(K_ref).max(), err_msg=name)
        ms = oracles.markers(model, q)
        C_ref = oracles.spring_damping(model, ms)
        mask = np.array([a.stiffness is not None for a in model.actuators], dtype=bool)
        if mask.any():
            J_s = oracles.actuator_values(model, q)[1][mask]
            c = np.array([a.damping for a in model.actuators])[mask]
            C_ref = C_ref + J_s.T @ (c[:, None] * J_s)
        assert_allclose(damping_matrix(model, q), C_ref, rtol=0, atol=1e-12 * max(np.abs(C_ref).max(), 1e-300),
                        err_msg=name)


def test_markers_match_oracle(states):
    """Marker poses, dense Jacobians and rates against the numpy statement."""
    name, model, out = states
    for q, v, *_ in out:
        got, ref = markers(model, q, v), oracles.markers(model, q, v)
        for f in ("p", "A", "Jp", "Ja", "Jw", "pd", "Ad", "pq", "Aq", "wq"):
            x, y = getattr(got, f), getattr(ref, f)
            assert_allclose(x, y, rtol=0, atol=1e-12 * max(np.abs(y).max(), 1.0), err_msg=f"{name}: {f}")


def test_constraints_match_oracle(states):
    name, model, out = states
    ev = Evaluator(model)
    for q, v, s, sdd in out:
        C_ref, J_ref, g_ref = oracles.constraints(model, q, v, targets=s, target_acc=sdd)
        _, _, C, J, gamma, s_all, J_s, *_ = ev.evaluate(q, v, targets=s, target_acc=sdd)
        for C, J, gamma in ((C, J, gamma), constraints(model, q, v, targets=s, target_acc=sdd)):
            assert_allclose(C, C_ref, atol=1e-13, err_msg=f"{name}: C")
            assert_allclose(J, J_ref, atol=1e-12 * np.abs(J_ref).max(initial=1.0), err_msg=f"{name}: J")
            assert_allclose(gamma, g_ref, rtol=1e-10, atol=1e-10 * np.abs(g_ref).max(initial=1.0),
                            err_msg=f"{name}: gamma")
        s_ref, J_s_ref, gs_ref = oracles.actuator_values(model, q, v)
        assert_allclose(s_all, s_ref, atol=1e-13, err_msg=f"{name}: actuator values")
        assert_allclose(J_s, J_s_ref, atol=1e-12 * np.abs(J_s_ref).max(initial=1.0), err_msg=f"{name}: J_s")
        assert_allclose(ev.evaluate(q, v).gamma_s, gs_ref, rtol=1e-10, atol=1e-10, err_msg=f"{name}: gamma_s")


def test_free_actuators_leave_joint_rows_only(state):
    name, model, q, v, _, _ = state
    _, _, C, J, gamma, *_ = Evaluator(model).evaluate(q, v)
    assert C.shape == (model.rows["n_joint"],) and J.shape == (model.rows["n_joint"], model.n_v), name


def test_integrate_matches_oracle(states):
    name, model, out = states
    ev = Evaluator(model)
    for q, v, *_ in out:
        dv = 0.3 * v
        ref = oracles.integrate(model, q, dv)
        assert_allclose(ev.integrate(q, dv), ref, atol=1e-14, err_msg=f"{name}: q ⊕ dv")
        assert_allclose(integrate(model, q, dv), ref, atol=1e-14, err_msg=f"{name}: q ⊕ dv")


def test_pose_terms_match_oracle(states):
    """End-effector coordinates, Jacobian and ``x_q`` (with Tait–Bryan angles for NaVARo and
    the 6-PSS) of the evaluator (local Jacobians) and of :func:`pose_rates` (dense) against
    the numpy statement."""
    from sim.model.kinematics import pose_rates
    name, model, out = states
    ev = Evaluator(model)
    e = model.ee_marker
    for q, v, *_ in out:
        ms = oracles.markers(model, q, v)
        ref = oracles.pose_terms(model.pose_kinds, ms.p[e], ms.A[e], ms.Jp[e], ms.Jw[e], v, ms.pq[e], ms.wq[e])
        E = ev.evaluate(q, v, pose=True)
        x, J, _, xq = pose_rates(model, q, v)
        for got in ((E.x, E.J_x, E.x_q), (x, J, xq)):
            assert_allclose(got[0], ref[0], atol=1e-13, err_msg=f"{name}: pose")
            assert_allclose(got[1], ref[1], atol=1e-12 * max(1.0, np.abs(ref[1]).max()), err_msg=f"{name}: J")
            assert_allclose(got[2], ref[2], rtol=1e-10, atol=1e-10 * max(1.0, np.abs(ref[2]).max()),
                            err_msg=f"{name}: x_q")


def test_potential_matches_oracle(states):
    name, model, out = states
    ev = Evaluator(model)
    for q, *_ in out:
        ref = oracles.potential(model, q)
        assert_allclose(ev.potential(q), ref, rtol=1e-12, atol=1e-14, err_msg=name)
        assert_allclose(potential(model, q), ref, rtol=1e-12, atol=1e-14, err_msg=name)


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
    assert_allclose(E.gamma_v, g_v, atol=1e-13 * (np.abs(E.gamma).max(initial=0) + np.abs(g_v).max(initial=0)),
                    err_msg=f"{name}: dgamma/dv")
    assert np.abs(E.Q_v).max() > 1e-3, f"{name}: trivial dQ/dv"
    assert E.gamma_v.size == 0 or np.abs(E.gamma_v).max() > 1e-3, f"{name}: trivial dgamma/dv"


def against_oracle(model, drive, h, steps, damping=None, method="newmark", rho_inf=1.0):
    """States after ``steps`` steps of ``h`` from rest at home: :func:`sim.solvers.simulate.simulate`
    (the compiled step loop) and the plain generalized-α of ``tests/oracles.py`` (Newton with a
    fresh finite-difference Jacobian at every iteration, on the public evaluator)."""
    from sim.solvers.integrators import METHODS
    from sim.solvers.integrators import Options
    from sim.solvers.simulate import simulate
    gains = (10.0, 10.0)     # Baumgarte gains given to both: these starts are not consistent
    res = simulate(model, model.q_home, np.zeros(model.n_v), steps * h, h, drive,
                   Options(method=method, rho_inf=rho_inf, newton_tol=1e-13, baumgarte=gains), damping=damping)
    assert res.status == "complete", res.message
    am, af = METHODS[method].coefficients(rho_inf)
    q, v = oracles.generalized_alpha(Evaluator(model), drive, model.q_home, np.zeros(model.n_v), h, steps, am, af,
                                     baumgarte=gains, damping=damping)
    return res, q, v


@pytest.mark.parametrize("kind", ["prescribed", "torque", "free"])
def test_step_loop_matches_oracle(kind):
    """The compiled step loop against the plain generalized-α oracle, with each drive kind
    (and damping with the torque drive): same states to the Newton tolerance."""
    from sim.solvers.simulate import Drive
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
    from sim.solvers.simulate import Drive
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
    from sim.solvers.simulate import Drive
    model = load_model(ROOT / CASES["slider_crank"][0], CASES["slider_crank"][1])
    s0 = actuator_values(model, model.q_home)[0]
    law = (lambda t: (s0 + 150.0 * t, np.full(s0.size, 150.0), np.zeros(s0.size)))
    res, q, _ = against_oracle(model, Drive("prescribed", reference=law), 5e-5, 40)
    assert np.abs(res.q[-1][model.q_elastic]).max() > 1e-7          # the rod has deformed
    assert_allclose(res.q, q, rtol=0, atol=1e-10)
