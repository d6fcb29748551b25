"""dali.iterator_drop_reset: with DROP, an iterator stopped after ``len(it)`` batches loses the next epoch.

The corpus (tests/dali/drop_reset_corpus.py) runs whole epochs through the
PyTorch plugin's iterators over CPU pipelines reading small files.  The
iterators need torch (CPU build), installed only in the cells of 1.26.0 and
1.27.0; the probe, run by the contract in every DALI cell, needs no
framework.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("nvidia.dali")

from gpushim.patches.dali.iterator_drop_reset import patch
from tests.dali.drop_reset_corpus import EPOCHS, pipelines, run_corpus, samples, write_files
from tests.support import applied, gate, record_corpus, run_python

GATE = gate(patch)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def torch():
    return pytest.importorskip("torch", reason="the PyTorch plugin's iterators need torch (cells dali-1.26.0, 1.27.0)")


def batch_counts(outcome: list) -> list[int]:
    return [len(epoch["batches"]) for epoch in outcome]


# Cases whose epochs tell the bug from the fix: (batches per epoch on 1.26.0 unpatched, on 1.27.0).
TELLING = {
    "DALIGenericIterator, 5 files, batches of 2, DROP, len, reset()": ([2, 0, 2, 0], [2, 2, 2, 2]),
    "DALIClassificationIterator, 5 files, batches of 2, DROP, len, reset()": ([2, 0, 2, 0], [2, 2, 2, 2]),
    "DALIGenericIterator, 5 files, batches of 2, DROP, len, iter()": ([2, 0, 2, 0], [2, 2, 2, 2]),
    "DALIGenericIterator, 7 files, batches of 3, DROP, len, reset()": ([2, 0, 2, 0], [2, 2, 2, 2]),
}


@GATE.affected_only
def test_needed_the_epoch_after_len_batches_is_lost_without_gpushim(torch, tmp_path):
    outcomes = run_corpus(tmp_path)
    assert {name: batch_counts(outcomes[name]) for name in TELLING} == {
        name: released for name, (released, _) in TELLING.items()
    }


@GATE.recorded_only
def test_faithful_whole_epochs_match_the_fixed_release(torch, tmp_path):
    """Recorded patched on 1.26.0 and unpatched on 1.27.0; the matrix compares the files."""
    outcomes = record_corpus(patch, lambda: run_corpus(tmp_path))
    assert {name: batch_counts(outcomes[name]) for name in TELLING} == {
        name: fixed for name, (_, fixed) in TELLING.items()
    }
    first_epoch = outcomes["DALIGenericIterator, 5 files, batches of 2, DROP, len, reset()"][0]["batches"]
    assert first_epoch == [[[[0, 0], [2, 0]]], [[[4, 0], [1, 1]]]]  # label0/000, 002, 004, then label1/001


@GATE.affected_only
def test_effective_in_a_fresh_interpreter_with_gpushim_imported_first(torch, tmp_path):
    code = "\n".join(
        [
            "import gpushim.auto",
            "import sys, json",
            f"sys.path.insert(0, {str(ROOT)!r})",
            "from pathlib import Path",
            "from tests.dali.drop_reset_corpus import run_case",
            f"print(json.dumps(run_case(Path({str(tmp_path)!r}), '5 files, batches of 2', 'len, iter()', 'DROP',"
            " 'DALIClassificationIterator')))",
        ]
    )
    finished = run_python(code)
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert batch_counts(json.loads(finished.stdout.splitlines()[-1])) == [2] * EPOCHS


@GATE.affected_only
def test_other_policies_and_a_mid_epoch_reset_are_the_releases_own(torch, tmp_path):
    """The wrapper acts only with DROP and a batch left behind; a reset in mid-epoch is still ignored."""
    import nvidia.dali.plugin.pytorch as plugin

    pipes = pipelines(write_files(tmp_path, 9), 2, 1)
    iterator = plugin.DALIGenericIterator(
        pipes, ["data", "label"], reader_name="Reader", last_batch_policy=plugin.LastBatchPolicy.DROP
    )
    next(iterator)
    with applied(patch):
        counter = iterator._counter
        iterator.reset()
        assert iterator._counter == counter
        assert [samples(batch) for batch in iterator][0] == [[[4, 0], [6, 0]]]
