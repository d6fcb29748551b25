"""Fused functions that meet both bugs of cupy.fuse on CuPy 13.2-13.4.0 (cupy/cupy#8536, #9005).

Each case is a function as a user would decorate it with ``cupy.fuse`` and
the arguments it is called with.  Arrays are described by :class:`Array`
(shape, dtype) and made by :mod:`tests.cupy.fusion_tracing` without touching
a GPU; Python and NumPy scalars are passed as they are.  Constants written in
the function body are what both bugs are about: a Python scalar constant
meets NumPy 2's ``can_cast`` in the first code generator, an inf or nan
constant is written as bare ``inf``/``nan`` by the second.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import cupy
import numpy


class Array(NamedTuple):
    shape: tuple
    dtype: str


class Case(NamedTuple):
    id: str
    func: Callable
    args: tuple


def _one(dtype, shape=(4, 3)):
    return (Array(shape, dtype),)


# The seed of cupy/cupy#8536 (cuCIM's chan_vese): a Python int against 0-d
# and 2-d float32 arrays.
def seed_python_scalar(dt, mu, delta_phi):
    return 1 + mu * dt * delta_phi


# The seed of cupy/cupy#9005: the first code generator cannot index with
# newaxis, so this always reaches the second one, which wrote ``= inf;``.
def seed_where_inf(mask, points):
    return cupy.where(mask[:, cupy.newaxis], cupy.inf, points)


CASES = (
    Case(
        "seed_python_scalar",
        seed_python_scalar,
        (Array((), "float32"), Array((), "float32"), Array((10, 10), "float32")),
    ),
    Case("seed_where_inf", seed_where_inf, (Array((8,), "bool"), Array((8, 3), "float64"))),
    # Python int, float, complex and bool constants against every array kind.
    Case("int_plus_int8", lambda x: x + 1, _one("int8")),
    Case("int_times_uint8", lambda x: x * 3, _one("uint8")),
    Case("int_minus_int16", lambda x: 5 - x, _one("int16")),
    Case("int_floordiv_int32", lambda x: x // 2, _one("int32")),
    Case("int_plus_uint64", lambda x: x + 1, _one("uint64")),
    Case("int_times_int64", lambda x: x * 2, _one("int64")),
    Case("negative_int_plus_uint16", lambda x: x + (-1), _one("uint16")),
    Case("int_too_big_for_int8", lambda x: x + 300, _one("int8")),
    Case("float_times_float16", lambda x: x * 0.5, _one("float16")),
    Case("float_plus_float32", lambda x: x + 1.5, _one("float32")),
    Case("float_times_float64", lambda x: 2.0 * x, _one("float64")),
    Case("float_times_int32", lambda x: x * 0.5, _one("int32")),
    Case("complex_plus_float32", lambda x: x + 1j, _one("float32")),
    Case("complex_times_complex64", lambda x: x * (1 + 2j), _one("complex64")),
    Case("complex_minus_complex128", lambda x: x - 1j, _one("complex128")),
    Case("int_times_complex64", lambda x: 2 * x, _one("complex64")),
    Case("bool_and_bool", lambda x: x & True, _one("bool")),
    Case("bool_plus_int8", lambda x: x + True, _one("int8")),
    # inf, -inf and nan constants in every float width and in complex.
    Case("inf_plus_float16", lambda x: x + cupy.inf, _one("float16")),
    Case("minimum_inf_float32", lambda x: cupy.minimum(x, cupy.inf), _one("float32")),
    Case("maximum_minus_inf_float64", lambda x: cupy.maximum(x, -cupy.inf), _one("float64")),
    Case("where_nan_float32", lambda x: cupy.where(x > 0, x, cupy.nan), _one("float32")),
    Case("nan_times_float64", lambda x: x * cupy.nan, _one("float64")),
    Case("maximum_nan_float16", lambda x: cupy.maximum(x, cupy.nan), _one("float16")),
    Case("inf_plus_complex128", lambda x: x + cupy.inf, _one("complex128")),
    Case("complex_inf_times_complex64", lambda x: x * complex(cupy.inf, 1.0), _one("complex64")),
    Case("complex_nan_plus_complex128", lambda x: x + complex(0.0, cupy.nan), _one("complex128")),
    Case("numpy_float32_inf", lambda x: x + numpy.float32(numpy.inf), _one("float32")),
    Case("numpy_float16_nan", lambda x: x * numpy.float16(numpy.nan), _one("float16")),
    # where, clip, maximum and comparisons mixing arrays and constants.
    Case("where_zero_int8", lambda x: cupy.where(x > 0, x, 0), _one("int8")),
    Case("clip_float32", lambda x: cupy.clip(x, 0.0, 1.0), _one("float32")),
    Case("clip_int16", lambda x: cupy.clip(x, -3, 3), _one("int16")),
    Case("greater_float32", lambda x: x > 0.5, _one("float32")),
    Case("equal_int16", lambda x: x == 1, _one("int16")),
    Case("less_inf_float64", lambda x: x < cupy.inf, _one("float64")),
    Case("not_equal_nan_float32", lambda x: x != cupy.nan, _one("float32")),
    # Scalars passed as arguments (not constants), which never met either bug.
    Case("python_float_argument", lambda x, s: x * s, (Array((4, 3), "float32"), 2.5)),
    Case("numpy_float64_argument", lambda x, s: x + s, (Array((4, 3), "float32"), numpy.float64(0.5))),
    Case("int_argument_with_inf", lambda x, s: cupy.minimum(x * s, cupy.inf), (Array((4, 3), "float64"), 3)),
    # Reductions inside fuse.
    Case("sum_of_scaled_float32", lambda x: cupy.sum(x * 2.0, axis=0), _one("float32")),
    Case("sum_plus_int_float64", lambda x: cupy.sum(x + 1), _one("float64")),
    Case("max_with_minus_inf", lambda x: cupy.max(cupy.maximum(x, -cupy.inf), axis=1), _one("float32")),
    Case("sum_int8_times_int", lambda x: cupy.sum(x * 2), _one("int8")),
)
