"""Warp before 1.2.2 cannot make an array from a list, or from data of another dtype, under NumPy 2.

What breaks.  Warp converts the data it is given with ``np.array(data,
copy=False, ndmin=1)`` in ``array._init_from_data`` (with ``dtype=`` when the
array's dtype is given), the value of ``wp.full`` with ``np.array(value,
copy=False)`` and an array it hands back with ``np.array(a, copy=False)`` in
``array.numpy``.  NumPy 1 read ``copy=False`` as "copy only if needed";
NumPy 2 reads it as "never copy" and raises where a copy is needed.  Warp pins
no NumPy, so an unpinned install brings NumPy 2, and then
``wp.array([1, 2, 3], dtype=wp.int32)``, float64 data into a ``float32`` or
``vec3`` array, ``wp.array(list)`` without a dtype and ``wp.full(n, (1.0,
2.0, 3.0))`` raise ``RuntimeError`` (``ValueError`` from ``wp.full``):
``Failed to convert input data to an array ...: Unable to avoid copy while
creating an array as requested``.  Every path that reaches these lines fails
the same way: ``array.assign`` of a list, ``wp.from_numpy`` of another dtype.
Tried on 1.0.0, 1.2.0 and 1.2.1 with NumPy 2.2.6; with NumPy 1.26.4 they work.

Fixed upstream.  NVIDIA/warp@3f74276e2 ("Support NumPy 2.0", in 1.2.2; on
main NVIDIA/warp@bca098742, in 1.3.0) calls ``np.asarray`` instead.  Every
release from 1.0.0 to 1.2.1 has the four calls.

How the fix works.  The patch makes each release behave under NumPy 2 as the
same release does under NumPy 1, the environment it was built for, rather
than as 1.2.2 (whose ``np.asarray(data)`` also drops ``ndmin=1``).  The calls
sit inside function bodies, where a wrapper of the function cannot reach
them, and they read NumPy through the global ``np`` of ``warp.types`` and
``warp.context``.  The patch binds that global in those two modules to a view
of NumPy: a module holding NumPy's names, whose ``array`` turns
``copy=False`` into ``copy=None``, NumPy 2's "copy only if needed", and hands
every call on to ``numpy.array``.  Nothing else changes: ``numpy`` itself,
and ``np`` in every other module, Warp's or the user's, stay as they are,
and the view reads names NumPy adds later through NumPy's own
``__getattr__``.  Acting before ``warp.types`` executes would not confine
it so: its ``import numpy as np`` binds what ``sys.modules`` holds, which
every module imported meanwhile would see too.  Before binding, the patch
checks that both modules hold NumPy as ``np`` and that the four functions
read ``np.array``; anything else is a TargetMismatch.  The patch applies only
with NumPy 2 (``only_with``).

Not backported.  1.2.2's own behaviour where it differs from NumPy 1's
(``ndmin=1`` dropped), and what NumPy 2 changed in NumPy itself (the
promotion rules of NEP 50, out-of-range Python integers): those are the same
with or without Warp.

The probe.  ``wp.array([1, 2, 3], dtype=wp.int32)`` and ``wp.full(2, (1.0,
2.0, 3.0))`` on the CPU, which must give their values.
"""

from __future__ import annotations

import types

from gpushim import Patch, expect, expect_reads, expect_same

patch = Patch(
    id="warp.numpy2_copy_false",
    affected="<1.2.2",
    fixed_in="1.2.2",
    issue="Warp 1.2.2 changelog: Support for NumPy >= 2.0",
    fix="NVIDIA/warp@3f74276e2",
    summary="Under NumPy 2, wp.array from a list or from data of another dtype raises 'Unable to avoid copy'.",
    only_with={"numpy": ">=2"},
)

# The functions that call np.array(..., copy=False), by the module whose global np they read.
_CALLERS = {"types": ("array._init_from_data", "array.numpy"), "context": ("full",)}


class _NumPyForWarp(types.ModuleType):
    """NumPy as ``warp.types`` and ``warp.context`` read it while patched: ``array`` copies where it must."""

    def __repr__(self) -> str:
        return f"<NumPy as gpushim's {patch.id} shows it to Warp: {self.__wrapped__!r}>"


def _numpy_for_warp(numpy: types.ModuleType) -> _NumPyForWarp:
    released = numpy.array

    def array(*args, **kwargs):
        if kwargs.get("copy", True) is False:
            kwargs["copy"] = None
        return released(*args, **kwargs)

    array.__name__ = array.__qualname__ = "array"
    array.__doc__ = "numpy.array, with copy=False read as NumPy 1 read it: copy only if needed."
    array.__wrapped__ = released
    view = _NumPyForWarp(numpy.__name__)
    vars(view).update(vars(numpy))
    view.array = array
    view.__wrapped__ = numpy
    return view


@patch.applier
def _apply(warp, journal):
    import numpy

    modules = []
    for name, callers in _CALLERS.items():
        module = expect(warp, name, types.ModuleType)
        expect_same(getattr(module, "np", None), numpy, f"warp.{name}.np", "the numpy module")
        for path in callers:
            expect_reads(expect(module, path, callable), "np", "array")
        modules.append(module)
    journal.replace(modules, "np", _numpy_for_warp(numpy))


@patch.prober
def _probe():
    """``wp.array([1, 2, 3], dtype=wp.int32)`` and ``wp.full(2, (1.0, 2.0, 3.0))`` give their values."""
    import warp

    warp.config.quiet = True
    warp.init()
    calls = {
        "wp.array([1, 2, 3], dtype=wp.int32)": (
            lambda: warp.array([1, 2, 3], dtype=warp.int32, device="cpu"),
            [1, 2, 3],
        ),
        "wp.full(2, (1.0, 2.0, 3.0))": (lambda: warp.full(2, (1.0, 2.0, 3.0), device="cpu"), [[1.0, 2.0, 3.0]] * 2),
    }
    for call, (make, expected) in calls.items():
        try:
            result = make().numpy().tolist()
        except Exception as error:
            return f"{call} raises {type(error).__name__}: {error}"
        if result != expected:
            return f"{call} gives {result}, not {expected}"
    return None
