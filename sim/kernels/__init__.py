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
