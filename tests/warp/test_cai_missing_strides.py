"""warp.cai_missing_strides: wp.array() over a CUDA Array Interface without strides (NVIDIA/warp#523).

Everything runs on the CPU: a Device object that claims CUDA ordinal 0 takes
``wp.array(data=...)`` down Warp's interface path, which only records the
pointer, shape and strides it is given (see tests/warp/cai_corpus.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpushim.patches.warp.cai_missing_strides import patch
from tests.support import answer_in_fresh_python, applied, gate, record_faithful
from tests.warp import cai_corpus

GATE = gate(patch)
AFFECTED = GATE.affected

ROOT = Path(__file__).resolve().parents[2]
NONE_SUBSCRIPT = ["TypeError", "'NoneType' object is not subscriptable"]


def fresh_python(prelude: str, cases: str = "ISSUE_CASES") -> tuple[dict, str]:
    """Run ``prelude``, then the named corpus cases, in a fresh interpreter: (outcomes, patch state)."""
    code = f"{prelude}\nimport warp\nwarp.config.quiet = True\nfrom tests.warp import cai_corpus\nimport gpushim"
    outcomes, state = answer_in_fresh_python(
        code, f"[cai_corpus.run_corpus(cai_corpus.{cases}), gpushim.record({patch.id!r})['state']]"
    )
    return outcomes, state


def probe_in_fresh_python() -> str | None:
    return answer_in_fresh_python("from gpushim.patches.warp.cai_missing_strides import patch", "patch.probe()")


def own_init_from_data():
    import warp.types

    return vars(warp.types.array)["_init_from_data"]


@GATE.affected_only
def test_needed_vector_and_matrix_dtypes_fail_without_gpushim():
    outcomes, state = fresh_python(prelude="")
    assert state == "inactive"  # gpushim not imported: nothing applied
    assert outcomes == {case["name"]: {"raises": NONE_SUBSCRIPT} for case in cai_corpus.ISSUE_CASES}


@GATE.affected_only
def test_probe_shows_the_bug_without_gpushim():
    assert probe_in_fresh_python() == (
        "wp.array(dtype=wp.vec3) over an interface without strides raises TypeError: "
        "'NoneType' object is not subscriptable"
    )


@GATE.affected_only
@pytest.mark.parametrize("prelude", ["import gpushim.auto\nimport warp", "import warp\nimport gpushim.auto"])
def test_effective_with_gpushim_auto_before_or_after_warp(prelude):
    outcomes, state = fresh_python(prelude)
    assert state == "applied"
    assert all("raises" not in outcome for outcome in outcomes.values()), outcomes
    assert outcomes["vec3 f4 (5,3)/absent"]["shape"] == [5]
    assert outcomes["vec3 f4 (5,3)/absent"]["strides"] == [12]


@GATE.affected_only
def test_array_references_the_original_source(gpushim_patched):
    import warp

    source = cai_corpus.Exporter((4, 2), "<f8", strides=None)
    array = warp.array(data=source, dtype=warp.vec2d, device=cai_corpus.fake_cuda_device())
    assert array._ref is source


@GATE.affected_only
def test_interface_of_the_source_is_left_unchanged(gpushim_patched):
    import warp

    source = cai_corpus.Exporter((5, 3), "<f4")
    before = dict(source.__cuda_array_interface__)
    warp.array(data=source, dtype=warp.vec3, device=cai_corpus.fake_cuda_device())
    assert source.__cuda_array_interface__ == before
    assert "strides" not in source.__cuda_array_interface__


@GATE.affected_only
def test_zero_d_source_without_strides_keeps_the_released_behaviour(gpushim_patched):
    """1.6.0 accepts it for scalars, 1.6.1 raises IndexError; the backport does not add that failure."""
    import warp

    source = cai_corpus.Exporter((), "<f4", strides=None)
    array = warp.array(data=source, dtype=warp.float32, device=cai_corpus.fake_cuda_device())
    assert (array.shape, array.strides, array._ref) == ((1,), (4,), source)


@GATE.affected_only
def test_unpatch_restores_the_identical_method():
    original = own_init_from_data()
    with applied(patch):
        installed = own_init_from_data()
        assert installed is not original
        assert installed.__wrapped__ is original
    assert own_init_from_data() is original


@GATE.recorded_only
def test_faithful_corpus_matches_the_fixed_release(request):
    """Recorded patched on 1.6.0 and unpatched on 1.6.1; the matrix compares the two files."""
    if AFFECTED:
        request.getfixturevalue("gpushim_patched")
    outcomes = cai_corpus.run_corpus()
    record_faithful(patch, outcomes)
    for case in cai_corpus.ISSUE_CASES:
        assert "raises" not in outcomes[case["name"]], outcomes[case["name"]]


@GATE.unaffected_only
def test_harmless_not_affected_with_gpushim_auto_in_a_fresh_process():
    outcomes, state = fresh_python("import gpushim.auto\nimport warp")
    assert state == "not-affected"
    assert all(outcome != {"raises": NONE_SUBSCRIPT} for outcome in outcomes.values())
