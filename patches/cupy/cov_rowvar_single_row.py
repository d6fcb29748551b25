"""``cupy.cov(a, rowvar=False)`` of a ``(1, n)`` array returns a scalar where NumPy returns an ``n`` by ``n`` matrix.

What breaks.  With ``rowvar=False`` each column of ``a`` is a variable and
each row an observation, so a ``(1, n)`` array holds one observation of ``n``
variables and its covariance is ``n`` by ``n`` (all NaN, with NumPy's "Degrees
of freedom <= 0" warning, unless ``ddof=0``).  The released ``cov`` decides
whether to transpose from the shape of ``a`` made two-dimensional, not from
``a`` itself: ``(1, n)`` is taken for a 1-D ``a`` and left as one variable of
``n`` observations, and ``cov`` returns that variable's variance, a 0-d array.
Nothing raises.  ``cupy.corrcoef``, which calls ``cov``, does the same.  Every
CuPy 12.x and 13.x release does this, 13.6.0 included, with every NumPy.

Fixed upstream.  cupy/cupy#8839 (merged as d67a40822), released in 14.0.0 and
not backported: ``git tag --contains d67a40822`` gives v14.0.0a1 onwards and
no 13.x.  The condition is the same in v12.0.0 and v13.6.0 (since b552b5a0e);
13.0.0 (by hand) and the cells from 13.1.0 to 13.6.0 run the patch's proofs,
and 14.0.0, the first 14.x release on PyPI, records the reference.

How the fix works.  14.0.0 transposes whenever ``a`` is not 1-D.  The patch
wraps ``cupy.cov`` (and its home, ``cupy._statistics.correlation``, whose
``corrcoef`` looks ``cov`` up there at each call): a call with
``rowvar=False`` whose ``a`` is a ``(1, n)`` array goes to the release's
``cov`` with ``a.T`` and ``rowvar=True``, which reads ``a.T`` exactly as
14.0.0 reads ``a``; a ``y`` given too is handed on as the release reads it
with ``rowvar=False`` (transposed unless it is one row).  Every other call,
and one that does not bind, is the release's own.

Not backported.  14.0.0's ``cov`` also divides by ``fact`` where 13.x
multiplies by its inverse, and passes ``copy=None`` for NumPy 2: changes of
their own, left out.  The corpus therefore compares the shapes of the results
exactly and their values to 12 significant digits, and not their dtypes.

The probe.  The release's ``cov``, called as ``cupy.cov`` on a NumPy ``(1, 3)``
array with ``rowvar=False`` while its module reads ``cupy`` as NumPy
(``_on_numpy``): the result must be 3 by 3.  No device is needed.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, expect

patch = Patch(
    id="cupy.cov_rowvar_single_row",
    affected=">=12.0.0,<14.0.0",
    fixed_in="14.0.0",
    issue="cupy/cupy#8839",
    fix="cupy/cupy#8839 (d67a40822)",
    summary="cupy.cov(a, rowvar=False) of a (1, n) array returns one variance where NumPy returns an n by n matrix.",
)

# cov(a, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None)
_COV = Parameters("a", y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None)


def _one_row(array):
    return getattr(array, "ndim", None) == 2 and array.shape[0] == 1


def _cov(wrapped, instance, args, kwargs):
    keywords = dict(kwargs)
    dtype = keywords.pop("dtype", None)
    try:
        a, y, rowvar, bias, ddof, fweights, aweights = _COV.bind(*args, **keywords)
    except TypeError:
        return wrapped(*args, **kwargs)  # a call CuPy itself rejects, with its own message
    if rowvar or not _one_row(a):
        return wrapped(*args, **kwargs)
    if getattr(y, "ndim", 0) >= 2 and y.shape[0] != 1:
        y = y.T
    return wrapped(a.T, y, True, bias, ddof, fweights, aweights, dtype=dtype)


@patch.applier
def _apply(cupy, journal):
    correlation = expect(cupy, "_statistics.correlation")
    _COV.check(expect(correlation, "cov", callable), leading=True)
    journal.wrap((cupy, correlation), "cov", _cov)


@patch.prober
def _probe():
    """``cupy.cov`` of a ``(1, 3)`` array with ``rowvar=False``, run on NumPy: 3 by 3."""
    import cupy
    import numpy
    from cupy._statistics import correlation

    from gpushim.patches.cupy._on_numpy import numpy_for_cupy

    with numpy_for_cupy(correlation):
        shape = cupy.cov(numpy.array([[1.0, 2.0, 4.0]]), rowvar=False, ddof=0).shape
    return None if shape == (3, 3) else f"cupy.cov(a, rowvar=False) of a (1, 3) array has shape {shape}, not (3, 3)"
