"""``arr == None`` and ``arr != None`` raise TypeError on Python 3.12 and later.

What breaks.  ``cupy.ndarray.__eq__`` and ``__ne__`` answer a comparison
with an object that cannot equal any element (``None``, ``Ellipsis``, any
object with ``object``'s own ``__eq__``) with an array of False (or True),
as NumPy does; they recognise such an object by ``type(other).__eq__ is
object.__eq__``.  Python 3.12 gave ``None`` an ``__eq__`` of its own, so
``None`` fails that test and goes on to ``numpy.equal(arr, None)``, which CuPy's
``__array_ufunc__`` declines: ``arr == None`` raises NumPy's ``TypeError:
operand type(s) all returned NotImplemented from __array_ufunc__(<ufunc
'equal'>, ...)`` where NumPy, and CuPy on Python 3.11, give
``zeros(arr.shape, bool)`` (without a driver, the message's ``repr`` of the
array fails first, with CUDARuntimeError).  So does ``arr != None``, and anything that
compares a CuPy array with ``None`` (``x in [None, arr]``, ``arr == None``
inside a library that accepts either).  CuPy 13.0.0 to 13.3.0 do this on
Python 3.12 and 3.13, with every NumPy; ``Ellipsis`` and other objects still
pass.  12.x has the same test (read from git; it cannot import without a
driver).

Fixed upstream.  cupy/cupy#8493 ("support Python 3.12 micro changes"),
backported as #8635, released in 13.4.0, which adds ``or other is None`` to
both tests: ``git tag --contains eefbf6906`` (the merge of #8635) starts at
v13.4.0.

How the fix works.  ``__eq__`` and ``__ne__`` belong to a compiled class;
what they call for ``None`` is ``numpy.equal`` and ``numpy.not_equal``, read
on the global ``numpy`` of ``cupy._core.core`` at each call, and nothing else
in that module reads those two.  The patch binds that global to a view of
NumPy (``gpushim.patches.cupy._numpy_view``) whose ``equal`` and
``not_equal`` answer a CuPy array and ``None`` as 13.4.0 does,
``cupy.zeros(shape, dtype=cupy.bool_)`` and ``cupy.ones(...)`` with the
shape as a list, and hand every other call to NumPy's.  The view holds NumPy's attributes
otherwise, so reading them costs what it did.  The patch checks that the
module's ``numpy`` is NumPy first.

Not backported.  13.4.0's other changes for Python 3.12 are to its CI and
tests.

The probe.  ``cupy.empty(3) == None`` and ``!= None`` must give an array of
three False and three True.  Without a device the arrays get memory nobody
touches and ``cupy.zeros``/``cupy.ones`` are replaced by recorders for the
call: the answer is the call they get, and without gpushim CuPy's ufunc
fails first, asking the driver for the device.
"""

from __future__ import annotations

from gpushim import Patch
from gpushim.patches.cupy._memory import untouched_memory
from gpushim.patches.cupy._numpy_view import give_view, numpy_view

patch = Patch(
    id="cupy.none_comparison",
    affected=">=12.0.0,<13.4.0",
    fixed_in="13.4.0",
    issue="cupy/cupy#8493",
    fix="cupy/cupy#8493 (backport #8635)",
    summary="cupy.ndarray == None and != None raise TypeError on Python 3.12 and later.",
    python=">=3.12",
)


def _comparisons(numpy, cupy):
    """``equal`` and ``not_equal`` as ``ndarray.__eq__`` and ``__ne__`` call them: 13.4.0's answer for ``None``."""

    def equal(x1, x2, *args, **kwargs):
        if x2 is None and not args and not kwargs and isinstance(x1, cupy.ndarray):
            return cupy.zeros(list(x1.shape), dtype=cupy.bool_)
        return numpy.equal(x1, x2, *args, **kwargs)

    def not_equal(x1, x2, *args, **kwargs):
        if x2 is None and not args and not kwargs and isinstance(x1, cupy.ndarray):
            return cupy.ones(list(x1.shape), dtype=cupy.bool_)
        return numpy.not_equal(x1, x2, *args, **kwargs)

    return {"equal": equal, "not_equal": not_equal}


@patch.applier
def _apply(cupy, journal):
    import numpy

    core = cupy._core.core
    give_view(journal, [core], "numpy", numpy, numpy_view(numpy, _comparisons(numpy, cupy)))


@patch.prober
def _probe():
    """``cupy.empty(3) == None`` and ``!= None``: three False and three True."""
    from unittest import mock

    import cupy

    from gpushim import device

    if device.cuda_present():
        array = cupy.empty(3)
        try:
            answers = [(array == None).tolist(), (array != None).tolist()]  # noqa: E711
        except TypeError as error:
            return f"cupy.empty(3) == None raises TypeError: {error}"
        if answers != [[False] * 3, [True] * 3]:
            return f"cupy.empty(3) == None and != None give {answers}"
        return None
    allocator, made = cupy.cuda.get_allocator(), []
    cupy.cuda.set_allocator(untouched_memory(cupy))
    try:
        array = cupy.empty(3)
        with mock.patch.object(cupy, "zeros", lambda *a, **k: made.append(("zeros", a, k))), mock.patch.object(
            cupy, "ones", lambda *a, **k: made.append(("ones", a, k))
        ):
            array == None  # noqa: E711, B015
            array != None  # noqa: E711, B015
    except Exception as error:  # CuPy's ufunc asks the driver for the device before it refuses None
        return f"cupy.empty(3) == None goes to cupy.equal, which raises {type(error).__name__}: {error}"
    finally:
        cupy.cuda.set_allocator(allocator)
    bool_ = {"dtype": cupy.bool_}
    if made != [("zeros", ([3],), bool_), ("ones", ([3],), bool_)]:
        return f"cupy.empty(3) == None and != None make {made}"
    return None
