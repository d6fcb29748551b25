"""cupy.cub_segment_offset on a CUDA device: an axis reduction over more than 2**32 elements.

A boolean array of 2**16 + 16 rows of 2**16 elements (4.3 GB), whose last 16
rows are all True and the rest False, is counted along its rows by
``cupy.count_nonzero``, which CuPy hands to its CUB block reduction (in a
fresh interpreter with ``NVCC`` set: ``cub_reductions``).  The block of row
``2**16 + k`` starts at ``(2**16 + k) * 2**16``, which wraps to ``k * 2**16``
in 32 bits: without gpushim those rows count the False rows at the start of
the array, 0 where 2**16 is right.  Without a device they are skipped with "no
CUDA device" (tests/gpu.py), and none of them has run yet.
"""

from __future__ import annotations

from gpushim.patches.cupy.cub_segment_offset import patch
from tests.cupy.cub_reductions import PRELUDE
from tests.gpu import on_gpu
from tests.support import answer_in_fresh_python, gate

GATE = gate(patch)

ROWS, TRUE_ROWS = 2**16 + 16, 16
COUNT = f"""
import cupy
x = cupy.zeros(({ROWS}, 2**16), bool)
x[-{TRUE_ROWS}:] = True
counts = cupy.count_nonzero(x, axis=1)[-{TRUE_ROWS}:].get().tolist()
"""


def last_rows(prelude: str) -> list[int]:
    """What ``count_nonzero`` counts in each of the rows that lie past 2**32 elements."""
    return answer_in_fresh_python(f"{PRELUDE}\n{prelude}\n{COUNT}", "counts")


@on_gpu
@GATE.affected_only
def test_needed_the_rows_past_2_32_elements_count_the_first_rows_without_gpushim():
    assert last_rows("") == [0] * TRUE_ROWS


@on_gpu
@GATE.recorded_only
def test_the_rows_past_2_32_elements_count_themselves():
    assert last_rows("import gpushim.auto") == [2**16] * TRUE_ROWS
