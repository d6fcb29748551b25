"""cupy.get_stream_packing on a CUDA device: the copy on the stream given reads the packed array too early.

The CPU tests show which stream the wrapper makes current for which calls;
what a device adds is the race.  ``a[:, ::2].get(stream=s)`` runs while the
current stream spins for about half a second, and the block its packing gets
from the current stream's pool was left holding -1
(``get_stream_packing.packed_while_busy``, which the probe runs too).
Before 13.3.0 the packing waits behind the spinning kernel while the copy
on ``s`` runs at once, and returns the -1s.  Without a device they are
skipped with "no CUDA device" (tests/gpu.py), and none of them has run yet.
"""

from __future__ import annotations

import numpy

from gpushim.patches.cupy.get_stream_packing import packed_while_busy, patch
from tests.gpu import on_gpu
from tests.support import gate

GATE = gate(patch)


def copied_and_expected():
    import cupy

    return packed_while_busy(cupy, numpy)


@on_gpu
@GATE.affected_only
def test_needed_the_copy_reads_the_packed_array_before_it_is_packed_without_gpushim():
    copied, _ = copied_and_expected()
    assert numpy.count_nonzero(copied == -1.0) > 0


@on_gpu
@GATE.recorded_only
def test_the_copy_holds_the_array_s_values(this_patch):
    copied, expected = copied_and_expected()
    assert copied.tolist() == expected.tolist()
