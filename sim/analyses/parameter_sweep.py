"""Parameter grid of a ``[sweep]`` table: any analysis per case, one summary table (group ``sweep``).

Table ``[sweep]`` (the other kind, a pose grid, is `sim.analyses.sweep`)::

    analysis = "modes"                                   # the analysis run for each case
    parameters = { strut_radius = [0.02, 0.025, 0.03] }  # model parameter = values
    workers = 2                                          # local processes (default min(2, cores))
    scheduler = "tcp://10.0.0.5:8786"                    # or `sim run --scheduler`: Dask cluster

The cases are the Cartesian product of the parameter lists (first parameter slowest), on top
of the scenario's ``[model] parameters``; a name ``<table>.<key>`` sweeps a scenario key instead
(``"trajectory.move_time" = [0.1, 0.2]``, ``"trajectory.shaper" = ["none", "zvd"]``: a motion
study), checked as in the file.  Each case builds the model in its worker and runs
the registered analysis with the options of its table in the scenario (else the table's
defaults) into an in-memory group; the case keeps the analysis' summary numbers and, for the
analyses in `HEADLINES`, its headline datasets.  Cases run through `sim.solvers.cases.run_cases`, so
a local pool and a Dask cluster give identical numbers; a case that fails (a negative radius,
an unreachable pose) is a row with its error, not the end of the sweep.

Group ``sweep`` holds one table, one dataset per column, all of length ``n`` (cases):
``<parameter>`` (n,), ``<analysis>.<result>`` (n,) or (n, k) NaN-padded, ``ok`` (n,) and
``error`` (n,) strings (empty for a case that ran).
"""
import dataclasses
import itertools
import os

import numpy as np

from sim.errors import SimError

# Datasets worth a column, by analysis: the numbers a designer compares across cases.
HEADLINES = {
    "modes": ("frequencies",),
    "design": ("frequencies",),
    "frf": ("natural_frequencies", "damped_frequencies"),
    "state_space": ("frequencies", "damping_ratios"),
    "identification": ("parameters", "rms_error"),
    "ked": ("settle_time", "residual_amplitude"),
    "transient": ("settle_time", "residual_amplitude"),
}
# Units of summary entries, by the suffix of their name (others: the model's units).
SUFFIX_UNITS = {"_hz": "Hz", "_s": "s", "_m": "m", "_rad": "rad"}
# Column names `sim.app.results` or this table uses itself.
RESERVED = ("ok", "error", "attrs", "data")


class _Recorder:
    """Stands for a `GroupWriter` inside a case: keeps datasets in memory, writes nothing."""

    def __init__(self):
        self.data = {}
        self.attrs = {}

    def put(self, name, data, units, description, dims=None):
        self.data[name] = (np.asarray(data), units if isinstance(units, str) else ", ".join(units),
                           description)

    def set_status(self, status, message=""):
        self.attrs["status"], self.attrs["message"] = status, message

    def finish(self, status=None, message=""):
        pass


class _Silent:
    """A progress bar that shows nothing (cases run in workers)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def update(self, n=1):
        pass


def _silent_progress(total, desc):
    return _Silent()


def _units_of(key):
    for suffix, units in SUFFIX_UNITS.items():
        if key.endswith(suffix):
            return units
    return "model units"


def analysis_case(scenario, analysis, parameters):
    """One case: build the model with `parameters` and run `analysis` on it.

    Parameters
    ----------
    scenario : Scenario
        The sweep's scenario; ``scenario.data[analysis]`` holds the analysis options.
    analysis : str
        A registered analysis name.
    parameters : dict
        All builder keywords of this case.

    Returns
    -------
    dict
        ``column -> (value, units, description)``; ``value`` a number, string or 1-D array.
    """
    from sim.analyses import ANALYSES, Quantity
    from sim.model.loader import load_model

    builder = {k: v for k, v in parameters.items() if "." not in k}
    model = load_model(scenario.model_file, builder)
    case = dataclasses.replace(scenario, model_parameters=builder,
                               data=scenario_keys(scenario, {k: v for k, v in parameters.items() if "." in k}))
    group = _Recorder()
    summary = ANALYSES[analysis](model, case, group, _silent_progress) or {}
    columns = {}
    for key, value in summary.items():
        name = f"{analysis}.{key}"
        if isinstance(value, str):
            columns[name] = (value, "1", f"summary `{key}` of analysis {analysis}")
            continue
        value, units = (value.value, value.unit) if isinstance(value, Quantity) else (value, _units_of(key))
        values = np.asarray(value, dtype=float).ravel()
        columns[name] = (values if np.ndim(value) else float(values[0]), units,
                         f"summary `{key}` of analysis {analysis}")
    for key in HEADLINES.get(analysis, ()):
        if key in group.data:
            values, units, description = group.data[key]
            columns[f"{analysis}.{key}"] = (np.asarray(values, dtype=float).ravel(), units,
                                            description)
    return columns


def scenario_keys(scenario, values):
    """``scenario.data`` with the scenario keys of one case set (``{"trajectory.move_time": 0.2}``),
    each checked as the scenario file's value would be.

    Raises
    ------
    SimError
        A value of the wrong type or range (the case fails with it).
    """
    import copy

    data = copy.deepcopy(scenario.data)
    for name, value in values.items():
        table, key = name.split(".", 1)
        data[table][key] = scenario.checked(table, key, value, f"{scenario.path}: [sweep]")
    return data


def grid(parameters):
    """Cases of a parameter grid: the Cartesian product, first parameter slowest.

    Parameters
    ----------
    parameters : dict
        ``name -> list of values``.

    Returns
    -------
    list of dict
    """
    names = list(parameters)
    return [dict(zip(names, values)) for values in itertools.product(*parameters.values())]


def _check_names(scenario, names, where):
    """Refuse parameters the model file does not have before starting any case."""
    import difflib

    from sim.model.loader import parameters as model_parameters

    known = model_parameters(scenario.model_file)
    for name in names:
        if "." in name:
            _check_key(scenario, name, where)
            continue
        if name in RESERVED:
            raise SimError(f"{where} parameters: `{name}` is a reserved column name")
        if name not in known:
            close = difflib.get_close_matches(name, list(known), n=1)
            hint = f"; did you mean `{close[0]}`?" if close else \
                f" (parameters: {', '.join(known) or 'none'})"
            raise SimError(f"{where} parameters: {scenario.model_file.name} has no model "
                           f"parameter `{name}`{hint}")


def headline(keys):
    """The result column a sweep's summary and figure show first, of its numeric ``keys``: a
    motion study's trade-off (the cycle's time to settle), else a headline dataset
    (``modes.frequencies``), which says more than a summary range; None if there is none."""
    return next((k for k in keys if k.endswith("cycle_settle_time")),
                next((k for k in keys if "range" not in k), keys[0] if keys else None))


def _check_key(scenario, name, where):
    """A swept scenario key (``trajectory.move_time``): a key of the schema, in a table the
    scenario has, that is not the sweep itself."""
    table, _, key = name.partition(".")
    if table == "sweep" or key not in scenario.keys(table):
        raise SimError(f"{where} parameters: `{name}` is neither a model parameter nor a scenario key "
                       f"(`<table>.<key>`, e.g. `trajectory.move_time`)")
    if table not in scenario.data:
        raise SimError(f"{where} parameters: `{name}` sweeps a key of [{table}], which the scenario does not have")


def _unit(scenario, name):
    """Units of a swept parameter: a scenario key's from the schema, a model parameter's "model units"."""
    if "." in name:
        table, key = name.split(".", 1)
        return scenario.keys(table)[key].unit or "1"
    return "model units"


def _column(values, failed):
    """Stack per-case values into one array; failed or missing cases become NaN or ""."""
    present = [v for v, bad in zip(values, failed) if not bad and v is not None]
    if present and all(isinstance(v, str) for v in present):
        return np.array(["" if (bad or v is None) else v for v, bad in zip(values, failed)],
                        dtype=object).astype(str)
    width = max((np.size(v) for v in present), default=1)
    out = np.full((len(values), width), np.nan)
    for i, (v, bad) in enumerate(zip(values, failed)):
        if not bad and v is not None:
            flat = np.asarray(v, dtype=float).ravel()
            out[i, :flat.size] = flat
    scalar = all(np.ndim(v) == 0 for v in present)
    return out[:, 0] if scalar else out


def run_parameter_grid(model, scenario, group, progress):
    """Write the summary table of a parameter grid into group ``sweep``.

    Parameters
    ----------
    model : Model
        The scenario's model (unused: each case builds its own).
    scenario : Scenario
    group : GroupWriter
    progress : callable

    Returns
    -------
    dict
        Number of cases and of failed cases, the first failure, and the range of the first
        numeric result column over the cases that ran.

    Raises
    ------
    SimError
        A parameter the model does not have, an unreachable Dask scheduler.
    """
    from sim.solvers.cases import run_cases

    table = scenario.data["sweep"]
    where = f"{scenario.path}: [sweep]"
    analysis, grid_values = table["analysis"], table["parameters"]
    _check_names(scenario, grid_values, where)
    data = dict(scenario.data)
    if analysis not in data:
        data[analysis] = scenario.defaults(analysis, f"{where} analysis = \"{analysis}\"")
    # Cases carry the scenario without its sweep, so no case can start another sweep.
    data.pop("sweep")
    base = dataclasses.replace(scenario, data=data)
    cases = [dict(scenario.model_parameters, **values) for values in grid(grid_values)]
    workers = table.get("workers") or min(2, os.cpu_count() or 1)
    scheduler = table.get("scheduler") or ("serial" if workers == 1 else None)
    with progress(len(cases), f"sweep: {analysis} cases") as bar:
        results = run_cases(analysis_case, [(base, analysis, c) for c in cases],
                            scheduler=scheduler, workers=workers, progress=bar)

    failed = [not r.ok for r in results]
    names = list(grid_values)
    for name in names:
        column = _column([c[name] for c in cases], [False] * len(cases))
        group.put(name, column, _unit(scenario, name),
                  f"scenario key `{name}` of each case" if "." in name else
                  f"model parameter `{name}` of each case (builder keyword)")
    meta = {}
    for r in results:
        for key, (_, units, description) in (r.value or {}).items():
            meta.setdefault(key, (units, description))
    columns = {}
    for key, (units, description) in meta.items():
        columns[key] = _column([(r.value or {}).get(key, (None,))[0] for r in results], failed)
        group.put(key, columns[key], units,
                  f"{description}; one row per case, NaN where the case failed")
    group.put("ok", np.array([r.ok for r in results]), "1", "True where the case ran")
    group.put("error", np.array([r.error or "" for r in results], dtype=object).astype(str), "1",
              "one-line error of each failed case, empty where it ran")
    group.attrs["kind"] = "parameters"
    group.attrs["analysis"] = analysis
    group.attrs["parameters"] = names
    group.attrs["results"] = list(meta)
    group.attrs["executor"] = str(scheduler or f"local pool of {workers} processes")
    summary = {"cases": len(results), "failed": int(sum(failed))}
    if any(failed):
        summary["first_failure"] = next(r.error for r in results if not r.ok)
    numeric = [k for k, c in columns.items() if c.dtype.kind == "f" and np.isfinite(c).any()]
    key = headline(numeric)
    if key is not None:
        summary[f"{key} range"] = (float(np.nanmin(columns[key])), float(np.nanmax(columns[key])))
    return summary
