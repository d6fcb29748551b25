"""cupy.hilbert2_second_axis on a CUDA device: ``hilbert2`` of CuPy arrays against SciPy's.

The CPU tests run ``hilbert2``'s Python code on NumPy arrays and SciPy's FFT;
a device adds CuPy's FFTs and filters, which the tests compare with
``scipy.signal.hilbert2`` over the corpus of ``hilbert2_corpus``.  Without a
device they are skipped with "no CUDA device" (tests/gpu.py), and none of
them has run yet.
"""

from __future__ import annotations

import numpy
import pytest

from gpushim.patches.cupy.hilbert2_second_axis import patch
from tests.cupy import hilbert2_corpus
from tests.gpu import on_gpu
from tests.support import gate

GATE = gate(patch)
scipy_signal = pytest.importorskip("scipy.signal")


def on_device(x):
    import cupy
    import cupyx.scipy.signal

    return cupyx.scipy.signal.hilbert2(cupy.asarray(hilbert2_corpus.X[x])).get()


@on_gpu
@GATE.affected_only
def test_needed_the_result_is_zero_without_gpushim():
    assert not on_device("(7, 9)").any()


@on_gpu
@GATE.recorded_only
@pytest.mark.parametrize("x", ["(7, 9)", "(2, 2)", "(4, 5) float32", "(1, 6)"])
def test_the_results_are_scipys(x, this_patch):
    expected = scipy_signal.hilbert2(hilbert2_corpus.X[x])
    assert numpy.allclose(on_device(x), expected, rtol=1e-5, atol=1e-4)
