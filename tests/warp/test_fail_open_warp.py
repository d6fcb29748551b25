"""Fail-open with the real Warp: what each Warp patch replaces pickles and copies as the original does.

Read through its owner (``warp.types.array._init_from_data``) and, for the
array class, through a CPU array, a bound method: no GPU is used.
"""

from __future__ import annotations

import pytest

from gpushim.patches.warp.cai_missing_strides import patch
from tests.fail_open import applying_here, pickling_differences
from tests.support import gate

GATE = gate(patch)

import warp  # noqa: E402

AFFECTED_HERE = applying_here("warp")


@pytest.fixture(scope="module")
def cpu_array():
    warp.config.quiet = True
    return warp.zeros(3, dtype=warp.float32, device="cpu")


@pytest.mark.skipif(not AFFECTED_HERE, reason=f"no Warp patch applies to {' '.join(GATE.release)}")
@pytest.mark.parametrize("id", AFFECTED_HERE)
def test_what_a_patch_replaces_pickles_and_copies_as_the_original_does(id, cpu_array):
    assert pickling_differences(id, instances={type(cpu_array): cpu_array}) == {}
