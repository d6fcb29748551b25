"""``cupy.fft.fftshift``/``ifftshift`` with ``axes`` raise AttributeError under NumPy 2 (``np.compat``).

What breaks.  ``fftshift(x, axes)`` and ``ifftshift(x, axes)`` test whether
``axes`` is one integer with ``isinstance(axes, np.compat.integer_types)``;
NumPy 2 removed ``numpy.compat``, so any ``axes`` but ``None``
(``axes=0``, ``axes=(0, 1)``) raises ``AttributeError: `np.compat` was
removed in the NumPy 2.0 release``, as does ``cupyx.scipy.fft.fftshift``, the same
function.  CuPy 13.0.0 to 13.2.0 do this under NumPy 2 (13.0 and 13.1 import
under it with ``cupy.numpy2_removed_names``, which leaves ``cupy.fft`` alone).

Fixed upstream.  cupy/cupy#8393, fixed by cupy/cupy#8409 (backported as
#8413), released in 13.3.0, which tests ``isinstance(axes, int)``:
``git tag --contains f49e8e51c`` (the merge of #8413) starts at v13.3.0.
NumPy 2 came with CuPy 13.

How the fix works.  NumPy 1's ``numpy.compat.integer_types`` is ``(int,)``,
so the test is the one 13.3.0 makes.  ``cupy.fft._fft`` reads it on its
global ``np`` at each call; the patch binds that global to a view of NumPy
that holds a ``compat`` with ``integer_types = (int,)`` and forwards every
other attribute to NumPy (``gpushim.patches.cupy._numpy_view``).  The patch
checks that the module's ``np`` is NumPy first.

Not backported.  13.3.0's new tests.

The probe.  ``cupy.fft.fftshift(x, axes=0)`` of a 4-element array must
roll it by 2 along axis 0: ``cupy.asarray`` and ``cupy.roll`` are replaced
for the call (by the identity and a recorder), so no device is needed.
"""

from __future__ import annotations

from gpushim import Patch
from gpushim.patches.cupy._numpy_view import give_view, numpy_view

patch = Patch(
    id="cupy.fftshift_numpy_compat",
    affected=">=13.0.0,<13.3.0",
    fixed_in="13.3.0",
    issue="cupy/cupy#8393",
    fix="cupy/cupy#8409 (backport #8413)",
    summary="cupy.fft.fftshift/ifftshift(x, axes) raise AttributeError for numpy.compat under NumPy 2.",
    only_with={"numpy": ">=2"},
)


@patch.applier
def _apply(cupy, journal):
    import importlib
    import types

    import numpy

    fft = importlib.import_module("cupy.fft._fft")
    compat = types.SimpleNamespace(integer_types=(int,))  # NumPy 1's numpy.compat, as _fft reads it
    give_view(journal, [fft], "np", numpy, numpy_view(numpy, {"compat": compat}))


@patch.prober
def _probe():
    """``cupy.fft.fftshift(x, axes=0)`` of a 4-element array asks ``cupy.roll`` for a shift of 2 along axis 0."""
    import types
    from unittest import mock

    import cupy

    rolled = []
    x = types.SimpleNamespace(shape=(4,), ndim=1)  # what fftshift reads of its array
    with mock.patch.object(cupy, "asarray", lambda a: a), mock.patch.object(
        cupy, "roll", lambda *args: rolled.append(args[1:])
    ):
        try:
            cupy.fft.fftshift(x, axes=0)
        except AttributeError as error:
            return f"cupy.fft.fftshift(x, axes=0) raises AttributeError: {error}"
    if rolled != [([2], (0,))]:
        return f"cupy.fft.fftshift(x, axes=0) of 4 elements rolls {rolled}, not by [2] along (0,)"
    return None
