"""warp.tiled_dot_padding: TiledDot's later passes sum stale scratch past the valid length.

The corpus (tests/warp/tiled_dot_corpus.py) takes dot products with
``TiledDot`` on Warp's CPU device over stale scratch, and runs ``cg``.  The
kernel-cache test runs fresh interpreters sharing one cache directory.
"""

from __future__ import annotations

import importlib.util
import re
import textwrap

import pytest

from gpushim.patches.warp.tiled_dot_padding import patch
from tests.support import applied, gate, record_corpus, run_python
from tests.warp.tiled_dot_corpus import DOTS, STALE, exact, run_corpus, tiled_dot, warp_and_linear

GATE = gate(patch)


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
    warp, linear = warp_and_linear()
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


@GATE.ends_only
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
