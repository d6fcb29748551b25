"""``gpushim freeze``: a requirements file of the releases gpushim patches here.

A result is only reproducible with the library releases and the fixes that
were in effect, so this pins gpushim and each installed target's
distribution, and says in comments which patches concern that release and
in what state.  ``pip install -r`` accepts the file as it is, and installs
what is pinned from where it came: an index, or the URL it was installed
from (gpushim from a commit of its repository).

A patch is ``applied`` in the process that asks (call :func:`freeze` from
the training script after its imports to log that), ``pending`` where
gpushim is active and the library not imported yet, and ``inactive`` where
gpushim is not active: a fresh ``gpushim freeze`` imports no GPU library
and activates nothing, so that is what it says of an affected release.
"""

from __future__ import annotations

import gpushim

from . import releases
from .plugins import labelled
from .states import APPLIED, FAILED, INACTIVE, NOT_AFFECTED, NOT_BACKPORTED, NOT_INSTALLED, OPT_IN, PENDING

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from .states import Fields

# Every state but these says something about the release: the patch is in effect,
# would be, could not be, does not reach the release's bug, or was turned off.
_UNRELATED = (NOT_AFFECTED, NOT_INSTALLED)
_IN_RANGE = (APPLIED, PENDING, INACTIVE, FAILED, NOT_BACKPORTED, OPT_IN)

LEGEND = """\
# applied: patched in this process; pending: patched when the library is imported here;
# inactive: gpushim is not active in this process (it patches the library where it is);
# failed: gpushim could not patch it, the bug is there; disabled: off by GPUSHIM_DISABLE;
# not-backported: the release has the bug, and the patch does not reach it (gpushim status says why)
# opt-in: the bug is there, and the patch, which changes behaviour code may rely on, is on only with GPUSHIM_ENABLE"""


NONE_KNOWN = "no release outside every gpushim patch's range is known yet"


def freeze(records: Sequence[Fields] | None = None) -> dict:
    """gpushim's version, the distributions that add patches, and per installed target release its patches.

    ``records`` are status records, those of :func:`gpushim.status` by
    default.  ``fixed_in`` of a release with patches in range is the
    release to upgrade to (see :func:`upgrade`), None when none is known yet
    or no patch is in range.  Versions are compared as :mod:`gpushim.releases`
    compares them, so that plain releases need no ``packaging``.
    ``patch_distributions`` are the other distributions whose patches the
    records name, with their installed version and the ids of theirs that
    failed before a release was told; ``gating`` the installed distributions
    the patches' ``only_with`` names (NumPy), with the ids they decide.
    """
    records = gpushim.status() if records is None else records
    patch_distributions = []
    for origin in sorted({record.get("origin", "gpushim") for record in records} - {"gpushim"}):
        version = next((version for _, version in releases.installed((origin,))), None)
        failed = [
            record["id"]
            for record in records
            if record.get("origin") == origin and record["state"] == FAILED and record["distribution"] is None
        ]
        patch_distributions.append({"distribution": origin, "version": version, "failed": failed})
    found: dict[tuple[str, str | None], dict] = {}
    for record in records:
        if record["distribution"] is None:
            continue
        release = found.setdefault(
            (record["distribution"], record["installed_version"]),
            {
                "distribution": record["distribution"],
                "version": record["installed_version"],
                "target": record["target"],
                "patches": [],
                "fixed_in": None,
            },
        )
        if record["state"] in _UNRELATED:
            continue
        release["patches"].append({"id": labelled(record), "state": record["state"]})
    _count_upstream_fixes(records, found)
    for release in found.values():
        if needs_patches(release):
            ranges = [
                (record["affected"], record["fixed_in"]) for record in records if record["target"] == release["target"]
            ]
            release["fixed_in"] = upgrade(release["version"], ranges)
    return {
        "gpushim": gpushim.__version__,
        "patch_distributions": patch_distributions,
        "releases": list(found.values()),
        "gating": _gating(records),
    }


def _count_upstream_fixes(records: Sequence[Fields], found: dict[tuple[str, str | None], dict]) -> None:
    """Give each release of a library with a list its ``upstream_fixes``: :func:`gpushim.advisories.tally`'s counts."""
    from .advisories import installed, tally

    for release in found.values():
        release["upstream_fixes"] = None
    for listed in installed(records):
        if not listed["error"]:
            found[(listed["distribution"], listed["version"])]["upstream_fixes"] = tally(listed)


def needs_patches(release: dict) -> bool:
    """Whether a release of :func:`freeze` has patches in range: in effect, or meant to be."""
    return any(patch["state"] in _IN_RANGE for patch in release["patches"])


def upgrade(version: str | None, patches: list[tuple[str | None, str | None]]) -> str | None:
    """The lowest release above ``version`` that lies outside every patch's range; None where none is known yet.

    ``patches`` are the ``(affected, fixed_in)`` of every patch of the
    library.  The releases known are the ``fixed_in`` of each: the highest
    of those in range for ``version`` may lie in another patch's range
    (CuPy 13.5.0, the fix of 13.3.0's last bug, has ``cupy.asarray_blocking``'s).
    A version that cannot be compared (see :func:`requirement`) has none either.
    """
    ranges = [affected for affected, _ in patches if affected is not None]
    lowest = None
    try:
        for fixed in {fixed for _, fixed in patches if fixed is not None}:
            if not releases.is_affected(fixed, f">{version}") or any(releases.is_affected(fixed, r) for r in ranges):
                continue
            if lowest is None or releases.is_affected(fixed, f"<{lowest}"):
                lowest = fixed
    except releases.BadVersion:
        return None
    return lowest


def _gating(records: Sequence[Fields]) -> list[dict]:
    """The other distributions that the patches of installed releases gate on (``only_with``), as installed.

    A patch of CuPy 13.2.0's NumPy 2 bugs applies or not by NumPy's release,
    so a log that pins CuPy must pin NumPy too to say what was patched.
    """
    gates: dict[str, list[str]] = {}
    for record in records:
        if record["distribution"] is None:
            continue
        try:
            only_with = gpushim.registry()[record["id"]].only_with
        except Exception:  # a record of a patch this install cannot load: nothing to tell
            continue
        for name in only_with:
            gates.setdefault(name, []).append(labelled(record))
    found = []
    for name, ids in sorted(gates.items()):
        for distribution, version in releases.installed((name,))[:1]:
            found.append({"distribution": distribution, "version": version, "gates": ids})
    return found


def requirement(distribution: str, version: str | None) -> str:
    """How to install ``distribution`` again: as it was installed where that was a URL, else ``distribution==version``.

    pip records a URL it installed from in ``direct_url.json`` (PEP 610): a
    VCS URL and its commit, a file or a directory (gpushim from a clone, a
    patch distribution's wheel), none of which an index has.  A version that
    is not PEP 440 cannot be pinned (pip refuses installed distributions with
    one from 24.1 on), so such a release is recorded but not pinned; so is an
    unusual one that cannot be checked without ``packaging``.
    """
    direct = _direct_url(distribution, version)
    if direct is not None:
        return direct
    if version is None:
        return f"# {distribution}: its metadata gives no version, so it is not pinned"
    try:
        releases.is_affected(version, ">=0")
    except releases.BadVersion as why:
        return f"# {distribution} {version}: not pinned, as {why}"
    return f"{distribution}=={version}"


def _direct_url(distribution: str, version: str | None) -> str | None:
    """The requirement that installs ``distribution`` from where its ``direct_url.json`` says it came, if it says.

    Only the first install of ``version`` on the path tells: another (an older
    one, shadowed) says nothing of the one in use.
    """
    import json
    from importlib import metadata

    found = next((dist for dist in metadata.distributions(name=distribution) if dist.version == version), None)
    if found is None:
        return None
    try:
        direct = json.loads(found.read_text("direct_url.json") or "null")
    except ValueError:
        return None
    if not isinstance(direct, dict) or not _word(direct.get("url")):
        return None
    url: str = direct["url"]
    vcs, directory, subdirectory = (direct.get(key) for key in ("vcs_info", "dir_info", "subdirectory"))
    if "dir_info" in direct and not isinstance(directory, dict):
        return None
    if "vcs_info" in direct:
        if not (isinstance(vcs, dict) and _word(vcs.get("vcs")) and _word(vcs.get("commit_id"))):
            return None
        url = f"{vcs['vcs']}+{url}@{vcs['commit_id']}"
    if subdirectory:
        if not _word(subdirectory):
            return None
        url += f"#subdirectory={subdirectory}"
    if isinstance(directory, dict) and directory.get("editable") is True:
        return f"-e {url}"
    return f"{distribution} @ {url}"


def _word(value: object) -> bool:
    """Whether ``value``, read from ``direct_url.json``, is a string that stays one word of one requirement line:
    no space, no line break, nothing unprintable (a line break would give pip an option of its own)."""
    return isinstance(value, str) and value.isprintable() and bool(value) and not any(c.isspace() for c in value)


def format_freeze(frozen: dict) -> str:
    """The requirements file: gpushim pinned, then each release pinned with its patches in comments below it."""
    lines = [
        "# gpushim freeze: the libraries gpushim patches here, with the state of each patch",
        LEGEND,
        requirement("gpushim", frozen["gpushim"]),
    ]
    for added in frozen["patch_distributions"]:
        lines.append(requirement(added["distribution"], added["version"]))
        lines.append("#   adds gpushim patches")
        lines.extend(f"#   {failed}: failed" for failed in added["failed"])
    for release in frozen["releases"]:
        lines.append(requirement(release["distribution"], release["version"]))
        lines.extend(f"#   {patch['id']}: {patch['state']}" for patch in release["patches"])
        if not release["patches"]:
            lines.append("#   no gpushim patch applies to this release")
        if release["fixed_in"] is not None:
            lines.append(f"#   no gpushim patch is needed from {release['distribution']} {release['fixed_in']} on")
        elif needs_patches(release):
            lines.append(f"#   {NONE_KNOWN}")
        fixes = release.get("upstream_fixes")  # absent from what an older gpushim wrote
        if fixes is not None:
            lines.append(
                "#   {hit} upstream fixes hit this release, {fixed} fixed by gpushim "
                "(`gpushim advisories` lists them)".format(**fixes)
            )
    for dependency in frozen["gating"]:
        lines.append(requirement(dependency["distribution"], dependency["version"]))
        lines.append(f"#   decides whether these apply: {', '.join(dependency['gates'])}")
    return "\n".join(lines)
