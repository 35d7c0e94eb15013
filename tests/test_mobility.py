"""Mobility with the actuators locked (issue 38 item 2): the free motions, counted, named and
refused where an analysis needs the end effector's pose determined.

References: the counts of Grübler's formula for the robots whose joints are independent
(6 per body minus the rows of the joints and locked drives), and the defining properties of a
free motion (it meets every joint row, strains nothing, and moves the end effector or not).
"""
import json
from pathlib import Path

import numpy as np
import pytest

from conftest import load
from sim.app.cli import main
from sim.model.constraints import constraints
from sim.model.kinematics import pose_jacobian
from sim.model.loader import load_model
from sim.model.mobility import free_motions
from sim.model.springs import deformation_rows
from test_bad_input import check_outcome

DELTA = Path(__file__).with_name("delta_rods_model.py")


def delta(**params):
    return load_model(DELTA, params)


def _grubler(model):
    """6 per body minus the rows of the joints and the locked drives (independent rows)."""
    return 6 * len(model.bodies) - model.rows["n_total"]


@pytest.mark.parametrize("params, moving, internal", [
    ({}, 0, 6),                       # parallelograms: the six rods' spins
    ({"forearm": "rod"}, 2, 4),       # single rods: the platform turns (x, y and the spin about z)
])
def test_delta_free_motions_are_grubler_counts_and_free(params, moving, internal):
    model = delta(**params)
    mob = model.mobility
    assert (mob.moving.shape[1], mob.internal.shape[1]) == (moving, internal)
    assert mob.count == _grubler(model)
    basis = np.hstack([mob.moving, mob.internal])
    q = model.q_home
    J = constraints(model, q, targets=np.zeros(len(model.actuators)))[1]
    np.testing.assert_allclose(J @ basis, 0.0, atol=1e-10)                       # meets every row
    np.testing.assert_allclose(deformation_rows(model, q) @ basis, 0.0, atol=1e-10)   # strains nothing
    J_x = pose_jacobian(model, q)[1]
    np.testing.assert_allclose(J_x @ mob.internal, 0.0, atol=1e-10)              # end effector in place
    if moving:
        assert np.linalg.svd(J_x @ mob.moving, compute_uv=False).min() > 1e-3
        assert mob.coordinates == ("x", "y")
        assert "platform" in mob.lines[0] and "move the end effector (x, y)" in mob.lines[0]


@pytest.mark.parametrize("name, params", [("delta", {"forearm": "rod"}), ("delta", {}), ("pss6", {}),
                                          ("rrru3", {"elements_per_link": 16})])
def test_free_motions_from_the_reference_columns_are_those_of_the_whole_space(name, params, monkeypatch):
    """The free motions found among the bodies' reference columns (no decomposition with n_v
    columns) span the same space as the null space of the rows followed by that of the
    deformation rows on all coordinates (:func:`sim.model.mobility.free_basis`): the same
    projector within 1e-9."""
    import sim.model.mobility as mobility
    model = delta(**params) if name == "delta" else load(name, **params)
    widths = []
    plain = mobility.null_space
    monkeypatch.setattr(mobility, "null_space", lambda A, rcond: widths.append(A.shape[1]) or plain(A, rcond))
    mob = free_motions(model)
    assert max(widths) <= 6 * len(model.bodies) < model.n_v
    q = model.q_home
    N = plain(constraints(model, q, targets=np.zeros(len(model.actuators)))[1], mobility.NULL_RTOL)
    whole = np.linalg.qr(N @ mobility.free_basis(model, q, N))[0]
    basis = np.hstack([mob.moving, mob.internal])
    assert basis.shape[1] == whole.shape[1]
    np.testing.assert_allclose(basis @ basis.T, whole @ whole.T, atol=1e-9)


@pytest.mark.parametrize("name, count, line", [
    ("navaro", 0, None),
    ("rrru3", 0, None),
    ("pss6", 6, "6 free motions, each of one body alone, leave the end effector in place: strut_1"),
    ("flexible_arm", 1, "1 free motion moves the end effector (y): link"),
])
def test_shipped_models_mobility(name, count, line):
    mob = load(name).mobility
    assert mob.count == count
    if line:
        assert mob.lines[0].startswith(line), mob.lines


def test_free_motions_at_another_pose_agree_with_the_modes():
    """At a pose off the symmetric home, the platform's spin moves the end effector too."""
    from sim.model.assembly import solve_pose
    from sim.solvers.modal import modes
    model = delta(forearm="rod", declared=3)
    q = solve_pose(model, [0.03, -0.02, -0.32], check=False)
    mob = free_motions(model, q)
    assert mob.count == modes(model, q, count=1).rigid_count == 6
    assert mob.moving.shape[1] == 3


def _scenario(tmp_path, table, params='{ forearm = "rod" }'):
    text = f"""\
[model]
file = "{DELTA}"
parameters = {params}
[trajectory]
kind = "polynomial"
start = [0.0, 0.0, -0.3]
end = [0.05, 0.0, -0.3]
duration = 0.2
{table}
"""
    path = tmp_path / "s.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("table", [
    "[ked]\nintervals = 16\nmodes = 2",
    "[frequencies]\ncount = 2\nsamples = 4",
    "[inverse_dynamics]\nsamples = 4",
    "[transient]\nstep = 1e-3\nduration = 0.01",
], ids=["ked", "frequencies", "inverse_dynamics", "transient"])
def test_an_end_effector_left_free_is_refused(tmp_path, capsys, table):
    path = _scenario(tmp_path, table)
    out = tmp_path / "out.h5"
    code = main(["run", str(path), "--out", str(out)])
    check_outcome(code, capsys.readouterr().err, out, "s.toml:", "the actuators of `delta_rods` do not fix its end "
                  "effector: 2 free motions move the end effector (x, y): platform", "declare_free_motions(2, why)")
    assert not out.exists()


def test_declared_free_motions_run_and_a_wrong_count_is_refused(tmp_path, capsys):
    out = tmp_path / "out.h5"
    wrong = _scenario(tmp_path, "[ked]\nintervals = 16\nmodes = 2", '{ forearm = "rod", declared = 1 }')
    check_outcome(main(["run", str(wrong), "--out", str(out)]), capsys.readouterr().err, out,
                  "(the model declares 1)")
    right = _scenario(tmp_path, "[ked]\nintervals = 16\nmodes = 2", '{ forearm = "rod", declared = 2 }')
    assert main(["run", str(right), "--out", str(out)]) == 0
    assert out.exists()


def test_a_torque_drive_integrates_a_free_end_effector():
    """The transient under a torque drive has no rigid reference to fix: its check passes."""
    from sim.analyses import CHECK
    from sim.app.api import _scenario as make
    model = delta(forearm="rod")
    for drive, refused in (("prescribed", True), ("torque", False)):
        scenario, _ = make("test", "transient", model, None, dict(step=1e-3, duration=0.01, drive=drive),
                           dict(kind="polynomial", start=[0, 0, -0.3], end=[0.05, 0, -0.3], duration=0.2))
        if refused:
            with pytest.raises(Exception, match="do not fix its end effector"):
                CHECK["transient"](model, scenario)
        else:
            CHECK["transient"](model, scenario)


def test_sim_model_and_modes_name_the_free_motions(capsys):
    assert main(["model", str(DELTA), "--param", "forearm=rod"]) == 0
    out, err = capsys.readouterr()
    assert "free motions with the actuators locked, at home: 6" in out
    assert "2 free motions move the end effector (x, y): platform, rod0c, rod1c, rod2c" in out
    assert "3 free motions, each of one body alone, leave the end effector in place: rod0c, rod1c, rod2c" in out
    assert "the actuators do not fix the end effector" in out
    assert main(["modes", str(DELTA), "--param", "forearm=rod", "--count", "2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["rigid_modes"] == 6 and data["free_motions"][0].startswith("2 free motions move the end effector")
    assert main(["modes", str(DELTA), "--param", "forearm=rod", "--count", "2"]) == 0
    out, err = capsys.readouterr()
    assert err.strip().splitlines() == ["warning: the actuators do not fix the end effector: the analyses that follow "
                                        "its motion (KED, frequencies, inverse dynamics, the transient under prescribed "
                                        "drives) refuse this robot; ModelBuilder.declare_free_motions declares such "
                                        "motions intended"]
    assert main(["model", str(DELTA)]) == 0
    out = capsys.readouterr().out
    assert "6 free motions, each of one body alone, leave the end effector in place" in out
    assert "do not fix" not in out


def test_a_disagreement_caused_by_declared_free_motions_says_so(tmp_path, capsys):
    """Declared free motions let the transient's platform drift (2 cm along x in 0.2 s) where
    the KED locks them: the disagreement warning names the free motions, not the numerics."""
    path = _scenario(tmp_path, "[ked]\nintervals = 32\nmodes = 2\n[transient]\nstep = 2e-4",
                     '{ forearm = "rod", declared = 2 }')
    out = tmp_path / "out.h5"
    assert main(["run", str(path), "--out", str(out)]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if "disagree" in line]
    assert len(lines) == 1 and "2 free motions that move its end effector (declared by the model)" in lines[0]
    assert "raise ked.modes" not in lines[0] and "lower transient.step" not in lines[0]
