"""warp.launch_errors on a CUDA device: a block of 2048 threads, which the driver refuses, as the fix's tests launch.

NVIDIA/warp@e08be5ca3 (1.15.0) adds ``test_launch_device_block_dim_failure``
and ``test_launch_cmd_block_dim_failure``: ``wp.launch(..., block_dim=2048)``,
and the replay of a launch recorded so, must raise RuntimeError.  Here a
kernel that writes 1 is launched both ways in a fresh interpreter: without
gpushim on the affected releases both return and the output stays 0; with
gpushim, imported first, on them and on 1.15.0, both raise and the output
stays 0.  Without a device it is skipped with "no CUDA device"
(tests/gpu.py); it has not run on a device yet.
"""

from __future__ import annotations

import pytest

from gpushim.patches.warp.launch_errors import patch
from tests.gpu import on_gpu
from tests.support import gate
from tests.warp.gpu_scripts import run_script

GATE = gate(patch)

OVERSIZED_BLOCK = """
import warp as wp

wp.config.quiet = True


@wp.kernel
def write_one(out: wp.array(dtype=wp.int32)):
    out[wp.tid()] = 1


out = wp.zeros(1, dtype=wp.int32, device="cuda:0")
try:
    launched = wp.launch(write_one, dim=1, outputs=[out], device="cuda:0", block_dim=2048, record_cmd={recorded})
    if {recorded}:
        launched.launch()
    wp.synchronize_device("cuda:0")
    result = {{"raised": None}}
except RuntimeError as error:
    result = {{"raised": "RuntimeError", "names the kernel": "write_one" in str(error)}}
result["out"] = out.numpy().tolist()
"""


@on_gpu
@GATE.affected_only
@pytest.mark.parametrize("recorded", [False, True])
def test_needed_the_refused_launch_returns_and_the_output_stays_stale(tmp_path, recorded):
    assert run_script(OVERSIZED_BLOCK.format(recorded=recorded), tmp_path, gpushim=False) == {
        "raised": None,
        "out": [0],
    }


@on_gpu
@GATE.recorded_only
@pytest.mark.parametrize("recorded", [False, True])
def test_the_refused_launch_raises_with_gpushim_as_in_1_15_0(tmp_path, recorded):
    assert run_script(OVERSIZED_BLOCK.format(recorded=recorded), tmp_path, gpushim=True) == {
        "raised": "RuntimeError",
        "names the kernel": True,
        "out": [0],
    }
