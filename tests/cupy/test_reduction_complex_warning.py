"""cupy.reduction_complex_warning: reductions name NumPy 2's ComplexWarning (cupy/cupy#8676).

A reduction asks the device which it is before it warns, so without a
device the warning cannot be reached (``test_gpu_reduction_complex_warning.py``
reaches it).  What the CPU shows is where it is looked up: the global
``numpy`` of ``cupy._core._reduction``, which with gpushim holds the class
13.4.0 warns with and reads as NumPy otherwise.
"""

import pytest

cupy = pytest.importorskip("cupy")

import numpy

from gpushim.patches.cupy.reduction_complex_warning import patch
from tests.support import gate, record_faithful

GATE = gate(patch)


def reduction():
    from cupy._core import _reduction

    return _reduction


@GATE.affected_only
def test_needed_the_module_reads_complexwarning_on_numpy_which_has_none_without_gpushim():
    assert reduction().numpy is numpy
    assert not hasattr(numpy, "ComplexWarning")


@GATE.affected_only
def test_effective_the_warning_is_numpy_2_s_and_the_rest_is_numpy(this_patch):
    view = reduction().numpy
    assert view.ComplexWarning is numpy.exceptions.ComplexWarning
    assert view.__wrapped__ is numpy
    assert view.dtype is numpy.dtype and view.ndarray is numpy.ndarray
    assert not hasattr(numpy, "ComplexWarning")


@GATE.recorded_only
def test_faithful_the_warning_is_numpy_2_s_complexwarning(gpushim_patched):
    """What ``_reduction`` warns with: the view's class where patched, ``cupy.exceptions``' in 13.4.0."""
    warns_with = reduction().numpy.ComplexWarning if GATE.affected else cupy.exceptions.ComplexWarning
    assert warns_with is numpy.exceptions.ComplexWarning
    record_faithful(patch, {"warns with": f"{warns_with.__module__}.{warns_with.__qualname__}"})


@GATE.unaffected_only
def test_harmless_the_module_reads_numpy_itself(gpushim_patched):
    assert reduction().numpy is numpy
