"""warp.empty_slice on a CUDA device: the fix's regression test on ``device="cuda"``.

NVIDIA/warp@09f9ad489 (1.9.1) adds to ``test_slicing``, run on every device,
``slice_g = arr[1:1, :0, -1:-1]`` of a 4 x 3 x 2 array and
``assert slice_g.shape == np_arr[1:1, :0, -1:-1].shape == (0, 0, 0)``.
Slicing only computes a view's shape, strides and address on the host, so
the CPU corpus covers the same code; this test shows it on a device array.
The empty view keeps an address, so its ``.numpy()`` copies it to the host,
into an array without one, which NumPy refuses: 1.9.1 raises ValueError there
(the CPU corpus records it), and so does every release after it up to 1.16.0,
whose ``numpy()`` is the same.  Without a device it is skipped with "no CUDA
device" (tests/gpu.py); on an H200 with 1.6.0 it showed the ValueError.
"""

from __future__ import annotations

from gpushim.patches.warp.empty_slice import patch
from tests.gpu import on_gpu
from tests.support import gate
from tests.warp.gpu_scripts import run_script

GATE = gate(patch)

REGRESSION_TEST = """
import numpy as np
import warp as wp

wp.config.quiet = True
np_arr = np.zeros(dtype=float, shape=(4, 3, 2))
arr = wp.array(np_arr, dtype=float, device="cuda")
try:
    slice_g = arr[1:1, :0, -1:-1]
except RuntimeError as error:
    result = {"raises": str(error), "device": str(arr.device)}
else:
    result = {"shape": list(slice_g.shape), "device": str(slice_g.device), "address": bool(slice_g.ptr)}
    try:
        result["host"] = list(slice_g.numpy().shape)
    except Exception as error:
        result["host"] = type(error).__name__
"""


@on_gpu
@GATE.affected_only
def test_needed_the_empty_slice_raises_without_gpushim(tmp_path):
    result = run_script(REGRESSION_TEST, tmp_path, gpushim=False)
    assert result["device"].startswith("cuda")
    assert result["raises"] == "Invalid indexing in slice: 1:1:1"


@on_gpu
@GATE.recorded_only
def test_the_empty_slice_has_shape_0_0_0_with_gpushim_and_its_host_copy_fails_as_in_1_9_1(tmp_path):
    result = run_script(REGRESSION_TEST, tmp_path, gpushim=True)
    assert result["device"].startswith("cuda")
    assert result == {"shape": [0, 0, 0], "device": result["device"], "address": True, "host": "ValueError"}
