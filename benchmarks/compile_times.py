"""Where a cold start's compilation goes: ``sim run SCENARIO`` with every numba compilation
timed, per function (and how many signatures) excluding the compilations nested in it.

Run from an empty kernel cache, for example:
``NUMBA_CACHE_DIR=$(mktemp -d) python benchmarks/compile_times.py scenarios/rrru3_circle.toml``
(``--signatures``: also list the signatures of the kernels compiled more than once).
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
SIGNATURES = collections.defaultdict(list)


def _timed(self, sig):
    # numba asks a dispatcher for a signature it already has (a look-up, not a compilation)
    # whenever a caller is typed: only the first request of a signature counts.
    known = len(self.overloads)
    start = time.perf_counter()
    _stack.append(0.0)
    try:
        return _compile(self, sig)
    finally:
        elapsed = time.perf_counter() - start
        nested = _stack.pop()
        name = f"{self.py_func.__module__}.{self.py_func.__name__}"
        TIMES[name] += elapsed - nested
        if len(self.overloads) > known:
            COUNTS[name] += 1
            SIGNATURES[name].append(sig)
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
    if "--signatures" in sys.argv:
        for name, sigs in SIGNATURES.items():
            if len(sigs) > 1 and name.startswith("sim."):
                print(name)
                for sig in sigs:
                    print("    ", sig)


if __name__ == "__main__":
    paths = [arg for arg in sys.argv[1:] if not arg.startswith("--")]
    main(paths[0] if paths else "scenarios/navaro_modes.toml")
