"""cupy.cov_rowvar_single_row on a CUDA device: ``cov`` and ``corrcoef`` of CuPy arrays against NumPy's.

The CPU tests run ``cov``'s Python code on NumPy arrays, which decides the
shape; a device adds CuPy's kernels computing the values, which the tests
compare with ``numpy.cov``/``numpy.corrcoef`` over the corpus of
``cov_corpus`` (NumPy's results are 14.0.0's).  Without a device they are
skipped with "no CUDA device" (tests/gpu.py), and none of them has run yet.
"""

from __future__ import annotations

import warnings

import numpy
import pytest

from gpushim.patches.cupy.cov_rowvar_single_row import patch
from tests.cupy import cov_corpus
from tests.gpu import on_gpu
from tests.support import gate

GATE = gate(patch)


def on_cupy(call, shape):
    import cupy

    function, a, kwargs = cov_corpus.arguments(call, shape, cupy)
    return cov_corpus.outcome(lambda: getattr(cupy, function)(a, **kwargs).get())


def on_numpy(call, shape):
    function, a, kwargs = cov_corpus.arguments(call, shape, numpy)
    return cov_corpus.outcome(lambda: getattr(numpy, function)(a, **kwargs))


@on_gpu
@GATE.affected_only
def test_needed_one_row_with_rowvar_false_is_one_variance_without_gpushim():
    import cupy

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert cupy.cov(cupy.asarray([[1.0, 2.0, 4.0]]), rowvar=False, ddof=0).shape == ()


@on_gpu
@GATE.recorded_only
@pytest.mark.parametrize("case", [case for case in cov_corpus.cases() if "rowvar=False" in case and "y=" not in case])
def test_the_shapes_and_values_are_numpys(case, this_patch):
    call, shape = cov_corpus.cases()[case]
    found, expected = on_cupy(call, shape), on_numpy(call, shape)
    assert (found["shape"], found["values"]) == (expected["shape"], expected["values"])
