"""cupy.waveform_negative_time on a CUDA device: ``sawtooth`` and ``square`` of negative times against SciPy's.

The CPU tests run the kernels' bodies compiled for the host, and compile them
with NVRTC; a device runs CuPy's own kernels, generated and compiled as a
user's call does.  Without a device the tests are skipped with "no CUDA
device" (tests/gpu.py), and none of them has run yet.
"""

from __future__ import annotations

import numpy
import pytest

from gpushim.patches.cupy.waveform_negative_time import patch
from tests.gpu import on_gpu
from tests.support import gate

GATE = gate(patch)
scipy_signal = pytest.importorskip("scipy.signal")

TIMES = numpy.linspace(-20.0, 20.0, 1001)
WAVEFORMS = {"sawtooth": "width", "square": "duty"}


def both(function, share):
    import cupy
    import cupyx.scipy.signal

    kwargs = {WAVEFORMS[function]: share}
    found = getattr(cupyx.scipy.signal, function)(cupy.asarray(TIMES), **kwargs).get()
    return found, getattr(scipy_signal, function)(TIMES, **kwargs)


@on_gpu
@GATE.affected_only
def test_needed_sawtooth_of_minus_one_is_off_without_gpushim():
    import cupy
    import cupyx.scipy.signal

    assert abs(float(cupyx.scipy.signal.sawtooth(cupy.asarray([-1.0]))[0]) + 1.3183) < 1e-4


@on_gpu
@GATE.recorded_only
@pytest.mark.parametrize("function", WAVEFORMS)
@pytest.mark.parametrize("share", [0.0, 0.25, 0.5, 1.0])
def test_the_waveforms_are_scipys(function, share, this_patch):
    found, expected = both(function, share)
    assert numpy.allclose(found, expected, atol=1e-12)
