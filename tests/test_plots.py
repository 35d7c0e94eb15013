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
    titles = [title for title, _ in _panels(read_result(out))]
    assert sum(t.startswith("modes: mode ") for t in titles) == 4, titles
    png = tmp_path / "navaro.png"
    assert main(["plot", str(out), "--out", str(png)]) == 0 and png.stat().st_size > 10_000
