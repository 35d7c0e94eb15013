"""Section forces and stresses (issue 42 item 2) against closed forms."""
import sys
from pathlib import Path

import numpy as np
import pytest

import sim
from sim import ALUMINIUM, STEEL, ModelBuilder, Section

sys.path.insert(0, str(Path(__file__).parent))
from test_stiffness import cantilever  # noqa: E402

ARM = Path(__file__).parent / "arm_model.py"


@pytest.mark.parametrize("section", [Section.rectangle(0.03, 0.01, STEEL), Section.circle(0.01, STEEL),
                                     Section.tube(0.012, 0.0015, ALUMINIUM)], ids=["rectangle", "circle", "tube"])
def test_cantilever_section_forces_and_stress_under_a_tip_load(section):
    """Tip force P along z and torque T: Vz = P and My = -P (L - x) along the beam, T constant;
    the root's normal stress P L c_z / Iy (6 P L / (b h^2) for the rectangle), its von Mises
    stress with the torsion stress T / W_t; the peak there."""
    L, P, T = 0.8, 100.0, 5.0
    r = sim.stiffness(cantilever(L, section), load=[0.0, 0.0, P, T, 0.0, 0.0])
    F = np.asarray(r["section_forces/beam"])[0]
    x = np.linspace(0, L, 5)
    np.testing.assert_allclose(F[:, 2], P, rtol=1e-9)
    np.testing.assert_allclose(F[:, 3], T, rtol=1e-9)
    np.testing.assert_allclose(F[:, 4], -P * (L - x), atol=1e-9 * P * L)
    np.testing.assert_allclose(F[:, [0, 1, 5]], 0.0, atol=1e-9 * P)
    c_y, c_z, W_t = section.fibres
    sigma = P * L * c_z / section.Iy
    if section.c_z == 0.005:
        assert sigma == pytest.approx(6 * P * L / (0.03 * 0.01**2))
    stress = np.asarray(r["stress/beam"])[0, 0]
    np.testing.assert_allclose(stress, [sigma, np.sqrt(sigma**2 + 3 * (T / W_t) ** 2)], rtol=1e-9)
    assert int(r["stress/peak_node"][0]) == 0
    assert float(r["stress/peak"][0]) == pytest.approx(stress[1])


def test_clamped_clamped_beam_under_a_central_load():
    """Both ends clamped, P along +z at mid-span: compliance L^3 / (192 EI), moments of size
    P L / 8 at the ends and at mid-span, of opposite signs (My = -EI w'': the beam rises to a
    crest at mid-span and curves the other way at the clamps; the cantilever's My = -P (L - x)
    has the same sign convention), shear P/2 changing sign at the load."""
    L, P, n = 1.0, 200.0, 4
    s = Section.circle(0.01, STEEL)
    b = ModelBuilder("clamped", gravity=(0.0, 0.0, 0.0))
    nodes = np.column_stack([np.linspace(0, L, n + 1), np.zeros((n + 1, 2))])
    b.add_beam_body("beam", nodes, np.column_stack([np.arange(n), np.arange(1, n + 1)]), s)
    for name, node in (("a", 0), ("b", n)):
        b.add_marker(f"ground_{name}", None, nodes[node])
        b.add_marker(name, "beam", nodes[node])
        b.add_joint(f"clamp_{name}", "fixed", f"ground_{name}", name)
    b.add_marker("mid", "beam", nodes[n // 2])
    b.set_end_effector("mid", ("z",))
    r = sim.stiffness(b.build(), load=[P])
    EI = s.E * s.Iy
    np.testing.assert_allclose(r.compliance[0, 0], L**3 / (192 * EI), rtol=1e-9)
    F = np.asarray(r["section_forces/beam"])[0]
    np.testing.assert_allclose(F[[0, 2, 4], 4], [-P * L / 8, P * L / 8, -P * L / 8], rtol=1e-9)
    # Node 2 takes the load: its two elements carry +P/2 and -P/2, whose mean is zero.
    np.testing.assert_allclose(F[[0, 1, 2, 3, 4], 2], [P / 2, P / 2, 0.0, -P / 2, -P / 2], atol=1e-9 * P)


def test_transient_and_ked_write_section_forces_and_the_section_sensor(tmp_path):
    """The two-link arm along a short circle: both groups hold the forearm's section forces; the
    `section` sensor at the forearm's root is the root's Mz of `section_forces` (in-plane
    bending); the peak
    stresses of the transient and of the KED agree within 10 %."""
    sys.path.insert(0, str(ARM.parent))
    from arm_model import scenario

    path = tmp_path / "arm.toml"
    path.write_text(scenario(0.3, "[transient]\nstep = 5e-4\n[ked]\nintervals = 32\nmodes = 3\n")
                    .replace('file = "', 'parameters = { section_sensor = true }\nfile = "', 1))
    out = sim.run(path, out=tmp_path / "arm.h5")
    import h5py

    with h5py.File(out) as f:
        tr, ked = f["transient"], f["ked"]
        F = tr["section_forces/fore"][()]
        assert F.shape == (tr["time"].size, 7, 6)
        assert list(tr["section_forces/fore"].attrs["units"]) == ["N", "N", "N", "N m", "N m", "N m"]
        # In-plane bending: about the local z axis (world y), the moment the tip mass's inertia puts there.
        assert np.abs(F[:, 0, 5]).max() > 1.0 and np.abs(F[:, :, 4]).max() == 0.0
        np.testing.assert_allclose(tr["sensors/fore_root_moment"][()], F[:, 0, 5], rtol=1e-12)
        assert tr["sensors/fore_root_moment"].attrs["units"] == "N m"
        assert ked["section_forces/fore"].shape == (33, 7, 6)
        peak_tr, peak_ked = tr["stress/peak"][0], ked["stress/peak"][0]
        assert peak_tr > 1e5 and abs(peak_ked / peak_tr - 1) < 0.1


def test_export_vtk_series_reads_back(tmp_path):
    """`sim export --format vtk`: one .vtu per skeleton instant that meshio reads back (the
    flexible robot's points, the lines, the deviation and the section forces at the nodes), a
    .vtu.series index with their times; a bad --group is a one-line error leaving no file."""
    import json
    import subprocess

    import h5py
    import meshio

    sys.path.insert(0, str(ARM.parent))
    from arm_model import scenario

    path = tmp_path / "arm.toml"
    path.write_text(scenario(0.05, "[transient]\nstep = 1e-3\n"))
    result = sim.run(path, out=tmp_path / "arm.h5")
    series = tmp_path / "vtk" / "arm.vtu.series"
    p = subprocess.run([sys.executable, "-m", "sim", "export", str(result), "--format", "vtk", "--out", str(series)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    files = json.loads(series.read_text())["files"]
    with h5py.File(result) as f:
        tr = f["transient"]
        points, rigid, time = tr["skeleton/points"][()], tr["skeleton/points_rigid"][()], tr["time"][()]
        forces, start = tr["section_forces/fore"][()], int(tr.attrs["stress_body_first_points"][0])
        segments = tr["skeleton/segments"][()]
    assert [x["time"] for x in files] == pytest.approx(time.tolist())
    k = len(files) - 1
    mesh = meshio.read(series.parent / files[k]["name"])
    np.testing.assert_allclose(mesh.points, points[k])
    np.testing.assert_array_equal(mesh.cells_dict["line"], segments)
    np.testing.assert_allclose(mesh.point_data["deviation"], points[k] - rigid[k])
    np.testing.assert_allclose(mesh.point_data["section_forces"][start:start + 7], forces[k])
    assert sorted(x.name for x in series.parent.iterdir()) == sorted([series.name] + [x["name"] for x in files])

    bad = subprocess.run([sys.executable, "-m", "sim", "export", str(result), "--group", "modes",
                          "--out", str(tmp_path / "bad" / "b.vtu.series")], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and bad.stderr.startswith("error: --group")
    assert not (tmp_path / "bad").exists()


def test_section_sensor_needs_a_marker_on_a_beam_and_a_component():
    b = ModelBuilder("bad", gravity=(0.0, 0.0, 0.0))
    b.add_rigid_body("block", 1.0, (0, 0, 0), 0.01 * np.eye(3))
    b.add_marker("m", "block", (0, 0, 0))
    b.add_sensor("s", "section", ("m",), axis="Mx")
    with pytest.raises(ValueError) as error:
        b.build()
    assert "sensor `s`: axis must be one of N, Vy, Vz, T, My, Mz" in str(error.value)
    assert "sensor `s`: marker `m` is not on a flexible (beam) body" in str(error.value)
