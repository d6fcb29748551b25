"""CuPy's CUB block reduction computes each segment's offset in 32 bits: wrong results past 2**32 elements.

What breaks.  A reduction along an axis (``cupy.count_nonzero(x, axis=1)``,
``x.sum(axis=1)`` where CuPy's routines leave it to its reduction kernels, a
``cupy.ReductionKernel``) whose segments each hold at most 2**31 - 1 elements
but which holds more than 2**32 in all reads the wrong memory: the kernel CuPy
generates in ``cupy._core._cub_reduction`` computes ``size_t segment_idx =
blockIdx.x * _segment_size;`` with ``_segment_size`` a 32-bit ``int``, so the
product wraps before it is widened, and every segment past the 2**32nd element
reduces elements from the start of the array.  Only installs that use CuPy's
CUB block reduction are hit: ``cub`` among ``CUPY_ACCELERATORS`` (the
default), and an ``nvcc`` CuPy finds at import (the ``NVCC`` variable, or
``nvcc`` under the CUDA path), which CuPy requires before it uses it, though
it compiles the kernel with NVRTC.  The template has had the line since
7781e0d5d (2020): every CuPy from 12.0.0 to 13.5.1.

Fixed upstream.  cupy/cupy#9248 (merged as 5b9d9f4a8, in v14.0.0rc1),
backported as #9254 (merge dc1536e37); ``git tag --contains dc1536e37`` gives
v13.6.0 alone of the 13 series.  The line is in v12.0.0, v13.0.0 and v13.5.1's
template and not in v13.6.0's or v14.0.0's.  The wheels of 13.1.0 and 13.5.1
generate the old line and 13.6.0's the new one; patched, 13.1.0 and 13.5.1
generate 13.6.0's kernels to the letter (``tests/cupy/test_cub_segment_offset.py``).
CuPy 12 cannot import without a CUDA driver: its range is read from git.

How the fix works.  13.6.0 widens ``blockIdx.x`` to ``size_t`` before the
multiplication.  The template is a string inside the compiled
``_cub_reduction`` extension, which Python cannot reach, but the source it
becomes passes through ``cupy.cuda.compiler._compile_module_with_cache``,
which ``compile_with_cache`` looks up at each call: the patch wraps it and
replaces the release's line, where a source holds it, with 13.6.0's, and
hands every other source on unchanged.  It checks first that the extension
holds the line, exactly once, and fails with that reason otherwise.  CuPy
keys its kernel cache (in memory and on disk) by the source, so a patched
kernel is never served from an unpatched build's cache, nor the reverse; a
kernel CuPy memoised before the patch was applied stays as it was compiled.

Not backported.  Nothing: the fix is the one line.

The probe.  The source CuPy generates for ``count_nonzero`` along the last
axis of a (4, 1024) boolean array, taken where it is handed to the compiler,
never compiled; without a device the array's memory is made up and never
touched.  It sets ``NVCC`` where unset, since CuPy uses the CUB block
reduction only where it finds one.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from gpushim import Parameters, Patch, ProbeCannotRun, TargetMismatch, expect
from gpushim.patches.cupy._memory import untouched_memory

patch = Patch(
    id="cupy.cub_segment_offset",
    affected=">=12.0.0,<13.6.0",
    fixed_in="13.6.0",
    issue="cupy/cupy#9248",
    fix="cupy/cupy@5b9d9f4a8 (backport #9254)",
    summary="CUB block reductions along an axis over more than 2**32 elements reduce the wrong elements.",
)

RELEASED = "  size_t segment_idx = blockIdx.x * _segment_size;\n"
FIXED = "  size_t segment_idx = size_t(blockIdx.x) * _segment_size;\n"

_COMPILE = Parameters("source", options=())  # how _compile_module_with_cache starts


def _widened(wrapped, instance, args, kwargs):
    """13.6.0's line for the release's, in a source handed to the compiler as CuPy hands it (first, positional)."""
    if args and isinstance(args[0], str) and RELEASED in args[0]:
        args = (args[0].replace(RELEASED, FIXED), *args[1:])
    return wrapped(*args, **kwargs)


@patch.applier
def _apply(cupy, journal):
    compiler = expect(cupy, "cuda.compiler", ModuleType)
    _COMPILE.check(expect(compiler, "_compile_module_with_cache", callable), leading=True)
    extension = Path(expect(cupy, "_core._cub_reduction", ModuleType).__file__ or "")
    found = extension.read_bytes().count(RELEASED.strip().encode()) if extension.is_file() else 0
    if found != 1:
        raise TargetMismatch(f"{extension.name} holds {RELEASED.strip()!r} {found} times, expected once")
    journal.wrap(compiler, "_compile_module_with_cache", _widened)


class _Handed(Exception):
    """Raised where CuPy compiles a kernel: its ``args`` are the source and the options."""


def traced_source(cupy, kernel, shape, dtype, axis):
    """The source and options ``kernel``, a CuPy reduction kernel, compiles for ``shape``/``dtype`` along ``axis``.

    Taken after ``_compile_module_with_cache`` (and any wrapper of it), where CuPy
    would ask the device for its architecture.  ``_SimpleCubReductionKernel``'s
    memo and the kernel's ``__call__`` ask for the device id: the memo's
    ``__wrapped__`` and device 0 stand in.
    """
    from unittest import mock

    from cupy._core import _cub_reduction
    from cupy.cuda import compiler

    from gpushim import device

    def take(source, options, *args, **kwargs):
        raise _Handed(source, options)

    memo = _cub_reduction._SimpleCubReductionKernel_get_cached_function
    unmemoised = mock.patch.object(_cub_reduction, "_SimpleCubReductionKernel_get_cached_function", memo.__wrapped__)
    with unmemoised, mock.patch.object(compiler, "_compile_with_cache_cuda", take):
        previous = cupy.cuda.get_allocator()
        if not device.cuda_present():
            cupy.cuda.set_allocator(untouched_memory(cupy))
        try:
            array = cupy.empty(shape, dtype)
            kernel._call([array], [], array.shape, axis, None, False, True, 0, None, True, True)
        except _Handed as handed:
            return handed.args
        finally:
            cupy.cuda.set_allocator(previous)
    raise ProbeCannotRun("CuPy uses no CUB block reduction here (cub is not among CUPY_ACCELERATORS)")


@patch.prober
def _probe():
    import os

    os.environ.setdefault("NVCC", "nvcc")
    import cupy
    from cupy._sorting import count

    source, _ = traced_source(cupy, count._count_nonzero, (4, 1024), "bool", 1)
    if RELEASED in source:
        return f"the CUB reduction kernel computes {RELEASED.strip()!r} in 32 bits"
    return None
