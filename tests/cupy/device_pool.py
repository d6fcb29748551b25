"""A memory pool laid out so that a too small buffer has a live array right after it (GPU tests only).

CuPy's memory pool splits a free chunk for the arrays asked of it and hands
a freed block to the next request it fits, so a buffer of the freed block's
size lands right before the array allocated after that block; whatever is
written past the buffer's end lands in that array.
"""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def a_freed_block_before_a_live_array(nbytes):
    """A pool of the test's own, in use for the ``with`` block, holding a free block of ``nbytes`` right before
    a live array of 4,096 float64 holding 0.5; that array."""
    import cupy

    pool = cupy.cuda.MemoryPool()
    with cupy.cuda.using_allocator(pool.malloc):
        cupy.empty(1 << 20, "B")  # freed at once: a chunk the pool splits for what follows
        block = cupy.empty(nbytes, "B")
        neighbour = cupy.full(4096, 0.5)
        assert neighbour.data.ptr == block.data.ptr + nbytes, "the pool no longer packs arrays in a free chunk"
        del block
        yield neighbour
