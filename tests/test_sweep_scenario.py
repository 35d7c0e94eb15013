"""`[sweep]` parameter grids through `sim run`: one summary table, failures recorded, the same
numbers on the local pool and on a Dask `LocalCluster` (given with `--scheduler`)."""
import os
from pathlib import Path

import h5py
import numpy as np
import pytest

from sim.app.cli import main
from sim.errors import SimError
from sim.app.scenario import load_scenario

BEAM = Path(__file__).resolve().parent.parent / "models" / "beam.py"
MODULI = [7e10, 1.1e11, 2.1e11, -1.0, 3e11]   # E = -1 Pa must fail without stopping the sweep

SCENARIO = f"""\
name = "beam_lengths"
[model]
file = "{BEAM}"
parameters = {{ elements = 4 }}
[modes]
count = 3
[sweep]
analysis = "modes"
parameters = {{ E = {MODULI}, support = ["clamped-free", "pinned-pinned"] }}
"""


@pytest.fixture
def scenario(tmp_path):
    path = tmp_path / "sweep.toml"
    path.write_text(SCENARIO)
    return path


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def local(capsys, scenario, tmp_path):
    """The sweep through the default local pool: (exit code, stdout, h5 path)."""
    out = tmp_path / "local.h5"
    code, stdout, err = run(capsys, "run", scenario, "--out", out)
    assert code == 0, err
    return stdout, out


def columns(path):
    with h5py.File(path, "r") as f:
        group = f["sweep"]
        keys = [k for k in group if group[k].attrs.get("role") != "dimension"]   # not the netCDF dimensions
        return ({k: group[k][()] for k in keys}, {k: dict(group[k].attrs) for k in keys}, dict(group.attrs))


def test_parameter_grid_table(local):
    stdout, path = local
    data, attrs, group = columns(path)
    n = len(MODULI) * 2
    assert group["kind"] == "parameters" and group["analysis"] == "modes"
    assert list(group["parameters"]) == ["E", "support"]
    # Cartesian product, first parameter slowest
    np.testing.assert_array_equal(data["E"], np.repeat(MODULI, 2))
    assert [s.decode() for s in data["support"][:2]] == ["clamped-free", "pinned-pinned"]
    for name, values in data.items():
        assert len(values) == n, f"column {name} has {len(values)} rows, expected {n}"
        assert attrs[name]["units"] and attrs[name]["description"], f"{name} lacks units/description"
    assert data["modes.frequencies"].shape == (n, 3)
    assert "cases = 10, failed = 2" in stdout


def test_failed_cases_recorded_not_fatal(local):
    _, path = local
    data, _, _ = columns(path)
    bad = np.repeat(np.array(MODULI) < 0, 2)
    np.testing.assert_array_equal(data["ok"], ~bad)
    errors = [e.decode() for e in data["error"]]
    assert all("`E` must be positive" in e for e, b in zip(errors, bad) if b), errors
    assert all(e == "" for e, b in zip(errors, bad) if not b)
    assert np.isnan(data["modes.frequencies"][bad]).all()


def test_frequencies_scale_as_square_root_of_modulus(local):
    # K ~ E (G = E / (2 (1 + nu)) too), M fixed: every discrete frequency ~ sqrt(E), exactly.
    _, path = local
    data, _, _ = columns(path)
    ok = data["ok"]
    f, E = data["modes.frequencies"][ok], data["E"][ok][:, None]
    support = data["support"][ok]
    for s in set(support):
        rows = support == s
        scaled = f[rows] / np.sqrt(E[rows])
        np.testing.assert_allclose(scaled, np.broadcast_to(scaled[0], scaled.shape), rtol=1e-9)
    # pinned-pinned fundamental is (pi / 1.8751)^2 = 2.807 times the cantilever's (Blevins)
    pp, cf = f[support == b"pinned-pinned"][:, 0], f[support == b"clamped-free"][:, 0]
    np.testing.assert_allclose(pp / cf, (np.pi / 1.87510407) ** 2, rtol=2e-3)


def test_dask_scheduler_gives_identical_table(capsys, scenario, local, tmp_path):
    distributed = pytest.importorskip("distributed")
    _, path = local
    out = tmp_path / "dask.h5"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        code, _, err = run(capsys, "run", scenario, "--out", out,
                           "--scheduler", cluster.scheduler_address)
        pids = set(client.run(os.getpid).values())
    assert code == 0, err
    assert len(pids) == 2, "both workers must exist"
    a, _, _ = columns(path)
    b, _, group = columns(out)
    assert group["executor"].startswith("tcp://")
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=f"column {name} differs")


def test_unknown_parameter_is_refused_before_running(capsys, scenario, tmp_path):
    code, _, err = run(capsys, "run", scenario, "--out", tmp_path / "x.h5",
                       "--set", "sweep.parameters={rh=[1.0]}")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "no model parameter `rh`; did you mean `rho`?" in err
    with h5py.File(tmp_path / "x.h5", "r") as f:   # the [modes] group before it is kept
        assert f["sweep"].attrs["status"] == "incomplete"


def test_scheduler_without_sweep(capsys, tmp_path):
    path = tmp_path / "modes.toml"
    path.write_text(SCENARIO.split("[sweep]")[0])
    code, _, err = run(capsys, "run", path, "--out", tmp_path / "m.h5",
                       "--scheduler", "tcp://127.0.0.1:1")
    assert code == 2 and "--scheduler" in err and "no [sweep] table" in err
    assert not (tmp_path / "m.h5").exists()


@pytest.mark.parametrize("extra, message", [
    ('axes = ["x", "y"]\n', "has both `axes` (pose grid) and `parameters`"),
    ("count = 3\n", "count is not used by a parameter grid"),
    ('analysis = "mode"\n', "did you mean `modes`?"),
    ('schedular = "tcp://a:1"\n', "unknown key `sweep.schedular`; did you mean `sweep.scheduler`?"),
])
def test_sweep_table_errors(tmp_path, extra, message):
    path = tmp_path / "bad.toml"
    text = SCENARIO + extra
    if extra.startswith("analysis"):
        text = text.replace('analysis = "modes"\n', "")
    path.write_text(text)
    with pytest.raises(SimError) as info:
        load_scenario(path)
    assert message in str(info.value)


def test_parameter_grid_needs_analysis_table_defaults(tmp_path):
    path = tmp_path / "transient.toml"
    path.write_text(SCENARIO.replace('analysis = "modes"', 'analysis = "transient"')
                    .replace("[modes]\ncount = 3\n", "[modes]\n"))
    with pytest.raises(SimError) as info:
        load_scenario(path)
    assert "missing required key `transient.step`" in str(info.value)


def test_pose_grid_still_validates():
    scenario = load_scenario(Path(__file__).resolve().parent.parent / "scenarios" / "pss6_seismic.toml")
    assert scenario.data["sweep"] == {"axes": ["x", "y"], "x": [-0.2, 0.2, 50.0],
                                      "y": [-0.2, 0.2, 50.0],
                                      "pose": [0.0, 0.0, 1.744, 0.0, 0.0, 0.0], "count": 4}
