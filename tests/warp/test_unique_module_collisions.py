"""warp.unique_module_collisions: kernels of one ``module="unique"`` factory share a module (NVIDIA/warp GH-1211).

Unique modules live as long as their process, so the corpus
(``tests/warp/unique_corpus.py``) runs in fresh interpreters, and these all
share one kernel cache directory of their own, alternating unpatched and
patched: the runs are the needed and effective proofs and, at once, the
proof that neither kind of process is served the other's build, made at the
range's ends (each run builds every kernel of the corpus).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gpushim.patches.warp.unique_module_collisions import patch
from tests.support import applied, gate, record_faithful, run_python

GATE = gate(patch)

ROOT = Path(__file__).resolve().parents[2]
WRITTEN_BY_1_12_0 = {
    "deferred wp.static(values[i])": [[100, 200], [999, 200], [999, 888]],
    "generic kernel capturing plus_one, times_ten": [[3.0], [20.0]],
    "generic kernel capturing writer_a, writer_b": [[2, 3, 4], [3, 4, 5]],
}
# Without gpushim, from 1.10.1: the second kernel is the first, and runs its values or callee; where the callees take
# another struct type, the first kernel's callee refuses the second's argument.
COLLIDED = {
    "deferred wp.static(values[i])": [[100, 200], [100, 200], [100, 200]],
    "generic kernel capturing plus_one, times_ten": [[3.0], [3.0]],
    "generic kernel capturing writer_a, writer_b": [[2, 3, 4], "raises WarpCodegenError"],
    "other values give other kernels": False,
}
# 1.10.0 makes a module per kernel, all with one name: the second kernel over [999, 200], whose module hashes as the
# first's (its last value, 200, is the same), is served the first one's build; the others fail at launch, their
# code looked up in the first module loaded under that name.
COLLIDED_1_10_0 = {
    "deferred wp.static(values[i])": [[100, 200], [100, 200], "raises RuntimeError"],
    "generic kernel capturing plus_one, times_ten": [[3.0], "raises RuntimeError"],
    "generic kernel capturing writer_a, writer_b": [[2, 3, 4], "raises RuntimeError"],
    "other values give other kernels": True,
}


def corpus(cache: Path, *arguments: str) -> tuple[dict, str, list[str]]:
    """(outcomes, the patch's state, how Warp loaded each module) of one run of the corpus on ``cache``."""
    finished = run_python(
        f"import sys, runpy; sys.path.insert(0, {str(ROOT)!r}); sys.argv[1:] = {list(arguments)!r}; "
        "runpy.run_module('tests.warp.unique_corpus', run_name='__main__')",
        env={"WARP_CACHE_PATH": str(cache)},
    )
    assert finished.returncode == 0, finished.stderr
    said = dict(line.split(" ", 1) for line in finished.stdout.splitlines() if line.startswith("@@"))
    loads = re.findall(r"^Module \S+ \S+ load on device 'cpu' took .*\((compiled|cached)\)$", finished.stdout, re.M)
    return json.loads(said["@@outcomes"]), said["@@state"], loads


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The corpus four times on one new cache: without gpushim, with it first, without, with it after Warp."""
    cache = tmp_path_factory.mktemp("unique") / "kernels"
    return [corpus(cache, *arguments) for arguments in ([], ["gpushim first"], [], ["gpushim after"])]


@GATE.ends_only
def test_needed_the_second_kernel_of_a_factory_runs_the_first_ones_values_or_callee(runs):
    outcomes, state, _ = runs[0]
    collided = COLLIDED_1_10_0 if GATE.release[1] == "1.10.0" else COLLIDED
    assert state == "inactive"
    assert {name: outcomes[name] for name in collided} == collided


@GATE.ends_only
@pytest.mark.parametrize("run", [1, 3], ids=["gpushim first", "warp first"])
def test_effective_each_kernel_runs_its_own_values_and_callee(runs, run):
    outcomes, state, _ = runs[run]
    assert state == "applied"
    assert {name: outcomes[name] for name in WRITTEN_BY_1_12_0} == WRITTEN_BY_1_12_0
    assert all(outcomes.values())


@GATE.ends_only
def test_a_shared_kernel_cache_serves_each_kind_of_process_its_own_builds(runs):
    """Unpatched builds keep their names; patched builds get other names, so each is found again, never the other."""
    (first, _, compiled), (second, _, compiled_patched), (third, _, again), (fourth, _, again_patched) = runs
    # Unpatched, 1.10.0 builds each kernel but the one whose module hashes as the first's; later, one a factory.
    unpatched = ["compiled", "cached"] + ["compiled"] * 5 if GATE.release[1] == "1.10.0" else ["compiled"] * 3
    assert compiled == unpatched and compiled_patched == ["compiled"] * 7
    assert (third, again) == (first, ["cached"] * len(unpatched))
    assert (fourth, again_patched) == (second, ["cached"] * 7)


@GATE.recorded_only
def test_faithful_the_corpus_matches_the_fixed_release(request, tmp_path):
    """Patched 1.10.1 to 1.11.1 record what unpatched 1.12.0 records; the matrix compares the files."""
    outcomes = request.getfixturevalue("runs")[1][0] if GATE.affected else corpus(tmp_path)[0]
    assert {name: outcomes[name] for name in WRITTEN_BY_1_12_0} == WRITTEN_BY_1_12_0
    import warp  # noqa: F401  (the patch applies once Warp is imported)

    with applied(patch):  # recorded in the state of the run above: patched where the release is affected
        record_faithful(patch, outcomes)
