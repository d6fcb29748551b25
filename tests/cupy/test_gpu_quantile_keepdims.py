"""cupy.quantile_keepdims on a CUDA device: quantiles with the axis kept, against NumPy's.

The CPU tests prove that the call gets past the host code that raised.  What
a device adds is the result: its shape, with the reduced axis kept as 1 (and
``q``'s axis first for a 1-D ``q``), and its values, which the tests marked
``gpu`` compare with ``numpy.quantile``/``numpy.percentile`` as 13.4.0's test
of the fix (``test_quantile_axis_and_keepdims``) does.  Without a device
they are skipped with "no CUDA device" (tests/gpu.py), and none of them has
run yet.
"""

from __future__ import annotations

import numpy
import pytest

from gpushim.patches.cupy.quantile_keepdims import patch
from tests.gpu import on_gpu
from tests.support import gate

GATE = gate(patch)
QS = {"quantile": [0.5, (0.25, 0.5, 1.0)], "percentile": [50.0, (25.0, 50.0, 100.0)]}


def both(function, shape, q, axis, method):
    """NumPy's and CuPy's ``function(a, q, axis=axis, keepdims=True, method=method)`` of ``arange`` data."""
    import cupy

    host = numpy.arange(numpy.prod(shape), dtype=float).reshape(shape)
    expected = getattr(numpy, function)(host, q, axis=axis, keepdims=True, method=method)
    return expected, getattr(cupy, function)(cupy.asarray(host), q, axis=axis, keepdims=True, method=method)


@on_gpu
@GATE.affected_only
@pytest.mark.parametrize("function", list(QS))
def test_needed_an_integer_axis_with_keepdims_raises_without_gpushim(function):
    with pytest.raises(TypeError, match="'int' object is not iterable"):
        both(function, (3, 4), QS[function][0], 0, "linear")


@on_gpu
@GATE.recorded_only
@pytest.mark.parametrize("function", list(QS))
@pytest.mark.parametrize("q", [0, 1], ids=["scalar q", "1-D q"])
@pytest.mark.parametrize("shape, axis", [((3, 4), 0), ((3, 4), -1), ((2, 3, 4), 1), ((5,), 0), ((1, 6, 3, 2), 0)])
@pytest.mark.parametrize("method", ["linear", "lower", "higher", "midpoint"])
def test_the_results_are_numpys_with_the_axis_kept(function, q, shape, axis, method, this_patch):
    expected, result = both(function, shape, QS[function][q], axis, method)
    assert result.shape == expected.shape
    numpy.testing.assert_allclose(result.get(), expected)
