"""Compiled physics kernels: pure functions over arrays (numba), no solver, no model object.

Each equation of the model lives here once; the public functions (:mod:`sim.model.dynamics`,
:mod:`sim.model.kinematics`, :mod:`sim.model.constraints`, :mod:`sim.model.springs`) allocate and call them, and
the compiled loops of the solvers call them directly.

* :mod:`~sim.kernels.frames`: rotation matrices, the configuration update ``q ⊕ dv``;
* :mod:`~sim.kernels.bodies`: mass blocks, forces and ``dQ/dv`` of the flexible bodies;
* :mod:`~sim.kernels.markers`: marker poses, local Jacobians, velocity-quadratic terms;
* :mod:`~sim.kernels.rows`: the joint primitives' constraint rows and ``gamma``;
* :mod:`~sim.kernels.springs`: lumped 6x6 springs and compliant actuators;
* :mod:`~sim.kernels.stretch`: geometric stiffening of beams;
* :mod:`~sim.kernels.equations`: the model's tables (:class:`~sim.kernels.equations.Tables`)
  and all of the above at one state, and the potential energy;
* :mod:`~sim.kernels.lapack`, :mod:`~sim.kernels.common`: LAPACK's LU, small helpers.
"""


def _tolerant_cache_index():
    """Read a numba cache index that cannot be unpickled as a stale one (a miss: recompile).

    numba unpickles an index before it compares the source stamp that would make it stale, so
    an index written by an older ffrsim whose pickled types have since moved (a fresh checkout
    over an old ``__pycache__``) raises there instead of recompiling.
    """
    import pickle

    from numba.core.caching import IndexDataCacheFile

    load = IndexDataCacheFile._load_index
    if getattr(load, "tolerant", False):
        return

    def _load_index(self):
        try:
            return load(self)
        except (AttributeError, ImportError, IndexError, TypeError, ValueError, EOFError, pickle.UnpicklingError):
            return {}

    _load_index.tolerant = True
    IndexDataCacheFile._load_index = _load_index


_tolerant_cache_index()


def _compiles_hold_signals():
    """Hold the stop signals back while numba compiles or loads any kernel in the main thread,
    wherever it is called from (:func:`sim.errors.signals_deferred`: a signal handled inside
    llvmlite's callbacks is lost, leaves numba broken, and an interrupted run would go on to
    its end).  The signal is raised when the outermost compilation ends."""
    import threading

    from numba.core import event

    from sim.errors import signals_deferred

    class Hold(event.Listener):
        def __init__(self):
            self.local = threading.local()      # nested compilations, per thread

        def _opened(self):
            if not hasattr(self.local, "open"):
                self.local.open = []
            return self.local.open

        def on_start(self, event):
            opened, context = self._opened(), None
            if not opened and threading.current_thread() is threading.main_thread():
                context = signals_deferred()      # the outermost compilation only
                context.__enter__()
            opened.append(context)

        def on_end(self, event):
            opened = self._opened()
            context = opened.pop() if opened else None
            if context is not None:
                context.__exit__(None, None, None)     # raises the held signal, if any

    event.register("numba:compile", Hold())


_compiles_hold_signals()
