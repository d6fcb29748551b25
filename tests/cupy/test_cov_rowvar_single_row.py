"""cupy.cov_rowvar_single_row: ``cupy.cov(a, rowvar=False)`` of a ``(1, n)`` array is one variance (cupy/cupy#8839).

``cov``'s own Python code decides the shape, so everything runs on the CPU:
the release's code on NumPy arrays (``cov_corpus``).  What CuPy's kernels
compute from it is the business of ``test_gpu_cov_rowvar_single_row.py``.
"""

from __future__ import annotations

import pytest

cupy = pytest.importorskip("cupy")

import wrapt

from gpushim.patches.cupy.cov_rowvar_single_row import patch
from tests.cupy import cov_corpus
from tests.support import applied, gate, record_corpus, refusal

GATE = gate(patch)


def one(case):
    return cov_corpus.run()[case]


@GATE.affected_only
def test_needed_one_row_with_rowvar_false_is_one_variance_without_gpushim():
    assert one("cov rowvar=False ddof=0 a=(1, 3)")["shape"] == []
    assert one("corrcoef rowvar=False a=(1, 3)")["shape"] == []


@GATE.affected_only
def test_effective_one_row_with_rowvar_false_is_n_by_n(this_patch):
    outcome = one("cov rowvar=False ddof=0 a=(1, 3)")
    assert (outcome["shape"], outcome["values"]) == ([3, 3], ["0"] * 9)
    assert one("corrcoef rowvar=False a=(1, 3)")["shape"] == [3, 3]


@GATE.affected_only
def test_effective_other_calls_are_the_release_s():
    released = cov_corpus.run()
    with applied(patch):
        patched = cov_corpus.run()
    changed = {case for case in released if released[case] != patched[case]}
    assert changed and all("rowvar=False" in case and "a=(1, 3)" in case for case in changed)


@GATE.affected_only
def test_effective_a_call_that_does_not_bind_is_refused_by_the_release(this_patch):
    patched, released = refusal(cupy.cov, None, rowvar=False, axes=1)
    assert patched == released


@GATE.unaffected_only
def test_harmless_not_affected_and_cov_is_cupys_own(gpushim_patched):
    assert gpushim_patched.record(patch.id)["state"] == "not-affected"
    assert not isinstance(cupy.cov, wrapt.ObjectProxy)
    assert cupy.cov.__module__ == "cupy._statistics.correlation"


@GATE.recorded_only
def test_faithful_outcomes_of_the_corpus():
    """Patched old releases record what unpatched 14.0.0 records; the matrix compares the files."""
    outcomes = record_corpus(patch, cov_corpus.run)
    assert len(outcomes) == len(cov_corpus.cases()) == 72
