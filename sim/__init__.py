"""ffrsim: rigid–flexible multibody dynamics (floating frame of reference) for parallel robots.

Public API: build a model with :class:`ModelBuilder` and :class:`Section` (or load a model
file with :func:`load_model`) and ask it questions: :func:`modes`, :func:`stiffness`, :func:`frequencies`,
:func:`transient`, :func:`ked`, :func:`inverse_dynamics`, :func:`frf`, :func:`identify` (each
takes its scenario table's keys as keyword arguments and returns a :class:`Result`);
:func:`run` runs a scenario file as ``sim run`` does and :func:`open_results` reads a result
file's group as an xarray Dataset; :func:`plot`, :func:`animate` and :func:`report` draw and
gather results as ``sim plot``, ``sim animate`` and ``sim report``; :func:`static_deflection`
gives the gravity sag and the deflection under a load at a pose.  The library beneath them:
:func:`simulate` (the time loop, with a :class:`Drive`), :func:`natural_modes` (modes at a
configuration, a :class:`ModalResult`), :class:`Evaluator` (the equations at a state),
:func:`rigid_motion`, :func:`solve_pose`, :func:`mass_matrix`, :func:`state_space` (a
python-control plant of the robot with its drives), ...  See ``README.md`` and ``docs/``.
"""
import os
import sys

# The one home of the version (pyproject.toml reads it): a result file records it, and
# importlib.metadata would cost every run its import and a search of the installation.
__version__ = "0.1.0"

# The matrices here are small (tens to hundreds of rows): threaded BLAS only adds
# synchronisation cost, and ruins timings when two processes share the two cores.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
# The kernels are compiled at LLVM's -O2, not numba's default -O3: a fifth less compilation
# from an empty cache for the same cost per step (frames, rigid motion,
# transient steps within the machine's noise, a few per cent).  Read when numba is imported;
# NUMBA_OPT set by the user wins.
os.environ.setdefault("NUMBA_OPT", "2")


def _writable(path):
    """True if ``path``, or the nearest of its ancestors that exists, can be written here."""
    path = os.path.abspath(path)
    while not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return os.access(path, os.W_OK | os.X_OK)


def _private_cache():
    """A directory of the system's temporary area only this user can write (cached machine
    code is run: nobody else may put a file there), or None."""
    import tempfile
    path = os.path.join(tempfile.gettempdir(), f"ffrsim-numba-{os.getuid()}")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        info = os.lstat(path)
        if os.path.isdir(path) and not os.path.islink(path) and info.st_uid == os.getuid() \
                and not info.st_mode & 0o022:
            return path
        return tempfile.mkdtemp(prefix="ffrsim-numba-")
    except OSError:
        return None


# numba caches the compiled kernels beside their sources (__pycache__), else in the user's
# cache directory; with neither writable (a read-only installation and no home, as for a
# container's or a service's user) it refuses to compile at all.  A private directory of the
# system's temporary area then holds them.
if "NUMBA_CACHE_DIR" not in os.environ and not _writable(os.path.join(os.path.dirname(__file__), "__pycache__")) \
        and not _writable(os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "numba")):
    _cache = _private_cache()
    if _cache:
        os.environ["NUMBA_CACHE_DIR"] = _cache

# ... and when numpy was imported first, the environment is too late: limit the loaded pools
# (not otherwise: importing threadpoolctl is a good part of `sim --help`).
if "numpy" in sys.modules:
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")

# What ``from sim import NAME`` gives (its module, or "module:attribute"), imported on first use: ``sim --help`` and the model files
# pay only for what they use.
_LAZY = {
    "Model": "sim.model.builder", "ModelBuilder": "sim.model.builder", "Section": "sim.model.beam", "Material": "sim.model.beam",
    "STEEL": "sim.model.beam", "ALUMINIUM": "sim.model.beam",
    "SimError": "sim.errors", "assemble": "sim.model.assembly",
    "solve_pose": "sim.model.assembly", "mass_matrix": "sim.model.dynamics", "stiffness_matrix": "sim.model.dynamics",
    "mass_and_forces": "sim.model.dynamics", "energy": "sim.model.dynamics", "Evaluator": "sim.model.evaluator",
    "ModalResult": "sim.solvers.modal", "natural_modes": "sim.solvers.modal:modes",
    "rigid_motion": "sim.solvers.motion", "RigidMotion": "sim.solvers.motion",
    "simulate": "sim.solvers.simulate", "Drive": "sim.solvers.simulate",
    "IntegratorOptions": "sim.solvers.integrators:Options",
    "state_space": "sim.solvers.closed_loop", "Servo": "sim.solvers.closed_loop",
    **{name: "sim.app.api" for name in ("Result", "load_model", "modes", "stiffness", "frequencies", "transient", "ked",
                                        "inverse_dynamics", "frf", "identify", "run", "open_results", "plot",
                                        "animate", "report", "static_deflection", "StaticDeflection")},
}
__all__ = sorted(_LAZY)


def __getattr__(name):
    if name in _LAZY:
        import importlib
        module, _, attribute = _LAZY[name].partition(":")     # "module:attribute" where the names differ
        value = getattr(importlib.import_module(module), attribute or name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'sim' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
