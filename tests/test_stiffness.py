"""Cartesian stiffness of the end effector (issue 42 item 1) against closed forms."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import sim
from sim import STEEL, ModelBuilder, Section

sys.path.insert(0, str(Path(__file__).parent))
import planar_arm_model  # noqa: E402
import spring_chain_model  # noqa: E402

from problems import bar_extension, cantilever_tip_deflection, shaft_twist  # noqa: E402

ARM = Path(__file__).parent / "planar_arm_model.py"


def cantilever(length=0.8, section=Section.rectangle(0.03, 0.01, STEEL), elements=4):
    """A beam along x clamped (fixed joint) at the origin; end effector its tip, all six
    coordinates."""
    b = ModelBuilder("cantilever", gravity=(0.0, 0.0, 0.0))
    nodes = np.column_stack([np.linspace(0, length, elements + 1), np.zeros((elements + 1, 2))])
    b.add_beam_body("beam", nodes, np.column_stack([np.arange(elements), np.arange(1, elements + 1)]), section)
    b.add_marker("ground", None, np.zeros(3))
    b.add_marker("root", "beam", np.zeros(3))
    b.add_marker("tip", "beam", nodes[-1])
    b.add_joint("clamp", "fixed", "ground", "root")
    b.set_end_effector("tip", ("x", "y", "z", "rx", "ry", "rz"))
    return b.build()


def test_cantilever_tip_compliance_is_the_closed_form():
    """L/EA, L^3/3EI about both principal axes (Iy != Iz), L/GJ, L/EI and the coupling
    L^2/2EI; symmetric, positive definite, the stiffness its inverse; all in the beam."""
    L, s = 0.8, Section.rectangle(0.03, 0.01, STEEL)
    r = sim.stiffness(cantilever(L, s), load=[0.0, 0.0, 10.0, 0.0, 0.0, 0.0])
    C = r.compliance
    expected = [bar_extension(1.0, L, s.E, s.A), cantilever_tip_deflection(1.0, L, s.E, s.Iz),
                cantilever_tip_deflection(1.0, L, s.E, s.Iy), shaft_twist(1.0, L, s.G, s.J),
                L / (s.E * s.Iy), L / (s.E * s.Iz)]
    np.testing.assert_allclose(np.diag(C), expected, rtol=1e-9)
    # A force along +y bends in x-y: the tip turns about +z; along +z it turns about -y.
    np.testing.assert_allclose([C[1, 5], C[2, 4]], [L**2 / (2 * s.E * s.Iz), -L**2 / (2 * s.E * s.Iy)], rtol=1e-9)
    np.testing.assert_allclose(C, C.T, atol=0)
    assert np.linalg.eigvalsh(C).min() > 0
    np.testing.assert_allclose(r.stiffness @ C, np.eye(6), atol=1e-8)
    np.testing.assert_allclose(r.deflection, 10.0 * C[:, 2], rtol=1e-12)
    assert r.units["compliance"][:3] == ["m/N", "m/N", "m/N"] and r.units["compliance"][-1] == "rad/(N m)"
    assert r.units["stiffness"][5] == "N/rad" and r.units["stiffness"][30] == "N m/m"
    np.testing.assert_allclose(r.compliance_share, 1.0)


def arm_closed_form(a=0.4, b=0.3, elbow=1.0, section=planar_arm_model.SECTION):
    """Compliance (3, 3) of the locked planar arm's tip in (x, y, rz) by virtual work: each link
    a cantilever clamped at its start, loaded at its end by the tip wrench carried over
    (axial N, transverse V, moment M), ``C = sum_i A_i^T C_i A_i``."""
    O, E, T = planar_arm_model.points(a, b, elbow)
    EA, EI = section.E * section.A, section.E * section.Iz
    C = np.zeros((3, 3))
    for start, end in ((O, E), (E, T)):
        L = np.linalg.norm(end - start)
        e = (end - start) / L
        n = np.array([-e[1], e[0]])
        r = (T - end)[:2]
        A = np.array([[e[0], e[1], 0.0], [n[0], n[1], 0.0], [-r[1], r[0], 1.0]])
        Ci = np.array([[L / EA, 0, 0], [0, L**3 / (3 * EI), L**2 / (2 * EI)], [0, L**2 / (2 * EI), L / EI]])
        C += A.T @ Ci @ A
    return C


def test_planar_arm_compliance_and_finite_difference():
    """The locked two-link arm: its compliance is the frame's closed form; and the deflection
    under a wrench whose generalized load is the virtual work of the end-effector coordinates
    by finite differences, read through the nonlinear kinematics, is C @ wrench."""
    from sim.model.kinematics import integrate, pose
    from sim.solvers.modal import static_response
    from sim.solvers.compliance import stiffness

    model = planar_arm_model.build()
    C = stiffness(model, model.q_home).compliance
    np.testing.assert_allclose(C, arm_closed_form(), rtol=1e-9)

    q, w, eps = model.q_home, np.array([3.0, -2.0, 0.5]), 1e-7
    x0 = pose(model, q)
    f = np.array([w @ (pose(model, integrate(model, q, eps * e)) - x0) / eps for e in np.eye(model.n_v)])
    u = static_response(model, q, f[:, None])[:, 0]
    np.testing.assert_allclose(pose(model, integrate(model, q, u)) - x0, C @ w, rtol=2e-3)


def test_spring_chain_compliance_and_shares():
    """Two lumped springs in series: 1/k1 + 1/k2 along z, shared in proportion to 1/k."""
    r = sim.stiffness(spring_chain_model.build(k1=1e4, k2=2e4))
    np.testing.assert_allclose(r.compliance[2, 2], 1 / 1e4 + 1 / 2e4, rtol=1e-9)
    assert r.attrs["parts"] == ["spring:s1", "spring:s2"]
    np.testing.assert_allclose(r.compliance_share[2], [2 / 3, 1 / 3], rtol=1e-9)


def test_stiffness_map_matches_the_analysis(tmp_path):
    """`[sweep] analysis = "stiffness"`: the compliance at each grid pose is that of
    `sim.stiffness` there (the map's compiled path against the analysis), and the map is drawn."""
    scenario = tmp_path / "map.toml"
    scenario.write_text(f"""name = "arm_map"
[model]
file = "{ARM.as_posix()}"
parameters = {{ rotation = false }}
[sweep]
analysis = "stiffness"
axes = ["x", "y"]
x = [0.45, 0.5, 2]
y = [0.25, 0.3, 2]
workers = 1
""")
    out = sim.run(scenario, out=tmp_path / "map.h5")
    m = sim.open_results(out, "sweep")
    C = np.asarray(m["compliance"])
    assert C.shape == (2, 2, 2, 2) and bool(np.asarray(m["mask"]).all())
    here = sim.stiffness(planar_arm_model.build(rotation=False), pose=[0.5, 0.3])
    np.testing.assert_allclose(C[1, 1], here.compliance, rtol=1e-7)
    largest = np.asarray(m["largest_translational_compliance"])
    np.testing.assert_allclose(largest[1, 1], np.linalg.eigvalsh(here.compliance)[-1], rtol=1e-7)
    png = tmp_path / "map.png"
    subprocess.run([sys.executable, "-m", "sim", "plot", str(out), "--out", str(png)], check=True)
    assert png.stat().st_size > 0


@pytest.mark.parametrize("table, key", [('[stiffness]\nload = [1.0, 2.0]\n', "load"),
                                        ('[sweep]\nanalysis = "frf"\naxes = ["x", "y"]\nx = [0.4, 0.5, 2]\n'
                                         'y = [0.2, 0.3, 2]\n', "analysis")])
def test_bad_stiffness_keys_are_one_line_errors(tmp_path, table, key):
    scenario = tmp_path / "bad.toml"
    scenario.write_text(f'name = "bad"\n[model]\nfile = "{ARM.as_posix()}"\n' + table)
    out = tmp_path / "bad.h5"
    p = subprocess.run([sys.executable, "-m", "sim", "run", str(scenario), "--out", str(out)],
                       capture_output=True, text=True)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and key in lines[0], p.stderr
    assert not out.exists()
