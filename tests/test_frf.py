"""FRFs (sim.solvers.harmonic): closed forms, method agreement, reciprocity, static limit, peaks."""
from pathlib import Path

import numpy as np
import pytest

from sim.solvers.damping import Damping
from sim.errors import SimError
from sim.solvers.harmonic import frf, static_compliance
from sim.model.loader import load_model

HERE = Path(__file__).parent
CHAIN = HERE / "spring_chain_model.py"
DELTA = HERE.parent / "models" / "delta_surgiscope.py"
PAIR = ["force:P1:z", "force:P2:z"]
RESP = ["displacement:P1:z", "displacement:P2:z"]


@pytest.fixture(scope="module")
def chain():
    return load_model(CHAIN)


@pytest.fixture(scope="module")
def delta():
    return load_model(DELTA)


def test_two_mass_receptance_closed_form(chain):
    """Undamped 2-dof chain: H = (K - w^2 M)^-1 with K = [[k1+k2, -k2], [-k2, k2]], M = diag(m1, m2)."""
    f = np.array([1.0, 5.0, 20.0, 50.0])
    r = frf(chain, chain.q_home, PAIR, RESP, f)
    k1, k2, m1, m2 = 1e4, 2e4, 1.0, 2.0
    for i, w in enumerate(2 * np.pi * f):
        Z = np.array([[k1 + k2 - w**2 * m1, -k2], [-k2, k2 - w**2 * m2]])
        np.testing.assert_allclose(r.H[i].real, np.linalg.inv(Z), rtol=1e-7)
        assert np.abs(r.H[i].imag).max() < 1e-12
    np.testing.assert_allclose(r.natural_hz[:2], [8.238466, 30.746374], rtol=1e-6)


@pytest.mark.parametrize("damping", [Damping(eta=0.05), Damping(alpha=3.0, beta=2e-4), Damping(zeta=0.02)])
def test_methods_agree(chain, damping):
    """Modal superposition (all modes), complex-mode superposition and direct solves agree."""
    f = np.linspace(0.5, 60.0, 80)
    H = {m: frf(chain, chain.q_home, PAIR, RESP, f, damping, method=m).H for m in ("modal", "state", "direct")}
    scale = np.abs(H["direct"]).max()
    for m in ("modal", "state"):
        assert np.abs(H[m] - H["direct"]).max() < 1e-7 * scale


def test_nonproportional_damper_uses_complex_modes(chain):
    model = load_model(CHAIN, {"c1": 40.0})
    f = np.linspace(0.5, 60.0, 50)
    auto = frf(model, model.q_home, PAIR, RESP, f, Damping(eta=0.02))
    direct = frf(model, model.q_home, PAIR, RESP, f, Damping(eta=0.02), method="direct")
    assert auto.method == "state"
    assert np.abs(auto.H - direct.H).max() < 1e-7 * np.abs(direct.H).max()
    with pytest.raises(SimError, match="proportional"):
        frf(model, model.q_home, PAIR, RESP, f, method="modal")
    # Reciprocity holds for any symmetric M, C, K.
    np.testing.assert_allclose(auto.H, np.swapaxes(auto.H, 1, 2), rtol=1e-8, atol=1e-14)


def test_reciprocity_delta_collocated(delta):
    """Maxwell–Betti: H_ij = H_ji for collocated force/displacement pairs at different points."""
    ins = ["force:E:x", "force:E:z", "force:hinge_bottom_1a_j:y"]
    outs = ["displacement:E:x", "displacement:E:z", "displacement:hinge_bottom_1a_j:y"]
    f = np.linspace(1.0, 80.0, 200)
    r = frf(delta, delta.q_home, ins, outs, f, Damping(eta=0.096))
    np.testing.assert_allclose(r.H, np.swapaxes(r.H, 1, 2), rtol=1e-7, atol=1e-12 * np.abs(r.H).max())


def test_structural_static_limit(delta):
    """omega -> 0 with K (1 + i eta): H = static compliance / (1 + i eta)."""
    ins, outs = ["force:E:z", "force:E:x"], ["displacement:E:z", "pose:x"]
    S = static_compliance(delta, delta.q_home, ins, outs)
    r = frf(delta, delta.q_home, ins, outs, [1e-6], Damping(eta=0.096))
    np.testing.assert_allclose(r.H[0], S / (1 + 0.096j), rtol=1e-8, atol=1e-10 * np.abs(S).max())


def test_peak_at_damped_frequency(chain, delta):
    """Light damping: the |H| peak lies within one frequency bin of the damped natural frequency."""
    f = np.linspace(1.0, 40.0, 3901)                      # 0.01 Hz bins
    r = frf(chain, chain.q_home, ["force:P2:z"], ["displacement:P2:z"], f, Damping(zeta=0.005))
    mag = np.abs(r.H[:, 0, 0])
    for fd in r.damped_hz[:2]:
        window = np.abs(f - fd) < 1.0
        assert abs(f[window][np.argmax(mag[window])] - fd) <= f[1] - f[0]
    # Delta, structural damping (paper 004's eta = 0.096): vertical force, vertical response.
    f = np.linspace(2.0, 20.0, 1801)
    r = frf(delta, delta.q_home, ["force:E:z"], ["displacement:E:z"], f, Damping(eta=0.02))
    vertical = r.damped_hz[2]                              # the singlet between the horizontal pair and 44 Hz
    assert abs(f[np.argmax(np.abs(r.H[:, 0, 0]))] - vertical) <= f[1] - f[0]


def test_units_and_errors(chain):
    r = frf(chain, chain.q_home, ["force:P1:z", "torque:P1:x"], ["displacement:P2:z", "rotation:P2:x", "pose:z"],
            [10.0])
    assert r.units[0] == ("m/N", "m/N m")
    assert r.H.shape == (1, 3, 2)
    np.testing.assert_allclose(r.H[0, 2], r.H[0, 0], rtol=1e-12)   # pose z of P2 = displacement of P2
    for bad, match in (("force:nowhere:z", "unknown marker"), ("force:P1:w", "axis"), ("push:P1:z", "kind"),
                       ("actuator:q9", "unknown actuator")):
        with pytest.raises(SimError, match=match):
            frf(chain, chain.q_home, [bad], ["displacement:P1:z"], [1.0])
