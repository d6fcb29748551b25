"""cupy.intersect1d_empty on a CUDA device: ``intersect1d`` with an empty array, which faults without gpushim.

The CPU tests show the kernels' bodies reading ``bins[-1]`` for no bins; on a
device that read is before an empty allocation and the kernel faults with an
illegal memory access, after which the CUDA context is unusable: the test
that shows it runs in a fresh interpreter.  With gpushim the results are
NumPy's.  Without a device the tests are skipped with "no CUDA device"
(tests/gpu.py), and none of them has run yet.
"""

from __future__ import annotations

import numpy
import pytest

from gpushim.patches.cupy.intersect1d_empty import patch
from tests.cupy import intersect_corpus
from tests.gpu import on_gpu
from tests.support import gate, run_python

GATE = gate(patch)

CRASH = """
import cupy
found = cupy.intersect1d(cupy.asarray([1.0, 2.0]), cupy.asarray([], dtype="float64"))
cupy.cuda.Device().synchronize()
print(found.size)
"""


@on_gpu
@GATE.affected_only
def test_needed_an_empty_second_array_faults_without_gpushim():
    finished = run_python(CRASH)
    assert finished.returncode != 0
    assert "cudaErrorIllegalAddress" in finished.stderr or "CUDA_ERROR_ILLEGAL_ADDRESS" in finished.stderr


@on_gpu
@GATE.recorded_only
@pytest.mark.parametrize("case", list(intersect_corpus.intersect_cases()))
def test_the_results_are_numpys(case, this_patch):
    import cupy

    a, dtype_a, b, dtype_b, unique, indices = intersect_corpus.intersect_cases()[case]
    arr1 = numpy.array(intersect_corpus.ARRAYS[a], dtype_a)
    arr2 = numpy.array(intersect_corpus.ARRAYS[b], dtype_b)
    if unique and (len(set(arr1.tolist())) < arr1.size or len(set(arr2.tolist())) < arr2.size):
        pytest.skip("assume_unique with repeated values: undefined in NumPy and CuPy alike")
    found = cupy.intersect1d(cupy.asarray(arr1), cupy.asarray(arr2), unique, indices)
    expected = numpy.intersect1d(arr1, arr2, unique, indices)
    for mine, theirs in zip(found if indices else [found], expected if indices else [expected]):
        assert mine.get().tolist() == theirs.tolist() and mine.dtype == theirs.dtype
