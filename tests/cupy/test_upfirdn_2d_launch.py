"""cupy.upfirdn_2d_launch: 2-D ``upfirdn`` launches its kernel with grid and block swapped (cupy/cupy#9352).

The launch configuration is the host's, so everything runs on the CPU:
``upfirdn``'s code on NumPy arrays, the kernels recorded as launched
(``upfirdn_corpus``).  That a block over CUDA's limits fails to launch, and
what the kernel computes once launched right, only a device shows:
``test_gpu_upfirdn_2d_launch.py``.
"""

from __future__ import annotations

import pytest

pytest.importorskip("cupy")

import math

import wrapt

from gpushim.patches.cupy.upfirdn_2d_launch import patch
from tests.cupy import upfirdn_corpus
from tests.cupy.signal_tests import signal_or_skip
from tests.support import applied, gate, record_corpus, refusal

GATE = gate(patch)
signal = signal_or_skip()

TWO_D = [case for case, (shape, *_) in upfirdn_corpus.cases().items() if len(upfirdn_corpus.SHAPES[shape]) == 2]
WIDE = "x=(2, 48000) axis=-1 h=2 up/down=1/1 float64"


def launch(case, outcomes):
    ((name, grid, block, arguments),) = outcomes[case]["launches"]
    return name, grid, block, arguments


@GATE.affected_only
def test_needed_a_wide_input_asks_for_a_block_over_cuda_s_1024_threads_without_gpushim():
    _, grid, block, _ = launch(WIDE, upfirdn_corpus.run())
    assert (grid, block) == ([8, 8], [1, 6001])
    assert math.prod(block) > 1024


@GATE.affected_only
def test_needed_every_2d_launch_has_grid_and_block_swapped_without_gpushim():
    outcomes = upfirdn_corpus.run()
    assert {launch(case, outcomes)[1] == [8, 8] for case in TWO_D} == {True}


@GATE.affected_only
def test_effective_blocks_of_8_by_8_threads_over_a_grid_covering_the_output(this_patch):
    outcomes = upfirdn_corpus.run()
    for case in TWO_D:
        _, grid, block, arguments = launch(case, outcomes)
        rows, columns = outcomes[case]["out"][0]
        assert (case, block, grid) == (case, [8, 8], [-(-rows // 8), -(-columns // 8)])
        assert arguments[-2:] == [rows, columns]


@GATE.affected_only
def test_effective_only_the_order_of_2d_launches_changes():
    released = upfirdn_corpus.run()
    with applied(patch):
        patched = upfirdn_corpus.run()
    for case in released:
        if case in TWO_D:
            name, grid, block, arguments = launch(case, released)
            assert launch(case, patched) == (name, block, grid, arguments)
        else:
            assert patched[case] == released[case]


@GATE.affected_only
def test_effective_a_call_that_does_not_bind_is_refused_by_the_release(this_patch):
    filtering = object.__new__(signal._upfirdn._UpFIRDn)
    patched, released = refusal(filtering.apply_filter, None, axis=0, axes=1)
    assert patched == released


@GATE.unaffected_only
def test_harmless_not_affected_and_apply_filter_is_cupys_own(gpushim_patched):
    assert gpushim_patched.record(patch.id)["state"] == "not-affected"
    assert not isinstance(vars(signal._upfirdn._UpFIRDn)["apply_filter"], wrapt.ObjectProxy)


@GATE.recorded_only
def test_faithful_launches_of_the_corpus():
    """Patched old releases record what unpatched 14.0.0 records; the matrix compares the files."""
    outcomes = record_corpus(patch, upfirdn_corpus.run)
    assert len(outcomes) == len(upfirdn_corpus.cases()) == 180
