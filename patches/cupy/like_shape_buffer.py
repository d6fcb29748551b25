"""``cupy.empty_like(a, shape=...)`` and its siblings lay the new shape out over a buffer of ``a.size`` elements.

What breaks.  ``cupy._creation.basic._new_like_order_and_strides`` decides
the layout of ``empty_like``, ``zeros_like``, ``ones_like`` and ``full_like``.
With the default ``order='K'`` and a prototype that is neither C- nor
F-contiguous (a stepped slice, a transposed 3-D view, a channels-last view
from torch) and a ``shape`` of as many dimensions, it computes strides for
the new shape but allocates ``a.size`` elements.  A larger shape then spans
memory past the end of its buffer: ``zeros_like``, ``ones_like`` and
``full_like`` write there at once, ``empty_like``'s result as soon as it is
filled, and the memory pool has put other live arrays there, which are
overwritten without any error.  ``empty_like(cupy.empty((4, 6))[:, ::2],
shape=(5, 7))`` gets 96 bytes for 280.  The allocation has been ``a.size``
since ``shape`` was given to ``*_like`` (c9ae48c56, in v7.0.0b3), so CuPy
12.x and 13.x before 13.4.0 do this, with every NumPy.

Fixed upstream.  cupy/cupy#8525 (merged as ab052c1da, first in v14.0.0),
backported as #8605, released in 13.4.0: ``git tag --contains d3cd67a13``
(the merge of #8605) starts at v13.4.0.  The declared range starts where gpushim's CuPy range
does, at 12.0.0; CuPy 12.x cannot import without a CUDA driver, so the bug's
presence there is read from git: the function is the same in v12.0.0 and
v13.3.0.

How the fix works.  13.4.0 allocates ``math.prod(shape)`` elements where a
``shape`` is given.  The patch wraps ``_new_like_order_and_strides``, which
the four functions look up in their module at each call: the wrapper calls
the release's function with ``get_memptr=False``, so that it decides order
and strides as released and allocates nothing, and where it chose strides
(the only place it allocates) allocates the buffer itself, of the
function's ``dtype``.  The buffer holds the shape the callers give their
result, ``shape if shape else a.shape``: 13.4.0 sizes it by ``shape`` alone,
so for ``shape=0`` (a scalar the callers read as no shape at all) and a
one-dimensional prototype it allocates nothing under an array of ``a.size``
elements (14.2.0 too), where 13.3.0's ``a.size`` was right; the patch keeps
``a.size`` there rather than add that bug.  A call that does not bind, or that asks ``get_memptr=False``, gets
the release's answer: ``cupyx.empty_like_pinned`` asks so, since it
allocates pinned host memory by the shape itself, through a name of its own
for the function (in ``cupyx._pinned_array``, which ``import cupy`` loads),
wrapped too so that no name keeps the release's function.  Before wrapping,
the patch checks the function's parameters, ``get_memptr`` keyword-only
included.

Not backported.  13.4.0's new tests.

The probe.  ``cupy.empty_like(cupy.empty((4, 6))[:, ::2], shape=(5, 7))``
must ask the allocator for 280 bytes.  Without a device the arrays get memory
nobody touches; with one, CuPy's own allocator.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, TargetMismatch, expect
from gpushim.patches.cupy._memory import untouched_memory

patch = Patch(
    id="cupy.like_shape_buffer",
    affected=">=12.0.0,<13.4.0",
    fixed_in="13.4.0",
    issue="cupy/cupy#8525",
    fix="cupy/cupy@ab052c1da (backport #8605)",
    summary="cupy.*_like(a, shape=...) of a non-contiguous a allocates a.size elements for the new shape's strides.",
)

# The positional-or-keyword parameters; get_memptr=True follows, keyword-only.
_NEW_LIKE = Parameters("a", "dtype", "order", shape=None)


def _elements(a, shape):
    """The elements of the callers' result: ``shape if shape else a.shape``, where a scalar is one dimension."""
    import math

    import numpy

    shape = shape if shape else a.shape
    return math.prod((shape,) if numpy.isscalar(shape) else shape)


def _fixed(cupy):
    """The wrapper of ``_new_like_order_and_strides``: a buffer that holds the result's shape."""

    def wrapper(wrapped, instance, args, kwargs):
        if not kwargs.get("get_memptr", True):
            return wrapped(*args, **kwargs)
        rest = {name: value for name, value in kwargs.items() if name != "get_memptr"}
        try:
            a, dtype, _, shape = _NEW_LIKE.bind(*args, **rest)
        except TypeError:
            return wrapped(*args, **kwargs)
        order, strides, _ = wrapped(*args, get_memptr=False, **rest)
        if strides is None:
            return order, strides, None
        return order, strides, cupy.empty(_elements(a, shape), dtype=dtype).data

    return wrapper


def _check_get_memptr(function):
    import inspect

    parameter = inspect.signature(function).parameters.get("get_memptr")
    if parameter is None or parameter.kind is not parameter.KEYWORD_ONLY or parameter.default is not True:
        raise TargetMismatch("cupy._creation.basic._new_like_order_and_strides takes no get_memptr=True keyword")


@patch.applier
def _apply(cupy, journal):
    import sys

    basic = expect(cupy, "_creation.basic")
    new_like = expect(basic, "_new_like_order_and_strides", callable)
    _NEW_LIKE.check(new_like, leading=True)
    _check_get_memptr(new_like)
    owners = [basic]
    pinned = sys.modules.get("cupyx._pinned_array")
    if getattr(pinned, "_new_like_order_and_strides", None) is new_like:
        owners.append(pinned)
    journal.wrap(tuple(owners), "_new_like_order_and_strides", _fixed(cupy))


@patch.prober
def _probe():
    """``cupy.empty_like(a, shape=(5, 7))`` of ``a = cupy.empty((4, 6))[:, ::2]`` allocates 280 bytes, not 96."""
    import cupy

    from gpushim import device

    previous, sizes = cupy.cuda.get_allocator(), []
    allocate = previous if device.cuda_present() else untouched_memory(cupy)
    cupy.cuda.set_allocator(allocate)
    try:
        prototype = cupy.empty((4, 6))[:, ::2]
        cupy.cuda.set_allocator(lambda size: sizes.append(size) or allocate(size))
        cupy.empty_like(prototype, shape=(5, 7))
    finally:
        cupy.cuda.set_allocator(previous)
    if sizes != [280]:
        return f"cupy.empty_like(cupy.empty((4, 6))[:, ::2], shape=(5, 7)) allocates {sizes} bytes, not [280]"
    return None
