"""Where a cold start's compilation goes: ``sim run SCENARIO`` with every numba compilation
timed, per function (and how many signatures) excluding the compilations nested in it.

Run from an empty kernel cache, for example:
``NUMBA_CACHE_DIR=$(mktemp -d) python benchmarks/compile_times.py scenarios/rrru3_circle.toml``
"""
import collections
import sys
import tempfile
import time

import numba.core.dispatcher as dispatcher

_compile = dispatcher.Dispatcher.compile
_stack = []
TIMES = collections.defaultdict(float)
COUNTS = collections.Counter()


def _timed(self, sig):
    start = time.perf_counter()
    _stack.append(0.0)
    try:
        return _compile(self, sig)
    finally:
        elapsed = time.perf_counter() - start
        nested = _stack.pop()
        name = f"{self.py_func.__module__}.{self.py_func.__name__}"
        TIMES[name] += elapsed - nested
        COUNTS[name] += 1
        if _stack:
            _stack[-1] += elapsed


def main(scenario):
    dispatcher.Dispatcher.compile = _timed
    from sim.app.cli import main as sim
    with tempfile.TemporaryDirectory() as tmp:
        code = sim(["run", scenario, "--out", f"{tmp}/r.h5"])
    print(f"sim run exit {code}; total compilation {sum(TIMES.values()):.1f} s")
    for name, seconds in sorted(TIMES.items(), key=lambda item: -item[1])[:30]:
        print(f"{seconds:7.2f} s  {COUNTS[name]:3d}x  {name}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "scenarios/navaro_modes.toml")
