"""cupy.like_shape_buffer on a CUDA device: the array the pool put after a too small buffer is overwritten.

The CPU tests prove the sizes asked for.  What a device adds is the damage:
CuPy's memory pool splits a free chunk for the arrays asked of it and hands
a freed block to the next request it fits, so a live array lies right after
the block that ``*_like(a, shape=...)`` gets for ``a.size`` elements, and
filling the result writes into it.  Each test makes that layout in a pool of
its own: a block of the prototype's size freed right before a live array
holding 0.5, then the call with the prototype's four rows by 32 stepped
columns (16 KiB) and a shape of 64 by 64 (32 KiB).  Without a device they
are skipped with "no CUDA device" (tests/gpu.py), and none of them has run
yet.
"""

from __future__ import annotations

import numpy
import pytest

from gpushim.patches.cupy.like_shape_buffer import patch
from tests.cupy.device_pool import a_freed_block_before_a_live_array
from tests.gpu import on_gpu, pretend_a_device
from tests.support import gate

GATE = gate(patch)
# function: (its arguments after the prototype, the value every element of the result has); a NumPy scalar to
# fill with, as a Python float takes cupy.copyto_python_scalar's path under NumPy 2 before 13.3.0
FUNCTIONS = {
    "empty_like": ((), 1.0),
    "zeros_like": ((), 0.0),
    "ones_like": ((), 1.0),
    "full_like": ((numpy.float64(7.0),), 7.0),
}
SHAPE = (64, 64)


def prototype():
    """64 by 32 float64, every other column of a 64 by 64 array: neither C- nor F-contiguous, 16 KiB."""
    import cupy

    return cupy.empty((64, 64))[:, ::2]


def made_and_filled(function):
    """``function(prototype, shape=SHAPE)``, filled with 1.0 where it is ``empty_like``, after a freed block
    of the prototype's size; the result and the live array after that block."""
    import cupy

    a = prototype()
    with a_freed_block_before_a_live_array(a.nbytes) as neighbour:
        result = getattr(cupy, function)(a, *FUNCTIONS[function][0], shape=SHAPE)
        if function == "empty_like":
            result.fill(1.0)
        cupy.cuda.get_current_stream().synchronize()
        return result, neighbour


@on_gpu
@GATE.affected_only
@pytest.mark.parametrize("function", FUNCTIONS)
def test_needed_the_live_array_after_the_buffer_is_overwritten_without_gpushim(function):
    import cupy

    _, neighbour = made_and_filled(function)
    assert int(cupy.count_nonzero(neighbour != 0.5)) > 0


@on_gpu
@GATE.recorded_only
@pytest.mark.parametrize("function", FUNCTIONS)
def test_the_live_array_keeps_its_values_and_the_result_holds_the_fill(function, this_patch):
    result, neighbour = made_and_filled(function)
    assert bool((neighbour == 0.5).all())
    assert result.shape == SHAPE
    assert bool((result == FUNCTIONS[function][1]).all())


def test_probe_asks_cupys_own_allocator_where_a_device_is_present(monkeypatch):
    """On the CPU, with a pretended driver: the probe allocates through the allocator CuPy has, and leaves it.

    An allocator that hands out untouched memory stands in, for this test,
    for the device's memory pool.
    """
    import cupy

    from tests.cupy.fusion_tracing import untouched_allocator

    pretend_a_device(monkeypatch)
    sizes = []
    with untouched_allocator() as device_pool:

        def recording(size):
            sizes.append(size)
            return device_pool(size)

        cupy.cuda.set_allocator(recording)
        verdict = patch.probe()
        assert cupy.cuda.get_allocator() is recording
    assert sizes == [192, 96 if GATE.affected else 280]
    assert (verdict is not None) == GATE.affected, verdict
