"""Cold kernel caches filled by two processes: the first `sim run` of a fresh install.

Numba compiles on one core, and a cold start spends most of its time compiling.  The rigid
motion's sample step and the analyses' own loops (the inverse dynamics' terms, KED's frames,
the transient's steps) call the evaluation through its machine-code address
(:func:`sim.kernels.equations.addresses`), so each compiles from its argument types alone,
independently of the evaluation and of any other.  On a cold cache `sim run` therefore starts
a helper process on another core (``python -m sim.app.parallel_compile CLAIMS SCENARIO
PARENT TASK... -- KEY=VALUE...``) before it builds the model, and the two share these compilation
tasks (:func:`tasks`): the helper takes them from the last (the last analysis' loops, which
are needed last), compiling them from the model's unassembled structure into numba's
on-disk cache; `sim run` assembles the model and compiles the evaluation, then takes them from
the first.  Each task goes to the first process that claims it (a file created exclusively in
the directory ``CLAIMS``).  An analysis whose loops the helper took waits for the helper to
report them and loads them from the cache.  Warm caches or one core: no helper.

The helper writes the name of each task it has done on a line of its standard output; it is
quiet otherwise, and `sim run` ends it on its own way out (a failure, an interrupt).  Should
it fail, each analysis compiles what it lacks itself, as without a helper.  Should `sim run`
end without its way out (``kill -9``, a crash, the out-of-memory killer), the helper removes
the claims and exits at once, rather than finishing a compilation nobody waits for.
"""
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

EXIT_TIMEOUT = 10.0   # s a helper that has done everything is given to exit
WATCH_PERIOD = 0.2    # s between the helper's checks that the process it works for is there
EXIT_ORPHANED = 3     # the helper's exit code when that process has gone
# The slowest kernel of each analysis' ``loops`` (:mod:`sim.analyses`) and of the two other
# tasks, as "module.function": absent from numba's cache, the kernels are cold.  Analyses
# with the same probe share their loops: one task.
PROBES = {"transient": "sim.solvers.integrators._run", "ked": "sim.solvers.frames._frame_loop",
          "frequencies": "sim.solvers.frames._frame_loop", "inverse_dynamics": "sim.kernels.equations.inverse_terms",
          "rigid_motion": "sim.solvers.motion._segment", "evaluation": "sim.kernels.equations.evaluate"}
MOTION = "rigid_motion"   # the task every analysis with loops needs first: the rigid motion's step
EVALUATION = "evaluation"   # the task of scenarios without loops (modes, say): the evaluation


def cold(name):
    """Whether the kernels of the analysis or task ``name`` are missing from numba's cache."""
    probe = PROBES.get(name)
    if probe is None:
        return False
    module, function = probe.rsplit(".", 1)
    dispatcher = getattr(importlib.import_module(module), function)
    if dispatcher.overloads:    # compiled or loaded in this process already (an earlier run)
        return False
    try:
        # numba's index of the function's cached signatures, empty when absent or stale.
        return not dispatcher._cache._cache_file._load_index()
    except Exception:       # numba's internals changed: no helper, as on a warm cache
        return False


def tasks(names):
    """The compilation tasks of the analyses ``names`` (execution order): those whose loops
    are cold, the rigid motion's step (where cold) first, then one task per set of shared
    loops, named after its first analysis.  Without such loops, the evaluation where cold:
    `sim run` then only assembles the model meanwhile (and waits); with them, the evaluation
    is `sim run`'s (the loops are the longer work)."""
    from sim.analyses import LOOPS
    todo, probes = [], set()
    for name in [MOTION] + [name for name in names if name in LOOPS]:
        if PROBES[name] not in probes and cold(name):
            todo.append(name)
            probes.add(PROBES[name])
    if len(todo) > (MOTION in todo):
        return todo
    return [EVALUATION] if cold(EVALUATION) else []


def compile_task(task, model, scenario):
    """Compile, or load from numba's cache, the kernels of ``task`` (:func:`tasks`) for
    ``model``, assembled or not, without calling any of them."""
    if task == MOTION:
        from sim.solvers.motion import compile_loop
        compile_loop(model)
    elif task == EVALUATION:
        from sim.model.evaluator import compile_evaluation
        compile_evaluation(model)
    else:
        from sim.analyses import LOOPS
        LOOPS[task](model, scenario)


def claim(claims, task):
    """Whether this process is the first to claim ``task`` in the directory ``claims``."""
    try:
        os.close(os.open(os.path.join(claims, task), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        return False


class Helper:
    """A helper process sharing the compilation ``tasks`` (:func:`tasks`) with this one.

    Parameters
    ----------
    scenario : Scenario
    names : sequence of str
        The scenario's analyses, in execution order.
    tasks : list of str
    """

    def __init__(self, scenario, names, tasks):
        self.tasks = tuple(tasks)
        probes = {PROBES[task]: task for task in self.tasks}
        self._task = {name: probes[PROBES[name]] for name in names if PROBES.get(name) in probes}
        self._ready, self._mine = set(), set()
        self._claims = tempfile.mkdtemp(prefix="sim-compile-")
        command = [sys.executable, "-m", __name__, self._claims, str(scenario.path), str(os.getpid()),
                   *self.tasks, "--", *scenario.overrides]
        self._process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, text=True)

    @property
    def names(self):
        """The analyses whose kernels go through a task."""
        return tuple(self._task)

    def share(self, model, scenario):
        """Do, from the first, every task the helper has not claimed yet."""
        for task in self.tasks:
            if claim(self._claims, task):
                compile_task(task, model, scenario)
                self._mine.add(task)

    def wait(self, name):
        """Block until the task of the analysis ``name`` is done: by this process, or by the
        helper (or the helper has ended: then the caller compiles what it lacks)."""
        task = self._task.get(name, name)
        while task in self.tasks and task not in self._mine and task not in self._ready:
            line = self._process.stdout.readline()
            if not line:
                self._process.wait()
                return
            self._ready.add(line.strip())

    def close(self):
        """Let a helper that has done its tasks exit; end one that has not."""
        if self._ready | self._mine >= set(self.tasks):
            try:
                self._process.wait(timeout=EXIT_TIMEOUT)
            except subprocess.TimeoutExpired:
                pass
        if self._process.poll() is None:
            self._process.terminate()
            self._process.wait()
        self._process.stdout.close()
        shutil.rmtree(self._claims, ignore_errors=True)


def start(scenario, names):
    """A :class:`Helper` for the analyses ``names`` (execution order), or None where no
    analysis' loops are cold or there is no other core."""
    todo = tasks(names) if (os.cpu_count() or 1) >= 2 else []
    return Helper(scenario, names, todo) if todo else None


def shared(model, scenario, helper):
    """In ``sim run``, with a ``helper`` and the model assembled: the evaluation (compiled
    here, or waited for where it is the helper's task), the tasks the helper has not claimed,
    and the rigid motion's step, loaded where an analysis with loops needs it."""
    from sim.model.evaluator import Evaluator
    from sim.solvers.motion import load_kernels
    if EVALUATION in helper.tasks:      # the helper's, unless it has not started yet
        helper.share(model, scenario)
        helper.wait(EVALUATION)
        Evaluator(model)
        return
    ev = Evaluator(model)
    helper.share(model, scenario)
    helper.wait(MOTION)
    load_kernels(model, ev)


def _watch(parent, claims):
    """In the helper, run in a thread: once the process ``parent`` that started it is no longer
    its parent (it was killed past its clean-up, and the helper handed to another), remove the
    ``claims`` directory and end the helper, in the middle of a compilation if need be (numba
    writes each cache file whole, under a temporary name, then renames it)."""
    while os.getppid() == parent:
        time.sleep(WATCH_PERIOD)
    shutil.rmtree(claims, ignore_errors=True)
    os._exit(EXIT_ORPHANED)


def main(argv):
    """The helper: ``CLAIMS SCENARIO PARENT TASK... -- OVERRIDE...``; does the tasks it claims,
    from the last, while the process ``PARENT`` (its pid) is there."""
    from sim.app.scenario import load_scenario
    from sim.model.loader import load_model

    split = argv.index("--")
    claims, path, parent, todo, overrides = argv[0], argv[1], int(argv[2]), argv[3:split], argv[split + 1:]
    threading.Thread(target=_watch, args=(parent, claims), daemon=True).start()
    scenario = load_scenario(path, overrides)
    # The structure is enough for the loops' types: assembling would compile the kinematics here too.
    model = load_model(scenario.model_file, scenario.model_parameters, assemble=False)
    for task in reversed(todo):
        if claim(claims, task):
            compile_task(task, model, scenario)
            print(task, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
    sys.stdout.flush()
    os._exit(0)     # done: a thread the model file started must not keep the helper alive
