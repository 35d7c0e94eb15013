"""A mechanism whose rigid counterpart cannot move (issue 38 item 1): Bauchau's four-bar with
its hinge at C turned by 5 degrees (``models/four_bar.py``), and the same linkage untilted, a
parallelogram that passes a change point at every half turn of its crank.

References: the parallelogram's closed-form motion (the coupler translates: its mid-span runs
on a circle of the crank's radius), the locked linkage's Grubler count, and the defining
property of the least-squares reference (its actuators exact, its joints as close as the
linkage allows)."""
from pathlib import Path

import h5py
import numpy as np
import pytest

import sim
from sim.app import selfcheck
from sim.app.cli import main
from sim.solvers.motion import driven_motion, least_squares_motion

ROOT = Path(__file__).resolve().parent.parent
FOUR_BAR = ROOT / "models" / "four_bar.py"


def _drive(times, rate=0.6):
    return (rate * times)[:, None], np.full((times.size, 1), rate), np.zeros((times.size, 1))


def test_least_squares_motion_is_the_exact_one_where_there_is_one_and_continues_past_a_change_point():
    """Untilted, the linkage is a parallelogram: the least-squares motion is its exact motion
    (the compiled direct kinematics, to 1e-12), closes every joint (residual at round-off) and
    keeps to the parallelogram branch through the change points at crank angles pi/2 and 3pi/2,
    where the direct kinematics stops as singular: the coupler's mid-span on the circle
    (0.12, 0) + 0.12 (-sin a, cos a) of crank angle a."""
    model = sim.load_model(FOUR_BAR, tilt=0.0, parts=1, elements=4)
    times = np.linspace(0.0, 12.0, 601)
    motion, residual = least_squares_motion(model, times, *_drive(times))
    assert residual.max() < 1e-12
    a = 0.6 * times
    np.testing.assert_allclose(motion.pose[:, :2], np.column_stack([0.12 - 0.12 * np.sin(a), 0.12 * np.cos(a)]),
                               atol=1e-9)
    early = times < 2.5
    exact = driven_motion(model, times[early], *(x[early] for x in _drive(times)))
    np.testing.assert_allclose(motion.q[early], exact.q, atol=1e-12)
    with pytest.raises(sim.SimError, match="singular configuration at t = 2.6"):
        driven_motion(model, np.linspace(0.0, 12.0, 12001), *_drive(np.linspace(0.0, 12.0, 12001)))


def test_the_tilted_linkage_is_locked_and_its_reference_is_the_least_squares_one():
    """Tilted by 5 degrees, the rigid linkage is locked (Grubler: 3 x 6 - 4 x 5 - 1 = -3, no
    free motion): the direct kinematics cannot place it past t = 0; the least-squares reference
    meets the drive exactly and no joint position it could meet better (the KKT conditions:
    the joints' gradient J_j^T C_j lies in the span of the drive's row)."""
    model = sim.load_model(FOUR_BAR, parts=1, elements=4)
    assert model.mobility.count == 0 and 6 * 3 - model.rows["n_total"] == -3
    times = np.linspace(0.0, 2.0, 101)
    with pytest.raises(sim.SimError, match="cannot assemble the rigid robot"):
        driven_motion(model, times, *_drive(times))
    motion, residual = least_squares_motion(model, times, *_drive(times))
    assert residual[0] < 1e-12 and 0.005 < residual[-1] < 0.05
    from sim.model.constraints import constraints
    nj, rigid = model.rows["n_joint"], model.v_rigid
    for k in (25, 100):
        phi, J = constraints(model, motion.q[k], targets=np.array([0.6 * times[k]]))
        assert abs(phi[nj:]).max() < 1e-12                    # the crank exactly where driven
        g, Js = J[:nj, rigid].T @ phi[:nj], J[nj:, rigid]
        lam = np.linalg.lstsq(Js.T, g, rcond=None)[0]
        assert np.linalg.norm(g - Js.T @ lam) < 1e-8 * np.linalg.norm(g)


def test_the_least_squares_motion_by_lu_is_the_svd_one(monkeypatch):
    """The least-squares reference's KKT systems are solved by LU where the actuators' rows are
    independent: the tilted (locked) four-bar's motion, configurations and velocities, the
    same as by the SVD least squares it falls back on where they are not (to 1e-12)."""
    from sim.solvers import motion as module

    model = sim.load_model(FOUR_BAR, parts=1, elements=4)
    times = np.linspace(0.0, 2.0, 41)
    lu, lu_residual = least_squares_motion(model, times, *_drive(times))
    monkeypatch.setattr(module, "LSQ_INDEPENDENT", np.inf)      # every system by the SVD
    svd, svd_residual = least_squares_motion(model, times, *_drive(times))
    np.testing.assert_allclose(lu.q, svd.q, atol=1e-12)
    np.testing.assert_allclose(lu.v, svd.v, atol=1e-11)
    np.testing.assert_allclose(lu_residual, svd_residual, rtol=1e-10)
    assert 0.005 < lu_residual[-1] < 0.05


def test_the_tilted_four_bar_runs_and_says_what_its_reference_is(tmp_path, capsys):
    """The flexible four-bar turns its crank although its rigid counterpart is locked: the
    transient (generalized-alpha, the integrator the Newmark failure names) holds its joints
    (violation below 1e-7 m) while the coupler bends out of its plane; the run warns that its
    reference is the least-squares rigid motion, stores it, and converges (the out-of-plane
    z at h and h/2 within 1 % of its range)."""
    scenario = tmp_path / "four_bar.toml"
    scenario.write_text(f'[model]\nfile = "{FOUR_BAR}"\n[transient]\nstep = 1e-3\nduration = 1.0\n'
                        f'start = "undeformed"\nmethod = "generalized-alpha"\n'
                        f'drive_law = {{ kind = "constant_rate", rate = 0.6 }}\n')
    z = []
    for h in ("1e-3", "5e-4"):
        out = tmp_path / f"fb{h}.h5"
        assert main(["run", str(scenario), "--out", str(out), "--set", f"transient.step={h}"]) == 0
        lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
        assert any(line.startswith("warning: transient: the rigid robot cannot follow its actuators") for line in lines)
        with h5py.File(out) as f:
            tr = f["transient"]
            assert tr.attrs["reference"] == "least_squares" and tr.attrs["reference_residual"] > 1e-3
            assert tr["constraint_violation"][...].max() < 1e-7
            z.append(tr["pose"][...][:, 2][::2 if h == "5e-4" else 1])     # on the coarse run's instants
    assert np.abs(z[0]).max() > 1e-4                          # out of the plane by a fraction of a millimetre
    assert np.abs(z[0] - z[1]).max() < 0.01 * np.ptp(z[1])


def test_a_deviation_beyond_elastic_is_a_branch_change():
    """``branch_time``: the first instant the translational deviation exceeds 10 % of the robot's
    size; a rotation, however large, is not counted; none: NaN."""
    t = np.linspace(0.0, 1.0, 101)
    dev = np.zeros((101, 3))
    dev[:, 0] = 0.05 * t                      # grows to 5 cm on a 0.25 m robot
    dev[:, 2] = 10.0                          # a rotation coordinate, rad
    assert selfcheck.branch_time(t, dev, ["m", "m", "rad"], 0.25) == pytest.approx(0.51)
    assert np.isnan(selfcheck.branch_time(t, dev, ["m", "m", "rad"], 1.0))


def test_the_tilted_four_bar_against_geometrically_exact_beams(tmp_path):
    """The coupler's out-of-plane motion against Exudyn's geometrically exact beams (16 per bar,
    converged; tests/data/four_bar_exudyn.csv from benchmarks/four_bar_exudyn.py) over the first
    3 s, through the first change point (t = 2.62 s): with each bar as four welded floating
    frames (the model's default) within 0.5 % RMS of its range (0.16 % measured); with one frame
    per bar, whose linear elastic coordinates miss the bars' second-order shortening, which
    decides the motion at the change point, 1.7 % off."""
    reference = np.loadtxt(ROOT / "tests" / "data" / "four_bar_exudyn.csv", delimiter=",")
    reference = reference[reference[:, 0] <= 3.0]
    scenario = tmp_path / "four_bar.toml"
    scenario.write_text(f'[model]\nfile = "{FOUR_BAR}"\n[transient]\nstep = 1e-3\nduration = 3.0\nstart = "undeformed"\n'
                        f'method = "generalized-alpha"\ndrive_law = {{ kind = "constant_rate", rate = 0.6 }}\n')
    off = {}
    for parts, elements in ((4, 2), (1, 4)):
        out = tmp_path / f"parts{parts}.h5"
        assert main(["run", str(scenario), "--out", str(out), "--set", f"model.parameters.parts={parts}",
                     "--set", f"model.parameters.elements={elements}"]) == 0
        with h5py.File(out) as f:
            t, z = f["transient/time"][...], f["transient/pose"][...][:, 2]
        off[parts] = np.sqrt(np.mean((np.interp(reference[:, 0], t, z) - reference[:, 3]) ** 2))
    scale = np.sqrt(np.mean(reference[:, 3] ** 2))
    assert off[4] < 0.005 * scale and off[1] > 0.01 * scale, (off, scale)


def test_the_default_integrator_runs_the_locked_loop_as_a_user_writes_it(tmp_path, capsys):
    """Left to its default, the transient's integrator is Newmark; on the tilted four-bar its
    Newton fails near the first change point (t = 2.7 s; Newmark damps nothing, the stiff modes
    the step cannot resolve included): the run is made again with generalized-alpha, which
    damps them, to the end, and a warning says so.  (Newmark chosen explicitly still stops, its
    error line naming generalized-alpha: test_transient.py's absurd step.)"""
    scenario = tmp_path / "four_bar.toml"
    scenario.write_text(f'[model]\nfile = "{FOUR_BAR}"\nparameters = {{ parts = 1, elements = 4 }}\n[transient]\n'
                        f'step = 1e-3\nduration = 3.0\nstart = "undeformed"\n'
                        f'drive_law = {{ kind = "constant_rate", rate = 0.6 }}\n')
    out = tmp_path / "default.h5"
    assert main(["run", str(scenario), "--out", str(out)]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if "Newmark, the default, stopped" in line]
    assert len(lines) == 1 and "Newton did not converge at t = 2.7" in lines[0] and "generalized-alpha's" in lines[0]
    with h5py.File(out) as f:
        tr = f["transient"]
        assert tr.attrs["method"] == "generalized-alpha" and tr["time"][-1] == pytest.approx(3.0)
        assert tr.attrs["status"] == "complete"


def test_the_crank_mid_span_section_forces_against_geometrically_exact_beams(tmp_path):
    """Issue 42: against Exudyn's geometrically exact beams (tests/data/four_bar_exudyn_crank_sections.csv,
    16 elements per bar, h = 5e-4 s; 8 elements or h = 1e-3 s change T and My by less than 0.5 %
    RMS before the second change point, past which the reference itself stops converging; the
    same section frame and sign convention as ffrsim's: x along A->B, z = world z).  Torque T
    and out-of-plane bending moment My at the crank's mid-span (the weld between
    crank1 and crank2 of the default four parts) within 5 % of Exudyn at instants before and
    after the first change point (t = 2.62 s) where they are not near a zero crossing (measured:
    at most 1 %); the bending-moment vector (My, Mz) within 5 % of its size.  The small in-plane
    moment Mz (a few % of My) only from t = 3.5 s on: before, ffrsim's in-plane bending carries
    a ~250 Hz vibration started at t = 0 (+-0.5 N m around Exudyn's curve, whose mean it meets),
    which the generalized-alpha damping has worn down by then (measured: within 1.2 %)."""
    reference = np.loadtxt(ROOT / "tests" / "data" / "four_bar_exudyn_crank_sections.csv", delimiter=",")
    scenario = tmp_path / "four_bar.toml"
    scenario.write_text(f'[model]\nfile = "{FOUR_BAR}"\n[transient]\nstep = 1e-3\nduration = 4.5\nstart = "undeformed"\n'
                        f'method = "generalized-alpha"\ndrive_law = {{ kind = "constant_rate", rate = 0.6 }}\n')
    out = tmp_path / "four_bar.h5"
    assert main(["run", str(scenario), "--out", str(out)]) == 0
    with h5py.File(out) as f:
        g = f["transient/section_forces"]
        t = g["time"][...]
        assert np.allclose(g["crank1_nodes"][-1], [0, 0.03, 0]) and np.allclose(g["crank2_nodes"][0], 0)
        mid = 0.5 * (g["crank1"][:, -1] + g["crank2"][:, 0])          # (time, 6): N, Vy, Vz, T, My, Mz
    instants = np.array([1.0, 1.5, 3.0, 3.5, 4.0, 4.5])
    ours = np.column_stack([np.interp(instants, t, mid[:, c]) for c in range(6)])
    theirs = np.column_stack([np.interp(instants, reference[:, 0], reference[:, 1 + c]) for c in range(6)])
    for c, name in ((3, "T"), (4, "My")):
        np.testing.assert_array_less(np.abs(ours[:, c] - theirs[:, c]), 0.05 * np.abs(theirs[:, c]), err_msg=name)
    bending = np.hypot(theirs[:, 4], theirs[:, 5])
    np.testing.assert_array_less(np.hypot(*(ours[:, 4:] - theirs[:, 4:]).T), 0.05 * bending)
    late = instants >= 3.5
    np.testing.assert_array_less(np.abs(ours[late, 5] - theirs[late, 5]), 0.05 * np.abs(theirs[late, 5]), err_msg="Mz")
