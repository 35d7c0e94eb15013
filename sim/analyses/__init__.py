"""Analyses run by `sim run`, one per scenario table.

An analysis is a function ``run(model, scenario, group, progress) -> dict`` registered under
its scenario table's name:

* `model` -- the `Model` built from the scenario's model file;
* `scenario` -- the validated `sim.app.scenario.Scenario` (its table: ``scenario.data[name]``);
* `group` -- a `sim.app.results.GroupWriter` for the HDF5 group of the same name;
* `progress` -- ``progress(total, desc)`` returns a tqdm bar (silent when not interactive).

It returns a short summary, e.g. ``{"frequency_range_hz": (lo, hi)}``, which `sim run`
prints. A user-caused failure raises `sim.errors.SimError`.

An analysis may also register ``prepare(model, scenario)``, which compiles or loads from
numba's cache the kernels it will use; `sim run` calls it before any analysis starts, so that
each group's ``wall_time_s`` is the analysis' own work (the loading, once per process, goes to
the root attribute ``kernels_load_time_s``).  And ``check(model, scenario)``, which raises
`sim.errors.SimError` where the model cannot answer the table (more modes asked for than it
has, say): `sim run` calls it before the result file is opened, so that such an error leaves
no file.  And ``loops(model, scenario)``, which compiles the analysis' own compiled loops
without compiling or calling the evaluation they call through its address: on a cold cache,
`sim run` has a helper process do that while it compiles the evaluation and the rigid motion
itself (`sim.app.parallel_compile`).
"""

from typing import NamedTuple

import numpy as np

ANALYSES = {}
PREPARE = {}
CHECK = {}
LOOPS = {}


class Quantity(NamedTuple):
    """A value of an analysis' summary with its SI unit (``sim run`` prints both)."""

    value: object
    unit: str


def peaks(model, deviation, static):
    """Summary items of a time-domain deviation (n, d): ``peak_deviation_<name>``, and where the
    robot sags at rest (``static`` (n, d) not zero) ``peak_dynamic_deviation_<name>``, the peak
    of ``deviation - static``: the vibration, which a static sag would hide in the whole."""
    d = len(model.pose_names)
    whole = np.abs(deviation).max(axis=0) if len(deviation) else np.zeros(d)
    out = {f"peak_deviation_{n}": Quantity(float(p), u) for n, p, u in zip(model.pose_names, whole, model.pose_units)}
    if len(deviation) and np.any(static):
        dynamic = np.abs(deviation - static).max(axis=0)
        out.update({f"peak_dynamic_deviation_{n}": Quantity(float(p), u)
                    for n, p, u in zip(model.pose_names, dynamic, model.pose_units)})
    return out


def register(name, prepare=None, check=None, loops=None):
    """Decorator registering an analysis function under scenario table `name`, with its
    optional `prepare`, `check` and `loops` (see the module docstring)."""
    def decorate(function):
        if name in ANALYSES:
            raise ValueError(f"analysis `{name}` is registered twice")
        ANALYSES[name] = function
        if prepare is not None:
            PREPARE[name] = prepare
        if check is not None:
            CHECK[name] = check
        if loops is not None:
            LOOPS[name] = loops
        return function
    return decorate


def determined(model, scenario):
    """A ``check`` for the analyses that follow a prescribed motion of the end effector or the
    actuators: refuse a robot whose actuators leave its end effector free
    (:func:`sim.model.mobility.require_determined`)."""
    from sim.model.mobility import require_determined
    require_determined(model)


def damping(scenario, group):
    """The robot's damping model, :class:`sim.solvers.damping.Damping` of the scenario's
    ``[damping]`` table, written to ``group`` as it is applied there: subgroup ``damping``, one
    scalar dataset per key with the key's unit and description (so a reader sees what each
    analysis of the file assumed)."""
    from sim.solvers.damping import Damping

    table = scenario.data["damping"]
    for key, spec in scenario.keys("damping").items():
        group.put(f"damping/{key}", table[key], spec.unit or "1", spec.description)
    return Damping.from_table(table)


# The analysis modules; each registers itself on import. Engine modules are imported inside
# the analysis functions, so this list stays importable while parts of the engine are absent.
from sim.analyses import modes  # noqa: E402,F401
from sim.analyses import stiffness  # noqa: E402,F401
from sim.analyses import frf  # noqa: E402,F401
from sim.analyses import identification  # noqa: E402,F401
from sim.analyses import inverse_dynamics  # noqa: E402,F401
from sim.analyses import transient  # noqa: E402,F401
from sim.analyses import ked  # noqa: E402,F401
from sim.analyses import frequencies  # noqa: E402,F401
from sim.analyses import sweep  # noqa: E402,F401
from sim.analyses import design  # noqa: E402,F401
from sim.analyses import servo  # noqa: E402,F401
