"""What a process remembers of a large ``sys.path`` directory's entry points for the next, and when it reads again.

A directory of more than ``entrycache.LARGE`` distributions, one of them
declaring patches, is put alone on ``sys.path``; the user's cache is a
folder of the test's own.  A directory counts as settled once it is two
seconds old: its modification time is set back.
"""

from __future__ import annotations

import os
import sys
import time

import pytest

from gpushim import entrycache, plugins
from tests.plugins.sites import ACME, NEW_LIBRARY, OWN, distribution

ZETA = {path.replace("fixes", "zeta").replace("one", "two"): text for path, text in NEW_LIBRARY.items()}
ZETA_ENTRY_POINTS = "[gpushim.patches]\nzeta = zeta.patches\n"


def settle(folder):
    past = time.time_ns() - 10_000_000_000
    os.utime(folder, ns=(past, past))


@pytest.fixture
def large(tmp_path, monkeypatch):
    site = tmp_path / "site"
    for index in range(entrycache.LARGE + 1):
        distribution(site, f"other-{index}", "[console_scripts]\nother = other:main\n", {})
    distribution(site, "acme-fixes", ACME, NEW_LIBRARY)
    settle(site)
    monkeypatch.setattr(sys, "path", [str(site)])
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return site


@pytest.fixture
def reads(monkeypatch):
    """The metadata folders whose ``entry_points.txt`` the finding reads."""
    read = []
    original = plugins._entry_points

    def counting(reader, folder):
        read.append(folder)
        return original(reader, folder)

    monkeypatch.setattr(plugins, "_entry_points", counting)
    return read


def ids():
    return [id for library in plugins.find(OWN)[0] for id in library.ids]


def test_a_settled_directory_is_read_once_and_then_only_its_declaring_folders(large, reads):
    assert ids() == ["lib.one"]
    first = len(reads)
    reads.clear()
    assert ids() == ["lib.one"]
    assert (first, reads) == (entrycache.LARGE + 3, ["acme_fixes-1.0.dist-info"])


def test_a_distribution_installed_since_is_found(large):
    assert ids() == ["lib.one"]
    distribution(large, "zeta-fixes", ZETA_ENTRY_POINTS, ZETA)
    assert ids() == ["lib.one", "lib.two"]


def test_a_distribution_removed_since_is_gone(large):
    assert ids() == ["lib.one"]
    for child in (large / "acme_fixes-1.0.dist-info").iterdir():
        child.unlink()
    (large / "acme_fixes-1.0.dist-info").rmdir()
    assert ids() == []


def test_a_directory_changed_in_the_last_two_seconds_is_not_remembered(large, reads):
    os.utime(large)
    ids()
    reads.clear()
    ids()
    assert len(set(reads)) == entrycache.LARGE + 2  # every folder


def test_an_egg_info_rewritten_in_place_is_read_again(large):
    """``setup.py develop`` rewrites its ``.egg-info`` in its source tree, which the directory's time does not show."""
    egg_info = large / "zeta.egg-info"
    egg_info.mkdir()
    (egg_info / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: zeta\nVersion: 1.0\n")
    (egg_info / "entry_points.txt").write_text("[console_scripts]\nzeta = zeta:main\n")
    for path, text in ZETA.items():
        (large / path).parent.mkdir(parents=True, exist_ok=True)
        (large / path).write_text(text)
    settle(large)
    assert ids() == ["lib.one"]
    (egg_info / "entry_points.txt").write_text(ZETA_ENTRY_POINTS)
    assert ids() == ["lib.one", "lib.two"]


@pytest.mark.parametrize("spoil", ["garbage", "another directory", "cut short", "a folder"])
def test_a_cache_file_that_is_not_this_directorys_is_not_used(large, reads, spoil):
    ids()
    (file,) = (large.parent / "cache" / "gpushim").iterdir()
    text = file.read_text()
    if spoil == "a folder":
        file.unlink()
        file.mkdir()
    else:
        spoilt = {"garbage": "\0\n\n\n\n", "another directory": text.replace(str(large), "/elsewhere")}
        file.write_text(spoilt.get(spoil, "\n".join(text.split("\n")[:2])))
    reads.clear()
    assert ids() == ["lib.one"]
    assert len(set(reads)) == entrycache.LARGE + 2  # every folder


def test_no_cache_folder_to_write_is_no_cache(large, monkeypatch, reads):
    (large.parent / "cache").write_text("a file")
    assert ids() == ["lib.one"]
    reads.clear()
    assert ids() == ["lib.one"]
    assert len(set(reads)) == entrycache.LARGE + 2  # every folder


@pytest.mark.parametrize("names", ["as remembered", "cut short"])
def test_a_distribution_a_remembered_directory_installs_hides_its_install_in_a_later_entry(large, tmp_path, names):
    later = tmp_path / "later"
    distribution(later, "other-0", ZETA_ENTRY_POINTS, ZETA)
    sys.path.append(str(later))
    ids()
    (file,) = (tmp_path / "cache" / "gpushim").iterdir()
    if names == "cut short":
        file.write_bytes(file.read_bytes()[:-40])
    assert ids() == ["lib.one"]
