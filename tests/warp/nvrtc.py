"""The real NVRTC compiling the CUDA source Warp generates for a kernel, on a machine without a device.

NVRTC is a library that needs no driver: the ``nvidia-cuda-nvrtc-cu12``
wheel compiles on any machine.  Warp's CUDA build hands it a module's
source, which ``ModuleBuilder.codegen("cuda")`` generates
(``codegen.cuda_module_header`` and the module's code), with the release's
``warp/native`` headers on the include path: :func:`cuda_source` has Warp
generate it for a module of one kernel, and :func:`rejection` compiles it
with the options Warp gives NVRTC in release mode, for :data:`ARCH`.
Patches that change Warp's CUDA source (an overlay, a helper in the
module, a code generator's wrapper) compile here at the ends of their
ranges, in the cells that install the wheel; a device only runs what
compiles.
"""

from __future__ import annotations

import ctypes
import itertools
import re
import sys
from pathlib import Path

from tests.support import applied

ARCH = "compute_80"
BLOCK_DIM = 256
_MODULES = itertools.count()


def cuda_source(warp, kernel) -> str:
    """The CUDA source Warp's build hands NVRTC for ``kernel`` (and its overloads): the header, then the code.

    The kernel is declared again, from its function, options and overloads,
    in a Warp module of its own: the other kernels of its Python module stay
    out, some of which a release cannot build for CUDA at all (``a[i] += x``
    on int64 before 1.7: CUDA has no ``atomicAdd`` of ``long long``).
    """
    context = sys.modules[warp.launch.__module__]
    module = context.get_module(f"gpushim_nvrtc_{next(_MODULES)}")
    alone = context.Kernel(kernel.func, key=kernel.key, module=module, options=kernel.options)
    for overload in kernel.overloads.values():
        alone.add_overload(list(overload.adj.arg_types.values()))
    options = {**kernel.module.options, "block_dim": BLOCK_DIM, "output_arch": int(ARCH.rpartition("_")[2])}
    return context.ModuleBuilder(module, options).codegen("cuda")


def _nvrtc() -> ctypes.CDLL:
    import nvidia.cuda_nvrtc

    (library,) = (Path(nvidia.cuda_nvrtc.__file__).parent / "lib").glob("libnvrtc.so.*[0-9]")
    return ctypes.CDLL(str(library))


def rejection(warp, source: str) -> str | None:
    """NVRTC's log where it rejects ``source`` with Warp's release-mode options for :data:`ARCH`, or None."""
    nvrtc = _nvrtc()
    native = Path(warp.__file__).parent / "native"
    options = [
        f"--gpu-architecture={ARCH}",
        f"--include-path={native}",
        "--std=c++17",
        "--define-macro=NDEBUG",
        "--define-macro=WP_ENABLE_MATHDX=0",
        "--fmad=true",
        "--device-as-default-execution-space",
        "--restrict",
    ]
    program = ctypes.c_void_p()
    assert nvrtc.nvrtcCreateProgram(ctypes.byref(program), source.encode(), b"module.cu", 0, None, None) == 0
    try:
        encoded = (ctypes.c_char_p * len(options))(*(option.encode() for option in options))
        if nvrtc.nvrtcCompileProgram(program, len(options), encoded) == 0:
            return None
        size = ctypes.c_size_t()
        nvrtc.nvrtcGetProgramLogSize(program, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        nvrtc.nvrtcGetProgramLog(program, log)
        return log.value.decode(errors="replace")
    finally:
        nvrtc.nvrtcDestroyProgram(ctypes.byref(program))


def assert_compiles_for_cuda(warp, kernel, patch) -> None:
    """The CUDA source of ``kernel`` holds ``patch``'s code (its id, in a comment) and NVRTC compiles it."""
    source = cuda_source(warp, kernel)
    assert patch.id in source
    assert rejection(warp, source) is None


def assert_generates_other_cuda_that_compiles(warp, kernel, patch) -> None:
    """With ``patch`` applied, Warp generates CUDA for ``kernel`` that the release does not, and NVRTC compiles it.

    For a patch of Warp's code generator, whose code carries no name of its
    own.  The release generates other code for the kernel, or refuses it (a
    ``RuntimeError``, as Warp's code generator raises).  The sources are
    compared without the 8 hexadecimal digits of Warp's hashes in names: a
    patch that keys its builds apart changes them, whatever it generates.
    """
    with applied(patch):
        patched = cuda_source(warp, kernel)
    try:
        released = cuda_source(warp, kernel)
    except RuntimeError:
        released = None
    assert released is None or _unhashed(released) != _unhashed(patched)
    assert rejection(warp, patched) is None


def _unhashed(source: str) -> str:
    return re.sub(r"_[0-9a-f]{8}(?![0-9A-Za-z])", "_<hash>", source)
