"""cupy.asarray_pinned_source on a CUDA device: the copy from pinned memory reads what the next owner wrote.

The CPU tests show which array the wrapper holds, for which calls; what a
device adds is the race itself.  A kernel that spins for about half a second
keeps a stream busy; behind it ``cupy.asarray`` queues the copy of a pinned
NumPy array of 1.0, which is then dropped, and a new pinned array of its size
is filled with 2.0 (``asarray_pinned_source.dropped_while_queued``, which the
probe runs too).  Before 13.4.0 the pool hands the new array the dropped
one's block, and the copy, when it runs, reads 2.0.  Without a device they
are skipped with "no CUDA device" (tests/gpu.py), and none of them has run
yet.
"""

from __future__ import annotations

from gpushim.patches.cupy.asarray_pinned_source import dropped_while_queued, patch
from tests.gpu import on_gpu
from tests.support import gate

GATE = gate(patch)


def race():
    import cupy
    import cupyx
    import numpy

    return dropped_while_queued(cupy, cupyx, numpy, cupy.cuda.Stream(non_blocking=True))


@on_gpu
@GATE.affected_only
def test_needed_the_copy_reads_the_next_pinned_array_s_values_without_gpushim():
    import cupy

    died, copied, _ = race()
    assert died
    assert int(cupy.count_nonzero(copied == 2.0)) > 0


@on_gpu
@GATE.recorded_only
def test_the_source_lives_until_its_copy_has_run_and_the_copy_holds_its_values(this_patch):
    died, copied, _ = race()
    assert not died
    assert bool((copied == 1.0).all())


@on_gpu
@GATE.recorded_only
def test_the_source_is_released_once_its_copy_has_run(this_patch):
    """The watch list lets it go at the next pinned allocation after the event, as it does its staging buffers."""
    import cupyx

    _, _, held = race()
    cupyx.empty_pinned(1)
    assert held() is None
