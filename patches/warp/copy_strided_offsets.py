"""``wp.copy`` ignores ``dest_offset``, ``src_offset`` and ``count`` for non-contiguous arrays (Warp before 1.15.0).

What breaks.  ``wp.copy`` applies the offsets and the count by pointer
arithmetic on its contiguous path only.  When the source or the destination
is non-contiguous (a strided slice such as ``a[::2]``, an indexed array), it
hands the native copy descriptors of the whole arrays, which copies every
element from index 0: ``wp.copy(dst, a[::2], dest_offset=1, src_offset=2,
count=2)`` with ``a = arange(10)`` leaves ``dst = [0, 2, 4, 6, 8]`` instead of
``[0, 4, 6, 0, 0]``, writing outside the range asked for, and nothing
raises.  A shorter 1-d strided source raises "Incompatible array shapes"
instead of filling the head of the destination.  The branch is unchanged
since 1.0.0 (run: 1.0.0, 1.5.1, 1.14.0 copy the whole array).

Fixed upstream.  NVIDIA/warp GH-1533, fixed by NVIDIA/warp@05b9d2a42 (``git
tag --contains``: v1.15.0 first), which, on the non-contiguous path and when
the copy does not span both arrays whole, slices both arrays into views of
the range before the native copy, for 1-d ``wp.array`` operands only: other
non-contiguous operands (multi-dimensional, indexed, Fabric) raise a
``RuntimeError`` where they copied everything, and so do ranges past either
end.  The commit changes ``warp/_src/context.py`` only; the native copy is
as it was.  1.15.0 also checks every call's offsets and count up front
(NVIDIA/warp@36a68fad0, GH-1584), so a negative offset raises "Source offset
must be non-negative" before the range checks.

How the fix works.  ``copy`` is wrapped where Warp defines it and where the
``warp`` package binds it, so that Warp's own calls (its gradient recursion,
``array.assign``) go through the wrapper too.  Calls that reach the
contiguous path, after Warp's staging of arrays on different devices, and
copies spanning both arrays whole are handed to the release untouched.  For
the others the wrapper raises 1.15.0's errors, with its types and messages
(a negative offset's included), or copies the range by handing the
release's own ``copy`` views of it, stripped of their gradients; it then
copies the gradients over the same range and records the copy on the tape
as 1.15.0 does, the adjoint's offsets swapped, so that gradients through
these copies are right whether or not ``warp.copy_adjoint_offsets`` is
applied.  Nothing here is compiled into kernels; Warp's module hashes and
kernel cache are unaffected.

Not backported.  1.15.0's tests and docstring, and the rest of GH-1584,
which 1.15.0 calls breaking: negative offsets between contiguous arrays,
negative counts (which copy everything before 1.15.0), non-integer arguments
and contiguous copies between element types of different sizes go as the
release takes them.  Before 1.2.0 Warp copies gradients without the offsets
(NVIDIA/warp@42cdb3500); the copies the patch takes over follow 1.15.0 there
too.

The probe.  ``wp.copy(dst, a[::2], dest_offset=1, src_offset=2, count=2)``
on the CPU with ``a = arange(10)``, which must give ``[0, 4, 6, 0, 0]``.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, expect

patch = Patch(
    id="warp.copy_strided_offsets",
    affected="<1.15.0",
    fixed_in="1.15.0",
    issue="NVIDIA/warp GH-1533",
    fix="NVIDIA/warp@05b9d2a42",
    summary="wp.copy ignores dest_offset, src_offset and count when either array is non-contiguous.",
)

_COPY = Parameters("dest", "src", dest_offset=0, src_offset=0, count=0, stream=None)


def _unchanged(dest, src, dest_offset, src_offset, count):
    """Whether the release's ``copy`` does what 1.15.0 does: its contiguous path, or a copy of both arrays whole."""
    staged = src.device != dest.device  # Warp copies a non-contiguous source to a contiguous one first
    if (staged or src.is_contiguous) and dest.is_contiguous:
        return True
    return dest_offset == 0 and src_offset == 0 and count == src.size == dest.size


def _check_range(dest, src, dest_offset, src_offset, count, array):
    """Raise as 1.15.0 does for a range it cannot copy between non-contiguous arrays."""
    if src_offset < 0:
        raise RuntimeError(f"Source offset must be non-negative, got {src_offset}")
    if dest_offset < 0:
        raise RuntimeError(f"Destination offset must be non-negative, got {dest_offset}")
    staged = src.device != dest.device
    if not (staged or isinstance(src, array)) or not isinstance(dest, array):
        raise RuntimeError(
            "dest_offset, src_offset, and count are not supported when copying to/from "
            "non-contiguous indexed or Fabric arrays"
        )
    if src.ndim != 1 or dest.ndim != 1:
        raise RuntimeError("dest_offset, src_offset, and count are only supported for 1-D non-contiguous arrays")
    if src_offset + count > src.size:
        raise RuntimeError(
            f"Trying to copy a range of {count} element(s) from source offset ({src_offset}) "
            f"exceeds the source size ({src.size})"
        )
    if dest_offset + count > dest.size:
        raise RuntimeError(
            f"Trying to copy a range of {count} element(s) to destination offset ({dest_offset}) "
            f"exceeds the destination size ({dest.size})"
        )


def _range(values, offset, count, array):
    """A view of ``count`` elements of ``values`` from ``offset``, without a gradient."""
    if not isinstance(values, array):
        values = values.contiguous()  # an indexed source on another device, which Warp stages whole
    view = values[offset : offset + count]
    view.grad = None
    return view


def _make_copy(context, warp, array, is_array):
    def copy(wrapped, instance, args, kwargs):
        try:
            dest, src, dest_offset, src_offset, count, stream = _COPY.bind(*args, **kwargs)
        except TypeError:
            return wrapped(*args, **kwargs)  # a call Warp itself rejects, with its own message
        if not is_array(src) or not is_array(dest):
            return wrapped(*args, **kwargs)
        if count <= 0:
            count = src.size
        if count == 0 or _unchanged(dest, src, dest_offset, src_offset, count):
            return wrapped(*args, **kwargs)
        _check_range(dest, src, dest_offset, src_offset, count, array)
        result = wrapped(_range(dest, dest_offset, count, array), _range(src, src_offset, count, array), stream=stream)
        if getattr(src, "grad", None) is None or getattr(dest, "grad", None) is None:
            return result
        context.copy(dest.grad, src.grad, dest_offset=dest_offset, src_offset=src_offset, count=count, stream=stream)
        tape = getattr(context.runtime, "tape", None)
        if tape:
            tape.record_func(
                backward=lambda: context.copy(
                    src.grad, dest.grad, dest_offset=src_offset, src_offset=dest_offset, count=count, stream=stream
                ),
                arrays=[dest, src],
            )
            if getattr(warp.config, "verify_autograd_array_access", False):
                dest.mark_write()
                src.mark_read()
        return result

    return copy


@patch.applier
def _apply(warp, journal):
    import sys
    import types

    function = expect(warp, "copy", types.FunctionType)
    _COPY.check(function)
    context = sys.modules.get(function.__module__)
    expect(context, "runtime")
    array = expect(warp, "array", type)
    is_array = expect(sys.modules.get(array.__module__), "is_array", callable)
    expect(array, "__getitem__", callable)
    owners = [warp] if context is None or context is warp else [context, warp]
    journal.wrap(owners, "copy", _make_copy(context, warp, array, is_array))


@patch.prober
def _probe():
    """Two elements of a strided source copied into the middle of a contiguous destination."""
    import numpy as np
    import warp

    warp.config.quiet = True
    warp.init()
    src = warp.array(np.arange(10, dtype=np.float32), device="cpu")[::2]
    dst = warp.zeros(5, dtype=warp.float32, device="cpu")
    warp.copy(dst, src, dest_offset=1, src_offset=2, count=2)
    result = dst.numpy().tolist()
    if result != [0.0, 4.0, 6.0, 0.0, 0.0]:
        return (
            "wp.copy(dst, arange(10)[::2], dest_offset=1, src_offset=2, count=2) into zeros(5) "
            f"gives {result}, not [0.0, 4.0, 6.0, 0.0, 0.0]"
        )
    return None
