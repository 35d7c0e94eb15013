"""The Python interface: what ``sim run`` does, from a script or a notebook.

Each analysis is a function taking a model (a :class:`~sim.model.types.Model`, or a model
file's path with ``parameters``) and, as keyword arguments, the keys of its scenario table
(``docs/reference.rst``); a trajectory analysis also takes ``trajectory``, the keys of the
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
           "identify", "run", "open_results", "plot", "animate", "report", "static_deflection", "StaticDeflection"]


# Summary entries and datasets a result's repr shows at most.
REPR_ITEMS = 8


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

    def __init__(self, analysis, data, units, descriptions, attrs, summary, tree=None):
        self.analysis = analysis
        self.data = data
        self.units = units
        self.descriptions = descriptions
        self.attrs = attrs
        self.summary = summary
        self.tree = tree       # the group as the figures read it (:func:`plot`)

    @classmethod
    def from_group(cls, analysis, tree, summary=None):
        """From a group as :func:`sim.app.results.read_result` reads it."""
        data, units, descriptions = {}, {}, {}

        def walk(node, prefix, into, plain):
            plain["attrs"] = dict(node["attrs"])
            for name, child in node.items():
                if name == "attrs":
                    continue
                if "data" in child:
                    plain[name] = {"data": child["data"], "attrs": dict(child["attrs"])}
                    if child["attrs"].get("role") == "dimension":
                        continue      # axis labels made for the netCDF view (open_results)
                    into[name] = plain[name]["data"]
                    units[prefix + name] = child["attrs"].get("units")
                    descriptions[prefix + name] = child["attrs"].get("description")
                else:
                    walk(child, f"{prefix}{name}/", into.setdefault(name, {}), plain.setdefault(name, {}))
        plain = {}
        walk(tree, "", data, plain)
        return cls(analysis, data, units, descriptions, dict(tree["attrs"]), dict(summary or {}), plain)

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
        """A few lines: the analysis, its status, what ``sim run`` prints of it and the first
        datasets (``units`` lists them all)."""
        from sim.app.units import summary_text

        lines = [f"<{self.analysis} result, {self.status}" + (f": {self.message}" if self.message else "")
                 + f", {len(self.units)} datasets>"]
        lines += [f"  {key} = {summary_text(value)}" for key, value in list(self.summary.items())[:REPR_ITEMS]]
        for name, unit in list(self.units.items())[:REPR_ITEMS]:
            shape = "x".join(map(str, np.shape(self[name]))) or "scalar"
            unit = unit if isinstance(unit, str) else ", ".join(dict.fromkeys(map(str, unit)))
            lines.append(f"  .{name:<24} {shape:<12} [{unit}]")
        if len(self.units) > REPR_ITEMS:
            lines.append(f"  ... {len(self.units) - REPR_ITEMS} more datasets: result.units lists them")
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


def _scenario(where, analysis, model, parameters, options, trajectory, damping=None, servo=None):
    """The validated scenario of one analysis call, and the model."""
    from sim.app.scenario import make_scenario, moved
    from sim.model.types import Model

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
    if servo is not None:
        if not isinstance(servo, dict):
            raise SimError(f"{where}: `servo` must be a dict of [servo] keys (kp, kv, ki, feedforward, "
                           f"torque_limit), got {type(servo).__name__}")
        raw["servo"] = _plain(servo)
    scenario = make_scenario(raw, where, resolve_model=model_file is not None)
    if model_file is not None:
        model = load_model(scenario.model_file, **scenario.model_parameters)
    return scenario, model


def _analysis(analysis, function, model, parameters, options, trajectory=None, needs_file=False, damping=None,
              servo=None):
    """Run one analysis in memory; its :class:`Result`."""
    import h5py

    from sim.analyses import ANALYSES, CHECK, PREPARE
    from sim.app import cost, selfcheck
    from sim.app.progress import make_progress
    from sim.app.results import GroupWriter, _tree

    where = f"sim.{function}()"
    if needs_file and not isinstance(model, (str, Path)):
        raise SimError(f"{where}: needs the model file's path (it rebuilds the model with other parameters), "
                       f"not a built model")
    scenario, model = _scenario(where, analysis, model, parameters, options, trajectory, damping, servo)
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


def modes(model, pose=None, count=6, parameters=None, drives="locked", servo=None, damping=None):
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
    drives : {"locked", "servo"}
        Actuators locked, or also the closed-loop modes under the servos ``servo`` (the
        ``[servo]`` keys as a dict: ``dict(kp=100.0, kv=60.0)``), in ``servo/frequencies`` ...
    servo, damping : dict, optional
        The ``[servo]`` and ``[damping]`` keys.

    Returns
    -------
    Result
        ``frequencies`` (count,) [Hz], ``pose``, ``mode_shapes``, ``body_energy``, ... (the
        ``modes`` group of the result file).

    Examples
    --------
    >>> sim.modes(sim.load_model("models/navaro.py"), pose=[0, 0, 0]).frequencies   # doctest: +SKIP
    """
    return _analysis("modes", "modes", model, parameters, {"pose": pose, "count": count, "drives": drives},
                     damping=damping, servo=servo)


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


def frequencies(model, trajectory, parameters=None, damping=None, servo=None, **options):
    """Natural frequencies along a trajectory, tracked by MAC (``[frequencies]``: ``count``,
    ``samples``, ``drives``).  ``trajectory``: the ``[trajectory]`` keys as a dict; see
    :func:`modes` for ``model``, ``parameters``, ``servo`` and ``damping``.  Returns the
    ``frequencies`` group (:class:`Result`)."""
    return _analysis("frequencies", "frequencies", model, parameters, options, trajectory, damping=damping,
                     servo=servo)


def transient(model, trajectory=None, parameters=None, damping=None, servo=None, **options):
    """Nonlinear transient of the flexible robot (``[transient]``: ``step`` required;
    ``method``, ``duration``, ``output_step``, ``drive``, ``drive_law``, ...).
    ``trajectory``: the ``[trajectory]`` keys as a dict (not needed with ``drive_law``);
    ``damping``: the robot's damping model, the ``[damping]`` keys as a dict
    (``dict(ratio=0.01, modes=6)``; default: undamped), the same for every analysis;
    ``servo``: the ``[servo]`` keys as a dict, with ``drive="servo"``.
    Returns the ``transient`` group (:class:`Result`: ``time``, ``deviation``, ``pose``,
    ``energy``, ``sensors``, ``damping``, ...)."""
    return _analysis("transient", "transient", model, parameters, options, trajectory, damping=damping,
                     servo=servo)


def ked(model, trajectory, parameters=None, damping=None, servo=None, **options):
    """Kineto-elastodynamics along a trajectory: modal superposition on frozen structures
    (``[ked]``: ``intervals``, ``modes``, ``start``, ``drives``; ``damping`` and ``servo``: the
    ``[damping]`` and ``[servo]`` keys as dicts, as for :func:`transient`).  Returns the
    ``ked`` group."""
    return _analysis("ked", "ked", model, parameters, options, trajectory, damping=damping, servo=servo)


def inverse_dynamics(model, trajectory, parameters=None, **options):
    """Actuator forces and joint reactions of the rigid robot along a trajectory
    (``[inverse_dynamics]``: ``samples``, ``frame``).  Returns the ``inverse_dynamics`` group."""
    return _analysis("inverse_dynamics", "inverse_dynamics", model, parameters, options, trajectory)


def frf(model, inputs, outputs, parameters=None, damping=None, servo=None, **options):
    """Frequency response functions at a pose (``[frf]``: ``inputs``, ``outputs``, ``pose``,
    ``f_min``, ``f_max``, ``points``, ``method``; ``damping``: the ``[damping]`` keys as a dict,
    as for :func:`transient`: ``dict(eta=0.096)``; ``servo`` with ``drives="servo"``).
    Returns the ``frf`` group."""
    return _analysis("frf", "frf", model, parameters, dict(options, inputs=inputs, outputs=outputs), damping=damping,
                     servo=servo)


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
    from sim.app.progress import make_progress
    from sim.app.units import summary_text
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
                group.attrs["summary"] = json.dumps({key: summary_text(value) for key, value in summaries[name].items()})
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


def _result_file(results, where):
    """``results`` as the path of an existing result file; SimError naming what it is otherwise."""
    if isinstance(results, Result):
        raise SimError(f"{where}: needs a result file (sim.run(...) writes one); a {results.analysis} "
                       f"result in memory can be drawn with sim.plot")
    if not isinstance(results, (str, Path)):
        raise SimError(f"{where}: expected a result file's path, got {type(results).__name__}")
    path = Path(results)
    if not path.is_file():
        raise SimError(f"{path}: result file not found")
    return path


def plot(results, out=None):
    """The figures of ``sim plot``, one per question (deviation, frequencies, modes, motion,
    forces, ...).

    Parameters
    ----------
    results : str or Path or Result
        A result file, or a result in memory (``sim.transient(...)``).
    out : str or Path, optional
        Write the figures as ``sim plot --out`` does (``out``, then ``<stem>-<question>``
        beside it) and close them.

    Returns
    -------
    list of matplotlib.figure.Figure, or list of (str, Path)
        Without ``out``, the open figures (a notebook shows them; close them with
        ``matplotlib.pyplot.close``); with it, each question's key and image.

    Examples
    --------
    >>> figures = sim.plot("results/rrru3_circle.h5")                      # doctest: +SKIP
    >>> sim.plot(sim.modes(robot), out="modes.png")                       # doctest: +SKIP
    """
    from sim.app import plots
    from sim.app.results import lazy_result

    if isinstance(results, Result):
        tree = {"attrs": {}, results.analysis: results.tree}
        stack = contextlib.nullcontext(tree)
        name = f"the {results.analysis} result"
    else:
        path = _result_file(results, "sim.plot()")
        stack = lazy_result(path, rows=plots.PLOT_ROWS)
        name = str(path)
    with stack as tree, plots.nan_quiet():
        questions = plots.figures(tree)
        if not questions:
            raise SimError(f"{name}: nothing to plot (no deviation, frequencies or modes)")
        if out is None:
            return [plots.figure(tree, panels, text) for _, text, panels in questions]
        plots._check_format(out)
        written = []
        for (key, text, panels), target in zip(questions, plots.figure_paths(out, [q[0] for q in questions])):
            fig = plots.figure(tree, panels, text)
            try:
                plots.save(fig, target)
            finally:
                plots.plt.close(fig)
            written.append((key, Path(target)))
        return written


def animate(results, out=None, group=None, mode=None, frames=None, scale=None, view="auto"):
    """Animate the robot of a result file, as ``sim animate`` (its deformation magnified).

    Parameters
    ----------
    results : str or Path
        Result file.
    out : str or Path, optional
        ``.gif`` or ``.mp4``; default ``<stem>_<group>[_mode<N>].gif`` beside the file.
    group : {"transient", "ked", "modes"}, optional
    mode : int, optional
        1-based mode number (group ``modes``).
    frames : int, optional
    scale : float, optional
        Magnification (default: the largest deflection drawn at a tenth of the robot's size).
    view : {"auto", "iso", "top", "front", "side"}

    Returns
    -------
    Path
        The animation written.
    """
    from sim.app.animate import check_output, default_output, load_motion, render

    path = _result_file(results, "sim.animate()")
    if out is not None:
        check_output(out)
    motion = load_motion(path, group, mode, frames)
    out = Path(out) if out is not None else default_output(path, motion)
    render(motion, out, scale=scale, view=view)
    return out


def report(results, out=None, animation=True):
    """One self-contained HTML page of a result file, as ``sim report``: scenario and model,
    summaries and warnings, figures, animation, provenance.

    Parameters
    ----------
    results : str or Path
    out : str or Path, optional
        Default ``RESULTS.html`` beside the file.
    animation : bool
        Embed an animation (a GIF of ``sim animate`` beside the file, else a short one).

    Returns
    -------
    Path
    """
    from sim.app.report import report as write

    return write(_result_file(results, "sim.report()"), out, animation=animation)


class StaticDeflection:
    """The static deflection of a robot at a pose (:func:`static_deflection`), linearised.

    Attributes
    ----------
    pose : ndarray, shape (d,)
        End-effector coordinates of the rigid robot [m, rad]; ``pose_names`` name them.
    deflection : ndarray, shape (d,)
        Change of the end-effector coordinates under gravity, preloads and the load [m, rad].
    gravity, load : ndarray, shape (d,)
        Its parts: gravity and preloads, and the load (zeros without one).
    markers : dict of str to ndarray, shape (3,)
        Displacement of each marker's origin, world x, y, z [m].
    u : ndarray, shape (n_v,)
        The displacement in the model's velocity coordinates.
    """

    def __init__(self, pose_names, pose, gravity, load, markers, u):
        self.pose_names, self.pose = tuple(pose_names), pose
        self.gravity, self.load, self.deflection = gravity, load, gravity + load
        self.markers, self.u = markers, u

    def __repr__(self):
        from sim.app.units import readable

        units = ["rad" if n.startswith("r") else "m" for n in self.pose_names]
        # one unit per kind, from the largest deflection of that kind (the figures' choice)
        scales = {u: readable([abs(v) for v, w in zip(self.deflection, units) if w == u], u) for u in set(units)}

        def text(values, units):
            return ", ".join(f"{n} = {v / scales[u][0]:.4g} {scales[u][1]}" for n, v, u in zip(self.pose_names, values, units))
        return (f"<static deflection at {', '.join(f'{n} = {p:.4g}' for n, p in zip(self.pose_names, self.pose))}: "
                f"{text(self.deflection, units)} (gravity {text(self.gravity, units)}); "
                f"{len(self.markers)} markers>")


def static_deflection(model, pose=None, load=None, parameters=None):
    """The static deflection of the robot at rest at a pose, actuators locked: the gravity sag
    (and preloads), and with ``load`` the deflection under an end-effector wrench, from the
    engine's static solver (:func:`sim.solvers.modal.static_response`, linearised at the
    pose; as the transient's static start).

    Parameters
    ----------
    model : Model or str or Path
        A built model, or a model file (then ``parameters``).
    pose : sequence of float, optional
        End-effector coordinates (d,) [m, rad]; default: home.
    load : sequence of float, optional
        End-effector wrench (d,): a force along [N] or a moment about [N m] the world axis of
        each end-effector coordinate, as ``[stiffness] load``.
    parameters : dict, optional

    Returns
    -------
    StaticDeflection
        ``deflection`` (d,) and its ``gravity`` and ``load`` parts [m, rad], ``markers``
        (name -> (3,) [m]).

    Examples
    --------
    >>> sim.static_deflection(sim.load_model("models/delta_pick.py"), pose=[0, 0, -0.85])   # doctest: +SKIP
    """
    from sim.model.assembly import configuration
    from sim.solvers.start import rest_deflection
    from sim.model.types import Model
    from sim.model.evaluator import Evaluator
    from sim.model.kinematics import markers, pose_jacobian

    where = "sim.static_deflection()"
    if isinstance(model, (str, Path)):
        model = load_model(model, **(parameters or {}))
    elif not isinstance(model, Model):
        raise SimError(f"{where}: `model` must be a Model or a model file's path, got {type(model).__name__}")
    elif parameters:
        raise SimError(f"{where}: `parameters` apply to a model file; the model is already built")
    pose, q = configuration(model, pose, f"{where} pose")
    d = len(model.pose_names)
    wrench = np.zeros(d) if load is None else np.asarray(load, dtype=float)
    if wrench.shape != (d,) or not np.isfinite(wrench).all():
        raise SimError(f"{where} load: expected {d} finite numbers ({', '.join(model.pose_names)}), got {load!r}")
    ev = Evaluator(model)
    sag = rest_deflection(model, q, ev)
    J = pose_jacobian(model, q)[1]
    u = rest_deflection(model, q, ev, load=J.T @ wrench) if wrench.any() else sag
    ms = markers(model, q)
    moved = np.einsum("mkv,v->mk", ms.Jp, u)
    return StaticDeflection(model.pose_names, np.asarray(pose, dtype=float), J @ sag, J @ (u - sag),
                            {m.name: moved[i] for i, m in enumerate(model.markers)}, u)
