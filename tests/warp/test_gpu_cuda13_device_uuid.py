"""warp.cuda13_device_uuid on a CUDA device: ``cuda:0``'s UUID as Warp reads it, and as torch does.

NVIDIA/warp GH-851, "[BUG] Fix driver entry point errors", reads: "Look into
issues when running a version of Warp built with CUDA Toolkit 12.x on
R580."  In gpushim's first device run (2026-11-26, driver 580.159.04, CUDA
13.0) Warp 1.6.0 printed three ``Warp CUDA error`` lines at ``wp.init()``,
and its ``cuda:0`` had the UUID ``GPU-00000000-0000-0000-0000-000000000000``.
The tests marked ``gpu`` read ``cuda:0``'s UUID in a fresh interpreter,
whose ``wp.init()`` is the first: all zeros without gpushim on the affected
releases, and torch's (``torch.cuda.get_device_properties(0).uuid``, by
which torch users pair devices) with gpushim, imported before or after
Warp, on the affected releases and 1.8.1; and the driver's UUID as gpushim
reads it must be torch's too.  They need a driver of CUDA 13 or later and
are skipped, saying so, with an older one; without a device they are
skipped with "no CUDA device" (tests/gpu.py).  The probe has a device
branch only.
"""

from __future__ import annotations

import pytest

from gpushim import ProbeCannotRun
from gpushim.patches.warp.cuda13_device_uuid import cuda13_driver, patch
from tests.gpu import cuda_torch, on_gpu
from tests.support import answer_in_fresh_python, gate

GATE = gate(patch)

UNREAD = "GPU-00000000-0000-0000-0000-000000000000"


def a_cuda13_driver():
    """The driver, where it supports CUDA 13 or later; the test is skipped, saying why, otherwise."""
    try:
        return cuda13_driver()
    except ProbeCannotRun as why:
        pytest.skip(str(why))


def torchs_uuid() -> str:
    """``cuda:0``'s UUID as torch reads it, in Warp's format."""
    return f"GPU-{cuda_torch().cuda.get_device_properties(0).uuid}"


def warps_uuid(prelude: str) -> str:
    """``cuda:0``'s UUID as Warp reads it in a fresh interpreter that runs ``prelude`` first."""
    code = f"{prelude}\nimport warp\nwarp.config.quiet = True\nwarp.init()"
    return answer_in_fresh_python(code, "warp.get_cuda_device(0).uuid")


@on_gpu
@GATE.affected_only
def test_needed_warp_reads_all_zeros_on_a_cuda13_driver_without_gpushim():
    a_cuda13_driver()
    assert warps_uuid("") == UNREAD != torchs_uuid()


@on_gpu
@GATE.recorded_only
@pytest.mark.parametrize("prelude", ["import gpushim.auto", "import warp\nimport gpushim.auto"])
def test_warp_reads_torchs_uuid_as_the_fixed_release(prelude):
    a_cuda13_driver()
    assert warps_uuid(prelude) == torchs_uuid()


@on_gpu
@GATE.recorded_only
def test_the_drivers_uuid_as_gpushim_reads_it_is_torchs():
    assert a_cuda13_driver().uuid(0) == bytes(cuda_torch().cuda.get_device_properties(0).uuid.bytes)
