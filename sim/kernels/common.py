"""Small helpers of the compiled kernels: records by reference, run-time flags, the angle wrap, 3-vector dot,
flushing round-off, subnormal numbers as zero, block-diagonal products.

Round-off leaves entries of order 1e-40 .. 1e-100 where the exact value is zero; their products
underflow to subnormal numbers (below 2.2e-308), each of which costs an x86 core a microcode
assist, about 100x an ordinary operation.  Two remedies: :func:`flush` zeroes a matrix's
entries below ``FLUSH_RTOL`` of the largest one before BLAS multiplies it (see
:mod:`sim.linalg`); a compiled loop that meets them step after step runs with subnormal
numbers read and written as zero (:func:`subnormals_off`, :func:`fp_control`).  The
slider-crank's step loop met about one per Newton solve: its LU factors hold entries of 1e-104
and its residual of 1e-220, and the loop ran 1.5x slower for it.
"""
import platform

import numpy as np
from numba import njit, typeof, types
from numba.experimental import structref
from numba.extending import intrinsic, overload

from sim.kernels import _numba

FLUSH_RTOL = 1e-20
SMALL_BLOCK = 8     # block_product: blocks up to this size by loops
_BOOLS = np.array([False, True])


@structref.register
class RecordType(types.StructRef):
    """Numba type of a named tuple held by reference (:func:`by_reference`).

    Passed as it is, a named tuple's arrays are as many machine arguments of every compiled
    function that takes it, each with its unboxing in the function's Python entry: for the
    ninety-odd arrays of :class:`sim.kernels.equations.Tables`, a large share of a cold start's
    compilation per kernel and of each call from Python.  By reference it is one pointer.
    """

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(kind)) for name, kind in fields)


class Record(structref.StructRefProxy):
    """A named tuple by reference, for compiled code (its fields are read there; in Python,
    read the named tuple it was made from)."""


structref.define_boxing(RecordType, Record)


def _reference(t):
    """:func:`by_reference` (in compiled code, the implementation below)."""
    return by_reference(t)


def _borrowing(t):
    """:func:`borrowed` (in compiled code, the implementation below)."""
    return borrowed(t)


@intrinsic
def borrow(typingctx, array):
    """In compiled code: the array ``array`` without its memory's owner (the same data, shape
    and strides; no meminfo, no parent), whose reference counts are then no-ops (numba skips a
    null meminfo): no atomic operation where it is passed, unpacked or read from a record.
    Only for arrays that something else keeps alive as long as the result is used (never
    return it to Python)."""
    if not isinstance(array, types.Array):
        return None
    # at compilation only: a run that loads the kernels from numba's cache does without it (25 ms)
    from numba.np.arrayobj import make_array, populate_array

    def codegen(context, builder, signature, args):
        source = make_array(array)(context, builder, args[0])
        out = make_array(array)(context, builder)
        populate_array(out, data=source.data, shape=source.shape, strides=source.strides,
                       itemsize=source.itemsize, meminfo=None)
        return out._getvalue()
    return array(array), codegen


def _nested(kind):
    """Whether a field of numba type ``kind`` is held by reference too: a named tuple, or a
    (non-empty) tuple of named tuples."""
    if isinstance(kind, types.BaseNamedTuple):
        return True
    return isinstance(kind, types.BaseTuple) and len(kind) > 0 and \
        all(isinstance(k, types.BaseNamedTuple) for k in kind)


def _held(kind):
    """The numba type :func:`by_reference` makes of a value of numba type ``kind``."""
    if isinstance(kind, types.BaseNamedTuple):
        return RecordType([(name, _held(k)) for name, k in zip(kind.fields, kind.types)])
    if _nested(kind):
        return types.Tuple([_held(k) for k in kind])
    return kind


def _constructor(t, nested, array):
    """The compiled constructor of the record of the named tuple type ``t``: nested named
    tuples through ``nested`` (:func:`_reference` or :func:`_borrowing`, compiled as their overloads), arrays as
    ``array(...)`` writes them (a format: ``"{}"`` as they are, ``"borrow({})"``)."""
    kind = _held(t)

    def field(name, k):
        if isinstance(k, types.BaseNamedTuple):
            return f"nested(t.{name})"
        if _nested(k):
            return "(" + "".join(f"nested(t.{name}[{i}]), " for i in range(len(k))) + ")"
        return array.format(f"t.{name}") if isinstance(k, types.Array) else f"t.{name}"
    # Field names must be literal in compiled code: the constructor is written for this tuple.
    text = "def impl(t):\n    s = new(kind)\n" + "".join(f"    s.{f} = {field(f, k)}\n" for f, k in
                                                         zip(t.fields, t.types)) + "    return s\n"
    scope = {"new": structref.new, "kind": kind, "nested": nested, "borrow": borrow}
    exec(text, scope)
    return scope["impl"]


@overload(_reference)
def _reference_impl(t):
    return _constructor(t, _reference, "{}")


@overload(_borrowing)
def _borrowing_impl(t):
    return _constructor(t, _borrowing, "borrow({})")


@njit(cache=True)
def by_reference(t):
    """The named tuple ``t`` by reference (a :class:`Record`: the same fields, its arrays
    shared, so that what compiled code writes into them shows in ``t``).  Scalars are copied;
    named tuples in it, alone or in a tuple, are records too (a record passed to a compiled
    function, or read from another, raises one reference count; a named tuple, one per array
    in it)."""
    return _reference(t)


@njit(cache=True)
def _solver_reference(t):
    """:func:`by_reference` for the solvers' named tuples (:func:`reference`: the step loop's
    state, problem and work), cached apart: numba's cache index of a function pickles every
    signature it was compiled for, with the named tuples' classes, so that one index holding the
    model's tables and the step loop's records imported :mod:`sim.solvers.integrators` (8 ms)
    in every run that evaluates the model."""
    return _reference(t)


@njit(cache=True)
def borrowed(t):
    """:func:`by_reference` with the arrays borrowed (:func:`borrow`): the same record type,
    the same arrays, but the record owns none of them, so that passing, unpacking and reading
    them in compiled code costs no atomic reference count (a record's own count remains).
    Whoever makes it must keep ``t``'s arrays alive for as long as the record is used: the
    step loop's records (:meth:`sim.solvers.integrators.GeneralizedAlpha._records`), whose
    arrays the integrator holds."""
    return _borrowing(t)


def record_type(t):
    """The numba type of ``by_reference(t)``, without compiling :func:`by_reference`."""
    return _held(typeof(t))


def reference(t, borrowing=False):
    """``by_reference(t)`` for a solver's named tuple ``t`` (:func:`_solver_reference`;
    ``borrowing``: :func:`borrowed`, the same type), or only its numba type where a field of
    ``t`` is a numba type (a compilation from types:
    :func:`compile_for`)."""
    if any(isinstance(x, types.Type) for x in t):
        return RecordType([(name, x if isinstance(x, types.Type) else record_type(x))
                           for name, x in zip(t._fields, t)])
    return borrowed(t) if borrowing else _solver_reference(t)


def compile_for(kernel, *args):
    """Compile, or load from numba's cache, the dispatcher ``kernel`` for the types of the
    values ``args`` as a call would, without calling it; an argument that is a numba type
    stands for a value of that type (:func:`record_type`, the evaluation's addresses
    :data:`sim.kernels.equations.ADDRESSES`), so that a loop compiles before the evaluation it calls is."""
    kernel.compile(tuple(_type_of(kernel, arg) for arg in args))


def _type_of(kernel, value):
    """numba type of ``value`` as :func:`compile_for` reads it: a numba type stands for itself,
    also inside a tuple or a named tuple (a record of arguments holding the tables' type)."""
    if isinstance(value, types.Type):
        return value
    if isinstance(value, tuple) and any(isinstance(v, types.Type) for v in value):
        fields = [_type_of(kernel, v) for v in value]
        return types.NamedTuple(fields, type(value)) if hasattr(value, "_fields") else types.Tuple(fields)
    return kernel.typeof_pyval(value)


def pointer(kernel, signature):
    """The machine-code address of the dispatcher ``kernel`` compiled (or loaded from numba's
    cache) for ``signature``, for compiled loops to call through a first-class function
    (:func:`first_class`): the loop then links none of the kernel's code, and one copy serves
    Python and every loop."""
    key = (kernel, signature)
    if key not in _POINTERS:
        # Compiled (or loaded) under the argument types first, the key of a call from Python:
        # numba keys its disk cache by the signature as given, and a full Signature here would
        # store the same machine code under another key, which the next process's Python calls
        # miss (and compile again: the evaluation is the longest compilation of all).
        kernel.compile(tuple(signature.args))
        _POINTERS[key] = _numba.address(kernel, signature)
    return _POINTERS[key]


# The addresses found, like the dispatchers' own tables of compiled code: the machine code
# lives as long as the process (numba never unloads it), and looking an address up through
# the dispatcher is slow next to a dictionary look-up, and a few happen per KED or frequency run.
_POINTERS = {}


def first_class(kind):
    """Code generation of a first-class function of type ``kind`` (a ``types.FunctionType``)
    from a machine-code address (:func:`pointer`; numba's calling convention, so exceptions
    reach the caller)."""
    return _numba.function_at(kind)


def caller(signature):
    """An intrinsic ``call(address)`` that, in compiled code, is the function of type
    ``signature`` at that machine-code address (:func:`pointer`)."""
    kind = types.FunctionType(signature)

    @intrinsic
    def call(typingctx, address):
        return kind(types.int64), first_class(kind)
    return call


# x86-64 SSE control and status word (MXCSR): FTZ (bit 15) writes subnormal results as zero, DAZ
# (bit 6) reads subnormal operands as zero.  Other processors keep gradual underflow (no-ops).
SUBNORMALS_OFF = 0x8040
_MXCSR = platform.machine().lower() in ("x86_64", "amd64")


def _mxcsr(builder, word=None):
    """LLVM IR: the MXCSR's value, after storing ``word`` (an i32 value) in it when given (the
    old value then)."""
    import llvmlite.ir as ir
    from numba.core import cgutils
    i32, p8 = ir.IntType(32), ir.IntType(8).as_pointer()
    slot = cgutils.alloca_once(builder, i32)
    address = builder.bitcast(slot, p8)
    kind = ir.FunctionType(ir.VoidType(), [p8])
    builder.call(cgutils.get_or_insert_function(builder.module, kind, "llvm.x86.sse.stmxcsr"), [address])
    old = builder.load(slot)
    if word is not None:
        builder.store(word, slot)
        builder.call(cgutils.get_or_insert_function(builder.module, kind, "llvm.x86.sse.ldmxcsr"), [address])
    return old


@intrinsic
def subnormals_off(typingctx):
    """In compiled code: from here on, in this thread, floating-point arithmetic reads and
    writes subnormal numbers as zero (x86-64: MXCSR's FTZ and DAZ); returns the control word
    as it was (uint32), for :func:`fp_control` to put back before returning to Python.  Results
    change only where a value below 2.2e-308 took part.  Elsewhere than x86-64, a no-op
    returning 0."""
    def codegen(context, builder, signature, args):
        if not _MXCSR:
            return context.get_constant(types.uint32, 0)
        old = _mxcsr(builder)
        _mxcsr(builder, builder.or_(old, old.type(SUBNORMALS_OFF)))
        return old
    return types.uint32(), codegen


@intrinsic
def fp_control(typingctx, word):
    """In compiled code: the floating-point control word set to ``word`` (uint32), as
    :func:`subnormals_off` returned it (elsewhere than x86-64, a no-op)."""
    if word != types.uint32:
        return None

    def codegen(context, builder, signature, args):
        if _MXCSR:
            _mxcsr(builder, args[0])
        return context.get_dummy_value()
    return types.void(types.uint32), codegen


@njit(cache=True)
def restore_fp(word):
    """:func:`fp_control` from Python: where a compiled loop that turned subnormal numbers off
    stopped on an exception before it put the control word back."""
    fp_control(np.uint32(word))


@njit(cache=True)
def runtime(flag):
    """``flag`` as a run-time value.  A constant passed from one compiled function to another
    is typed as a literal, and each literal compiles its own copy of the callee (and of
    everything it calls): flags pass through this, an array look-up, so that one compilation
    serves all calls."""
    return _BOOLS[1 if flag else 0]


@njit(cache=True, inline="always")
def wrap(angle):
    """``angle`` [rad] (a number or an array) wrapped into ``[-pi, pi)``: the one home of the
    angle wrap, for compiled and Python code."""
    return (angle + np.pi) % (2 * np.pi) - np.pi


@njit(cache=True)
def dot3(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(cache=True)
def flush(A, rtol):
    """In place: entries below ``rtol * max|A|`` set to zero (see :func:`sim.linalg.flush`)."""
    flat = A.ravel()
    top = 0.0
    for i in range(flat.size):
        if abs(flat[i]) > top:
            top = abs(flat[i])
    for i in range(flat.size):
        if abs(flat[i]) < rtol * top:
            flat[i] = 0.0


@njit(cache=True, nogil=True)
def block_product(A, bounds, B):
    """``A B`` (n, m) with ``A`` (n, n) block diagonal over the ranges ``bounds[i]:bounds[i + 1]``
    covering ``0:n``: the bodies' mass (their kinetic energies do not couple) or the inverse
    of the flexible bodies' stiffness."""
    Y = np.empty_like(B)
    m = B.shape[1]
    for i in range(bounds.size - 1):
        a, b = bounds[i], bounds[i + 1]
        if b - a > SMALL_BLOCK:
            # The blocks copied by loops, not as contiguous copies of slices: the same work,
            # and a third of the compilation (slices of any layout compile generic code).
            Ab = np.empty((b - a, b - a))
            Bb = np.empty((b - a, m))
            for r in range(b - a):
                for k in range(b - a):
                    Ab[r, k] = A[a + r, a + k]
                for c in range(m):
                    Bb[r, c] = B[a + r, c]
            Yb = Ab @ Bb
            for r in range(b - a):
                for c in range(m):
                    Y[a + r, c] = Yb[r, c]
            continue
        # A rigid body's 6 x 6 block: loops, where BLAS would cost two copies and a call.
        for r in range(a, b):
            for c in range(B.shape[1]):
                acc = 0.0
                for k in range(a, b):
                    acc += A[r, k] * B[k, c]
                Y[r, c] = acc
    return Y


@njit(cache=True, nogil=True)
def pattern_product(M, v0, ff, shift, X, Y):
    """Rows ``v0 .. v0 + 6 + n`` of ``Y = M X`` for one body of ``M`` (n_v, n_v), by the nonzeros
    of its block: its six reference rows over the whole block, each elastic row ``f`` over the
    reference columns and ``v0 + 6 + ff[f, j] - shift`` (``ff`` (n, w): the columns of the
    row's ``M_ff`` nonzeros, -1 after the last; ``shift`` the number of the body's first
    elastic coordinate in the numbering of ``ff``).  Linear in the body's coordinates where
    the block product is quadratic (a beam's ``M_ff`` is banded)."""
    n, m = ff.shape[0], X.shape[1]
    for i in range(v0, v0 + 6):
        for j in range(m):
            Y[i, j] = 0.0
        for c in range(v0, v0 + 6 + n):
            a = M[i, c]
            if a != 0.0:
                for j in range(m):
                    Y[i, j] += a * X[c, j]
    for f in range(n):
        i = v0 + 6 + f
        for j in range(m):
            Y[i, j] = 0.0
        for c in range(v0, v0 + 6):
            a = M[i, c]
            for j in range(m):
                Y[i, j] += a * X[c, j]
        for w in range(ff.shape[1]):
            if ff[f, w] < 0:
                break
            c = v0 + 6 + ff[f, w] - shift
            a = M[i, c]
            for j in range(m):
                Y[i, j] += a * X[c, j]


@njit(cache=True, inline="always")
def pattern_vector(M, v0, ff, x, y):
    """Rows ``v0 .. v0 + 6 + n`` of ``y = M x`` for one body of ``M`` (n_v, n_v; symmetric) by
    the nonzeros of its block (:func:`pattern_product`'s, for a vector, and with each row's
    terms added in ascending column order from zero: the sums of the dense product)."""
    n = ff.shape[0]
    for i in range(v0, v0 + 6):
        acc = 0.0
        for c in range(v0, v0 + 6 + n):
            acc += M[i, c] * x[c]
        y[i] = acc
    for f in range(n):
        i = v0 + 6 + f
        acc = 0.0
        for c in range(v0, v0 + 6):
            acc += M[i, c] * x[c]
        for k in range(ff.shape[1]):
            if ff[f, k] < 0:
                break
            c = v0 + 6 + ff[f, k]
            acc += M[i, c] * x[c]
        y[i] = acc
