"""warp.copy_strided_offsets and warp.copy_adjoint_offsets on a CUDA device: the fix's regression tests.

NVIDIA/warp@05b9d2a42 (1.15.0) adds ``test_copy_offset_strided``, run for
every pair of source and destination devices: ``wp.copy(dst, src,
src_offset=1, dest_offset=1, count=2)`` from ``[1, 2, 3, 4]`` into ``[9, 9,
9, 9]``, each contiguous or a ``[::2]`` view, must give ``[9, 2, 3, 9]``; and
``test_copy_offset_adjoint_asymmetric``: the gradient of a copy of two
elements from 1 to 3 between arrays of 6, contiguous and strided, must be
the seed's elements 3 and 4 at 1 and 2.  On a device the non-contiguous
copy is a kernel launch, and between two devices Warp stages the arrays
through contiguous copies first, which the CPU corpus cannot reach.
Without a device it is skipped with "no CUDA device" (tests/gpu.py), and it
has not run yet.
"""

from __future__ import annotations

from gpushim.patches.warp.copy_adjoint_offsets import patch as adjoint_patch
from gpushim.patches.warp.copy_strided_offsets import patch
from tests.gpu import on_gpu
from tests.support import gate
from tests.warp.gpu_scripts import run_script

GATE = gate(patch)
ADJOINT_GATE = gate(adjoint_patch)

REGRESSION_TESTS = """
import numpy as np
import warp as wp

wp.config.quiet = True
wp.init()


def copied(src_device, dst_device, src_strided, dst_strided):
    src = wp.array([1, 5, 2, 6, 3, 7, 4, 8] if src_strided else [1, 2, 3, 4], dtype=wp.int32, device=src_device)
    dst = wp.array([9, 0, 9, 0, 9, 0, 9, 0] if dst_strided else [9, 9, 9, 9], dtype=wp.int32, device=dst_device)
    src, dst = src[::2] if src_strided else src, dst[::2] if dst_strided else dst
    wp.synchronize_device(src_device)
    wp.copy(dst, src, src_offset=1, dest_offset=1, count=2)
    return dst.numpy().tolist()


def gradient(strided):
    n = 6
    src = wp.array(np.arange(2 * n if strided else n, dtype=np.float32), requires_grad=True, device="cuda")
    dst = wp.zeros(2 * n if strided else n, dtype=wp.float32, requires_grad=True, device="cuda")
    src, dst = (src[::2], dst[::2]) if strided else (src, dst)
    tape = wp.Tape()
    with tape:
        wp.copy(dst, src, src_offset=1, dest_offset=3, count=2)
    tape.backward(grads={dst: wp.array(np.arange(10, 10 + n, dtype=np.float32), device="cuda")})
    return src.grad.numpy().tolist()


devices = ("cpu", "cuda")
result = {
    "copies": {
        f"{a}{' strided' * s} to {b}{' strided' * d}": copied(a, b, s, d)
        for a in devices for b in devices for s in (False, True) for d in (False, True)
    },
    "gradients": {"strided" if strided else "contiguous": gradient(strided) for strided in (False, True)},
}
"""

EXPECTED_GRADIENT = [0.0, 13.0, 14.0, 0.0, 0.0, 0.0]


@on_gpu
@GATE.affected_only
def test_needed_strided_copies_with_offsets_copy_whole_arrays_without_gpushim(tmp_path):
    result = run_script(REGRESSION_TESTS, tmp_path, gpushim=False)
    assert result["copies"]["cuda strided to cuda"] == [1, 2, 3, 4]


@on_gpu
@ADJOINT_GATE.ends_only
def test_needed_the_gradient_of_a_copy_swaps_its_offsets_without_gpushim(tmp_path):
    result = run_script(REGRESSION_TESTS, tmp_path, gpushim=False)
    assert result["gradients"]["contiguous"] != EXPECTED_GRADIENT


@on_gpu
@GATE.recorded_only
def test_every_pair_of_devices_and_layouts_copies_the_range_with_gpushim(tmp_path):
    result = run_script(REGRESSION_TESTS, tmp_path, gpushim=True)
    assert set(map(tuple, result["copies"].values())) == {(9, 2, 3, 9)}, result["copies"]


@on_gpu
@ADJOINT_GATE.recorded_only
def test_gradients_of_a_copy_with_distinct_offsets_reach_the_source_range_with_gpushim(tmp_path):
    result = run_script(REGRESSION_TESTS, tmp_path, gpushim=True)
    assert result["gradients"] == {"contiguous": EXPECTED_GRADIENT, "strided": EXPECTED_GRADIENT}
