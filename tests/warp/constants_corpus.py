"""Kernels whose Python constants Warp's code generation reads, for ``warp.py314_ast_names``.

Run in a fresh interpreter, gpushim active: each kernel is launched once on the CPU, and what is
printed, as JSON, is each kernel's outputs and the forward code generated for
it, or the exception its build raises.  Equal numbers, negative ones, bools,
an ``...`` statement, a docstring and unrolled ranges go through
``emit_Constant`` and ``eval_num``; ``None`` is the constant Warp refuses.
All kernels but the refused one are in this module, so that they build as one.
"""

from pathlib import Path

import warp

warp.config.quiet = True
warp.config.cache_kernels = False  # a cached build skips code generation

N = warp.constant(4)


@warp.kernel
def numbers(out: warp.array(dtype=float)):
    out[0] = float(3) * 2.5
    out[1] = -4.0 + float(-2)
    x = 1.0
    y = 1.0
    out[2] = x + y + 1.0
    out[3] = float(warp.int32(5)) + 0.5


@warp.kernel
def bools(out: warp.array(dtype=float)):
    out[0] = float(True)
    out[1] = float(False)
    if True:
        out[2] = 1.0


@warp.kernel
def statements(out: warp.array(dtype=float)):
    """A docstring."""
    ...
    "a string statement"
    out[0] = 1.0


@warp.kernel
def ranges(out: warp.array(dtype=float)):
    total = float(0)
    for i in range(3):
        total += float(i)
    out[0] = total
    total = float(0)
    for i in range(6, 0, -2):
        total += float(i)
    out[1] = total
    total = float(0)
    for i in range(-3, 3):
        total += float(i)
    out[2] = total
    total = float(0)
    for i in range(N):
        total += float(i)
    out[3] = total


def outcome(kernel) -> dict:
    try:
        out = warp.zeros(4, dtype=float, device="cpu")
        warp.launch(kernel, dim=1, inputs=[out], device="cpu")
    except Exception as error:
        return {"raises": type(error).__name__, "message": str(error).replace(str(Path(__file__).parent), "<here>")}
    return {"out": out.numpy().tolist(), "forward": [line.strip() for line in kernel.adj.blocks[0].body_forward]}


def outcomes() -> dict:
    from tests.warp import constants_refused

    kernels = [numbers, bools, statements, ranges, constants_refused.none]
    return {kernel.key: outcome(kernel) for kernel in kernels}
