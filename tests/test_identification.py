"""Identification (sim.solvers.identification), MAC and pairing (sim.solvers.tracking), scenario tables."""
from pathlib import Path

import numpy as np
import pytest

from sim.solvers.identification import Configuration, Problem, identify
from sim.solvers.tracking import mac, pair_modes

HERE = Path(__file__).parent
CHAIN = HERE / "spring_chain_model.py"
ROOT = HERE.parent
TRUE = {"k1": 1.3e4, "k2": 2.6e4}
NOISE = 0.005


def synthetic(names, values, seed=3):
    """Four configurations (m2 = 0.25 ... 16 kg) measured at the true values with 0.5 % noise.

    With 8 frequencies the standard deviation of the fitted stiffnesses is about 0.53 %, so the
    2 % bound is about 3.7 sigma.
    """
    rng = np.random.default_rng(seed)
    confs = [Configuration(f"configuration_{i + 1}", np.zeros(2), {"m2": m2})
             for i, m2 in enumerate((0.25, 1.0, 4.0, 16.0))]
    problem = Problem(CHAIN, {}, names, confs)
    for c in confs:
        f, _, _ = problem.evaluate(c, values)
        c.measured = f * (1 + NOISE * rng.standard_normal(f.size))
    return confs


def test_recovers_stiffnesses_within_two_percent():
    names = ["k1", "k2"]
    truth = np.array([TRUE[n] for n in names])
    confs = synthetic(names, truth)
    r = identify(CHAIN, names, [5e3, 6e4], confs, lower=[1e2, 1e2], upper=[1e7, 1e7])
    np.testing.assert_allclose(r.values, truth, rtol=0.02)
    assert r.identifiable.all() and not r.messages
    assert r.rms_error < 2 * NOISE
    # The standard deviations are of the order of the noise over sqrt(m / n).
    assert np.all(r.std < 0.03) and np.all(r.std > 1e-4)
    assert r.sensitivity.shape == (8, 2)


def test_flags_parameter_without_effect():
    """k_twist only enters torsion modes, outside the fitted (axial) band."""
    names = ["k1", "k2", "k_twist"]
    truth = np.array([TRUE["k1"], TRUE["k2"], 1e4])
    confs = synthetic(names, truth)
    r = identify(CHAIN, names, [5e3, 6e4, 3e4], confs)
    assert r.identifiable.tolist() == [True, True, False]
    assert any("`k_twist` is not identifiable" in m for m in r.messages)
    np.testing.assert_allclose(r.values[:2], truth[:2], rtol=0.02)


def test_flags_parameters_entering_as_a_product():
    names = ["scale_a", "scale_b", "k2"]
    truth = np.array([1.3, 1.0, TRUE["k2"]])
    confs = synthetic(names, truth)
    r = identify(CHAIN, names, [1.0, 2.0, 2e4], confs, base={"k1": 1e4})
    assert r.identifiable.tolist() == [False, False, True]
    assert any("`scale_a` and `scale_b` are not separately identifiable" in m for m in r.messages)
    # Their product, which is identifiable, is recovered.
    assert r.values[0] * r.values[1] == pytest.approx(1.3, rel=0.02)
    assert r.values[2] == pytest.approx(TRUE["k2"], rel=0.02)


def test_pairing_by_mac_with_measured_shapes():
    """Measured modes given in swapped order with their shapes are paired by MAC."""
    outputs = ["displacement:P1:z", "displacement:P2:z"]
    from sim.solvers.damping import reduce
    from sim.solvers.frf import _rows
    from sim.model.loader import load_model
    import scipy.linalg
    model = load_model(CHAIN, TRUE)
    red = reduce(model, model.q_home)
    lam, X = scipy.linalg.eigh(red.K, red.M, subset_by_index=[0, 1])
    rows, _ = _rows(model, model.q_home, outputs, "output")
    shapes = rows @ red.N @ X
    f = np.sqrt(lam) / (2 * np.pi)
    c = Configuration("configuration_1", f[::-1].copy(), shapes=shapes[:, ::-1], shape_outputs=outputs)
    r = identify(CHAIN, ["k1", "k2"], [1e4, 3e4], [c])
    assert r.configurations[0].modes.tolist() == [2, 1]
    np.testing.assert_allclose(r.configurations[0].mac, 1.0, rtol=1e-6)
    np.testing.assert_allclose(r.values, [TRUE["k1"], TRUE["k2"]], rtol=1e-4)


def test_mac_of_mode_set_with_itself_is_identity():
    """Mass-weighted MAC of mass-normalised modes is the identity; pairing of a permuted set."""
    from sim.solvers.damping import reduce
    from sim.model.loader import load_model
    import scipy.linalg
    model = load_model(ROOT / "models" / "delta_surgiscope.py")
    red = reduce(model, model.q_home)
    _, X = scipy.linalg.eigh(red.K, red.M, subset_by_index=[0, 9])
    np.testing.assert_allclose(mac(X, X, red.M), np.eye(10), atol=1e-10)
    plain = mac(X, X)
    np.testing.assert_allclose(np.diag(plain), 1.0, rtol=1e-12)
    perm = np.array([3, 0, 2, 1, 9, 8, 7, 6, 5, 4])
    pairs = pair_modes(mac(X, X[:, perm], red.M))
    assert [j for _, j in pairs] == np.argsort(perm).tolist()
    # Complex shapes: a phase factor does not change the MAC.
    assert mac(X[:, :1] * np.exp(0.7j), X[:, :1])[0, 0] == pytest.approx(1.0, rel=1e-12)


def test_scenario_tables_are_strict(tmp_path):
    from sim.errors import SimError
    from sim.app.scenario import load_scenario
    s = load_scenario(ROOT / "scenarios" / "delta_identify.toml")
    t = s.data["identification"]
    assert t["configuration_1"]["use"] == "fit" and t["configuration_2"]["use"] == "predict"
    assert t["configuration_2"]["modes"] == [1, 3, 4, 5, 6]
    bad = tmp_path / "bad.toml"
    bad.write_text(f'[model]\nfile = "{ROOT / "models" / "delta_surgiscope.py"}"\n'
                   '[identification]\nparameters = ["k_actuator"]\n'
                   '[identification.configuration_1]\nmeasured_frequncies = [1.0]\n')
    with pytest.raises(SimError, match="measured_frequncies"):
        load_scenario(bad)
    bad.write_text(f'[model]\nfile = "{ROOT / "models" / "delta_surgiscope.py"}"\n'
                   '[frf]\ninputs = ["force:E:z"]\noutputs = ["displacement:E:z"]\neta = -1.0\n')
    with pytest.raises(SimError, match="eta"):
        load_scenario(bad)
