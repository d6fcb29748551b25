"""cupy.cub_segment_offset: the segment offset of CuPy's CUB block reduction, widened (cupy/cupy#9248).

The wrong sums need more than 2**32 elements on a device
(``test_gpu_cub_segment_offset.py``); here the source CuPy generates is traced
on the CPU, in fresh interpreters with ``NVCC`` set (``cub_reductions``), and
compiled with the real NVRTC (``nvrtc``).  The patched release's sources are
recorded for ``compare`` with 13.6.0's.
"""

import pytest
from packaging.version import Version

cupy = pytest.importorskip("cupy")

from gpushim.patches.cupy.cub_segment_offset import FIXED, RELEASED, patch
from tests.cupy import cub_reductions
from tests.support import answer_in_fresh_python, corpus_in_fresh_python, gate, record_corpus

GATE = gate(patch)
PRELUDE = cub_reductions.PRELUDE


def lines(sources, line):
    """The cases whose source holds ``line``."""
    return sorted(case for case, source in sources.items() if line in source)


@GATE.affected_only
def test_needed_every_kernel_computes_the_offset_in_32_bits_without_gpushim():
    sources, state = corpus_in_fresh_python(cub_reductions.__name__, patch, PRELUDE)
    assert state == "inactive"
    assert len(sources) == 3
    assert lines(sources, RELEASED) == sorted(sources)
    assert lines(sources, FIXED) == []


@pytest.mark.parametrize("prelude", ["import gpushim.auto\n" + PRELUDE, PRELUDE + "\nimport cupy, gpushim.auto"])
@GATE.ends_only
def test_effective_every_kernel_computes_the_offset_in_64_bits(prelude):
    sources, state = corpus_in_fresh_python(cub_reductions.__name__, patch, prelude)
    assert state == "applied"
    assert lines(sources, FIXED) == sorted(sources)
    assert lines(sources, RELEASED) == []


@GATE.ends_only
def test_effective_nvrtc_compiles_the_patched_kernels():
    if Version(GATE.release[1]) < Version("13.3.0"):
        pytest.skip("CuPy before 13.3.0 compiles its CUB kernels through Jitify, which supplies the C++ headers")
    rejections = answer_in_fresh_python(
        f"{PRELUDE}\nimport gpushim.auto\nfrom tests.cupy.cub_reductions import rejections",
        "rejections()",
    )
    assert len(rejections) == 3
    assert {case: log for case, log in rejections.items() if log is not None} == {}


@GATE.recorded_only
def test_faithful_the_sources_are_recorded_for_compare():
    prelude = PRELUDE + ("\nimport gpushim.auto" if GATE.affected else "")
    sources = record_corpus(patch, lambda: corpus_in_fresh_python(cub_reductions.__name__, patch, prelude)[0])
    assert lines(sources, FIXED) == sorted(sources)


@GATE.unaffected_only
def test_harmless_the_fixed_release_compiles_its_own_source_unchanged():
    sources, state = corpus_in_fresh_python(cub_reductions.__name__, patch, "import gpushim.auto\n" + PRELUDE)
    assert state == "not-affected"
    assert lines(sources, FIXED) == sorted(sources)
