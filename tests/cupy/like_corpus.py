"""``cupy.empty_like``, ``zeros_like``, ``ones_like`` and ``full_like`` over prototypes, shapes, orders and dtypes.

The bug of cupy/cupy#8525 is in the size of the buffer a new array is laid
out over, so each case records the sizes of the device allocations the call
makes (``host_copies.recorded_allocations``) and the result's layout: shape,
strides, dtype, contiguity and ``extent``, the bytes its strides span, which
must fit in its buffer.  Without a device the arrays get memory nobody
touches: ``empty_like`` returns its result, while ``zeros_like``,
``ones_like`` and ``full_like`` stop at their first call to the driver, after
the allocation.  The prototypes are float64 and cover each kind of layout:
contiguous either way (the layout is then C or F and the shape is laid out
plainly), and neither (where ``order='K'`` keeps the prototype's order).
"""

from __future__ import annotations

import cupy

from tests.cupy.host_copies import recorded_allocations

# name: the prototype, made from fresh float64 arrays
PROTOTYPES = {
    "C 3x4": lambda: cupy.empty((3, 4)),
    "F 3x4": lambda: cupy.empty((3, 4), order="F"),
    "stepped slice 4x6[:, ::2]": lambda: cupy.empty((4, 6))[:, ::2],
    "reversed rows 3x4[::-1]": lambda: cupy.empty((3, 4))[::-1],
    "transposed 3-D 2x3x4.transpose(1, 0, 2)": lambda: cupy.empty((2, 3, 4)).transpose(1, 0, 2),
    "channels last 2x4x4x3.transpose(0, 3, 1, 2)": lambda: cupy.empty((2, 4, 4, 3)).transpose(0, 3, 1, 2),
    "stepped 1-D 10[::2]": lambda: cupy.empty(10)[::2],
    "stepped slice of no rows 0x6[:, ::2]": lambda: cupy.empty((0, 6))[:, ::2],
}

# name: the shape given, from the prototype's shape
SHAPES = {
    "none": lambda shape: None,
    "the same": lambda shape: shape,
    "larger": lambda shape: tuple(n + 2 for n in shape),
    "smaller": lambda shape: tuple(max(n - 1, 1) for n in shape),
    "reversed": lambda shape: shape[::-1],
    "with no rows": lambda shape: (0, *shape[1:]),
    "one more dimension": lambda shape: (2, *shape),
    "larger, as a list": lambda shape: [n + 2 for n in shape],
    "a scalar": lambda shape: 9,
    "negative": lambda shape: (-1, *shape[1:]),
}

ORDERS = ("K", "C", "F", "A")
DTYPES = (None, "int8", "complex128")
FUNCTIONS = ("empty_like", "zeros_like", "ones_like", "full_like")


def cases():
    """``{case id: (function, prototype, shape, order, dtype)}``: every layout of ``empty_like``, defaults of the rest.

    ``zeros_like``, ``ones_like`` and ``full_like`` take their layout from the
    same function as ``empty_like``; their cases add the fill's size.
    """
    every = {}
    for prototype in PROTOTYPES:
        for shape in SHAPES:
            for order in ORDERS:
                for dtype in DTYPES:
                    case = f"empty_like {prototype} shape={shape} order={order} dtype={dtype}"
                    every[case] = ("empty_like", prototype, shape, order, dtype)
            for function in FUNCTIONS[1:]:
                every[f"{function} {prototype} shape={shape}"] = (function, prototype, shape, "K", None)
    return every


def run(selected=None):
    """``{case id: {"allocated": [sizes], "outcome": ...}}`` for the corpus, or the cases named in ``selected``."""
    every = cases()
    outcomes = {}
    with recorded_allocations() as sizes:
        for case in every if selected is None else selected:
            function, prototype, shape, order, dtype = every[case]
            a = PROTOTYPES[prototype]()
            arguments = {"dtype": dtype, "order": order, "shape": SHAPES[shape](a.shape)}
            fill = (7,) if function == "full_like" else ()
            sizes.clear()
            try:
                result = getattr(cupy, function)(a, *fill, **arguments)
            except Exception as error:
                outcome = f"{type(error).__name__}: {error}"
            else:
                outcome = layout(result)
            outcomes[case] = {"allocated": list(sizes), "outcome": outcome}
    return outcomes


def layout(array):
    """What an array's memory must hold: its shape, strides and dtype, and the bytes its strides span."""
    flags = array.flags
    return {
        "shape": list(array.shape),
        "strides": list(array.strides),
        "dtype": str(array.dtype),
        "contiguous": [bool(flags.c_contiguous), bool(flags.f_contiguous)],
        "extent": extent(array),
    }


def extent(array):
    """The bytes from the lowest to one past the highest element of ``array``; 0 for no elements."""
    if array.size == 0:
        return 0
    spans = [(n - 1) * stride for n, stride in zip(array.shape, array.strides)]
    return sum(span for span in spans if span > 0) - sum(span for span in spans if span < 0) + array.itemsize
