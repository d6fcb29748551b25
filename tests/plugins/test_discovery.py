"""How other distributions' patches are found: entry points read as pip writes them, packages never executed.

Distributions are written by hand here (a ``.dist-info`` with its
``entry_points.txt`` and a package), put alone on ``sys.path``; the
installed example and broken distributions are in test_plugins.py.
"""

from __future__ import annotations

import os
import sys
import zipfile

import pytest

from gpushim import plugins
from tests.engine.synthetic import write_record
from tests.plugins.sites import ACME, NEW_LIBRARY, OWN, distribution
from tests.support import run_python


@pytest.fixture
def site(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    return tmp_path


def test_a_new_library_is_read_from_its_init_without_executing_anything(site):
    distribution(site, "acme-fixes", "[gpushim.patches]\nacme = fixes.patches\n", NEW_LIBRARY)
    (library,), problems = plugins.find(OWN)
    assert (library.name, library.target, library.distributions, library.ids) == (
        "lib",
        "lib",
        ("lib-dist",),
        ["lib.one"],
    )
    assert library.origin == "acme-fixes" and problems == []
    assert "fixes" not in sys.modules


def test_other_groups_of_entry_points_are_ignored(site):
    distribution(site, "acme-fixes", "[console_scripts]\nacme = fixes.patches:main\n", NEW_LIBRARY)
    assert plugins.find(OWN) == ([], [])


def test_an_id_another_distribution_has_is_a_problem_of_the_second(site):
    distribution(site, "acme-fixes", "[gpushim.patches]\nacme = fixes.patches\n", NEW_LIBRARY)
    distribution(site, "zeta-fixes", "[gpushim.patches]\nzeta = fixes.patches\n", {})
    (library,), (problem,) = plugins.find(OWN)
    assert library.origin == "acme-fixes"
    assert (problem["id"], problem["reason"]) == ("zeta-fixes:lib.one", "acme-fixes already has a patch lib.one")


def test_a_known_library_takes_gpushims_target_and_refuses_another(site):
    files = {
        "fixes/__init__.py": "",
        "fixes/patches/__init__.py": "",
        "fixes/patches/warp/__init__.py": '"""Warp."""\n',
        "fixes/patches/warp/acme_fix.py": "",
        "other/__init__.py": "",
        "other/warp/__init__.py": 'TARGET = "warp"\nDISTRIBUTIONS = ("warp",)\n',
        "other/warp/other_fix.py": "",
    }
    distribution(site, "acme-fixes", "[gpushim.patches]\nacme = fixes.patches\nother = other\n", files)
    (library,), (problem,) = plugins.find(OWN)
    assert (library.target, library.distributions, library.ids) == ("warp", ("warp-lang",), ["warp.acme_fix"])
    assert problem["id"] == "acme-fixes:other" and "disagrees with gpushim's" in problem["reason"]


@pytest.mark.parametrize(
    "init, reason",
    [
        ('TARGET = "lib"\n', "states no TARGET and DISTRIBUTIONS"),
        ('TARGET = lib_name\nDISTRIBUTIONS = ("lib",)\n', "TARGET is not a string literal"),
        ('TARGET = "lib"\nDISTRIBUTIONS = "lib"\n', "DISTRIBUTIONS is not a tuple of string literals"),
    ],
)
def test_a_new_library_must_state_its_target_and_distributions_as_literals(site, init, reason):
    files = {**NEW_LIBRARY, "fixes/patches/lib/__init__.py": init}
    distribution(site, "acme-fixes", "[gpushim.patches]\nacme = fixes.patches\n", files)
    libraries, (problem,) = plugins.find(OWN)
    assert libraries == [] and reason in problem["reason"]


def test_only_the_first_install_of_a_distribution_counts(tmp_path, monkeypatch):
    first, second = tmp_path / "first", tmp_path / "second"
    distribution(first, "acme-fixes", "[console_scripts]\nacme = fixes:main\n", {})
    distribution(second, "acme-fixes", "[gpushim.patches]\nacme = fixes.patches\n", NEW_LIBRARY)
    monkeypatch.setattr(sys, "path", [str(first), str(second)])
    assert plugins.declarations() == []


def _entry_points_a_directory(site):
    (site / "bad-1.0.dist-info" / "entry_points.txt").mkdir(parents=True)


def _zipped(site, spoil):
    """A zip on ``sys.path`` holding ``bad-1.0.dist-info``, whose ``entry_points.txt`` ``spoil`` edits in the bytes."""
    archive = site / "bad.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        zipped.writestr("bad-1.0.dist-info/METADATA", "Name: bad\nVersion: 1.0\n")
        zipped.writestr("bad-1.0.dist-info/entry_points.txt", ACME)
        (member,) = [info for info in zipped.infolist() if info.filename.endswith("entry_points.txt")]
    data = bytearray(archive.read_bytes())
    spoil(data, member)
    archive.write_bytes(data)
    sys.path.append(str(archive))


def _unknown_compression(data, member):
    """The member's compression method, in the central directory, set to 99, which no zip reader knows."""
    name = member.filename.encode()
    central = data.index(b"PK\x01\x02")
    while data[central + 46 : central + 46 + len(name)] != name:
        central = data.index(b"PK\x01\x02", central + 1)
    data[central + 10 : central + 12] = (99).to_bytes(2, "little")


def _will_not_inflate(data, member):
    start = member.header_offset + 30 + len(member.filename) + len(member.extra)
    data[start : start + member.compress_size] = b"\xff" * member.compress_size


@pytest.mark.parametrize(
    "spoil",
    [
        _entry_points_a_directory,
        lambda site: _zipped(site, _unknown_compression),
        lambda site: _zipped(site, _will_not_inflate),
    ],
    ids=["a directory", "zipped in an unknown compression", "zipped data that will not inflate"],
)
def test_a_distribution_whose_entry_points_cannot_be_read_costs_only_itself(site, spoil):
    distribution(site, "acme-fixes", ACME, NEW_LIBRARY)
    spoil(site)
    (library,), problems = plugins.find(OWN)
    assert library.ids == ["lib.one"] and problems == []


# Before the import, the child gets 512 MiB of address space: reading a whole 1 GiB file would not fit.
FINDS_LIB_ONE = """
import resource
resource.setrlimit(resource.RLIMIT_AS, (512 << 20, 512 << 20))
import gpushim.auto, gpushim
print([id for id in gpushim.registry().ids if id.startswith("lib.")])
"""


@pytest.mark.parametrize(
    "entry_points",
    [
        lambda path: os.mkfifo(path),
        lambda path: os.symlink("/dev/zero", path),
        lambda path: path.touch() or os.truncate(path, 1 << 30),  # sparse: it takes no room on disk
    ],
    ids=["a FIFO", "a link to /dev/zero", "a file of 1 GiB"],
)
def test_import_gpushim_auto_reads_entry_points_as_metadata_is_read_regular_files_and_bounded(tmp_path, entry_points):
    distribution(tmp_path, "acme-fixes", ACME, NEW_LIBRARY)
    (tmp_path / "hostile-1.0.dist-info").mkdir()
    entry_points(tmp_path / "hostile-1.0.dist-info" / "entry_points.txt")
    finished = run_python(FINDS_LIB_ONE, env={"PYTHONPATH": str(tmp_path)}, timeout=60)
    assert (finished.returncode, finished.stdout) == (0, "['lib.one']\n"), finished.stderr


LEFTOVER_RECORDS = {
    "a file replaced since": {"fixes/__init__.py": b"def main():\n    pass\n"},
    "only a file left unchanged": {"fixes/__init__.py": NEW_LIBRARY["fixes/__init__.py"].encode()},
    "no RECORD": None,
}


@pytest.mark.parametrize("record", list(LEFTOVER_RECORDS))
def test_of_two_installs_in_one_entry_the_one_that_owns_the_files_declares(site, record):
    """``pip install --target --upgrade`` from 0.9, which declared no patches, to 1.0 leaves 0.9's folder behind,
    whose RECORD lists ``record``."""
    distribution(site, "acme-fixes", ACME, NEW_LIBRARY)
    write_record(site / "acme_fixes-1.0.dist-info", {path: (site / path).read_bytes() for path in NEW_LIBRARY})
    leftover = site / "acme_fixes-0.9.dist-info"
    leftover.mkdir()
    (leftover / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-fixes\nVersion: 0.9\n")
    (leftover / "entry_points.txt").write_text("[console_scripts]\nacme = fixes:main\n")
    if LEFTOVER_RECORDS[record] is not None:
        write_record(leftover, LEFTOVER_RECORDS[record])
    (library,), problems = plugins.find(OWN)
    assert library.ids == ["lib.one"] and problems == []
