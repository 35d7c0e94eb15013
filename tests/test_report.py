"""`sim report` (issue 43): one self-contained HTML page per run, rendered in headless
Chromium; the Python API's plot, animate, report and static_deflection; short reprs; units of
the netCDF view's coordinates."""
import re
import shutil
import subprocess
from pathlib import Path

import h5py
import numpy as np
import pytest

import sim
from sim.app.cli import main

ROOT = Path(__file__).resolve().parent.parent
SECTIONS = ("scenario", "analyses", "analysis-transient", "analysis-ked", "analysis-inverse_dynamics", "warnings",
            "figures", "figure-deviation", "figure-motion", "figure-forces", "animation", "provenance")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A short five-bar run: inverse dynamics, KED and the transient with a marker sensor."""
    out = tmp_path_factory.mktemp("report") / "five_bar.h5"
    assert main(["run", str(ROOT / "scenarios/five_bar_circle.toml"), "--out", str(out),
                 "--set", "trajectory.duration=0.3", "--set", "inverse_dynamics.samples=61",
                 "--set", 'transient.marker_sensors={velocity=["P_1"]}']) == 0
    return out


def chromium(page, tmp_path, script):
    """The DOM of ``page`` after Chromium ran ``script`` (appended to the body) on load."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("chromium is not installed (apt-get install chromium; .ci/run installs it when it can)")
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", f"<script>{script}</script></body>"),
                     encoding="utf-8")
    done = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           f"--user-data-dir={tmp_path / 'chromium'}", "--virtual-time-budget=10000", "--dump-dom",
                           probe.as_uri()], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


# Waits for every image to load, then writes what decoded into the DOM.
CHECK_IMAGES = """
window.addEventListener('load', () => {
  const images = [...document.images];
  const marker = document.createElement('div');
  marker.id = 'probe';
  marker.dataset.images = images.length;
  marker.dataset.decoded = images.filter(i => i.complete && i.naturalWidth > 0).length;
  marker.dataset.gif = images.filter(i => i.src.startsWith('data:image/gif') && i.naturalWidth > 0).length;
  marker.dataset.remote = [...document.querySelectorAll('[src],[href]')].filter(
      e => /^(https?:)?\\/\\//.test(e.getAttribute('src') || e.getAttribute('href') || '')).length;
  document.body.appendChild(marker);
});
"""


def test_report_renders_every_section_in_a_browser(run, tmp_path, capsys):
    page = tmp_path / "page.html"
    assert main(["report", str(run), "--out", str(page)]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {page}"
    dom = chromium(page, tmp_path, CHECK_IMAGES)
    for section in SECTIONS:
        assert f'id="{section}"' in dom, section
    probe = re.search(r'<div id="probe" data-images="(\d+)" data-decoded="(\d+)" data-gif="(\d+)" '
                      r'data-remote="(\d+)"', dom)
    assert probe, "the page's script did not run"
    images, decoded, gif, remote = map(int, probe.groups())
    assert images >= 5 and decoded == images, (images, decoded)      # 4 figures and the animation
    assert gif == 1 and remote == 0
    # the summary as `sim run` printed it, in the analyses' tables; the provenance's machine
    with h5py.File(run) as f:
        assert "peak_deviation_z" in f["transient"].attrs["summary"]
    assert "peak_deviation_z" in dom and "µm" in dom and "machine: cpus" in dom


def test_report_errors_are_one_line_and_leave_no_page(tmp_path, capsys, run):
    missing = tmp_path / "none.h5"
    assert main(["report", str(missing), "--out", str(tmp_path / "a.html")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {missing}: result file not found"]
    bad = tmp_path / "bad.h5"
    bad.write_text("not hdf5")
    assert main(["report", str(bad), "--out", str(tmp_path / "b.html")]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"error: {bad}: not an HDF5 file"]
    assert main(["report", str(run), "--out", str(tmp_path / "c.png")]) == 2
    assert "an .html page" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.html")) and not list(tmp_path.glob(".*tmp"))


def test_api_plot_animate_report(run, tmp_path):
    import matplotlib.pyplot as plt
    figures = sim.plot(run)
    try:
        titles = [f._suptitle.get_text() for f in figures]
        assert len(figures) == 4 and titles[0].startswith("How far does the end effector")
        # a screen's worth: no figure taller or wider than 1600 pixels
        assert all(f.get_size_inches().max() * f.dpi <= 1600 for f in figures)
    finally:
        for f in figures:
            plt.close(f)
    written = sim.plot(run, out=tmp_path / "r.png")
    assert [k for k, _ in written] == ["deviation", "frequencies", "motion", "forces"]
    assert all(p.read_bytes().startswith(b"\x89PNG") for _, p in written)
    assert written[1][1] == tmp_path / "r-frequencies.png"
    gif = sim.animate(run, out=tmp_path / "a.gif", frames=5)
    assert gif.read_bytes().startswith(b"GIF8")
    page = sim.report(run, out=tmp_path / "r.html", animation=False)
    text = page.read_text(encoding="utf-8")
    assert text.count("data:image/png;base64,") == 4 and "data:image/gif" not in text
    with pytest.raises(sim.SimError, match="result file not found"):
        sim.report(tmp_path / "none.h5")


def test_static_deflection_of_a_cantilever_against_closed_forms():
    """Tip deflection under a tip force P L^3 / (3 E I) and under its own weight
    q L^4 / (8 E I) (cubic beam elements: exact at the nodes)."""
    E, width, height, rho, g, P = 2.1e11, 0.02, 0.01, 7800.0, 9.81, 10.0
    I = width * height**3 / 12
    robot = sim.load_model(ROOT / "models/beam.py", gravity=g)
    result = sim.static_deflection(robot, load=[0.0, 0.0, -P])
    assert result.pose_names == ("x", "y", "z")
    np.testing.assert_allclose(result.gravity[2], -rho * width * height * g / (8 * E * I), rtol=1e-9)
    np.testing.assert_allclose(result.load[2], -P / (3 * E * I), rtol=1e-9)
    np.testing.assert_allclose(result.deflection, result.gravity + result.load, rtol=0, atol=1e-15)
    assert abs(result.deflection[:2]).max() < 1e-12
    # the tip marker moves as the end effector; the clamp does not
    np.testing.assert_allclose(result.markers["node8"], result.deflection, rtol=0, atol=1e-12)
    np.testing.assert_allclose(result.markers["node0"], 0.0, atol=1e-15)
    assert "z = -14.99 mm" in repr(result)
    with pytest.raises(sim.SimError, match="load: expected 3 finite numbers"):
        sim.static_deflection(robot, load=[1.0])


def test_short_reprs_and_units_of_coordinates(run):
    robot = sim.load_model(ROOT / "models/navaro.py")
    assert len(repr(robot)) < 300
    modes = sim.modes(robot, count=4)
    text = repr(modes)
    assert text.startswith("<modes result, complete") and len(text.splitlines()) <= 1 + 2 * 8 + 1
    figures = sim.plot(modes)           # a result in memory draws too
    import matplotlib.pyplot as plt
    assert len(figures) == 1 and any(ax.name == "3d" or ax.get_title().startswith("modes: mode 1") for ax in
                                     figures[0].axes)
    assert "moves" in figures[0].axes[0].get_title() or "motion" in figures[0].axes[0].get_title()
    plt.close(figures[0])
    data = sim.open_results(run, "transient")
    assert data["coordinate"].attrs["units"] == "m"            # "coordinate = x [m]", not "[1]"
    assert data["deviation"].attrs["units"] == "m"
    assert data["actuator_forces"].attrs["units"] == "N m" and list(data["actuator"].values) == ["theta_1",
                                                                                                  "theta_2"]


def _synthetic(path, duration=5.0, rate=2000, hz=65.0):
    """A transient and a KED of one coordinate x over ``duration`` [s]: a 1 mm, 0.5 Hz drift and
    a 0.2 mm vibration at ``hz`` (KED's 10 % smaller), and their paths in x-y."""
    from sim.app.results import ResultFile
    t = np.linspace(0.0, duration, int(duration * rate) + 1)
    with ResultFile(path, scenario='name = "s"\n', model_file="robot.py", model_parameters={}) as rf:
        for name, share in (("ked", 0.9), ("transient", 1.0)):
            g = rf.group(name)
            g.attrs["pose_names"] = ["x", "y"]
            g.put("time", t, "s", "time")
            deviation = 1e-3 * np.sin(np.pi * t) + share * 200e-6 * np.sin(2 * np.pi * hz * t) * (1 + (t > 3) * (t < 3.4))
            d = np.column_stack([deviation, 0.5 * deviation])
            rigid = 0.1 * np.column_stack([np.cos(t), np.sin(t)])
            g.put("deviation", d, ["m", "m"], "pose - pose_rigid")
            g.put("pose_rigid", rigid, ["m", "m"], "rigid")
            g.put("pose", rigid + 1e-3 * d, ["m", "m"], "flexible")
    return t


def test_deviation_figure_overlays_envelopes_difference_and_the_worst_second(tmp_path):
    """Issue 43: a 65 Hz vibration over 5 s is drawn as its envelope (min and max per span,
    checked against the samples), the transient minus KED has its own panel, the worst second is
    the one holding the largest deviation, and the path is drawn once."""
    from sim.app import plots
    from sim.app.results import read_result
    path = tmp_path / "s.h5"
    t = _synthetic(path)
    vibration = 200e-6 * np.sin(2 * np.pi * 65 * t)
    assert plots.dense(1e-3 * np.sin(np.pi * t) + vibration)
    assert not plots.dense(1e-3 * np.sin(np.pi * t)) and not plots.dense(1e-3 * np.sin(2 * np.pi * 3 * t))
    centre, low, high = plots.envelope(t, vibration, bins=50)
    span = (t >= centre[7] - 0.05) & (t < centre[7] + 0.05)
    assert low[7] == vibration[span].min() and high[7] == vibration[span].max()
    tree = read_result(path)
    titles = [title for title, _ in plots._panels(tree)]
    assert sum("path" in title for title in titles) == 1, titles
    assert any(title.startswith("deviation: transient − KED") for title in titles)
    window = plots.worst_window(tree["transient"])
    assert window[0] <= 3.0 + 0.4 and window[1] >= 3.0 and window[1] - window[0] == pytest.approx(1.0)
    written = plots.plot_result(path, tmp_path / "s.png")
    assert [key for key, _ in written] == ["deviation"]
    import matplotlib.pyplot as plt
    ((key, text, panels),) = plots.figures(tree)
    fig = plots.figure(tree, panels, text)
    try:
        width, height = fig.get_size_inches() * fig.dpi
        assert width <= 1600 and height <= 1100, (width, height)
        ax = fig.axes[0]           # deviation x: the transient's envelope band, KED's outline
        assert [c.get_label() for c in ax.collections] == ["transient (envelope)", "ked (envelope)"]
        legend = ax.get_legend().get_window_extent()
        assert legend.x0 >= ax.get_window_extent().x1, "the legend is beside the data"
    finally:
        plt.close(fig)
