"""``cupy.array``, ``asarray`` and ``asanyarray`` of host data and device arrays, with the device memory they ask for.

Each case converts one input with one function and keyword arguments and
records the sizes of the device allocations made meanwhile, then the result or
the error, and the warnings.  Without a device the allocations get memory nobody touches
(``fusion_tracing.untouched_allocator``): a copy from the host allocates the
result and stops at its first call to the driver, so the allocation shows
which path a call took, where the fast path of 13.5.0 (which skips the copy)
asks the driver about the device first and allocates nothing.  With a device
the calls run to the end and the case records the result's values and
whether its memory is the host's.
"""

from __future__ import annotations

import contextlib
import warnings

import cupy
import numpy

from tests import gpu
from tests.cupy.fusion_tracing import untouched_allocator


def host_inputs():
    """The host data of the corpus, by name: NumPy arrays, NumPy and Python scalars, sequences."""
    grid = numpy.arange(6.0).reshape(2, 3)
    return {
        "float64 C": grid,
        "float64 F": numpy.asfortranarray(grid),
        "float64 strided": grid[:, ::2],
        "float32": grid.astype("f"),
        "float16": grid.astype("e"),
        "int32": grid.astype("i"),
        "bool": grid.astype("?"),
        "complex128": grid.astype("D"),
        "big-endian float64": grid.astype(">f8"),
        "0-d float64": numpy.array(2.5),
        "empty": numpy.empty((0, 3)),
        "object": numpy.array([1, None], dtype=object),
        "numpy float32 scalar": numpy.float32(2.0),
        "float": 1.5,
        "int": 7,
        "bool scalar": True,
        "list": [1, 2, 3],
        "nested list": [[1.0, 2.0], [3.0, 4.0]],
        "tuple": (1.5, 2.5),
        "list of numpy arrays": [numpy.arange(3.0), numpy.arange(3.0)],
    }


# name: (function, keyword arguments)
CALLS = {
    "array": ("array", {}),
    "array copy=False": ("array", {"copy": False}),
    "array ndmin=3": ("array", {"ndmin": 3}),
    "array order=F": ("array", {"order": "F"}),
    "asarray": ("asarray", {}),
    "asarray dtype=float32": ("asarray", {"dtype": "f"}),
    "asarray dtype=float64": ("asarray", {"dtype": "d"}),
    "asanyarray": ("asanyarray", {}),
    "asanyarray order=C": ("asanyarray", {"order": "C"}),
}


def cases(blocking=(True, False)):
    """``{case id: (input name, call name, blocking)}``; the inputs include a CuPy array (``"cupy array"``)."""
    return {
        f"{call} blocking={flag} of {source}": (source, call, flag)
        for source in [*host_inputs(), "cupy array"]
        for call in CALLS
        for flag in blocking
    }


def _input(name):
    if name == "cupy array":
        array = cupy.empty((2, 3), "d")
        if gpu.PRESENT:
            array.set(numpy.arange(6.0).reshape(2, 3))
        return array
    return host_inputs()[name]


@contextlib.contextmanager
def recorded_allocations():
    """Every device allocation's size, recorded as it is made: memory nobody touches, or the device's own."""
    with contextlib.ExitStack() as stack:
        if not gpu.PRESENT:
            stack.enter_context(untouched_allocator())
        allocate, sizes = cupy.cuda.get_allocator(), []

        def recording(size):
            sizes.append(size)
            return allocate(size)

        cupy.cuda.set_allocator(recording)
        stack.callback(cupy.cuda.set_allocator, allocate)
        yield sizes


def run(selected):
    """``{case id: {"allocated": [sizes], "outcome": ...}}`` for the cases named in ``selected``."""
    every = cases()
    outcomes = {}
    with recorded_allocations() as sizes:
        for case in selected:
            source, call, blocking = every[case]
            function, kwargs = CALLS[call]
            given = _input(source)
            sizes.clear()
            with warnings.catch_warnings(record=True) as warned:
                warnings.simplefilter("always")
                try:
                    result = getattr(cupy, function)(given, blocking=blocking, **kwargs)
                except Exception as error:
                    outcome = f"{type(error).__name__}: {error}"
                else:
                    outcome = _result(result, given)
            outcomes[case] = {
                "allocated": list(sizes),
                "outcome": outcome,
                "warnings": [f"{warning.category.__name__}: {warning.message}" for warning in warned],
            }
    return outcomes


def _result(result, given):
    described = {
        "is the input": result is given,
        "shape": list(result.shape),
        "dtype": str(result.dtype),
        "strides": list(result.strides),
        "host memory": isinstance(result.data.mem, cupy.cuda.memory.SystemMemory),
    }
    if gpu.PRESENT:
        described["value"] = result.get().tolist()
    return described
