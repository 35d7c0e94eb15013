"""Cold kernel caches filled by a helper process: the first `sim run` of a fresh install.

Numba compiles on one core, and a cold start of a scenario with several analyses (the
3-RRRU's four) spends most of its time compiling.  The analyses' own loops are independent
kernels, so `sim run` hands the last analysis whose kernels are cold to a helper process on
another core (``python -m sim.app.parallel_compile SCENARIO NAME... -- KEY=VALUE...``), which
compiles them into numba's on-disk cache while this process compiles and runs the others;
that analysis then waits for the helper and loads its kernels from the cache.  Warm caches,
one core, or a single cold analysis (nothing to overlap): no helper.

The helper writes each prepared analysis' name on a line of its standard output; it is quiet
otherwise, and this process ends it on its own way out (a failure, an interrupt).  Should it
fail, the analysis compiles its kernels itself, as without a helper.
"""
import importlib
import os
import subprocess
import sys

EXIT_TIMEOUT = 10.0   # s a helper that has prepared everything is given to exit
# The slowest kernel each analysis' ``prepare`` compiles, as "module.function": absent from
# numba's cache, the analysis' kernels are cold.
PROBES = {"transient": "sim.solvers.integrators._run", "ked": "sim.solvers.ked._frame_loop",
          "frequencies": "sim.solvers.ked._frame_loop"}


def cold(name):
    """Whether the kernels of analysis ``name`` are missing from numba's cache."""
    probe = PROBES.get(name)
    if probe is None:
        return False
    module, function = probe.rsplit(".", 1)
    dispatcher = getattr(importlib.import_module(module), function)
    try:
        # numba's index of the function's cached signatures, empty when absent or stale.
        return not dispatcher._cache._cache_file._load_index()
    except Exception:       # numba's internals changed: no helper, as on a warm cache
        return False


class Helper:
    """A helper process preparing the kernels of the analyses ``names`` (in that order)."""

    def __init__(self, scenario, names):
        self.names = tuple(names)
        self._ready = set()
        command = [sys.executable, "-m", __name__, str(scenario.path), *self.names, "--",
                   *scenario.overrides]
        self._process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, text=True)

    def wait(self, name):
        """Block until the helper has prepared ``name`` or ended (then the caller compiles)."""
        while name not in self._ready:
            line = self._process.stdout.readline()
            if not line:
                self._process.wait()
                return
            self._ready.add(line.strip())

    def close(self):
        """Let a helper that has prepared everything exit; end one that has not."""
        if self._ready.issuperset(self.names):
            try:
                self._process.wait(timeout=EXIT_TIMEOUT)
            except subprocess.TimeoutExpired:
                pass
        if self._process.poll() is None:
            self._process.terminate()
            self._process.wait()
        self._process.stdout.close()


def start(scenario, names):
    """A :class:`Helper` for the last of the analyses ``names`` (execution order) whose
    kernels are cold, or None when there is nothing to overlap or no other core."""
    cold_names = [name for name in names if cold(name)]
    kernels = {PROBES[name] for name in cold_names}      # KED and frequencies share theirs
    if len(kernels) < 2 or (os.cpu_count() or 1) < 2:
        return None
    last = cold_names[-1]
    return Helper(scenario, [last])


def main(argv):
    """The helper: ``SCENARIO NAME... -- OVERRIDE...``; prepares each analysis' kernels."""
    from sim.analyses import PREPARE
    from sim.app.api import load_model
    from sim.app.scenario import load_scenario

    split = argv.index("--")
    path, names, overrides = argv[0], argv[1:split], argv[split + 1:]
    scenario = load_scenario(path, overrides)
    model = load_model(scenario.model_file, **scenario.model_parameters)
    for name in names:
        PREPARE[name](model, scenario)
        print(name, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
