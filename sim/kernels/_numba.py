"""numba, fenced: every use of numba's internals (what its documentation does not promise) is
in this module, so that a numba release can break at most what is here.

Two kinds of use:

* **patches** that make numba's disk cache faster and safer (:func:`_tolerant_cache_index`,
  :func:`_light_cache_loads`, :func:`_package_cache_stamp`), compilations hold back stop
  signals (:func:`_compiles_hold_signals`), BLAS and LAPACK load without the package
  ``scipy.linalg`` (:func:`_light_lapack`), plain arrays are typed without ``numpy.ma``
  (:func:`_plain_array_types`) and numba's runtime functions are cached
  (:func:`_cached_runtime`).  They are applied by :func:`apply` only on the numba
  releases they were tested with (:data:`TESTED`, the range ``pyproject.toml`` pins) and unless
  ``FFRSIM_NUMBA_PATCHES=0``; elsewhere, or where a patch no longer finds what it replaces,
  numba keeps its own behaviour: slower cache loading, never a broken import;
* **hooks** the compiled engine is built on: the LAPACK ``dgetrf`` symbol numba links its own
  ``numpy.linalg`` support to (:func:`lapack_getrf`: ``None`` when unavailable or unpatched,
  and :mod:`sim.kernels.lapack` then factorises with compiled loops), and the machine-code
  address of a compiled kernel with the code generation that calls it as a first-class
  function (:func:`address`, :func:`function_at`).
"""
import functools
import hashlib
import os

import numba
from numba import types

# numba releases the patches were tested with: [first, end).
TESTED = ((0, 68), (0, 69))


def version():
    """numba's release as ``(major, minor)``."""
    return tuple(int(part) for part in numba.__version__.split(".")[:2])


def enabled():
    """Whether the patches apply: a tested numba and ``FFRSIM_NUMBA_PATCHES`` not ``0``."""
    return os.environ.get("FFRSIM_NUMBA_PATCHES", "1") != "0" and TESTED[0] <= version() < TESTED[1]


def apply():
    """Apply every patch that :func:`enabled` allows; returns the names of those applied.  A
    patch that no longer finds what it replaces is skipped (each looks everything up before it
    assigns anything)."""
    applied = []
    if not enabled():
        return applied
    for patch in (_tolerant_cache_index, _light_cache_loads, _package_cache_stamp, _compiles_hold_signals,
                  _light_lapack, _plain_array_types, _cached_runtime):
        try:
            patch()
        except (ImportError, AttributeError, TypeError):
            continue
        applied.append(patch.__name__)
    return applied


def lapack_getrf():
    """numba's external ``dgetrf`` function (LAPACK LU from ``scipy.linalg.cython_lapack``, a
    symbol, so code calling it stays cacheable), or ``None`` where this numba does not offer it
    or the patches are off (:func:`enabled`).

    The symbol of numba's helper library with the signature of numba's
    ``numba.np.linalg._LAPACK.numba_xxgetrf`` (LAPACK's integers 32-bit, as numba checks of
    scipy's), written out here: importing ``numba.np.linalg`` for it costs a run 25 ms.  The
    symbol reaches LAPACK on its first call (:func:`_light_lapack`)."""
    if not enabled():
        return None
    signature = types.intc(types.char, types.intp, types.intp, types.CPointer(types.float64), types.intp,
                           types.CPointer(types.int32))
    return types.ExternalFunction("numba_xxgetrf", signature)


def address(kernel, signature):
    """Machine-code address of the dispatcher ``kernel`` compiled (or loaded from the cache)
    for the full ``signature``; :func:`sim.kernels.common.pointer` keeps the addresses."""
    result = kernel.get_compile_result(signature)
    return result.library.get_pointer_to_function(result.fndesc.llvm_func_name)


def function_at(kind):
    """Code generation of a first-class function of type ``kind`` (a ``types.FunctionType``)
    from a machine-code address (numba's calling convention, so exceptions reach the caller)."""
    from numba.core import cgutils

    def codegen(context, builder, signature, args):
        value = cgutils.create_struct_proxy(kind)(context, builder)
        value.jit_addr = builder.inttoptr(args[0], context.get_value_type(types.voidptr))
        return value._getvalue()
    return codegen


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



def _light_lapack():
    """Let numba reach BLAS and LAPACK without importing the package ``scipy.linalg``.

    numba's helper library takes each BLAS and LAPACK function from scipy's public Cython
    modules ``scipy.linalg.cython_blas`` and ``cython_lapack`` on its first call, importing them
    by name, and loading cached code that uses numba's array functions imports them too (its
    ``numba.np.arraymath`` checks for BLAS).  Imported the usual way, that runs the package
    ``scipy.linalg`` first, whose array-API layer imports ``numpy.testing`` and ``numpy.f2py``:
    about 0.1 s of every run, more than a small robot's whole transient, for two extension
    modules that need none of it.  They are loaded here from their files under their own
    names, so that numba's imports find them in ``sys.modules``.  ``import scipy.linalg``
    later works as before: its own extensions find them there too, and a one-time finder
    binds them as the package's attributes once it is loaded (the import system binds only
    the submodules it loads itself).  Nothing is done where ``scipy.linalg`` is imported
    already.
    """
    import importlib.abc
    import importlib.machinery
    import importlib.util
    import sys

    if "scipy.linalg" in sys.modules:
        return
    import scipy

    folder = os.path.join(os.path.dirname(scipy.__file__), "linalg")
    stems = ("cython_blas", "cython_lapack")
    for stem in stems:
        name = f"scipy.linalg.{stem}"
        if name in sys.modules:
            continue
        paths = [os.path.join(folder, stem + suffix) for suffix in importlib.machinery.EXTENSION_SUFFIXES]
        paths = [path for path in paths if os.path.isfile(path)]
        if not paths:
            raise ImportError(f"no {name} extension in {folder}")
        spec = importlib.util.spec_from_file_location(name, paths[0])
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise

    class Bind(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name != "scipy.linalg":
                return None
            sys.meta_path.remove(self)
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            if spec is not None and spec.loader is not None:
                own = spec.loader.exec_module

                def exec_module(package):
                    own(package)
                    for stem in stems:
                        setattr(package, stem, sys.modules[f"scipy.linalg.{stem}"])
                spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, Bind())


def _plain_array_types():
    """Type a plain ``numpy.ndarray`` without importing ``numpy.ma``.

    numba types an array argument in Python wherever its compiled dispatcher does not (inside
    a tuple or a named tuple: the solvers' records), and first asks whether it is a masked
    array, which imports ``numpy.ma`` on first use (7 ms of a small run).  An array of exactly
    the type ``numpy.ndarray`` is no masked array: it gets numba's own type at once (dtype,
    dimensions, layout, read-only flag); anything else, or a dtype numba does not take, goes
    to numba's typing as before.
    """
    import numpy as np
    from numba.core.typing import typeof
    from numba.np import numpy_support

    numba_own = typeof.typeof_impl.dispatch(np.ndarray)
    if getattr(numba_own, "plain", False):
        return

    def typeof_array(val, c):
        if type(val) is np.ndarray:
            try:
                dtype = numpy_support.from_dtype(val.dtype)
            except Exception:
                return numba_own(val, c)
            return types.Array(dtype, val.ndim, numpy_support.map_layout(val), readonly=not val.flags.writeable)
        return numba_own(val, c)

    typeof_array.plain = True
    typeof.typeof_impl.register(np.ndarray)(typeof_array)


def _cached_runtime():
    """Load numba's runtime functions (NRT: reference counts, atomics) from a cache.

    numba compiles them from LLVM IR when a process loads its first kernel: 15-25 ms of every
    run, for the same machine code each time.  Here they are compiled once with object caching
    on, kept beside ``sim``'s kernel cache (numba's folder for it: in-tree, or the user's), named
    by numba's and llvmlite's releases, numba's codegen key (target, CPU name and features) and
    its NRT debugging settings, written atomically, and loaded as a cached kernel is; an entry
    that is missing or cannot be read is compiled again.
    """
    import contextlib
    import pickle
    import tempfile

    import llvmlite
    from numba.core import config
    from numba.core.runtime import nrtdynmod

    own = nrtdynmod.compile_nrt_functions
    if getattr(own, "cached", False):
        return

    def where(ctx):
        from sim.kernels.common import runtime

        # numba's IR for them reads its DEBUG_NRT settings: part of the name too
        debug = (config.DEBUG_NRT, config.DEBUG_NRT_STACK_LIMIT)
        key = repr((numba.__version__, llvmlite.__version__, ctx.codegen().magic_tuple(), debug)).encode()
        name = f"numba-runtime-{hashlib.sha256(key).hexdigest()[:16]}.nbo"
        return os.path.join(runtime._cache._cache_path, name)

    def compile_nrt_functions(ctx):
        try:
            path = where(ctx)
        except Exception:       # numba's internals moved: compile as numba does
            return own(ctx)
        try:
            with open(path, "rb") as f:
                return ctx.codegen().unserialize_library(pickle.load(f))
        except Exception:
            pass
        ir_module, library = nrtdynmod.create_nrt_module(ctx)
        library.enable_object_caching()
        library.add_ir_module(ir_module)
        library.finalize()
        temporary = None
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            # Created exclusively under a random name (no link followed), readable as numba's
            # own cache files are, then renamed over the entry in one step.
            handle, temporary = tempfile.mkstemp(prefix=".numba-runtime-", suffix=".tmp", dir=os.path.dirname(path))
            os.fchmod(handle, 0o644)
            with os.fdopen(handle, "wb") as f:
                pickle.dump(library.serialize_using_object_code(), f)
            os.replace(temporary, path)
        except Exception:       # a read-only cache: compiled in every process, as numba does
            if temporary is not None:
                with contextlib.suppress(OSError):
                    os.remove(temporary)
        return library

    compile_nrt_functions.cached = True
    nrtdynmod.compile_nrt_functions = compile_nrt_functions


def _light_cache_loads():
    """Load a cached kernel with only what running it needs.

    numba does two things on every load from the disk cache that a process which only runs
    the kernel does not need, a fifth of a warm `sim modes`:

    * it refreshes its target context: imports and installs every implementation it can
      compile (arrays, linalg, random, typed containers, ...).  Running machine code needs only
      the symbols it refers to: the runtime's (NRT), and, for code that hashes strings, those
      of the hash secret, which the import of ``numba.cpython.hashing`` registers (an import
      worth skipping, so only for such code).  Every compilation refreshes the context itself (numba's
      ``CompilerBase``), so a miss after a light load compiles as before;
    * it parses the library's LLVM bitcode (kept for linking it into a caller compiled later)
      and lists the symbols it defines, so that the entry points can be looked up.  Here the
      bitcode waits until a caller is linked against it, or a symbol is looked up that no
      parsed library defines; the two entry points (the function and its Python wrapper,
      named in the cached function descriptor) are listed at once;
    * it imports the module of every function whose environment the code holds, numba's own
      implementations' among them (``numba.np.arraymath``, ``npyimpl``, ``cpython.listobj``:
      a fifth of a small run's model build), for the module's globals.  Only object-mode
      code reads an environment's globals (numba's ``pylowering``); compiled code in
      nopython mode, all that ``sim`` has, reads its constants.  An environment whose module
      is not imported gets a dictionary that names the module.

    And it checks what it loaded: an overload cached for other argument types than those asked
    for (two processes that compiled the kernel at once can leave numba's index naming the
    other's data file) is a miss, compiled again, not run.
    """
    import sys
    import weakref

    import llvmlite.binding as ll
    from numba.core import caching, codegen, environment, sigutils
    from numba.core.runtime import rtsys

    library, engine = codegen.CPUCodeLibrary, codegen.JitEngine
    if getattr(caching.Cache.load_overload, "light", False):
        return
    rebuild, unserialize = caching.CompileResultCacheImpl.rebuild, library._unserialize.__func__
    for_linking, defined = library._get_module_for_linking, engine.is_symbol_defined
    rebuild_env = environment._rebuild_env
    pending = weakref.WeakSet()     # loaded libraries whose bitcode is not parsed yet

    def parse(lib):
        bitcode = lib.__dict__.pop("_pending_bitcode", None)
        if bitcode is not None:
            pending.discard(lib)
            lib._shared_module = ll.parse_bitcode(bitcode)
            lib._codegen._engine._load_defined_symbols(lib._shared_module)

    def load_overload(self, sig, target_context):
        rtsys.initialize(target_context)
        with self._guard_against_spurious_io_errors():
            cres = self._load_overload(sig, target_context)
        # numba saves a cache's index and its data files apart: two processes compiling one
        # kernel for different argument types at once can leave the index naming a data file
        # the other wrote.  Such an overload, for other types, is a miss: compiled (and saved)
        # again, never run on arguments it was not compiled for.
        if cres is not None and tuple(cres.signature.args) != tuple(sigutils.normalize_signature(sig)[0]):
            return None
        return cres

    def rebuild_light(self, target_context, payload):
        try:    # numba's payload: ((name, "object", (object code, bitcode)), fndesc, ...)
            (_, kind, (code, _)), fndesc = payload[0], payload[1]
            entries = {fndesc.llvm_func_name, fndesc.llvm_cpython_wrapper_name}
            hashes = kind != "object" or b"_numba_hashsecret_" in code
        except (TypeError, ValueError, IndexError, AttributeError):
            entries, hashes = set(), True
        if hashes:
            import numba.cpython.hashing  # noqa: F401  (registers the hash secret's symbols)
        symbols = target_context.codegen()._engine._defined_symbols
        new = entries - symbols
        symbols |= new
        try:
            return rebuild(self, target_context, payload)
        except BaseException:
            symbols -= new
            raise

    def unserialize_light(cls, cg, state):
        name, kind, data = state
        if kind != "object":
            return unserialize(cls, cg, state)
        code, bitcode = data
        lib = cg.create_library(name)
        lib.enable_object_caching()
        lib._set_compiled_object(code)
        lib._pending_bitcode = bitcode
        pending.add(lib)
        lib._finalize_final_module()
        return lib

    def get_module_for_linking(self):
        parse(self)
        return for_linking(self)

    def is_symbol_defined(self, name):
        if not defined(self, name):
            for lib in list(pending):
                parse(lib)
        return defined(self, name)

    def rebuild_env_light(modname, consts, env_name):
        if modname in sys.modules or environment.lookup_environment(env_name) is not None:
            return rebuild_env(modname, consts, env_name)
        env = environment.Environment({"__name__": modname})
        env.consts[:] = consts
        env.env_name = env_name
        environment.Environment._memo[env_name] = env
        return env

    load_overload.light = True
    caching.Cache.load_overload = load_overload
    environment._rebuild_env = rebuild_env_light
    caching.CompileResultCacheImpl.rebuild = rebuild_light
    library._unserialize = classmethod(unserialize_light)
    library._get_module_for_linking = get_module_for_linking
    engine.is_symbol_defined = is_symbol_defined


def _package_cache_stamp():
    """Every kernel of ``sim`` is cached under one stamp, :func:`package_stamp` of the package.

    numba stamps a cached kernel with its own source file only, and a kernel's cached machine
    code contains its callees from other files (the bodies' terms inside the evaluation): after
    an upgrade that changed a callee alone, the caller would load stale code.  One stamp over
    all the kernels' files recompiles them all instead.
    """
    from numba.core.caching import _SourceFileBackedLocatorMixin as Located

    own = Located.get_source_stamp
    if getattr(own, "package", False):
        return
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    from sim.kernels import package_stamp

    stamp = functools.lru_cache(maxsize=None)(package_stamp)

    def get_source_stamp(self):
        if os.path.abspath(self._py_file).startswith(root + os.sep):
            return stamp(root)
        return own(self)

    get_source_stamp.package = True
    Located.get_source_stamp = get_source_stamp



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
