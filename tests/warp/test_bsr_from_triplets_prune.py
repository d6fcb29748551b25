"""warp.bsr_from_triplets_prune: ``prune_numerical_zeros=False`` prunes all the same (NVIDIA/warp GH-832).

The corpus builds matrices on Warp's CPU device with ``bsr_from_triplets`` and
``bsr_set_from_triplets`` (the flag by keyword, by position and left to its
default), from float32, float64 and int32 scalar blocks and 2 x 2 float32
blocks whose triplets are all zero, partly zero, negative zero, duplicated so
that they sum to zero, counted by a ``count`` array, masked by an existing
topology, given as a 3-d array, without values, and not contiguous; and from
calls Warp rejects.  It records each matrix's nnz, row offsets, columns and
block values, or the exception.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from gpushim.patches.warp.bsr_from_triplets_prune import patch
from tests.support import applied, gate, record_corpus

GATE = gate(patch)

import warp
import warp.sparse

warp.config.quiet = True


ROWS, COLUMNS = [1, 0, 2, 3], [0, 1, 2, 3]


def cpu(data, dtype=int):
    return warp.array(data, dtype=dtype, device="cpu")


def described(matrix) -> dict:
    nnz = matrix.nnz_sync()
    return {
        "nnz": nnz,
        "offsets": matrix.offsets.numpy()[: matrix.nrow + 1].tolist(),
        "columns": matrix.columns.numpy()[:nnz].tolist(),
        "values": matrix.values.numpy()[:nnz].tolist(),
    }


def outcome(build) -> dict:
    try:
        return described(build())
    except Exception as error:
        return {"raises": f"{type(error).__name__}: {error}"}


def from_triplets(values, *flag, **options):
    return lambda: warp.sparse.bsr_from_triplets(4, 4, cpu(ROWS), cpu(COLUMNS), values(), *flag, **options)


def set_from_triplets(block_type, values, *flag, rows=ROWS, columns=COLUMNS, dest=None, **options):
    def build():
        matrix = dest() if dest else warp.sparse.bsr_zeros(4, 4, block_type, device="cpu")
        warp.sparse.bsr_set_from_triplets(matrix, cpu(rows), cpu(columns), values(), *flag, **options)
        return matrix

    return build


def zeros(dtype):
    return lambda: warp.zeros(4, dtype=dtype, device="cpu")


def some_zero():
    return cpu([0.0, 1.5, 0.0, -2.0], warp.float32)


def negative_zero():
    return cpu([-0.0, -0.0, 3.0, -0.0], warp.float32)


def blocks_2x2():
    return cpu(np.array([np.zeros((2, 2)), [[0.0, 1.0], [0.0, 0.0]], np.zeros((2, 2)), np.eye(2)]), warp.mat22f)


def blocks_3d():
    return cpu(np.array([np.zeros((2, 2)), np.eye(2), np.zeros((2, 2)), -np.eye(2)]), warp.float32)


def strided():
    return cpu(np.zeros(8, np.float32), warp.float32)[::2]


def existing_topology():
    matrix = warp.sparse.bsr_zeros(4, 4, warp.float32, device="cpu")
    warp.sparse.bsr_set_from_triplets(matrix, cpu([1, 2]), cpu([0, 2]), cpu([5.0, 6.0], warp.float32))
    return matrix


CASES = {
    "bsr_from_triplets, zeros, prune=False": from_triplets(zeros(float), prune_numerical_zeros=False),
    "bsr_from_triplets, zeros, prune=True": from_triplets(zeros(float), prune_numerical_zeros=True),
    "bsr_from_triplets, zeros, default": from_triplets(zeros(float)),
    "bsr_from_triplets, zeros, False by position": from_triplets(zeros(float), False),
    "bsr_from_triplets, some zero, prune=False": from_triplets(some_zero, prune_numerical_zeros=False),
    "bsr_from_triplets, some zero, prune=True": from_triplets(some_zero, prune_numerical_zeros=True),
    "bsr_from_triplets, -0.0, prune=False": from_triplets(negative_zero, prune_numerical_zeros=False),
    "bsr_from_triplets, -0.0, prune=True": from_triplets(negative_zero, prune_numerical_zeros=True),
    "bsr_from_triplets, float64 zeros, prune=False": from_triplets(zeros(warp.float64), prune_numerical_zeros=False),
    "bsr_from_triplets, int32 zeros, prune=False": from_triplets(zeros(warp.int32), prune_numerical_zeros=False),
    "bsr_from_triplets, int32 zeros, prune=True": from_triplets(zeros(warp.int32), prune_numerical_zeros=True),
    "bsr_from_triplets, no values, prune=False": from_triplets(lambda: None, prune_numerical_zeros=False),
    "set, float32 zeros, prune=False": set_from_triplets(warp.float32, zeros(float), prune_numerical_zeros=False),
    "set, float32 zeros, prune=True": set_from_triplets(warp.float32, zeros(float), prune_numerical_zeros=True),
    "set, float32 zeros, False by position": set_from_triplets(warp.float32, zeros(float), None, False),
    "set, mat22 blocks, prune=False": set_from_triplets(warp.mat22f, blocks_2x2, prune_numerical_zeros=False),
    "set, mat22 blocks, prune=True": set_from_triplets(warp.mat22f, blocks_2x2, prune_numerical_zeros=True),
    "set, 3-d values, prune=False": set_from_triplets(warp.mat22f, blocks_3d, prune_numerical_zeros=False),
    "set, 3-d values, prune=True": set_from_triplets(warp.mat22f, blocks_3d, prune_numerical_zeros=True),
    "set, duplicates summing to zero, prune=False": set_from_triplets(
        warp.float32,
        lambda: cpu([1.0, -1.0, 0.0, 2.0], warp.float32),
        rows=[1, 1, 2, 3],
        columns=[0, 0, 2, 3],
        prune_numerical_zeros=False,
    ),
    "set, two of four counted, prune=False": set_from_triplets(
        warp.float32, zeros(float), prune_numerical_zeros=False, count=cpu([2])
    ),
    "set, masked by the existing topology, prune=False": set_from_triplets(
        warp.float32, zeros(float), dest=existing_topology, prune_numerical_zeros=False, masked=True
    ),
    "set, masked by the existing topology, prune=True": set_from_triplets(
        warp.float32, zeros(float), dest=existing_topology, prune_numerical_zeros=True, masked=True
    ),
    "set, strided values, prune=False": set_from_triplets(warp.float32, strided, prune_numerical_zeros=False),
    "set, strided values, prune=True": set_from_triplets(warp.float32, strided, prune_numerical_zeros=True),
    "set, float64 values into float32, prune=False": set_from_triplets(
        warp.float32, zeros(warp.float64), prune_numerical_zeros=False
    ),
    "set, an unknown keyword": set_from_triplets(warp.float32, zeros(float), prune_numeric_zeros=False),
    "set, too many arguments": set_from_triplets(warp.float32, zeros(float), None, False, False, "extra"),
}


def run_corpus() -> dict:
    return {name: outcome(build) for name, build in CASES.items()}


KEPT = {"nnz": 4, "offsets": [0, 1, 2, 3, 4], "columns": [1, 0, 2, 3], "values": [0.0, 0.0, 0.0, 0.0]}
PRUNED = {"nnz": 0, "offsets": [0, 0, 0, 0, 0], "columns": [], "values": []}
# Cases whose outcome tells the bug from the fix: (1.8.0 unpatched, 1.8.1).
TELLING = {
    "bsr_from_triplets, zeros, prune=False": (PRUNED, KEPT),
    "bsr_from_triplets, zeros, False by position": (PRUNED, KEPT),
    "set, float32 zeros, prune=False": (PRUNED, KEPT),
    "set, float32 zeros, False by position": (PRUNED, KEPT),
    "bsr_from_triplets, int32 zeros, prune=False": (PRUNED, {**KEPT, "values": [0, 0, 0, 0]}),
}
# Cases 1.8.0 always got right.
UNTOUCHED = {
    "bsr_from_triplets, zeros, prune=True": PRUNED,
    "bsr_from_triplets, zeros, default": PRUNED,
    "set, float32 zeros, prune=True": PRUNED,
}


@GATE.affected_only
def test_needed_zero_blocks_are_pruned_when_asked_not_to_without_gpushim():
    outcomes = run_corpus()
    assert {name: outcomes[name] for name in TELLING} == {name: pruned for name, (pruned, _) in TELLING.items()}
    assert {name: outcomes[name] for name in UNTOUCHED} == UNTOUCHED


@GATE.recorded_only
def test_faithful_corpus_matches_the_fixed_release():
    """Recorded patched on 1.8.0 and unpatched on 1.8.1; the matrix compares the files."""
    outcomes = record_corpus(patch, run_corpus)
    assert {name: outcomes[name] for name in TELLING} == {name: kept for name, (_, kept) in TELLING.items()}
    assert {name: outcomes[name] for name in UNTOUCHED} == UNTOUCHED


@GATE.affected_only
def test_a_call_that_keeps_zeros_does_not_change_what_another_thread_prunes(monkeypatch):
    """The request not to prune belongs to the call: a concurrent call with the default still prunes."""
    inside, kept = threading.Barrier(2), {}
    with applied(patch):
        masks = warp.sparse._zero_value_masks
        get = type(masks).get

        def get_then_wait(self, key, default=None):
            value = get(self, key, default)
            if threading.current_thread() is not threading.main_thread():
                inside.wait()  # the main thread calls while this call holds the mask it read
                inside.wait()
            return value

        monkeypatch.setattr(type(masks), "get", get_then_wait)
        keeping = threading.Thread(
            target=lambda: kept.update(outcome(from_triplets(zeros(float), prune_numerical_zeros=False)))
        )
        keeping.start()
        inside.wait()
        pruned = outcome(from_triplets(zeros(float)))
        inside.wait()
        keeping.join()
    assert (kept["nnz"], pruned["nnz"]) == (4, 0)


@GATE.affected_only
@pytest.mark.parametrize("prune", [False, True])
def test_the_mask_is_warps_own_outside_a_call(prune):
    with applied(patch):
        masks = warp.sparse._zero_value_masks
        assert masks.get(warp.float32, 0) == 0x7FFFFFFF
        warp.sparse.bsr_from_triplets(4, 4, cpu(ROWS), cpu(COLUMNS), zeros(float)(), prune_numerical_zeros=prune)
        assert masks.get(warp.float32, 0) == 0x7FFFFFFF
        assert masks == masks.__wrapped__
