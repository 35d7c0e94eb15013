"""Unit slips (issue 38 item 3): a value typed in a data sheet's unit instead of SI is refused
with one line naming it, its range and the SI value of the unit it was likely typed in."""
from pathlib import Path

import numpy as np
import pytest

from sim.app.cli import main
from sim.model import plausible
from sim.model.beam import Section
from test_bad_input import check_outcome

ROOT = Path(__file__).resolve().parent.parent
RRRU3 = ROOT / "models" / "rrru3.py"


def _run(tmp_path, capsys, params, table="[modes]\ncount = 2"):
    path = tmp_path / "s.toml"
    path.write_text(f'[model]\nfile = "{RRRU3}"\nparameters = {{ {params} }}\n{table}\n')
    out = tmp_path / "out.h5"
    code = main(["run", str(path), "--out", str(out)])
    line = check_outcome(code, capsys.readouterr().err, out)
    assert not out.exists()
    return line


@pytest.mark.parametrize("params, fragments", [
    ("E = 210", ("rrru3.py", "bodies `CP_1`, `CP_2`, `CP_3`: section `E` = 210 Pa is not plausible",
                 "GPa typed as Pa? 210 GPa = 2.1e+11 Pa", "parameters given: E = 210")),
    ("E = 2.1e5", ("section `E` = 2.1e+05 Pa is not plausible", "MPa typed as Pa? 210000 MPa = 2.1e+11 Pa")),
    ("rho = 7.8", ("section `rho` = 7.8 kg/m^3 is not plausible", "g/cm^3 typed as kg/m^3? 7.8 g/cm^3 = 7800 kg/m^3",
                   "parameters given: rho = 7.8")),
    ("rod_radius = 15", ("section 26 m deep (sqrt(12 I/A)) on a body 0.8 m long: not a beam",
                         "(section sizes in mm typed as m?)", "parameters given: rod_radius = 15")),
], ids=["E-in-GPa", "E-in-MPa", "rho-in-g/cm3", "radius-in-mm"])
def test_material_and_section_slips_are_refused(tmp_path, capsys, params, fragments):
    line = _run(tmp_path, capsys, params)
    for fragment in fragments:
        assert fragment in line, line
    assert line.count("not plausible") <= 1, "one problem said once for the three rods"


def test_omega_in_rpm_is_refused_before_any_file(tmp_path, capsys):
    """120 rpm typed as rad/s on a 5 cm circle: r omega^2 = 720 m/s^2, 73 g."""
    line = _run(tmp_path, capsys, "", '[trajectory]\nkind = "circle"\ncenter = [0.0, 0.0, -0.7]\nradius = 0.05\n'
                'omega = 120.0\nduration = 1.0\n[ked]\nintervals = 16\nmodes = 2')
    assert "s.toml: [trajectory] the end effector's acceleration reaches 720 m/s^2 (73.4 g)" in line
    assert "above `max_acceleration` = 490.3 m/s^2: omega typed in rpm? 120 rpm = 12.57 rad/s" in line
    assert "raise trajectory.max_acceleration" in line


def test_a_fast_motion_meant_runs_when_the_bound_is_raised(tmp_path, capsys):
    """The bounds are keys: a motion beyond them that is meant runs (and one below passes)."""
    from sim.app.api import load_model
    from sim.solvers.trajectory import from_scenario
    model = load_model(RRRU3)
    spec = dict(kind="circle", center=[0.0, 0.0, -0.7], radius=0.05, omega=120.0, duration=1.0)
    with pytest.raises(Exception, match="raise trajectory.max_acceleration"):
        from_scenario(spec, model)
    from_scenario(dict(spec, max_acceleration=800.0), model)
    with pytest.raises(Exception, match=r"speed reaches 6 m/s .* above `max_speed` = 5 m/s"):
        from_scenario(dict(spec, max_acceleration=800.0, max_speed=5.0), model)
    from_scenario(dict(spec, omega=12.0), model)


@pytest.mark.parametrize("value, unit, hint", [
    (210.0, "Pa", "GPa typed as Pa? 210 GPa = 2.1e+11 Pa"),
    (7.0e4, "Pa", "MPa typed as Pa? 70000 MPa = 7e+10 Pa"),
    (2.7, "kg/m^3", "g/cm^3 typed as kg/m^3? 2.7 g/cm^3 = 2700 kg/m^3"),
    (1e-300, "kg/m^3", ""),                      # no unit makes this a material
    (3.0, "Pa", "GPa typed as Pa? 3 GPa = 3e+09 Pa"),   # a polymer's modulus in GPa
])
def test_likely_unit(value, unit, hint):
    assert plausible.likely(value, unit) == (f": {hint}" if hint else "")


def test_the_engineering_materials_and_devices_pass():
    """Steel, aluminium, a polymer, balsa and a carbon-fibre tube (orthotropic: E/2G - 1 = 6.5 and
    12, no isotropic solid's), tungsten and a rigid-link device (1000 x steel) pass."""
    for E, G, rho in ((210e9, 80.8e9, 7850), (70e9, 26.3e9, 2700), (3e9, 1.1e9, 1200), (3e9, 0.2e9, 150),
                      (130e9, 5e9, 1600), (400e9, 160e9, 19300), (2.1e14, 8e13, 7850)):
        assert not Section(E=E, G=G, rho=rho, A=1e-4, Iy=1e-9, Iz=1e-9, J=2e-9).problems()


def test_a_heavy_link_is_warned_about(tmp_path, capsys):
    """A steel tube 0.5 m across, 50 mm wall, on a 0.8 m rod: 1.8e3 kg/m, heavier than a solid
    steel bar 0.4 m across, warned about (not refused: a machine frame may be that heavy)."""
    assert main(["modes", str(RRRU3), "--param", "rod_radius=0.3", "--param", "rho=7850", "--count", "1"]) == 0
    err = capsys.readouterr().err
    mass = 7850 * np.pi * 0.3**2 * 0.8
    assert f"warning: body `CP_1` weighs {mass:.3g} kg ({mass / 0.8:.3g} kg/m over 0.8 m)" in err
