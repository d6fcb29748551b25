"""warp.bsr_from_triplets_prune on a CUDA device: the fix's regression test on ``device="cuda"``.

NVIDIA/warp@ec8ef9857 (1.8.1) adds ``test_bsr_from_triplets_prune_numerical_zeros``,
run on every device: four zero-valued triplets in a 12 x 12 matrix must give
``nnz == 4`` with ``prune_numerical_zeros=False`` and 0 with ``True``.  On a
CUDA device the mask reaches ``bsr_matrix_from_triplets_device`` instead of
the host builder; the same commit's change to that builder's copy
(``cudaMemcpyAsync`` on the stream) is native code the patch does not touch,
and this test does not depend on it.  Without a device these tests are
skipped with "no CUDA device" (tests/gpu.py), and none of them has run yet.
"""

from __future__ import annotations

from gpushim.patches.warp.bsr_from_triplets_prune import patch
from tests.gpu import on_gpu
from tests.support import gate
from tests.warp.gpu_scripts import run_script

GATE = gate(patch)

REGRESSION_TEST = """
import warp as wp
from warp.sparse import bsr_from_triplets

wp.config.quiet = True
wp.set_device("cuda")

rows = wp.array([1, 0, 2, 3], dtype=int)
cols = wp.array([0, 1, 2, 3], dtype=int)
vals = wp.zeros(len(rows), dtype=float)

result = {"device": str(vals.device)}
for prune in (False, True):
    A = bsr_from_triplets(
        rows_of_blocks=12, cols_of_blocks=12, rows=rows, columns=cols, values=vals, prune_numerical_zeros=prune
    )
    result[str(prune)] = A.nnz_sync()
"""


@on_gpu
@GATE.affected_only
def test_needed_the_zero_blocks_are_pruned_without_gpushim(tmp_path):
    result = run_script(REGRESSION_TEST, tmp_path, gpushim=False)
    assert result["device"].startswith("cuda")
    assert (result["False"], result["True"]) == (0, 0)


@on_gpu
@GATE.recorded_only
def test_the_regression_test_passes_with_gpushim(tmp_path):
    result = run_script(REGRESSION_TEST, tmp_path, gpushim=True)
    assert result["device"].startswith("cuda")
    assert (result["False"], result["True"]) == (4, 0)
