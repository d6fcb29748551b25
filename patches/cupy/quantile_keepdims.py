"""``cupy.quantile`` and ``cupy.percentile`` with an integer ``axis`` and ``keepdims=True`` raise TypeError.

What breaks.  ``cupy._statistics.order._quantile_unchecked``, which both
functions call once they have checked ``q``, computes the shape
``keepdims=True`` gives the result by iterating over ``axis``, and turns an
integer ``axis`` into a tuple only a few lines later.  So
``cupy.quantile(a, 0.5, axis=0, keepdims=True)`` raises ``TypeError: 'int'
object is not iterable`` before anything is computed, where NumPy returns
the quantiles with the axis kept; a tuple ``axis=(0,)`` works.  The code is as
old as ``percentile`` (5dd6a55b0, in v4.0.0), so CuPy 12.x and 13.x before
13.4.0 do this, with every NumPy.

Fixed upstream.  cupy/cupy#8808 (merged as 95be4da2a, first in v14.0.0),
backported as #8811, released in 13.4.0: ``git tag --contains 157aac663``
(the merge of #8811) starts at v13.4.0.  The declared range starts where
gpushim's CuPy range does, at 12.0.0; CuPy 12.x cannot import without a CUDA
driver, so the bug's presence there is read from git: ``order.py`` is the
same in v12.0.0 and v13.3.0, and 13.4.0 changed nothing else in it.

How the fix works.  13.4.0 turns an integer ``axis`` into a tuple before
the ``keepdims`` shape is computed; the release's later conversion then has
nothing left to do.  The patch wraps ``_quantile_unchecked``, which
``quantile`` and ``percentile`` look up in their module at each call: the
wrapper binds the call as the function binds it and hands an ``int`` axis
(``bool`` included, as ``isinstance`` counts it in 13.4.0) on as a
one-element tuple; everything else goes to the release as given, and a call
that does not bind is the release's to refuse.  Before wrapping, the patch
checks the function's parameters.

Not backported.  13.4.0's new tests.

The probe.  ``cupy.quantile(a, q, axis=0, keepdims=True)`` of a 3 by 4 array
and a 0-d ``q``.  With a device it runs and must give NumPy's quantiles, of
shape (1, 4).  Without one the arrays get memory nobody touches and the
check of ``q`` (two reductions on the device) is stood in for: the TypeError
comes before any device work, and the fixed call stops at its first call to
the driver.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, expect
from gpushim.patches.cupy._memory import untouched_memory

patch = Patch(
    id="cupy.quantile_keepdims",
    affected=">=12.0.0,<13.4.0",
    fixed_in="13.4.0",
    issue="cupy/cupy#8808",
    fix="cupy/cupy@95be4da2a (backport #8811)",
    summary="cupy.quantile/percentile(a, q, axis=<int>, keepdims=True) raise TypeError: 'int' object is not iterable.",
)

_QUANTILE = Parameters("a", "q", axis=None, out=None, overwrite_input=False, method="linear", keepdims=False)


def _axis_as_tuple(wrapped, instance, args, kwargs):
    try:
        a, q, axis, out, overwrite_input, method, keepdims = _QUANTILE.bind(*args, **kwargs)
    except TypeError:
        return wrapped(*args, **kwargs)
    if isinstance(axis, int):
        axis = (axis,)
    return wrapped(a, q, axis, out, overwrite_input, method, keepdims)


@patch.applier
def _apply(cupy, journal):
    order = expect(cupy, "_statistics.order")
    _QUANTILE.check(expect(order, "_quantile_unchecked", callable))
    journal.wrap(order, "_quantile_unchecked", _axis_as_tuple)


@patch.prober
def _probe():
    """``cupy.quantile(a, q, axis=0, keepdims=True)``: no TypeError, and on a device NumPy's quantiles."""
    import cupy
    import numpy

    from gpushim import device

    if device.cuda_present():
        host = numpy.arange(12.0).reshape(3, 4)
        try:
            result = cupy.quantile(cupy.asarray(host), 0.5, axis=0, keepdims=True).get()
        except TypeError as error:
            return f"cupy.quantile(a, 0.5, axis=0, keepdims=True) raises TypeError: {error}"
        if result.shape != (1, 4) or not numpy.allclose(result, [[4.0, 5.0, 6.0, 7.0]]):
            return f"cupy.quantile(arange(12).reshape(3, 4), 0.5, axis=0, keepdims=True) gives {result.tolist()}"
        return None
    from cupy._statistics import order

    allocator, valid = cupy.cuda.get_allocator(), order._quantile_is_valid
    cupy.cuda.set_allocator(untouched_memory(cupy))
    order._quantile_is_valid = lambda q: True
    try:
        cupy.quantile(cupy.empty((3, 4)), cupy.empty(()), axis=0, keepdims=True)
    except TypeError as error:
        return f"cupy.quantile(a, q, axis=0, keepdims=True) raises TypeError: {error}"
    except cupy.cuda.runtime.CUDARuntimeError:
        pass  # the first call to the driver, past the keepdims shape
    finally:
        order._quantile_is_valid = valid
        cupy.cuda.set_allocator(allocator)
    return None
