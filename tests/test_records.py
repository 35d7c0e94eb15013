"""The model apart from its data (issue 46): the kernels read the constant ``Tables`` and
write the ``Data``; every evaluator has its own data; one path to the kernels."""
import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import load, random_state
from sim.kernels.equations import Data, Tables
from sim.model.evaluator import Evaluator, Kinematics

ROOT = Path(__file__).resolve().parent.parent

# Every kind of table the kernels read: flexible bodies with stiffening, lumped springs and
# compliant drives (the Surgiscope Delta, its joints lumped springs), compliant drives (NaVARo).
MODELS = {"slider_crank": {"elements": 2, "stiffening": True}, "delta_surgiscope": {},
          "navaro": {"clutch_stiffness": 2000.0}}


def _arrays(x):
    """The arrays in ``x`` (an array, or tuples of them at any depth: the tables' body groups)."""
    if isinstance(x, np.ndarray):
        yield x
    elif isinstance(x, tuple):
        for y in x:
            yield from _arrays(y)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_kernels_write_the_data_and_never_the_tables(name):
    """After the evaluation with every term, the potential (which with springs evaluates the
    markers too), the mass products and the inverse terms, each array of the tables is
    bitwise what it was, and the data holds the markers at the last state."""
    model = load(name, **MODELS[name])
    ev = Evaluator(model)
    before = [[a.copy() for a in _arrays(x)] for x in ev.tables]
    q, v = random_state(model, 3)
    ev.evaluate(q, v, targets=np.zeros(len(model.actuators)), velocity_jacobian=True, rest=True)
    ev.potential(q)
    ev.mass_products(q[None], np.ones((1, model.n_v, 1)))
    ev.inverse_terms(q[None], v[None], v[None])
    for field, old, new in zip(Tables._fields, before, ev.tables):
        new = list(_arrays(new))
        assert len(old) == len(new) and all(np.array_equal(a, b) for a, b in zip(old, new)), \
            f"{name}: Tables.{field} written"
    E = ev.kinematics(q, markers=True)
    assert np.abs(E.markers.p).max() > 0.0 and np.array_equal(ev.data.p, E.markers.p)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_model_tables_are_read_only(name):
    """Every array of the tables is read-only once built (:func:`sim.model.tables.constants`):
    a caller's write raises, and a kernel that writes one does not compile."""
    import numba
    from numba import njit

    model = load(name, **MODELS[name])
    ev = Evaluator(model)
    arrays = list(_arrays(tuple(ev.tables)))
    assert len(arrays) > 50 and not any(a.flags.writeable for a in arrays)
    for a in (ev.tables.gravity, ev.tables.groups[0].mass, ev.tables.sp_home, model.kernel[0]):
        with pytest.raises(ValueError, match="read-only"):
            a[...] = 0.0

    @njit
    def write(t):
        t.gravity[0] = 1.0

    with pytest.raises(numba.core.errors.TypingError):
        write(ev.ref)
    assert np.array_equal(ev.tables.gravity, model.gravity)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_kernels_work_in_the_data_scratch(name):
    """The kernels' scratch is the data's (no allocation per evaluation): with it filled with
    NaN, the evaluation with every term (bodies, stiffening, springs, compliant drives), the
    potential and the kinematics give bitwise what they gave before -- each kernel writes what
    it reads there -- and the scratch has been written."""
    model = load(name, **MODELS[name])
    ev = Evaluator(model)
    q, v = random_state(model, 4)
    targets = np.zeros(len(model.actuators))

    def results():
        E = ev.evaluate(q, v, targets=targets, velocity_jacobian=True, rest=True)
        return [x.copy() for x in (E.M, E.Q, E.C, E.J, E.gamma, E.Q_v, E.gamma_v, E.K_t, E.Q0)
                if x is not None] + [np.array(ev.potential(q))] + [ev.kinematics(q, v).J.copy()]

    clean = results()
    ev.data.scratch[:] = np.nan
    poisoned = results()
    assert all(np.array_equal(a, b) for a, b in zip(clean, poisoned))
    assert np.isfinite(ev.data.scratch).any(), "the kernels wrote the data's scratch"


def test_evaluators_of_one_model_share_the_tables_and_not_the_data():
    """Two evaluators of one model read the same constant arrays and write their own data:
    an evaluation by one leaves the other's markers where its own last evaluation put them."""
    model = load("navaro")
    one, two = Kinematics(model), Evaluator(model)
    assert all(a is b for a, b in zip(one.tables, two.tables)), "the tables are the model's, shared"
    assert not any(np.shares_memory(a, b) for a, b in zip(one.data, two.data)), "each has its own data"
    (q1, _), (q2, _) = random_state(model, 1), random_state(model, 2)
    first = one.kinematics(q1, markers=True).markers
    two.evaluate(q2, np.zeros(model.n_v))
    assert not np.array_equal(two.data.p, first.p)
    for field, a, b in zip(Data._fields, one.data, first):
        assert np.array_equal(a, b), f"Data.{field} of one evaluator changed by another's evaluation"


def test_the_end_effector_terms_come_with_the_evaluation():
    """``pose=True``: the end effector's terms of the state evaluated, equal to the
    kinematics' (markers and rows only) at the same state, whatever was evaluated between."""
    model = load("navaro")
    ev = Evaluator(model)
    (q, v), (q_other, _) = random_state(model, 4), random_state(model, 5)
    E = ev.evaluate(q, v, pose=True)
    ev.evaluate(q_other, v)
    K = ev.kinematics(q, v, pose=True)
    for got, ref in ((E.x, K.x), (E.J_x, K.J_x), (E.x_q, K.x_q), (E.J, K.J), (E.J_s, K.J_s)):
        np.testing.assert_array_equal(got, ref)
    assert not np.array_equal(ev.evaluate(q_other, v, pose=True).x, E.x)


def test_building_a_model_compiles_no_evaluation():
    """A model's build (assembly, generic ranks) runs the markers' and the rows' kernels
    through a Kinematics, never the whole evaluation: `sim model` on a cold cache does not
    wait for its compilation (the longest of all)."""
    code = ("from sim.model.loader import load_model; from sim.kernels import equations; "
            "load_model('models/rrru3.py', {}); print(len(equations.evaluate.overloads))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split()[-1] == "0", "the model's build loaded or compiled the whole evaluation"


def test_no_function_builds_an_evaluator_when_none_is_given():
    """One path to the kernels: no function of ``sim`` takes an optional evaluator (``ev=None``)
    and builds its own when it is missing."""
    optional = []
    for path in sorted((ROOT / "sim").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args
                positional = args.posonlyargs + args.args
                defaults = dict(zip([a.arg for a in positional[len(positional) - len(args.defaults):]], args.defaults))
                defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
                if "ev" in defaults:
                    optional.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert not optional, "optional evaluators: " + ", ".join(optional)


@pytest.mark.filterwarnings("ignore:transient and ked disagree")     # the shortened runs: not their numbers
@pytest.mark.parametrize("scenario", ["slider_crank", "rrru3_servo", "rrru3_circle"])
def test_a_time_domain_analysis_builds_one_evaluator(scenario, monkeypatch):
    """The data goes down the layers once: a transient analysis (reference, statics, modal
    damping's frames, time loop, skeleton), a KED (motion, frames; locked or with servo
    drives) and an inverse dynamics (motion, multipliers) each build one Evaluator in their
    own thread, and pass it to the library functions, which take it in place of the model
    (``sim.model.evaluator.held``); they built three (the slider-crank), six and three (the
    servo robot), and two each on the locked robot (a second for the frames computed in this
    thread, or for the multipliers), before.  The frames' worker threads each have their own
    (their work arrays): not counted."""
    import threading

    import sim.analyses as analyses
    from sim.app.api import run

    root = Path(__file__).resolve().parents[1]
    built = []
    original = Evaluator.__init__

    def counting(self, *args, **kwargs):
        if threading.current_thread() is threading.main_thread():
            built.append(type(self).__name__)
        original(self, *args, **kwargs)

    counts = {}
    for name in ("transient", "ked", "inverse_dynamics"):
        function = analyses.ANALYSES[name]

        def wrapped(model, scenario, group, progress, function=function, name=name):
            start = len(built)
            try:
                return function(model, scenario, group, progress)
            finally:
                counts[name] = len(built) - start
        monkeypatch.setitem(analyses.ANALYSES, name, wrapped)
    monkeypatch.setattr(Evaluator, "__init__", counting)
    overrides = {"slider_crank": {}, "rrru3_servo": {"transient.duration": 0.01, "damping.ratio": 0.0},
                 "rrru3_circle": {"transient.duration": 0.002, "frequencies.samples": 2, "ked.intervals": 64,
                                  "inverse_dynamics.samples": 20}}[scenario]
    keep = {"slider_crank": ("transient",), "rrru3_servo": ("transient", "ked"),
            "rrru3_circle": ("transient", "ked", "inverse_dynamics")}[scenario]
    run(root / "scenarios" / f"{scenario}.toml", out=None, overrides=overrides)
    for name in keep:
        assert counts[name] == 1, (name, counts)
