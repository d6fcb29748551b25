"""``cupyx.scipy.signal.hilbert2`` builds the first axis's filter twice and never the second's: its result is zero.

What breaks.  ``hilbert2(x)`` multiplies the 2-D FFT of ``x`` by the outer
product of two one-axis filters, ``h1`` over the first axis and ``h2`` over
the second, and returns the inverse FFT.  The release's loop fills ``h1``
twice and leaves ``h2`` all zeros, so the product is zero and so is every
result, whatever ``x``: ``hilbert2`` of a 7 by 9 array is off SciPy's by up
to 3.47.  Nothing raises.  Every CuPy 13.x release does this, 13.6.0
included (12.x has no ``cupyx.scipy.signal.hilbert2``), with every NumPy.

Fixed upstream.  cupy/cupy#9396 (merged as 27a39c9c7), released in 14.0.0 and
not backported: ``git tag --contains 27a39c9c7`` gives v14.0.0rc1 onwards and
no 13.x.  The loop is the same in v13.0.0 and v13.6.0; 13.0.0 (by hand) and the
cells from 13.1.0 to 13.6.0 run the patch's proofs, and 14.0.0, the first 14.x
release on PyPI, records the reference.

How the fix works.  14.0.0 fills ``h2`` as it fills ``h1``.  The patch wraps
``hilbert2`` (in ``cupyx.scipy.signal`` and its home, ``_signaltools``): a
call that binds as the release binds it is computed as 14.0.0 computes it,
with the same checks and messages, the same FFTs (``_signaltools.sp_fft``)
and each axis's filter built over that axis; one that does not bind is the
release's to reject.  The filters hold only 0, 1 and 2, so building them
another way changes no bit of the result.  The module's globals are read at
each call.

Not backported.  Nothing else: ``hilbert2`` is otherwise the same in 14.0.0.

The probe.  ``hilbert2`` of a 2 by 2 array on NumPy arrays, its module reading
``cupy`` as NumPy and ``sp_fft`` as ``scipy.fft`` (``_on_numpy``), must not be
all zeros.  Importing ``cupyx.scipy.signal`` needs libcublas, from a CUDA
toolkit or the ``nvidia-cublas-cu12`` wheel (14.x: libnvJitLink, for
cuSPARSE), and SciPy; where it cannot be imported the probe cannot run.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, expect

patch = Patch(
    id="cupy.hilbert2_second_axis",
    affected=">=13.0.0,<14.0.0",
    fixed_in="14.0.0",
    issue="cupy/cupy#9396",
    fix="cupy/cupy#9396 (27a39c9c7)",
    summary="cupyx.scipy.signal.hilbert2 never builds its second axis's filter and returns zeros for every input.",
    module="cupyx.scipy.signal",
)

_HILBERT2 = Parameters("x", N=None)


def _axis_filter(cupy, n, dtype):
    """One axis's filter over ``n`` frequencies: 1 at 0 (and at ``n/2`` for even ``n``), 2 above it, 0 below."""
    h = cupy.zeros(n, dtype=dtype)
    h[0] = 1
    h[1 : (n + 1) // 2] = 2
    if n % 2 == 0:
        h[n // 2] = 1
    return h


def _sizes(N, shape):
    """The numbers of Fourier components per axis, as 14.0.0 reads ``N``, or its ``ValueError``."""
    if N is None:
        return shape
    if isinstance(N, int):
        if N <= 0:
            raise ValueError("N must be positive.")
        return (N, N)
    if len(N) != 2 or (N[0] <= 0 or N[1] <= 0):
        raise ValueError("When given as a tuple, N must hold exactly two positive integers")
    return N


def _fixed(signaltools):
    def hilbert2(wrapped, instance, args, kwargs):
        try:
            x, N = _HILBERT2.bind(*args, **kwargs)
        except TypeError:
            return wrapped(*args, **kwargs)  # a call CuPy itself rejects, with its own message
        cupy, fft = signaltools.cupy, signaltools.sp_fft
        if x.ndim < 2:
            x = cupy.atleast_2d(x)
        if x.ndim > 2:
            raise ValueError("x must be 2-D.")
        if cupy.iscomplexobj(x):
            raise ValueError("x must be real.")
        N = _sizes(N, x.shape)
        spectrum = fft.fft2(x, N, axes=(0, 1))
        rows, columns = (_axis_filter(cupy, n, spectrum.dtype) for n in N)
        return fft.ifft2(spectrum * (rows[:, cupy.newaxis] * columns[cupy.newaxis, :]), axes=(0, 1))

    return hilbert2


@patch.applier
def _apply(signal, journal):
    signaltools = expect(signal, "_signaltools")
    expect(signaltools, "sp_fft.fft2", callable)
    expect(signaltools, "sp_fft.ifft2", callable)
    _HILBERT2.check(expect(signaltools, "hilbert2", callable))
    journal.wrap((signal, signaltools), "hilbert2", _fixed(signaltools))


@patch.prober
def _probe():
    """``hilbert2([[1, 2], [3, 4]])`` on NumPy arrays: not all zeros."""
    import numpy
    import scipy.fft

    from gpushim.patches.cupy._on_numpy import import_signal, numpy_for_cupy

    signal = import_signal()
    with numpy_for_cupy(signal._signaltools, sp_fft=scipy.fft):
        result = signal.hilbert2(numpy.array([[1.0, 2.0], [3.0, 4.0]]))
    return "cupyx.scipy.signal.hilbert2([[1, 2], [3, 4]]) is all zeros" if not result.any() else None
