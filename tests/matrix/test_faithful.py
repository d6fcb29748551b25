"""Faithful: a patched old release behaves exactly as the first fixed release.

Each matrix cell recorded its outcomes on every patch's corpus (results,
exception types and messages, generated code) in the artefacts folder; the
old releases with the patch applied, the reference release without it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from matrix.cells import ARTEFACTS, load_references, reference_record

REFERENCES = load_references()


def recorded(state: str) -> list[Path]:
    paths = sorted(ARTEFACTS.glob("*@*.json"))
    return [path for path in paths if json.loads(path.read_text())["state"] == state]


@pytest.mark.parametrize("artefact", recorded("applied"), ids=lambda path: path.stem)
def test_patched_release_matches_its_reference(artefact):
    patched = json.loads(artefact.read_text())
    reference = reference_record(patched["patch"])
    if reference is None:
        pytest.fail(f"no outcomes recorded for {REFERENCES[patched['patch']]}; run its matrix cell")
    assert patched["outcomes"] == reference["outcomes"]


def test_every_patch_was_compared():
    compared = {json.loads(path.read_text())["patch"] for path in recorded("applied")}
    assert compared == set(REFERENCES)
