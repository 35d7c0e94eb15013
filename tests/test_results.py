"""Result files: atomic writes, incomplete marking, mandatory units, reading back."""

import json

import h5py
import numpy as np
import pytest
from numpy.testing import assert_allclose

from sim.errors import SimError
from sim.app.results import ResultFile, describe, read_result

TOML = 'name = "a"\n'


def result_file(path, force=False):
    return ResultFile(path, scenario=TOML, model_file="/models/robot.py",
                      model_parameters={"n": 2}, force=force)


def write_modes(rf):
    group = rf.group("modes")
    group.put("frequencies", np.array([44.1, 53.9]), "Hz", "natural frequencies")
    group.put("pose", np.zeros(3), ["m", "m", "rad"], "end-effector pose")
    return group


def test_nothing_on_disk_until_the_run_ends(tmp_path):
    """The file is built in memory and appears whole, in one rename, when the block ends."""
    path = tmp_path / "a.h5"
    with result_file(path) as rf:
        write_modes(rf)
        assert list(tmp_path.iterdir()) == [], "nothing is written before the end"
    assert path.exists() and rf.written == path
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.h5"], "no temporary file left"


def test_root_attributes(tmp_path):
    path = tmp_path / "a.h5"
    with result_file(path) as rf:
        write_modes(rf)
    attrs = read_result(path)["attrs"]
    assert attrs["scenario"] == TOML
    assert json.loads(attrs["model_parameters"]) == {"n": 2}
    assert attrs["format_version"] == 1
    assert attrs["model_file"] == "/models/robot.py"
    assert {"sim_version", "created"} <= set(attrs)


def test_group_complete_with_wall_time(tmp_path):
    path = tmp_path / "a.h5"
    with result_file(path) as rf:
        write_modes(rf).finish()
    attrs = read_result(path)["modes"]["attrs"]
    assert attrs["status"] == "complete" and attrs["wall_time_s"] >= 0


def test_every_dataset_has_units_and_description(tmp_path):
    path = tmp_path / "a.h5"
    with result_file(path) as rf:
        group = write_modes(rf)
        group.put("joint_reactions/B1", np.zeros((4, 6)), "N, N m", "reaction wrench at B1")
    with h5py.File(path, "r") as f:
        datasets = []
        f.visititems(lambda name, obj: datasets.append(obj)
                     if isinstance(obj, h5py.Dataset) else None)
        assert len([d for d in datasets if not d.is_scale]) == 3
        assert all("units" in d.attrs and "description" in d.attrs for d in datasets), "a scale without units"


@pytest.mark.parametrize("units, description", [("", "x"), (None, "x"), ("m", ""),
                                                (["m", ""], "x")])
def test_put_requires_units_and_description(tmp_path, units, description):
    with result_file(tmp_path / "a.h5") as rf:
        group = rf.group("modes")
        with pytest.raises(ValueError):
            group.put("x", np.zeros(2), units, description)


def test_exception_before_any_group_leaves_no_file(tmp_path):
    path = tmp_path / "a.h5"
    with pytest.raises(SimError):
        with result_file(path):
            raise SimError("a.toml: [ked] intervals must be a positive integer, got -3")
    assert list(tmp_path.iterdir()) == [], "no result and no partial file"


def test_exception_midway_marks_incomplete(tmp_path):
    path = tmp_path / "a.h5"
    with pytest.raises(SimError):
        with result_file(path) as rf:
            write_modes(rf).finish()
            rf.group("ked")
            raise SimError("Newton diverged\nat t = 0.25 s")
    tree = read_result(path)
    assert tree["modes"]["attrs"]["status"] == "complete", "finished group stays complete"
    assert tree["ked"]["attrs"]["status"] == "incomplete"
    assert tree["ked"]["attrs"]["message"] == "Newton diverged; at t = 0.25 s"
    assert tree["attrs"]["status"] == "incomplete"


def test_keyboard_interrupt_marks_incomplete(tmp_path):
    path = tmp_path / "a.h5"
    with pytest.raises(KeyboardInterrupt):
        with result_file(path) as rf:
            rf.group("transient").put("time", np.arange(3.0), "s", "output instants")
            raise KeyboardInterrupt
    assert read_result(path)["transient"]["attrs"]["message"] == "interrupted"


def test_failure_before_any_dataset_leaves_no_file(tmp_path):
    # e.g. an unreachable [modes] pose: the group exists but holds nothing worth keeping
    path = tmp_path / "a.h5"
    with pytest.raises(SimError):
        with result_file(path) as rf:
            rf.group("modes")
            raise SimError("a.toml: [modes] pose (x, y, theta) = [0.5, 0, 0] is outside the workspace")
    assert list(tmp_path.iterdir()) == [], "no result and no partial file"


def test_readable_with_xarray(tmp_path):
    """Every axis has a named dimension (HDF5 dimension scales): xarray opens each group without
    phony dimensions, with ``time`` (or ``frequency_time`` for the modes' datasets) and the
    end-effector coordinate names as coordinates."""
    xr = pytest.importorskip("xarray")
    pytest.importorskip("h5netcdf")
    path = tmp_path / "a.h5"
    with result_file(path) as rf:
        write_modes(rf)
        g = rf.group("ked")
        g.attrs["pose_names"] = ["x", "y"]
        g.put("time", np.linspace(0.0, 1.0, 5), "s", "interval ends")
        g.put("frequency_time", np.linspace(0.05, 0.95, 5), "s", "frozen instants")
        g.put("deviation", np.arange(10.0).reshape(5, 2), ["m", "m"], "pose - pose_rigid")
        g.put("frequencies", np.ones((5, 3)), "Hz", "frequencies")
        g.put("joint/A", np.zeros((5, 6)), "N", "wrench")
    with xr.open_dataset(path, group="modes", engine="h5netcdf") as ds:
        np.testing.assert_array_equal(ds["frequencies"].values, read_result(path)["modes"]
                                      ["frequencies"]["data"])
        assert ds["frequencies"].attrs["units"] == "Hz" and ds.attrs["status"] == "complete"
    with xr.open_dataset(path, group="ked", engine="h5netcdf") as ds:
        assert ds["deviation"].dims == ("time", "coordinate")
        np.testing.assert_array_equal(ds["time"].values, np.linspace(0.0, 1.0, 5))
        assert list(ds["coordinate"].values) == ["x", "y"]
        assert ds["frequencies"].dims == ("frequency_time", "mode")
        assert list(ds["deviation"].attrs["units"]) == ["m", "m"]
        assert not any(d.startswith("phony") for d in ds.sizes)


def test_explicit_status_kept(tmp_path):
    path = tmp_path / "a.h5"
    with result_file(path) as rf:
        group = rf.group("transient")
        group.set_status("incomplete", "Newton diverged at t = 0.25 s")
    attrs = read_result(path)["transient"]["attrs"]
    assert (attrs["status"], attrs["message"]) == ("incomplete", "Newton diverged at t = 0.25 s")


def test_existing_file_not_overwritten(tmp_path):
    path = tmp_path / "a.h5"
    path.write_bytes(b"keep")
    with pytest.raises(SimError, match="exists; use --force or --out"):
        with result_file(path):
            pass
    assert path.read_bytes() == b"keep"


def test_force_overwrites(tmp_path):
    path = tmp_path / "a.h5"
    path.write_bytes(b"old")
    with result_file(path, force=True) as rf:
        write_modes(rf)
    assert_allclose(read_result(path)["modes"]["frequencies"]["data"], [44.1, 53.9],
                    err_msg="frequencies read back")


def test_output_directory_created(tmp_path):
    path = tmp_path / "results" / "a.h5"
    with result_file(path) as rf:
        write_modes(rf)
    assert path.exists()


def test_per_column_units_read_back(tmp_path):
    path = tmp_path / "a.h5"
    with result_file(path) as rf:
        write_modes(rf)
    assert read_result(path)["modes"]["pose"]["attrs"]["units"] == ["m", "m", "rad"]


def test_describe_lists_groups_and_datasets(tmp_path):
    path = tmp_path / "a.h5"
    with result_file(path) as rf:
        group = write_modes(rf)
        group.attrs["body_names"] = ["link1", "link2"]
        group.attrs["damping_ratio"] = np.array([0.0, 0.02])
    text = describe(path)
    assert "[modes] complete" in text and "frequencies" in text and "[Hz]" in text
    assert "body_names" in text
    assert "@damping_ratio = [0.0, 0.02]" in text, "numbers as numbers, not numpy reprs"


def test_read_rejects_non_hdf5(tmp_path):
    path = tmp_path / "a.h5"
    path.write_text("not hdf5")
    with pytest.raises(SimError, match="not an HDF5 file"):
        read_result(path)


def test_transient_result_opens_in_xarray_with_time(tmp_path):
    """A real run: the transient group opens in xarray with a ``time`` coordinate, the first
    dimension of ``deviation`` (issue 17)."""
    xr = pytest.importorskip("xarray")
    pytest.importorskip("h5netcdf")
    from pathlib import Path

    from sim.app.cli import main
    scenario = Path(__file__).resolve().parent.parent / "scenarios" / "slider_crank_simeon.toml"
    out = tmp_path / "r.h5"
    assert main(["run", str(scenario), "--out", str(out)]) == 0
    with xr.open_dataset(out, group="transient", engine="h5netcdf") as ds:
        assert "time" in ds.coords and ds["deviation"].dims[0] == "time"
        assert ds["time"].attrs["units"] == "s" and ds.sizes["time"] == ds["deviation"].shape[0]
        assert not any(d.startswith("phony") for d in ds.sizes)


def test_axes_with_named_entries(tmp_path):
    """The axes whose entries have names carry them: a joint reaction's wrench (fx .. mz), the
    transient's energy parts, and the frequencies' tracks (MAC rows, mode order) against the
    ascending modes (MAC columns): no anonymous index axes there."""
    xr = pytest.importorskip("xarray")
    pytest.importorskip("h5netcdf")
    import arm_model
    from sim.app.cli import main
    scenario = tmp_path / "arm.toml"
    scenario.write_text(arm_model.scenario(0.1, "[inverse_dynamics]\nsamples = 11\n[frequencies]\ncount = 2\n"
                                                "samples = 5\n[transient]\nstep = 1e-3\n"))
    out = tmp_path / "r.h5"
    assert main(["run", str(scenario), "--out", str(out)]) == 0
    with xr.open_dataset(out, group="inverse_dynamics/joint_reactions", engine="h5netcdf") as ds:
        for name in ds.data_vars:
            assert ds[name].dims == ("time", "wrench"), name
        assert list(ds["wrench"].values) == ["fx", "fy", "fz", "mx", "my", "mz"]
    with xr.open_dataset(out, group="transient", engine="h5netcdf") as ds:
        assert ds["energy_parts"].dims == ("time", "energy_part")
        assert list(ds["energy_part"].values) == ["kinetic", "gravitational", "elastic"]
    with xr.open_dataset(out, group="frequencies", engine="h5netcdf") as ds:
        assert ds["mac"].dims == ("frequency_time", "track", "ascending")
        assert ds["mode_order"].dims == ("frequency_time", "track")
        assert ds.sizes["track"] == ds.sizes["ascending"] == 4 and ds.sizes["mode"] == 2    # two extra modes
