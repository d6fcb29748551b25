"""A reduction of complex values to a real dtype raises AttributeError under NumPy 2 (``numpy.ComplexWarning``).

What breaks.  CuPy's reductions (``sum``, ``prod``, ``mean``... through
``cupy._core._reduction._SimpleReductionKernel``) warn that the imaginary
part is discarded where the routine they pick for the dtype asked for takes
real values and the input is complex: ``cupy.arange(3j, dtype=complex).sum(
dtype=numpy.float64)``.  They name the warning ``numpy.ComplexWarning``,
which NumPy 2 moved to ``numpy.exceptions``: the call raises
``AttributeError: module 'numpy' has no attribute 'ComplexWarning'`` instead
of warning and reducing the real parts.  CuPy 13.0.0 to 13.3.0 do this under
NumPy 2 (13.0 and 13.1 import under it with ``cupy.numpy2_removed_names``,
which leaves this module alone).

Fixed upstream.  cupy/cupy#8676, backported as #8678, released in 13.4.0,
which names ``cupy.exceptions.ComplexWarning`` (NumPy 2's
``numpy.exceptions.ComplexWarning``): ``git tag --contains 6e8f6b507`` (the
merge of #8678) starts at v13.4.0.  The warning has read ``numpy.ComplexWarning``
since 12.x; NumPy 2 came with CuPy 13.

How the fix works.  ``_reduction`` reads ``ComplexWarning`` on its global
``numpy`` when it warns; the patch binds that global to a view of NumPy
that holds NumPy 2's ``ComplexWarning`` and forwards every other attribute
to NumPy (``gpushim.patches.cupy._numpy_view``), so the warning is the one
13.4.0 gives.  The patch checks that the module's ``numpy`` is NumPy first.

Not backported.  13.4.0's change to a test.  What 13.4.0 left reading
``numpy.ComplexWarning`` stays as it is: a complex to real ``astype`` in
``cupy._core.core`` and ``_dtype`` (still there in 13.6.0).

The probe.  ``cupy.arange(3, dtype=complex).sum(dtype=numpy.float64)`` on a
device: it must warn ``ComplexWarning`` and give 3.0.  Without a device the
reduction stops at its first question to the driver, before it warns, and
the probe cannot run.
"""

from __future__ import annotations

from gpushim import Patch, ProbeCannotRun
from gpushim.patches.cupy._numpy_view import give_view, numpy_view

patch = Patch(
    id="cupy.reduction_complex_warning",
    affected=">=13.0.0,<13.4.0",
    fixed_in="13.4.0",
    issue="cupy/cupy#8676",
    fix="cupy/cupy#8676 (backport #8678)",
    summary="Reducing complex values to a real dtype raises AttributeError for numpy.ComplexWarning under NumPy 2.",
    only_with={"numpy": ">=2"},
)


@patch.applier
def _apply(cupy, journal):
    import importlib

    import numpy
    import numpy.exceptions

    reduction = importlib.import_module("cupy._core._reduction")
    view = numpy_view(numpy, {"ComplexWarning": numpy.exceptions.ComplexWarning})
    give_view(journal, [reduction], "numpy", numpy, view)


@patch.prober
def _probe():
    """``cupy.arange(3, dtype=complex).sum(dtype=numpy.float64)`` warns ComplexWarning and gives 3.0."""
    import warnings

    import cupy
    import numpy

    from gpushim import device

    if not device.cuda_present():
        raise ProbeCannotRun("a reduction asks the device which it is before it warns")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            total = float(cupy.arange(3, dtype=complex).sum(dtype=numpy.float64))
        except AttributeError as error:
            return f"a sum of complex values to float64 raises AttributeError: {error}"
    categories = [warning.category.__name__ for warning in caught]
    if total != 3.0 or categories != ["ComplexWarning"]:
        return f"a sum of complex values to float64 gives {total} and warns {categories}"
    return None
