"""Which release of a target is installed, and whether it is affected.

The import name alone is ambiguous (``warp`` on PyPI is another project,
``nvidia-dali`` is a placeholder), so releases come from the metadata of the
distributions a patch names.  Both imports here are slow, which is why this
module is only imported once a target is about to be patched or a status is
asked for.
"""

from __future__ import annotations

from importlib import metadata

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version


def installed(distributions: tuple[str, ...]) -> list[tuple[str, str]]:
    """``(distribution, version)`` for each of ``distributions`` installed."""
    found = []
    for name in distributions:
        try:
            found.append((name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            continue
    return found


def is_affected(version: str, affected: str) -> bool:
    """Whether ``version`` lies in the specifier ``affected``, pre-releases included."""
    return SpecifierSet(affected).contains(Version(version), prereleases=True)


def same_release(a: str, b: str) -> bool:
    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a == b
