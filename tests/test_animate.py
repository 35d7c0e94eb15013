"""`sim animate` (issue 17): the robot's skeleton stored over time by the time-domain groups,
drawn in 3D with its deformation magnified, into a GIF; user errors in one line."""
import re
import subprocess

import h5py
import numpy as np
import pytest
from numpy.testing import assert_allclose
from PIL import Image

from conftest import MODELS, ROOT, load
from sim.app.cli import main

# The shipped 3-RRRU circle shortened to 0.3 s (61 output samples at 5 ms), its transient and
# KED only, on 2 elements per rod: about 2 s.
SHORT = ["--set", "trajectory.duration=0.3", "--set", "model.parameters.elements_per_link=2",
         "--set", "ked.intervals=60", "--set", "ked.modes=4", "--set", "transient.output_step=5e-3"]


@pytest.fixture(scope="module")
def rrru3_h5(tmp_path_factory):
    """Result file of the short 3-RRRU run (groups transient and ked)."""
    directory = tmp_path_factory.mktemp("rrru3")
    text = (ROOT / "scenarios" / "rrru3_circle.toml").read_text()
    text = re.sub(r'(?m)^file = ".*"', f'file = "{MODELS / "rrru3.py"}"', text, count=1)
    keep = [part for part in re.split(r"(?m)^(?=\[)", text)
            if not part.startswith(("[inverse_dynamics]", "[frequencies]"))]
    scenario = directory / "rrru3_short.toml"
    scenario.write_text("".join(keep))
    out = directory / "rrru3_short.h5"
    assert main(["run", str(scenario), "--out", str(out), *SHORT]) == 0
    return out


@pytest.fixture(scope="module")
def navaro_h5(tmp_path_factory):
    """Result file of the shipped NaVARo modes scenario (8 modes at home)."""
    out = tmp_path_factory.mktemp("navaro") / "navaro_modes.h5"
    assert main(["run", str(ROOT / "scenarios" / "navaro_modes.toml"), "--out", str(out)]) == 0
    return out


def test_transient_animation_has_a_frame_per_sample(rrru3_h5, tmp_path, capsys):
    gif = tmp_path / "transient.gif"
    assert main(["animate", str(rrru3_h5), "--out", str(gif)]) == 0
    with h5py.File(rrru3_h5) as f:
        samples = len(f["transient/time"])
    with Image.open(gif) as image:
        assert image.n_frames == samples >= 50, f"{image.n_frames} frames for {samples} samples"
    assert re.search(r"\(61 frames, deformation x \d+\)", capsys.readouterr().out)


def test_mode_animation_is_one_period(navaro_h5, capsys):
    """Default output next to the result file: <stem>_modes_mode<N>.gif."""
    assert main(["animate", str(navaro_h5), "--mode", "1", "--view", "top"]) == 0
    gif = navaro_h5.with_name("navaro_modes_modes_mode1.gif")
    with Image.open(gif) as image:
        assert image.n_frames == 24 >= 12
    assert f"wrote {gif}" in capsys.readouterr().out


@pytest.mark.parametrize("group", ["transient", "ked"])
def test_drawn_points_are_the_stored_ones_magnified(rrru3_h5, group):
    """What frame k draws is the stored rigid skeleton plus the stored deflection times the
    scale the animation reports, the largest drawn deflection a tenth of the robot's size."""
    from sim.app.animate import auto_scale, frame_figure, frame_indices, frame_points, load_motion, polyline

    motion = load_motion(rrru3_h5, group, frames=20)
    scale = auto_scale(motion.rigid, motion.deflection)
    with h5py.File(rrru3_h5) as f:
        points, rigid = f[f"{group}/skeleton/points"][...], f[f"{group}/skeleton/points_rigid"][...]
    picked = frame_indices(len(points), 20)
    assert len(motion) == 20 and picked[0] == 0 and picked[-1] == len(points) - 1
    deflections = []
    for k, i in enumerate(picked):
        drawn_rigid, drawn = frame_points(motion, k, scale)
        assert_allclose(drawn_rigid, rigid[i], rtol=1e-12, err_msg=f"rigid robot of frame {k}")
        assert_allclose(drawn, rigid[i] + scale * (points[i] - rigid[i]), rtol=1e-12, err_msg=f"deformed robot, frame {k}")
        deflections.append(np.linalg.norm(drawn - drawn_rigid, axis=1).max())
    size = np.ptp(rigid.reshape(-1, 3), axis=0).max()
    assert 0.09 < max(deflections) / size < 0.11, "automatic scale: largest deflection a tenth of the size"
    fig, update, artists = frame_figure(motion, scale)
    update(7)
    assert_allclose(np.array(artists["deformed"].get_data_3d()), polyline(frame_points(motion, 7, scale)[1],
                    motion.segments), rtol=1e-12, err_msg="the line drawn is frame_points'")


def test_drawn_mode_is_the_stored_shape_magnified(navaro_h5):
    from sim.app.animate import frame_points, load_motion

    motion = load_motion(navaro_h5, "modes", mode=3, frames=16)
    with h5py.File(navaro_h5) as f:
        points = f["modes/skeleton/points"][...]
        shape = f["modes/skeleton/mode_displacements"][2]
    scale = 0.37
    for k in (0, 3, 4, 11):
        _, drawn = frame_points(motion, k, scale)
        assert_allclose(drawn, points + scale * np.sin(2 * np.pi * k / 16) * shape, rtol=1e-12, atol=1e-15,
                        err_msg=f"mode 3, frame {k}")
    assert motion.labels[4].startswith("mode 3: ") and "phase  90°" in motion.labels[4]


@pytest.mark.parametrize("group", ["transient", "ked"])
def test_stored_skeleton_carries_the_end_effector(rrru3_h5, group):
    """The end-effector marker (the platform centre) is a skeleton point: where the group's
    end-effector pose says, for the flexible and the rigid robot."""
    with h5py.File(rrru3_h5) as f:
        g = f[group]
        e = g.attrs["skeleton_end_effector_point"]
        # KED's skeleton is at its interval ends, every `samples_per_interval`-th output instant
        parts = g.attrs.get("samples_per_interval", 1)
        assert g["skeleton/points"].shape == (len(g["time"][::parts]), 28, 3) and g.attrs["skeleton_every"] == 1
        if parts > 1:
            assert_allclose(g["skeleton/time"][...], g["time"][::parts], rtol=0, atol=0)
        assert_allclose(g["skeleton/points"][:, e], g["pose"][::parts], rtol=0, atol=1e-12, err_msg=f"{group} pose")
        assert_allclose(g["skeleton/points_rigid"][:, e], g["pose_rigid"][::parts], rtol=0, atol=1e-9,
                        err_msg=f"{group} pose_rigid")
        deflection = np.linalg.norm(g["skeleton/points"][...] - g["skeleton/points_rigid"][...], axis=2)
        assert 1e-5 < deflection.max() < 1e-3, "the rods deflect by tenths of a millimetre"
        for name in ("points", "points_rigid", "segments"):
            ds = g["skeleton"][name]
            assert ds.attrs["units"] in ("m", "1") and ds.attrs["description"]
        assert [d[0].name.rsplit("/", 1)[-1] for d in g["skeleton/points"].dims] == ["time", "point", "component"]


def test_skeleton_points_are_the_markers_and_the_skeleton():
    """:func:`skeleton_points` (batched) gives :func:`skeleton`'s points; each marker's point
    is where the marker kinematics put it, on random configurations."""
    from sim.model.kinematics import integrate, marker_points, markers, skeleton, skeleton_points

    rng = np.random.default_rng(17)
    for name, params in (("rrru3", {"elements_per_link": 2}), ("navaro", {}), ("pss6", {})):
        model = load(name, **params)
        qs = np.array([integrate(model, model.q_home, 0.05 * rng.standard_normal(model.n_v)) for _ in range(3)])
        batch = skeleton_points(model, qs)
        for q, p in zip(qs, batch):
            assert_allclose(p, skeleton(model, q)[0], rtol=0, atol=1e-14, err_msg=f"{name}: batched points")
            assert_allclose(p[marker_points(model)], markers(model, q).p, rtol=0, atol=1e-14,
                            err_msg=f"{name}: marker points")


def test_long_runs_keep_every_kth_instant(tmp_path, monkeypatch):
    """Above the size limit the skeleton keeps every k-th instant, with its own time axis."""
    import xarray as xr
    from sim.analyses import skeleton
    from sim.app.results import ResultFile
    from sim.model.kinematics import skeleton_points

    model = load("rrru3", elements_per_link=2)
    n_p = skeleton.point_count(model)
    monkeypatch.setattr(skeleton, "MAX_VALUES", 2 * 3 * n_p * 10)      # ten instants
    time = np.linspace(0.0, 1.0, 31)
    every = skeleton.stride(model, len(time))
    assert every == 4, "31 instants -> every 4th (8 kept)"
    points = skeleton_points(model, np.tile(model.q_home, (len(time[::every]), 1)))
    path = tmp_path / "r.h5"
    with ResultFile(path, scenario='name = "r"\n', model_file="rrru3.py", model_parameters={}) as rf:
        g = rf.group("transient")
        g.put("time", time, "s", "output instants")
        skeleton.write(g, model, time, every, points, points, "test")
    with xr.open_dataset(path, group="transient/skeleton", engine="h5netcdf") as ds:
        assert_allclose(ds["time"].values, time[::4])
        assert ds["points"].dims == ("time", "point", "component") and list(ds["component"].values) == list("xyz")
        assert "every 4th output instant" in ds["time"].attrs["description"]
    from sim.app.animate import load_motion
    assert load_motion(path, "transient").labels[1] == "t = 0.13 s"


@pytest.mark.parametrize("args, fragment", [
    (["--group", "ked"], "no `ked` group (the file has: modes)"),
    (["--group", "wobble"], "--group wobble: expected one of transient, ked, modes"),
    (["--mode", "0"], "--mode must be a positive integer"),
    (["--mode", "9"], "mode 9 is out of range: the file holds modes 1 to 8"),
    (["--out", "{tmp}/anim.txt"], "cannot write a .txt animation; use .gif or .mp4"),
    (["--out", "{tmp}/anim.mp4", "--no-ffmpeg"], "MP4 needs ffmpeg"),
    (["--frames", "1"], "--frames must be between 2 and"),
    (["--frames", "6"], "6 frames cannot show a mode's oscillation: give at least 12"),
])
def test_user_errors_are_one_line_and_write_nothing(navaro_h5, tmp_path, capsys, monkeypatch, args, fragment):
    import sim.app.animate

    if "--no-ffmpeg" in args:
        args = [a for a in args if a != "--no-ffmpeg"]
        monkeypatch.setattr(sim.app.animate, "_ffmpeg_path", lambda: None)
    before = sorted(navaro_h5.parent.iterdir())
    code = main(["animate", str(navaro_h5), *(a.format(tmp=tmp_path) for a in args)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("error: ") and fragment in err[0], err
    assert list(tmp_path.iterdir()) == [] and sorted(navaro_h5.parent.iterdir()) == before, "no output file"


def test_not_a_result_file(tmp_path, capsys):
    (tmp_path / "a.h5").write_bytes(b"not hdf5")
    assert main(["animate", str(tmp_path / "a.h5"), "--out", str(tmp_path / "a.gif")]) == 2
    assert capsys.readouterr().err.strip() == f"error: {tmp_path / 'a.h5'}: not an HDF5 file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.h5"]


def test_a_failing_write_leaves_no_file(navaro_h5, tmp_path, monkeypatch):
    """A write that fails half-way (a full disk) leaves neither the GIF nor its temporary file."""
    import sim.app.animate as animate
    from sim.errors import SimError

    def failing(fig, update, n, path, writer):
        path.write_bytes(b"GIF89a partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(animate, "_save", failing)
    with pytest.raises(SimError, match="anim.gif: cannot write the animation .No space left on device."):
        animate.render(animate.load_motion(navaro_h5, "modes", 1, frames=12), tmp_path / "anim.gif")
    assert list(tmp_path.iterdir()) == []


def test_mode_animation_as_mp4(navaro_h5, tmp_path):
    """An MP4 where an encoder is at hand (ffmpeg on the PATH or imageio-ffmpeg): one period of
    the mode, 24 frames at 20 per second, that ffmpeg decodes back (1.2 s)."""
    from sim.app import animate
    if not animate.mp4_available():
        pytest.skip("no ffmpeg encoder (install ffmpeg or imageio-ffmpeg)")
    out = tmp_path / "mode.mp4"
    assert main(["animate", str(navaro_h5), "--mode", "1", "--out", str(out)]) == 0
    decoded = subprocess.run([animate._ffmpeg_path(), "-v", "error", "-i", str(out), "-f", "null", "-"],
                             capture_output=True, text=True)
    assert decoded.returncode == 0 and not decoded.stderr, decoded.stderr
    probe = subprocess.run([animate._ffmpeg_path(), "-i", str(out)], capture_output=True, text=True).stderr
    assert "Duration: 00:00:01.20" in probe and "20 fps" in probe, probe


def test_a_planar_robot_is_seen_along_its_normal(navaro_h5, rrru3_h5):
    """By default (``--view auto``) NaVARo, flat in the x-y plane, is seen from above in its
    in-plane modes and in isometric view in its out-of-plane mode 4; the spatial 3-RRRU always
    in isometric view.  A robot flat in x-z is seen from the front, one flat in y-z from the side."""
    from sim.app.animate import VIEWS, frame_figure, load_motion, plane_view

    for mode, view in ((1, "top"), (3, "top"), (4, "iso")):
        motion = load_motion(navaro_h5, "modes", mode=mode)
        assert plane_view(motion.rigid, motion.deflection) == view, mode
    motion = load_motion(rrru3_h5, "ked", frames=10)
    assert plane_view(motion.rigid, motion.deflection) == "iso"
    square = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
    assert plane_view(square, [[0.0, 0.0, 0.1]] * 4) == "front"
    assert plane_view(square[:, [1, 0, 2]], [[0.0, 0.0, 0.1]] * 4) == "side"
    assert plane_view(square, [[0.0, 0.1, 0.0]] * 4) == "iso"       # out of its plane
    # what `sim animate` draws by default: NaVARo's first mode from above
    motion = load_motion(navaro_h5, "modes", mode=1)
    fig, _, _ = frame_figure(motion, 0.1, plane_view(motion.rigid, motion.deflection))
    assert (fig.axes[0].elev, fig.axes[0].azim) == VIEWS["top"]


def test_rigid_skeleton_of_a_drive_law_is_the_direct_kinematics(tmp_path):
    """The slider-crank's rigid skeleton, interpolated between the rigid reference's samples
    (0.1 rad of crank apart), against the rigid robot assembled at each output instant's crank
    angle (its direct kinematics): within 3e-10 m (7.6e-11 m over the whole 0.1 s run), where
    the rod deflects by some 1e-4 m."""
    from sim.model.constraints import actuator_values
    from sim.model.kinematics import skeleton_points
    from sim.solvers.motion import driven_motion

    out = tmp_path / "sc.h5"
    assert main(["run", str(ROOT / "scenarios" / "slider_crank.toml"), "--out", str(out),
                 "--set", "transient.duration=0.03", "--set", "transient.output_step=2e-4"]) == 0
    model = load("slider_crank", elements=8, frame="chord", planar=True)
    with h5py.File(out) as f:
        g = f["transient"]
        t, rigid, flexible = g["time"][()], g["skeleton/points_rigid"][()], g["skeleton/points"][()]
    s0 = actuator_values(model, model.q_home)[0]
    n = len(t)
    exact = skeleton_points(model, driven_motion(model, t, s0 + 150.0 * t[:, None], np.full((n, 1), 150.0),
                                                 np.zeros((n, 1))).q)
    assert np.abs(rigid - exact).max() < 3e-10
    assert np.abs(flexible - exact).max() > 1e-5, "the deflection the drawing magnifies"
