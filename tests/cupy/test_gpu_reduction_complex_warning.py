"""cupy.reduction_complex_warning on a CUDA device: the reduction reaches its warning.

The CPU tests show where the warning's class is looked up; a reduction asks
the device which it is before it gets there, so only a device runs it:
``cupy.arange(3, dtype=complex).sum(dtype=numpy.float64)`` raises
AttributeError before 13.4.0 under NumPy 2, and with gpushim warns and adds
the real parts.  Without a device they are skipped with "no CUDA device"
(tests/gpu.py), and none of them has run yet.
"""

from __future__ import annotations

import numpy
import pytest

from gpushim.patches.cupy.reduction_complex_warning import patch
from tests.gpu import on_gpu
from tests.support import gate

GATE = gate(patch)
WARNING = "Casting complex values to real discards the imaginary part"


def summed():
    import cupy

    return cupy.arange(3, dtype=complex).sum(dtype=numpy.float64)


@on_gpu
@GATE.affected_only
def test_needed_a_sum_of_complex_values_to_float64_raises_attributeerror_without_gpushim():
    with pytest.raises(AttributeError, match="ComplexWarning"):
        summed()


@on_gpu
@GATE.recorded_only
def test_the_sum_warns_complexwarning_and_adds_the_real_parts(this_patch):
    with pytest.warns(numpy.exceptions.ComplexWarning, match=WARNING):
        total = summed()
    assert float(total) == 3.0
