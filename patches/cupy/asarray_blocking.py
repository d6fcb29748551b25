"""``cupy.asarray(x, blocking=True)`` and ``cupy.array`` raise ``UnboundLocalError`` for host data.

What breaks.  13.5.0 gave ``cupy._core.core._array_default``, where host data
(NumPy arrays, scalars, lists of numbers) is copied to the device, a fast path
that skips the copy where the device can read host memory; the path is
skipped when ``blocking`` is true, but the test of its result is not, so
``cupy.array(x, blocking=True)``, ``cupy.asarray(x, blocking=True)`` and
``cupy.asanyarray(x, blocking=True)`` raise ``UnboundLocalError: local
variable 'a' referenced before assignment`` for every such ``x``, before
anything is copied.  CuPy 13.5.0 and 13.5.1 do this, with every NumPy (a
regression of 13.5.0).

Fixed upstream.  cupy/cupy#9271, fixed by cupy/cupy#9280 (backported as
#9282) in 13.6.0.  ``_try_skip_h2d_copy`` first appears in v13.5.0 (not in
v13.4.1); ``git tag --contains 43ca142db`` (the merge of #9282) starts at
v13.6.0, and 13.5.1 changed nothing there.

How the fix works.  13.6.0 tests the fast path's result only where it took
the path: with ``blocking=True`` host data always goes through the copy,
which the current stream finishes before the call returns.
``_array_default`` is a ``cdef`` function; the patch wraps its Python entry
point ``cupy._core.array`` (also ``cupy._core.core.array``), which
``cupy.array``, ``asarray`` and ``asanyarray`` look up at each call.  The
wrapper calls the release as is; only when the call raises
``UnboundLocalError`` from ``_array_default`` itself (the innermost frame of
its traceback) does it take the call again with ``copy=True`` and
``blocking=False``: the release's fast path returns at once when a copy is
asked for, which is the path 13.6.0 takes, and ``copy`` matters nowhere else
in ``_array_default``.  So ``array``'s own look at the input before
``_array_default`` (``hasattr`` of ``__cuda_array_interface__`` and
``__cupy_get_ndarray__``, the test for a sequence of arrays) runs twice for
such a call; nothing is copied or allocated in the first.  The wrapper then
synchronizes the current stream where 13.6.0 does, after a copy: not for a
0-d result (filled by a kernel, returned before the synchronization) and not
for host memory handed to the device under ``CUPY_ENABLE_UMP=1``
(``SystemMemory``, also returned before it).  The call is never routed to
``blocking=False`` with the caller's ``copy=False``, which may alias the
caller's host memory.

Not backported.  13.6.0's spelling fixes in comments and its new tests.

The probe.  ``cupy.asarray(numpy.arange(3.0), blocking=True)``; without a
device it gives the array memory nobody touches, so the copy stops at its
first CUDA call, after the device array was allocated.  ``blocking`` came in
13.0.0: a release without it (12.x raises ``TypeError`` for the keyword) has
no such bug.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, expect
from gpushim.patches.cupy._memory import untouched_memory

patch = Patch(
    id="cupy.asarray_blocking",
    affected=">=13.5.0,<13.6.0",
    fixed_in="13.6.0",
    issue="cupy/cupy#9271",
    fix="cupy/cupy#9280 (backport #9282)",
    summary="cupy.array/asarray/asanyarray(host data, blocking=True) raise UnboundLocalError.",
)

_ARRAY = Parameters("obj", dtype=None, copy=True, order="K", subok=False, ndmin=0, blocking=False)


def _raised_by_array_default(error):
    frame = error.__traceback__
    while frame.tb_next is not None:
        frame = frame.tb_next
    return frame.tb_frame.f_code.co_name.endswith("._array_default")


def _fixed(cupy):
    """The wrapper of ``cupy._core.array``: a call the release cannot finish is taken again as 13.6.0 takes it."""

    def wrapper(wrapped, instance, args, kwargs):
        try:
            return wrapped(*args, **kwargs)
        except UnboundLocalError as error:
            if not _raised_by_array_default(error):
                raise
        obj, dtype, copy, order, subok, ndmin, blocking = _ARRAY.bind(*args, **kwargs)
        copied = wrapped(obj, dtype, True, order, subok, ndmin, False)
        if copied.ndim and not isinstance(copied.data.mem, cupy.cuda.memory.SystemMemory):
            cupy.cuda.get_current_stream().synchronize()
        return copied

    return wrapper


@patch.applier
def _apply(cupy, journal):
    core = expect(cupy, "_core")
    _ARRAY.check(expect(core, "array", callable))
    expect(cupy, "cuda.memory.SystemMemory", type)
    journal.wrap((core, core.core), "array", _fixed(cupy))


@patch.prober
def _probe():
    """``cupy.asarray(numpy.arange(3.0), blocking=True)``: a device array of 24 bytes, and no UnboundLocalError."""
    import inspect

    import cupy
    import numpy

    from gpushim import device

    if "blocking" not in inspect.signature(cupy.asarray).parameters:
        return None
    host = numpy.arange(3.0)
    if device.cuda_present():
        try:
            copied = cupy.asarray(host, blocking=True)
        except UnboundLocalError as error:
            return f"cupy.asarray(numpy.arange(3.0), blocking=True) raises UnboundLocalError: {error}"
        if copied.get().tolist() != [0.0, 1.0, 2.0]:
            return f"cupy.asarray(numpy.arange(3.0), blocking=True) gives {copied.get().tolist()}"
        return None
    allocator, sizes = cupy.cuda.get_allocator(), []
    untouched = untouched_memory(cupy)
    cupy.cuda.set_allocator(lambda size: sizes.append(size) or untouched(size))
    try:
        cupy.asarray(host, blocking=True)
    except UnboundLocalError as error:
        return f"cupy.asarray(numpy.arange(3.0), blocking=True) raises UnboundLocalError: {error}"
    except cupy.cuda.runtime.CUDARuntimeError:
        pass  # the copy's first call to the driver, after the device array was allocated
    finally:
        cupy.cuda.set_allocator(allocator)
    if sizes != [24]:
        return f"cupy.asarray(numpy.arange(3.0), blocking=True) allocates {sizes} bytes on the device, not [24]"
    return None
