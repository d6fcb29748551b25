"""The CUDA source ``cupyx.jit`` writes for kernels with constants, transpiled on the CPU and never compiled.

``cupyx.jit.rawkernel`` transpiles a kernel at its first launch, for the
types of the arguments it is launched with; :func:`transpile` makes the same
call to ``cupyx.jit._compile.transpile`` with an array type built directly,
so no array, memory or device is needed.  Each case stores one constant
(bound in the kernel's closure, where ``cupyx.jit`` reads it as a constant)
into an array of one dtype, in one of the two typing modes; the upstream test
of cupy/cupy#8707 (``cupy.dtype(t).type(cupy.inf)``, spelt in the kernel) and
the attributes ``cupy.inf``/``cupy.nan`` are cases too.
"""

from __future__ import annotations

import cmath
import math

import cupy
import numpy
from cupyx import jit
from cupyx.jit import _compile, _cuda_types

INF, NAN = math.inf, math.nan

CONSTANTS = {
    "inf": INF,
    "-inf": -INF,
    "nan": NAN,
    "-nan": -NAN,
    "float16 inf": numpy.float16(INF),
    "float16 nan": numpy.float16(NAN),
    "float32 inf": numpy.float32(INF),
    "float32 -inf": numpy.float32(-INF),
    "float32 nan": numpy.float32(NAN),
    "float64 inf": numpy.float64(INF),
    "float64 -inf": numpy.float64(-INF),
    "float64 nan": numpy.float64(NAN),
    "complex inf": complex(INF, 0),
    "complex nan imaginary": complex(0, NAN),
    "complex64 inf nan": numpy.complex64(complex(INF, NAN)),
    "complex128 -inf": numpy.complex128(complex(-INF, 1)),
    "1.5": 1.5,
    "0.1": 0.1,
    "1e300": 1e300,
    "5e-324": 5e-324,
    "float16 0.5": numpy.float16(0.5),
    "float32 0.1": numpy.float32(0.1),
    "1": 1,
    "-7": -7,
    "2**40": 2**40,
    "2**70": 2**70,
    "-2**63": -(2**63),
    "-0.0": -0.0,
    "float32 -0.0": numpy.float32(-0.0),
    "numpy True": numpy.bool_(True),
    "True": True,
    "int8 3": numpy.int8(3),
    "uint32 7": numpy.uint32(7),
    "uint64 7": numpy.uint64(7),
    "1+2j": 1 + 2j,
    "complex64 1+2j": numpy.complex64(1 + 2j),
    "complex128 0.1-2j": numpy.complex128(0.1 - 2j),
}
NON_FINITE = [name for name, value in CONSTANTS.items() if not cmath.isfinite(complex(value))]
ARRAYS = ("float16", "float32", "float64", "complex64", "complex128", "int64")
MODES = ("cuda", "numpy")


def storing(value):
    """A kernel that stores ``value`` at its thread's index."""

    def kernel(x):
        x[jit.threadIdx.x] = value

    return kernel


def upstream_test(dtype, constant):
    """The kernel of cupy/cupy#8707's tests: ``x[tid] = cupy.dtype(dtype).type(cupy.<constant>)``."""
    name = {"inf": "inf", "nan": "nan"}[constant]

    def kernel(x):
        tid = jit.threadIdx.x + jit.blockDim.x * jit.blockIdx.x
        x[tid] = cupy.dtype(dtype).type(getattr(cupy, name))

    return kernel


def attributes(x):
    """``cupy.inf`` and ``cupy.nan`` named in the kernel, and used in arithmetic and comparisons."""
    i = jit.threadIdx.x
    x[i] = cupy.inf
    x[i + 1] = -cupy.nan
    x[i + 2] = x[i] * cupy.nan
    if x[i] < cupy.inf:
        x[i] = numpy.inf


def transpile(kernel, dtype, mode="cuda"):
    """The source ``cupyx.jit`` writes for ``kernel`` launched on a 1-d C-contiguous array of ``dtype``."""
    array = _cuda_types.CArray(numpy.dtype(dtype), 1, True, True)
    return _compile.transpile(kernel, ['extern "C"', "__global__"], mode, (array,), _cuda_types.void).code


def cases():
    """``{case id: (kernel, array dtype, mode)}``."""
    every = {
        f"store {name} into {dtype} ({mode})": (storing(value), dtype, mode)
        for name, value in CONSTANTS.items()
        for dtype in ARRAYS
        for mode in MODES
    }
    for dtype in "efdFD":
        for constant in ("inf", "nan"):
            every[f"upstream {constant} {dtype}"] = (upstream_test(dtype, constant), dtype, "cuda")
    for dtype in ARRAYS:
        every[f"attributes into {dtype}"] = (attributes, dtype, "cuda")
    return every


def run(selected=None):
    """``{case id: source or error}`` for the corpus, or the cases named in ``selected``."""
    every = cases()
    outcomes = {}
    for case in selected or every:
        kernel, dtype, mode = every[case]
        try:
            outcomes[case] = transpile(kernel, dtype, mode)
        except Exception as error:
            outcomes[case] = f"{type(error).__name__}: {error}"
    return outcomes
