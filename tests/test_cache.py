"""numba's cache of the kernels: one stamp over every kernel source file (sim.kernels.package_stamp)."""
import importlib
import pkgutil
from pathlib import Path

from numba.core.registry import CPUDispatcher

import sim
from sim.kernels import package_stamp

ROOT = Path(sim.__file__).parent


def test_stamp_follows_kernel_files_only(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.py").write_text("from numba import njit\n\n\n@njit(cache=True)\ndef f(x):\n    return g(x)\n")
    (tmp_path / "sub" / "b.py").write_text("@njit(cache=True)\ndef g(x):\n    return x\n")
    (tmp_path / "c.py").write_text("def h():\n    return 1\n")
    first = package_stamp(tmp_path)
    (tmp_path / "c.py").write_text("def h():\n    return 2\n")       # no kernel: same stamp
    assert package_stamp(tmp_path) == first
    (tmp_path / "sub" / "b.py").write_text("@njit(cache=True)\ndef g(x):\n    return 2 * x\n")
    assert package_stamp(tmp_path) != first                          # a callee's file: all stale


def test_every_cached_kernel_carries_the_package_stamp():
    stamp = package_stamp(ROOT)
    found = 0
    for info in pkgutil.walk_packages([str(ROOT)], "sim."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if isinstance(value, CPUDispatcher) and value.__module__ == info.name and value._cache is not None:
                cache_file = getattr(value._cache, "_cache_file", None)
                if cache_file is not None:
                    found += 1
                    assert cache_file._source_stamp == stamp, f"{info.name}.{value.py_func.__name__}"
    assert found > 50


def test_a_kernel_compiled_for_its_address_is_found_by_a_call_from_python(tmp_path):
    """The evaluation is compiled for its machine-code address (`addresses`, the loops and the
    cold-start helper) and called from Python (modes, assembly), often in different processes.
    numba keys its disk cache by the signature as given: compiled from a full Signature, the
    code was stored under a key that a call from Python misses, so the next process compiled
    the evaluation again (12 s after every cold `sim run navaro_modes`).  A call from Python in a
    new process now loads what the address compilation stored."""
    import os
    import subprocess
    import sys
    (tmp_path / "tiny.py").write_text("from numba import njit\n\n\n@njit(cache=True)\ndef add(a, b):\n"
                                      "    a[0] += b\n")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=os.pathsep.join(
        [str(tmp_path), str(ROOT.parent), os.environ.get("PYTHONPATH", "")]))
    address = ("from numba import types\nimport tiny\nfrom sim.kernels.common import pointer\n"
               "assert pointer(tiny.add, types.void(types.float64[::1], types.float64)) > 0\n")
    call = ("import numpy as np\nimport tiny\na = np.zeros(1)\ntiny.add(a, 2.0)\nassert a[0] == 2.0\n"
            "print(sum(tiny.add.stats.cache_misses.values()), sum(tiny.add.stats.cache_hits.values()))\n")
    subprocess.run([sys.executable, "-c", address], env=env, check=True)
    out = subprocess.run([sys.executable, "-c", call], env=env, check=True, capture_output=True, text=True).stdout
    assert out.split() == ["0", "1"], out


def test_a_cached_kernel_loads_without_numbas_lowering_registry_and_a_miss_still_compiles(tmp_path):
    """A warm process loads its kernels without importing what numba needs only to compile
    (numba refreshes its whole target context before each cache load: 0.1-0.15 s of a warm
    `sim modes`; its random generators' implementations stand for the rest) and without
    parsing their bitcode; a kernel missing from the cache still compiles in that process (the
    compiler refreshes the context itself), also one that calls a loaded kernel (its bitcode
    is parsed then), and all give the right numbers."""
    import os
    import subprocess
    import sys
    (tmp_path / "tiny.py").write_text(
        "import numpy as np\nfrom numba import njit\n\n\n@njit(cache=True)\ndef solve(A, b):\n"
        "    return np.linalg.solve(A, b)\n\n\n@njit(cache=True)\ndef inverse(A):\n    return np.linalg.inv(A)\n\n\n"
        "@njit(cache=True)\ndef key(s):\n    return hash(s)\n\n\n"
        "@njit(cache=True)\ndef twice(A, b):\n    return 2.0 * solve(A, b)\n")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=os.pathsep.join(
        [str(tmp_path), str(ROOT.parent), os.environ.get("PYTHONPATH", "")]))
    setup = "import sys\nimport numpy as np\nimport sim.kernels\nimport tiny\nA = np.array([[2.0, 1.0], [1.0, 3.0]])\n"

    def printed(script):
        """What a fresh process running ``setup + script`` prints, split into words."""
        return subprocess.run([sys.executable, "-c", setup + script], env=env, check=True, capture_output=True,
                              text=True).stdout.split()

    printed("tiny.solve(A, np.ones(2))\ntiny.key('abc')\n")
    out = printed("x = tiny.solve(A, np.array([3.0, 4.0]))\n"
                  "assert np.allclose(x, [1.0, 1.0]), x\n"
                  "print(sum(tiny.solve.stats.cache_hits.values()), 'numba.np.random.generator_core' in sys.modules)\n"
                  "assert np.allclose(tiny.inverse(A) @ A, np.eye(2))\n"
                  "print(sum(tiny.inverse.stats.cache_misses.values()), 'numba.np.random.generator_core' in sys.modules)\n")
    assert out == ["1", "False", "1", "True"], out
    # The loaded library's bitcode is parsed only when a caller compiled here links it in.
    out = printed("x = tiny.solve(A, np.array([3.0, 4.0]))\n"
                  "lib = next(iter(tiny.solve.overloads.values())).library\n"
                  "print('_pending_bitcode' in vars(lib))\n"
                  "assert np.allclose(tiny.twice(A, np.array([3.0, 4.0])), [2.0, 2.0])\n"
                  "print('_pending_bitcode' in vars(lib), sum(tiny.twice.stats.cache_misses.values()))\n")
    assert out == ["True", "False", "1"], out
    # Code that hashes strings refers to the process's hash secret: loaded, it finds it.
    # A symbol no parsed library defines has every pending bitcode parsed before it is denied.
    out = printed("assert tiny.key('abc') == hash('abc')\nprint(sum(tiny.key.stats.cache_hits.values()))\n"
                  "from numba.core.registry import cpu_target\n"
                  "lib = next(iter(tiny.key.overloads.values())).library\n"
                  "print('_pending_bitcode' in vars(lib), cpu_target.target_context.codegen()._engine"
                  ".is_symbol_defined('no_such_symbol'), '_pending_bitcode' in vars(lib))\n")
    assert out == ["1", "True", "False", "False"], out
