"""Helpers shared by the benchmark scripts: run one analysis of a scenario without a file."""
import time
from pathlib import Path

from sim.model.loader import load_model
from sim.app.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[1]


class Group:
    """Stand-in for a result group: keeps attributes, discards datasets."""

    def __init__(self):
        self.attrs = {}

    def put(self, *args, **kwargs):
        return None

    def set_status(self, *args):
        return None


class Bar:
    """Stand-in for a progress bar."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def update(self, n):
        return None

    def close(self):
        return None


def run_analysis(scenario_file, name, fraction=1.0, model=None):
    """Run analysis ``name`` of ``scenario_file`` (relative to the repository) as ``sim run``
    does, without HDF5 output or progress bars; the trajectory-long analyses over ``fraction``
    of their duration.

    Returns
    -------
    seconds : float
        Wall time of the analysis function.
    attrs : dict
        The group attributes it set.
    summary : dict
    """
    from sim.analyses import ANALYSES
    scenario = load_scenario(ROOT / scenario_file)
    table = scenario.data[name]
    if "duration" in table:
        table["duration"] = (table["duration"] or scenario.data["trajectory"]["duration"]) * fraction
    elif fraction != 1.0:
        raise ValueError(f"[{name}] has no duration to shorten")
    model = load_model(scenario.model_file, scenario.model_parameters) if model is None else model
    group = Group()
    start = time.perf_counter()
    summary = ANALYSES[name](model, scenario, group, lambda total, desc: Bar())
    return time.perf_counter() - start, group.attrs, summary
