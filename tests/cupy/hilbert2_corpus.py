"""``cupyx.scipy.signal.hilbert2`` over shapes, dtypes and ``N``, run on NumPy arrays.

The bug of cupy/cupy#9396 is in ``hilbert2``'s Python code (a loop over the
two filters), so each case runs that code on NumPy arrays, its module
reading ``cupy`` as NumPy and ``sp_fft`` as ``scipy.fft``
(``gpushim.patches.cupy._on_numpy``): no device is needed.  A case records
the result's shape, dtype and every value to 17 significant digits, or the
exception.  ``test_gpu_hilbert2_second_axis`` runs the same cases on a
device, against SciPy.
"""

from __future__ import annotations

import numpy

X = {
    "(7, 9)": numpy.arange(63.0).reshape(7, 9) % 5 - 2,
    "(2, 2)": numpy.array([[1.0, 2.0], [3.0, 4.0]]),
    "(4, 5) float32": (numpy.arange(20.0).reshape(4, 5) ** 2).astype("float32"),
    "(1, 6)": numpy.array([[1.0, -2.0, 0.5, 3.0, 0.0, 1.0]]),
    "(6,)": numpy.array([1.0, -2.0, 0.5, 3.0, 0.0, 1.0]),
    "(2, 2, 2)": numpy.ones((2, 2, 2)),
    "complex": numpy.ones((2, 2), complex),
}
N = {"None": None, "5": 5, "(6, 3)": (6, 3), "0": 0, "(4,)": (4,), "(3, 0)": (3, 0)}


def cases():
    return {f"x={x} N={n}": (x, n) for x in X for n in N}


def outcome(function, *args):
    try:
        result = numpy.asarray(function(*args))
    except Exception as error:
        return f"{type(error).__name__}: {error}"
    values = [f"{value.real:.17g}{value.imag:+.17g}j" for value in result.ravel().tolist()]
    return {"shape": list(result.shape), "dtype": str(result.dtype), "values": values}


def run():
    """``{case: outcome}``, each case run through ``cupyx.scipy.signal.hilbert2`` on NumPy arrays."""
    import scipy.fft

    from gpushim.patches.cupy._on_numpy import import_signal, numpy_for_cupy

    signal = import_signal()
    outcomes = {}
    with numpy_for_cupy(signal._signaltools, sp_fft=scipy.fft):
        for case, (x, n) in cases().items():
            outcomes[case] = outcome(signal.hilbert2, X[x], N[n])
    return outcomes
