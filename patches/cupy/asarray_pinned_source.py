"""``cupy.asarray`` of a NumPy array in pinned memory lets the array go before its copy has run.

What breaks.  ``cupy._core.core._array_default``, where ``cupy.array``,
``asarray`` and ``asanyarray`` copy host data to the device, copies a NumPy
array that lives in pinned memory (``cupyx.empty_pinned``, or any array over
a ``PinnedMemoryPointer``) straight from that memory with a copy queued on
the current stream, and returns.  Nothing holds the array until the copy has
run: once the caller drops it, its block goes back to CuPy's pinned memory
pool, which hands it to the next request of its size, so the copy reads
whatever is written there meanwhile.  ``a = cupy.asarray(src); del src;
other = cupyx.empty_pinned(src_shape); other[:] = 2`` may give ``a`` the
2s, silently.  Host data in pageable memory is copied through a staging
buffer that CuPy holds until the copy's event; only the pinned path lacked
it.  CuPy 13.0.0 to 13.3.0 do this, with every NumPy; ``blocking=True``
(which waits for the copy) is safe.

Fixed upstream.  cupy/cupy#8789, fixed by cupy/cupy#8845 (backported as
#8852), released in 13.4.0: ``git tag --contains 3e3247082`` (the merge of
#8852) starts at v13.4.0.  The direct copy from pinned memory came with
d7c062461 ("relax constructor for async + add blocking argument"), first in
v13.0.0.

How the fix works.  13.4.0 hands the array it copied from to the watch list
of ``cupy.cuda.pinned_memory`` with an event recorded on the stream right
after the copy, as it does for its staging buffers: the list holds it until
the event has passed.  ``_array_default`` is a ``cdef`` function; the patch
wraps its Python entry point ``cupy._core.array`` (also
``cupy._core.core.array``), which ``cupy.array``, ``asarray`` and
``asanyarray`` look up at each call.  The wrapper calls the release, and
where it was given a NumPy array and returned an array of one dimension or
more without waiting (``blocking=False``) from a NumPy array whose memory
is pinned (``pinned_memory.is_memory_pinned``, the release's own test), it
finds the array the release copied from: the input as NumPy reads it with
the dtype and order asked for, in little-endian byte order, which is the
input itself or a view of it where no conversion was needed, and otherwise a
converted copy in pageable memory, as in the release.  Where that array is
pinned, the wrapper records an event on the current stream, on which the
release queued the copy last, and hands both to
``pinned_memory._add_to_watch_list``.  Other inputs cost one ``isinstance``,
or for a NumPy array in pageable memory one pointer query.  The patch checks
``array``'s parameters and the two functions of ``pinned_memory`` first.

Not backported.  What the release copies from without the wrapper seeing it:
CuPy's compiled code calls ``array`` directly, not through the Python name,
where it converts a host value itself (``a[i] = pinned`` and ``put``,
``place``, ``take`` with host indices), and an object other than a NumPy
array over pinned memory (a ``memoryview``) is not looked for.  A pinned
input that needs converting is converted a second time, to find that the
release copied from a pageable copy (nothing is held).  13.4.0 also lets
``PinnedMemoryPool.free_all_blocks`` release what the watch list holds once
its event has passed; the pool is a compiled class the patch cannot change,
so what is held is released at the next pinned allocation or copy, as the
staging buffers' are.

The probe.  On a device: a NumPy array in pinned memory copied with
``cupy.asarray`` on a stream busy with a kernel that spins for a while, then
dropped; it must still be alive while the copy waits.  Without a device the
copy cannot be queued and the probe cannot run.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, ProbeCannotRun, expect
from gpushim.patches.cupy._memory import keep_busy

patch = Patch(
    id="cupy.asarray_pinned_source",
    affected=">=13.0.0,<13.4.0",
    fixed_in="13.4.0",
    issue="cupy/cupy#8789",
    fix="cupy/cupy#8845 (backport #8852)",
    summary="cupy.asarray of a NumPy array in pinned memory does not hold it until the copy has run.",
)

_ARRAY = Parameters("obj", dtype=None, copy=True, order="K", subok=False, ndmin=0, blocking=False)


def _copied_from(numpy, obj, dtype, order):
    """The array ``_array_default`` copies ``obj`` from: ``obj`` as NumPy reads it, little-endian."""
    if order is None or order[:1] in ("K", "A", "k", "a"):
        order = "F" if obj.flags.fnc else "C"
    source = numpy.asarray(obj, dtype=dtype, order=order)
    return source.astype(source.dtype.newbyteorder("<"), copy=False)


def _fixed(numpy, cupy, pinned_memory):
    """The wrapper of ``cupy._core.array``: a copy from pinned memory holds its source until the copy's event."""

    def wrapper(wrapped, instance, args, kwargs):
        copied = wrapped(*args, **kwargs)
        try:
            obj, dtype, _, order, _, _, blocking = _ARRAY.bind(*args, **kwargs)
        except TypeError:
            return copied
        if blocking or not isinstance(obj, numpy.ndarray) or not copied.ndim:
            return copied
        if not pinned_memory.is_memory_pinned(obj.ctypes.data):
            return copied  # pageable memory: the release copied it through a staging buffer it holds
        source = _copied_from(numpy, obj, dtype, order)
        if pinned_memory.is_memory_pinned(source.ctypes.data):
            pinned_memory._add_to_watch_list(cupy.cuda.get_current_stream().record(), source)
        return copied

    return wrapper


@patch.applier
def _apply(cupy, journal):
    import numpy

    core = expect(cupy, "_core")
    _ARRAY.check(expect(core, "array", callable))
    pinned_memory = expect(cupy, "cuda.pinned_memory")
    expect(pinned_memory, "is_memory_pinned", callable)
    expect(pinned_memory, "_add_to_watch_list", callable)
    journal.wrap((core, core.core), "array", _fixed(numpy, cupy, pinned_memory))


def dropped_while_queued(cupy, cupyx, numpy, stream):
    """A pinned NumPy array of 1.0 copied with ``cupy.asarray`` behind a spinning kernel on ``stream``, then dropped,
    and a new pinned array of its size filled with 2.0 while the copy waits: whether the source died when dropped,
    the copy, and a weak reference to the source."""
    import weakref

    with stream:
        keep_busy(cupy, numpy)
        source = cupyx.empty_pinned(1 << 16, numpy.float64)
        source[:] = 1.0
        held = weakref.ref(source)
        copied = cupy.asarray(source)
        del source
        died = held() is None
        newcomer = cupyx.empty_pinned(1 << 16, numpy.float64)
        newcomer[:] = 2.0
        stream.synchronize()
    return died, copied, held


@patch.prober
def _probe():
    """A pinned array copied by ``cupy.asarray`` behind a spinning kernel, then dropped: it must live on."""
    import cupy
    import cupyx
    import numpy

    from gpushim import device

    if not device.cuda_present():
        raise ProbeCannotRun("the copy from pinned memory is queued on a device only")
    died, copied, _ = dropped_while_queued(cupy, cupyx, numpy, cupy.cuda.Stream(non_blocking=True))
    if died:
        twos = int(cupy.count_nonzero(copied == 2.0))
        return f"a pinned NumPy array copied by cupy.asarray dies before its copy has run ({twos} of 65536 read as 2.0)"
    return None
