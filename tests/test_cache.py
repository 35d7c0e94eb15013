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
