"""Fail-open with the real DALI: what each DALI patch replaces pickles and copies as the original does.

DALI's tensor constructors are pybind11 methods, which do not pickle; the
patched ones must fail in the same way.  No GPU is used.
"""

from __future__ import annotations

import pytest

from gpushim.patches.dali.cai_stream_none import patch
from tests.fail_open import applying_here, pickling_differences
from tests.support import gate

GATE = gate(patch)

import nvidia.dali  # noqa: E402,F401

AFFECTED_HERE = applying_here("nvidia.dali")


@pytest.mark.skipif(not AFFECTED_HERE, reason=f"no DALI patch applies to {' '.join(GATE.release)}")
@pytest.mark.parametrize("id", AFFECTED_HERE)
def test_what_a_patch_replaces_pickles_and_copies_as_the_original_does(id):
    assert pickling_differences(id) == {}
