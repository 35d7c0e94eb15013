"""ffrsim: rigid–flexible multibody dynamics (floating frame of reference) for parallel robots.

Public API: build a model with :class:`ModelBuilder` and :class:`Section` (or load a model
file with :func:`load_model`) and ask it questions: :func:`modes`, :func:`stiffness`, :func:`frequencies`,
:func:`transient`, :func:`ked`, :func:`inverse_dynamics`, :func:`frf`, :func:`identify` (each
takes its scenario table's keys as keyword arguments and returns a :class:`Result`);
:func:`run` runs a scenario file as ``sim run`` does and :func:`open_results` reads a result
file's group as an xarray Dataset.  Lower level: :func:`solve_pose`, :func:`mass_matrix`,
:func:`rigid_motion`, ...  See ``README.md`` and ``docs/``.
"""
import os
import sys

# The matrices here are small (tens to hundreds of rows): threaded BLAS only adds
# synchronisation cost, and ruins timings when two processes share the two cores.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
# The kernels are compiled at LLVM's -O2, not numba's default -O3: a fifth less compilation
# from an empty cache (3-RRRU: 157 -> 124 s) for the same cost per step (frames, rigid motion,
# transient steps within the machine's noise, a few per cent).  Read when numba is imported;
# NUMBA_OPT set by the user wins.
os.environ.setdefault("NUMBA_OPT", "2")
# ... and when numpy was imported first, the environment is too late: limit the loaded pools
# (not otherwise: threadpoolctl takes 20 ms, a third of `sim --help`).
if "numpy" in sys.modules:
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")

# What ``from sim import NAME`` gives, imported on first use: ``sim --help`` and the model files
# pay only for what they use.
_LAZY = {
    "Model": "sim.model.builder", "ModelBuilder": "sim.model.builder", "Section": "sim.model.beam", "Material": "sim.model.beam",
    "STEEL": "sim.model.beam", "ALUMINIUM": "sim.model.beam",
    "SimError": "sim.errors", "load_model": "sim.model.loader", "assemble": "sim.model.assembly",
    "solve_pose": "sim.model.assembly", "mass_matrix": "sim.model.dynamics", "stiffness_matrix": "sim.model.dynamics",
    "mass_and_forces": "sim.model.dynamics", "energy": "sim.model.dynamics", "ModalResult": "sim.solvers.modal",
    "rigid_motion": "sim.solvers.motion", "RigidMotion": "sim.solvers.motion",
    **{name: "sim.app.api" for name in ("Result", "load_model", "modes", "stiffness", "frequencies", "transient", "ked",
                                        "inverse_dynamics", "frf", "identify", "run", "open_results")},
}
__all__ = sorted(_LAZY)


def __getattr__(name):
    if name in _LAZY:
        import importlib
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'sim' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
