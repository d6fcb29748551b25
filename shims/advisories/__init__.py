"""What gpushim does not fix: upstream's bug fixes that hit the installed releases, and what gpushim does about each.

The list is one JSON file per library beside this module (``warp.json``,
``cupy.json``, ``dali.json``), one entry per upstream bug fix that hits a
release users pin: upstream's reference, the first release with the fix, the
affected releases as a specifier (``verified`` says how they were checked,
``null`` where they were read, not run: see docs/coverage.md), the
consequence, the reach (the gpushim patch that fixes it, ``not-yet``, or
``not-backportable: why``) and one line on what goes wrong.  A file's
``covers`` are the releases for which it lists every fix of the history it
``read``s (none where that reading is partial); a later release has bugs that
came after and are not in it.

Only the commands read it (``gpushim advisories``, ``status``, ``selftest``,
``freeze``): ``import gpushim.auto`` never imports this module.  Nothing here
imports a target library: the installed releases and what each patch does to
them come from the status records.
"""

from __future__ import annotations

import json
import os

from .. import releases
from ..states import APPLIED, INACTIVE, NOT_AFFECTED, PENDING

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..states import Fields

LIBRARIES = ("cupy", "dali", "warp")
CONSEQUENCES = {
    "wrong-result": "silent wrong result",
    "crash": "memory corruption or crash",
    "exception": "exception",
    "hang": "hang or performance",
    "cosmetic": "cosmetic",
}
NOT_YET = "not-yet"
NOT_BACKPORTABLE = "not-backportable"

# What gpushim does about an entry on an installed release, beside a patch's own failed or disabled:
FIXED = "fixed"  # its patch applies to the release (applied, pending, or inactive in this process)
NOT_BACKPORTED = "not-backported"  # its patch exists, but does not reach this release
UNTRIGGERED = "untriggered"  # its patch reaches the release, and finds that the environment does not trigger the bug
HERE = {
    FIXED: "fixed by gpushim",
    "failed": "its patch failed here",
    "disabled": "its patch is disabled here",
    UNTRIGGERED: "not triggered in this environment, says its patch",
    NOT_BACKPORTED: "its patch does not reach this release",
    NOT_YET: "not yet",
    NOT_BACKPORTABLE: "not backportable",
}


def load(library: str) -> dict:
    """The list of ``library``: ``target``, ``covers``, ``read`` (what upstream history it comes from), ``entries``."""
    with open(os.path.join(os.path.dirname(__file__), f"{library}.json"), encoding="utf-8") as file:
        return json.load(file)


def patch_of(entry: dict) -> str | None:
    """The id of the gpushim patch that fixes ``entry``; None where there is none (yet, or ever)."""
    reach = entry["reach"]
    return None if reach == NOT_YET or reach.startswith(NOT_BACKPORTABLE) else reach


def left(entry: dict) -> bool:
    """Whether the bug of an entry with ``here`` stays on the release: gpushim fixes it not, and it can show."""
    return entry["here"] not in (FIXED, UNTRIGGERED)


def here(entry: dict, records: dict[str, Fields]) -> str:
    """What gpushim does about ``entry`` on the release ``records`` (its patches' status, by id) tell: a key of HERE.

    A patch that is not affected where its own range holds the release gates
    on the environment too (NumPy 2, say), and found it does not trigger the bug.
    """
    patch = patch_of(entry)
    if patch is None:
        return NOT_BACKPORTABLE if entry["reach"] != NOT_YET else NOT_YET
    record = records.get(patch)
    if record is None:
        return NOT_BACKPORTED
    if record["state"] in (APPLIED, PENDING, INACTIVE):
        return FIXED
    if record["state"] != NOT_AFFECTED:
        return record["state"]
    in_range = record["affected"] is None or releases.is_affected(record["installed_version"], record["affected"])
    return UNTRIGGERED if in_range else NOT_BACKPORTED


def installed(records: Sequence[Fields] | None = None, libraries: Sequence[str] = LIBRARIES) -> list[dict]:
    """Per installed release of ``libraries``, the entries that hit it, each with ``here`` added.

    ``records`` are status records (:func:`gpushim.status`'s by default): they
    say which release is installed and what each patch does to it.  Each
    release's ``complete`` says whether the list covers it, ``error`` why its
    version cannot be compared (then it has no entries), ``lowest_fix`` the
    lowest release with upstream's fix of every entry :func:`left` there
    (None where one has no fix upstream yet, or none is left).
    """
    if records is None:
        import gpushim

        records = gpushim.status()
    found = []
    for library in libraries:
        listed = load(library)
        mine = [record for record in records if record["target"] == listed["target"]]
        by_id = {record["id"]: record for record in mine}
        for distribution, version in sorted(
            {(r["distribution"], r["installed_version"]) for r in mine if r["distribution"]}
        ):
            release = {"library": library, "distribution": distribution, "version": version, "read": listed["read"]}
            release["error"] = None
            try:
                release["complete"] = listed["covers"] is not None and releases.is_affected(version, listed["covers"])
                hit = [entry for entry in listed["entries"] if releases.is_affected(version, entry["affected"])]
                release["entries"] = [{**entry, "here": here(entry, by_id)} for entry in hit]
            except releases.BadVersion as why:
                release.update(complete=False, entries=[], error=str(why))
            release["lowest_fix"] = lowest_fix(release["entries"])
            found.append(release)
    return found


def lowest_fix(entries: list[dict]) -> str | None:
    """The highest ``fixed_in`` of the entries :func:`left`; None if there are none, or one has no fix."""
    unfixed = [entry["fixed_in"] for entry in entries if left(entry)]
    if not unfixed or None in unfixed:
        return None
    lowest = unfixed[0]
    for fixed in unfixed[1:]:
        if releases.is_affected(fixed, f">{lowest}"):
            lowest = fixed
    return lowest


def tally(release: dict) -> dict[str, int]:
    """How many entries hit the release, how many gpushim fixes, and how many silent wrong results are :func:`left`."""
    entries = release["entries"]
    return {
        "hit": len(entries),
        "fixed": sum(entry["here"] == FIXED for entry in entries),
        "silent_left": sum(left(entry) and entry["consequence"] == "wrong-result" for entry in entries),
    }


def counts(release: dict) -> str:
    """One line for ``status``, ``selftest`` and ``freeze``: how many fixes hit the release, how many gpushim makes."""
    if release["error"]:
        return f"{release['distribution']} {release['version']}: upstream's fixes not counted ({release['error']})"
    counted = tally(release)
    line = (
        f"{release['distribution']} {release['version']}: {counted['hit']} upstream fixes hit this release, "
        f"{counted['fixed']} fixed by gpushim, {counted['silent_left']} silent wrong "
        f"result{'s' if counted['silent_left'] != 1 else ''} not fixed here"
    )
    return line if release["complete"] else f"{line} (the list is not complete for it)"


def report(found: list[dict], consequences: Sequence[str] = tuple(CONSEQUENCES)) -> str:
    """``gpushim advisories``: per release, its entries grouped by consequence, then by what gpushim does."""
    if not found:
        return "no release of a library with a list of upstream fixes is installed"
    blocks = []
    for release in found:
        entries = [entry for entry in release["entries"] if entry["consequence"] in consequences]
        lines = [counts(release)]
        if release["lowest_fix"]:
            lines.append(f"  upstream fixes the rest from {release['distribution']} {release['lowest_fix']} on")
        if not release["complete"] and not release["error"]:
            lines.append(f"  not every fix that hits this release is listed: the list reads {release['read']}")
        for consequence in consequences:
            group = [entry for entry in entries if entry["consequence"] == consequence]
            if group:
                lines.append(f"\n  {CONSEQUENCES[consequence]}: {len(group)}")
            for key, label in HERE.items():
                some = [entry for entry in group if entry["here"] == key]
                if some:
                    lines.append(f"    {label}: {len(some)}")
                    lines.extend(f"      {_line(entry)}" for entry in some)
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _line(entry: dict) -> str:
    """An entry as the report lists it: first fixed release, what goes wrong, reference, and the patch or reason."""
    reach = entry["reach"]
    said = f"; {reach}" if reach != NOT_YET else ""
    return f"{entry['fixed_in'] or 'unfixed':<8} {entry['what']} ({entry['upstream']}{said})"
