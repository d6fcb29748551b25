"""``cupy.intersect1d`` and the kernels it calls, with empty and non-empty arrays.

Two parts, each without a device.  ``bodies``: each of the two kernels'
own bodies, as ``cupy._sorting.search`` holds them, compiled and run on the
host (``gpushim.patches.cupy._host_kernel``) for each element ``x`` against
no bins and against sorted bins: its outputs and every bin it reads.
``intersect1d``: the release's Python code on NumPy arrays, its module
reading ``cupy`` as NumPy, with NumPy's ``isin`` and ``searchsorted``
standing in for what the kernels compute (``bodies`` shows what they
compute): the result's values and dtype, and the indices.
"""

from __future__ import annotations

import math
import types

import numpy

XS = (1.0, 3.0, 8.0, -2.0, math.nan)
BINS = {"no bins": [], "[3]": [3.0], "[1, 3, 5, 7]": [1.0, 3.0, 5.0, 7.0]}
KERNELS = ("_exists_kernel", "_exists_and_searchsorted_kernel")
ARRAYS = {"empty": [], "[1, 2]": [1, 2], "[2, 5, 2]": [2, 5, 2]}
DTYPES = ("int32", "float64")


def body_calls():
    return {
        f"x={x} {bins} invert={invert}": {"x": x, "bins": BINS[bins], "n_bins": len(BINS[bins]), "invert": invert}
        for x in XS
        for bins in BINS
        for invert in (False, True)
    }


def intersect_cases():
    return {
        f"{a} {dtype_a} & {b} {dtype_b} assume_unique={unique} return_indices={indices}": (
            a,
            dtype_a,
            b,
            dtype_b,
            unique,
            indices,
        )
        for a in ARRAYS
        for dtype_a in DTYPES
        for b in ARRAYS
        for dtype_b in DTYPES
        for unique in (False, True)
        for indices in (False, True)
    }


def bodies():
    from cupy._sorting import search

    from gpushim.patches.cupy._host_kernel import run_body

    calls = body_calls()
    outcomes = {}
    for name in KERNELS:
        found = run_body(getattr(search, name), {"S": "double", "T": "double"}, list(calls.values()))
        outcomes[name] = dict(zip(calls, found))
    return outcomes


def _kernels_on_numpy():
    def exists(x, bins, n_bins, invert):
        return numpy.isin(x, bins) ^ invert

    def exists_and_searchsorted(x, bins, n_bins, invert):
        return exists(x, bins, n_bins, invert), numpy.searchsorted(bins, x)

    return types.SimpleNamespace(_exists_kernel=exists, _exists_and_searchsorted_kernel=exists_and_searchsorted)


def _described(result):
    if isinstance(result, tuple):
        return [_described(part) for part in result]
    return {"values": result.tolist(), "dtype": str(result.dtype)}


def intersect1d():
    import cupy
    from cupy._logic import truth

    from gpushim.patches.cupy._on_numpy import numpy_for_cupy

    outcomes = {}
    with numpy_for_cupy(truth, _search=_kernels_on_numpy()):
        for case, (a, dtype_a, b, dtype_b, unique, indices) in intersect_cases().items():
            arr1, arr2 = numpy.array(ARRAYS[a], dtype_a), numpy.array(ARRAYS[b], dtype_b)
            try:
                outcomes[case] = _described(cupy.intersect1d(arr1, arr2, unique, indices))
            except Exception as error:
                outcomes[case] = f"{type(error).__name__}: {error}"
    return outcomes


def run():
    return {"bodies": bodies(), "intersect1d": intersect1d()}
