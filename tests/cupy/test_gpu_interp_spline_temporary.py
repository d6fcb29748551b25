"""cupy.interp_spline_temporary on a CUDA device: the de Boor kernel writes past the end of its temporary.

The CPU tests prove the size asked for.  What a device adds is the write:
every allocation ``make_interp_spline`` makes here is followed by a guard of
bytes holding a pattern, placed at the end of what CuPy asked for or at the
end of the 512-byte block CuPy's pool would round it to, and a guard that
no longer holds its pattern was written over.  Before 13.3.0, four points of
a cubic with ``bc_type="clamped"`` write 56 bytes into 48 (past the end asked
for, inside the pool's block), and 33 points of ``k=32`` with its 31
derivatives 520 into 512 (past the pool's block, into the next array).
Without a device they are skipped with "no CUDA device" (tests/gpu.py),
and none of them has run yet.
"""

from __future__ import annotations

import contextlib

import numpy
import pytest

from gpushim.patches.cupy.interp_spline_temporary import patch
from tests.gpu import on_gpu
from tests.support import gate

GATE = gate(patch)
GUARD = 1024  # bytes after each allocation's end
PATTERN = 0xA5
# name: (points, k, bc_type, where a guard begins: CuPy's request rounded up to this many bytes)
CALLS = {
    "k=3, 4 points, clamped, guard at the end asked for": (4, 3, "clamped", 1),
    "k=32, 33 points, 31 derivatives, guard at the pool's block end": (
        33,
        32,
        ([(order, 0.0) for order in range(1, 17)], [(order, 0.0) for order in range(1, 16)]),
        512,
    ),
}


@contextlib.contextmanager
def guarded_allocations(rounding):
    """Every allocation in the ``with`` block followed by a guard of :data:`GUARD` bytes holding :data:`PATTERN`,
    from ``rounding`` past its start (its size rounded up); yields the list of ``(memory, guard's offset)``."""
    import cupy

    pool = cupy.cuda.MemoryPool()
    made = []

    def allocate(size):
        end = -(-size // rounding) * rounding
        memory = pool.malloc(end + GUARD)
        (memory + end).memset(PATTERN, GUARD)
        made.append((memory, end))
        return memory

    with cupy.cuda.using_allocator(allocate):
        yield made


def overwritten_guards(name):
    """How many guards no longer hold their pattern once ``make_interp_spline`` has run the call ``name``."""
    import cupy
    from cupyx.scipy.interpolate import make_interp_spline

    points, k, bc_type, rounding = CALLS[name]
    x = cupy.arange(float(points))
    with guarded_allocations(rounding) as made:
        with contextlib.suppress(Exception):  # the solve may refuse a singular system: the kernel ran before it
            make_interp_spline(x, x * x, k=k, bc_type=bc_type)
        cupy.cuda.get_current_stream().synchronize()
        guards = [cupy.ndarray((GUARD,), numpy.uint8, memptr=memory + end).get() for memory, end in made]
    return sum(bool((guard != PATTERN).any()) for guard in guards)


@on_gpu
@GATE.affected_only
@pytest.mark.parametrize("name", CALLS)
def test_needed_the_kernel_writes_past_its_temporary_without_gpushim(name):
    assert overwritten_guards(name) == 1


@on_gpu
@GATE.recorded_only
@pytest.mark.parametrize("name", CALLS)
def test_every_guard_keeps_its_pattern(name, this_patch):
    assert overwritten_guards(name) == 0
