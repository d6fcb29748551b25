"""gpushim.releases answers what importlib.metadata and packaging answer, without importing them.

Installs are made under ``tmp_path`` in every shape the module docstring
names and asked of both; then every distribution of the environment running
the tests is; then a seeded sweep of versions and specifiers is put to both
gpushim and ``packaging``.  The reference is ``importlib.metadata`` as of
Python 3.10, which normalises names as PEP 503 does; on 3.9 only the
canonical spelling is compared.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
import threading
import types
import zipfile
from importlib import metadata

import pytest
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from gpushim import releases
from tests.engine.synthetic import Target, make_patch, registry_for, state_of, write_distribution, write_record


def header(name, version, newline="\n"):
    lines = ["Metadata-Version: 2.1", f"Name: {name}"]
    if version is not None:
        lines.append(f"Version: {version}")
    lines += ["Summary: made by tests/engine/test_releases.py", "", "Version: 0.0.0 (in the body)", ""]
    return newline.join(lines)


def dist_info(root, folder, name, version, *, file="METADATA", newline="\n"):
    path = root / folder
    path.mkdir(parents=True)
    (path / file).write_bytes(header(name, version, newline).encode())
    return path


def importlib_answer(distribution, paths):
    found = []
    for install in metadata.distributions(name=distribution, path=paths):
        if (distribution, install.version) not in found:
            found.append((distribution, install.version))
    return found


def spellings(names):
    """The names to ask importlib.metadata: 3.9's only finds the canonical one (3.10 normalises as PEP 503)."""
    return names if sys.version_info >= (3, 10) else names[:1]


def gpushim_answer(distribution, paths, monkeypatch):
    monkeypatch.setattr(sys, "path", paths)
    return releases.installed((distribution,))


# (folder under tmp_path, Name, Version, the names a patch could ask for)
SHAPES = [
    ("cupy_cuda12x-13.3.0.dist-info", "cupy-cuda12x", "13.3.0", ["cupy-cuda12x", "cupy_cuda12x", "CuPy.CUDA12x"]),
    ("Foo_Bar-1.2.dist-info", "Foo-Bar", "1.2", ["foo-bar", "Foo.Bar", "FOO__bar", "foo_bar", "foo--.bar"]),
    ("zope.interface-6.0.dist-info", "zope.interface", "6.0", ["zope.interface", "zope-interface", "Zope_Interface"]),
    ("warp_lang-1.6.0rc1.dist-info", "warp-lang", "1.6.0rc1", ["warp-lang"]),
    ("nvidia_dali_cuda120-1.35.0+local.5.dist-info", "nvidia-dali-cuda120", "1.35.0+local.5", ["nvidia-dali-cuda120"]),
    ("disagrees-1.0.dist-info", "disagrees", "2.0", ["disagrees"]),
    ("noversion-1.0.dist-info", "noversion", None, ["noversion"]),
    ("garbage-13.3.0.dist-info", "garbage", "13.3.0garbage!", ["garbage"]),
    ("legacy-1.0-py3.11.egg-info", "legacy", "1.0", ["legacy", "Legacy"]),
    ("Develop_Me.egg-info", "develop-me", "0.4.dev0", ["develop-me", "develop.me"]),
    ("unversioned.dist-info", "unversioned", "3.1", ["unversioned"]),
]


@pytest.mark.parametrize(("folder", "name", "version", "asked"), SHAPES, ids=[shape[0] for shape in SHAPES])
def test_a_dist_info_or_egg_info_folder(tmp_path, monkeypatch, folder, name, version, asked):
    dist_info(tmp_path, folder, name, version, file="PKG-INFO" if folder.endswith(".egg-info") else "METADATA")
    for distribution in spellings(asked) + ["somebody-else"]:
        expected = importlib_answer(distribution, [str(tmp_path)])
        assert gpushim_answer(distribution, [str(tmp_path)], monkeypatch) == expected
    assert expected == []
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    assert all(releases.installed((distribution,)) == [(distribution, version)] for distribution in asked)


def test_metadata_variants_read_as_importlib_metadata_reads_them(tmp_path, monkeypatch):
    dist_info(tmp_path, "crlf-1.0.dist-info", "crlf", "1.0", newline="\r\n")
    dist_info(tmp_path, "cr-1.0.dist-info", "cr", "1.0", newline="\r")
    dist_info(tmp_path, "spaced-1.0.dist-info", "spaced", "\t1.0 ", newline="\n")
    empty = dist_info(tmp_path, "fallback-1.0.dist-info", "fallback", "5.0", file="PKG-INFO")
    (empty / "METADATA").write_text("")
    (tmp_path / "distutils-2.0-py3.11.egg-info").write_text(header("distutils", "2.0"))
    lower = dist_info(tmp_path, "lowerkey-1.0.dist-info", "lowerkey", None)
    (lower / "METADATA").write_text("Name: lowerkey\nversion: 7.0\n")
    broken = dist_info(tmp_path, "broken-1.0.dist-info", "broken", None)
    (broken / "METADATA").write_text("Name: broken\nthis is no header\nVersion: 1.0\n")
    folded = dist_info(tmp_path, "folded-1.0.dist-info", "folded", None)
    (folded / "METADATA").write_text("Name: folded\nSummary: one\n  two\nVersion: 8.0\n")
    (tmp_path / "nometadata-1.0.dist-info").mkdir()
    answers = {}
    for distribution in ["crlf", "cr", "spaced", "fallback", "distutils", "lowerkey", "broken", "folded", "nometadata"]:
        expected = importlib_answer(distribution, [str(tmp_path)])
        answers[distribution] = gpushim_answer(distribution, [str(tmp_path)], monkeypatch)
        assert answers[distribution] == expected
    assert answers["spaced"] == [("spaced", "1.0 ")]
    assert answers["fallback"] == [("fallback", "5.0")]
    assert answers["broken"] == [("broken", None)]
    assert answers["nometadata"] == [("nometadata", None)]


def test_editable_installs(tmp_path, monkeypatch):
    site = tmp_path / "site-packages"
    # PEP 660, as setuptools leaves it: a finder module, a .pth that installs it, an ordinary dist-info.
    info = dist_info(site, "my_project-0.3.0.dist-info", "my-project", "0.3.0")
    (info / "direct_url.json").write_text('{"url": "file:///src/my-project", "dir_info": {"editable": true}}')
    (site / "__editable__.my_project-0.3.0.pth").write_text("import __editable___my_project_0_3_0_finder\n")
    (site / "__editable___my_project_0_3_0_finder.py").write_text("def install():\n    pass\n")
    # setup.py develop: a link in site-packages, the source tree on the path with its versionless egg-info.
    source = tmp_path / "source"
    dist_info(source, "old_project.egg-info", "old-project", "2.1", file="PKG-INFO")
    (site / "old-project.egg-link").write_text(f"{source}\n.")
    paths = [str(site), str(source)]
    for distribution in ["my-project", "old-project"]:
        assert gpushim_answer(distribution, paths, monkeypatch) == importlib_answer(distribution, paths)
    assert releases.installed(("my-project", "old-project")) == [("my-project", "0.3.0"), ("old-project", "2.1")]


def test_an_egg_on_the_path_and_a_zip_on_the_path(tmp_path, monkeypatch):
    egg = tmp_path / "Some.Egg-4.0-py3.11.egg"
    dist_info(egg, "EGG-INFO", "Some.Egg", "4.0", file="PKG-INFO")
    archive = tmp_path / "app.pyz"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("zipped_dist-9.1.dist-info/METADATA", header("zipped-dist", "9.1"))
        zipped.writestr("zipped_dist/__init__.py", "")
    paths = [str(egg), str(archive)]
    for distribution in spellings(["some.egg", "Some.Egg", "some-egg"]) + spellings(["zipped-dist", "zipped.dist"]):
        assert gpushim_answer(distribution, paths, monkeypatch) == importlib_answer(distribution, paths)
    assert releases.installed(("some.egg", "zipped-dist")) == [("some.egg", "4.0"), ("zipped-dist", "9.1")]


def test_every_install_is_reported_in_path_order(tmp_path, monkeypatch):
    first, second = tmp_path / "first", tmp_path / "second"
    dist_info(first, "twice-1.0.dist-info", "twice", "1.0")
    dist_info(first, "twice-2.0.dist-info", "twice", "2.0")
    dist_info(second, "twice-3.0.dist-info", "twice", "3.0")
    dist_info(second, "Twice-1.0.dist-info", "twice", "1.0")
    paths = [str(first), str(second), str(first)]
    found = gpushim_answer("twice", paths, monkeypatch)
    assert found == [("twice", "1.0"), ("twice", "2.0"), ("twice", "3.0")]
    assert sorted(found) == sorted(importlib_answer("twice", paths))
    monkeypatch.setattr(sys, "path", [str(second)])
    assert releases.installed(("twice",)) == [("twice", "1.0"), ("twice", "3.0")]


def test_answers_are_read_when_asked_even_where_a_folder_keeps_its_time(tmp_path, monkeypatch):
    dist_info(tmp_path, "kept-1.0.dist-info", "kept", "1.0")
    assert gpushim_answer("kept", [str(tmp_path)], monkeypatch) == [("kept", "1.0")]
    times = [(path, os.stat(path)) for path in (tmp_path, tmp_path / "kept-1.0.dist-info")]
    (tmp_path / "kept-1.0.dist-info" / "METADATA").write_text(header("kept", "1.1"))
    dist_info(tmp_path, "kept-2.0.dist-info", "kept", "2.0")
    for path, before in times:
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert releases.installed(("kept",)) == [("kept", "1.1"), ("kept", "2.0")]


def test_metadata_that_is_no_regular_file_is_no_version(tmp_path, monkeypatch):
    fifo = tmp_path / "fifo-1.0.dist-info"
    fifo.mkdir()
    os.mkfifo(fifo / "METADATA")
    (tmp_path / "zero-1.0.dist-info").mkdir()
    os.symlink("/dev/zero", tmp_path / "zero-1.0.dist-info" / "METADATA")
    answers = []
    asking = threading.Thread(
        target=lambda: answers.append(
            gpushim_answer("fifo", [str(tmp_path)], monkeypatch) + releases.installed(["zero"])
        ),
        daemon=True,
    )
    asking.start()
    asking.join(timeout=30)
    assert answers == [[("fifo", None), ("zero", None)]]


def test_a_path_entry_that_is_a_fifo_is_skipped(tmp_path, monkeypatch):
    os.mkfifo(tmp_path / "entry")
    dist_info(tmp_path / "site", "there-1.0.dist-info", "there", "1.0")
    answers = []
    paths = [str(tmp_path / "entry"), str(tmp_path / "site")]
    asking = threading.Thread(target=lambda: answers.append(gpushim_answer("there", paths, monkeypatch)), daemon=True)
    asking.start()
    asking.join(timeout=30)
    assert answers == [[("there", "1.0")]]


def test_a_zip_on_the_path_is_closed_after_reading(tmp_path, monkeypatch):
    archive = tmp_path / "app.pyz"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("zipped_dist-9.1.dist-info/METADATA", header("zipped-dist", "9.1"))
    assert gpushim_answer("zipped-dist", [str(archive)], monkeypatch) == [("zipped-dist", "9.1")]
    open_files = [os.path.realpath(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")]
    assert str(archive) not in open_files


def test_the_installs_with_a_module_are_those_beside_its_package(tmp_path, monkeypatch):
    stray, site = tmp_path / "stray", tmp_path / "site"
    dist_info(stray, "beside-1.0.dist-info", "beside", "1.0")
    dist_info(site, "beside-2.0.dist-info", "beside", "2.0")
    monkeypatch.setattr(sys, "path", [str(stray), str(site)])
    origin = str(site / "beside" / "sub" / "__init__.py")
    assert releases.installed_with("beside.sub", origin, ["beside"]) == [("beside", "2.0")]
    assert releases.installed_with("beside_module", str(site / "beside_module.py"), ["beside"]) == [("beside", "2.0")]
    # An editable install: the module lives in a source tree, its metadata in site-packages.
    editable = str(tmp_path / "source" / "beside" / "__init__.py")
    assert releases.installed_with("beside", editable, ["beside"]) == [("beside", "1.0"), ("beside", "2.0")]


def upgraded_in_place(site, leftover, installed):
    """``upgraded`` at ``installed``, beside the folder of ``leftover`` that ``pip install --target --upgrade`` left."""
    (site / "upgraded").mkdir(parents=True)
    for version in (leftover, installed):
        (site / "upgraded" / "__init__.py").write_text(f"__version__ = {version!r}\n")
        folder = dist_info(site, f"upgraded-{version}.dist-info", "upgraded", version)
        write_record(folder, {path: (site / path).read_bytes() for path in ("upgraded/__init__.py",)})


def test_a_folder_whose_files_were_replaced_since_is_no_install(tmp_path, monkeypatch):
    """Of two installs in one entry, the one whose RECORD the files there agree with owns them."""
    upgraded_in_place(tmp_path, leftover="1.0", installed="2.0")
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    origin = str(tmp_path / "upgraded" / "__init__.py")
    assert releases.installed(("upgraded",)) == releases.installed_with("upgraded", origin, ["upgraded"])
    assert releases.installed(("upgraded",)) == [("upgraded", "2.0")]


def test_a_downgrade_in_place_is_the_older_release(tmp_path, monkeypatch):
    upgraded_in_place(tmp_path, leftover="3.0", installed="2.0")
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    assert releases.installed(("upgraded",)) == [("upgraded", "2.0")]


def test_a_distribution_finder_on_the_meta_path_is_asked_through_importlib(tmp_path, monkeypatch):
    elsewhere = dist_info(tmp_path, "hidden-5.5.dist-info", "hidden", "5.5")

    class Finder:
        @staticmethod
        def find_spec(*args):
            return None

        @staticmethod
        def find_distributions(context):
            if context.name in ("hidden", None):
                yield metadata.PathDistribution(elsewhere)

    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder])
    assert releases.installed(("hidden",)) == [("hidden", "5.5")]


def test_every_distribution_of_this_environment():
    names = {install.metadata["Name"] for install in metadata.distributions()}
    assert names
    for name in sorted(names):
        found = releases.installed((name,))
        assert sorted(found) == sorted(importlib_answer(name, sys.path))
        if len(found) == 1:
            assert found == [(name, metadata.version(name))]


def test_the_normal_path_imports_neither_importlib_metadata_nor_packaging():
    code = textwrap.dedent(
        """
        import sys
        from gpushim import releases
        [(name, version)] = releases.installed(("wrapt",))
        releases.is_affected(version, ">=1.14,!=2.2.0")
        releases.same_release(version, version)
        print(" ".join(sorted(m for m in sys.modules if m.startswith(("importlib.metadata", "packaging")))))
        """
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.split() == []


# --- the gate: the release of what is imported, read at its import ---------------------------


def test_a_library_installed_after_status_is_gated_at_its_import(syspath):
    first = Target(syspath)
    registry = registry_for(make_patch(first, id="synth.first"))
    registry.patch()
    first.import_()
    registry.status()
    later = Target(syspath, distribution="synthlater")
    registry = registry_for(make_patch(later))
    registry.patch()
    later.import_()
    assert state_of(registry)["state"] == "applied"


def test_an_upgrade_that_keeps_the_folders_times_is_gated_as_upgraded(syspath):
    target = Target(syspath, version="1.5.0")
    registry = registry_for(make_patch(target))
    registry.patch()
    assert state_of(registry)["installed_version"] == "1.5.0"
    folder = syspath / "synthlib_cuda12-1.5.0.dist-info"
    times = [(path, os.stat(path)) for path in (syspath, folder, syspath / target.name)]
    (folder / "METADATA").write_text("Metadata-Version: 2.1\nName: synthlib-cuda12\nVersion: 2.5.0\n")
    (syspath / target.name / "__init__.py").write_text('__version__ = "2.5.0"\n\ndef compute(x):\n    return x + 1\n')
    for path, before in times:
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert target.import_().compute(1) == 2
    assert (state_of(registry)["state"], state_of(registry)["installed_version"]) == ("not-affected", "2.5.0")


def test_an_install_without_a_version_does_not_hide_the_one_that_matches(syspath):
    target = Target(syspath)
    (syspath / "synthlib_cuda12-0.dist-info").mkdir()
    registry = registry_for(make_patch(target))
    registry.patch()
    target.import_()
    assert (state_of(registry)["state"], state_of(registry)["installed_version"]) == ("applied", "1.5.0")


def test_only_with_asks_the_loaded_dependency_before_its_metadata(syspath, monkeypatch):
    stray = syspath / "stray"
    stray.mkdir()
    write_distribution(stray, "synthdep", "1.0")
    write_distribution(syspath, "synthdep", "2.0")
    monkeypatch.syspath_prepend(str(stray))
    monkeypatch.setitem(sys.modules, "synthdep", types.ModuleType("synthdep"))
    sys.modules["synthdep"].__version__ = "2.0"
    target = Target(syspath)
    registry = registry_for(make_patch(target, only_with={"synthdep": ">=2"}))
    registry.patch()
    target.import_()
    assert state_of(registry)["state"] == "applied"
    del sys.modules["synthdep"]
    assert state_of(registry)["reason"] == "synthdep 2.0 >=2"  # applied stays applied; a forecast reads the metadata:
    assert registry_for(make_patch(target, only_with={"synthdep": ">=2"})).record("synth.compute")["state"] == (
        "not-affected"
    )


# --- ranges -----------------------------------------------------------------------------------


def packaging_answer(version, specifier):
    try:
        parsed = Version(version)
    except InvalidVersion:
        return "BadVersion"
    try:
        return SpecifierSet(specifier).contains(parsed, prereleases=True)
    except InvalidSpecifier:
        return "BadVersion"


def gpushim_range_answer(version, specifier):
    try:
        return releases.is_affected(version, specifier)
    except releases.BadVersion:
        return "BadVersion"


def plain_version(rng):
    parts = [rng.choice(["0", "1", "2", "3", "9", "10", "13", "01", "00"]) for _ in range(rng.randint(1, 4))]
    return ".".join(parts)


def any_version(rng):
    version = plain_version(rng)
    if rng.random() < 0.4:
        version += rng.choice(["rc1", "a0", "b2", ".post1", ".dev0", "+cu12", "+local.1", ".0rc1", "-1", "garbage!"])
    if rng.random() < 0.05:
        version = rng.choice(["1!", "v", " ", ""]) + version
    return version


def any_specifier(rng):
    clauses = []
    for _ in range(rng.randint(0, 3)):
        if rng.random() < 0.8:
            operator = rng.choice([">=", "<", "<=", ">", "==", "!="])
            bound = plain_version(rng)
        else:
            operator = rng.choice(["~=", "===", "==", "!=", ">=", "<", "=>", "<>", ""])
            bound = rng.choice([plain_version(rng) + ".*", any_version(rng), plain_version(rng)])
        clauses.append(operator + rng.choice(["", " "]) + bound)
    separator = rng.choice([",", ", ", " ,"])
    return separator.join(clauses) if rng.random() < 0.95 else separator.join(clauses) + ","


def test_ranges_agree_with_packaging_on_a_seeded_sweep():
    rng = random.Random(14)
    fast = slow = 0
    for _ in range(6000):
        version = plain_version(rng) if rng.random() < 0.6 else any_version(rng)
        specifier = any_specifier(rng)
        assert gpushim_range_answer(version, specifier) == packaging_answer(version, specifier), (version, specifier)
        if releases._plain(version) is not None and releases._plain_clauses(specifier) is not None:
            fast += 1
        else:
            slow += 1
    assert fast > 1500 and slow > 1500


@pytest.mark.parametrize(
    ("version", "specifier", "affected"),
    [
        ("13.3.0", ">=13.2.0,<13.4.1", True),
        ("13.2", ">=13.2.0,<13.4.1", True),
        ("13.4.1", ">=13.2.0,<13.4.1", False),
        ("13.4.1rc1", ">=13.2.0,<13.4.1", False),
        ("13.4.0.post1", ">=13.2.0,<13.4.1", True),
        ("1.6.0", "<1.7.0", True),
        ("1.7", "<1.7.0", False),
        ("1.35.0", "==1.35", True),
        ("1.35.0+cu12", "==1.35", True),
    ],
)
def test_the_ranges_patches_declare(version, specifier, affected):
    assert releases.is_affected(version, specifier) is affected


def test_same_release_agrees_with_packaging():
    rng = random.Random(12)
    for _ in range(3000):
        a = plain_version(rng) if rng.random() < 0.5 else any_version(rng)
        b = rng.choice([a, plain_version(rng), any_version(rng), a + ".0", a.rstrip(".0") or "0"])
        try:
            expected = Version(a) == Version(b)
        except InvalidVersion:
            expected = a == b
        assert releases.same_release(a, b) is expected, (a, b)


@pytest.mark.parametrize(
    ("version", "specifier", "reason"),
    [
        (None, ">=1", "the installed metadata states no Version"),
        ("13.3.0garbage!", ">=13.2.0,<13.4.1", "'13.3.0garbage!' is not a PEP 440 version"),
        ("", ">=13.2.0", "'' is not a PEP 440 version"),
        ("13.3.0", ">=13.2.0;<13.4.1", "'>=13.2.0;<13.4.1' is not a PEP 440 specifier"),
    ],
)
def test_what_cannot_be_placed_is_a_bad_version_with_its_reason(version, specifier, reason):
    with pytest.raises(releases.BadVersion) as raised:
        releases.is_affected(version, specifier)
    assert str(raised.value) == reason
    assert isinstance(raised.value, ValueError)


def test_without_packaging_only_unusual_versions_fail(monkeypatch):
    for module in ("packaging", "packaging.version", "packaging.specifiers"):
        monkeypatch.setitem(sys.modules, module, None)
    assert releases.is_affected("13.3.0", ">=13.2.0,<13.4.1") is True
    assert releases.is_affected("13.4.1", ">=13.2.0,<13.4.1") is False
    assert releases.same_release("13.3", "13.3.0") is True
    assert releases.same_release("13.3.0rc1", "13.3.0rc1") is True
    for version, specifier in [("13.3.0rc1", ">=13.2.0,<13.4.1"), ("13.3.0", "~=13.2"), ("13.3.0garbage!", ">=1")]:
        with pytest.raises(releases.BadVersion, match="needs the packaging library, which cannot be imported"):
            releases.is_affected(version, specifier)
