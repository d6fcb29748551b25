"""How other distributions' patches are found: entry points read as pip writes them, packages never executed.

Distributions are written by hand here (a ``.dist-info`` with its
``entry_points.txt`` and a package), put alone on ``sys.path``; the
installed example and broken distributions are in test_plugins.py.
"""

from __future__ import annotations

import sys

import pytest

from gpushim import catalogue, plugins

OWN = catalogue.discover("gpushim.patches")


def distribution(site, name, entry_points, files):
    dist_info = site / f"{name.replace('-', '_')}-1.0.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (dist_info / "entry_points.txt").write_text(entry_points)
    for path, text in files.items():
        (site / path).parent.mkdir(parents=True, exist_ok=True)
        (site / path).write_text(text)


@pytest.fixture
def site(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    return tmp_path


NEW_LIBRARY = {
    "fixes/__init__.py": "raise RuntimeError('executed')\n",
    "fixes/patches/__init__.py": "raise RuntimeError('executed')\n",
    "fixes/patches/lib/__init__.py": 'TARGET = "lib"  # the module\nDISTRIBUTIONS = ("lib-dist",)\n',
    "fixes/patches/lib/one.py": "",
    "fixes/patches/lib/_helpers.py": "",
}


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
