"""``ndarray.get(stream=s)`` of a non-contiguous array packs it on the current stream and copies it on ``s``.

What breaks.  ``cupy.ndarray.get`` (and ``cupy.asnumpy(a, stream=s)``, which
calls it) copies an array that is not contiguous in the order asked for
(``a[:, ::2]``, ``a.T``) by first packing it into a contiguous device array
with a kernel, then copying that array to the host.  Given a stream, it
launches the packing kernel on the current stream and queues the copy on
the stream given: nothing orders the two, so the copy may read the packed
array before the kernel has written it, and return stale memory, silently.
CuPy 13.0.0 to 13.2.0 do this, with every NumPy.  12.x does too (read from
git), but its ``get`` has no ``blocking`` (13.0.0 added it), and a release
that cannot import without a driver cannot show the patch written for 13.x
right: 12.x is left out of the range.

Fixed upstream.  cupy/cupy#8369, backported as #8418, released in 13.3.0,
which packs on the stream given: ``git tag --contains 5669dd000`` (the
merge of #8418) starts at v13.3.0.

How the fix works.  13.3.0 resolves the stream first (the current one
where none is given), then packs inside ``with stream:``, after switching to
the array's device.  ``get`` is a method of the compiled ``_ndarray_base``;
``cupy.ndarray`` is a Python subclass of it, so the patch binds a wrapper of
it there (``unpatch()`` deletes it again), which Python calls and Cython's
own calls of ``get`` find too.  The wrapper resolves the stream as 13.3.0
does and hands it to the release, which then uses it as its own; where the
release will pack (``out`` a NumPy array of the array's dtype and shape,
which the array does not match in contiguity; or no ``out`` and a non-empty
array not contiguous in ``order``, ``'A'`` read as 13.3.0 reads it, or an
order 13.3.0 refuses inside the stream), the wrapper makes the array's
device current, then the stream, around the call: the packing kernel goes on
that stream, and the copy after it, as in 13.3.0.  The patch checks
``get``'s parameters first.

Not backported.  13.3.0's docstring.  Inside the wrapper the stream given is
the current stream for the whole call rather than for the packing alone;
the release reads the current stream nowhere else once a stream is given.

The probe.  Without a device it cannot run: ``get`` asks the driver for the
device before it packs.  With one: ``a[:, ::2].get(stream=s)`` while the
current stream spins, where the block the packing is given (the current
stream's) was left holding -1: the copy on ``s`` must read ``a``'s values,
which it does only once the packing has run.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, ProbeCannotRun, expect
from gpushim.patches.cupy._memory import keep_busy

patch = Patch(
    id="cupy.get_stream_packing",
    affected=">=13.0.0,<13.3.0",
    fixed_in="13.3.0",
    issue="cupy/cupy#8369",
    fix="cupy/cupy#8369 (backport #8418)",
    summary="cupy.ndarray.get(stream=s) of a non-contiguous array packs it on the current stream, not on s.",
)

_GET = Parameters(stream=None, order="C", out=None, blocking=True)


def _packs(numpy, array, order, out):
    """Whether ``array.get(order=order, out=out)`` packs the array first, where 13.3.0 enters the stream."""
    flags = array.flags
    if out is not None:
        if not isinstance(out, numpy.ndarray) or out.dtype != array.dtype or out.shape != array.shape:
            return False  # the release raises first
        return not (out.flags.c_contiguous and flags.c_contiguous or out.flags.f_contiguous and flags.f_contiguous)
    if array.size == 0 or not isinstance(order, str):
        return False
    order = order.upper()
    if order == "A":
        order = "F" if flags.f_contiguous else "C"
    return not (order == "C" and flags.c_contiguous or order == "F" and flags.f_contiguous)


def _fixed(numpy, cupy):
    """The wrapper of ``ndarray.get``: the stream resolved first, and current where the release packs."""

    def wrapper(wrapped, instance, args, kwargs):
        try:
            stream, order, out, blocking = _GET.bind(*args, **kwargs)
        except TypeError:
            return wrapped(*args, **kwargs)
        if stream is None:
            stream = cupy.cuda.get_current_stream()
        if not _packs(numpy, instance, order, out):
            return wrapped(stream, order, out, blocking)
        with instance.device, stream:
            return wrapped(stream, order, out, blocking)

    return wrapper


@patch.applier
def _apply(cupy, journal):
    import numpy

    ndarray = expect(cupy, "ndarray", type)
    _GET.check(expect(ndarray, "get", callable), method=True)
    expect(cupy, "cuda.get_current_stream", callable)
    journal.wrap(ndarray, "get", _fixed(numpy, cupy))


def packed_while_busy(cupy, numpy):
    """``a[:, ::2].get(stream=s)`` of an 8 x 8 array, while the current stream spins and the block its packing gets
    on that stream holds -1: what it returns, and what it must."""
    array = cupy.arange(64.0).reshape(8, 8)
    expected = cupy.asnumpy(array)[:, ::2]
    busy, given = cupy.cuda.Stream(non_blocking=True), cupy.cuda.Stream(non_blocking=True)
    with busy:
        stale = cupy.full(32, -1.0)  # the packed array's size: the block busy's pool hands the packing next
        busy.synchronize()
        del stale
        keep_busy(cupy, numpy)
        copied = array[:, ::2].get(stream=given)
    busy.synchronize()
    return copied, expected


@patch.prober
def _probe():
    """``a[:, ::2].get(stream=s)`` while the current stream is busy: the copy must hold ``a``'s values."""
    import cupy
    import numpy

    from gpushim import device

    if not device.cuda_present():
        raise ProbeCannotRun("get asks the driver for the device before it packs")
    copied, expected = packed_while_busy(cupy, numpy)
    stale = int(numpy.count_nonzero(copied != expected))
    if stale:
        return f"a[:, ::2].get(stream=s) with the current stream busy returns {stale} of 32 elements unpacked yet"
    return None
