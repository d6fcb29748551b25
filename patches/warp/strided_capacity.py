"""``wp.empty``/``wp.zeros`` with strides whose largest is not the first allocate too little (Warp 1.x before 1.6.0).

What breaks.  ``array._init_new`` sizes a new array with explicit strides as
``shape[0] * strides[0]`` bytes.  That is the whole layout only when the first
stride is the largest; for a column-major ``(2, 3)`` float32 array with
strides ``(4, 8)`` it allocates 8 bytes where the layout spans 24, and every
kernel, ``fill_`` or ``numpy()`` that touches the last column reads or writes
past the allocation: a heap overflow, without an error.  The rule is in every
1.x release before 1.6.0.

Fixed upstream.  NVIDIA/warp GH-404, fixed by NVIDIA/warp@b8de812d6 (``git
tag --contains``: v1.6.0 first), which sizes the allocation by the dimension
with the largest stride, and gives an array whose strides are all zero one
element of storage.  Running 1.0.0 and 1.5.1 gives ``capacity == 8``, 1.6.0
gives 24.

How the fix works.  The wrapper lets ``_init_new`` run as released, then
computes the capacity the fixed rule asks for.  Where the two differ, which is
only where some later stride is larger than the first or all strides are
zero, it hands the released allocation back to the array's own deleter and
allocates the fixed capacity from the same allocator, so the array's pointer,
capacity and deleter agree as they do in 1.6.0.  Arrays without explicit
strides, and those whose first stride is the largest, keep the released
allocation untouched.  Nothing here is compiled into kernels; Warp's module
hashes and kernel cache are unaffected.

Not backported.  1.6.0's new tests.

The probe.  That column-major ``(2, 3)`` float32 array, which must have a
capacity of 24 bytes.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, expect

patch = Patch(
    id="warp.strided_capacity",
    affected="<1.6.0",
    fixed_in="1.6.0",
    issue="NVIDIA/warp GH-404",
    fix="NVIDIA/warp@b8de812d6",
    summary="wp.empty/wp.zeros with strides whose largest is not the first allocate shape[0] * strides[0] bytes.",
)

_INIT_NEW = Parameters("dtype", "shape", "strides", "device", "pinned")  # after self


def _fixed_capacity(shape, strides, dtype_size):
    """The bytes 1.6.0 allocates: the extent of the dimension with the largest stride, or one element."""
    largest = max(range(len(strides)), key=lambda dim: (strides[dim], -dim))
    if strides[largest] > 0:
        return shape[largest] * strides[largest]
    return dtype_size


def _init_new(wrapped, instance, args, kwargs):
    result = wrapped(*args, **kwargs)
    dtype, shape, strides, device, pinned = _INIT_NEW.bind(*args, **kwargs)
    if strides is None:
        return result
    from warp.types import type_size_in_bytes

    capacity = _fixed_capacity(instance.shape, instance.strides, type_size_in_bytes(instance.dtype))
    if capacity == instance.capacity:
        return result
    if instance.ptr is not None:
        with instance.device.context_guard:
            instance.deleter(instance.ptr, instance.capacity)
    instance.ptr = instance.device.get_allocator(pinned=pinned).alloc(capacity)
    instance.capacity = capacity
    return result


@patch.applier
def _apply(warp, journal):
    array = expect(warp, "types.array", type)
    _INIT_NEW.check(expect(array, "_init_new", callable, own=True), method=True)
    journal.wrap(array, "_init_new", _init_new)


@patch.prober
def _probe():
    """A (2, 3) float32 array with column-major strides (4, 8) spans 24 bytes and must allocate them."""
    import warp

    warp.config.quiet = True
    warp.init()
    array = warp.empty(shape=(2, 3), strides=(4, 8), dtype=warp.float32, device="cpu")
    if array.capacity != 24:
        return f"a (2, 3) float32 array with strides (4, 8) allocates {array.capacity} bytes, not the 24 it spans"
    return None
