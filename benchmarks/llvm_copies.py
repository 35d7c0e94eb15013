"""Where a cold start's LLVM time goes: per code library, the instructions after optimisation
that are its own and those copied in from the libraries it links (numba links each callee's
IR into every caller, ``linkonce_odr``, and optimises and emits it again there), with the
time of module optimisation and of machine-code emission; then the functions copied most.

Run from an empty kernel cache, on one process (no cold-start helper), for example:
``NUMBA_CACHE_DIR=$(mktemp -d) python benchmarks/llvm_copies.py scenarios/rrru3_circle.toml``
(measurement only: it wraps numba's private ``CPUCodeLibrary`` methods).
"""
import collections
import os
import sys
import tempfile
import time

from numba.core import codegen

os.cpu_count = lambda: 1      # no helper process: every library is finalised here
_finalize = codegen.CPUCodeLibrary.finalize
_optimize = codegen.CPUCodeLibrary._optimize_final_module
_emit = codegen.CPUCodeLibrary._finalize_final_module
OWN = {}
ROWS = []      # [name, own instructions, copied instructions, optimisation s, emission s]
COPIED = collections.Counter()
COPIES = collections.Counter()


def _instructions(function):
    return sum(1 for block in function.blocks for _ in block.instructions)


def finalize(self):
    # The library's own functions: those defined before its callees are linked in.
    OWN[id(self)] = {f.name for f in self._final_module.functions if not f.is_declaration}
    return _finalize(self)


def optimize(self):
    start = time.perf_counter()
    result = _optimize(self)
    elapsed = time.perf_counter() - start
    own, copied = 0, 0
    for f in self._final_module.functions:
        if f.is_declaration:
            continue
        n = _instructions(f)
        if f.name in OWN.get(id(self), ()):
            own += n
        else:
            copied += n
            COPIED[f.name] += n
            COPIES[f.name] += 1
    ROWS.append([self.name, own, copied, elapsed, 0.0])
    return result


def emit(self):
    start = time.perf_counter()
    result = _emit(self)
    if ROWS and ROWS[-1][0] == self.name:
        ROWS[-1][4] = time.perf_counter() - start
    return result


def main(scenario):
    codegen.CPUCodeLibrary.finalize = finalize
    codegen.CPUCodeLibrary._optimize_final_module = optimize
    codegen.CPUCodeLibrary._finalize_final_module = emit
    from sim.app.cli import main as sim
    with tempfile.TemporaryDirectory() as tmp:
        code = sim(["run", scenario, "--out", f"{tmp}/r.h5"])
    own, copied = sum(r[1] for r in ROWS), sum(r[2] for r in ROWS)
    print(f"sim run exit {code}; {len(ROWS)} libraries; instructions after optimisation: own {own}, "
          f"copied {copied} ({100 * copied / max(own + copied, 1):.0f} %); module optimisation "
          f"{sum(r[3] for r in ROWS):.1f} s, emission {sum(r[4] for r in ROWS):.1f} s")
    print("slowest libraries: optimisation s, emission s, own, copied, name")
    for name, n_own, n_copied, t_opt, t_emit in sorted(ROWS, key=lambda r: -(r[3] + r[4]))[:20]:
        print(f"{t_opt:6.2f} {t_emit:6.2f} {n_own:7d} {n_copied:7d}  {name}")
    print("functions copied most: instructions in all copies, copies, symbol")
    for name, n in COPIED.most_common(25):
        print(f"{n:7d} {COPIES[name]:4d}  {name[:140]}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "scenarios/navaro_modes.toml")
