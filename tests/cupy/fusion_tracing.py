"""The CUDA code each of ``cupy.fuse``'s two code generators would compile, traced on the CPU.

``cupy.fuse`` first tries its older generator (``cupy._core.fusion``, "the
first path") and falls back for good to the newer one
(``cupy._core.new_fusion``, "the second path") when that raises.  Both only
need arrays with a shape and a dtype to trace a function, so an allocator
that hands out memory nobody ever reads lets the real, installed CuPy do all
of its code generation on a machine without a GPU.  On a machine with one
(``tests.gpu.PRESENT``) the arrays get CuPy's own device memory instead, so
that no made-up pointer ever reaches a driver.  Nothing here compiles or
launches a kernel.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import cupy

from gpushim.patches.cupy._memory import untouched_memory
from tests import gpu

ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def fake_device_memory():
    """Let ``cupy.empty`` hand out arrays whose memory is never touched: made up, or CuPy's own with a device."""
    if gpu.PRESENT:
        yield
        return
    with untouched_allocator():
        yield


@contextlib.contextmanager
def untouched_allocator():
    """CuPy's allocator replaced by one whose memory nobody touches, for a ``with`` block; that allocator.

    A test that pretends a device (tests/gpu.py) sets it as the memory pool
    CuPy would use on a device, and checks that what it runs leaves it in place.
    """
    previous = cupy.cuda.get_allocator()
    allocator = untouched_memory(cupy)
    cupy.cuda.set_allocator(allocator)
    try:
        yield allocator
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
    preamble = "".join(sorted(history.preamble_set)) + preamble[len(joined) :]
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
        "submodules": _sorted_preambles(kernel._submodule_code, func, args),
        "body": kernel._cuda_body,
        "grid_sync": bool(kernel._use_grid_sync),
    }


def _sorted_preambles(submodule_code, func, args):
    """``FusedKernel``'s submodule code with its ufuncs' preambles in sorted order.

    ``FusedKernel`` writes ``"\\n\\n".join(set(preambles))``, an order that
    depends on string hashing when there are two or more.  A second trace of
    the same function (as ``_get_fused_kernel`` runs it) yields the same
    operations and preambles, which are put back sorted.  (CuPy 14 writes
    type declarations before them, hence the search.)
    """
    import itertools

    from cupy._core import _fusion_thread_local, _fusion_trace

    local = _fusion_thread_local.thread_local
    local.is_new_fusing = True
    try:
        ops = _fusion_trace.trace(func, args).op_list
    finally:
        local.is_new_fusing = False
    preambles = set(itertools.chain.from_iterable(op.emit_preamble_codes() for op in ops))
    if len(preambles) < 2:
        return submodule_code
    joined = "\n\n".join(preambles)
    start = submodule_code.index(joined)
    return submodule_code[:start] + "\n\n".join(sorted(preambles)) + submodule_code[start + len(joined) :]


def trace(cases, path):
    """``{case id: outcome}`` of one path ("first" or "second") over corpus cases."""
    tracer = {"first": trace_first_path, "second": trace_second_path}[path]
    with fake_device_memory():
        return {case.id: tracer(case.func, materialise(case.args), case.id) for case in cases}


def raises_numpy2_can_cast(outcome):
    """Whether a first-path outcome is NumPy 2's refusal of a Python scalar in ``can_cast`` (cupy/cupy#8536)."""
    return "can_cast() does not support Python ints" in outcome.get("error", "")


def writes_bare_inf_or_nan(outcome):
    """Whether second-path code assigns a bare ``inf``/``nan``, which NVRTC rejects (cupy/cupy#9005, ``nvrtc``)."""
    import re

    return re.search(r"= -?(inf|nan);", outcome.get("body", "")) is not None


def trace_in_fresh_interpreter(path, gpushim=None, disable=None):
    """:func:`trace` of the whole corpus in a new interpreter of this environment.

    ``gpushim`` is None (gpushim never imported), ``"before"`` or ``"after"``:
    where ``import gpushim.auto`` goes relative to ``import cupy``.
    ``disable`` is a value for ``GPUSHIM_DISABLE``.
    """
    import json

    from tests.support import run_python

    lines = ["import json, sys", f"sys.path.insert(0, {str(ROOT)!r})"]
    if gpushim == "before":
        lines.append("import gpushim.auto")
    lines.append("import cupy")
    if gpushim == "after":
        lines.append("import gpushim.auto")
    lines += [
        "from tests.cupy import fusion_corpus, fusion_tracing",
        f"print(json.dumps(fusion_tracing.trace(fusion_corpus.CASES, {path!r})))",
    ]
    result = run_python("\n".join(lines), env={"GPUSHIM_DISABLE": disable} if disable else None)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])
