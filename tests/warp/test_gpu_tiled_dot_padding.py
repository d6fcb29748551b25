"""warp.tiled_dot_padding on a CUDA device, where the iterative solvers usually run.

The same dot products as the CPU corpus, over scratch filled with 1000, with
every array on ``cuda``: the released later passes read the stale value, the
patched ones pad with zeros.  Without a device these tests are skipped with
"no CUDA device" (tests/gpu.py), and none of them has run yet.
"""

from __future__ import annotations

import pytest

from gpushim.patches.warp.tiled_dot_padding import patch
from tests.gpu import on_gpu
from tests.support import applied, gate
from tests.warp.tiled_dot_corpus import DOTS, exact, tiled_dot

GATE = gate(patch)


@on_gpu
@GATE.affected_only
def test_needed_later_passes_sum_stale_scratch_on_the_device_without_gpushim():
    assert tiled_dot(*DOTS["307,207, tiles of 512"], device="cuda") != exact(1, 307207)


@on_gpu
@GATE.affected_only
@pytest.mark.parametrize("name", list(DOTS))
def test_effective_every_dot_product_is_exact_on_the_device_with_gpushim(name):
    columns, length = DOTS[name][2:4]
    with applied(patch):
        assert tiled_dot(*DOTS[name], device="cuda") == exact(columns, length)
