"""Design studies on the 6-PSS: analytic sensitivities vs finite differences, energy ratios."""
import sim  # noqa: F401
import numpy as np
import pytest

from sim.solvers.sensitivity import body_energies, energy_ratios, sensitivities
from sim.model.loader import load_model
from sim.solvers.modal import modes

from conftest import MODELS

BASE = {"strut_radius": 0.025, "screw_radius": 0.024977, "slider_joint": "universal"}


def build(p):
    return load_model(MODELS / "pss6.py", p)


@pytest.mark.parametrize("name", ["strut_radius", "screw_radius"])
def test_sensitivities_match_frequency_differences(name):
    count = 18
    f, S = sensitivities(build, BASE, [name], count=count)
    h = 1e-5 * BASE[name]
    q = build(BASE).q_home
    fp = modes(build({**BASE, name: BASE[name] + h}), q, count=count).frequencies_hz
    fm = modes(build({**BASE, name: BASE[name] - h}), q, count=count).frequencies_hz
    fd = (fp - fm) / (2 * h)
    # Relative 1e-5 of the largest sensitivity (FD truncation and round-off), repeated roots included.
    assert np.abs(S[:, 0] - fd).max() < 1e-5 * np.abs(fd).max()


def test_energy_ratios_sum_to_one_and_partition_energies():
    model = build(BASE)
    res = modes(model, model.q_home, count=18)
    names, kin, ela, _, _ = energy_ratios(model, model.q_home, res.shapes)
    assert names == ["platform", "sliders", "struts"]
    assert np.allclose(kin.sum(axis=1), 1.0) and np.allclose(ela.sum(axis=1), 1.0)
    k_abs, e_abs = body_energies(model, model.q_home, res.shapes)
    # Mass-normalised shapes: phi^T M phi = 1 and phi^T K phi = omega^2 (lumped drives included).
    assert np.allclose(k_abs.sum(axis=1), 1.0, rtol=1e-9)
    assert np.allclose(e_abs.sum(axis=1), res.omega**2, rtol=1e-8)


def test_sensitivities_do_not_depend_on_count_at_a_repeated_frequency():
    """The square slider-crank rod has pairs of equal frequencies; cutting a pair with `count`
    must not change the sensitivities of the modes kept."""
    from pathlib import Path

    from sim.solvers.sensitivity import sensitivities
    from sim.model.loader import load_model
    path = Path(__file__).resolve().parent.parent / "models/slider_crank.py"

    def build(p):
        return load_model(path, p)

    base = {"elements": 4, "width": 0.008}
    _, S3 = sensitivities(build, base, ["width"], count=3)
    _, S4 = sensitivities(build, base, ["width"], count=4)
    np.testing.assert_allclose(S3, S4[:3], rtol=1e-6, atol=1e-6 * np.abs(S4).max(), err_msg="df/dwidth")
