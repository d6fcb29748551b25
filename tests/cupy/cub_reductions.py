"""The source CuPy's CUB block reduction generates for a few reductions, traced in this interpreter.

CuPy uses that reduction only where it found an ``nvcc`` when it was imported,
so :func:`run_corpus` runs in a fresh interpreter with ``NVCC`` set
(:data:`PRELUDE`); the name need not exist, as NVRTC compiles the kernels.
"""

from __future__ import annotations

PRELUDE = "import os; os.environ['NVCC'] = 'nvcc'"
CUB_HEADER = "#include <cub/block/block_reduce.cuh>"


def kernels() -> dict:
    """``{case: (kernel, shape, dtype, axis)}``: a routine's kernel along an axis, a user's, a full reduction."""
    import cupy
    from cupy._sorting import count

    int8_sum = cupy.ReductionKernel("T x", "int64 y", "x", "a + b", "y = a", "0", "int8_sum")
    return {
        "count_nonzero along the last axis": (count._count_nonzero, (4, 1024), "bool", 1),
        "ReductionKernel along the last axis": (int8_sum, (8, 300), "int8", 1),
        "count_nonzero of everything (first pass)": (count._count_nonzero, (3, 5000), "bool", None),
    }


def traced() -> dict:
    """``{case: (source, options)}`` as CuPy hands each case's kernel to its compiler."""
    import cupy

    from gpushim.patches.cupy.cub_segment_offset import traced_source

    return {case: traced_source(cupy, *kernel) for case, kernel in kernels().items()}


def run_corpus() -> dict:
    """Each case's kernel as ``cupy._core._cub_reduction`` writes it, from its CUB header on: CuPy's own headers,
    which ``compile_with_cache`` puts before it, differ between releases for other reasons."""
    return {case: source[source.index(CUB_HEADER) :] for case, (source, _) in traced().items()}


def rejections() -> dict:
    """``{case: NVRTC's log, or None where it compiles}``, with the real NVRTC (``tests/cupy/nvrtc.py``)."""
    from tests.cupy import nvrtc

    return nvrtc.rejections(traced())
