"""Integrators of the constrained equations: order, period, energy (sim.solvers.integrators, sim.solvers.simulate)."""
import numpy as np
import pytest
from numba import njit
from numpy.testing import assert_allclose

from sim.kernels.common import _MXCSR, SUBNORMALS_OFF, fp_control, subnormals_off
from sim.solvers.integrators import METHODS, Options
from sim.model.kinematics import integrate
from sim import ModelBuilder
from sim.solvers.simulate import Drive, simulate

G = 9.81


def pendulum(theta0, length=0.5, mass=1.0, radius_of_gyration=0.05):
    """Compound pendulum on a revolute about z at the origin, released from ``theta0`` at rest.

    Small-amplitude closed form: ``theta = theta0 cos(omega t)``,
    ``omega^2 = m g L / (m k^2 + m L^2)``.
    """
    b = ModelBuilder("pendulum", gravity=(0.0, -G, 0.0))
    com = length * np.array([np.sin(theta0), -np.cos(theta0), 0.0])
    b.add_rigid_body("bob", mass, com, mass * radius_of_gyration**2 * np.eye(3))
    b.add_marker("pivot_ground", None, np.zeros(3))
    b.add_marker("pivot", "bob", np.zeros(3))
    b.add_marker("com", "bob", com)
    b.add_joint("pivot", "revolute", "pivot_ground", "pivot")
    b.set_end_effector("com", ("x", "y"))
    omega = np.sqrt(G * length / (radius_of_gyration**2 + length**2))
    return b.build(), omega, length


@pytest.mark.parametrize("method", sorted(METHODS))
def test_second_order_on_pendulum(method):
    theta0 = 1e-3            # nonlinear period shift theta0^2/16 ~ 6e-8, far below the errors
    model, omega, length = pendulum(theta0)
    t_end = 0.5
    hs = 1e-2 / 2.0 ** np.arange(4)
    errors = []
    for h in hs:
        res = simulate(model, model.q_home, np.zeros(model.n_v), t_end, h, Drive("free"),
                       Options(method=method, rho_inf=0.8, newton_tol=1e-14), output_step=t_end)
        x_exact = length * np.sin(theta0 * np.cos(omega * t_end))
        errors.append(abs(res.pose[-1, 0] - x_exact))
    order = np.polyfit(np.log(hs), np.log(errors), 1)[0]
    assert abs(order - 2.0) < 0.2, f"{method}: observed order {order:.2f}, errors {errors}"
    assert errors[-1] < 1e-6 * length * theta0 * 1e3, f"{method}: finest error {errors[-1]:.3g}"


def pinned_beam(elements=4):
    from sim.model.loader import load_model
    return load_model("models/beam.py", {"support": "pinned-pinned", "elements": elements})


def test_newmark_period_matches_modal_frequency():
    """Small free vibration of a pinned-pinned beam in its first mode: the Newmark period is
    the modal period lengthened by (omega h)^2 / 12 (average acceleration)."""
    from sim.solvers.modal import modes
    model = pinned_beam()
    mr = modes(model, model.q_home, count=1)
    omega = mr.omega[0]
    shape = mr.shapes[:, 0]
    q0 = integrate(model, model.q_home, 1e-6 * shape / np.abs(shape[model.v_elastic]).max())
    T = 2 * np.pi / omega
    h = T / 40
    res = simulate(model, q0, np.zeros(model.n_v), 3 * T, h, Drive("free"), Options(newton_tol=1e-16))
    y = res.q[:, model.q_elastic] @ shape[model.v_elastic]
    # Upward zero crossings, linearly interpolated.
    k = np.nonzero((y[:-1] < 0) & (y[1:] >= 0))[0]
    crossings = res.t[k] - y[k] * (res.t[k + 1] - res.t[k]) / (y[k + 1] - y[k])
    period = np.mean(np.diff(crossings))
    expected = T * (1 + (omega * h) ** 2 / 12)
    assert_allclose(period, expected, rtol=2e-3, err_msg="Newmark period vs modal period (1 + (wh)^2/12)")


def test_newmark_conserves_energy_of_free_flexible_beam():
    """Pinned-pinned beam released from a deformed state: average acceleration keeps the total
    energy (all elastic at t = 0) within 0.1 %."""
    from sim.solvers.modal import modes
    model = pinned_beam()
    mr = modes(model, model.q_home, count=3)
    shape = mr.shapes[:, 0] + 0.5 * mr.shapes[:, 2]
    q0 = integrate(model, model.q_home, 1e-4 * shape / np.abs(shape[model.v_elastic]).max())
    h = 0.05 / mr.omega[2]
    res = simulate(model, q0, np.zeros(model.n_v), 300 * h, h, Drive("free"), Options(newton_tol=1e-14),
                   output_step=10 * h)
    E = res.energy.sum(axis=1)
    assert res.status == "complete", res.message
    drift = np.abs(E - E[0]).max() / E[0]
    assert drift < 1e-3, f"energy drift {drift:.3g}"


@pytest.mark.parametrize("path, parameters", [("slider_crank.py", dict(elements=4, planar=True)), ("rrru3.py", {}),
                                              ("pss6.py", {}), ("five_bar.py", {})])
def test_row_columns_hold_every_nonzero_of_the_constraint_jacobian(path, parameters):
    """The step reads each row of ``J`` (joints and actuators) and of ``d gamma/dv`` on its
    primitive's markers' columns only (:func:`row_columns`): every nonzero must lie there, at
    states away from home (deformed, moving), and the pattern must be a small part of the row."""
    from pathlib import Path
    from sim.model.evaluator import Evaluator
    from sim.model.loader import load_model
    from sim.solvers.integrators import row_columns

    model = load_model(Path(__file__).parents[1] / "models" / path, parameters)
    ev = Evaluator(model)
    cols = row_columns(ev.tables, ev.n_rows)
    inside = np.zeros((ev.n_rows, model.n_v), dtype=bool)
    for r in range(ev.n_rows):
        inside[r, cols[r][cols[r] >= 0]] = True
    rng = np.random.default_rng(3)
    for _ in range(3):
        q = integrate(model, model.q_home, 0.05 * rng.standard_normal(model.n_v))
        E = ev.evaluate(q, rng.standard_normal(model.n_v), velocity_jacobian=True)
        J = np.vstack([E.J, E.J_s])
        Gg = np.vstack([E.gamma_v, np.zeros_like(E.J_s)])
        assert (J != 0).any(axis=1).all()
        assert not np.any((J != 0) & ~inside[: J.shape[0]])
        assert not np.any((Gg != 0) & ~inside[: J.shape[0]])
    assert inside.sum() < 0.5 * inside.size


def test_the_steps_split_into_calls_do_not_change_the_motion():
    """The step loop's compiled calls are sized by time (CALL_TIME), so they split the steps
    differently from run to run: 600 steps of a driven slider-crank taken in one call and in
    calls of 7 steps end in bitwise the same state (the drive sees the same instants)."""
    from sim.model.constraints import actuator_values
    from sim.model.evaluator import Evaluator
    from sim.model.loader import load_model
    from sim.solvers.integrators import GeneralizedAlpha

    model = load_model("models/slider_crank.py", {"elements": 2, "planar": True})
    s0 = actuator_values(model, model.q_home)[0]
    accel = 2000.0       # rad/s^2 from rest: the drive's instants matter to the last bit
    law = lambda t: (s0 + 0.5 * accel * t * t, np.full(1, accel * t), np.full(1, accel))  # noqa: E731
    ev = Evaluator(model)
    runs = []
    for split in (600, 7):
        integrator = GeneralizedAlpha(ev, Drive("prescribed", reference=law), 0.0, model.q_home,
                                      np.zeros(model.n_v), 5e-5, Options())
        integrator._chunk = split
        while integrator.n_steps < 600:
            integrator.advance(min(split, 600 - integrator.n_steps))
            integrator._chunk = split
        assert integrator.status == "running", integrator.message
        runs.append((integrator.q, integrator.v, integrator.a))
    assert abs(runs[0][0] - model.q_home).max() > 0.1, "the crank turned"
    for one, split in zip(runs[0], runs[1]):
        np.testing.assert_array_equal(one, split)


def test_samples_beyond_the_buffer_are_refused():
    """The compiled loop writes the samples unchecked, from the integrator's count on: a buffer
    without room for the samples a call is due to write is refused before the call (ValueError,
    no step taken, nothing written), and the count due is the count written (every 3rd step and
    the last of 10, after the first sample)."""
    from sim.model.evaluator import Evaluator
    from sim.model.loader import load_model
    from sim.solvers.integrators import GeneralizedAlpha

    model = load_model("models/slider_crank.py", {"elements": 2, "planar": True})
    g = GeneralizedAlpha(Evaluator(model), Drive("free"), 0.0, model.q_home, np.zeros(model.n_v), 5e-5,
                         Options())
    out = g.samples(5)
    g.record(out)
    g.advance(10, out, every=3)                 # steps 3, 6, 9 and the last, 10
    assert g.n_samples == 5 and g.n_steps == 10
    np.testing.assert_allclose(out.t, 5e-5 * np.array([0, 3, 6, 9, 10]), rtol=1e-12)
    saved = out.q.copy()
    with pytest.raises(ValueError, match="5 recorded, 2 more due"):
        g.advance(3, out, every=3)              # step 12 and the last, 13
    with pytest.raises(ValueError, match="5 recorded, 1 more due"):
        g.record(g.samples(5))                  # a new buffer: the loop would write its 6th row
    assert g.n_steps == 10 and g.n_samples == 5 and np.array_equal(out.q, saved)
    g.advance(2, out, every=0)                  # no samples: no room needed
    assert g.n_steps == 12


def test_the_step_loop_borrows_the_arrays_of_its_records():
    """The step loop's records hold the integrator's arrays borrowed (``borrowed``: no owner in
    them, so that compiled code passes and reads them without atomic reference counts): making
    them leaves every array's Python reference count as it was, where records that own their
    arrays (``by_reference``, as the evaluator's) raise each by one; the tables and the
    markers' data in the problem are the evaluator's own arrays, borrowed too, and the loop
    writes the integrator's (and the evaluator's) arrays."""
    import sys

    from sim.kernels.common import by_reference
    from sim.model.evaluator import Evaluator
    from sim.model.loader import load_model
    from sim.solvers.integrators import GeneralizedAlpha

    model = load_model("models/slider_crank.py", {"elements": 2, "planar": True})
    ev = Evaluator(model)
    integrator = GeneralizedAlpha(ev, Drive("prescribed", reference=lambda t: (
        np.zeros(1), np.full(1, 10.0), np.zeros(1))), 0.0, model.q_home, np.zeros(model.n_v), 5e-5, Options())
    integrator._refs = None
    arrays = [integrator.state.q, integrator.state.counts, integrator.state.blocks.info, integrator.work.M,
              integrator.work.J, integrator.scheme.servo, integrator.rows, integrator.cols, ev.tables.D,
              ev.tables.groups[0].Mff, ev.data.p, ev.data.Jp]
    before = [sys.getrefcount(a) for a in arrays]
    records = integrator._records()
    assert [sys.getrefcount(a) for a in arrays] == before
    owning = by_reference(integrator.work)      # the check can fail: an owning record counts
    assert sys.getrefcount(integrator.work.M) == before[3] + 1
    del owning
    p0 = ev.data.p.copy()
    integrator.advance(3)
    assert integrator.state.counts[0] == 3 and np.isfinite(integrator.work.r).all()
    assert not np.array_equal(ev.data.p, p0), "the loop wrote the evaluator's markers"
    assert integrator._records() is records


def test_the_step_loop_takes_its_state_problem_and_work_by_reference():
    """The compiled step loop is given the state, the problem and the work arrays as records
    (one reference count each, not one per array at every compiled call: a quarter of a
    small model's step), their nested blocks, pattern and scheme too; the records share the
    integrator's arrays, so that what the loop writes shows in Python, and an integrator
    makes them once."""
    from numba import typeof

    from sim.kernels.common import RecordType
    from sim.model.evaluator import Evaluator
    from sim.model.loader import load_model
    from sim.solvers.integrators import ADVANCE, GeneralizedAlpha

    model = load_model("models/slider_crank.py", {"elements": 2, "planar": True})
    integrator = GeneralizedAlpha(Evaluator(model), Drive("prescribed", reference=lambda t: (
        np.zeros(1), np.full(1, 10.0), np.zeros(1))), 0.0, model.q_home, np.zeros(model.n_v), 5e-5, Options())
    _, _, st, pb, _, w, _ = integrator._arguments(ADVANCE, integrator._no_samples, 3)
    kinds = {name: typeof(x) for name, x in (("state", st), ("problem", pb), ("work", w))}
    for name, kind in kinds.items():
        assert isinstance(kind, RecordType), name
    fields = {name: dict(kind.field_dict) for name, kind in kinds.items()}
    for name, field in (("state", "blocks"), ("state", "pattern"), ("problem", "sch"), ("problem", "t")):
        assert isinstance(fields[name][field], RecordType), (name, field)
    assert integrator._arguments(ADVANCE, integrator._no_samples, 3)[2] is st
    t0 = integrator.t
    integrator.advance(3)
    assert integrator.t == pytest.approx(t0 + 3 * 5e-5, rel=1e-12)
    assert integrator.state.counts[0] == 3 and np.isfinite(integrator.work.r).all()


def test_refactorising_on_the_iteration_count_stops_when_it_does_not_pay():
    """The step count that refactorises adapts (``keep_factors``): a step of more than
    ITERATION_LIMIT iterations asks for a factorisation; when the step that runs on it takes as
    many iterations (a count set by round-off, not by the matrix's age), the limit rises and the
    factorisations stop; when it lowers the count, they go on; a slow contraction always
    refactorises."""
    from sim.solvers.integrators import (ITERATION_LIMIT, KEEP_RATE, LU_OK, PENDING, RAISED,
                                         keep_factors)

    def factorisations(iterations, rate=0.01, most=12):
        counts = np.zeros(14, dtype=np.int64)
        asked = 0
        for n in iterations:
            counts[LU_OK] = 1
            keep_factors(counts, rate, n, most)
            asked += counts[LU_OK] == 0
        return asked, counts

    # 5 iterations a step whatever the matrix: one factorisation, then the limit is 5.
    asked, counts = factorisations([5] * 100)
    assert asked == 1 and counts[RAISED] == 1 and counts[PENDING] == 0
    # A factorisation that brings the next step down to 3 is taken again whenever asked for.
    asked, counts = factorisations([6, 3] * 50)
    assert asked == 50 and counts[RAISED] == 0
    # After the limit has risen, a factorisation that pays lowers it again, down to the floor.
    asked, counts = factorisations([5, 5, 7, 3, 6, 3, 5, 3])
    assert asked == 4 and counts[RAISED] == 0
    # The limit never exceeds the iteration cap.
    asked, counts = factorisations(list(range(5, 13)) * 3)
    assert counts[RAISED] <= 12 - ITERATION_LIMIT
    # Slow contraction refactorises every step, whatever the count.
    asked, _ = factorisations([3] * 20, rate=2 * KEEP_RATE)
    assert asked == 20


@njit
def _control_word():
    """The floating-point control word as it is, its status flags left out (numpy clears them
    around its operations); read through a swap that changes nothing."""
    word = subnormals_off()
    fp_control(word)
    return word & ~np.uint32(0x3F)


@njit
def _product(x, y, off):
    """``x * y``, with subnormal numbers off (``off``) or as they are.  The factors are read from
    memory and the product written there, as the step loop's are: the control word orders
    memory accesses only (arithmetic on values in registers may move across it)."""
    v, out = np.array([x, y]), np.zeros(1)
    if off:
        word = subnormals_off()
        out[0] = v[0] * v[1]
        fp_control(word)
    else:
        out[0] = v[0] * v[1]
    return out[0]


@njit
def _stop_inside(counts, slot):
    """A compiled call that turns subnormal numbers off, keeps the word as the step loop does
    and stops on an exception before it can put it back."""
    counts[slot] = subnormals_off()
    raise FloatingPointError("stopped inside the loop")


@pytest.mark.skipif(not _MXCSR, reason="the control word is x86-64's")
def test_subnormal_numbers_are_zero_inside_the_step_loop_only(monkeypatch):
    """The step loop reads and writes subnormal numbers as zero (the slider-crank met one per
    Newton solve, at 100x an operation's cost) and leaves the control word as it found it:
    after steps, and after a call that stopped on an exception inside the loop."""
    from sim.model.evaluator import Evaluator
    from sim.model.loader import load_model
    from sim.solvers import integrators

    tiny = np.finfo(float).tiny
    assert _product(1e-300, 1e-10, False) == pytest.approx(1e-310) and 0 < _product(1e-300, 1e-10, False) < tiny
    assert _product(1e-300, 1e-10, True) == 0.0 and _product(tiny, 0.5, True) == 0.0
    word = _control_word()
    assert word & SUBNORMALS_OFF == 0, "Python runs with gradual underflow"
    model = load_model("models/slider_crank.py", {"elements": 2, "planar": True})
    g = integrators.GeneralizedAlpha(Evaluator(model), Drive("free"), 0.0, model.q_home, np.zeros(model.n_v), 5e-5,
                                     Options())
    assert g.advance(50) == 50 and g.status == "running"
    assert _control_word() == word and g.state.counts[integrators.FP_WORD] == -1
    assert 0 < np.float64(1e-300) * 1e-10 < tiny           # numpy, after the loop

    monkeypatch.setattr(integrators, "_run", lambda task, span, st, *rest: _stop_inside(g.state.counts,
                                                                                        integrators.FP_WORD))
    with pytest.raises(FloatingPointError, match="stopped inside"):
        g.advance(1)
    assert _control_word() == word and g.state.counts[integrators.FP_WORD] == -1
    assert 0 < _product(1e-300, 1e-10, False) < tiny
