"""`sim plot` offers the figures users expect for each kind of result."""
from pathlib import Path

import h5py
import numpy as np

from sim.app.cli import main
from sim.app.plots import _panels
from sim.app.results import read_result

ROOT = Path(__file__).resolve().parent.parent


def test_modes_result_draws_mode_shapes_on_the_robot(tmp_path):
    out = tmp_path / "navaro.h5"
    assert main(["run", str(ROOT / "scenarios/navaro_modes.toml"), "--out", str(out)]) == 0
    with h5py.File(out) as f:
        points = f["modes/skeleton/points"][...]
        shapes = f["modes/skeleton/mode_displacements"][...]
        assert f["modes/skeleton/mode_displacements"].attrs["units"] == "m kg^-1/2"
    assert shapes.shape[1:] == points.shape and shapes.shape[0] == 8, "one displacement field per mode"
    # the first NaVARo modes are in-plane: the points move in x-y, not along z
    in_plane = np.abs(shapes[0][:, :2]).max()
    assert np.abs(shapes[0][:, 2]).max() < 1e-6 * in_plane, "mode 1 is an in-plane mode"
    panels = _panels(read_result(out))
    titles = [title for title, _ in panels]
    assert sum(t.startswith("modes: mode ") for t in titles) == 4, titles
    from sim.app.plots import _layout
    assert [len(row) for row in _layout(panels)] == [3, 2], "five panels three to a row: a grid that fits a screen"
    png = tmp_path / "navaro.png"
    assert main(["plot", str(out), "--out", str(png)]) == 0 and png.stat().st_size > 10_000
    # A 3D mode shape (mode 4, out of the plane) keeps its tick and axis labels inside the
    # figure and off the 2D panels, on the right of a row (as here) or on its left.
    import matplotlib.pyplot as plt
    from sim.app.plots import figure
    tree = read_result(out)
    for order in ([0, 1, 2, 3, 4], [0, 1, 3, 2, 4]):
        fig = figure(tree, [panels[i] for i in order])
        try:
            fig.canvas.draw()
            renderer = fig.canvas.get_renderer()
            (solid,) = [ax for ax in fig.axes if ax.name == "3d"]
            box = solid.get_tightbbox(renderer)
            assert fig.bbox.containsx(box.x0) and fig.bbox.containsx(box.x1), (order, box, fig.bbox)
            for ax in fig.axes:
                if ax is not solid:
                    assert not box.overlaps(ax.get_tightbbox(renderer)), (order, ax.get_title())
        finally:
            plt.close(fig)
    # Cast3M's five frequencies (f4 out of the plane), declared by the model at this pose, on modes 1-5
    import matplotlib.pyplot as plt
    draw = dict(_panels(read_result(out)))["modes: natural frequencies"]
    fig, ax = plt.subplots()
    try:
        draw(ax)
        (line,) = ax.get_lines()
        np.testing.assert_array_equal(line.get_xdata(), [1, 2, 3, 4, 5])
        np.testing.assert_array_equal(line.get_ydata(), [44.10, 44.10, 53.98, 60.63, 95.62])
        assert line.get_label() == "Cast3M (paper 000, Table 3, pose 1)"
    finally:
        plt.close(fig)


def test_references_apply_where_the_run_matches_them(tmp_path):
    """A model's published values are drawn only at the pose and times they hold for, and
    a malformed declaration is refused when the model is built."""
    import json

    import pytest

    from sim.app.plots import _mode_reference, _sensor_reference
    from sim.model.loader import load_model
    assert load_model(ROOT / "models/navaro.py", {"joint_mass": 0.3}).references == (), \
        "the published values hold for the published model only"
    refs = [{"quantity": "modes.frequencies", "values": [10.0, 20.0], "at": [0.1, 0.0], "modes": [],
             "source": "paper", "condition": ""},
            {"quantity": "sensors.tip", "values": [1e-3, 2e-3], "at": [0.5, 2.0], "source": "paper",
             "condition": "at 3 rad/s"}]
    tree = {"attrs": {"references": json.dumps(refs)}}
    group = {"pose": {"data": np.array([0.1, 0.0])}}
    modes, values, label = _mode_reference(tree, group)
    assert list(modes) == [1, 2] and values == [10.0, 20.0] and label == "paper"
    assert _mode_reference(tree, {"pose": {"data": np.array([0.0, 0.0])}}) is None
    at, values, label = _sensor_reference(tree, "tip", np.linspace(0.0, 1.0, 11))
    assert list(at) == [0.5] and list(values) == [1e-3] and label == "paper, at 3 rad/s"
    assert _sensor_reference(tree, "tip", np.linspace(0.0, 0.4, 5)) is None
    from sim import ModelBuilder
    b = ModelBuilder("r", gravity=(0, 0, 0))
    b.add_rigid_body("b", mass=1.0, com=(0, 0, 0), inertia=np.eye(3))
    b.add_marker("m", "b", (0, 0, 0))
    b.add_marker("g", None, (0, 0, 0))
    b.add_joint("j", "revolute", "g", "m")
    b.set_end_effector("m", ("x",))
    b.add_reference("modes.frequencies", [1.0, 2.0], units="Hz", source="s", at=(0.0, 1.0), modes=(1,))
    b.add_reference("sensors.nothing", [1.0], units="m", source="s")
    b.add_reference("energy", [1.0], units="J", source="s")
    with pytest.raises(ValueError) as info:
        b.build()
    message = str(info.value)
    for part in ("reference `modes.frequencies`: `at` must give the pose, 1 coordinates, got 2",
                 "`modes` must give one mode number (from 1) per value, got [1]",
                 "reference `sensors.nothing`: one time in `at` per value, got 0 for 1",
                 "unknown sensor `nothing`", "reference `energy`: expected `modes.frequencies`"):
        assert part in message, message


def _run_file(path, overrides, amplitude):
    from sim.app.results import ResultFile
    t = np.linspace(0.0, 1.0, 101)
    with ResultFile(path, scenario='name = "r"\n', model_file="robot.py", model_parameters={},
                    overrides=overrides) as rf:
        for name in ("transient", "ked"):
            g = rf.group(name)
            g.attrs["pose_names"] = ["x", "rz"]
            g.put("time", t, "s", "time")
            g.put("deviation", amplitude * np.column_stack([np.sin(9 * t), 0.1 * np.cos(9 * t)]),
                  ["m", "rad"], "pose - pose_rigid")
            if name == "ked":
                g.put("frequency_time", t, "s", "instants")
                g.put("frequencies", np.column_stack([40 + t, 60 + t]), "Hz", "frequencies")
    return path


def test_compare_overlays_runs_labelled_by_their_overrides(tmp_path, capsys):
    """Two runs differing by one ``--set``: one figure, labelled by that override; deviations
    in readable units (µm and µrad here)."""
    from sim.app.cli import main
    from sim.app.plots import readable
    a = _run_file(tmp_path / "a.h5", ["trajectory.omega=2.0"], 3e-5)
    b = _run_file(tmp_path / "b.h5", ["trajectory.omega=3.0"], 5e-5)
    out = tmp_path / "cmp.png"
    assert main(["compare", str(a), str(b), "--out", str(out)]) == 0
    assert "trajectory.omega=2.0; trajectory.omega=3.0" in capsys.readouterr().out
    assert out.stat().st_size > 10_000
    assert readable([3e-5, -5e-5], "m") == (1e-6, "µm") and readable([2e-3], "rad") == (1e-3, "mrad")
    assert readable([0.5], "m") == (1e-3, "mm") and readable([2.0], "N") == (1.0, "N")


def test_compare_labels_runs_by_their_damping(tmp_path):
    """``sim run --set damping.eta=...``: the runs' labels name the damping they assumed, and
    each file's FRF stores that model."""
    from sim.app.cli import main
    from sim.app.plots import run_labels
    from sim.app.results import read_result
    scenario = Path(__file__).resolve().parent.parent / "scenarios" / "delta_modes.toml"
    paths = [tmp_path / "a.h5", tmp_path / "b.h5"]
    for path, eta in zip(paths, ("0.05", "0.1")):
        assert main(["run", str(scenario), "--out", str(path), "--set", f"damping.eta={eta}"]) == 0
        with h5py.File(path) as f:
            assert f["frf/damping/eta"][()] == float(eta) and f["frf/damping/eta"].attrs["units"] == "1"
    assert run_labels([read_result(p) for p in paths], paths) == ["damping.eta=0.05", "damping.eta=0.1"]


def test_compare_errors_are_one_line(tmp_path, capsys):
    from sim.app.cli import main
    a = _run_file(tmp_path / "a.h5", [], 1e-5)
    assert main(["compare", str(a)]) == 2
    assert capsys.readouterr().err.strip() == "error: sim compare needs at least two result files"
    assert main(["compare", str(a), str(tmp_path / "missing.h5")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "missing.h5: result file not found" in err[0]


def test_deviation_in_readable_units_with_rotations_on_their_own_axis():
    import matplotlib.pyplot as plt
    from sim.app.plots import plot_deviation
    t = np.linspace(0.0, 1.0, 50)
    dev = np.column_stack([2e-5 * np.sin(t), 3e-5 * np.cos(t), 4e-4 * t])
    fig, ax = plt.subplots()
    try:
        plot_deviation(ax, t, dev, ["x", "y", "rz"], ["m", "m", "rad"])
        assert ax.get_ylabel() == "deviation [µm]" and ax.right.get_ylabel() == "deviation [µrad]"
        np.testing.assert_allclose(ax.get_lines()[0].get_ydata(), dev[:, 0] * 1e6)
        np.testing.assert_allclose(ax.right.get_lines()[0].get_ydata(), dev[:, 2] * 1e6)
        assert [t.get_text() for t in ax.get_legend().get_texts()] == ["x [µm]", "y [µm]", "rz [µrad]"]
    finally:
        plt.close(fig)


def test_incomplete_analysis_is_marked_in_its_panels(tmp_path):
    from sim.app.results import ResultFile
    path = tmp_path / "r.h5"
    try:
        with ResultFile(path, scenario='name = "r"\n', model_file="robot.py", model_parameters={}) as rf:
            g = rf.group("transient")
            g.put("time", np.linspace(0, 1, 5), "s", "time")
            g.put("deviation", np.zeros((5, 1)), "m", "deviation")
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    titles = [title for title, _ in _panels(read_result(path))]
    assert titles and all("INCOMPLETE (interrupted)" in t for t in titles)


def test_frequencies_along_the_motion_drawn_once():
    """A run with [frequencies] (tracked modes) and [ked] (ascending at each frozen instant):
    one frequency panel, the tracked one (issue 17: the 6-PSS figure showed both, numbered
    differently)."""
    t = {"data": np.linspace(0, 1, 4), "attrs": {}}
    f = {"data": np.ones((4, 2)), "attrs": {"units": "Hz"}}
    tree = {"attrs": {}, "frequencies": {"attrs": {}, "frequency_time": t, "frequencies": f},
            "ked": {"attrs": {}, "frequency_time": t, "frequencies": f}}
    titles = [title for title, _ in _panels(tree) if "natural frequencies" in title]
    assert titles == ["frequencies: natural frequencies (tracked by MAC)"]
    del tree["frequencies"]
    assert [title for title, _ in _panels(tree)] == ["ked: natural frequencies"]


def test_frequency_map_to_scale_with_contours_and_path():
    """The workspace map is drawn to scale, with labelled contours and the trajectory over it;
    the sensitivities are frequency changes for +10 % of each parameter, named in words."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sim.app.plots import _draw_map, _draw_sensitivities

    x, y = np.linspace(-0.2, 0.2, 9), np.linspace(-0.1, 0.1, 5)
    f = 90.0 - 100 * (x[:, None] ** 2 + y[None, :] ** 2)
    metres = {"units": "m", "description": "grid"}
    sweep = {"attrs": {"axes": ["x", "y"], "pose_names": ["x", "y", "z"]},
             "frequencies": {"data": f[..., None], "attrs": {"units": "Hz"}},
             "x": {"data": x, "attrs": metres}, "y": {"data": y, "attrs": metres}}
    path = np.column_stack([0.1 * np.cos(np.linspace(0, 6.3, 50)), 0.05 * np.sin(np.linspace(0, 6.3, 50)),
                            np.zeros(50)])
    tree = {"sweep": sweep, "ked": {"pose_rigid": {"data": path, "attrs": metres}}}
    fig, ax = plt.subplots()
    _draw_map(ax, sweep, tree)
    assert ax.get_aspect() == 1.0
    assert ax.collections and any(t.get_text() for t in ax.texts)           # contour labels
    drawn = [line for line in ax.lines if line.get_label() == "trajectory"]
    np.testing.assert_allclose(drawn[0].get_xydata(), path[:, :2])
    plt.close(fig)
    design = {"attrs": {"parameters": ["strut_radius"], "parameter_values": [0.025]},
              "sensitivities": {"data": np.array([[400.0], [200.0]]), "attrs": {"units": "Hz per parameter unit"}}}
    fig, ax = plt.subplots()
    _draw_sensitivities(ax, design)
    heights = [patch.get_height() for patch in ax.patches]
    np.testing.assert_allclose(heights, [1.0, 0.5])                          # 0.1 * 0.025 * df/dp
    assert ax.get_legend().get_texts()[0].get_text() == "strut radius (= 0.025)"
    plt.close(fig)


def test_plot_reads_only_what_it_draws_and_strides_long_series(tmp_path, monkeypatch):
    """Issue 16: a transient of 300 001 samples next to a dataset claiming 3e8 elements (a few
    KB compressed): `sim plot` draws the deviation every 4th sample, says so on the figure,
    and never reads the large dataset (reading it whole would be refused as damaged)."""
    import matplotlib.figure
    from sim.app import plots
    from sim.app.results import ResultFile, lazy_result
    path = tmp_path / "long.h5"
    t = np.linspace(0.0, 3.0, 300_001)
    with ResultFile(path, scenario='name = "r"\n', model_file="robot.py", model_parameters={}) as rf:
        g = rf.group("transient")
        g.attrs["pose_names"] = ["x"]
        g.put("time", t, "s", "time")
        g.put("deviation", 1e-4 * np.sin(40 * t)[:, None], "m", "pose - pose_rigid")
    with h5py.File(path, "a") as f:
        f["transient"].create_dataset("skeleton_points", shape=(100_000, 1000, 3), dtype=float,
                                      chunks=(1, 1000, 3), compression="gzip")
    drawn, texts = [], []
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig",
                        lambda fig, out, **kw: (drawn.extend(len(line.get_xdata()) for ax in fig.axes
                                                             for line in ax.get_lines()),
                                                texts.extend(x.get_text() for x in fig.texts)))
    plots.plot_result(path, tmp_path / "long.png")
    assert drawn and max(drawn) == 75_001 <= plots.PLOT_ROWS, drawn
    assert [x for x in texts if not x.startswith("How far")] == ["every 4th of 300001 samples drawn"]
    with lazy_result(path) as tree:
        assert tree["transient"]["skeleton_points"].shape == (100_000, 1000, 3)
        try:
            tree["transient"]["skeleton_points"]["data"]
        except plots.SimError as exc:
            assert "claims 3e+08 elements" in str(exc)
        else:
            raise AssertionError("a 3e8-element dataset was read whole")


def test_path_panel_only_where_the_deviation_is_small_against_the_path():
    """The path panel magnifies the deviation tenfold or more; a spinning beam's 0.4 m tip lag
    on a 10 m circle (two indistinguishable circles) gets none, a robot's 50 µm on 0.1 m does."""
    from sim.app.plots import _path_shows
    t = np.linspace(0.0, 2 * np.pi, 200)
    circle = lambda r: np.column_stack([r * np.cos(t), r * np.sin(t)])    # noqa: E731

    def group(radius, lag):
        rigid = circle(radius)
        return {"pose_rigid": {"data": rigid}, "pose": {"data": rigid + lag * np.column_stack([-np.sin(t), np.cos(t)])}}
    assert not _path_shows(group(10.0, 0.4))
    assert _path_shows(group(0.1, 5e-5))


def test_joint_forces_coloured_by_joint_and_styled_by_leg():
    """Issue 17: joints named <joint>_<leg> get one colour per joint and one line style per leg,
    with the two legends beside the axes (over the curves they hid them)."""
    import matplotlib.pyplot as plt
    from sim.app.plots import plot_joint_forces
    t = np.linspace(0.0, 1.0, 5)
    names = ["A_1", "B_1", "A_2", "B_2"]
    reactions = [np.full((5, 6), float(k)) for k in range(4)]
    fig, ax = plt.subplots()
    try:
        plot_joint_forces(ax, t, reactions, names)
        lines = ax.get_lines()
        assert [line.get_color() for line in lines] == ["C0", "C1", "C0", "C1"]
        assert [line.get_linestyle() for line in lines] == ["-", "-", "--", "--"]
        legends = [a for a in ax.get_children() if isinstance(a, plt.matplotlib.legend.Legend)]
        texts = sorted(tuple(t.get_text() for t in legend.get_texts()) for legend in legends)
        assert texts == [("A", "B"), ("leg 1", "leg 2")], texts
    finally:
        plt.close(fig)


def test_mode_shapes_of_a_planar_robot_are_drawn_in_its_plane():
    """A robot lying in a world plane: its in-plane modes on 2D axes of that plane, a mode
    that leaves the plane in 3D; a robot with depth always in 3D."""
    from sim.app.plots import mode_projection
    points = np.array([[0.0, 0.0, 0.0], [0.3, 0.0, 0.0], [0.6, 0.0, 0.2]])
    in_plane = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.1, 0.0, 2.0]])
    out_of_plane = np.array([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 2.0, 0.1]])
    assert mode_projection(points, in_plane) is None
    assert mode_projection(points, in_plane + [0.0, 0.005, 0.0]) is None        # 0.5 % out of plane
    assert mode_projection(points, out_of_plane) == "3d"
    assert mode_projection(points + [[0, 0, 0], [0, 0.1, 0], [0, 0, 0]], in_plane) == "3d"


def test_frf_legends_name_channels_in_words():
    from sim.app.plots import _channel
    assert _channel("displacement:knee_1_i:z") == "z displacement at knee_1_i"
    assert _channel("force:E:x") == "x force at E"
    assert _channel("odd") == "odd"


def test_mode_shapes_of_a_straight_robot_are_drawn_in_the_plane_of_their_motion():
    """A robot along a line (a hanging mast): a bending mode in 2D, in the plane of the mast
    and of the motion (x-z here, not y-z where it would not show)."""
    import matplotlib.pyplot as plt

    from sim.app.plots import mode_projection, plot_mode_shape
    points = np.column_stack([np.zeros(5), np.zeros(5), -np.linspace(0.0, 0.5, 5)])
    bending = np.column_stack([np.linspace(0.0, 1.0, 5) ** 2, np.zeros(5), np.zeros(5)])
    assert mode_projection(points, bending) is None
    fig, ax = plt.subplots()
    try:
        plot_mode_shape(ax, points, [[0, 1], [1, 2], [2, 3], [3, 4]], bending)
        assert (ax.get_xlabel(), ax.get_ylabel()) == ("x [m]", "z [m]")
    finally:
        plt.close(fig)


def test_frequency_map_keeps_its_colour_bar_beside_it():
    """A map drawn to scale in a wide panel shrinks to a square: its colour bar stays beside
    it (not at the panel's far edge), and the coordinate labels do not run together."""
    import matplotlib.pyplot as plt

    from sim.app.plots import plot_frequency_map
    x = y = np.linspace(-0.0625, 0.0625, 25)
    f = 140.0 + 1e3 * (x[:, None] ** 2 + y[None, :] ** 2)
    fig = plt.figure(figsize=(8, 3.2))      # a panel of the summary figure: a row of its grid
    ax = fig.add_subplot(fig.add_gridspec(1, 2)[0, :])
    try:
        plot_frequency_map(ax, x, y, f)
        fig.tight_layout()
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        (bar,) = [a for a in fig.axes + ax.child_axes if a is not ax]
        left, right = ax.get_window_extent(renderer), bar.get_window_extent(renderer)
        assert 0 < right.x0 - left.x1 < 0.02 * fig.bbox.width, "the colour bar is away from the map"
        middle = 0.5 * (left.x0 + right.x1)
        assert abs(middle - 0.5 * fig.bbox.width) < 0.05 * fig.bbox.width, "map and bar are not centred"
        boxes = [t.get_window_extent(renderer) for t in ax.get_xticklabels() if t.get_text()]
        assert len(boxes) >= 3 and all(a.x1 < b.x0 for a, b in zip(boxes, boxes[1:])), "tick labels overlap"
    finally:
        plt.close(fig)


def test_parameter_grid_draws_one_series_per_value_of_the_other_parameters():
    """A 3 x 2 grid (wall x support): the frequencies against the wall thickness, one line
    per mode and per support (not one line zig-zagging through all six cases)."""
    import matplotlib.pyplot as plt

    from sim.app.plots import _draw_parameter_sweep
    wall = np.array([1e-3, 1e-3, 2e-3, 2e-3, 3e-3, 3e-3])
    support = np.array(["clamped", "pinned"] * 3, dtype=object)
    f = np.column_stack([10.0 * wall / 1e-3 + (support == "pinned"), 50.0 + wall / 1e-3])
    group = {"attrs": {"parameters": ["wall", "support"], "results": ["modes.frequencies"]},
             "wall": {"data": wall, "attrs": {"units": "m"}}, "support": {"data": support, "attrs": {}},
             "ok": {"data": np.ones(6, dtype=bool)},
             "modes.frequencies": {"data": f, "attrs": {"units": "Hz"}}}
    fig, ax = plt.subplots()
    try:
        _draw_parameter_sweep(ax, group)
        drawn = [line for line in ax.get_lines() if len(line.get_xdata())]
        assert len(drawn) == 4, "two modes x two supports"
        for line in drawn:
            np.testing.assert_array_equal(line.get_xdata(), [1e-3, 2e-3, 3e-3])
        by_support = {(line.get_color(), line.get_linestyle()): line.get_ydata() for line in drawn}
        np.testing.assert_allclose(by_support[("C0", "-")], [10.0, 20.0, 30.0])     # mode 1, clamped
        np.testing.assert_allclose(by_support[("C0", "--")], [11.0, 21.0, 31.0])    # mode 1, pinned
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        assert legend == ["mode 1", "mode 2", "support = clamped", "support = pinned"]
    finally:
        plt.close(fig)


def test_a_deviation_at_round_off_is_drawn_as_zero():
    """A planar robot driven in its plane deviates out of it by round-off only (1e-16 m beside
    1e-7 m in the plane): that coordinate is drawn as the zero it is, at the scale of the
    largest deviation and labelled, not magnified into an oscillation; a small but real
    deviation (1e-3 of the largest) is drawn at its own scale."""
    import matplotlib.pyplot as plt

    from sim.app.plots import _draw_runs_deviation
    t = np.linspace(0.0, 1.0, 101)
    noise = 1e-16 * np.sin(300 * t)
    for small, flagged in ((noise, True), (1e-10 * np.sin(3 * t), False)):
        deviation = np.column_stack([1e-7 * np.sin(2 * t), small])
        tree = {"transient": {"time": {"data": t}, "deviation": {"data": deviation, "attrs": {"units": ["m", "m"]}}}}
        fig, (ax_x, ax_z) = plt.subplots(2)
        try:
            _draw_runs_deviation(ax_x, [tree], [""], 0, "x", legend=False)
            _draw_runs_deviation(ax_z, [tree], [""], 1, "z", legend=False)
            notes = [text.get_text() for text in ax_z.texts]
            assert ax_x.get_ylabel() == "x [nm]" and not ax_x.texts
            if flagged:
                assert ax_z.get_ylabel() == "z [nm]" and ax_z.get_ylim() == (-1.0, 1.0)
                assert notes and notes[0].startswith("zero to round-off: peak 1.0e-16 m"), notes
            else:
                assert not notes and ax_z.get_ylabel() == "z [nm]"
                assert 0.09 < max(abs(v) for v in ax_z.get_ylim()) < 0.2, ax_z.get_ylim()   # 0.1 nm peak, in view
        finally:
            plt.close(fig)


def test_frf_on_a_log_grid_is_drawn_on_a_log_axis():
    """`spacing = "log"`: both FRF panels have a log frequency axis (a decade per division,
    as the grid was made); a linear grid keeps a linear axis."""
    import matplotlib.pyplot as plt

    from sim.app.plots import _draw_frf
    for grid, scale in ((np.geomspace(10.0, 1000.0, 50), "log"), (np.linspace(10.0, 1000.0, 50), "linear")):
        H = (1.0 / (100.0**2 - grid**2 + 2j * 0.02 * 100.0 * grid))[:, None, None]
        group = {"frequency": {"data": grid, "attrs": {"units": "Hz"}},
                 "H_real": {"data": H.real, "attrs": {"units": "m/N"}}, "H_imag": {"data": H.imag, "attrs": {}},
                 "attrs": {"inputs": ["force:P:x"], "outputs": ["displacement:P:x"], "input_units": ["N"],
                           "output_units": ["m"]}}
        fig, (a, b) = plt.subplots(2)
        try:
            _draw_frf(a, group)
            _draw_frf(b, group, phase=True)
            assert a.get_xscale() == b.get_xscale() == scale
        finally:
            plt.close(fig)


def test_crowded_3d_tick_labels_are_thinned_until_they_stand_apart():
    """A long axis in a small 3D panel (a 3-PRS head's mode shape, seen along x): its five
    labels ran together ("-0.080.000.080.160.24"); fewer, apart, and at least two, remain."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator
    from sim.app.animate import setup_axes
    from sim.app.plots import spread_ticks

    def labels(ax, axis):
        renderer = fig.canvas.get_renderer()
        low, high = sorted(axis.get_view_interval())
        return [t.label1.get_window_extent(renderer) for t, loc in zip(axis.majorTicks, axis.get_majorticklocs())
                if low <= loc <= high and t.label1.get_text()]

    fig = plt.figure(figsize=(1.8, 1.8), dpi=120)
    try:
        ax = fig.add_subplot(projection="3d")
        setup_axes(ax, np.array([-0.25, -0.16, 0.0]), np.array([0.25, 0.32, 0.33]), view=(20.0, -10.0))
        ax.yaxis.set_major_locator(MaxNLocator(5))
        ax.draw(fig.canvas.get_renderer())
        before = labels(ax, ax.yaxis)
        assert any(a.overlaps(b) for a, b in zip(before, before[1:])), "the case crowds its labels"
        spread_ticks(ax)
        after = labels(ax, ax.yaxis)
        assert 2 <= len(after) < len(before)
        assert not any(a.padded(1.0).overlaps(b) for a, b in zip(after, after[1:]))
    finally:
        plt.close(fig)


def test_a_path_in_angles_is_labelled_in_radians():
    """A tilting head follows a circle in (rx, ry): its path panel is in rad, to scale; a path
    mixing a length and an angle is not drawn to one scale."""
    import matplotlib.pyplot as plt
    from sim.app.plots import plot_path
    t = np.linspace(0.0, 2 * np.pi, 50)
    rigid = np.column_stack([0.1 * np.cos(t), 0.1 * np.sin(t), np.full(50, 0.3)])
    fig, (a, b) = plt.subplots(1, 2)
    try:
        plot_path(a, rigid, rigid + 1e-4, ("rx", "ry", "z"), ["rad", "rad", "m"])
        assert (a.get_xlabel(), a.get_ylabel(), a.get_aspect()) == ("rx [rad]", "ry [rad]", 1.0)
        plot_path(b, rigid, rigid + 1e-4, ("x", "rz"), ["m", "rad"])
        assert (b.get_xlabel(), b.get_ylabel(), b.get_aspect()) == ("x [m]", "rz [rad]", "auto")
    finally:
        plt.close(fig)


def test_frf_pairs_that_vanish_to_round_off_are_named_not_drawn():
    """A symmetric 3-RRR at its centre: y force moves x by 8.5e-19 m/N and turns the platform by
    2e-17 rad/N beside 1e-7 m/N: those pairs are listed as round-off, not drawn (their curves
    stretched the log axis over eleven decades); a small but real cross term (1e-4 of the
    largest) is drawn."""
    import matplotlib.pyplot as plt

    from sim.app.plots import _draw_frf, frf_roundoff
    grid = np.geomspace(10.0, 1000.0, 60)
    direct = 1.0 / (1e7 * (1 - (grid / 700.0) ** 2 + 0.04j * grid / 700.0))
    H = np.stack([np.stack([direct, 8e-12 * direct * np.exp(1j * grid)], axis=1),
                  np.stack([1e-4 * direct, 2e-10 * direct], axis=1)], axis=1)
    np.testing.assert_array_equal(frf_roundoff(H), [[False, True], [False, True]])
    group = {"frequency": {"data": grid, "attrs": {"units": "Hz"}},
             "H_real": {"data": H.real, "attrs": {"units": ["m/N", "m/N", "rad/N", "rad/N"]}},
             "H_imag": {"data": H.imag, "attrs": {}},
             "attrs": {"inputs": ["force:P:x", "force:P:y"], "outputs": ["displacement:P:x", "pose:rz"]}}
    fig, (a, b) = plt.subplots(2)
    try:
        _draw_frf(a, group)
        _draw_frf(b, group, phase=True)
        drawn = [line.get_label() for line in a.get_lines() if not line.get_label().startswith("_")]
        assert drawn == ["x displacement at P per x force at P [m/N]", "end-effector rz per x force at P [rad/N]"]
        assert [line.get_label() for line in b.get_lines()] == drawn
        note = " ".join(t.get_text() for t in a.texts).replace("\n", " ")
        assert note.startswith("zero to round-off, not drawn: x displacement at P per y force at P [m/N] (peak")
        assert "end-effector rz per y force at P [rad/N]" in note
        assert a.get_ylim()[0] > 1e-13
    finally:
        plt.close(fig)


def test_summary_text_in_readable_units_and_round_off_in_si():
    """The run summary prints a deviation as the figures scale it (34.1 µm), and a round-off
    (a planar robot's out-of-plane deviation, 1e-16 m) in SI, not as 1e-07 nm."""
    from sim.analyses import Quantity
    from sim.app.units import summary_text

    assert summary_text(Quantity(3.41e-5, "m")) == "34.1 µm"
    assert summary_text(Quantity(4.2e-9, "rad")) == "4.2 nrad"
    assert summary_text(Quantity(2.741e-16, "m")) == "2.741e-16 m"
    assert summary_text(Quantity(0.0, "m")) == "0 m"
