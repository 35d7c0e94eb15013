"""Identification (sim.solvers.fitting), MAC and pairing (sim.solvers.tracking), scenario tables."""
from pathlib import Path

import numpy as np
import pytest

from sim.errors import SimError
from sim.solvers.fitting import Configuration, Problem, identify
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
    r = identify(CHAIN, names, [5e3, 6e4], confs, bounds=([1e2, 1e2], [1e7, 1e7]))
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
    from sim.solvers.harmonic import _rows
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
    assert t["configuration_2"]["modes"] is None and t["configuration_2"]["pairing"] == "tracked"
    assert t["configuration_1"]["pairing"] == "order"
    bad = tmp_path / "bad.toml"
    bad.write_text(f'[model]\nfile = "{ROOT / "models" / "delta_surgiscope.py"}"\n'
                   '[identification]\nparameters = ["k_actuator"]\n'
                   '[identification.configuration_1]\nmeasured_frequncies = [1.0]\n')
    with pytest.raises(SimError, match="measured_frequncies"):
        load_scenario(bad)
    bad.write_text(f'[model]\nfile = "{ROOT / "models" / "delta_surgiscope.py"}"\n'
                   '[damping]\neta = -1.0\n[frf]\ninputs = ["force:E:z"]\noutputs = ["displacement:E:z"]\n')
    with pytest.raises(SimError, match=r"\[damping\] eta must be a non-negative number, got -1.0"):
        load_scenario(bad)


BEAM = Path(__file__).resolve().parent.parent / "models" / "beam.py"


def _beam_frequencies(height, E=2.0e11, width=0.013):
    """The four lowest frequencies of the 1 m steel cantilever (8 elements) of ``models/beam.py``:
    bending in z (set by ``height``) and in y (by ``width``), twice each."""
    import sim
    return sim.modes(BEAM, count=4, parameters=dict(height=height, width=width, E=E)).frequencies


def test_tracked_pairing_follows_families_through_a_crossing():
    """A cantilever whose section turns from 13 x 10 mm to 13 x 14 mm: its z- and y-bending
    modes change order between the two configurations (a square section on the way).  Measured
    in configuration 1's family order at configuration 2, the frequencies are paired by the
    tracking with the right modes ([2, 1, 4, 3], not the sorted [1, 2, 3, 4], the swap reported,
    MAC 1 along the path) and E and the width are recovered from a start 25 % off, to 1e-6; the
    same data paired by sorted order cannot be fitted (errors of several per cent)."""
    import sim
    f1, f2 = _beam_frequencies(0.010), _beam_frequencies(0.014)
    assert f2[1] > f2[0] and f1[0] < f1[1]
    measured_2 = f2[[1, 0, 3, 2]].tolist()      # z-bending, y-bending, as at configuration 1
    common = dict(parameters=["E", "width"], initial=[1.5e11, 0.010], model_parameters=dict(elements=8),
                  configuration_1=dict(parameters=dict(height=0.010), measured_frequencies=f1.tolist()))
    tracked = sim.identify(BEAM, **common, configuration_2=dict(parameters=dict(height=0.014),
                                                                 measured_frequencies=measured_2, use="fit"))
    np.testing.assert_allclose(tracked.parameters, [2.0e11, 0.013], rtol=1e-6)
    c2 = tracked["configuration_2"]
    assert c2["modes"].tolist() == [2, 1, 4, 3] and c2["modes_by_order"].tolist() == [1, 2, 3, 4]
    assert np.all(c2["mac"] > 0.99)
    assert "measured modes pair with computed modes [2, 1, 4, 3], not [1, 2, 3, 4]" in tracked.summary["note"]
    by_order = sim.identify(BEAM, **common, configuration_2=dict(parameters=dict(height=0.014), pairing="order",
                                                                  measured_frequencies=measured_2, use="fit"))
    assert by_order.summary["configuration_2_max_error_pct"] > 3.0


def test_any_number_of_configurations_in_number_order():
    """The crossing of ``test_tracked_pairing_follows_families_through_a_crossing`` measured at
    three sections, given out of order (configuration_10 before configuration_2): E and the
    width are fitted on configurations 1 and 2 and recovered to 1e-6; configuration 10, beyond
    the crossing and predicted, is tracked from configuration 1 and paired in family order
    ([2, 1, 4, 3]) with zero error; the summary lists the configurations by number."""
    import sim
    f = {h: _beam_frequencies(h) for h in (0.010, 0.012, 0.016)}
    swap = [1, 0, 3, 2]
    r = sim.identify(BEAM, parameters=["E", "width"], initial=[1.5e11, 0.012], model_parameters=dict(elements=8),
                     configuration_10=dict(parameters=dict(height=0.016), measured_frequencies=f[0.016][swap].tolist()),
                     configuration_1=dict(parameters=dict(height=0.010), measured_frequencies=f[0.010].tolist()),
                     configuration_2=dict(parameters=dict(height=0.012), measured_frequencies=f[0.012].tolist(),
                                          use="fit"))
    np.testing.assert_allclose(r.parameters, [2.0e11, 0.013], rtol=1e-6)
    assert [k for k in r.summary if k.endswith("_max_error_pct")] == [
        "configuration_1_max_error_pct", "configuration_2_max_error_pct", "configuration_10_max_error_pct"]
    c10 = r["configuration_10"]
    assert c10["modes"].tolist() == [2, 1, 4, 3]
    np.testing.assert_allclose(c10["errors"], 0.0, atol=1e-6)


def test_a_merged_repeated_root_is_paired_with_the_member_the_test_saw():
    """A square 13 x 13 mm cantilever has repeated bending roots; at 14 mm height they split
    (z-bending up, y-bending unchanged).  A test at 14 mm that saw the z-bending modes (the
    upper members) is paired with them, not with the lower members the families' split also
    continues: modes [2, 4] of families [1, 2] and [3, 4], zero error, and the run says so."""
    import sim
    f1, f2 = _beam_frequencies(0.013), _beam_frequencies(0.014)
    assert abs(f1[1] / f1[0] - 1) < 1e-6 and f2[1] / f2[0] > 1.05
    r = sim.identify(BEAM, parameters=["E"], initial=[1.5e11], model_parameters=dict(elements=8, width=0.013),
                     configuration_1=dict(parameters=dict(height=0.013), measured_frequencies=f1[[0, 2]].tolist(),
                                          merge_repeated=True),
                     configuration_2=dict(parameters=dict(height=0.014), measured_frequencies=f2[[1, 3]].tolist()))
    np.testing.assert_allclose(r.parameters, [2.0e11], rtol=1e-6)
    c2 = r["configuration_2"]
    assert c2["modes"].tolist() == [2, 4] and c2["families"].tolist() == [[1, 2], [3, 4]]
    np.testing.assert_allclose(c2["errors"], 0.0, atol=1e-6)
    assert "measured modes 1, 2 continue repeated roots of configuration_1" in r.summary["note"]
    # A test that saw the lower members is paired with them.
    r = sim.identify(BEAM, parameters=["E"], initial=[1.5e11], model_parameters=dict(elements=8, width=0.013),
                     configuration_1=dict(parameters=dict(height=0.013), measured_frequencies=f1[[0, 2]].tolist(),
                                          merge_repeated=True),
                     configuration_2=dict(parameters=dict(height=0.014), measured_frequencies=f2[[0, 2]].tolist()))
    assert r["configuration_2"]["modes"].tolist() == [1, 3]


def test_tracked_pairing_needs_numbers_to_interpolate():
    problem_configurations = [Configuration("configuration_1", np.array([8.0]), {"support": "clamped-free"}),
                              Configuration("configuration_2", np.array([8.0]), {"support": "pinned-pinned"},
                                            pairing="tracked")]
    with pytest.raises(SimError, match="parameter `support` .* is not a number in both"):
        Problem(BEAM, {}, ["E"], problem_configurations)


def test_tracked_pairing_through_a_scenario_is_stored_and_drawn(tmp_path):
    """The crossing of ``test_tracked_pairing_follows_families_through_a_crossing`` through
    ``sim run`` and ``sim plot``: the pairing, the pairing sorted order would give and the
    tracks' MAC are in the file, and the figure labels each bar with its computed mode."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sim.app.cli import main
    from sim.app.plots import plot_identification
    from sim.app.results import read_result

    f1, f2 = _beam_frequencies(0.010), _beam_frequencies(0.014)
    scenario = tmp_path / "crossing.toml"
    scenario.write_text(f'[model]\nfile = "{BEAM}"\nparameters = {{ elements = 8 }}\n'
                        '[identification]\nparameters = ["E", "width"]\ninitial = [1.5e11, 0.010]\n'
                        '[identification.configuration_1]\nparameters = { height = 0.010 }\n'
                        f"measured_frequencies = {f1.tolist()}\n"
                        '[identification.configuration_2]\nparameters = { height = 0.014 }\n'
                        f"measured_frequencies = {f2[[1, 0, 3, 2]].tolist()}\nuse = \"fit\"\n")
    assert main(["run", str(scenario), "--out", str(tmp_path / "r.h5")]) == 0
    group = read_result(tmp_path / "r.h5")["identification"]
    c2 = group["configuration_2"]
    assert c2["modes"]["data"].tolist() == [2, 1, 4, 3]
    assert c2["modes_by_order"]["data"].tolist() == [1, 2, 3, 4]
    assert np.all(c2["mac"]["data"] > 0.99)
    np.testing.assert_allclose(c2["errors"]["data"], 0.0, atol=1e-6)
    fig, ax = plt.subplots()
    plot_identification(ax, group)
    texts = [t.get_text() for t in ax.texts]
    assert any("mode 2" in t and "MAC 1.00" in t for t in texts)
    plt.close(fig)
    assert main(["plot", str(tmp_path / "r.h5"), "--out", str(tmp_path / "r.png")]) == 0


def test_prior_and_starts_on_an_ambiguous_fit():
    """Configuration 1 of the crossing alone does not tell which bending family is the lower:
    E and the width have two exact solutions (width 13 mm, and a narrower, stiffer beam whose
    y-bending comes first; frequency errors 7e-5 there).  Six starts find both (reported); a
    prior on the width (weight 1) leads the start that went to the other to the right one."""
    import sim
    f1 = _beam_frequencies(0.010)
    common = dict(parameters=["E", "width"], initial=[1.5e11, 0.010], lower=[5e10, 0.004], upper=[5e11, 0.03],
                  model_parameters=dict(elements=8),
                  configuration_1=dict(parameters=dict(height=0.010), measured_frequencies=f1.tolist()))
    alone = sim.identify(BEAM, **common)
    assert abs(alone.parameters[1] / 0.013 - 1) > 0.2          # the other solution
    multi = sim.identify(BEAM, **common, starts=6)
    costs, found = multi["starts_cost"], multi["starts_parameters"]
    assert found.shape == (6, 2)
    exact = found[costs < 1e-8]       # frequency errors below 1e-4 at both minima
    assert np.any(np.abs(exact[:, 1] / 0.013 - 1) < 1e-4) and np.any(np.abs(exact[:, 1] / 0.013 - 1) > 0.2)
    assert "6 starts: best cost" in multi.summary["note"]
    # A prior on the width alone, at a static measurement of 12 mm: the right family, biased
    # toward the prior as Tikhonov regularisation is; at the true width, no bias.
    biased = sim.identify(BEAM, **common, prior=[2.1e11, 0.012], prior_weight=[0.0, 1.0])
    assert abs(biased.parameters[1] / 0.013 - 1) < 0.1
    exact = sim.identify(BEAM, **common, prior=[2.1e11, 0.013], prior_weight=[0.0, 1.0])
    np.testing.assert_allclose(exact.parameters, [2.0e11, 0.013], rtol=1e-5)


def test_platform_height_adds_inertia_about_the_horizontal_axes_only():
    """The Surgiscope platform as a cylinder: ``platform_height`` h adds m h^2 / 12 to the
    inertia about x and y and nothing about z (a flat platform, h = 0, is the disk)."""
    import sim
    inertia = {}
    for h in (0.0, 0.3):
        model = sim.load_model(ROOT / "models/delta_surgiscope.py", platform_height=h)
        body = next(b for b in model.bodies if b.name == "platform")
        E = body.second_moment[:, :, 0, 0]            # int rho r r^T about P, the mass centre
        inertia[h] = np.trace(E) * np.eye(3) - E
    m, r = 6.64, 0.15
    np.testing.assert_allclose(inertia[0.0], m * r**2 * np.diag([0.25, 0.25, 0.5]), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(inertia[0.3] - inertia[0.0], m * 0.3**2 / 12 * np.diag([1.0, 1.0, 0.0]),
                               rtol=1e-12, atol=1e-15)


def test_surgiscope_leg_directions_and_wrist_height():
    """``leg_angle`` turns the legs about z: the symmetric configuration 1 keeps its
    frequencies (to round-off; 30 deg turns the leg set by a quarter of its period), and
    configuration 2, within 0.1 deg of a vertical mirror plane of the leg set turned by -gamma,
    has nearly the same ones at 30 and 90 deg and other ones at 60 deg.  ``wrist_height`` h
    lifts the legs' platform joints above E: the robot with E at z - h and h is the robot with
    E at z and none, its marker E h lower."""
    import sim
    path = ROOT / "models/delta_surgiscope.py"

    def f(count=8, **parameters):
        return sim.modes(path, count=count, parameters=parameters).frequencies
    c2 = dict(x=0.19, y=-0.33, z=-0.9)
    np.testing.assert_allclose(f(leg_angle=np.radians(30)), f(), rtol=1e-8)
    np.testing.assert_allclose(f(**c2, leg_angle=np.radians(30)), f(**c2), rtol=2e-3)
    assert np.abs(f(**c2, leg_angle=np.radians(60)) / f(**c2) - 1).max() > 0.02
    np.testing.assert_allclose(f(z=-1.15, wrist_height=0.05), f(z=-1.1), rtol=1e-8)
    for z, h in ((-1.15, 0.05), (-1.1, 0.0)):
        model = sim.load_model(path, z=z, wrist_height=h)
        marker = {m.name: m for m in model.markers}["E"]
        assert model.body_names[marker.body] == "platform"
        np.testing.assert_allclose(marker.p_BM_B, [0.0, 0.0, -h], atol=1e-15)


def test_what_the_test_sees_and_near_repeated_modes():
    """A 13 x 10 mm cantilever hit along z at its tip, measured along z there: the z-bending
    modes (1, 3) are fully excited and seen, the y-bending ones (2, 4) not at all (exactly
    zero by symmetry): stored per computed mode and warned about for the paired y mode.  A
    near-square section (10.05 x 10 mm) pairs by sorted order two modes within 1 %: warned."""
    import sim
    f = _beam_frequencies(0.010)
    common = dict(parameters=["E"], initial=[1.9e11], model_parameters=dict(elements=8, width=0.013))
    hit = sim.identify(BEAM, **common, configuration_1=dict(
        parameters=dict(height=0.010), measured_frequencies=f[:2].tolist(),
        excitation=["force:node8:z"], sensors=["displacement:node8:z"]))
    c1 = hit["configuration_1"]
    assert c1["excitability"].size >= 4 and c1["visibility"].size >= 4
    np.testing.assert_allclose(c1["excitability"][[0, 2]] > 0.05, True)
    np.testing.assert_allclose(c1["excitability"][[1, 3]], 0.0, atol=1e-9)
    np.testing.assert_allclose(c1["visibility"][[1, 3]], 0.0, atol=1e-9)
    assert c1["excitability"].max() == pytest.approx(1.0) and c1["visibility"].max() == pytest.approx(1.0)
    note = hit.summary["note"]
    assert "the test (force:node8:z) hardly excites computed mode 2" in note
    assert "the test (displacement:node8:z) hardly sees computed mode 2" in note
    assert "computed mode 1 " not in note.split("hardly")[0] + "".join(s for s in note.split(";") if "mode 1 (" in s)
    near = _beam_frequencies(0.010, width=0.01005)
    square = sim.identify(BEAM, parameters=["E"], initial=[1.9e11], model_parameters=dict(elements=8, width=0.01005),
                          configuration_1=dict(parameters=dict(height=0.010), measured_frequencies=near[:2].tolist()))
    assert "computed mode 1 (" in square.summary["note"] and "sorted order cannot tell them apart" in square.summary["note"]


def test_measured_shapes_through_the_scenario_pair_by_mac(tmp_path):
    """Measured shapes (tip displacements along y and z) in the scenario pair the measured
    modes by MAC: given in the order y-bending, z-bending, they pair with computed modes 2, 1
    (MAC 1); malformed shapes end in one line."""
    from sim.app.cli import main
    from sim.app.results import read_result
    f = _beam_frequencies(0.010)
    text = (f'[model]\nfile = "{BEAM}"\nparameters = {{ elements = 8, width = 0.013 }}\n'
            '[identification]\nparameters = ["E"]\ninitial = [1.9e11]\n'
            '[identification.configuration_1]\nparameters = { height = 0.010 }\n'
            f"measured_frequencies = {[float(f[1]), float(f[0])]}\n"
            'shape_outputs = ["displacement:node8:y", "displacement:node8:z"]\n')
    scenario = tmp_path / "shapes.toml"
    scenario.write_text(text + "shapes = [[1.0, 0.0], [0.0, -2.0]]\n")
    assert main(["run", str(scenario), "--out", str(tmp_path / "r.h5")]) == 0
    c1 = read_result(tmp_path / "r.h5")["identification"]["configuration_1"]
    assert c1["modes"]["data"].tolist() == [2, 1]
    np.testing.assert_allclose(c1["mac"]["data"], 1.0, atol=1e-9)
    np.testing.assert_allclose(c1["errors"]["data"], 0.0, atol=1e-6)
    scenario.write_text(text + "shapes = [[1.0, 0.0, 0.0], [0.0, -2.0, 0.0]]\n")
    assert main(["run", str(scenario), "--out", str(tmp_path / "s.h5")]) == 2
