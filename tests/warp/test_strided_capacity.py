"""warp.strided_capacity: arrays with explicit strides whose largest is not the first (NVIDIA/warp GH-404).

The corpus allocates arrays on Warp's CPU device with ``wp.empty``, ``wp.zeros``
and ``wp.full`` for row-major, column-major, padded, permuted 3-d and all-zero
strides, and float32, float64, vec3 and uint8 elements.  It records each
array's shape, strides, capacity and contiguity and, for ``zeros`` and
``full``, the values Warp reads back; the affected releases run it only
patched, so nothing is written past an allocation.  Layouts where two
strides tie for the largest are left out: 1.6.0 sizes them by the first of the
two, so ``(1, 4)`` with strides ``(1, 1)`` elements overflows there too.
"""

from __future__ import annotations

import numpy as np

from gpushim.patches.warp.strided_capacity import patch
from tests.support import applied, gate, record_corpus

GATE = gate(patch)

# name: shape, strides in elements (scaled by the element size per dtype)
LAYOUTS = {
    "row-major": ((2, 3), (3, 1)),
    "column-major": ((2, 3), (1, 2)),
    "padded rows": ((2, 3), (4, 1)),
    "padded columns": ((3, 2), (1, 4)),
    "3-d, last dim outermost": ((2, 3, 4), (4, 8, 1)),
    "3-d, middle dim outermost": ((2, 3, 4), (1, 8, 2)),
    "3-d, reversed": ((2, 3, 4), (1, 2, 6)),
    "all zero strides": ((2, 3), (0, 0)),
    "zero first stride": ((2, 3), (0, 1)),
    "empty first dim, column-major": ((0, 3), (1, 2)),
}

DTYPES = ("float32", "float64", "vec3", "uint8")


def _warp():
    import warp

    warp.config.quiet = True
    warp.init()
    return warp


def strided(make, shape, strides, dtype, *args):
    warp = _warp()
    dtype = getattr(warp, dtype)
    size = warp.types.type_size_in_bytes(dtype)
    return make(shape, *args, dtype=dtype, strides=tuple(stride * size for stride in strides), device="cpu")


def describe(array, values=False):
    outcome = {
        "shape": list(array.shape),
        "strides": list(array.strides),
        "capacity": array.capacity,
        "is_contiguous": array.is_contiguous,
    }
    if values:
        outcome["values"] = array.numpy().tolist()
    return outcome


def run_corpus():
    warp = _warp()
    outcomes = {}
    for name, (shape, strides) in LAYOUTS.items():
        for dtype in DTYPES:
            outcomes[f"empty, {name}, {dtype}"] = describe(strided(warp.empty, shape, strides, dtype))
            outcomes[f"zeros, {name}, {dtype}"] = describe(strided(warp.zeros, shape, strides, dtype), values=True)
            outcomes[f"full, {name}, {dtype}"] = describe(strided(warp.full, shape, strides, dtype, 7), values=True)
    return outcomes


@GATE.affected_only
def test_needed_column_major_capacity_is_the_first_column_without_gpushim():
    array = strided(_warp().empty, (2, 3), (1, 2), "float32")
    assert array.capacity == 8


@GATE.affected_only
def test_effective_column_major_capacity_spans_the_layout_with_gpushim():
    with applied(patch):
        array = strided(_warp().empty, (2, 3), (1, 2), "float32")
    assert array.capacity == 24


@GATE.affected_only
def test_a_column_major_array_holds_every_value_it_is_given():
    warp = _warp()
    with applied(patch):
        array = strided(warp.full, (300, 400), (1, 300), "float64", 1.5)
        array.fill_(2.5)
    assert array.capacity == 300 * 400 * 8
    assert np.all(array.numpy() == 2.5)


@GATE.affected_only
def test_row_major_allocations_are_left_as_released():
    warp = _warp()
    with applied(patch):
        array = strided(warp.empty, (2, 3), (4, 1), "float32")
        plain = warp.empty((2, 3), dtype=warp.float32, device="cpu")
    assert (array.capacity, plain.capacity) == (32, 24)


@GATE.recorded_only
def test_faithful_corpus_matches_the_fixed_release():
    """Recorded patched on the affected releases and unpatched on 1.6.0; the matrix compares the files."""
    outcomes = record_corpus(patch, run_corpus)
    assert outcomes["empty, column-major, float32"]["capacity"] == 24
