"""The list of upstream fixes (shims/advisories/) against the patches, and the pages counted from it.

Every patch of gpushim's has its entry, every entry's patch exists and agrees
with it on the first fixed release, and docs/coverage.md and the README say
what the list counts now.
"""

from __future__ import annotations

import pytest

import gpushim
from gpushim.advisories import CONSEQUENCES, LIBRARIES, NOT_BACKPORTABLE, NOT_YET, load, patch_of
from gpushim.releases import is_affected
from matrix import coverage

ENTRIES = [(library, entry) for library in LIBRARIES for entry in load(library)["entries"]]
OURS = {record["id"]: record for record in gpushim.status() if record["origin"] == "gpushim"}


def entries_of(patch: str) -> list[dict]:
    return [entry for library in LIBRARIES for entry in load(library)["entries"] if patch_of(entry) == patch]


@pytest.mark.parametrize("patch", sorted(OURS))
def test_every_patch_has_its_entry_and_the_latest_fix_of_its_entries_is_its_own(patch):
    fixes = [entry["fixed_in"] for entry in entries_of(patch)]
    assert fixes, f"no entry of shims/advisories/ has reach {patch!r}"
    latest = None if None in fixes else max(fixes, key=lambda fixed: tuple(map(int, fixed.split("."))))
    assert latest == OURS[patch]["fixed_in"]


@pytest.mark.parametrize("patch", sorted(id for id in OURS if gpushim.registry()[id].not_backported))
def test_the_releases_a_patch_is_not_backported_to_are_affected_in_its_entry_too(patch):
    """Where a patch says ``not-backported``, its advisory entry says the release has the bug."""
    from packaging.specifiers import SpecifierSet

    bounds = [
        specifier.version
        for unreached in gpushim.registry()[patch].not_backported
        for specifier in SpecifierSet(unreached)
        if specifier.operator in (">=", "==")
    ]
    assert bounds
    for release in bounds:
        assert any(is_affected(release, entry["affected"]) for entry in entries_of(patch)), release


def test_every_entry_names_a_patch_of_its_library_or_says_why_there_is_none():
    def reached(library: str, entry: dict) -> bool:
        patch = patch_of(entry)
        if patch is None:
            return entry["reach"] == NOT_YET or entry["reach"].startswith(f"{NOT_BACKPORTABLE}: ")
        return patch in OURS and OURS[patch]["target"] == load(library)["target"]

    assert [entry["upstream"] for library, entry in ENTRIES if not reached(library, entry)] == []


def test_every_entry_is_complete_and_its_range_ends_before_its_fix():
    def complete(entry: dict) -> bool:
        return (
            set(entry) == {"upstream", "fixed_in", "affected", "verified", "consequence", "reach", "what"}
            and entry["consequence"] in CONSEQUENCES
            and bool(entry["upstream"] and entry["what"])
            and (entry["fixed_in"] is None or not is_affected(entry["fixed_in"], entry["affected"]))
        )

    assert [entry["upstream"] for _, entry in ENTRIES if not complete(entry)] == []


def test_the_coverage_page_and_the_readme_headline_are_current():
    """``nox -s docs`` writes them (``python -m matrix.coverage``)."""
    assert coverage.TABLE.search(coverage.PAGE.read_text())[0].count(coverage.table()) == 1
    assert coverage.HEADLINE.search(coverage.README.read_text())[0].count(coverage.headline()) == 1
