"""cupy.fftshift_numpy_compat: ``fftshift``/``ifftshift`` with ``axes`` under NumPy 2 (cupy/cupy#8393).

Before 13.3.0 any ``axes`` but ``None`` raises AttributeError for
``numpy.compat``; with gpushim the functions take ``axes`` as 13.3.0 does.
Each case records what they ask ``cupy.roll`` for, the shifts and the axes,
or their error: ``cupy.roll`` is a recorder and ``cupy.asarray`` hands the
device array back as it is (it asks the driver which device is current),
so no device is needed; the array's memory is never touched.
"""

import contextlib
from unittest import mock

import pytest

cupy = pytest.importorskip("cupy")

import numpy

from gpushim.patches.cupy.fftshift_numpy_compat import patch
from tests.cupy.fusion_tracing import untouched_allocator
from tests.support import gate, record_corpus

GATE = gate(patch)

SHAPES = ((4,), (3, 5), (2, 3, 4))
AXES = (None, 0, 1, -1, 5, (0,), (0, 1), [1, 0], (), numpy.int64(0), True, 1.0, "0", numpy.array(1))
FUNCTIONS = ("cupy.fft.fftshift", "cupy.fft.ifftshift", "cupyx.scipy.fft.fftshift", "cupyx.scipy.fft.ifftshift")


def function(name):
    import cupyx.scipy.fft

    module, _, attribute = name.rpartition(".")
    return getattr({"cupy.fft": cupy.fft, "cupyx.scipy.fft": cupyx.scipy.fft}[module], attribute)


def cases():
    return {
        f"{name} shape={shape} axes={axes!r}": (name, shape, axes)
        for name in FUNCTIONS
        for shape in SHAPES
        for axes in AXES
    }


def run(selected=None):
    """``{case: {"rolled": [shifts, axes]} or {"error": ...}}``."""
    every, outcomes, rolled = cases(), {}, []

    def roll(a, shift, axis=None):
        rolled.append([repr(shift), repr(axis)])
        return a

    with contextlib.ExitStack() as stack:
        stack.enter_context(untouched_allocator())
        stack.enter_context(mock.patch.object(cupy, "asarray", lambda a: a))
        stack.enter_context(mock.patch.object(cupy, "roll", roll))
        for case in every if selected is None else selected:
            name, shape, axes = every[case]
            del rolled[:]
            try:
                function(name)(cupy.empty(shape), axes)
            except Exception as error:
                outcomes[case] = {"error": f"{type(error).__name__}: {error}"}
            else:
                outcomes[case] = {"rolled": list(rolled)}
    return outcomes


@GATE.affected_only
def test_needed_every_axes_but_none_raises_attributeerror_without_gpushim():
    outcomes = run()
    failing = {
        case
        for case, outcome in outcomes.items()
        if outcome.get("error", "").startswith("AttributeError: `np.compat` was removed")
    }
    assert failing == {case for case in outcomes if not case.endswith("axes=None")}


@GATE.affected_only
def test_effective_one_axis_is_rolled_by_half_its_length(this_patch):
    assert run(["cupy.fft.fftshift shape=(3, 5) axes=1"])["cupy.fft.fftshift shape=(3, 5) axes=1"] == {
        "rolled": [["[2]", "(1,)"]]
    }
    assert run(["cupy.fft.ifftshift shape=(3, 5) axes=(0, 1)"])["cupy.fft.ifftshift shape=(3, 5) axes=(0, 1)"] == {
        "rolled": [["[-1, -2]", "(0, 1)"]]
    }


@GATE.affected_only
def test_effective_the_view_reads_as_numpy_elsewhere(this_patch):
    from cupy.fft import _fft

    assert _fft.np.__wrapped__ is numpy
    assert _fft.np.float64 is numpy.float64 and _fft.np.dtype is numpy.dtype
    assert "compat" not in vars(numpy)


@GATE.unaffected_only
def test_harmless_the_module_reads_numpy_itself(gpushim_patched):
    from cupy.fft import _fft

    assert _fft.np is numpy


@GATE.recorded_only
def test_faithful_rolls_and_errors_of_the_corpus(gpushim_patched):
    """Patched old releases record what unpatched 13.3.0 records; the matrix compares the files."""
    outcomes = record_corpus(patch, run)
    assert len(outcomes) == len(cases()) == 168
