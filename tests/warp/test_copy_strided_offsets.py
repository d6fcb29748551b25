"""warp.copy_strided_offsets: ``wp.copy`` ranges between non-contiguous arrays (NVIDIA/warp GH-1533).

The corpus copies on Warp's CPU device between contiguous arrays and strided
views (every 2nd, every 3rd from 1) of float32, float64, int32, uint8 and vec3
elements, over ranges that span both arrays, sit inside them, reach either
end, or pass an end or start before it (which raise); sources shorter and
longer than their destination; 2-d and 3-d strided arrays, whole and with a
range; indexed arrays; element types of other sizes; and gradients through
``Tape.backward`` of strided copies with distinct offsets.  It records the
destination's values and its whole base, so writes outside the range show,
or the error raised.  Negative offsets between two contiguous arrays are left
out: neither the releases nor 1.15.0 check them, and they read or write out of
bounds.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpushim.patches.warp.copy_strided_offsets import patch
from tests.support import applied, gate, record_corpus
from tests.warp.copy_corpus import LAYOUTS, MARKER, laid_out, listed, raised, values, warp_module

GATE = gate(patch)

# name: (dest_offset, src_offset, count), between arrays of 6 elements
RANGES = {
    "whole": (0, 0, 0),
    "whole, count given": (0, 0, 6),
    "2 from 1 to 1": (1, 1, 2),
    "3 from 2 to 0": (0, 2, 3),
    "2 from 0 to 3": (3, 0, 2),
    "to the last element": (5, 0, 1),
    "from the last element": (0, 5, 1),
    "to both ends": (2, 2, 4),
    "past the source's end": (0, 1, 6),
    "past the destination's end": (1, 0, 6),
    "count past both": (0, 0, 7),
    "source offset at the end": (0, 6, 1),
    "destination offset at the end": (6, 0, 1),
}

NEGATIVE = {
    "negative source offset": (0, -1, 2),
    "negative destination offset": (-1, 0, 2),
}

DTYPES = ("float32", "float64", "int32", "uint8", "vec3")


def copied(dest_layout, src_layout, dest_offset, src_offset, count, dtype="float32", lengths=(6, 6)):
    """What ``wp.copy`` leaves in the destination and its base, or the error it raises."""
    warp = warp_module()
    dest_length, src_length = lengths
    dest, dest_base = laid_out(np.zeros_like(values(dest_length, dtype)), dest_layout, dtype)
    src, _ = laid_out(values(src_length, dtype), src_layout, dtype)
    try:
        warp.copy(dest, src, dest_offset=dest_offset, src_offset=src_offset, count=count)
    except Exception as error:
        return {"raised": raised(error), "dest base": listed(dest_base)}
    return {"dest": listed(dest), "dest base": listed(dest_base)}


def strided_2d(step):
    """A (4, 3) float32 view of every ``step``-th column of a (4, 3 * step) array."""
    warp = warp_module()
    base = np.arange(1, 1 + 4 * 3 * step, dtype=np.float32).reshape(4, 3 * step)
    return warp.array(base, dtype=warp.float32, device="cpu")[:, ::step]


def strided_3d():
    """A (2, 2, 3) float32 view of a (2, 4, 6) array."""
    warp = warp_module()
    base = np.arange(1, 49, dtype=np.float32).reshape(2, 4, 6)
    return warp.array(base, dtype=warp.float32, device="cpu")[:, ::2, 1::2]


def copied_nd(dest, src, **options):
    warp = warp_module()
    try:
        warp.copy(dest, src, **options)
    except Exception as error:
        return {"raised": raised(error), "dest": listed(dest)}
    return {"dest": listed(dest)}


def multidimensional_outcomes():
    warp = warp_module()
    zeros = warp.zeros
    outcomes = {}
    for name, options in {"whole": {}, "count 2": {"count": 2}, "dest_offset 1": {"dest_offset": 1}}.items():
        outcomes[f"2-d strided to 2-d, {name}"] = copied_nd(zeros((4, 3), dtype=warp.float32), strided_2d(2), **options)
        outcomes[f"2-d to 2-d strided, {name}"] = copied_nd(strided_2d(3), strided_2d(1), **options)
        outcomes[f"3-d strided to 3-d, {name}"] = copied_nd(
            zeros((2, 2, 3), dtype=warp.float32), strided_3d(), **options
        )
        contiguous = warp.array(np.arange(1, 13, dtype=np.float32).reshape(4, 3), device="cpu")
        outcomes[f"2-d to 2-d, both contiguous, {name}"] = copied_nd(
            zeros((4, 3), dtype=warp.float32), contiguous, **options
        )
    outcomes["2-d strided to 2-d of another shape"] = copied_nd(zeros((3, 4), dtype=warp.float32), strided_2d(2))
    outcomes["2-d strided to 1-d of its size"] = copied_nd(zeros(12, dtype=warp.float32), strided_2d(2))
    outcomes["2-d strided to a larger 2-d"] = copied_nd(zeros((5, 3), dtype=warp.float32), strided_2d(2))
    return outcomes


def indexed_outcomes():
    warp = warp_module()
    outcomes = {}
    for name, options in {"whole": {}, "1 from 1": {"src_offset": 1, "count": 1}, "count 2": {"count": 2}}.items():
        base = warp.array([10, 11, 12, 13, 14, 15], dtype=warp.int32, device="cpu")
        indexed = base[warp.array([0, 2, 4], dtype=warp.int32, device="cpu")]
        outcomes[f"indexed to contiguous, {name}"] = copied_nd(
            warp.zeros(3, dtype=warp.int32, device="cpu"), indexed, **options
        )
        target = warp.zeros(6, dtype=warp.int32, device="cpu")
        into = target[warp.array([1, 3, 5], dtype=warp.int32, device="cpu")]
        source = warp.array([7, 8, 9], dtype=warp.int32, device="cpu")
        outcome = copied_nd(into, source, **options)
        outcome["dest base"] = listed(target)
        outcomes[f"contiguous to indexed, {name}"] = outcome
    return outcomes


def mixed_type_outcomes():
    warp = warp_module()
    outcomes = {}
    for dest_type in ("int32", "float64"):
        for name, (dest_offset, src_offset, count) in {"whole": (0, 0, 0), "2 from 1 to 2": (2, 1, 2)}.items():
            dest, base = laid_out(np.zeros(6, dtype=np.float64), "every 2nd", dest_type)
            src, _ = laid_out(values(6, "float32"), "every 3rd from 1", "float32")
            try:
                warp.copy(dest, src, dest_offset=dest_offset, src_offset=src_offset, count=count)
                outcomes[f"float32 to {dest_type}, {name}"] = {"dest base": listed(base)}
            except Exception as error:
                outcomes[f"float32 to {dest_type}, {name}"] = {"raised": raised(error), "dest base": listed(base)}
    return outcomes


def gradient_outcomes():
    """Gradients through ``Tape.backward`` of a strided copy, seeded with distinct values."""
    warp = warp_module()
    outcomes = {}
    for dest_layout in LAYOUTS:
        for src_layout in ("every 2nd", "every 3rd from 1"):
            for name, (dest_offset, src_offset, count) in {
                "2 from 1 to 3": (3, 1, 2),
                "3 from 3 to 0": (0, 3, 3),
            }.items():
                dest, _ = laid_out(np.zeros(6, dtype=np.float32), dest_layout, "float32", requires_grad=True)
                src, src_base = laid_out(values(6, "float32"), src_layout, "float32", requires_grad=True)
                src.grad.assign(values(6, "float32", first=100))
                tape = warp.Tape()
                with tape:
                    warp.copy(dest, src, dest_offset=dest_offset, src_offset=src_offset, count=count)
                forward = {"dest": listed(dest), "dest grad": listed(dest.grad)}
                src.grad.zero_()
                tape.backward(grads={dest: warp.array(values(6, "float32", first=10), device="cpu")})
                backward = {"src grad": listed(src.grad), "src base grad": listed(src_base.grad)}
                tape.zero()
                zeroed = {"src base grad": listed(src_base.grad)}
                key = f"{src_layout} to {dest_layout}, {name}"
                outcomes[key] = {"forward": forward, "backward": backward, "after tape.zero": zeroed}
    return outcomes


def run_corpus():
    outcomes = {}
    for dest_layout in LAYOUTS:
        for src_layout in LAYOUTS:
            pair = f"{src_layout} to {dest_layout}"
            for name, (dest_offset, src_offset, count) in RANGES.items():
                for dtype in DTYPES if name in ("whole", "2 from 1 to 1", "past the source's end") else ("float32",):
                    outcomes[f"{pair}, {name}, {dtype}"] = copied(
                        dest_layout, src_layout, dest_offset, src_offset, count, dtype
                    )
            if pair != "contiguous to contiguous":
                for name, (dest_offset, src_offset, count) in NEGATIVE.items():
                    outcomes[f"{pair}, {name}"] = copied(dest_layout, src_layout, dest_offset, src_offset, count)
            for name, lengths in {"shorter source": (6, 4), "longer source": (4, 6)}.items():
                for count in (0, 4):
                    outcomes[f"{pair}, {name}, count {count}"] = copied(
                        dest_layout, src_layout, 0, 0, count, lengths=lengths
                    )
    outcomes.update(multidimensional_outcomes())
    outcomes.update(indexed_outcomes())
    outcomes.update(mixed_type_outcomes())
    outcomes.update(gradient_outcomes())
    return outcomes


def probe_copy():
    """The probe's copy: two elements of ``arange(10)[::2]`` from 2 into zeros(5) at 1."""
    outcome = copied("contiguous", "every 2nd", 1, 2, 2, lengths=(5, 5))
    return outcome["dest"]


@GATE.affected_only
def test_needed_a_strided_copy_with_offsets_copies_the_whole_array_without_gpushim():
    assert probe_copy() == [1.0, 2.0, 3.0, 4.0, 5.0]


@GATE.affected_only
def test_effective_a_strided_copy_with_offsets_copies_the_range_with_gpushim():
    with applied(patch):
        assert probe_copy() == [0.0, 3.0, 4.0, 0.0, 0.0]


@GATE.affected_only
def test_a_strided_destination_keeps_what_lies_outside_the_range():
    with applied(patch):
        outcome = copied("every 2nd", "contiguous", 1, 1, 2)
    assert outcome["dest base"] == [0, MARKER, 2, MARKER, 3, MARKER, 0, MARKER, 0, MARKER, 0, MARKER]


@GATE.affected_only
def test_a_shorter_strided_source_fills_the_head_of_the_destination():
    with applied(patch):
        assert copied("every 2nd", "every 3rd from 1", 0, 0, 0, lengths=(6, 4))["dest"] == [1, 2, 3, 4, 0, 0]


@GATE.affected_only
@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"count": 2}, "only supported for 1-D non-contiguous arrays"),
        ({"src_offset": 1}, "only supported for 1-D non-contiguous arrays"),
    ],
)
def test_a_range_of_a_multidimensional_strided_array_raises(options, message):
    warp = warp_module()
    with applied(patch), pytest.raises(RuntimeError, match=message):
        warp.copy(warp.zeros((4, 3), dtype=warp.float32, device="cpu"), strided_2d(2), **options)


@GATE.affected_only
def test_a_range_past_the_end_of_a_strided_source_raises_and_writes_nothing():
    with applied(patch):
        outcome = copied("every 2nd", "every 2nd", 0, 1, 6)
    assert outcome["raised"].startswith("RuntimeError: Trying to copy a range of 6 element(s) from source offset (1)")
    assert set(outcome["dest base"][::2]) == {0}


@GATE.affected_only
def test_gradients_reach_the_source_range_the_copy_read():
    with applied(patch):
        outcome = gradient_outcomes()["every 2nd to contiguous, 2 from 1 to 3"]
    assert outcome["backward"]["src grad"] == [0, 13, 14, 0, 0, 0]


@GATE.affected_only
def test_contiguous_copies_are_left_to_the_release():
    warp = warp_module()
    with applied(patch):
        assert warp.copy.__wrapped__ is not warp.copy
        outcome = copied("contiguous", "contiguous", 3, 0, 2)
    assert outcome["dest"] == [0, 0, 0, 1, 2, 0]


@GATE.recorded_only
def test_faithful_corpus_matches_the_fixed_release():
    """Recorded patched on the affected releases and unpatched on 1.15.0; the matrix compares the files."""
    outcomes = record_corpus(patch, run_corpus)
    assert outcomes["every 2nd to contiguous, 2 from 1 to 1, float32"]["dest"] == [0, 2, 3, 0, 0, 0]
