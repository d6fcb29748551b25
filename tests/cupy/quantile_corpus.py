"""``cupy.quantile`` and ``cupy.percentile`` over shapes, ``q``, axes, ``keepdims`` and methods.

The bug of cupy/cupy#8808 is raised by host code, before any device work,
so without a device each case runs up to the device: the arrays get memory
nobody touches (``fusion_tracing.fake_device_memory``) and the device work
that comes before ``_quantile_unchecked`` is stood in for (the check that
``q`` lies in [0, 1], and ``percentile``'s division of ``q`` by 100).  The
case then records the exception raised on the host (TypeError, the
unsupported methods' ValueError) or the first call to the driver.  With a
device each case runs to the end on ``arange`` data and records the
result's shape and values.
"""

from __future__ import annotations

import contextlib

import cupy
import numpy

from tests import gpu
from tests.cupy.fusion_tracing import fake_device_memory

FUNCTIONS = ("quantile", "percentile")
SHAPES = {"1-D": (5,), "2-D": (3, 4), "3-D": (2, 3, 4)}
QS = {"0-d q": (), "1-D q": (3,)}
AXES = {
    "none": None,
    "0": 0,
    "-1": -1,
    "(0,)": (0,),
    "(0, -1)": (0, -1),
    "5": 5,
    "True": True,
    "numpy.int64(0)": numpy.int64(0),
}
KEEPDIMS = (False, True)
METHODS = ("linear", "lower", "nearest")


def cases():
    """``{case id: (function, shape, q shape, axis, keepdims, method)}``."""
    return {
        f"{function} {shape} {q} axis={axis} keepdims={keepdims} {method}": (
            function,
            SHAPES[shape],
            QS[q],
            AXES[axis],
            keepdims,
            method,
        )
        for function in FUNCTIONS
        for shape in SHAPES
        for q in QS
        for axis in AXES
        for keepdims in KEEPDIMS
        for method in METHODS
    }


@contextlib.contextmanager
def host_checks():
    """Without a device, the device work before ``_quantile_unchecked`` stood in for; with one, nothing."""
    if gpu.PRESENT:
        yield
        return
    from cupy._statistics import order

    valid, divide = order._quantile_is_valid, cupy.true_divide
    order._quantile_is_valid = lambda q: True
    cupy.true_divide = lambda q, divisor: q
    try:
        with fake_device_memory():
            yield
    finally:
        order._quantile_is_valid, cupy.true_divide = valid, divide


def run(selected=None):
    """``{case id: outcome}`` for the corpus, or the cases named in ``selected``."""
    every = cases()
    outcomes = {}
    with host_checks():
        for case in every if selected is None else selected:
            function, shape, q_shape, axis, keepdims, method = every[case]
            a, q = _array(shape), _q(q_shape, function)
            try:
                result = getattr(cupy, function)(a, q, axis=axis, keepdims=keepdims, method=method)
            except Exception as error:
                outcomes[case] = f"{type(error).__name__}: {error}"
            else:
                outcomes[case] = {"shape": list(result.shape), "value": result.get().tolist()}
    return outcomes


def _array(shape):
    a = cupy.empty(shape)
    if gpu.PRESENT:
        a.set(numpy.arange(a.size, dtype=float).reshape(shape))
    return a


def _q(shape, function):
    q = cupy.empty(shape)
    if gpu.PRESENT:
        values = numpy.array([0.25, 0.5, 1.0])[: q.size] if shape else numpy.array(0.5)
        q.set(values * (100 if function == "percentile" else 1))
    return q
