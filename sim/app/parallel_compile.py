"""Cold kernel caches filled by a helper process: the first `sim run` of a fresh install.

Numba compiles on one core, and a cold start spends most of its time compiling.  The
analyses' own loops (the transient's steps, KED's frames) call the evaluation through its
machine-code address (:func:`sim.kernels.equations.addresses`), so they compile from their
argument types alone, independently of the evaluation.  On a cold cache `sim run` therefore
hands the loops of its analyses to a helper process on another core (``python -m
sim.app.parallel_compile SCENARIO NAME... -- KEY=VALUE...``, the analyses' ``loops`` of
:mod:`sim.analyses`), which compiles them into numba's on-disk cache while this process
compiles what every analysis shares, the evaluation and the rigid motion (:func:`shared`),
then runs the analyses that need no loop of the helper's.  An analysis with loops waits for
the helper to report them and loads them from the cache.  Warm caches or one core: no helper.

The helper writes the name of each analysis whose loops it has compiled on a line of its
standard output; it is quiet otherwise, and this process ends it on its own way out (a
failure, an interrupt).  Should it fail, each analysis compiles its loops itself, as
without a helper.
"""
import importlib
import os
import subprocess
import sys

EXIT_TIMEOUT = 10.0   # s a helper that has prepared everything is given to exit
# The slowest kernel of each analysis' ``loops``, as "module.function": absent from numba's
# cache, the analysis' kernels are cold.
PROBES = {"transient": "sim.solvers.integrators._run", "ked": "sim.solvers.ked._frame_loop",
          "frequencies": "sim.solvers.ked._frame_loop", "inverse_dynamics": "sim.kernels.equations.inverse_terms"}


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
    """A helper process compiling the loops of the analyses ``names`` (in that order)."""

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
    """A :class:`Helper` compiling the loops of those of the analyses ``names`` (execution
    order) whose kernels are cold, or None when there are none or no other core."""
    from sim.analyses import LOOPS
    cold_names = [name for name in names if name in LOOPS and cold(name)]
    if not cold_names or (os.cpu_count() or 1) < 2:
        return None
    return Helper(scenario, cold_names)


def shared(model):
    """Compile, or load from numba's cache, what every analysis shares, while the helper
    compiles the loops: the evaluation and the rigid motion's sample step."""
    from sim.solvers.motion import load_kernels
    load_kernels(model)


def main(argv):
    """The helper: ``SCENARIO NAME... -- OVERRIDE...``; compiles each analysis' loops."""
    from sim.analyses import LOOPS
    from sim.app.scenario import load_scenario
    from sim.model.loader import load_model

    split = argv.index("--")
    path, names, overrides = argv[0], argv[1:split], argv[split + 1:]
    scenario = load_scenario(path, overrides)
    # The structure is enough for the loops' types: assembling would compile the kinematics here too.
    model = load_model(scenario.model_file, scenario.model_parameters, assemble=False)
    for name in names:
        LOOPS[name](model, scenario)
        print(name, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
