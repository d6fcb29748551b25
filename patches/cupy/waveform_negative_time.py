"""``cupyx.scipy.signal.sawtooth`` and ``square`` are wrong for negative times: C's ``fmod`` is not Python's ``%``.

What breaks.  Both waveforms reduce ``t`` to one period with ``fmod(t, 2π)``
in their kernels, which for a negative ``t`` is negative where SciPy's ``t %
2π`` lies in ``[0, 2π)``.  ``sawtooth(-1)`` is -1.318 where SciPy gives
0.682, and ``square`` of a negative ``t`` takes the wrong sign over part of
each period; positive times are right.  Nothing raises.  Every CuPy 13.x
release does this, 13.6.0 included (12.x has no ``cupyx.scipy.signal``
waveforms), with every NumPy.

Fixed upstream.  cupy/cupy#9568, fixed by #9613 (merged as d54e27db7) and its
v14 backport #9624 (4a65b69e8), released in 14.0.0 and not backported to 13.x:
``git tag --contains`` of both gives v14.0.0 onwards.  The kernels' line is the
same in v13.0.0 and v13.6.0; 13.1.0 and 13.6.0 run the patch's proofs, and
14.0.0, the first 14.x release on PyPI, records the reference.

How the fix works.  14.0.0 adds 2π to a negative remainder before using it.
The patch replaces the two kernels that ``sawtooth`` and ``square`` look up
among their module's globals at each call, ``_sawtooth_kernel`` and
``_square_kernel``, by kernels made of the release's own (``_kernels``): the
same parameters, name and options, and the same body with its one line
``const T tmod { fmod( t, 2.0 * M_PI ) };`` declaring a ``tmod`` that gets 2π
added where it is negative.  A release whose kernels lack that line, once
each, is a mismatch.  The new kernels compile on first use, as the released
ones do; ``gpushim.unpatch()`` puts the released ones back, with their
caches.

Not backported.  14.0.0 also drops the kernels' ``-std=c++11`` option, with
every other kernel's (cupy/cupy@e98cd2836), which the patch keeps: the
reference's record holds the values the kernels' bodies compute, not their
options.

The probe.  Without a device, the body of the installed ``_sawtooth_kernel``
compiled by the host's C++ compiler and run at ``t = -1`` (``_host_kernel``):
it must give ``0.682``, SciPy's value; with a device, ``sawtooth(-1)``
itself.  Without either (no device, no ``c++`` on PATH), it cannot
run.  Importing ``cupyx.scipy.signal`` needs libcublas.
"""

from __future__ import annotations

from gpushim import Patch, TargetMismatch, expect

patch = Patch(
    id="cupy.waveform_negative_time",
    affected=">=13.0.0,<14.0.0",
    fixed_in="14.0.0",
    issue="cupy/cupy#9568",
    fix="cupy/cupy#9613 (v14 backport #9624)",
    summary="cupyx.scipy.signal.sawtooth and square are wrong for negative t: the kernels reduce t with C's fmod.",
    module="cupyx.scipy.signal",
)

KERNELS = ("_sawtooth_kernel", "_square_kernel")
_RELEASED_LINE = "const T tmod { fmod( t, 2.0 * M_PI ) };"
# Python's t % 2π: C's remainder, moved up by a period where it is negative.
_FIXED_LINE = "T tmod { fmod( t, 2.0 * M_PI ) };\n    if ( tmod < 0 ) { tmod += 2.0 * M_PI; }"


def _fixed_kernel(cupy, released):
    """A kernel like ``released`` whose ``tmod`` is Python's remainder."""
    from gpushim.patches.cupy._kernels import kernel_like

    if released.operation.count(_RELEASED_LINE) != 1:
        raise TargetMismatch(f"{released.name} does not declare tmod once as {_RELEASED_LINE!r}")
    return kernel_like(cupy, released, released.operation.replace(_RELEASED_LINE, _FIXED_LINE))


@patch.applier
def _apply(signal, journal):
    waveforms = expect(signal, "_waveforms")
    kernel_class = expect(waveforms, "cupy.ElementwiseKernel", type)
    for name in KERNELS:
        released = expect(waveforms, name, kernel_class)
        journal.replace(waveforms, name, _fixed_kernel(waveforms.cupy, released))


@patch.prober
def _probe():
    """``sawtooth(-1)``, on a device or by the kernel's body compiled on the host: SciPy's 0.682, not -1.318."""
    from gpushim import device
    from gpushim.patches.cupy._on_numpy import import_signal

    signal = import_signal()
    if device.cuda_present():
        import cupy

        value = float(signal.sawtooth(cupy.asarray([-1.0]))[0])
    else:
        from gpushim.patches.cupy._host_kernel import run_body

        (point,) = run_body(signal._waveforms._sawtooth_kernel, {"T": "double"}, [{"t": -1.0, "w": 1.0}])
        value = float(point["y"])
    return (
        None
        if abs(value - 0.6816901138162093) < 1e-12
        else f"cupyx.scipy.signal.sawtooth(-1) is {value:.4f}, not 0.6817"
    )
