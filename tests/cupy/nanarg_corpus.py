"""``cupy.nanargmax`` and ``cupy.nanargmin`` over dtypes and arguments, with the reductions they call observed.

The bug of cupy/cupy#8783 is in the arguments ``cupy._sorting.search`` hands
to the reductions, so each case records those calls as they happen: the
function called (``argmax``/``argmin`` of ``search`` for bool and integers,
``_statistics._nanargmax``/``_nanargmin`` otherwise) and each argument by its
parameter name, with the case's own arrays named (``a``, ``out``).  The real
reduction then runs with what it was given: without a device on arrays whose
memory nobody touches (``fusion_tracing.fake_device_memory``), where Cython
checks the types of its arguments (a ``dtype`` given as ``out`` fails there)
and the reduction stops at its first call to the driver, before it looks at
``out``'s shape; with a device to the end, and the case records the result.
"""

from __future__ import annotations

import contextlib

import cupy

from tests import gpu
from tests.cupy.fusion_tracing import fake_device_memory

FUNCTIONS = ("nanargmax", "nanargmin")
DTYPES = ("?", "b", "B", "i", "q", "Q", "e", "f", "d", "F", "D")
SHAPE = (2, 3)

# name: (keyword arguments, shape and dtype of ``out`` or None)
ARGUMENTS = {
    "defaults": ({}, None),
    "axis=0": ({"axis": 0}, None),
    "axis=1 keepdims": ({"axis": 1, "keepdims": True}, None),
    "keepdims": ({"keepdims": True}, None),
    "out": ({}, ((), "q")),
    "axis=1 out": ({"axis": 1}, ((2,), "q")),
    "axis=0 keepdims out": ({"axis": 0, "keepdims": True}, ((1, 3), "q")),
    "out of the wrong shape": ({"axis": 0}, ((5,), "q")),
    "out of dtype int32": ({}, ((), "i")),
    "dtype=q": ({"dtype": "q"}, None),
    "dtype=d": ({"dtype": "d"}, None),
    "dtype=q out": ({"dtype": "q"}, ((), "q")),
}


def _describe(value, named):
    for name, array in named.items():
        if value is array:
            return name
    if isinstance(value, cupy.ndarray):
        return f"array{value.shape} {value.dtype}"
    return repr(value)


def _described(arguments, named):
    return {parameter: _describe(value, named) for parameter, value in arguments.items()}


@contextlib.contextmanager
def observed_reductions():
    """The reductions ``search`` calls replaced by recorders that call them on; the list they record to.

    Each record is ``(function, {parameter: value})``; the test describes the values.
    """
    from cupy._sorting import search

    calls = []

    def recording(owner, name, parameters):
        real = getattr(owner, name)

        def record(*args, **kwargs):
            calls.append((name, {**dict(zip(parameters, args)), **kwargs}))
            return real(*args, **kwargs)

        return owner, name, real, record

    swaps = [
        recording(search._statistics, "_nanargmax", ("a", "axis", "out", "dtype", "keepdims")),
        recording(search._statistics, "_nanargmin", ("a", "axis", "out", "dtype", "keepdims")),
        recording(search, "argmax", ("a", "axis", "dtype", "out", "keepdims")),
        recording(search, "argmin", ("a", "axis", "dtype", "out", "keepdims")),
    ]
    for owner, name, _, record in swaps:
        setattr(owner, name, record)
    try:
        yield calls
    finally:
        for owner, name, real, _ in swaps:
            setattr(owner, name, real)


def cases():
    """``{case id: (function name, dtype, keyword arguments, out spec)}``."""
    return {
        f"{function} {dtype} {name}": (function, dtype, *ARGUMENTS[name])
        for function in FUNCTIONS
        for dtype in DTYPES
        for name in ARGUMENTS
    }


def run(selected=None):
    """``{case id: {"calls": [...], "outcome": ...}}`` for the corpus, or the cases named in ``selected``."""
    every = cases()
    outcomes = {}
    with fake_device_memory(), observed_reductions() as calls:
        for case in selected or every:
            function, dtype, kwargs, out_spec = every[case]
            a = _array(dtype)
            named = {"a": a}
            if out_spec is not None:
                named["out"] = kwargs["out"] = cupy.empty(*out_spec)
            calls.clear()
            try:
                result = getattr(cupy, function)(a, **kwargs)
            except Exception as error:
                outcome = f"{type(error).__name__}: {error}"
            else:
                outcome = _result(result, named)
            outcomes[case] = {
                "calls": [
                    [name, {key: _describe(value, named) for key, value in given.items()}] for name, given in calls
                ],
                "outcome": outcome,
            }
    return outcomes


def _array(dtype):
    """The input: memory nobody touches on the CPU; on a device, values with NaN where the dtype has it."""
    a = cupy.empty(SHAPE, dtype)
    if gpu.PRESENT:
        import numpy

        values = [[1, numpy.nan, 3], [numpy.nan, 0, 2]] if a.dtype.kind in "fc" else [[1, 5, 3], [4, 0, 2]]
        a.set(numpy.array(values).astype(dtype))
    return a


def _result(result, named):
    described = {"is": _describe(result, named), "shape": list(result.shape), "dtype": str(result.dtype)}
    if gpu.PRESENT:
        described["value"] = result.get().tolist()
    return described
