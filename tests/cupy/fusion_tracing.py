"""The CUDA code each of ``cupy.fuse``'s two code generators would compile, traced on the CPU.

``cupy.fuse`` first tries its older generator (``cupy._core.fusion``, "the
first path") and falls back for good to the newer one
(``cupy._core.new_fusion``, "the second path") when that raises.  Both only
need arrays with a shape and a dtype to trace a function, so an allocator
that hands out memory nobody ever reads lets the real, installed CuPy do all
of its code generation on a machine without a GPU.  Nothing here compiles or
launches a kernel.
"""

from __future__ import annotations

import contextlib

import cupy

# A made-up, well aligned device address: arrays made under fake_device_memory()
# point there and are only ever looked at for their shape and dtype.
FAKE_POINTER = 0x7F0000000000


def _fake_allocator(size):
    memory = cupy.cuda.UnownedMemory(FAKE_POINTER, max(size, 1), None, device_id=0)
    return cupy.cuda.MemoryPointer(memory, 0)


@contextlib.contextmanager
def fake_device_memory():
    """Let ``cupy.empty`` hand out arrays whose memory is never touched."""
    previous = cupy.cuda.get_allocator()
    cupy.cuda.set_allocator(_fake_allocator)
    try:
        yield
    finally:
        cupy.cuda.set_allocator(previous)


def materialise(args):
    """The call arguments of a corpus case: arrays from their specs, scalars as they are."""
    from tests.cupy.fusion_corpus import Array

    return tuple(cupy.empty(a.shape, a.dtype) if isinstance(a, Array) else a for a in args)


def _error(error):
    return {"error": f"{type(error).__name__}: {error}"}


def _params(params):
    return [[p.name, str(p.dtype), p.ctype, bool(p.raw), bool(p.is_const)] for p in params]


def trace_first_path(func, args, name):
    """What ``cupy._core.fusion`` makes of ``func(*args)``: the kernel's code or the error.

    The thread-local history is set exactly as ``Fusion.__call__`` sets it
    before it calls ``get_fusion``.
    """
    from cupy._core import _fusion_thread_local, fusion

    local = _fusion_thread_local.thread_local
    history = fusion._FusionHistory()
    local.history = history
    local.is_old_fusing = True
    try:
        kernel, kwargs = history.get_fusion(func, args, name)
    except Exception as error:
        return _error(error)
    finally:
        local.history = None
        local.is_old_fusing = False
    # The preamble starts with the ufuncs' own preambles joined in set order;
    # write them sorted so the text does not depend on string hashing.
    preamble = kernel.preamble
    joined = "".join(history.preamble_set)
    assert preamble.startswith(joined)
    preamble = "".join(sorted(history.preamble_set)) + preamble[len(joined):]
    code = {
        "kind": type(kernel).__name__,
        "name": kernel.name,
        "in_params": _params(kernel.in_params),
        "out_params": _params(kernel.out_params),
        "preamble": preamble,
        "kwargs": repr(sorted(kwargs.items())),
    }
    if hasattr(kernel, "operation"):
        code["operation"] = kernel.operation
    else:
        for field in ("map_expr", "reduce_expr", "post_map_expr", "identity", "reduce_type"):
            code[field] = repr(getattr(kernel, field))
    return code


def trace_second_path(func, args, name):
    """What ``cupy._core.new_fusion`` makes of ``func(*args)``: the kernel's code or the error."""
    from cupy._core import new_fusion

    try:
        kernel = new_fusion._get_fused_kernel(name, func, args)
    except Exception as error:
        return _error(error)
    return {
        "name": kernel._name,
        "typedefs": kernel._get_typedefs(args),
        "submodules": kernel._submodule_code,
        "body": kernel._cuda_body,
        "grid_sync": bool(kernel._use_grid_sync),
    }


def trace(cases, path):
    """``{case id: outcome}`` of one path ("first" or "second") over corpus cases."""
    tracer = {"first": trace_first_path, "second": trace_second_path}[path]
    with fake_device_memory():
        return {case.id: tracer(case.func, materialise(case.args), case.id) for case in cases}


def is_bare_inf_or_nan(code):
    """Whether traced code names inf or nan as a bare C identifier (nvrtc: 'identifier "inf" is undefined')."""
    import re

    text = "\n".join(str(v) for v in code.values())
    return re.search(r"(?<![\w.])-?(inf|nan)(?![\w.])", text) is not None
