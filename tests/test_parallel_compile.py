"""A helper process compiling the last analysis' kernels on a cold cache (sim.app.parallel_compile).

A cold cache takes minutes to fill, so these tests fake the coldness (every probe cold) and let
a real helper load the warm kernels: the protocol, the results and the fallbacks are the same.
"""
import os
import subprocess
import sys

import h5py
import numpy as np
import pytest

from sim.app import parallel_compile
from sim.app.cli import main

import arm_model
from conftest import ROOT

SCENARIO = arm_model.scenario(0.1, """[frequencies]
count = 2
samples = 11
[ked]
intervals = 16
modes = 2
[transient]
step = 1e-3
""")


@pytest.fixture
def scenario(tmp_path):
    path = tmp_path / "arm.toml"
    path.write_text(SCENARIO)
    return path


def test_cold_probes_numbas_cache(tmp_path):
    """An empty cache directory: the transient's and the KED's kernels are cold, the modes
    (no kernels of their own to prepare) never are."""
    code = "from sim.app.parallel_compile import cold; print(cold('transient'), cold('ked'), cold('modes'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path)), cwd=ROOT)
    assert out.stdout.split() == ["True", "True", "False"]


def test_no_helper_on_a_warm_cache_or_one_cold_kernel(scenario, monkeypatch):
    from sim.app.scenario import load_scenario
    s = load_scenario(scenario)
    main(["run", str(scenario), "--out", str(scenario.with_suffix(".h5"))])    # the kernels are cached
    assert parallel_compile.start(s, ["frequencies", "ked", "transient"]) is None
    monkeypatch.setattr(parallel_compile, "cold", lambda name: True)
    # KED and frequencies share their kernels: nothing to overlap.
    assert parallel_compile.start(s, ["frequencies", "ked"]) is None


@pytest.mark.parametrize("broken", [False, True])
def test_a_helper_prepares_the_last_analysis(scenario, monkeypatch, broken):
    """Every probe faked cold: a helper process prepares the transient (the last analysis)
    while this one runs the others, and the results are those of a run without it; a helper
    that fails (a scenario it cannot read) leaves the transient to compile its own kernels."""
    reference = scenario.with_name("reference.h5")
    assert main(["run", str(scenario), "--out", str(reference)]) == 0
    started = []
    helper = parallel_compile.Helper

    def spy(s, names):
        if broken:
            s = type("Broken", (), {"path": scenario.with_name("missing.toml"), "overrides": ()})()
        started.append(helper(s, names))
        return started[-1]

    monkeypatch.setattr(parallel_compile, "cold", lambda name: True)
    monkeypatch.setattr(parallel_compile, "Helper", spy)
    out = scenario.with_name("helped.h5")
    assert main(["run", str(scenario), "--out", str(out)]) == 0
    assert [h.names for h in started] == [("transient",)]
    assert started[0]._process.poll() is not None, "the helper was left running"
    if broken:
        assert started[0]._process.returncode == 1
    with h5py.File(reference) as a, h5py.File(out) as b:
        for name in ("transient/deviation", "ked/deviation", "frequencies/frequencies"):
            np.testing.assert_array_equal(a[name][...], b[name][...])
        assert b.attrs["kernels_load_time_s"] > 0
