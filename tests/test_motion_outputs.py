"""The transient's end-effector velocity and acceleration, the flexible robot's actuator forces
and the position/velocity/acceleration sensors on markers (issue 43), checked against the
circle's closed form, finite differences of the stored positions and the rigid inverse
dynamics."""
from pathlib import Path

import h5py
import numpy as np
import pytest

from sim.app.cli import main

ROOT = Path(__file__).resolve().parent.parent
OMEGA, RADIUS, RAMP = 12.566370614359172, 0.03, 0.25     # scenarios/five_bar_circle.toml


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("motion") / "five_bar.h5"
    assert main(["run", str(ROOT / "scenarios/five_bar_circle.toml"), "--out", str(out),
                 "--set", "trajectory.duration=0.5", "--set", "inverse_dynamics.samples=201",
                 "--set", 'transient.marker_sensors={position=["P_1"], velocity=["P_1"], acceleration=["P_1"]}']) == 0
    with h5py.File(out) as f:
        g = f["transient"]
        data = {name: g[name][...] for name in ("time", "pose", "velocity", "acceleration", "actuator_forces")}
        data.update({name: g[f"sensors/P_1_{name}"][...] for name in ("position", "velocity", "acceleration")})
        data["units"] = {name: list(g[name].attrs["units"]) for name in ("velocity", "acceleration")}
        data["sensor_units"] = g["sensors/P_1_acceleration"].attrs["units"]
        data["force_units"] = list(g["actuator_forces"].attrs["units"])
        data["id_time"] = f["inverse_dynamics/time"][...]
        data["id_forces"] = f["inverse_dynamics/actuator_forces"][...]
    return data


def test_sensor_velocity_and_acceleration_are_the_derivatives_of_the_position(run):
    t = run["time"]
    # central differences: error ~ v omega^2 h^2 / 6 = 0.4 um/s at h = 0.2 ms, and the tubes' vibration
    fd_v = np.gradient(run["position"], t, axis=0)[1:-1]
    assert np.abs(fd_v - run["velocity"][1:-1]).max() < 1e-5 * np.abs(run["velocity"]).max()
    fd_a = np.gradient(run["velocity"], t, axis=0)[1:-1]
    assert np.abs(fd_a - run["acceleration"][1:-1]).max() < 2e-3 * np.abs(run["acceleration"]).max()
    assert run["sensor_units"] == "m/s^2"
    # the end effector's coordinates x, y, z are marker P_1's origin: the same numbers
    np.testing.assert_allclose(run["pose"], run["position"], rtol=0, atol=1e-12)


def test_end_effector_velocity_and_acceleration_on_the_circle(run):
    t, v, a = run["time"], run["velocity"], run["acceleration"]
    assert run["units"] == {"velocity": ["m/s"] * 3, "acceleration": ["m/s^2"] * 3}
    full = t > RAMP + 0.01          # at full speed: |v| = omega r, |a| = omega^2 r (centripetal)
    speed = np.linalg.norm(v[full, :2], axis=1)
    np.testing.assert_allclose(speed, OMEGA * RADIUS, rtol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(a[full, :2], axis=1), OMEGA**2 * RADIUS, rtol=2e-3)
    np.testing.assert_allclose(np.gradient(run["pose"], t, axis=0)[1:-1], v[1:-1], rtol=0, atol=1e-5 * speed.max())


def test_flexible_actuator_forces_follow_the_rigid_inverse_dynamics(run):
    """The tubes deflect by 0.1 um: the driving torques are the rigid robot's to 1 % of their peak
    (the tubes' vibration on top)."""
    assert run["force_units"] == ["N m", "N m"]
    rigid = np.column_stack([np.interp(run["time"], run["id_time"], f) for f in run["id_forces"].T])
    peak = np.abs(rigid).max()
    assert peak > 0.1
    assert np.abs(run["actuator_forces"] - rigid).max() < 0.01 * peak


def test_unknown_marker_is_refused_before_any_file(tmp_path, capsys):
    out = tmp_path / "x.h5"
    code = main(["run", str(ROOT / "scenarios/five_bar_circle.toml"), "--out", str(out),
                 "--set", 'transient.marker_sensors={velocity=["nowhere"]}'])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "no marker 'nowhere'" in err[0] and "[transient]" in err[0]
    assert not out.exists()
