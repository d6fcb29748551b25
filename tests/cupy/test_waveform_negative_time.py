"""cupy.waveform_negative_time: ``sawtooth`` and ``square`` reduce ``t`` with C's ``fmod`` (cupy/cupy#9568).

The bug is in the kernels' bodies, which a device runs; the CPU runs them
too.  Values: each kernel's own body (``operation``), as the installed
module holds it, compiled by the host's C++ compiler for ``double`` and run
over a grid of ``(t, width)`` (``gpushim.patches.cupy._host_kernel``), against
``scipy.signal``.  That is a sound stand-in for the device: CuPy's
elementwise code runs the body once per element with the same bindings, and
the body's arithmetic is ``fmod`` (exact on both), comparisons and a few
roundings that agree to the last bits or two, far below the 2.0 that the
bug is off by.  Device code: the same body in a kernel of its own,
compiled by the real NVRTC with CuPy's headers and the kernel's own options
(``nvrtc``).  ``test_gpu_waveform_negative_time`` runs the waveforms on a
device.
"""

from __future__ import annotations

from pathlib import Path

import numpy
import pytest

cupy = pytest.importorskip("cupy")

from gpushim import ProbeCannotRun
from gpushim.patches.cupy._host_kernel import run_body
from gpushim.patches.cupy._kernels import signature
from gpushim.patches.cupy._on_numpy import import_signal
from gpushim.patches.cupy.waveform_negative_time import KERNELS, patch
from tests.cupy import nvrtc
from tests.support import applied, gate, record_corpus

GATE = gate(patch)
try:
    signal = import_signal()
    run_body(signal._waveforms._sawtooth_kernel, {"T": "double"}, [])
except ProbeCannotRun as error:
    pytest.skip(str(error), allow_module_level=True)

scipy_signal = pytest.importorskip("scipy.signal")

TIMES = [round(-20.0 + 0.37 * k, 2) for k in range(109)]  # -20 to 19.96, on no edge of a period
WIDTHS = [0.0, 0.25, 0.5, 1.0]
POINTS = [(t, w) for t in TIMES for w in WIDTHS]
SCIPYS = {"_sawtooth_kernel": scipy_signal.sawtooth, "_square_kernel": scipy_signal.square}


def computed(name):
    """The installed kernel ``name``'s body at every point, as floats."""
    calls = [{"t": t, "w": w} for t, w in POINTS]
    found = run_body(getattr(signal._waveforms, name), {"T": "double"}, calls)
    return numpy.array([float(point["y"]) for point in found])


def expected(name):
    return numpy.array([float(SCIPYS[name](t, w)) for t, w in POINTS])


def negative(values):
    return values[numpy.array([t < 0 for t, _ in POINTS])]


def device_rejection(name):
    """NVRTC's log for kernel ``name``'s body in a kernel over doubles, with its options; None where it compiles."""
    kernel = getattr(signal._waveforms, name)
    source = DEVICE_HARNESS.replace("@OPERATION@", kernel.operation)
    include = Path(cupy.__file__).parent / "_core" / "include"
    return nvrtc.rejection(source, (*kernel.kwargs.get("options", ()), f"-I{include}"))


DEVICE_HARNESS = """
#include <cupy/carray.cuh>

template <typename T>
__device__ double body(const T t, const T w) {
    double y;
@OPERATION@
    return y;
}

extern "C" __global__ void waveform(const double *t, const double *w, double *y) {
    y[threadIdx.x] = body<double>(t[threadIdx.x], w[threadIdx.x]);
}
"""


@GATE.affected_only
@pytest.mark.parametrize("name", KERNELS)
def test_needed_negative_times_are_off_without_gpushim(name):
    found, wanted = computed(name), expected(name)
    assert not numpy.allclose(negative(found), negative(wanted))
    positive = numpy.array([t >= 0 for t, _ in POINTS])
    assert numpy.allclose(found[positive], wanted[positive], atol=1e-12)


@GATE.affected_only
def test_needed_sawtooth_of_minus_one_is_minus_1_318_without_gpushim():
    assert patch.probe() == "cupyx.scipy.signal.sawtooth(-1) is -1.3183, not 0.6817"


@GATE.affected_only
@pytest.mark.parametrize("name", KERNELS)
def test_effective_every_time_is_scipys(name, this_patch):
    assert numpy.allclose(computed(name), expected(name), atol=1e-12)


@GATE.affected_only
@pytest.mark.parametrize("name", KERNELS)
def test_effective_the_kernel_is_the_release_s_but_for_tmod(name):
    released = getattr(signal._waveforms, name)
    with applied(patch):
        fixed = getattr(signal._waveforms, name)
        assert fixed.__wrapped__ is released and type(fixed).__mro__[1] is cupy.ElementwiseKernel
        assert (fixed.name, fixed.kwargs, fixed.preamble) == (released.name, released.kwargs, released.preamble)
        assert signature(fixed.in_params + fixed.out_params) == signature(released.in_params + released.out_params)
        changed = [line for line in fixed.operation.splitlines() if line not in released.operation.splitlines()]
    assert changed == ["    T tmod { fmod( t, 2.0 * M_PI ) };", "    if ( tmod < 0 ) { tmod += 2.0 * M_PI; }"]


@GATE.affected_only
@pytest.mark.parametrize("name", KERNELS)
def test_effective_nvrtc_compiles_the_fixed_body_as_the_released_one(name, this_patch):
    assert device_rejection(name) is None


@GATE.unaffected_only
def test_harmless_not_affected_and_the_kernels_are_cupys_own(gpushim_patched):
    assert gpushim_patched.record(patch.id)["state"] == "not-affected"
    assert all(type(getattr(signal._waveforms, name)) is cupy.ElementwiseKernel for name in KERNELS)


@GATE.recorded_only
def test_faithful_values_of_the_kernels_bodies():
    """Patched old releases record what unpatched 14.0.0 records; the matrix compares the files.

    The record holds what each kernel's body computes at every point, and
    whether NVRTC compiles it; not the options, which 14.0.0 changed for
    every kernel (see the patch's "Not backported").
    """
    outcomes = record_corpus(patch, run)
    assert all(len(outcome["values"]) == len(POINTS) == 436 for outcome in outcomes.values())


def run():
    return {name: {"values": computed(name).tolist(), "nvrtc": device_rejection(name)} for name in KERNELS}
