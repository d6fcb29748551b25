"""warp.array_copy_false_reference on a CUDA device: ``wp.array(source, copy=False)`` over CuPy device memory.

There is no GitHub issue: Warp 1.3.3's changelog says "Fix an aliasing issue
with zero-copy array initialization from NumPy introduced in Warp 1.3.0.", and
the fix (NVIDIA/warp@b0a9baa, "Fix reference to source data being erased in
array.__init__") adds a test, run on the CPU only, that begins:

    a_np = np.ones(8, dtype=np.int32)
    a_wp = wp.array(a_np, dtype=int, copy=False, device=device)
    test.assertIs(a_wp._ref, a_np)  # check that some ref is kept to original array
    test.assertEqual(a_wp.ptr, a_np.ctypes.data)

    a_np_2 = a_wp.numpy()
    test.assertTrue((a_np_2 == 1).all())

    # updating source array should update aliased array
    a_np.fill(2)
    test.assertTrue((a_np_2 == 2).all())

The same line of ``array.__init__`` drops the source of an array made from a
``__cuda_array_interface__`` on a CUDA device.  The tests marked ``gpu`` port
the test to device memory, with CuPy as the producer: with gpushim the Warp
array keeps the CuPy array (``_ref``), aliases its memory, sees its updates,
and keeps it alive until the Warp array is gone, as in 1.3.3; without it, on
1.3.0 to 1.3.2, ``_ref`` is None and the CuPy array is freed while the Warp
array still points at it.  They need Warp and CuPy in one environment
(``gpu-install`` in matrix/warp.toml), and a device; without one they are
skipped with "no CUDA device" (tests/gpu.py), and none of them has run yet.
The probe has no device branch (it aliases a NumPy array on the CPU).
"""

from __future__ import annotations

import gc
import math
import weakref

import pytest

from gpushim.patches.warp.array_copy_false_reference import patch
from tests.gpu import on_gpu
from tests.support import gate

GATE = gate(patch)

import warp as wp

DEVICE = "cuda"


def watched(source):
    """A list that gets True once ``source`` is freed."""
    freed = []
    weakref.finalize(source, freed.append, True)
    return freed


@on_gpu
@GATE.affected_only
def test_needed_the_cupy_source_is_forgotten_and_freed_without_gpushim():
    cupy = pytest.importorskip("cupy")
    a_cp = cupy.ones(8, dtype=cupy.int32)
    a_wp = wp.array(a_cp, dtype=int, copy=False, device=DEVICE)
    assert a_wp._ref is None
    freed = watched(a_cp)
    del a_cp
    gc.collect()
    assert freed == [True]
    del a_wp


@on_gpu
@GATE.recorded_only
def test_the_fixs_test_on_cupy_device_memory(this_patch):
    cupy = pytest.importorskip("cupy")
    a_cp = cupy.ones(8, dtype=cupy.int32)
    a_wp = wp.array(a_cp, dtype=int, copy=False, device=DEVICE)
    assert a_wp._ref is a_cp
    assert a_wp.ptr == a_cp.data.ptr
    assert (a_wp.numpy() == 1).all()
    a_cp.fill(2)
    assert (a_wp.numpy() == 2).all()
    a_wp.fill_(3)
    assert (a_cp.get() == 3).all()


@on_gpu
@GATE.recorded_only
@pytest.mark.parametrize(("shape", "dtype"), [((8,), "float32"), ((2, 3), "float64"), ((2, 3), "int64")])
def test_the_cupy_source_lives_as_long_as_the_warp_array(this_patch, shape, dtype):
    cupy = pytest.importorskip("cupy")
    source = cupy.arange(math.prod(shape), dtype=dtype).reshape(shape)
    freed = watched(source)
    array = wp.array(source, dtype=getattr(wp, dtype), copy=False, device=DEVICE)
    assert array._ref is source and array.ptr == source.data.ptr
    host = source.get()
    del source
    gc.collect()
    assert freed == []
    assert (array.numpy() == host).all()
    del array
    gc.collect()
    assert freed == [True]
