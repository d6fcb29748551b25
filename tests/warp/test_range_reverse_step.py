"""warp.range_reverse_step: the backward pass of ``range(start, end, step)`` loops (NVIDIA/warp#311).

One kernel loops over a range whose bounds it reads at run time, so Warp
does not unroll it, and adds ``x[i] * (i + 1)`` for each index the loop
takes; the tape's gradient of ``x`` shows which indices the backward pass
visited.  Indices outside ``x`` are skipped in both passes, which is where
the released reverse of a negative step goes.
"""

from __future__ import annotations

from gpushim.patches.warp.range_reverse_step import patch
from tests.support import gate
from tests.warp.overlay_checks import OverlayChecks

GATE = gate(patch)

import warp  # noqa: E402

warp.config.quiet = True

SIZE = 12
RANGES = [(0, 10, 4), (1, 10, 3), (0, 5, 1), (3, 11, 2), (0, 1, 7), (4, 4, 1), (10, 0, -3), (9, -1, -4)]


@warp.kernel
def weighted_sum(start: int, end: int, step: int, x: warp.array(dtype=float), out: warp.array(dtype=float)):
    for i in range(start, end, step):
        if i >= 0 and i < SIZE:
            warp.atomic_add(out, 0, x[i] * float(i + 1))


def run_corpus() -> dict:
    """For each range, the sum and the tape's gradient of ``x``: ``i + 1`` at each index the backward pass visited."""
    outcomes = {}
    for start, end, step in RANGES:
        x = warp.ones(SIZE, dtype=float, device="cpu", requires_grad=True)
        out = warp.zeros(1, dtype=float, device="cpu", requires_grad=True)
        tape = warp.Tape()
        with tape:
            warp.launch(weighted_sum, dim=1, inputs=[start, end, step, x, out], device="cpu")
        tape.backward(loss=out)
        outcomes[f"range({start}, {end}, {step})"] = [float(out.numpy()[0]), x.grad.numpy().tolist()]
    return outcomes


def _visiting(indices) -> list:
    return [float(i + 1) if i in indices else 0.0 for i in range(SIZE)]


FIXED = {
    f"range({start}, {end}, {step})": [
        float(sum(i + 1 for i in range(start, end, step))),
        _visiting(range(start, end, step)),
    ]
    for start, end, step in RANGES
}
# Where the releases up to 1.4.0 differ: the same sums, the gradient at the indices from end - 1 back to
# start - 1, whatever the step.
RELEASED = {
    key: [FIXED[key][0], _visiting(visited)]
    for key, visited in {
        "range(0, 10, 4)": (9, 5, 1),
        "range(1, 10, 3)": (9, 6, 3),
        "range(3, 11, 2)": (10, 8, 6, 4),
        "range(10, 0, -3)": (2, 5, 8),
        "range(9, -1, -4)": (2, 6),
    }.items()
}


SCRIPT = """
import sys
import warp

warp.config.quiet = False  # Warp says whether it compiled the module or found it in the cache


@warp.kernel
def total(n: int, x: warp.array(dtype=float), out: warp.array(dtype=float)):
    for i in range(0, n, 4):
        warp.atomic_add(out, 0, x[i])


KERNEL = total


def run():
    x = warp.ones(10, dtype=float, device="cpu", requires_grad=True)
    out = warp.zeros(1, dtype=float, device="cpu", requires_grad=True)
    tape = warp.Tape()
    with tape:
        warp.launch(total, dim=1, inputs=[10, x, out], device="cpu")
    tape.backward(loss=out)
    print("@@values", [i for i, value in enumerate(x.grad.numpy()) if value], flush=True)
"""
WRONG, RIGHT = "[1, 5, 9]", "[0, 4, 8]"


class TestRangeReverseStep(OverlayChecks):
    patch, gate, corpus, kernel = patch, GATE, __name__, weighted_sum
    fixed, released = FIXED, RELEASED
    script, wrong, right = SCRIPT, WRONG, RIGHT
