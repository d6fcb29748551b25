"""warp.tiled_dot_padding: TiledDot's later passes sum stale scratch past the valid length.

The corpus takes dot products with ``TiledDot`` on Warp's CPU device over
scratch first filled with 1000, so that the released later passes read a known
value where 1.11.0 pads with zeros, and the unpatched release is wrong every
time rather than when memory held garbage.  Tiles of 512 cover the solvers'
case, vectors longer than 262,144; tiles of 8 give three later passes on
vectors of a few hundred elements, cheaply, and a scratch made longer than
the vectors.  It runs float32 and float64, one and three columns with column
offsets, and ``cg`` and ``gmres`` on a 270,000-row diagonal system.  The
kernel-cache test runs fresh interpreters sharing one cache directory.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import textwrap

import numpy as np
import pytest

from gpushim.patches.warp.tiled_dot_padding import patch
from tests.support import applied, gate, record_corpus, run_python

GATE = gate(patch)

STALE = 1000.0

# name: (max_length, tile_size, columns, length, col_offset)
DOTS = {
    "307,207, tiles of 512": (307207, 512, 1, 307207, 0),
    "262,145, tiles of 512": (262145, 512, 1, 262145, 0),
    "262,144, tiles of 512": (262144, 512, 1, 262144, 0),
    "1000 of 1000, tiles of 8": (1000, 8, 1, 1000, 0),
    "513 of 1000, tiles of 8": (1000, 8, 1, 513, 0),
    "65 of 1000, tiles of 8": (1000, 8, 1, 65, 0),
    "9 of 1000, tiles of 8": (1000, 8, 1, 9, 0),
    "1 of 1000, tiles of 8": (1000, 8, 1, 1, 0),
    "3 columns of 700, tiles of 8": (1000, 8, 3, 700, 0),
    "3 columns of 700 at offset 1, tiles of 8": (1000, 8, 3, 700, 1),
}


def _warp():
    import warp
    import warp.optim.linear
    import warp.sparse

    warp.config.quiet = True
    warp.init()
    return warp


def _linear():
    warp = _warp()
    return warp, sys.modules[warp.optim.linear.cg.__module__]


def operands(columns, length, dtype):
    """Small integers, so that every partial sum is exact in float32."""
    values = np.arange(columns * length, dtype=dtype).reshape(columns, length) % 7 - 3
    return values, values[:, ::-1].copy()


def exact(columns, length):
    a, b = operands(columns, length, "float64")
    return (a * b).sum(axis=1).tolist()


def tiled_dot(max_length, tile_size, columns, length, col_offset, dtype="float32", device="cpu"):
    """``compute``'s column sums of ``a * b`` over stale scratch, as Python floats."""
    warp, linear = _linear()
    scalar = getattr(warp, dtype)
    dot = linear.TiledDot(max_length, scalar, tile_size=tile_size, device=device, max_column_count=col_offset + columns)
    dot.partial_sums_a.fill_(STALE)
    dot.partial_sums_b.fill_(STALE)
    a, b = (warp.array(values, dtype=scalar, device=device) for values in operands(columns, length, dtype))
    if columns == 1:
        a, b = a.flatten(), b.flatten()
    dot.compute(a, b, col_offset)
    return dot.cols(columns, col_offset).numpy()[:, 0].tolist()


def solve(name):
    """Two iterations of ``name`` on a 270,000-row diagonal system: the iterate's sum and the residual."""
    warp, linear = _linear()
    rows = warp.array(np.arange(270000, dtype=np.int32), device="cpu")
    diagonal = warp.array(np.linspace(1.0, 2.0, 270000, dtype=np.float32), device="cpu")
    matrix = warp.sparse.bsr_from_triplets(270000, 270000, rows, rows, diagonal)
    b = warp.ones(270000, dtype=warp.float32, device="cpu")
    x = warp.zeros(270000, dtype=warp.float32, device="cpu")
    options = {"restart": 2} if name == "gmres" else {}
    iterations, residual, _ = getattr(linear, name)(matrix, b, x, maxiter=2, tol=1e-12, **options)
    return {"iterations": iterations, "residual": float(residual), "sum": float(x.numpy().astype(np.float64).sum())}


def run_corpus():
    outcomes = {}
    for name, case in DOTS.items():
        for dtype in ("float32", "float64"):
            outcomes[f"{name}, {dtype}"] = tiled_dot(*case, dtype=dtype)
    for name in ("cg", "gmres"):
        outcomes[name] = solve(name)
    return outcomes


@GATE.affected_only
@pytest.mark.parametrize("name", ["307,207, tiles of 512", "513 of 1000, tiles of 8", "9 of 1000, tiles of 8"])
def test_needed_later_passes_sum_stale_scratch_without_gpushim(name):
    columns, length = DOTS[name][2:4]
    assert tiled_dot(*DOTS[name]) != exact(columns, length)


@GATE.affected_only
@pytest.mark.parametrize("name", list(DOTS))
def test_effective_every_dot_product_is_exact_with_gpushim(name):
    columns, length = DOTS[name][2:4]
    with applied(patch):
        assert tiled_dot(*DOTS[name]) == exact(columns, length)


@GATE.affected_only
def test_effective_for_code_that_imports_only_the_module_defining_tiled_dot():
    """From 1.10 that is the private ``warp._src.optim.linear``, which ``warp.optim.linear`` re-exports."""
    defining = "warp._src.optim.linear" if importlib.util.find_spec("warp._src") else "warp.optim.linear"
    finished = run_python(f"import gpushim.auto, gpushim, {defining}\nprint(gpushim.record({patch.id!r}).state)")
    assert finished.stdout.split() == ["applied"], finished.stderr[-3000:]


@GATE.affected_only
def test_a_tiled_dot_made_before_the_patch_is_fixed_too():
    warp, linear = _linear()
    dot = linear.TiledDot(1000, warp.float32, tile_size=8, device="cpu")
    dot.partial_sums_a.fill_(STALE)
    dot.partial_sums_b.fill_(STALE)
    ones = warp.ones(1000, dtype=warp.float32, device="cpu")
    with applied(patch):
        dot.compute(ones, ones)
    assert dot.col(0).numpy().tolist() == [1000.0]


@GATE.recorded_only
def test_faithful_corpus_matches_the_fixed_release():
    """Recorded patched on the affected releases and unpatched on 1.11.0; the matrix compares the files."""
    outcomes = record_corpus(patch, run_corpus)
    assert outcomes["307,207, tiles of 512, float32"] == exact(1, 307207)


LOAD = re.compile(r"Module warp\S*optim\.linear (\w+) load on device 'cpu' .*\((compiled|cached)\)")

SCRIPT = """
import sys

import warp

warp.config.quiet = False  # Warp says whether it compiled the linear module or found it in the cache

if "gpushim" in sys.argv:
    import gpushim.auto
import warp.optim.linear

dot = sys.modules[warp.optim.linear.cg.__module__].TiledDot(307207, warp.float32, device="cpu")
dot.partial_sums_a.fill_(1000.0)
dot.partial_sums_b.fill_(1000.0)
ones = warp.ones(307207, dtype=warp.float32, device="cpu")
dot.compute(ones, ones)
print("@@dot", dot.col(0).numpy()[0], flush=True)
"""


@GATE.affected_only
def test_patched_and_unpatched_processes_share_one_kernel_build(tmp_path):
    """The fix is in the launch: the builds of the linear module serve both kinds of process."""
    script = tmp_path / "dot.py"
    script.write_text(textwrap.dedent(SCRIPT))
    cache = tmp_path / "kernels"

    def run(*arguments):
        """The dot product the script printed, and (hash, compiled or cached) for each linear module it loaded."""
        finished = run_python(script.read_text(), env={"WARP_CACHE_PATH": str(cache)}, args=list(arguments))
        assert finished.returncode == 0, finished.stderr
        lines = finished.stdout.splitlines()
        loads = [LOAD.match(line).groups() for line in lines if LOAD.match(line)]
        return [line.split()[1] for line in lines if line.startswith("@@dot")][0], loads

    # 307,207 plus the 510 stale partial sums of 1000 that the second pass reads past the first's two
    unpatched, built = run()
    assert unpatched == "817207.0" and built and {how for _, how in built} == {"compiled"}
    hashes = [module_hash for module_hash, _ in built]
    assert run("gpushim") == ("307207.0", [(module_hash, "cached") for module_hash in hashes])
    assert run() == ("817207.0", [(module_hash, "cached") for module_hash in hashes])
    assert len(list(cache.iterdir())) == len(hashes)
