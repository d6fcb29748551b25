"""``cupyx.scipy.signal.upfirdn`` over 1-D and 2-D inputs, axes, filters, rates and dtypes: its kernel launches.

The bug of cupy/cupy#9352 is in the launch configuration, which host code
decides, so each case runs ``upfirdn`` on NumPy arrays with its module
reading ``cupy`` as NumPy and the kernels recorded, not run (the patch
module's ``recording_launches``): no device is needed.  A case records each
launch (kernel, grid, block, arguments with arrays by shape and dtype) and
the output's shape and dtype, or the exception.  N-D input, which 14.0.0
filters and 13.x refuses, is left out (see the patch's "Not backported").
"""

from __future__ import annotations

import numpy

SHAPES = {"(10,)": (10,), "(2, 48000)": (2, 48000), "(5, 7)": (5, 7), "(64, 3)": (64, 3), "(3, 600)": (3, 600)}
AXES = (-1, 0)
FILTERS = {"h=2": 2, "h=7": 7}
RATES = {"1/1": (1, 1), "3/2": (3, 2), "1/4": (1, 4)}
DTYPES = ("float32", "float64", "complex128")


def cases():
    return {
        f"x={shape} axis={axis} {h} up/down={rate} {dtype}": (shape, axis, h, rate, dtype)
        for shape in SHAPES
        for axis in AXES
        for h in FILTERS
        for rate in RATES
        for dtype in DTYPES
    }


def arguments(shape, h, dtype, xp):
    """``(h, x)`` of a case, made by ``xp`` (NumPy or CuPy)."""
    taps = numpy.linspace(1.0, 2.0, FILTERS[h])
    size = int(numpy.prod(SHAPES[shape]))
    x = (numpy.arange(size).reshape(SHAPES[shape]) % 11 - 5).astype(dtype)
    return xp.asarray(taps), xp.asarray(x)


def run():
    """``{case: outcome}``, each case run through ``cupyx.scipy.signal.upfirdn`` on NumPy arrays."""
    from gpushim.patches.cupy._on_numpy import import_signal
    from gpushim.patches.cupy.upfirdn_2d_launch import LaunchRecorder, recording_launches

    signal = import_signal()
    outcomes = {}
    recorder = LaunchRecorder()
    with recording_launches(signal._upfirdn, recorder):
        for case, (shape, axis, h, rate, dtype) in cases().items():
            taps, x = arguments(shape, h, dtype, numpy)
            recorder.launches.clear()
            try:
                out = signal.upfirdn(taps, x, *RATES[rate], axis=axis)
            except Exception as error:
                outcomes[case] = f"{type(error).__name__}: {error}"
            else:
                outcomes[case] = {"launches": list(recorder.launches), "out": [list(out.shape), str(out.dtype)]}
    return outcomes
