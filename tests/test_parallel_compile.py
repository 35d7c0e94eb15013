"""A helper process sharing the compilation on a cold cache (sim.app.parallel_compile).

A cold cache takes minutes to fill, so these tests fake the coldness (every probe cold) and let
a real helper load the warm kernels: the protocol, the results and the fallbacks are the same.
That the helper's loops are the ones the analyses call (the same types, so that this process
loads them rather than compiling its own) is checked on the dispatchers' signatures.
"""
import os
import signal
import subprocess
import sys
import time

import h5py
import numpy as np
import pytest

from sim.app import parallel_compile
from sim.app.cli import main

import arm_model
from conftest import ROOT

SCENARIO = arm_model.scenario(0.1, """[inverse_dynamics]
samples = 51
[frequencies]
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


def test_a_kernel_in_memory_is_not_cold(tmp_path):
    """A kernel this process has compiled is not cold, even where the cache lost it (an
    unwritable cache, a second `sim.run` in one session): no helper to wait for."""
    code = f"""
import shutil
import numpy as np
from sim.app import parallel_compile
from sim.kernels.common import dot3
parallel_compile.PROBES["probe"] = "sim.kernels.common.dot3"
before = parallel_compile.cold("probe")
dot3(np.ones(3), np.ones(3))
shutil.rmtree({str(tmp_path)!r}); import os; os.mkdir({str(tmp_path)!r})
print(before, parallel_compile.cold("probe"))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path)), cwd=ROOT)
    assert out.stdout.split() == ["True", "False"]


def test_no_helper_on_a_warm_cache_or_one_core(scenario, monkeypatch):
    from sim.app.scenario import load_scenario
    s = load_scenario(scenario)
    main(["run", str(scenario), "--out", str(scenario.with_suffix(".h5"))])    # the kernels are cached
    assert parallel_compile.start(s, s.analyses) is None
    monkeypatch.setattr(parallel_compile, "cold", lambda name: True)
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    assert parallel_compile.start(s, s.analyses) is None


def test_without_loops_the_helper_compiles_the_evaluation(tmp_path, monkeypatch):
    """Modes only (no loops): the helper's one task is the evaluation, which `sim run` waits
    for while it assembles the model; the same modes as without a helper."""
    path = tmp_path / "arm.toml"
    path.write_text(arm_model.scenario(0.1, "[modes]\npose = [0.45, -0.2]\ncount = 3\n"))
    reference = tmp_path / "reference.h5"
    assert main(["run", str(path), "--out", str(reference)]) == 0
    started = []
    helper = parallel_compile.Helper

    def spy(s, names, tasks):
        started.append(helper(s, names, tasks))
        return started[-1]

    monkeypatch.setattr(parallel_compile, "cold", lambda name: True)
    monkeypatch.setattr(parallel_compile, "Helper", spy)
    out = tmp_path / "helped.h5"
    assert main(["run", str(path), "--out", str(out)]) == 0
    (h,) = started
    assert h.tasks == ("evaluation",) and h.names == ()
    assert h._process.poll() is not None and h._ready | h._mine == {"evaluation"}
    with h5py.File(reference) as a, h5py.File(out) as b:
        np.testing.assert_array_equal(a["modes/frequencies"][...], b["modes/frequencies"][...])


@pytest.mark.parametrize("broken", [False, True])
def test_a_helper_shares_the_compilation(scenario, monkeypatch, broken):
    """Every probe faked cold: a helper process shares the tasks (the rigid motion's step,
    the loops of every analysis that has some) with this one, which also compiles the
    evaluation, and the results are those of a run without it; a helper that fails (a
    scenario it cannot read) leaves every task to this process."""
    reference = scenario.with_name("reference.h5")
    assert main(["run", str(scenario), "--out", str(reference)]) == 0
    started = []
    helper = parallel_compile.Helper

    def spy(s, names, tasks):
        if broken:
            s = type("Broken", (), {"path": scenario.with_name("missing.toml"), "overrides": ()})()
        started.append(helper(s, names, tasks))
        return started[-1]

    monkeypatch.setattr(parallel_compile, "cold", lambda name: True)
    monkeypatch.setattr(parallel_compile, "Helper", spy)
    out = scenario.with_name("helped.h5")
    assert main(["run", str(scenario), "--out", str(out)]) == 0
    (h,) = started
    assert h.tasks == ("rigid_motion", "inverse_dynamics", "frequencies", "transient")  # KED's loops: frequencies'
    assert h._process.poll() is not None, "the helper was left running"
    assert h._ready | h._mine == set(h.tasks) and not h._ready & h._mine, "each task done once"
    assert not os.path.exists(h._claims)
    if broken:
        assert h._process.returncode == 1 and h._mine == set(h.tasks)
    with h5py.File(reference) as a, h5py.File(out) as b:
        for name in ("inverse_dynamics/actuator_forces", "transient/deviation", "ked/deviation",
                     "frequencies/frequencies"):
            np.testing.assert_array_equal(a[name][...], b[name][...])
        assert b.attrs["kernels_load_time_s"] > 0


def test_the_helper_takes_the_unclaimed_tasks_from_the_last(scenario, tmp_path):
    """A task is claimed once; the helper does the others, the last first, and reports each."""
    claims = tmp_path / "claims"
    claims.mkdir()
    assert parallel_compile.claim(claims, "rigid_motion")
    assert not parallel_compile.claim(claims, "rigid_motion")
    out = subprocess.run([sys.executable, "-m", "sim.app.parallel_compile", str(claims), str(scenario),
                          str(os.getpid()), "rigid_motion", "inverse_dynamics", "frequencies", "transient", "--"],
                         capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.split() == ["transient", "frequencies", "inverse_dynamics"]
    assert sorted(p.name for p in claims.iterdir()) == ["frequencies", "inverse_dynamics", "rigid_motion",
                                                         "transient"]


def _ended(pid):
    """Whether the process ``pid`` has exited (a zombie nobody reaps, in a container, has)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in "ZX"
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads process states in /proc")
def test_a_helper_whose_run_is_killed_ends_and_removes_its_claims(scenario, tmp_path):
    """`sim run` killed past its clean-up (SIGKILL) while its helper compiles on a cold
    cache: the helper removes the claims and exits within a second, rather than compiling on
    (the transient's loop: tens of seconds) for nobody."""
    run = f"""
import time
from sim.app import parallel_compile
from sim.app.scenario import load_scenario
s = load_scenario({str(scenario)!r})
h = parallel_compile.Helper(s, s.analyses, ["transient"])
print(h._claims, h._process.pid, flush=True)
time.sleep(600)
"""
    parent = subprocess.Popen([sys.executable, "-c", run], stdout=subprocess.PIPE, text=True, cwd=ROOT,
                              env=dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache")))
    pid = None
    try:
        claims, pid = parent.stdout.readline().split()
        deadline = time.monotonic() + 120
        while not os.path.exists(os.path.join(claims, "transient")):     # claimed: compiling
            assert time.monotonic() < deadline and not _ended(int(pid)), "the helper did not start its task"
            time.sleep(0.05)
        time.sleep(0.5)
        parent.kill()
        parent.wait()
        killed = time.monotonic()
        while not _ended(int(pid)) and time.monotonic() < killed + 10:
            time.sleep(0.05)
        assert _ended(int(pid)) and time.monotonic() - killed < 1.0, "the helper went on compiling"
        assert not os.path.exists(claims)
    finally:
        parent.kill()
        parent.stdout.close()
        if pid is not None and not _ended(int(pid)):
            os.kill(int(pid), signal.SIGKILL)


def test_the_tasks_compile_what_the_analyses_call(scenario):
    """The kernels compiled from an unassembled model's types alone (the tasks) have
    the signatures of the analyses' calls: after a run, compiling them adds no signature to
    their dispatchers.  And the unassembled model has the assembled one's tables."""
    from numba import typeof

    from sim.app.scenario import load_scenario
    from sim.kernels.common import by_reference
    from sim.kernels.equations import evaluate, inverse_terms, potential
    from sim.model.loader import load_model
    from sim.model.tables import tables
    from sim.solvers.frames import _frame_loop
    from sim.solvers.integrators import _run
    from sim.solvers.reactions import _square
    from sim.solvers.motion import _segment

    s = load_scenario(scenario)
    assert main(["run", str(scenario), "--out", str(scenario.with_suffix(".h5"))]) == 0
    loops = (_run, _frame_loop, inverse_terms, _square, _segment, evaluate, potential, by_reference)
    called = [set(loop.signatures) for loop in loops]
    assert all(called), "every loop is used by the scenario"
    model = load_model(s.model_file, s.model_parameters, assemble=False)
    assembled = load_model(s.model_file, s.model_parameters)
    assert model.ranks == () and assembled.ranks == (12, 12), "not assembled: no generic ranks"
    assert typeof(tables(model)) == typeof(tables(assembled))
    for task in ("evaluation", "rigid_motion", *s.analyses):
        parallel_compile.compile_task(task, model, s)
    assert [set(loop.signatures) for loop in loops] == called
