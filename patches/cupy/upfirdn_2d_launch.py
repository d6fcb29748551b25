"""2-D ``cupyx.scipy.signal.upfirdn`` (and ``resample_poly``) launches its kernel with grid and block swapped.

What breaks.  For 2-D input, ``upfirdn`` sizes a grid of 8 by 8 blocks over
its output, then launches its kernel as ``kernel(threadsperblock,
blockspergrid, ...)``: the grid's size becomes the block's.  A ``(2,
48000)`` input asks for a block of 1 by 6,000 threads, over CUDA's 1,024,
and the launch fails (``CUDA_ERROR_INVALID_VALUE``); the float32 kernel
allows 64 threads a block, so any output over 64 by 64 fails in float32.
Small outputs run, as the kernel loops over what its threads miss.
``resample_poly`` and ``decimate`` of 2-D input call ``upfirdn``.  Every CuPy
13.x release does this, 13.6.0 included (12.x has no ``upfirdn``).

Fixed upstream.  cupy/cupy#9352 (its commit c230861cf, merged as e69202553),
released in 14.0.0 and not backported: ``git tag --contains`` of both gives
v14.0.0rc1 onwards and no 13.x.  The launch is the same in v13.0.0 and v13.6.0;
13.0.0 (by hand) and the cells from 13.1.0 to 13.6.0 run the patch's proofs,
and 14.0.0, the first 14.x release on PyPI, records the reference.

How the fix works.  14.0.0 launches ``kernel(blockspergrid,
threadsperblock, ...)`` with the same grid, block and arguments.  The patch
wraps ``_UpFIRDn.apply_filter``: for 2-D input it prepares the output and the
launch as the release does and launches in 14.0.0's order, reading the
module's ``cupy``, ``UPFIRDN_MODULE``, ``_output_len``, ``_get_max_gdx`` and
``_get_max_gdy`` at each call; any other input, and a call that does not
bind, is the release's.

Not backported.  14.0.0 also filters N-D input (cupy/cupy#9540), which 13.x
refuses with ``NotImplementedError``; 14.2.0 passes strides to the kernels.
The corpus compares 1-D and 2-D launches only.

The probe.  ``upfirdn`` of a ``(2, 48000)`` float64 input, run on NumPy arrays
with the module reading ``cupy`` as NumPy (``_on_numpy``) and a recorder for
the kernel: the block it is launched with must have 64 threads.  No device is
needed.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, expect

patch = Patch(
    id="cupy.upfirdn_2d_launch",
    affected=">=13.0.0,<14.0.0",
    fixed_in="14.0.0",
    issue="cupy/cupy#9352",
    fix="cupy/cupy#9352 (c230861cf)",
    summary="2-D cupyx.scipy.signal.upfirdn and resample_poly launch with grid and block swapped, failing on a device.",
    module="cupyx.scipy.signal",
)

_APPLY_FILTER = Parameters("x", "axis")
_BLOCK = (8, 8)


def _fixed(upfirdn):
    def apply_filter(wrapped, instance, args, kwargs):
        try:
            x, axis = _APPLY_FILTER.bind(*args, **kwargs)
        except TypeError:
            return wrapped(*args, **kwargs)  # a call CuPy itself rejects, with its own message
        x = upfirdn.cupy.asarray(x, instance._output_type)
        if x.ndim != 2:
            return wrapped(x, axis)
        return _filter_2d(upfirdn, instance, x, axis)

    return apply_filter


def _filter_2d(upfirdn, filtering, x, axis):
    """The release's 2-D branch of ``apply_filter``, launched as ``kernel(grid, block, arguments)``."""
    out_shape = list(x.shape)
    out_shape[axis] = upfirdn._output_len(filtering._h_len_orig, x.shape[axis], filtering._up, filtering._down)
    out = upfirdn.cupy.empty(out_shape, dtype=filtering._output_type, order="C")
    axis = axis % x.ndim
    h_per_phase = len(filtering._h_trans_flip) // filtering._up
    grid = (
        min(-(-out.shape[0] // _BLOCK[0]), upfirdn._get_max_gdx()),
        min(-(-out.shape[1] // _BLOCK[1]), upfirdn._get_max_gdy()),
    )
    kernel = upfirdn.UPFIRDN_MODULE.get_function(f"_cupy_upfirdn2D_{out.dtype.name}")
    arguments = (
        x,
        x.shape[1],
        filtering._h_trans_flip,
        filtering._up,
        filtering._down,
        axis,
        x.shape[axis],
        h_per_phase,
        x.shape[axis] + h_per_phase - 1,
        out,
        out.shape[0],
        out.shape[1],
    )
    kernel(grid, _BLOCK, arguments)
    return out


@patch.applier
def _apply(signal, journal):
    upfirdn = expect(signal, "_upfirdn")
    for name in ("_output_len", "_get_max_gdx", "_get_max_gdy", "UPFIRDN_MODULE.get_function"):
        expect(upfirdn, name, callable)
    filtering = expect(upfirdn, "_UpFIRDn", type)
    _APPLY_FILTER.check(expect(filtering, "apply_filter", callable, own=True), method=True)
    journal.wrap(filtering, "apply_filter", _fixed(upfirdn))


class LaunchRecorder:
    """Stands in for ``UPFIRDN_MODULE``: each kernel it hands out records ``(name, grid, block, arguments)``.

    Arrays among the arguments are recorded by their shape and dtype.
    """

    def __init__(self):
        self.launches = []

    def get_function(self, name):
        def launch(grid, block, arguments):
            described = [[list(a.shape), str(a.dtype)] if hasattr(a, "shape") else a for a in arguments]
            self.launches.append([name, list(grid), list(block), described])

        return launch


def recording_launches(upfirdn, recorder):
    """``_upfirdn`` on NumPy, its kernels recorded by ``recorder``, its device limits an H100's, in a ``with``."""
    from gpushim.patches.cupy._on_numpy import numpy_for_cupy

    return numpy_for_cupy(
        upfirdn,
        UPFIRDN_MODULE=recorder,
        _get_max_gdx=lambda: 2**31 - 1,
        _get_max_gdy=lambda: 65535,
        _get_tpb_bpg=lambda: (512, 132 * 20),
    )


@patch.prober
def _probe():
    """``upfirdn([1, 1], x)`` of a ``(2, 48000)`` input on NumPy: launched with blocks of 8 by 8 threads."""
    import numpy

    from gpushim.patches.cupy._on_numpy import import_signal

    signal = import_signal()
    recorder = LaunchRecorder()
    with recording_launches(signal._upfirdn, recorder):
        signal.upfirdn(numpy.ones(2), numpy.zeros((2, 48000)))
    (_, _, block, _), *_ = recorder.launches
    if block != list(_BLOCK):
        return f"2-D upfirdn of a (2, 48000) input launches blocks of {block[0]} by {block[1]} threads"
    return None
