"""The real NVRTC compiling the CUDA source Warp generates for a module, on a machine without a device.

NVRTC is a library that needs no driver: the ``nvidia-cuda-nvrtc-cu12``
wheel compiles on any machine.  Warp's CUDA build hands it the module's
source, which ``ModuleBuilder.codegen("cuda")`` generates
(``codegen.cuda_module_header`` and the module's code), with the release's
``warp/native`` headers on the include path: :func:`cuda_source` has Warp
generate it, and :func:`rejection` compiles it with the options Warp gives NVRTC in release mode, for
:data:`ARCH`.  Patches that change Warp's CUDA source (an overlay, the
int64 add) compile here in every cell that installs the wheel; a device
only runs what compiles.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

ARCH = "compute_80"
BLOCK_DIM = 256


def cuda_source(warp, kernel) -> str:
    """The CUDA source Warp's build hands NVRTC for the module of ``kernel``: its header, then its generated code."""
    import sys

    context = sys.modules[warp.launch.__module__]
    options = {**kernel.module.options, "block_dim": BLOCK_DIM, "output_arch": int(ARCH.rpartition("_")[2])}
    return context.ModuleBuilder(kernel.module, options).codegen("cuda")


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
    """The CUDA source of ``kernel``'s module holds ``patch``'s code (its id, in a comment) and NVRTC compiles it."""
    source = cuda_source(warp, kernel)
    assert patch.id in source
    assert rejection(warp, source) is None
