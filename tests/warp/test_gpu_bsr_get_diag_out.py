"""warp.bsr_get_diag_out on a CUDA device: ``bsr_get_diag(A, out=...)`` of matrices built on ``cuda``.

NVIDIA/warp#1170, "Fix bsr_get_diag zero fill for missing blocks", reads: "To
my understanding, `bsr_get_diag` should produce the same result whether or not
an `out` array is provided. Previously, when `out` was passed, it was not
zero-initialized, causing missing diagonal blocks to retain whatever values
were already in `out` instead of being set to 0.0."  Its regression test
(NVIDIA/warp@28e724758, in 1.11.1), run on every device, reads:

    # Passing out should produce the same result as allocating internally.
    sentinel = wp.full(shape=(nrow,), value=bsr.values.dtype(7.0), dtype=bsr.values.dtype, device=device)
    bsr_get_diag(bsr, out=sentinel)
    assert_np_equal(diag_np, sentinel.numpy(), tol=0.00001)

The tests marked ``gpu`` run it on ``device="cuda"`` for square and
rectangular matrices of scalar and 2 x 2 blocks with rows that have no
diagonal block: with gpushim the ``out`` full of 7 reads what
``bsr_get_diag(bsr)`` returns, as in 1.11.1; without it those rows keep the 7;
and an ``out`` that Warp rejects keeps its values.  Without a device they are
skipped with "no CUDA device" (tests/gpu.py), and none of them has run yet.
The probe has no device branch (it reads a diagonal on the CPU).
"""

from __future__ import annotations

import numpy as np
import pytest

from gpushim.patches.warp.bsr_get_diag_out import patch
from tests.gpu import on_gpu
from tests.support import gate

GATE = gate(patch)

import warp as wp
import warp.sparse

DEVICE = "cuda"
STALE = 7.0

# name: (rows of blocks, columns of blocks, block type, (row, column) of each block; values are 1, 2, 3, ...)
MATRICES = {
    "4x4 float32, diagonal in rows 0 and 2": (4, 4, "float32", [(0, 0), (0, 3), (2, 2), (3, 1)]),
    "3x5 float64, diagonal in row 1": (3, 5, "float64", [(1, 1), (0, 4), (2, 0)]),
    "5x3 float32, no diagonal block": (5, 3, "float32", [(0, 1), (4, 0)]),
    "3x3 mat22, diagonal in rows 0 and 1": (3, 3, "mat22", [(0, 0), (1, 1), (2, 0)]),
}


def device_matrix(name):
    rows, columns, block, blocks = MATRICES[name]
    block_type = getattr(wp, block)
    bsr = warp.sparse.bsr_zeros(rows, columns, block_type, device=DEVICE)
    values = np.arange(1, len(blocks) + 1, dtype=np.float64)
    if block == "mat22":
        values = np.stack([values, -values, 2 * values, values + 0.5], axis=-1).reshape(-1, 2, 2)
    warp.sparse.bsr_set_from_triplets(
        bsr,
        wp.array([row for row, _ in blocks], dtype=int, device=DEVICE),
        wp.array([column for _, column in blocks], dtype=int, device=DEVICE),
        wp.array(values, dtype=block_type, device=DEVICE),
    )
    return bsr


def without_a_diagonal_block(name):
    rows, columns, _, blocks = MATRICES[name]
    return [row for row in range(min(rows, columns)) if (row, row) not in blocks]


def sentinel_diagonal(bsr, length=None):
    """The regression test's ``sentinel``: ``out`` full of 7, read back after ``bsr_get_diag(bsr, out=sentinel)``."""
    length = min(bsr.nrow, bsr.ncol) if length is None else length
    sentinel = wp.full(shape=(length,), value=bsr.values.dtype(STALE), dtype=bsr.values.dtype, device=DEVICE)
    warp.sparse.bsr_get_diag(bsr, out=sentinel)
    return sentinel.numpy()


@on_gpu
@GATE.ends_only
def test_needed_rows_without_a_diagonal_block_keep_the_sentinel_without_gpushim():
    name = "4x4 float32, diagonal in rows 0 and 2"
    assert sentinel_diagonal(device_matrix(name)).tolist() == [1.0, STALE, 3.0, STALE]


@on_gpu
@GATE.recorded_only
@pytest.mark.parametrize("name", list(MATRICES))
def test_passing_out_gives_what_allocating_internally_gives(this_patch, name):
    """The regression test on the device: ``out`` full of 7 ends equal to ``bsr_get_diag(bsr)``."""
    bsr = device_matrix(name)
    diag_np = warp.sparse.bsr_get_diag(bsr).numpy()
    sentinel = sentinel_diagonal(bsr)
    np.testing.assert_allclose(sentinel, diag_np, atol=1e-5)
    for row in without_a_diagonal_block(name):
        assert not sentinel[row].any(), (name, row, sentinel[row])


@on_gpu
@GATE.recorded_only
def test_an_out_longer_than_the_diagonal_is_zeroed_past_it(this_patch):
    bsr = device_matrix("4x4 float32, diagonal in rows 0 and 2")
    assert sentinel_diagonal(bsr, length=6).tolist() == [1.0, 0.0, 3.0, 0.0, 0.0, 0.0]


@on_gpu
@GATE.recorded_only
def test_an_out_warp_rejects_keeps_its_values(this_patch):
    """Too short: Warp's ValueError, and the caller's buffer untouched, as in 1.11.1."""
    bsr = device_matrix("4x4 float32, diagonal in rows 0 and 2")
    short = wp.full(shape=(3,), value=STALE, dtype=wp.float32, device=DEVICE)
    with pytest.raises(ValueError, match="Output array must be of length at least 4"):
        warp.sparse.bsr_get_diag(bsr, out=short)
    assert short.numpy().tolist() == [STALE] * 3
