"""``cupy.cov`` and ``cupy.corrcoef`` over shapes, ``rowvar``, ``y``, ``ddof``, ``bias`` and weights.

The bug of cupy/cupy#8839 is in ``cov``'s Python code, so each case runs
that code on NumPy arrays, its module reading ``cupy`` as NumPy
(``gpushim.patches.cupy._on_numpy``), and NumPy's ``concatenate`` standing in
for CuPy's: no device is needed.  A case records its result's shape, its
values to 12 significant digits, ``cov``'s own warning, or the exception;
not its dtype.  14.0.0 divides by the degrees of freedom where 13.x
multiplies by their inverse, a ``numpy.float64``, which on NumPy 2's arrays
widens a float32 result: a change of its own, which the patch leaves out.
With a device, ``test_gpu_cov_rowvar_single_row`` runs the same cases on
CuPy arrays.
"""

from __future__ import annotations

import types
import warnings

import numpy

A = {
    "(1, 3)": [[1.0, 2.0, 4.0]],
    "(1, 1)": [[3.0]],
    "(3,)": [1.0, 2.0, 4.0],
    "(2, 3)": [[1.0, 2.0, 4.0], [0.5, -1.0, 3.0]],
    "(3, 2)": [[1.0, 2.0], [4.0, 0.5], [-1.0, 3.0]],
    "0-d": 2.0,
}
# name: (function, keyword arguments)
CALLS = {
    "cov": ("cov", {}),
    "cov rowvar=False": ("cov", {"rowvar": False}),
    "cov rowvar=False ddof=0": ("cov", {"rowvar": False, "ddof": 0}),
    "cov rowvar=False bias": ("cov", {"rowvar": False, "bias": True}),
    "cov rowvar=False dtype=float32": ("cov", {"rowvar": False, "dtype": "float32"}),
    "cov rowvar=False y=(3,)": ("cov", {"rowvar": False, "y": [0.0, 1.0, 5.0]}),
    "cov rowvar=False y=(1, 3)": ("cov", {"rowvar": False, "y": [[0.0, 1.0, 5.0]]}),
    "cov rowvar=False y=(3, 1)": ("cov", {"rowvar": False, "y": [[0.0], [1.0], [5.0]]}),
    "cov rowvar=False y=(1, 1)": ("cov", {"rowvar": False, "y": [[7.0]]}),
    "cov rowvar=False fweights": ("cov", {"rowvar": False, "fweights": "ones"}),
    "cov rowvar=False aweights": ("cov", {"rowvar": False, "aweights": "ones"}),
    "corrcoef rowvar=False": ("corrcoef", {"rowvar": False}),
}


def cases():
    return {f"{call} a={shape}": (call, shape) for call in CALLS for shape in A}


def arguments(call, shape, xp):
    """``(function name, a, keyword arguments)`` of a case, its arrays made by ``xp`` (NumPy or CuPy)."""
    function, given = CALLS[call]
    kwargs = dict(given)
    if "y" in kwargs:
        kwargs["y"] = xp.asarray(numpy.array(kwargs["y"]))
    for weights in ("fweights", "aweights"):
        if weights in kwargs:
            kwargs[weights] = xp.ones(max(numpy.shape(A[shape])[-1:] or [1]), int if weights == "fweights" else float)
    return function, xp.asarray(numpy.array(A[shape])), kwargs


def outcome(function, *args, **kwargs):
    """What ``function(*args, **kwargs)`` gives: shape, rounded values and ``cov``'s own warning, or the exception."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = numpy.asarray(function(*args, **kwargs))
        except Exception as error:
            return f"{type(error).__name__}: {error}"
    own = sorted({str(w.message) for w in caught if str(w.message).startswith("Degrees of freedom")})
    values = [f"{value:.12g}" for value in result.ravel().tolist()]
    return {"shape": list(result.shape), "values": values, "warnings": own}


def run():
    """``{case: outcome}``, each case run through ``cupy``'s bindings on NumPy arrays."""
    import cupy
    from cupy._statistics import correlation

    from gpushim.patches.cupy._on_numpy import numpy_for_cupy

    host_core = types.SimpleNamespace(concatenate_method=numpy.concatenate)
    outcomes = {}
    with numpy_for_cupy(correlation, _core=host_core):
        for case, (call, shape) in cases().items():
            function, a, kwargs = arguments(call, shape, numpy)
            outcomes[case] = outcome(getattr(cupy, function), a, **kwargs)
    return outcomes
