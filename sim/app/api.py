"""The Python interface: what ``sim run`` does, from a script or a notebook.

Each analysis is a function taking a model (a :class:`~sim.model.builder.Model`, or a model
file's path with ``parameters``) and, as keyword arguments, the keys of its scenario table
(README, "Scenario keys"); a trajectory analysis also takes ``trajectory``, the keys of the
``[trajectory]`` table.  The options go through the same validation as a scenario file, so a
wrong key or value raises :class:`~sim.errors.SimError` with the message ``sim run`` would
print, and the result is the analysis' group of the result file (:class:`Result`: the same
datasets, units and attributes).

>>> import sim
>>> robot = sim.load_model("models/navaro.py")                 # doctest: +SKIP
>>> sim.modes(robot, pose=[0, 0, 0]).frequencies               # doctest: +SKIP
array([ 44.1...,  95.6..., ...])
>>> sim.ked(robot, trajectory=dict(kind="circle", center=[0, 0, 0], radius=0.05,
...         omega=6.0, duration=2.0), intervals=256)           # doctest: +SKIP
>>> sim.run("scenarios/navaro_modes.toml", out="navaro.h5")    # doctest: +SKIP
>>> sim.open_results("navaro.h5", "modes")                     # doctest: +SKIP
"""
import contextlib
import io
import warnings
from pathlib import Path

import numpy as np

from sim.errors import SimError, check_stop, nothing_to_keep

__all__ = ["Result", "load_model", "modes", "stiffness", "frequencies", "transient", "ked", "inverse_dynamics", "frf",
           "identify", "run", "open_results"]


class Result:
    """One analysis' results: the datasets of its group in the result file, by name.

    ``result.frequencies`` (or ``result["frequencies"]``) is the dataset ``frequencies`` as an
    array; a subgroup (``joint_reactions``) is a dict of arrays.  ``units[name]`` and
    ``descriptions[name]`` give each dataset's SI units and meaning (``name`` as in the file,
    ``"joint_reactions/A_1"`` for a subgroup's), ``attrs`` the group's attributes and
    ``summary`` what ``sim run`` prints.

    Attributes
    ----------
    analysis : str
    data : dict
    units : dict
    descriptions : dict
    attrs : dict
    summary : dict
    """

    def __init__(self, analysis, data, units, descriptions, attrs, summary):
        self.analysis = analysis
        self.data = data
        self.units = units
        self.descriptions = descriptions
        self.attrs = attrs
        self.summary = summary

    @classmethod
    def from_group(cls, analysis, tree, summary=None):
        """From a group as :func:`sim.app.results.read_result` reads it."""
        data, units, descriptions = {}, {}, {}

        def walk(node, prefix, into):
            for name, child in node.items():
                if name == "attrs":
                    continue
                if "data" in child and child["attrs"].get("role") == "dimension":
                    continue      # axis labels made for the netCDF view (open_results)
                if "data" in child:
                    into[name] = child["data"]
                    units[prefix + name] = child["attrs"].get("units")
                    descriptions[prefix + name] = child["attrs"].get("description")
                else:
                    walk(child, f"{prefix}{name}/", into.setdefault(name, {}))
        walk(tree, "", data)
        return cls(analysis, data, units, descriptions, dict(tree["attrs"]), dict(summary or {}))

    @property
    def status(self):
        """``"complete"``, or ``"incomplete"`` (see :attr:`message`)."""
        return self.attrs.get("status", "complete")

    @property
    def message(self):
        return self.attrs.get("message", "")

    def __getattr__(self, name):
        data = self.__dict__.get("data", {})
        if name in data:
            return data[name]
        raise AttributeError(f"the {self.__dict__.get('analysis')} result has no dataset {name!r} "
                             f"(it has: {', '.join(data)})")

    def __getitem__(self, name):
        node = self.data
        for part in name.split("/"):
            node = node[part]
        return node

    def __contains__(self, name):
        try:
            self[name]
        except (KeyError, TypeError):
            return False
        return True

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self.data))

    def __repr__(self):
        lines = [f"<{self.analysis} result, {self.status}>"]
        for name, unit in self.units.items():
            shape = "x".join(map(str, np.shape(self[name]))) or "scalar"
            unit = unit if isinstance(unit, str) else ", ".join(unit)
            lines.append(f"  {name:<24} {shape:<12} [{unit}]")
        return "\n".join(lines)


def load_model(path, /, **parameters):
    """Build the model of a model file (a Python file defining ``build(**parameters)``).

    Parameters
    ----------
    path : str or Path
    **parameters
        Values of the file's parameters (``sim model FILE`` lists them); the others keep
        their defaults.

    Returns
    -------
    Model

    Raises
    ------
    SimError
        Missing or malformed file, unknown parameter, bad value, invalid model.

    Notes
    -----
    A model file is Python code, run with your rights: load only files you trust.
    """
    from sim.model.loader import load_model as build

    return build(path, parameters)


def _plain(value):
    """Options as TOML would give them: lists for arrays, Python numbers, None dropped."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    return value


def _scenario(where, analysis, model, parameters, options, trajectory, damping=None):
    """The validated scenario of one analysis call, and the model."""
    from sim.app.scenario import make_scenario, moved
    from sim.model.builder import Model

    for key, value in options.items():
        gone = moved(analysis, key, value, fix="pass damping=dict({key}={value})")
        if gone:
            raise SimError(f"{where}: {gone}")

    if isinstance(model, Model):
        if parameters:
            raise SimError(f"{where}: `parameters` apply to a model file; the model is already built")
        model_file = None
    elif isinstance(model, (str, Path)):
        model_file = model
    else:
        raise SimError(f"{where}: `model` must be a Model (sim.ModelBuilder(...).build(), sim.load_model(...)) "
                       f"or a model file's path, got {type(model).__name__}")
    raw = {"name": analysis, "model": {"file": str(model_file or "(built in Python)"),
                                       "parameters": _plain(dict(parameters or {}))},
           analysis: _plain(options)}
    if trajectory is not None:
        raw["trajectory"] = _plain(trajectory)
    if damping is not None:
        if not isinstance(damping, dict):
            raise SimError(f"{where}: `damping` must be a dict of [damping] keys (ratio, eta, rayleigh_alpha, "
                           f"rayleigh_beta, modes), got {type(damping).__name__}")
        raw["damping"] = _plain(damping)
    scenario = make_scenario(raw, where, resolve_model=model_file is not None)
    if model_file is not None:
        model = load_model(scenario.model_file, **scenario.model_parameters)
    return scenario, model


def _analysis(analysis, function, model, parameters, options, trajectory=None, needs_file=False, damping=None):
    """Run one analysis in memory; its :class:`Result`."""
    import h5py

    from sim.analyses import ANALYSES, CHECK, PREPARE
    from sim.app import cost, selfcheck
    from sim.app.cli import make_progress
    from sim.app.results import GroupWriter, _tree

    where = f"sim.{function}()"
    if needs_file and not isinstance(model, (str, Path)):
        raise SimError(f"{where}: needs the model file's path (it rebuilds the model with other parameters), "
                       f"not a built model")
    scenario, model = _scenario(where, analysis, model, parameters, options, trajectory, damping)
    # The memory limit as in `sim run`; the time limit not: the caller asked for this run.
    cost.check(scenario, cost.estimate(scenario, model), allow_long=True)
    if analysis in PREPARE:
        PREPARE[analysis](model, scenario)
    if analysis in CHECK:
        try:
            CHECK[analysis](model, scenario)
        except SimError as exc:
            raise SimError(f"{where}: {exc}") from None
    with h5py.File(io.BytesIO(), "w") as handle:
        writer = GroupWriter(handle.create_group(analysis))
        summary = ANALYSES[analysis](model, scenario, writer, make_progress()) or {}
        writer.finish()
        groups = {analysis: handle[analysis]}
        selfcheck.check(groups)
        for line in list(model.warnings) + selfcheck.warnings(groups):
            warnings.warn(line, stacklevel=3)
        return Result.from_group(analysis, _tree(handle[analysis], where), summary)


def modes(model, pose=None, count=6, parameters=None):
    """Natural frequencies and mode shapes at an end-effector pose (scenario table ``[modes]``).

    Parameters
    ----------
    model : Model or str or Path
        A built model, or a model file (then ``parameters``: its parameter values).
    pose : sequence of float, optional
        End-effector coordinates in the model's order (m, rad); default: home.
    count : int
        Elastic modes.
    parameters : dict, optional

    Returns
    -------
    Result
        ``frequencies`` (count,) [Hz], ``pose``, ``mode_shapes``, ``body_energy``, ... (the
        ``modes`` group of the result file).

    Examples
    --------
    >>> sim.modes(sim.load_model("models/navaro.py"), pose=[0, 0, 0]).frequencies   # doctest: +SKIP
    """
    return _analysis("modes", "modes", model, parameters, {"pose": pose, "count": count})


def stiffness(model, pose=None, load=None, parameters=None):
    """Cartesian compliance and stiffness of the end effector at a pose, actuators locked
    (scenario table ``[stiffness]``); ``model``, ``pose`` and ``parameters`` as for :func:`modes`.

    Parameters
    ----------
    load : sequence of float, optional
        End-effector wrench (d,): force along [N] or moment about [N m] the world axis of each
        end-effector coordinate; its static deflection is reported, and the section forces
        and stresses it causes.

    Returns
    -------
    Result
        ``compliance`` and ``stiffness`` (d, d) (units per entry in ``units``),
        ``compliance_share`` (d, n_parts) (attribute ``parts``), with a load ``deflection`` (d,).

    Examples
    --------
    >>> sim.stiffness(sim.load_model("models/navaro.py"), load=[10, 0, 0]).deflection   # doctest: +SKIP
    """
    return _analysis("stiffness", "stiffness", model, parameters, {"pose": pose, "load": load})


def frequencies(model, trajectory, parameters=None, **options):
    """Natural frequencies along a trajectory, tracked by MAC (``[frequencies]``: ``count``,
    ``samples``).  ``trajectory``: the ``[trajectory]`` keys as a dict; see :func:`modes` for
    ``model`` and ``parameters``.  Returns the ``frequencies`` group (:class:`Result`)."""
    return _analysis("frequencies", "frequencies", model, parameters, options, trajectory)


def transient(model, trajectory=None, parameters=None, damping=None, **options):
    """Nonlinear transient of the flexible robot (``[transient]``: ``step`` required;
    ``method``, ``duration``, ``output_step``, ``drive``, ``drive_law``, ...).
    ``trajectory``: the ``[trajectory]`` keys as a dict (not needed with ``drive_law``);
    ``damping``: the robot's damping model, the ``[damping]`` keys as a dict
    (``dict(ratio=0.01, modes=6)``; default: undamped), the same for every analysis.
    Returns the ``transient`` group (:class:`Result`: ``time``, ``deviation``, ``pose``,
    ``energy``, ``sensors``, ``damping``, ...)."""
    return _analysis("transient", "transient", model, parameters, options, trajectory, damping=damping)


def ked(model, trajectory, parameters=None, damping=None, **options):
    """Kineto-elastodynamics along a trajectory: modal superposition on frozen structures
    (``[ked]``: ``intervals``, ``modes``, ``start``; ``damping``: the ``[damping]`` keys as a
    dict, as for :func:`transient`).  Returns the ``ked`` group."""
    return _analysis("ked", "ked", model, parameters, options, trajectory, damping=damping)


def inverse_dynamics(model, trajectory, parameters=None, **options):
    """Actuator forces and joint reactions of the rigid robot along a trajectory
    (``[inverse_dynamics]``: ``samples``, ``frame``).  Returns the ``inverse_dynamics`` group."""
    return _analysis("inverse_dynamics", "inverse_dynamics", model, parameters, options, trajectory)


def frf(model, inputs, outputs, parameters=None, damping=None, **options):
    """Frequency response functions at a pose (``[frf]``: ``inputs``, ``outputs``, ``pose``,
    ``f_min``, ``f_max``, ``points``, ``method``; ``damping``: the ``[damping]`` keys as a dict,
    as for :func:`transient`: ``dict(eta=0.096)``).  Returns the ``frf`` group."""
    return _analysis("frf", "frf", model, parameters, dict(options, inputs=inputs, outputs=outputs), damping=damping)


def identify(model, parameters=None, **options):
    """Fit model parameters to measured natural frequencies (``[identification]``:
    ``parameters`` to fit, ``configuration_1 = {measured_frequencies=[...], ...}``, bounds).
    ``model`` must be a model file's path; the keyword ``model_parameters`` sets its fixed
    parameter values.  Returns the ``identification`` group."""
    fixed = options.pop("model_parameters", None)
    return _analysis("identification", "identify", model, fixed, dict(options, parameters=parameters),
                     needs_file=True)


def run(scenario, out=None, overrides=None, force=False, allow_long=False):
    """Run every analysis of a scenario file into one result file, as ``sim run``.

    Parameters
    ----------
    scenario : str or Path
    out : str or Path, optional
        Result file; default ``results/<name>.h5`` (``-2``, ``-3`` ... when taken).
    overrides : mapping or sequence of str, optional
        Scenario keys to override, as ``--set``: ``{"ked.intervals": 256, "trajectory.omega":
        12.0}``, or ``KEY=VALUE`` strings (``["ked.intervals=256"]``).
    force : bool
        Replace an existing ``out``.
    allow_long : bool
        Lift the time limit of the cost estimate (``--yes``).

    Returns
    -------
    Path
        The result file.
    """
    from sim.app.scenario import load_scenario, override_texts

    path, _, notes = execute(available(load_scenario(scenario, override_texts(overrides))), out, force, allow_long)
    for line in notes:
        warnings.warn(line, stacklevel=2)
    return path


def execute(scenario, out=None, force=False, allow_long=False):
    """Reserve the output, build the model and run the analyses of ``scenario`` (a
    :class:`~sim.app.scenario.Scenario`): ``(path, summaries, warnings)``."""
    from sim.app.results import release, reserve

    # Reserve the output before the possibly slow model build: an existing file is refused
    # at once, and concurrent runs get distinct default names.
    if out:
        out = reserve(Path(out), force=force)
    else:
        out = reserve(Path("results") / f"{scenario.name}.h5", numbered=not force, force=force)
    try:
        # Until a result holds data, a stop while the kernels compile ends the run at once.
        with nothing_to_keep(lambda: release(out)):
            summaries, notes = _run(scenario, out, force, allow_long)
    finally:
        release(out)      # a run that wrote nothing leaves no reservation behind
    return out, summaries, notes


def available(scenario):
    """``scenario``, once every analysis it names is checked to exist in this version."""
    from sim.analyses import ANALYSES

    for name in scenario.analyses:
        if name not in ANALYSES:
            raise SimError(f"{scenario.path}: `[{name}]` analysis is not available in this version")
    return scenario


@contextlib.contextmanager
def _named(scenario, name):
    """A :class:`SimError` raised inside names the scenario file and the table ``name`` once,
    whatever depth it came from."""
    try:
        yield
    except SimError as exc:
        text = str(exc)
        raise SimError(text if text.startswith(str(scenario.path)) else f"{scenario.path}: [{name}] {text}") from None


def _run(scenario, out, force, allow_long):
    """Build the model and run the analyses into ``out``: ``(summaries, warnings)``."""
    import dataclasses
    import json
    import time

    from sim.analyses import ANALYSES, CHECK, PREPARE
    from sim.app import cost, parallel_compile, selfcheck
    from sim.solvers.trajectory import from_scenario
    from sim.app.cli import _format, make_progress
    from sim.app.results import ResultFile

    available(scenario)
    # On a cold cache, a helper process compiles the analyses' loops meanwhile (from the
    # model's structure: it starts before this process builds and assembles the model).
    helper = parallel_compile.start(scenario, scenario.analyses)
    delegated = helper.names if helper is not None else ()
    try:
        model = load_model(scenario.model_file, **scenario.model_parameters)
        cost.check(scenario, cost.estimate(scenario, model), allow_long=allow_long)
        if "trajectory" in scenario.data:    # a motion refused (a unit slip) before any file
            from_scenario(scenario.data["trajectory"], model, f"{scenario.path}: [trajectory]")
        prepared = [name for name in scenario.analyses if name in PREPARE]
        loading = time.perf_counter()
        if helper is not None:
            parallel_compile.shared(model, scenario, helper)
        for name in prepared:
            if name not in delegated:
                PREPARE[name](model, scenario)
        for name in scenario.analyses:      # what the model cannot answer: refused before any file
            if name in CHECK:
                with _named(scenario, name):
                    CHECK[name](model, scenario)
        loading = time.perf_counter() - loading
        progress = make_progress()
        summaries = {}
        with ResultFile(out, scenario=scenario.text, model_file=scenario.model_file,
                        model_parameters=scenario.model_parameters, force=force,
                        overrides=scenario.overrides, kernels_load_time_s=loading,
                        references=[dataclasses.asdict(r) for r in getattr(model, "references", ())]) as result:
            for name in scenario.analyses:
                check_stop()
                if name in delegated:
                    start = time.perf_counter()
                    helper.wait(name)
                    if name in PREPARE:
                        PREPARE[name](model, scenario)
                    result.add_load_time(time.perf_counter() - start)
                group = result.group(name)
                with _named(scenario, name):
                    summaries[name] = ANALYSES[name](model, scenario, group, progress) or {}
                # What `sim run` prints, for `sim report` (text: values with their units)
                group.attrs["summary"] = json.dumps({key: _format(value) for key, value in summaries[name].items()})
                group.finish()
            groups = {name: writer._group for name, writer in result.groups.items()}
            selfcheck.check(groups)
            notes = list(model.warnings) + selfcheck.warnings(groups)
            result._file.attrs["warnings"] = json.dumps(notes)
    finally:
        if helper is not None:
            helper.close()
    return summaries, notes


def open_results(path, group):
    """One analysis group of a result file as an :class:`xarray.Dataset`: named dimensions
    with coordinates (``time``, ``mode``, ``coordinate``, ...), each variable's ``units`` and
    ``description`` as attributes.

    Parameters
    ----------
    path : str or Path
    group : str
        ``modes``, ``transient``, ``ked``, ... (``sim info PATH`` lists them); a subgroup as
        ``transient/sensors``.

    Raises
    ------
    SimError
        Not a result file, or no such group.
    """
    from sim.app.results import _open

    with _open(path) as handle:          # the one-line errors of `sim info`
        if group not in handle:
            have = ", ".join(k for k in handle if not k.startswith("_"))
            raise SimError(f"{path}: no group `{group}` (the file has: {have})")
    try:
        import xarray
    except ImportError:
        raise SimError("open_results needs xarray and h5netcdf: pip install xarray h5netcdf") from None
    with xarray.open_dataset(path, group=group, engine="h5netcdf") as data:
        data = data.load()
    for variable in data.variables.values():
        # One unit per column, all alike ("m, m, m"): the unit; else one text ("m, m, rad"),
        # which xarray's labels print as it is.
        units = variable.attrs.get("units")
        if isinstance(units, str) and not units:
            del variable.attrs["units"]      # names, counts: no "[]" in xarray's labels
        elif units is not None and not isinstance(units, str):
            units = [str(u) for u in np.atleast_1d(units)]
            variable.attrs["units"] = units[0] if len(set(units)) == 1 else ", ".join(units)
    return data
