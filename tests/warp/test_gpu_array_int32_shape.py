"""warp.array_int32_shape on a CUDA device: arrays on ``cuda`` shaped by NumPy int32 values.

There is no GitHub issue: Warp 1.3.2's changelog says "Fix 32-bit overflow
when array shape is specified using `np.int32`.", and the fix
(NVIDIA/warp@61c767525; 58bb5de43 on main) adds this test, run on every
device:

    def test_array_from_int32_domain(test, device):
        wp.zeros(np.array([1504, 1080, 520], dtype=np.int32), dtype=wp.float32, device=device)

844,646,400 float32 values: 3,378,585,600 bytes, more than an int32 holds,
so without the fix the capacity that ``wp.zeros`` allocates wraps.  The tests
marked ``gpu`` run it on ``device="cuda"`` with gpushim (it needs that much
free device memory, and is skipped, saying so, without it) and check what
1.3.2 gives: Python ints in the shape, the full size and capacity, and memory
that can be filled and read back at its far end; they lay a 65536 x 65537
uint8 array shaped by int32 values over one byte of device memory (nothing
read or written), whose size wraps to 65,536 without gpushim on 1.3.1; and
fill a small int32-shaped array.  Without a device they are skipped with "no
CUDA device" (tests/gpu.py), and none of them has run yet.  The probe has no
device branch (it lays its array over a NumPy buffer on the CPU).
"""

from __future__ import annotations

import numpy as np
import pytest

from gpushim.patches.warp.array_int32_shape import patch
from tests.gpu import on_gpu
from tests.support import gate

GATE = gate(patch)

import warp as wp

DEVICE = "cuda"
DOMAIN = (1504, 1080, 520)
CAPACITY = 1504 * 1080 * 520 * 4  # bytes of float32
HUGE = (65536, 65537)


def over_one_device_byte(shape):
    """A uint8 array of ``shape`` laid over one byte of device memory: bookkeeping only."""
    byte = wp.empty(1, dtype=wp.uint8, device=DEVICE)
    with np.errstate(over="ignore"):
        return wp.array(ptr=byte.ptr, shape=shape, dtype=wp.uint8, device=DEVICE), byte


@on_gpu
@GATE.affected_only
def test_needed_the_size_wraps_on_the_device_without_gpushim():
    array, _ = over_one_device_byte(np.array(HUGE, np.int32))
    assert int(array.size) == 65536


@on_gpu
@GATE.recorded_only
def test_the_size_does_not_wrap_on_the_device(this_patch):
    array, _ = over_one_device_byte(np.array(HUGE, np.int32))
    assert array.shape == HUGE and all(type(size) is int for size in array.shape)
    assert (array.size, array.capacity) == (65536 * 65537, 65536 * 65537)


@on_gpu
@GATE.recorded_only
def test_the_fixs_test_allocates_the_whole_domain(this_patch):
    """``wp.zeros`` of the int32 domain: 1.3.2's shape, size and capacity, filled and read at its far end."""
    free = wp.get_device(DEVICE).free_memory
    if free < CAPACITY + 2**28:
        pytest.skip(f"the fix's test needs {CAPACITY} bytes free on the device, {free} are")
    array = wp.zeros(np.array([1504, 1080, 520], dtype=np.int32), dtype=wp.float32, device=DEVICE)
    try:
        assert array.shape == DOMAIN and all(type(size) is int for size in array.shape)
        assert (array.size, array.capacity) == (1504 * 1080 * 520, CAPACITY)
        array.fill_(1.5)
        assert (array[1503].numpy() == 1.5).all()
    finally:
        del array


@on_gpu
@GATE.recorded_only
def test_a_small_int32_shaped_array_is_filled(this_patch):
    array = wp.full(np.array([3, 5], np.int32), 2.5, dtype=wp.float32, device=DEVICE)
    assert array.shape == (3, 5) and all(type(size) is int for size in array.shape)
    assert array.numpy().tolist() == [[2.5] * 5] * 3
