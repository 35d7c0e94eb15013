"""numba fenced in sim/kernels/_numba.py (issue 46): on the tested numba every patch applies;
with the patches off (``FFRSIM_NUMBA_PATCHES=0``, as on an untested numba) ``import sim`` works
and the compiled LU falls back to loops that give LAPACK's factors and pivots."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg

import sim.kernels
from sim.kernels import _numba
from sim.kernels.lapack import _getrf_loops

ROOT = Path(sim.kernels.__file__).resolve().parents[2]


def test_every_patch_applies_on_the_tested_numba():
    assert _numba.TESTED[0] <= _numba.version() < _numba.TESTED[1]
    assert sim.kernels.PATCHES == ["_tolerant_cache_index", "_light_cache_loads", "_package_cache_stamp",
                                   "_compiles_hold_signals", "_light_lapack", "_plain_array_types",
                                   "_cached_runtime"]


def test_the_pin_is_the_tested_range():
    text = (ROOT / "pyproject.toml").read_text()
    (a, b), (c, d) = _numba.TESTED
    assert f'"numba>={a}.{b},<{c}.{d}"' in text


def test_compiled_loops_factorise_as_lapack():
    rng = np.random.default_rng(3)
    for n in (1, 5, 17):
        A = rng.standard_normal((n, n))
        A[:, 0] *= 1e-3                                   # pivoting matters
        lu, piv = np.asfortranarray(A.copy()), np.zeros(n, np.int32)
        assert _getrf_loops(lu, piv) == 0
        ref, ref_piv = scipy.linalg.lu_factor(A)
        np.testing.assert_array_equal(piv, ref_piv)
        np.testing.assert_allclose(lu, ref, rtol=1e-12, atol=1e-12)
    singular = np.asfortranarray(np.array([[1.0, 2.0], [2.0, 4.0]]))
    assert _getrf_loops(singular, np.zeros(2, np.int32)) == 2


def test_import_and_a_factorisation_with_the_patches_off(tmp_path):
    code = ("import numpy as np, sim, sim.kernels\n"
            "from sim.kernels.lapack import getrf, _getrf_loops\n"
            "assert sim.kernels.PATCHES == [] and getrf is _getrf_loops\n"
            "a = np.asfortranarray([[0.0, 2.0], [3.0, 1.0]]); p = np.zeros(2, np.int32)\n"
            "assert getrf(a, p) == 0 and list(p) == [1, 1]\n"
            "print(a[0, 0], a[1, 1])\n")
    env = dict(os.environ, FFRSIM_NUMBA_PATCHES="0", NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["3.0", "2.0"]


def test_a_small_run_does_without_scipy_linalg(tmp_path):
    """The package scipy.linalg, whose import pulls numpy.testing and numpy.f2py (about 0.1 s),
    stays out of a small robot's whole run: numba reaches BLAS and LAPACK through the light load
    (_light_lapack), sim.linalg decomposes small matrices with numpy's LAPACK.  Nor are numba's
    implementation modules imported for the environments of the cached code (_light_cache_loads).
    Imported afterwards, scipy.linalg works, and LAPACK's LU called from compiled code gives its
    factors and pivots bitwise.  (The run is done twice: a first one on a cold cache compiles.)"""
    kept_out = ("scipy.linalg", "numpy.f2py", "numpy.testing", "numba.np.arraymath", "numba.np.npyimpl",
                "numba.np.linalg", "numpy.ma")
    code = ("import sys\n"
            "from sim.app.cli import main\n"
            f"code = main(['run', {str(ROOT / 'scenarios' / 'slider_crank.toml')!r}, '--out', "
            f"{str(tmp_path / 'r.h5')!r}, '--force'])\n"
            f"print('imported', code, [m for m in {kept_out!r} if m in sys.modules])\n"
            "import numpy as np, scipy.linalg\n"
            "from scipy.linalg import cython_lapack\n"
            "assert scipy.linalg.cython_lapack is cython_lapack is sys.modules['scipy.linalg.cython_lapack']\n"
            "assert scipy.linalg.cython_blas is sys.modules['scipy.linalg.cython_blas']\n"
            "from sim.kernels.lapack import getrf, _getrf_lapack\n"
            "A = np.random.default_rng(5).standard_normal((90, 90))\n"
            "lu, piv = np.asfortranarray(A.copy()), np.zeros(90, np.int32)\n"
            "ref, ref_piv = scipy.linalg.lu_factor(A)\n"
            "print('lapack', getrf is _getrf_lapack, getrf(lu, piv), np.array_equal(lu, ref), np.array_equal(piv, ref_piv))\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=900)
        assert out.returncode == 0, out.stderr
    lines = {line.split()[0]: line.split()[1:] for line in out.stdout.splitlines() if line.split()}
    assert lines["imported"] == ["0", "[]"]
    assert lines["lapack"] == ["True", "0", "True", "True"]


def test_numba_runtime_compiled_once_then_loaded(tmp_path):
    """numba's runtime functions are compiled by the first process and loaded by the next
    (_cached_runtime); an unreadable entry is compiled again and replaced, and the kernels run
    right either way."""
    code = ("import numpy as np\n"
            "from numba.core.runtime import nrtdynmod\n"
            "made = []\n"
            "own = nrtdynmod.create_nrt_module\n"
            "nrtdynmod.create_nrt_module = lambda ctx: (made.append(1), own(ctx))[1]\n"
            "from sim.linalg import flush\n"
            "flushed = flush(np.array([1.0, 1e-30, -2.0])).tolist()\n"
            "print(len(made), flushed)\n")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))

    def run():
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr
        return out.stdout.split(None, 1)

    assert run() == ["1", "[1.0, 0.0, -2.0]\n"]
    entries = list((tmp_path / "cache").rglob("numba-runtime-*.nbo"))
    assert len(entries) == 1
    assert run() == ["0", "[1.0, 0.0, -2.0]\n"]
    entries[0].write_bytes(b"not a pickle")
    assert run() == ["1", "[1.0, 0.0, -2.0]\n"]
    assert run() == ["0", "[1.0, 0.0, -2.0]\n"]


def test_plain_arrays_typed_as_numba_types_them():
    """_plain_array_types gives every plain array numba's own type (layouts, read-only,
    dtypes, a 0-d array, inside a tuple) and leaves other arrays and errors to numba."""
    from numba import typeof
    from numba.core import errors
    from numba.core.typing.typeof import _typeof_ndarray, typeof_impl

    assert getattr(typeof_impl.dispatch(np.ndarray), "plain", False)
    frozen = np.zeros(3)
    frozen.flags.writeable = False
    arrays = [np.zeros((3, 4)), np.zeros((3, 4), order="F"), np.zeros(7)[::2], frozen, np.array(2.5),
              np.zeros(3, dtype=np.int32), np.zeros(2, dtype=np.complex128), np.zeros(2, dtype=bool),
              np.zeros(2, dtype=[("a", np.float64), ("b", np.int64)])]
    for a in arrays:
        assert typeof(a) == _typeof_ndarray(a, None), a
        assert typeof((a, 1.0)) == typeof((a, 1.0)) and typeof((a,))[0] == _typeof_ndarray(a, None)
    with pytest.raises(errors.NumbaTypeError, match="MaskedArray"):
        typeof(np.ma.zeros(3))
    with pytest.raises(errors.NumbaValueError, match="dtype"):
        typeof(np.zeros(2, dtype=">f8"))


def test_an_overload_cached_for_other_types_is_compiled_again(tmp_path):
    """Two processes compiling one kernel for different argument types at once can leave
    numba's cache index naming the other's data file (index and data are saved apart).  Here
    the two data files of a kernel cached for int64 and float64 arrays are swapped: a later
    process asking for the float64 one must compile it again and get 0.5 x, not run the int64
    code on floats (or crash boxing its result).  The check is one of the patches."""
    if not _numba.enabled():
        pytest.skip("numba's patches are off (FFRSIM_NUMBA_PATCHES=0 or an untested numba)")
    module = tmp_path / "twice.py"
    module.write_text("from numba import njit\n\n\n@njit(cache=True)\ndef half(x):\n    return x / 2\n")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    run = ("import numpy as np, sim.kernels, twice\n"
           "print(twice.half(np.arange(3)).tolist(), twice.half(np.array([1.0, 3.0])).tolist(),"
           " len(twice.half.stats.cache_misses))\n")

    def child():
        out = subprocess.run([sys.executable, "-c", run], env=env, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        return out.stdout.split("]")

    assert child()[:2] == ["[0.0, 0.5, 1.0", " [0.5, 1.5"]
    data = sorted((tmp_path / "cache").rglob("twice.half-*.nbc"))
    assert len(data) == 2
    first, second = (p.read_bytes() for p in data)
    data[0].write_bytes(second)
    data[1].write_bytes(first)
    again = child()
    assert again[:2] == ["[0.0, 0.5, 1.0", " [0.5, 1.5"]
    assert int(again[2]) == 2         # both compiled again: neither loaded for the other's types
