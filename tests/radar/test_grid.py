"""The radar's grid: which points matrix/radar.toml makes, which it leaves out, and what each installs."""

from __future__ import annotations

import pytest

from matrix.cells import load_cells
from matrix.radar import Grid, Point, parse_selection, report

GRID = """
pythons = ["3.8", "3.12"]

[dimensions.numpy]
"1.x" = "numpy<2"
"2.x" = "numpy>=2,<3"

[dimensions.setuptools]
new = "setuptools"
none = ""

[libraries.warp]
distribution = "warp-lang"
releases = ["1.0.2", "1.6.0"]
dimensions = ["numpy"]

[libraries.dali]
distribution = "nvidia-dali-cuda120"
releases = ["1.35.0"]
dimensions = ["numpy", "setuptools"]

[[exclude]]
why = "NumPy 2 has no wheel for Python 3.8"
python = "3.8"
numpy = "2.x"

[[exclude]]
why = "no wheel"
library = "warp"
release = ["1.6.0", "9.9.9"]
python = "3.12"
"""


@pytest.fixture
def grid(tmp_path):
    path = tmp_path / "radar.toml"
    path.write_text(GRID)
    return Grid.load(path)


def test_each_release_meets_each_python_and_each_combination_of_its_librarys_dimensions(grid):
    ids = [point.id for point in grid.every_point()]
    assert ids[:4] == [
        "warp-1.0.2-py3.8-numpy-1.x",
        "warp-1.0.2-py3.8-numpy-2.x",
        "warp-1.0.2-py3.12-numpy-1.x",
        "warp-1.0.2-py3.12-numpy-2.x",
    ]
    assert len(ids) == 2 * 2 * 2 + 1 * 2 * 2 * 2
    assert "dali-1.35.0-py3.12-numpy-2.x-setuptools-none" in ids


def test_a_point_is_excluded_when_every_key_of_an_entry_matches_one_of_its_values(grid):
    assert grid.exclusion(Point("dali", "1.35.0", "3.8", (("numpy", "2.x"), ("setuptools", "none")))) == (
        "NumPy 2 has no wheel for Python 3.8"
    )
    assert grid.exclusion(Point("warp", "1.6.0", "3.12", (("numpy", "1.x"),))) == "no wheel"
    assert grid.exclusion(Point("warp", "1.6.0", "3.8", (("numpy", "1.x"),))) is None
    assert len(grid.points()) == len(grid.every_point()) - 2 - 2 - 2


def test_only_the_environments_requirements_are_forced_over_the_releases_pins(grid):
    point = Point("dali", "1.35.0", "3.12", (("numpy", "2.x"), ("setuptools", "none")))
    assert grid.requirements(point) == ["nvidia-dali-cuda120==1.35.0", "numpy>=2,<3"]
    assert grid.overrides(point) == ["numpy>=2,<3"]


def test_a_selection_keeps_points_with_one_of_its_values_for_each_key_they_have(grid):
    selection = parse_selection(["library=dali", "setuptools=none,new", "python=3.12"])
    assert selection == {"library": ["dali"], "setuptools": ["none", "new"], "python": ["3.12"]}
    assert [point.id for point in grid.points(selection)] == [
        "dali-1.35.0-py3.12-numpy-1.x-setuptools-new",
        "dali-1.35.0-py3.12-numpy-1.x-setuptools-none",
        "dali-1.35.0-py3.12-numpy-2.x-setuptools-new",
        "dali-1.35.0-py3.12-numpy-2.x-setuptools-none",
    ]
    assert grid.points(parse_selection(["setuptools=none"])) == grid.points(parse_selection(["library=warp"])) + [
        point for point in grid.points() if point.value("library") == "dali" and point.value("setuptools") == "none"
    ]


def test_every_exclusion_of_the_radars_grid_leaves_out_a_point():
    grid = Grid.load()
    reasons = {grid.exclusion(point) for point in grid.every_point()}
    assert {entry["why"] for entry in grid.document["exclude"]} <= reasons


def test_the_release_cells_load_beside_the_radars_grid():
    assert "warp-1.6.0" in load_cells()


def test_the_report_shows_each_point_without_and_with_gpushim_and_names_the_first_failed_check(grid):
    failing = {"checks": {"import": "ok", "arrays": "ValueError: Unable to avoid copy", "kernel": "ok"}}
    passing = {"checks": {"import": "ok", "arrays": "ok", "kernel": "ok"}}
    results = {"warp-1.0.2-py3.12-numpy-2.x": {"date": "2026-11-25", "without": failing, "with": passing}}
    text = report(grid, results)
    assert "| 3.12 | 2.x | F1 / ok | n/a |" in text
    assert "- F1: `arrays: ValueError: Unable to avoid copy` (1 / 0)" in text
    assert "1 of the grid's 10 points run, the last on 2026-11-25: 1 fail" in text
    assert "nvidia-dali-cuda120" not in text
