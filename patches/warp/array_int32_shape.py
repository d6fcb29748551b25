"""A Warp array shaped by NumPy int32 values computes its size in int32 and wraps (Warp 1.x up to 1.3.1).

What breaks.  ``warp.array.__init__`` turns any shape that is not an ``int``
into ``tuple(shape)`` and keeps its elements as they come.  Given NumPy int32
values (``np.array([65536, 65537], np.int32)``, or the ``.shape`` of anything
sized in int32), the size and strides are then multiplied out in int32: the
size of a 65536 x 65537 uint8 array reads 65,536 instead of 4,295,032,832,
and on 1.3.1 (under NumPy 1.26 and 2.2 alike) so does the capacity that
``wp.empty`` allocates, so the array claims 4 GiB over a 64 KiB buffer and
writes run past it.  Nothing raises (NumPy may warn about the overflow).
Every 1.x release up to 1.3.1 keeps the elements.

Fixed upstream.  NVIDIA/warp@61c767525 (1.3.2, whose changelog names the
32-bit overflow; 58bb5de43 on main, in 1.4.0) makes the shape
``tuple(int(x) for x in shape)``.

How the fix works.  The backport wraps ``array.__init__`` and hands Warp's
own constructor the shape 1.3.2 would build: the same conversion, at the
same point (a shape that is neither None nor an ``int``), raising what 1.3.2
raises for elements that ``int()`` refuses.  Everything after that is Warp's
code, so sizes, strides, capacities, errors and their messages are 1.3.2's,
on every construction path (new allocations, ``data=`` and ``ptr=``).  Arrays
are made everywhere, views and kernel arguments included, so the common path
costs one lookup of the shape and a check that it is None, an ``int``, or a
tuple of exact ``int``s, which is what Warp itself passes; only other shapes
are converted.  The patch checks that ``__init__`` takes ``data``, ``dtype``
and ``shape`` first, where the wrapper finds the shape.

Not backported.  Strides given as NumPy integers are kept as they are, in
1.3.2 as before.

The probe.  A 65536 x 65537 uint8 array shaped by int32 values over a one
byte NumPy buffer on the CPU, which allocates and touches nothing; its size
must be 4,295,032,832.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, expect

patch = Patch(
    id="warp.array_int32_shape",
    affected="<1.3.2",
    fixed_in="1.3.2",
    issue="NVIDIA/warp 1.3.2 changelog: 32-bit overflow when array shape is specified using np.int32",
    fix="NVIDIA/warp@61c767525 (58bb5de43 on main)",
    summary="wp.array/wp.empty with a shape of NumPy int32 values computes the size and capacity in int32 and wraps.",
)

_SHAPE = 2  # the shape's position among the arguments after self


def _init(wrapped, instance, args, kwargs):
    positional = len(args) > _SHAPE
    shape = args[_SHAPE] if positional else kwargs.get("shape")
    if shape is None or isinstance(shape, int):
        return wrapped(*args, **kwargs)
    if type(shape) is tuple:
        for size in shape:
            if type(size) is not int:
                break
        else:
            return wrapped(*args, **kwargs)
    shape = tuple(int(size) for size in shape)
    if positional:
        return wrapped(*args[:_SHAPE], shape, *args[_SHAPE + 1 :], **kwargs)
    return wrapped(*args, **{**kwargs, "shape": shape})


@patch.applier
def _apply(warp, journal):
    array = expect(warp, "types.array", type)
    # The wrapper finds the shape by position or keyword, so array.__init__ must take it third after self.
    leading = Parameters(data=None, dtype=expect(warp, "types.Any"), shape=None)
    leading.check(expect(array, "__init__", callable, own=True), method=True, leading=True)
    journal.wrap(array, "__init__", _init)


@patch.prober
def _probe():
    """A 65536 x 65537 uint8 array shaped by int32 values must have 4,295,032,832 elements."""
    import numpy as np
    import warp

    warp.config.quiet = True
    warp.init()
    buffer = np.zeros(1, dtype=np.uint8)
    with np.errstate(over="ignore"):
        array = warp.array(
            ptr=buffer.ctypes.data, shape=np.array([65536, 65537], np.int32), dtype=warp.uint8, device="cpu"
        )
    if array.size != 65536 * 65537:
        return f"an array of shape 65536 x 65537 given as int32 values has size {array.size}, not {65536 * 65537}"
    return None
