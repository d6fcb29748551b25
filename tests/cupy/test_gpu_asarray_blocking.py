"""cupy.asarray_blocking on a CUDA device: host data copied, finished and not aliased.

13.6.0's tests of the fix (``test_array_from_numpy_blocking``,
``test_asarray_blocking``, ``test_asanyarray_blocking`` in
``tests/cupy_tests/creation_tests/test_from_data.py``) convert
``shaped_arange((2, 3, 4))`` of float32 with ``blocking=True`` and compare with
the host array.  The CPU tests show the copy path taken up to the driver;
what a device adds, in the tests marked ``gpu``: the copy finishes with the
values of NumPy's conversion, the stream is idle when the call returns, and
the result is device memory of its own, not the caller's host memory (the
path ``blocking=False`` may take, which the patch never takes).  Without a
device they are skipped with "no CUDA device" (tests/gpu.py), and none of
them has run yet.
"""

from __future__ import annotations

import numpy
import pytest

from gpushim.patches.cupy.asarray_blocking import patch
from tests.cupy import host_copies
from tests.gpu import on_gpu
from tests.support import gate

GATE = gate(patch)
FUNCTIONS = ("array", "asarray", "asanyarray")


def shaped_arange():
    return numpy.arange(1, 25, dtype=numpy.float32).reshape(2, 3, 4)


@on_gpu
@GATE.affected_only
@pytest.mark.parametrize("function", FUNCTIONS)
def test_needed_the_upstream_test_raises_without_gpushim(function):
    import cupy

    with pytest.raises(UnboundLocalError):
        getattr(cupy, function)(shaped_arange(), blocking=True)


@on_gpu
@GATE.recorded_only
@pytest.mark.parametrize("function", FUNCTIONS)
def test_the_upstream_test_passes(function, this_patch):
    import cupy

    host = shaped_arange()
    numpy.testing.assert_array_equal(getattr(cupy, function)(host, blocking=True).get(), host)


@on_gpu
@GATE.recorded_only
@pytest.mark.parametrize("function", FUNCTIONS)
def test_the_copy_is_finished_and_its_own_memory(function, this_patch):
    import cupy

    host = shaped_arange()
    with cupy.cuda.Stream() as stream:
        copied = getattr(cupy, function)(host, blocking=True)
        assert stream.done
    assert not isinstance(copied.data.mem, cupy.cuda.memory.SystemMemory)
    assert copied.data.ptr != host.ctypes.data
    host[...] = -1
    numpy.testing.assert_array_equal(copied.get(), shaped_arange())


@on_gpu
@GATE.recorded_only
def test_every_conversion_of_the_corpus_holds_numpys_values(this_patch):
    outcomes = host_copies.run(list(host_copies.cases(blocking=[True])))
    for case, outcome in outcomes.items():
        source, call, _ = host_copies.cases()[case]
        if source == "cupy array" or isinstance(outcome["outcome"], str):
            continue
        function, kwargs = host_copies.CALLS[call]
        kwargs = {key: value for key, value in kwargs.items() if key != "copy"}
        expected = numpy.array(host_copies.host_inputs()[source], **kwargs)
        assert outcome["outcome"]["value"] == expected.tolist(), case
        assert not outcome["outcome"]["host memory"], case
