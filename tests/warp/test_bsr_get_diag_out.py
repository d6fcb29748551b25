"""warp.bsr_get_diag_out: bsr_get_diag(A, out=...) keeps stale values (NVIDIA/warp GH-1170).

The corpus reads diagonals on Warp's CPU device from square and rectangular
matrices of scalar and 2 x 2 blocks, with every, some or no diagonal block,
into no ``out``, a zeroed ``out``, and ``out`` arrays holding stale values,
exactly as long as the diagonal or longer, passed by position or keyword,
and twice in a row into the same buffer; and into ``out`` arrays that Warp
rejects, whose contents must survive.  Error messages are recorded up to the
", got ..." that 1.9.0 appended to them, with dtypes by their bare names (the
module path of ``warp.types`` moved in 1.10): neither is this bug's business.
Matrices are built with ``bsr_zeros`` and ``bsr_set_from_triplets``, which
every 1.x release has; matrix expressions (``2.0 * A``, from 1.4.0) are left
out for the same reason.
"""

from __future__ import annotations

import re

from gpushim.patches.warp.bsr_get_diag_out import patch
from tests.support import applied, gate, record_corpus

GATE = gate(patch)


STALE = 7.0

# name: (rows of blocks, columns of blocks, block type, (row, column, value) triplets)
MATRICES = {
    "4x4 scalar, diagonal in rows 0 and 2": (4, 4, "float32", [(0, 0, 1.0), (0, 3, 2.0), (2, 2, 3.0), (3, 1, 4.0)]),
    "3x3 scalar, full diagonal": (3, 3, "float32", [(0, 0, 1.5), (1, 1, -2.0), (2, 2, 4.0), (0, 2, 5.0)]),
    "3x3 scalar, no blocks": (3, 3, "float32", []),
    "3x5 float64, diagonal in row 1": (3, 5, "float64", [(1, 1, 2.5), (0, 4, 1.0), (2, 0, -1.0)]),
    "5x3 float64, full diagonal": (5, 3, "float64", [(0, 0, 1.0), (1, 1, 2.0), (2, 2, 3.0), (4, 0, 9.0)]),
    "3x3 mat22, diagonal in rows 0 and 1": (3, 3, "mat22", [(0, 0, 1.0), (1, 1, 2.0), (2, 0, 3.0)]),
}


def _warp():
    import warp
    import warp.sparse

    warp.config.quiet = True
    warp.init()
    return warp


def make_matrix(rows, columns, block, triplets):
    warp = _warp()
    block_type = getattr(warp, block)
    matrix = warp.sparse.bsr_zeros(rows, columns, block_type, device="cpu")
    if triplets:
        rows_, columns_, values = zip(*triplets)
        if block == "mat22":
            values = [[[value, -value], [2.0 * value, value + 0.5]] for value in values]
        warp.sparse.bsr_set_from_triplets(
            matrix,
            warp.array(rows_, dtype=int, device="cpu"),
            warp.array(columns_, dtype=int, device="cpu"),
            warp.array(values, dtype=block_type, device="cpu"),
        )
    return matrix


def filled(length, dtype, value):
    warp = _warp()
    return warp.full(length, getattr(warp, dtype)(value), dtype=getattr(warp, dtype), device="cpu")


def diagonal(matrix, out, keyword=True):
    """The values ``bsr_get_diag`` leaves in ``out`` (or returns), or the exception and ``out`` after it."""
    warp = _warp()
    try:
        if out is None:
            result = warp.sparse.bsr_get_diag(matrix)
        elif keyword:
            result = warp.sparse.bsr_get_diag(matrix, out=out)
        else:
            result = warp.sparse.bsr_get_diag(matrix, out)
    except Exception as error:
        message = re.sub(r"<class '[\w.]+\.(\w+)'>", r"\1", str(error).split(", got ")[0])
        return {"raises": [type(error).__name__, message], "out": out.numpy().tolist()}
    return {"values": result.numpy().tolist(), "returns out": out is None or result is out}


def run_corpus():
    outcomes = {}
    for name, (rows, columns, block, triplets) in MATRICES.items():
        matrix = make_matrix(rows, columns, block, triplets)
        dim = min(rows, columns)
        outcomes[f"{name}: no out"] = diagonal(matrix, None)
        outcomes[f"{name}: zeroed out"] = diagonal(matrix, filled(dim, block, 0.0))
        outcomes[f"{name}: stale out"] = diagonal(matrix, filled(dim, block, STALE))
        outcomes[f"{name}: stale out, by position"] = diagonal(matrix, filled(dim, block, STALE), keyword=False)
        outcomes[f"{name}: stale out two longer"] = diagonal(matrix, filled(dim + 2, block, STALE))
        outcomes[f"{name}: stale out one short"] = diagonal(matrix, filled(dim - 1, block, STALE))
    matrix = make_matrix(*MATRICES["4x4 scalar, diagonal in rows 0 and 2"])
    outcomes["float64 out for float32 blocks"] = diagonal(matrix, filled(4, "float64", STALE))
    first, second = (make_matrix(4, 4, "float32", triplets) for triplets in ([(1, 1, 5.0), (3, 3, 6.0)], [(0, 0, 8.0)]))
    out = filled(4, "float32", 0.0)
    outcomes["same out twice"] = [diagonal(first, out), diagonal(second, out)]
    return outcomes


@GATE.ends_only
def test_needed_rows_without_a_diagonal_keep_stale_values_without_gpushim():
    matrix = make_matrix(*MATRICES["4x4 scalar, diagonal in rows 0 and 2"])
    assert diagonal(matrix, filled(4, "float32", STALE))["values"] == [1.0, STALE, 3.0, STALE]


@GATE.ends_only
def test_effective_stale_values_are_cleared_with_gpushim():
    matrix = make_matrix(*MATRICES["4x4 scalar, diagonal in rows 0 and 2"])
    with applied(patch):
        assert diagonal(matrix, filled(6, "float32", STALE))["values"] == [1.0, 0.0, 3.0, 0.0, 0.0, 0.0]
        short = diagonal(matrix, filled(3, "float32", STALE))
    assert short["raises"][0] == "ValueError" and short["out"] == [STALE] * 3


@GATE.recorded_only
def test_faithful_corpus_matches_the_fixed_release():
    """Recorded patched on the affected releases and unpatched on 1.11.1; the matrix compares the files."""
    outcomes = record_corpus(patch, run_corpus)
    assert outcomes["same out twice"][1]["values"] == [8.0, 0.0, 0.0, 0.0]


@GATE.unaffected_only
def test_harmless_bsr_get_diag_is_warps_own():
    warp = _warp()
    before = warp.sparse.bsr_get_diag
    with applied(patch):
        assert warp.sparse.bsr_get_diag is before
    assert not hasattr(before, "__wrapped__")
