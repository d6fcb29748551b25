"""cupy.sosfilt_zf_axes on a CUDA device: a 1-D signal filtered in two blocks, chained by ``zf``.

The CPU tests show ``zf``'s shape and where each value lands; a device adds
the kernels' values, and the use ``zf`` is for: filtering a signal block by
block must give what filtering it whole gives.  Without gpushim, ``zf`` is
``(4, n_sections)`` and the second block refuses it (or, with four
sections, reads it wrong).  Without a device the tests are skipped with "no
CUDA device" (tests/gpu.py), and none of them has run yet.
"""

from __future__ import annotations

import numpy
import pytest

from gpushim.patches.cupy.sosfilt_zf_axes import patch
from tests.cupy import sosfilt_corpus
from tests.gpu import on_gpu
from tests.support import gate

GATE = gate(patch)


def in_two_blocks(sections, dtype):
    """``(sosfilt of the whole, sosfilt of two blocks chained by zf)`` of a 2,500-sample signal, as NumPy arrays."""
    import cupy
    import cupyx.scipy.signal

    sos, x, _, zi = sosfilt_corpus.arguments("(2500,)", sections, dtype, "zi", cupy)
    whole, _ = cupyx.scipy.signal.sosfilt(sos, x, zi=zi)
    first, zf = cupyx.scipy.signal.sosfilt(sos, x[:1200], zi=zi)
    second, _ = cupyx.scipy.signal.sosfilt(sos, x[1200:], zi=zf)
    return whole.get(), cupy.concatenate([first, second]).get()


@on_gpu
@GATE.affected_only
def test_needed_zf_cannot_continue_the_filter_without_gpushim():
    import cupy
    import cupyx.scipy.signal

    sos, x, _, zi = sosfilt_corpus.arguments("(10,)", 2, "float64", "zi", cupy)
    assert cupyx.scipy.signal.sosfilt(sos, x, zi=zi)[1].shape == (4, 2)


@on_gpu
@GATE.recorded_only
@pytest.mark.parametrize("sections", sosfilt_corpus.SECTIONS)
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_filtering_in_two_blocks_is_filtering_whole(sections, dtype, this_patch):
    whole, blocks = in_two_blocks(sections, dtype)
    assert numpy.allclose(blocks, whole, rtol=1e-10, atol=1e-10)
