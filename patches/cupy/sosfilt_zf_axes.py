"""``cupyx.scipy.signal.sosfilt(sos, x, zi=zi)`` of a 1-D ``x`` returns its final state ``zf`` transposed.

What breaks.  For a 1-D ``x`` and ``n_sections`` sections, ``zi`` and the
``zf`` returned with the output have the shape ``(n_sections, 4)`` (CuPy
keeps four values per section).  The released ``apply_iir_sos``, which
``sosfilt`` calls, collects ``zf`` in that shape, then moves its last axis
to the position of ``x``'s filtered axis, 0: ``zf`` comes back ``(4,
n_sections)``, each section's state spread across a column.  Passed back as
``zi`` to filter the next block of a signal, it raises for its shape, or with
four sections is read as the wrong values, and the continued filter is wrong.
Nothing raises in the call itself.  CuPy 13.0.0 to 13.3.0 do this (12.x has
no IIR filters), with every NumPy.

Fixed upstream.  cupy/cupy#8677 (merged as 89ef69fa4), backported as #8679
(b0e6eff84), released in 13.4.0: ``git tag --contains b0e6eff84`` starts at
v13.4.0.  13.0.0 (by hand) and the cells from 13.1.0 to 13.3.0 run the patch's
proofs, and 13.4.0 records the reference.

How the fix works.  13.4.0 moves ``zf``'s axes only where ``zi`` has more than
two dimensions.  The patch wraps ``apply_iir_sos`` (in ``_iir_utils``, its
home, and in ``_signaltools`` and ``_bsplines``, which import it by name):
where a ``zi`` of at most two dimensions was given, it moves the axis of the
returned ``zf`` back where it was, the inverse of the release's move, and
makes the array C-contiguous as 13.4.0's is; the values and the output are
the release's own.  Other calls are the release's, untouched.

Not backported.  Nothing else: 13.4.0 changes only that condition.

The probe.  ``sosfilt`` of a 1-D ``x`` with a ``(2, 4)`` ``zi``, run on NumPy
arrays with ``_iir_utils`` reading ``cupy`` as NumPy and its kernels standing
still (``_on_numpy``): the shape of ``zf`` depends on the host code alone, and
must be ``(2, 4)``.  Importing ``cupyx.scipy.signal`` needs libcublas.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, expect

patch = Patch(
    id="cupy.sosfilt_zf_axes",
    affected=">=13.0.0,<13.4.0",
    fixed_in="13.4.0",
    issue="cupy/cupy#8677",
    fix="cupy/cupy#8677 (backport #8679)",
    summary="cupyx.scipy.signal.sosfilt(sos, x, zi=zi) of a 1-D x returns its final state zf transposed.",
    module="cupyx.scipy.signal",
)

_APPLY_IIR_SOS = Parameters("x", "sos", axis=-1, zi=None, dtype=None, block_sz=1024, apply_fir=True, out=None)


def _fixed(iir):
    def apply_iir_sos(wrapped, instance, args, kwargs):
        result = wrapped(*args, **kwargs)
        x, _, axis, zi, *_ = _APPLY_IIR_SOS.bind(*args, **kwargs)  # binds: the release's call has
        if zi is None or zi.ndim > 2:
            return result
        out, zf = result
        zf = iir.cupy.moveaxis(zf, iir._normalize_axis_index(axis, x.ndim), -1)
        return out, (zf if zf.flags.c_contiguous else zf.copy())

    return apply_iir_sos


@patch.applier
def _apply(signal, journal):
    iir = expect(signal, "_iir_utils")
    expect(iir, "_normalize_axis_index", callable)
    _APPLY_IIR_SOS.check(expect(iir, "apply_iir_sos", callable))
    owners = (iir, expect(signal, "_signaltools"), expect(signal, "_bsplines"))
    journal.wrap(owners, "apply_iir_sos", _fixed(iir))


def standing_kernels(iir):
    """``_iir_utils`` reading ``cupy`` as NumPy, its kernels called but doing nothing, for a ``with`` block."""
    from gpushim.patches.cupy._on_numpy import numpy_for_cupy

    def kernel(*args, **kwargs):
        return None

    return numpy_for_cupy(iir, _get_module_func=lambda *args: kernel)


@patch.prober
def _probe():
    """``sosfilt`` of ``arange(10.0)`` with two sections and a ``(2, 4)`` ``zi``, on NumPy: ``zf`` is ``(2, 4)``."""
    import numpy

    from gpushim.patches.cupy._on_numpy import import_signal

    signal = import_signal()
    sos = numpy.array([[1.0, 0.0, 0.0, 1.0, 0.5, 0.0], [1.0, 1.0, 0.0, 1.0, 0.0, 0.0]])
    with standing_kernels(signal._iir_utils):
        _, zf = signal.sosfilt(sos, numpy.arange(10.0), zi=numpy.zeros((2, 4)))
    return None if zf.shape == (2, 4) else f"sosfilt of a 1-D x with a (2, 4) zi returns zf of shape {zf.shape}"
