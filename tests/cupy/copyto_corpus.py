"""Fills of CuPy arrays with scalars, run up to the copy kernel on the CPU (cupy/cupy#8391).

Every case is a call into the installed CuPy that ends in ``cupy.copyto``:
``cupy.copyto`` itself over every scalar type, destination dtype and
``casting`` value, and each place in 13.2.0's source that hands ``copyto`` a
Python scalar (``cupy.full``, ``cupy.full_like``, ``cupy.select``,
``cupy.unwrap``), plus ``cupy.copyto`` inside both code generators of
``cupy.fuse``.  What is recorded is where the call ends: the error (type and
message), or the arguments the copy kernel ``cupy._core.elementwise_copy`` was
given, with the warnings raised on the way.

Without a CUDA device the arrays get memory nobody touches and the kernel is a
recorder, so nothing is read or written.  With a device (a GPU host) the arrays
get real memory and the kernel is still the recorder: no made-up pointer is
ever handed to a driver.
"""

from __future__ import annotations

import contextlib
import math
import warnings

import cupy
import numpy

from tests.cupy import fusion_tracing

DTYPES = "?bBhHiIlLefdFD"  # every dtype CuPy has (q and Q are l and L here)
CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")
INF, NAN = math.inf, math.nan

PYTHON_SCALARS = [
    True,
    False,
    0,
    1,
    -1,
    127,
    128,
    255,
    256,
    -129,
    2**31,
    2**63 - 1,
    2**63,
    2**64 - 1,
    2**64,
    -(2**63),
    -(2**63) - 1,
    0.0,
    -0.0,
    0.1,
    1.5,
    -1.5,
    65504.0,
    1e300,
    INF,
    -INF,
    NAN,
    0j,
    1j,
    1.5 + 0j,
    -1 + 2j,
    complex(INF, 0),
    complex(NAN, NAN),
]
NUMPY_SCALARS = [
    numpy.bool_(True),
    numpy.int8(-1),
    numpy.uint8(200),
    numpy.int16(300),
    numpy.int64(2**40),
    numpy.uint64(2**64 - 1),
    numpy.float16(1.5),
    numpy.float32(0.1),
    numpy.float64(1e300),
    numpy.complex64(1 + 2j),
    numpy.complex128(-1j),
    numpy.array(1.5),
    numpy.array([7], dtype="int16"),
]


def describe(value):
    """A value as the record shows it: arrays by kind, dtype and shape, scalars by type and repr."""
    if isinstance(value, (cupy.ndarray, Dry)):
        return f"{type(value).__name__} {value.dtype.str} {value.shape}"
    if isinstance(value, numpy.ndarray):
        return f"numpy.ndarray {value.dtype.str} {value.shape} {value.tolist()!r}"
    return f"{type(value).__module__}.{type(value).__qualname__} {value!r}"


@contextlib.contextmanager
def dry_device():
    """Arrays whose memory nobody touches (real memory on a GPU host) and a recording copy kernel."""
    calls = []

    def elementwise_copy(*args, **kwargs):
        calls.append([describe(a) for a in args] + [f"{k}={describe(v)}" for k, v in sorted(kwargs.items())])

    kernel = cupy._core.elementwise_copy
    cupy._core.elementwise_copy = elementwise_copy
    try:
        with fusion_tracing.fake_device_memory():
            yield calls
    finally:
        cupy._core.elementwise_copy = kernel


def outcome(call, calls):
    """How ``call()`` ends: its error or the kernel calls it made, and its warnings."""
    del calls[:]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = call()
        except Exception as error:
            ended = {"error": f"{type(error).__name__}: {error}"}
        else:
            ended = {"kernel": list(calls)}
            if result is not None:
                ended["result"] = describe(result)
    if caught:
        ended["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]
    return ended


class Dry:
    """An array stand-in with a dtype and a shape; every operation on it gives another one.

    ``cupy.unwrap`` computes differences, a modulo and masks with ufuncs before it
    calls ``cupy.copyto``, and those need a GPU; :func:`dry_unwrap` lets them
    return these stand-ins so that unwrap's own code reaches its two
    ``copyto`` calls with the Python scalars it passes there.
    """

    def __init__(self, dtype, shape=(4,)):
        self.dtype, self.shape = numpy.dtype(dtype), shape
        self.ndim, self.size = len(shape), math.prod(shape)

    def _same(self, *args):
        return Dry(self.dtype, self.shape)

    def _mask(self, *args):
        return Dry("bool", self.shape)

    __add__ = __radd__ = __sub__ = __rsub__ = __abs__ = __getitem__ = _same
    __eq__ = __gt__ = __lt__ = __and__ = _mask
    __hash__ = None

    def __setitem__(self, key, value):
        pass


@contextlib.contextmanager
def dry_unwrap():
    """``cupy.unwrap`` with every array operation but ``cupy.copyto`` answered by :class:`Dry`."""
    from cupy._math import sumprod

    stand_ins = [
        (cupy, "asarray", lambda p: p),
        (cupy, "mod", lambda a, b: Dry(numpy.result_type(a.dtype, b), a.shape)),
        (cupy, "array", lambda p, copy, dtype: Dry(dtype, p.shape)),
        (cupy, "cumsum", lambda a, axis: Dry(a.dtype, a.shape)),
        (sumprod, "diff", lambda p, axis: Dry(p.dtype, p.shape)),
    ]
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in stand_ins]
    for owner, name, stand_in in stand_ins:
        setattr(owner, name, stand_in)
    try:
        yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def _label(value):
    return describe(value).replace("builtins.", "")


def copyto_cases():
    """``{case: call}`` for ``cupy.copyto`` of every scalar into every dtype under every casting."""
    cases = {}
    for value in PYTHON_SCALARS + NUMPY_SCALARS:
        for code in DTYPES:
            for casting in CASTINGS:
                cases[f"copyto {_label(value)} -> {numpy.dtype(code).name} {casting}"] = (
                    lambda v=value, c=code, k=casting: cupy.copyto(cupy.empty((3,), c), v, casting=k)
                )
    for value in (True, 7, 1.5, 1j, 300, NAN, numpy.float32(2.5)):
        label = _label(value)
        for code in "?bfD":
            dtype = numpy.dtype(code).name
            cases[f"copyto where {label} -> {dtype}"] = lambda v=value, c=code: cupy.copyto(
                cupy.empty((2, 3), c), v, where=cupy.empty((3,), "bool")
            )
            cases[f"copyto 0-d {label} -> {dtype}"] = lambda v=value, c=code: cupy.copyto(cupy.empty((), c), v)
            cases[f"copyto size 0 {label} -> {dtype}"] = lambda v=value, c=code: cupy.copyto(cupy.empty((0, 3), c), v)
            cases[f"copyto keywords {label} -> {dtype}"] = lambda v=value, c=code: cupy.copyto(
                src=v, dst=cupy.empty((3,), c), casting="safe"
            )
        cases[f"copyto casting bogus {label}"] = lambda v=value: cupy.copyto(cupy.empty((3,), "f"), v, casting="bogus")
        cases[f"copyto list as dst {label}"] = lambda v=value: cupy.copyto([0, 0], v)
        cases[f"copyto src twice {label}"] = lambda v=value: cupy.copyto(cupy.empty((3,), "f"), v, src=v)
    cases["copyto array where"] = lambda: cupy.copyto(
        cupy.empty((2, 3), "f"), cupy.empty((3,), "d"), casting="unsafe", where=cupy.empty((2, 3), "?")
    )
    cases["copyto array where refused"] = lambda: cupy.copyto(
        cupy.empty((2, 3), "f"), cupy.empty((3,), "D"), where=cupy.empty((2, 3), "?")
    )
    cases["copyto without src"] = lambda: cupy.copyto(cupy.empty((3,), "f"))
    return cases


def call_site_cases():
    """``{case: call}`` for each call of ``copyto`` with a Python scalar in 13.2.0's source."""
    cases = {}
    for value in (True, 0, -1, 300, 2**64, 1.5, NAN, INF, 1j, numpy.float32(2.5)):
        label = _label(value)
        cases[f"full {label}"] = lambda v=value: cupy.full((2, 3), v)
        for code in "?BifD":
            dtype = numpy.dtype(code).name
            cases[f"full {label} dtype={dtype}"] = lambda v=value, c=code: cupy.full((2, 3), v, dtype=c)
            cases[f"full_like {label} -> {dtype}"] = lambda v=value, c=code: cupy.full_like(cupy.empty((4,), c), v)
        cases[f"full_like {label} dtype=int8"] = lambda v=value: cupy.full_like(cupy.empty((4,), "d"), v, dtype="b")
        cases[f"select default {label}"] = lambda v=value: cupy.select(
            [cupy.empty((3,), "?")], [cupy.empty((3,), "f")], default=v
        )
        cases[f"select default {label} int choices"] = lambda v=value: cupy.select(
            [cupy.empty((3,), "?"), cupy.empty((3,), "?")], [cupy.empty((3,), "b"), cupy.empty((3,), "h")], default=v
        )
    for code, period in [("d", 2 * math.pi), ("f", 2 * math.pi), ("l", 6), ("l", 7), ("l", 6.5), ("d", 360)]:
        dtype = numpy.dtype(code).name

        def unwrap(c=code, p=period):
            with dry_unwrap():
                return cupy.unwrap(Dry(c), period=p)

        cases[f"unwrap {dtype} period={period!r}"] = unwrap

    def unwrap_discont():
        with dry_unwrap():
            return cupy.unwrap(Dry("f"), discont=1.0, axis=0)

    cases["unwrap float32 discont=1.0"] = unwrap_discont
    return cases


def run(cases):
    """``{case: outcome}`` over ``cases`` on the dry device."""
    with dry_device() as calls:
        return {case: outcome(call, calls) for case, call in cases.items()}


def fusion_cases():
    """``(case, function, argument dtypes)`` for ``cupy.copyto`` of a Python scalar inside ``cupy.fuse``."""
    cases = []
    for value in (True, 1, -1, 300, 1.5, NAN, 1j):
        for code in "?bfD":
            for casting in ("same_kind", "unsafe"):

                def fill(x, v=value, k=casting):
                    cupy.copyto(x, v, casting=k)
                    return x

                def fill_where(x, mask, v=value, k=casting):
                    cupy.copyto(x, v, casting=k, where=mask)
                    return x

                name = f"{_label(value)} -> {numpy.dtype(code).name} {casting}"
                cases.append((f"fuse copyto {name}", fill, (code,)))
                cases.append((f"fuse copyto where {name}", fill_where, (code, "?")))
    return cases


def trace_fusion():
    """``{case: code or error}`` of both ``cupy.fuse`` code generators over :func:`fusion_cases`."""
    traced = {}
    with fusion_tracing.fake_device_memory():
        for case, function, codes in fusion_cases():
            args = tuple(cupy.empty((3,), code) for code in codes)
            for path in ("first", "second"):
                trace = getattr(fusion_tracing, f"trace_{path}_path")
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    traced[f"{case} {path}"] = trace(function, args, "fill")
                if caught:
                    traced[f"{case} {path}"]["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]
    return traced
