"""The real NVRTC compiling the CUDA source CuPy generates, on a machine without a device.

NVRTC is a library that needs no driver: the ``nvidia-cuda-nvrtc-cu12``
wheel compiles on any machine, given the CUDA runtime's headers from
``nvidia-cuda-runtime-cu12``, which CuPy's ``carray.cuh`` includes.  Every
CuPy cell installs both (matrix/cupy.toml) and puts the wheels' libraries on
the loader's path, where CuPy's own binding of NVRTC finds them.

The source is CuPy's own, from a kernel launched as a user launches it, on
arrays whose memory nobody touches (``fusion_tracing``).  CuPy's
``compile_with_cache`` prepends its headers to the kernel and assembles its
compiler options, then hands both to
``cupy.cuda.compiler._compile_module_with_cache``, whose first step asks the
device for its architecture; :func:`_handed` takes them there.  Two earlier
steps ask the device as well, each through a name replaced while a kernel is
launched here: ``cupy.fuse`` memoises its compilations per device (the memo's
``__wrapped__`` function stands in), and ``cupyx.jit`` keys its cache by
``cupy.cuda.get_device_id()`` (device 0 stands in).  :func:`rejection` then
compiles with the options that step adds for NVRTC 12, for the architecture
:data:`ARCH`.  NVRTC judges a source the same with a device or without
one, so a kernel it rejects here it rejects there, whatever its words.

The kernels of ``cupy.fuse``'s first code generator (``ElementwiseKernel``)
ask the device from compiled code before anything here could stand in, so
they are compiled on a device only (``test_gpu_fuse_python_scalar``).
"""

from __future__ import annotations

from pathlib import Path
from unittest import mock

from tests.cupy.fusion_tracing import fake_device_memory, materialise

ARCH = "compute_80"


class _Handed(Exception):
    """Raised where CuPy hands a kernel to its compiler: its ``args`` are the source and the options."""


def _take(source, options=(), *args, **kwargs):
    raise _Handed(source, options)


def _handed(launch) -> tuple[str, tuple]:
    """The source and options CuPy hands to its compiler when ``launch()`` compiles a kernel."""
    from cupy.cuda import compiler

    with mock.patch.object(compiler, "_compile_module_with_cache", _take), fake_device_memory():
        try:
            launch()
        except _Handed as handed:
            return handed.args
    raise AssertionError("CuPy compiled no kernel")


def fused(func, args, name: str) -> tuple[str, tuple]:
    """What ``cupy.fuse``'s second code generator compiles for ``func(*args)`` (a corpus case's arguments)."""
    from cupy._core import _fusion_kernel, new_fusion

    unmemoised = _fusion_kernel._cuda_compile.__wrapped__
    with mock.patch.object(_fusion_kernel, "_cuda_compile", unmemoised):
        return _handed(lambda: new_fusion.Fusion(func, name)(*materialise(args)))


def jit(kernel, dtype: str) -> tuple[str, tuple]:
    """What ``cupyx.jit.rawkernel`` compiles for ``kernel`` launched on an array of 30 ``dtype`` elements."""
    import cupy
    from cupyx import jit

    with mock.patch.object(cupy.cuda, "get_device_id", lambda: 0):
        return _handed(lambda: jit.rawkernel()(kernel)((5,), (6,), (cupy.empty(30, dtype),)))


def rejection(source: str, options: tuple) -> str | None:
    """NVRTC's log where it rejects ``source`` with CuPy's ``options``, for :data:`ARCH`; None where it compiles."""
    import nvidia.cuda_runtime
    from cupy_backends.cuda.libs import nvrtc

    headers = Path(nvidia.cuda_runtime.__file__).parent / "include"
    options = (*options, "-ftz=true", f"-I{headers}", f"-arch={ARCH}", "--device-as-default-execution-space")
    program = nvrtc.createProgram(source, "kernel.cu", (), ())
    try:
        nvrtc.compileProgram(program, options)
    except nvrtc.NVRTCError:
        return nvrtc.getProgramLog(program)
    finally:
        nvrtc.destroyProgram(program)
    return None


def rejections(kernels: dict) -> dict:
    """``{name: NVRTC's log, or None where it compiles}`` for ``kernels``, ``{name: (source, options)}``."""
    return {name: rejection(*kernel) for name, kernel in kernels.items()}
