"""cupy.nanargmax_out_dtype on a CUDA device: the reductions run, their results against NumPy's.

The CPU tests prove the routing: which reduction gets which argument.  What a
device adds is what the reductions make of it: that ``out`` is written and
returned, that ``keepdims`` shapes the result, that ``dtype`` selects the
loop by its output type as in 13.4.0, and the values, which the tests marked ``gpu``
compare with ``numpy.nanargmax``/``nanargmin`` on an input with NaN in every
row and column (NumPy raises on an all-NaN slice where CuPy returns -1).
Without a device they are skipped with "no CUDA device" (tests/gpu.py), and
none of them has run yet.
"""

from __future__ import annotations

import numpy
import pytest

from gpushim.patches.cupy.nanargmax_out_dtype import patch
from tests.cupy import nanarg_corpus
from tests.gpu import on_gpu, pretend_a_device
from tests.support import gate

GATE = gate(patch)
VALUES = [[1.0, numpy.nan, 3.0], [numpy.nan, 0.0, 2.0]]

# name: (keyword arguments, shape of ``out`` or None)
CALLS = {
    "out": ({}, ()),
    "axis=1 out": ({"axis": 1}, (2,)),
    "axis=0 keepdims out": ({"axis": 0, "keepdims": True}, (1, 3)),
    "axis=1 keepdims": ({"axis": 1, "keepdims": True}, None),
}


def both(function, dtype, name):
    """``function`` called by NumPy and by CuPy on the same input: (NumPy's result, CuPy's result, CuPy's out)."""
    import cupy

    kwargs, out_shape = CALLS[name]
    host = numpy.array(VALUES if numpy.dtype(dtype).kind in "fc" else [[1, 5, 3], [4, 0, 2]]).astype(dtype)
    expected = getattr(numpy, function)(host, **kwargs)
    out = None if out_shape is None else cupy.full(out_shape, -7, "q")
    given = dict(kwargs) if out is None else {**kwargs, "out": out}
    return expected, getattr(cupy, function)(cupy.asarray(host), **given), out


@on_gpu
@GATE.affected_only
@pytest.mark.parametrize("function", nanarg_corpus.FUNCTIONS)
def test_needed_out_is_left_unwritten_without_gpushim(function):
    try:
        _, result, out = both(function, "d", "out")
    except (TypeError, ValueError):
        return  # the reduction refuses the out array as a dtype: the bug shows too
    assert result is not out and int(out) == -7


@on_gpu
@GATE.recorded_only
@pytest.mark.parametrize("function", nanarg_corpus.FUNCTIONS)
@pytest.mark.parametrize("dtype", ["?", "b", "i", "q", "e", "f", "d", "F", "D"])
@pytest.mark.parametrize("name", list(CALLS))
def test_the_results_are_numpys_and_out_is_written(function, dtype, name, this_patch):
    expected, result, out = both(function, dtype, name)
    assert result.shape == expected.shape
    assert result.get().tolist() == expected.tolist()
    if out is not None:
        assert result is out


@on_gpu
@GATE.recorded_only
@pytest.mark.parametrize("function", nanarg_corpus.FUNCTIONS)
def test_a_float_dtype_is_refused_as_in_the_fixed_release(function, this_patch):
    """13.4.0 hands ``dtype`` to the reduction, which picks the loop whose output is of that type; each gives int64.

    CuPy 14.2.0 refuses it in the same words on a device.
    """
    import cupy

    with pytest.raises(TypeError, match=rf"^Wrong type \(<class 'numpy.float32'>\) of arguments for cupy_{function}$"):
        getattr(cupy, function)(cupy.asarray(numpy.array(VALUES)), axis=1, dtype="f")


@GATE.affected_only
def test_on_a_device_the_probe_takes_the_reductions_refusal_of_out_as_a_dtype_for_the_bug(monkeypatch):
    """On the CPU, with a pretended driver: the release's call raises as on a device, and the probe says so.

    On a device the release's reduction looks its loop up by ``dtype``
    (``guess_routine``'s cache) and raises ``TypeError: unhashable type:
    'ndarray'`` when handed ``out`` there; a stand-in that looks ``dtype`` up
    as it does takes its place, and arrays over memory nobody touches take the
    place of the probe's.
    """
    import cupy
    from cupy._sorting import search

    from tests.cupy.fusion_tracing import untouched_allocator

    pretend_a_device(monkeypatch)
    loops = {}
    monkeypatch.setattr(search._statistics, "_nanargmax", lambda a, axis, out, dtype, keepdims: loops.get(dtype))
    with untouched_allocator():
        monkeypatch.setattr(cupy, "array", lambda values: cupy.empty(len(values), "d"))
        monkeypatch.setattr(cupy, "full", lambda shape, value, dtype: cupy.empty(shape, dtype))
        verdict = patch.probe()
    assert verdict == "cupy.nanargmax([0, nan, 3, 1], out=o) raises TypeError: unhashable type: 'ndarray'"
