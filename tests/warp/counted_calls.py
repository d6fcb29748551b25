"""Right sides that count their calls, in a kernel run on the CPU under a tape.

What the corpora of warp.inplace_adjoints and of the four patches of Warp's
assignments applied together share: each statement's right side is
``counted(calls, slot, x)``, which adds one to ``calls[slot]`` each time it
runs and gives ``x``, so that the forward pass shows how often a right side
was evaluated and the backward pass the gradient through the statement.
No ``from __future__ import annotations``: Warp 1.2 reads a function's
annotations as types.
"""

import numpy as np
import warp as wp


@wp.func
def counted(calls: wp.array(dtype=wp.int32), slot: int, x: float):
    wp.atomic_add(calls, slot, 1)
    return x


def cpu(values, dtype=float):
    """A CPU array of ``values`` (as float32) that keeps a gradient."""
    return wp.array(np.array(values, dtype=np.float32), dtype=dtype, device="cpu", requires_grad=True)


def launch_taped(kernel, slots: int, arrays: list, seeded: list) -> list:
    """How often each of ``slots`` counted in ``kernel(calls, *arrays)`` on two CPU threads, under a tape.

    The tape's backward pass follows, from ones in each array of ``seeded``.
    The kernel's module is hashed anew first (up to 1.3, unloaded), so that
    it runs built as gpushim now patches Warp.
    """
    getattr(kernel.module, "mark_modified", kernel.module.unload)()
    calls = wp.zeros(slots, dtype=wp.int32, device="cpu")
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=2, inputs=[calls, *arrays], device="cpu")
    forward = calls.numpy().tolist()
    tape.backward(grads={array: cpu(np.ones(array.numpy().shape), array.dtype) for array in seeded})
    return forward
