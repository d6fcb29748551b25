"""cupy.upfirdn_2d_launch on a CUDA device: 2-D ``upfirdn`` and ``resample_poly`` launch, and match SciPy.

The CPU tests record the launch configuration; a device shows what it does.
Without gpushim a ``(2, 48000)`` input asks for a block of 6,001 threads and
CUDA refuses the launch; with it, the results are SciPy's.  Without a device
the tests are skipped with "no CUDA device" (tests/gpu.py), and none of them
has run yet.
"""

from __future__ import annotations

import numpy
import pytest

from gpushim.patches.cupy.upfirdn_2d_launch import patch
from tests.cupy import upfirdn_corpus
from tests.gpu import on_gpu
from tests.support import gate

GATE = gate(patch)
scipy_signal = pytest.importorskip("scipy.signal")


@on_gpu
@GATE.affected_only
def test_needed_a_wide_2d_input_fails_to_launch_without_gpushim():
    import cupy
    import cupyx.scipy.signal

    taps, x = upfirdn_corpus.arguments("(2, 48000)", "h=2", "float64", cupy)
    with pytest.raises(cupy.cuda.driver.CUDADriverError):
        cupyx.scipy.signal.upfirdn(taps, x)
        cupy.cuda.Device().synchronize()


@on_gpu
@GATE.recorded_only
@pytest.mark.parametrize("case", [case for case in upfirdn_corpus.cases() if "(10,)" not in case])
def test_upfirdn_is_scipys(case, this_patch):
    import cupy
    import cupyx.scipy.signal

    shape, axis, h, rate, dtype = upfirdn_corpus.cases()[case]
    taps, x = upfirdn_corpus.arguments(shape, h, dtype, numpy)
    found = cupyx.scipy.signal.upfirdn(cupy.asarray(taps), cupy.asarray(x), *upfirdn_corpus.RATES[rate], axis=axis)
    expected = scipy_signal.upfirdn(taps, x, *upfirdn_corpus.RATES[rate], axis=axis)
    assert numpy.allclose(found.get(), expected, rtol=1e-4, atol=1e-3)


@on_gpu
@GATE.recorded_only
@pytest.mark.parametrize("axis", [0, 1])
def test_resample_poly_of_2d_input_is_scipys(axis, this_patch):
    import cupy
    import cupyx.scipy.signal

    x = numpy.sin(numpy.linspace(0.0, 50.0, 2 * 4800)).reshape(2, 4800)
    x = x if axis == 1 else x.T.copy()
    found = cupyx.scipy.signal.resample_poly(cupy.asarray(x), 3, 2, axis=axis)
    assert numpy.allclose(found.get(), scipy_signal.resample_poly(x, 3, 2, axis=axis), atol=1e-8)
