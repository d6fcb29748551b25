"""The release that ``gpushim status`` and ``freeze`` advise upgrading to, for every library of the catalogue.

The releases gpushim knows of a library are the ``fixed_in`` of its patches;
from each release a patch's range starts at, or that fixes one, the advice
is the lowest known release above it that lies in no patch's range, or none.
"""

from __future__ import annotations

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

import gpushim
from gpushim.freeze import upgrade


def libraries() -> dict[str, list]:
    registry = gpushim.registry()
    found: dict[str, list] = {}
    for id in registry.ids:
        found.setdefault(registry.library(id).target, []).append(registry[id])
    return found


def known_releases(patches) -> list[Version]:
    """Each release a patch's range starts at, and each that fixes one."""
    starts = [spec.version for patch in patches for spec in SpecifierSet(patch.affected) if spec.operator == ">="]
    return sorted({Version(release) for release in [*starts, *(patch.fixed_in for patch in patches)] if release})


def in_some_range(release: Version, patches) -> bool:
    return any(SpecifierSet(patch.affected).contains(release, prereleases=True) for patch in patches)


@pytest.mark.parametrize("target", sorted(libraries()))
def test_the_advice_is_the_lowest_known_release_above_that_no_patch_concerns(target):
    patches = libraries()[target]
    ranges = [(patch.affected, patch.fixed_in) for patch in patches]
    for release in known_releases(patches):
        outside = [later for later in known_releases(patches) if later > release and not in_some_range(later, patches)]
        advised = upgrade(str(release), ranges)
        assert advised == (str(outside[0]) if outside else None), release


def test_cupy_13_3_0_upgrades_to_14_0_0_past_13_6_0_which_lacks_fixes_released_only_in_14_0_0():
    patches = libraries()["cupy"]
    assert SpecifierSet(gpushim.registry()["cupy.cov_rowvar_single_row"].affected).contains("13.6.0")
    assert upgrade("13.3.0", [(patch.affected, patch.fixed_in) for patch in patches]) == "14.0.0"


def test_where_every_known_release_above_is_in_a_range_none_is_known_yet():
    assert upgrade("1.0", [("<2.0", "2.0"), (">=1.5", None)]) is None
