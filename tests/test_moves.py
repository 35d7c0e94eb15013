"""Point-to-point moves, input shapers and settling (issue 39).

References: the shapers' residual vibration on an undamped oscillator in closed form
(Singer and Seering 1990; Singhose et al. 1994), integrated independently here by scipy's
ODE solver; the profiles' own derivatives by finite differences; settling on a deviation whose
crossing of the tolerance is known; the KED against the full transient on the Delta of issue
39 and on the 3-RRRU (paper 001), which the feature was not designed on.
"""
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.integrate

from sim.app.cli import main
from sim.solvers import moves

ROOT = Path(__file__).resolve().parent.parent
DELTA = ROOT / "models" / "delta_pick.py"
ACROSS = dict(kind="point_to_point", waypoints=[[-0.1525, 0, -0.825], [0.1525, 0, -0.825]], move_time=0.2,
              dwell=0.8, settling_tolerance=1e-4)


def residual(law, f, duration):
    """Residual amplitude of ``x'' + w^2 x = -s''(t)`` (w = 2 pi f) after a rest-to-rest
    stroke ``law``, from rest: sqrt(x^2 + (x'/w)^2) at ``duration`` (free vibration after)."""
    w = 2 * np.pi * f
    sol = scipy.integrate.solve_ivp(lambda t, y: [y[1], -w**2 * y[0] - law(np.array([t]))[2][0]], (0.0, duration),
                                    [0.0, 0.0], method="DOP853", rtol=1e-10, atol=1e-13)
    x, v = sol.y[:, -1]
    return np.hypot(x, v / w)


# Closed forms of the residual ratio at frequency ratio r = f / f_s (the shaper's frequency).
CLOSED = {
    "zv": lambda r: np.abs(np.cos(np.pi * r / 2)),
    "zvd": lambda r: np.cos(np.pi * r / 2) ** 2,
    "ei": lambda r: np.abs((1 + moves.EI_TOLERANCE) / 2 * np.cos(np.pi * r) + (1 - moves.EI_TOLERANCE) / 2),
}


@pytest.mark.parametrize("kind", ["zv", "zvd", "ei"])
def test_shaper_residual_closed_forms(kind):
    """The shaped stroke's residual over the unshaped one's is V(f/f_s) of the closed form
    (ZV: |sin(pi eps / 2)| at a frequency error eps; ZVD, EI: their robustness curves), to
    1e-6 of the unshaped residual, over frequency errors of -30 % .. +30 %."""
    f_s, T = 20.0, 0.08            # Hz, s: a stroke shorter than two periods leaves a large residual
    base = moves.profile_law("quintic", T)
    for eps in (-0.3, 0.0, 0.1, 0.25):
        f = f_s * (1 + eps)
        A, t = moves.shaper_impulses(kind, f_s)
        shaped = moves.shaped_law(base, A, t)
        plain = residual(base, f, T + 0.1)
        ratio = residual(shaped, f, T + t[-1] + 0.1) / plain
        assert ratio == pytest.approx(CLOSED[kind](1 + eps), abs=1e-6), (kind, eps)
    # ZV at a frequency error eps: |sin(pi eps / 2)|; ZVD below 5 % within +-14 %; EI at most its
    # tolerance over a wider band (+-19.98 %: cos(pi r) = (3 V - 1)/(1 + V)) and exactly its tolerance at f_s.
    assert CLOSED["zv"](1.1) == pytest.approx(np.sin(np.pi * 0.1 / 2))
    assert CLOSED["zvd"](1.14) < 0.05 and CLOSED["zvd"](1.2) > 0.05
    assert CLOSED["ei"](1.0) == pytest.approx(moves.EI_TOLERANCE)
    assert max(CLOSED["ei"](r) for r in np.linspace(0.81, 1.19, 39)) <= moves.EI_TOLERANCE + 1e-12


@pytest.mark.parametrize("profile", moves.PROFILES)
def test_profiles_rest_to_rest(profile):
    """Each profile goes from 0 to 1 in T at rest at both ends; its rates are the derivatives
    of its position (finite differences); the trapezoid's and the S-curve's peaks are the
    documented v = 1/(T - t_a), a = v/t_a (trapezoidal) or v/(t_a - t_j) (jerk-limited)."""
    T, t_a, t_j = 0.3, 0.09, 0.03
    law = moves.profile_law(profile, T, t_a if profile in ("trapezoidal", "jerk_limited") else None,
                            t_j if profile == "jerk_limited" else None)
    t = np.linspace(-0.05, T + 0.05, 40001)
    s, sd, sdd = law(t)
    assert s[0] == 0 and s[-1] == pytest.approx(1.0, abs=1e-12)
    assert sd[0] == sd[-1] == 0 and sdd[0] == sdd[-1] == 0
    h = t[1] - t[0]
    assert np.abs(np.gradient(s, h) - sd).max() < 2e-3 * np.abs(sd).max()
    if profile != "trapezoidal":       # the trapezoid's acceleration jumps
        assert np.abs(np.gradient(sd, h) - sdd).max() < 2e-3 * np.abs(sdd).max()
    if profile in ("trapezoidal", "jerk_limited"):
        v = 1 / (T - t_a)
        assert sd.max() == pytest.approx(v, rel=1e-6)
        assert sdd.max() == pytest.approx(v / (t_a - (t_j if profile == "jerk_limited" else 0)), rel=1e-6)


def test_settling_of_a_known_decay():
    """A deviation decaying linearly from d0 after the move crosses the tolerance at
    tau (1 - tol/d0): settle_time from the move's start; inf when the dwell ends first, or
    within a period of the lowest mode of its end; NaN for a move without dwell."""
    W = np.array([[0.0, 0, 0], [0.1, 0, 0], [0.2, 0, 0], [0.3, 0, 0]])
    mv = moves.Moves(waypoints=W, start=np.array([0.0, 1.0, 1.5]), end=np.array([0.2, 1.2, 1.7]),
                     window=np.array([1.0, 1.2, 2.0]), shaper="none", shaper_frequency=np.full(3, np.nan),
                     tuning=("",) * 3, tolerance=1e-4, lowest_frequency=np.full(3, 20.0))
    t = np.linspace(0.0, 2.0, 20001)
    rigid = np.zeros((t.size, 3))         # ramps during the moves, at rest in the dwells
    rigid[:, 0] = np.interp(t, [0.0, 0.2, 1.0, 1.2, 1.5, 1.7], [0.0, 0.1, 0.1, 0.2, 0.2, 0.3])
    dev = np.zeros((t.size, 3))
    d0, tau = 1e-3, 0.5
    first = (t >= 0.2) & (t < 1.0)
    dev[first, 1] = d0 * np.clip(1 - (t[first] - 0.2) / tau, 0, None)
    last = t >= 1.7
    dev[last, 2] = 5e-4                               # never settles: a constant offset
    out = moves.settling(t, rigid, dev, ["m", "m", "m"], mv)
    assert out.settle_time[0] == pytest.approx(0.2 + tau * (1 - 1e-4 / d0), abs=1e-9)
    assert out.residual_amplitude[0] == pytest.approx(d0)
    assert np.isnan(out.settle_time[1]) and np.isnan(out.residual_amplitude[1])
    assert np.isinf(out.settle_time[2]) and out.residual_amplitude[2] == pytest.approx(5e-4)
    # Within the band for less than a period of the lowest mode (1/20 s) as the dwell ends: not settled.
    dev[(t >= 0.97) & (t < 1.0), 1] = 0.0
    dev[(t >= 0.2) & (t < 0.97), 1] = 5e-4
    assert np.isinf(moves.settling(t, rigid, dev, ["m", "m", "m"], mv).settle_time[0])
    dev[(t >= 0.9) & (t < 1.0), 1] = 0.0
    assert moves.settling(t, rigid, dev, ["m", "m", "m"], mv).settle_time[0] == pytest.approx(0.9, abs=1e-3)
    # An analysis stopped before the last dwell's end (a shorter transient.duration) says nothing of it.
    assert np.isnan(moves.settling(t[t < 1.9], rigid[t < 1.9], dev[t < 1.9], ["m", "m", "m"], mv).settle_time[2])


def test_point_to_point_law_and_shaped_length():
    """Waypoints reached at each move's end and held through the dwell; a ZVD shaper lengthens
    each move by 1/f; the duration covers the dwells."""
    import sim
    from sim.solvers.trajectory import from_scenario

    robot = sim.load_model(DELTA)
    spec = dict(kind="point_to_point", waypoints=[[0, 0, -0.8], [0.1, 0, -0.8], [0.1, 0.05, -0.82]],
                move_time=[0.15, 0.1], dwell=[0.2, 0.3], shaper="zvd", shaper_frequency=[25.0, 30.0])
    law = from_scenario(spec, robot)
    mv = law.moves
    assert mv.end - mv.start == pytest.approx([0.15 + 1 / 25, 0.1 + 1 / 30])
    assert law.duration == pytest.approx(0.15 + 1 / 25 + 0.2 + 0.1 + 1 / 30 + 0.3)
    for k in range(2):
        t = np.linspace(mv.end[k], mv.window[k], 7)
        x, xd, xdd = law(t)
        assert np.abs(x - spec["waypoints"][k + 1]).max() < 1e-12
        assert np.abs(xd).max() < 1e-12 and np.abs(xdd).max() < 1e-9


@pytest.fixture(scope="module")
def delta():
    import sim
    return sim.load_model(DELTA)


@pytest.mark.parametrize("robot, spec, zeta", [
    ("delta", ACROSS, 0.03),
    ("rrru3", dict(kind="point_to_point", waypoints=[[0, 0, -0.7], [0.1, 0, -0.7]], move_time=0.1, dwell=0.8,
                   settling_tolerance=2e-4), 0.03)])
def test_ked_and_transient_agree_on_settling(robot, spec, zeta, delta):
    """On the Delta of issue 39 and on the 3-RRRU (paper 001), the KED's settle_time is the
    transient's within 15 % and its residual_amplitude within 20 % (measured: 0.1 % and
    1.3 % on the Delta, 0.1 % and 1.2 % on the 3-RRRU; the transient converged: from h to
    h/2 the settle times move by 0.0 and 0.04 %, the residuals by 0.7 and 0.06 %)."""
    import sim

    model = delta if robot == "delta" else sim.load_model(ROOT / "models" / "rrru3.py", elements_per_link=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        k = sim.ked(model, spec, intervals=400, modes=6, damping=dict(ratio=zeta))
        t = sim.transient(model, spec, step=5e-4, damping=dict(ratio=zeta))
    for result in (k, t):
        assert result.units["settle_time"] == "s" and result.units["residual_amplitude"] == "m"
        assert np.isfinite(result.settle_time).all()
        assert result.move_end[0] == pytest.approx(spec["move_time"])
    assert k.settle_time[0] == pytest.approx(t.settle_time[0], rel=0.15)
    assert k.residual_amplitude[0] == pytest.approx(t.residual_amplitude[0], rel=0.20)
    assert k.settle_time[0] > spec["move_time"]        # it rings past the move: the test can fail


def test_auto_tuned_zvd_cuts_the_residual(delta):
    """The ZVD shaper tuned to the lowest mode the move excites at its end pose (found by the
    trajectory, not given) cuts the transient's residual vibration at least 20x on the Delta,
    whose two lowest modes stay within 23.5 .. 27.5 Hz over the move (+-8 %; measured 396 ->
    18.0 µm, 22x)."""
    import sim

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = sim.transient(delta, ACROSS, step=5e-4, damping=dict(ratio=0.03))
        shaped = sim.transient(delta, dict(ACROSS, shaper="zvd"), step=5e-4, damping=dict(ratio=0.03))
    f = shaped.shaper_frequency[0]
    # At the end pose the x-direction mode is mode 2 (mode 1 moves along y: the move leaves it alone).
    assert f == pytest.approx(sim.modes(delta, pose=ACROSS["waypoints"][1], count=2).frequencies[1], rel=1e-9)
    assert shaped.move_end[0] == pytest.approx(0.2 + 1 / f)
    assert plain.residual_amplitude[0] / shaped.residual_amplitude[0] >= 20.0
    assert shaped.summary["shaper"].startswith(f"zvd per move: {f:.4g} Hz (mode 2)")


CYCLE = f"""\
[model]
file = "{DELTA}"
[trajectory]
kind = "point_to_point"
waypoints = [[-0.1525, 0, -0.85], [-0.1525, 0, -0.825]]
move_time = 0.1
dwell = 0.2
[ked]
intervals = 100
modes = 4
"""


@pytest.mark.parametrize("change, fragments", [
    (("waypoints = [[-0.1525, 0, -0.85], [-0.1525, 0, -0.825]]", "waypoints = [[-0.1525, 0, -0.85]]"),
     ("`waypoints` needs at least two poses",)),
    (("waypoints = [[-0.1525, 0, -0.85], [-0.1525, 0, -0.825]]", "waypoints = [[-0.15, 0], [0.15, 0]]"),
     ("`waypoints`: each pose needs 3 values (x, y, z), got 2",)),
    (("[-0.1525, 0, -0.825]]", "[2.0, 0, -0.825]]"), ("`waypoints`[1]", "outside the workspace")),
    (("move_time = 0.1", "move_time = 0.0"), ("move_time must be a positive number",)),
    (("move_time = 0.1", "move_time = [0.1, 0.2]"), ("`move_time` needs one value or one per move (1), got 2",)),
    (("dwell = 0.2", "dwell = -0.2"), ("dwell must be a non-negative number",)),
    (("dwell = 0.2", "dwell = 0.2\nshaper = \"zvd\"\nshaper_frequency = 300.0"),
     ("trajectory.shaper_frequency = 300 Hz", "ked.intervals")),
    (("dwell = 0.2", "dwell = 0.2\nshaper = \"zv\"\nshaper_frequency = 30.0\n[transient]\nstep = 0.005"),
     ("trajectory.shaper_frequency = 30 Hz", "transient.step")),
    (("dwell = 0.2", "dwell = 0.2\njerk_time = 0.01"), ("`jerk_time` is used by profile",)),
    (("dwell = 0.2", "dwell = 0.2\nprofile = \"trapezoidal\"\nacceleration_time = 0.06"),
     ("`acceleration_time` must lie in (0, move_time/2]",)),
])
def test_bad_point_to_point_input(tmp_path, capsys, change, fragments):
    """One line `error: ...` naming the file and the key, exit 2, no traceback, no file."""
    refused(tmp_path, capsys, CYCLE.replace(*change), fragments)


def test_rigid_robot_shaper_needs_a_frequency(tmp_path, capsys):
    """A rigid robot (the 3-RRRT) has no mode to tune a shaper to: one line naming the key."""
    text = CYCLE.replace(str(DELTA), str(ROOT / "models" / "rrrt3.py")).replace(
        "[[-0.1525, 0, -0.85], [-0.1525, 0, -0.825]]", "[[0, 0, 0.8], [0.05, 0, 0.8]]").replace(
        "dwell = 0.2", "dwell = 0.2\nshaper = \"zvd\"").replace("[ked]\nintervals = 100\nmodes = 4",
                                                              "[inverse_dynamics]\nsamples = 20")
    refused(tmp_path, capsys, text, ("`shaper` needs `shaper_frequency`", "no elastic mode"))


def refused(tmp_path, capsys, text, fragments):
    """`sim run` on ``text``: exit 2, one line `error: ...` with ``fragments``, no file."""
    scenario = tmp_path / "p.toml"
    scenario.write_text(text)
    out = tmp_path / "out.h5"
    code = main(["run", str(scenario), "--out", str(out)])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    assert "p.toml" in lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert not out.exists()


STUDY = f"""\
[model]
file = "{DELTA}"
[trajectory]
kind = "point_to_point"
waypoints = [[-0.1525, 0, -0.825], [0.1525, 0, -0.825]]
move_time = 0.2
dwell = 0.8
[damping]
ratio = 0.03
[ked]
intervals = 200
modes = 4
[sweep]
analysis = "ked"
parameters = {{ "trajectory.move_time" = [0.15, 0.2, 0.25], "trajectory.shaper" = ["none", "zvd"] }}
workers = 1
"""


def test_motion_study_sweep_plot_and_compare(tmp_path):
    """A [sweep] over trajectory.move_time and trajectory.shaper: one row per case with the
    swept keys (s, and the shaper's name), each case's settle_time and residual_amplitude in
    SI units; shaping settles sooner at every move time; sim plot draws the settling and the
    study, sim compare overlays two runs' settling."""
    import h5py

    scenario = tmp_path / "study.toml"
    scenario.write_text(STUDY)
    out = tmp_path / "study.h5"
    assert main(["run", str(scenario), "--out", str(out)]) == 0
    with h5py.File(out) as f:
        g = f["sweep"]
        assert g["trajectory.move_time"].attrs["units"] == "s"
        assert [s.decode() for s in g["trajectory.shaper"][...]] == ["none", "zvd"] * 3
        assert g["ked.settle_time"].attrs["units"] == "s" and g["ked.residual_amplitude"].attrs["units"] == "m"
        settle = g["ked.settle_time"][...].reshape(3, 2)
        assert np.all(settle[:, 1] < settle[:, 0]), settle
        assert f["ked/settle_time"].attrs["description"] and f["ked/move_end"].attrs["units"] == "s"
    assert main(["plot", str(out), "--out", str(tmp_path / "study.png")]) == 0
    shaped = tmp_path / "shaped.h5"
    assert main(["run", str(scenario), "--out", str(shaped), "--set", "trajectory.shaper=zvd",
                 "--set", "sweep.parameters={ \"trajectory.move_time\" = [0.2] }"]) == 0
    assert main(["compare", str(out), str(shaped), "--out", str(tmp_path / "compare.png")]) == 0
    assert (tmp_path / "study.png").stat().st_size > 0 and (tmp_path / "compare.png").stat().st_size > 0


def test_never_settles_undamped_warns(delta):
    """Without damping the residual vibration never decays: settle_time is inf and the run
    warns "undamped", naming the move."""
    import sim

    spec = dict(ACROSS, dwell=0.3)
    with pytest.warns(UserWarning, match=r"ked: move 1 \(.* µm at the end of its dwell\) never settle.*undamped"):
        k = sim.ked(delta, spec, intervals=100, modes=4)
    assert np.isinf(k.settle_time[0]) and k.residual_amplitude[0] > 1e-4
    assert k.summary["cycle_settle_time"].value == np.inf
