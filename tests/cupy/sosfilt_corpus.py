"""``cupyx.scipy.signal.sosfilt`` with and without ``zi`` over shapes, axes, sections and dtypes.

The bug of cupy/cupy#8677 is in the host code that shapes ``zf``, so each
case runs ``sosfilt`` on NumPy arrays with ``_iir_utils`` reading ``cupy`` as
NumPy and its kernels called but doing nothing (the patch module's
``standing_kernels``): no device is needed.  The values of ``zf`` are then the
release's host-side copies of the unfiltered input, the same in every
release, and show where each lands.  A case records the shapes of the output
and of ``zf``, ``zf``'s dtype, contiguity and values, or the exception.
``test_gpu_sosfilt_zf_axes`` filters on a device.
"""

from __future__ import annotations

import numpy

# name: (shape of x, axis)
X = {"(10,)": ((10,), -1), "(2500,)": ((2500,), 0), "(3, 10)": ((3, 10), -1), "(10, 3) axis 0": ((10, 3), 0)}
SECTIONS = (1, 2, 3)
DTYPES = ("float64", "float32", "complex128")
ZI = ("zi", "no zi")


def cases():
    return {
        f"x={x} sections={n} {dtype} {zi}": (x, n, dtype, zi)
        for x in X
        for n in SECTIONS
        for dtype in DTYPES
        for zi in ZI
    }


def arguments(x, sections, dtype, zi, xp):
    """``(sos, x, axis, zi)`` of a case, arrays made by ``xp`` (NumPy or CuPy)."""
    shape, axis = X[x]
    sos = numpy.tile([1.0, 0.5, 0.0, 1.0, -0.25, 0.0], (sections, 1)).astype(dtype)
    signal = (numpy.arange(numpy.prod(shape)).reshape(shape) % 7 - 3).astype(dtype)
    state = None
    if zi == "zi":
        state_shape = list(shape)
        state_shape[axis] = 4
        state = xp.asarray(numpy.zeros((sections, *state_shape), dtype))
    return xp.asarray(sos), xp.asarray(signal), axis, state


def described(result):
    if not isinstance(result, tuple):
        return {"y": list(result.shape)}
    y, zf = result
    values = [f"{value:.17g}" for value in numpy.asarray(zf).ravel().tolist()]
    return {
        "y": list(y.shape),
        "zf": list(zf.shape),
        "dtype": str(zf.dtype),
        "c": zf.flags.c_contiguous,
        "zf values": values,
    }


def run():
    """``{case: outcome}``, each case run through ``cupyx.scipy.signal.sosfilt`` on NumPy arrays."""
    from gpushim.patches.cupy._on_numpy import import_signal
    from gpushim.patches.cupy.sosfilt_zf_axes import standing_kernels

    signal = import_signal()
    outcomes = {}
    with standing_kernels(signal._iir_utils):
        for case, (x, sections, dtype, zi) in cases().items():
            sos, data, axis, state = arguments(x, sections, dtype, zi, numpy)
            try:
                outcomes[case] = described(signal.sosfilt(sos, data, axis=axis, zi=state))
            except Exception as error:
                outcomes[case] = f"{type(error).__name__}: {error}"
    return outcomes
