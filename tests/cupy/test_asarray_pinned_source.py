"""cupy.asarray_pinned_source: a copy from pinned memory holds its source until the copy has run (cupy/cupy#8789).

Without a driver, CuPy's copy of host data stops at its first call to the
driver, before the release reaches its test for pinned memory, so the
release cannot show the race here (``test_gpu_asarray_pinned_source.py``
does, on a device).  What the CPU shows is the wrapper's part, on the
installed wrapper with stand-ins for the release's copy, the pinned memory
and the stream: which array it hands to the watch list, with an event of
which stream, for which calls; and that the calls it leaves alone come out
exactly as 13.4.0's (``host_copies``).
"""

import types

import pytest

cupy = pytest.importorskip("cupy")

import numpy

from gpushim.patches.cupy.asarray_pinned_source import _fixed, patch
from gpushim.wrappers import is_wrapper
from tests.cupy import host_copies
from tests.cupy.fusion_tracing import untouched_allocator
from tests.support import gate, record_corpus

GATE = gate(patch)

GRID = numpy.arange(6.0).reshape(2, 3)


class StandIns:
    """The release's copy, CuPy's pinned memory and its current stream, as the wrapper sees them, recording."""

    def __init__(self, pinned):
        self.pinned = {array.ctypes.data for array in pinned}
        self.queried, self.watched, self.copies = [], [], []
        self.stream = types.SimpleNamespace(record=lambda: ("event", len(self.copies)))

    def is_memory_pinned(self, pointer):
        self.queried.append(pointer)
        return pointer in self.pinned

    def _add_to_watch_list(self, event, held):
        self.watched.append((event, held))

    def release(self, obj, dtype=None, copy=True, order="K", subok=False, ndmin=0, blocking=False):
        """The release's copy: a device array of the input's shape, on memory nobody touches."""
        self.copies.append(obj)
        shape = numpy.shape(obj)
        return cupy.empty((1,) * (ndmin - len(shape)) + shape)

    def call(self, *args, **kwargs):
        """``cupy.asarray``'s call of ``_core.array`` through the patch's wrapper, with these stand-ins."""
        cupy_module = types.SimpleNamespace(cuda=types.SimpleNamespace(get_current_stream=lambda: self.stream))
        wrapper = _fixed(numpy, cupy_module, self)
        with untouched_allocator():
            return wrapper(self.release, None, args, kwargs)


def test_a_pinned_source_is_held_with_an_event_recorded_after_its_copy():
    stand_ins = StandIns(pinned=[GRID])
    stand_ins.call(GRID)
    assert stand_ins.watched == [(("event", 1), GRID)]
    assert stand_ins.watched[0][1] is GRID


@pytest.mark.parametrize(
    "kwargs", [{"ndmin": 4}, {"dtype": "float64"}, {"order": "C"}, {"order": "A"}, {"copy": False}], ids=repr
)
def test_a_pinned_source_needing_no_conversion_is_held_itself(kwargs):
    stand_ins = StandIns(pinned=[GRID])
    stand_ins.call(GRID, **kwargs)
    assert [held for _, held in stand_ins.watched] == [GRID]
    assert stand_ins.watched[0][1].ctypes.data == GRID.ctypes.data


def test_a_view_of_pinned_memory_is_held_as_the_release_reads_it():
    """A column slice is neither C- nor F-contiguous: the release copies it to pageable memory first."""
    rows = GRID[1:]
    stand_ins = StandIns(pinned=[rows, GRID[:, ::2]])
    stand_ins.call(rows)
    stand_ins.call(GRID[:, ::2])
    assert [held.tolist() for _, held in stand_ins.watched] == [[[3.0, 4.0, 5.0]]]


@pytest.mark.parametrize(
    "source, kwargs",
    [
        (GRID, {"dtype": "float32"}),
        (GRID, {"order": "F"}),
        (GRID.astype(">f8"), {}),
    ],
    ids=["another dtype", "another order", "big-endian"],
)
def test_a_pinned_source_the_release_converts_first_is_not_held(source, kwargs):
    stand_ins = StandIns(pinned=[source])
    stand_ins.call(source, **kwargs)
    assert stand_ins.watched == []


@pytest.mark.parametrize(
    "source, kwargs",
    [(GRID, {"blocking": True}), (numpy.array(2.5), {}), (numpy.float64(2.5), {}), ([1.0, 2.0], {})],
    ids=["blocking", "0-d", "a NumPy scalar", "a list"],
)
def test_what_the_release_waits_for_fills_or_copies_otherwise_asks_nothing(source, kwargs):
    stand_ins = StandIns(pinned=[source] if isinstance(source, numpy.ndarray) else [])
    stand_ins.call(source, **kwargs)
    assert (stand_ins.queried, stand_ins.watched) == ([], [])


def test_pageable_memory_costs_one_query_and_holds_nothing():
    stand_ins = StandIns(pinned=[])
    stand_ins.call(GRID)
    assert (stand_ins.queried, stand_ins.watched) == ([GRID.ctypes.data], [])


def test_a_call_that_does_not_bind_is_the_release_s_own():
    stand_ins = StandIns(pinned=[GRID])
    with pytest.raises(TypeError):
        stand_ins.call(GRID, nonsense=1)
    assert stand_ins.watched == []


@GATE.affected_only
def test_effective_cupy_s_entry_points_go_through_the_wrapper(this_patch):
    from cupy import _core

    assert is_wrapper(_core.array)
    assert _core.core.array is _core.array


@GATE.unaffected_only
def test_harmless_not_affected_and_nothing_of_it_is_in_place(gpushim_patched):
    """``_core.array`` may be another patch's wrapper (``cupy.asarray_blocking`` on 13.5.x), never this one's."""
    state = next(r for r in gpushim_patched.status() if r["id"] == patch.id)["state"]
    assert state == "not-affected"
    assert gpushim_patched.registry().journal(patch.id) is None


@GATE.recorded_only
def test_faithful_host_copies_come_out_as_13_4_0_s(gpushim_patched):
    """Patched old releases record what unpatched 13.4.0 records: allocations, results, errors, warnings."""
    outcomes = record_corpus(patch, lambda: host_copies.run(host_copies.cases()))
    assert len(outcomes) == len(host_copies.cases())
