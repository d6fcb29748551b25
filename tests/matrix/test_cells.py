"""A cell's keys are checked as its ``matrix/*.toml`` loads: a misspelled one raises instead of being ignored."""

from __future__ import annotations

import pytest

from matrix import cells

LIBRARY = """
tests = "tests/warp"

[[cells]]
name = "warp-1.6.0"
install = ["warp-lang==1.6.0"]
gpu = false
"""


@pytest.fixture
def matrix(tmp_path, monkeypatch):
    monkeypatch.setattr(cells, "MATRIX", tmp_path)
    return tmp_path


def test_a_cell_loads_with_its_librarys_keys(matrix):
    (matrix / "warp.toml").write_text(LIBRARY)
    assert cells.load_cells()["warp-1.6.0"]["tests"] == "tests/warp"


def test_a_misspelled_key_of_a_cell_raises_naming_the_cell_the_key_and_the_known_keys(matrix):
    (matrix / "warp.toml").write_text(LIBRARY + 'no_deps = ["numpy==2.2.6"]\n')
    with pytest.raises(ValueError) as raised:
        cells.load_cells()
    assert str(raised.value) == (
        "matrix/warp.toml, cell 'warp-1.6.0': unknown key 'no_deps'; the keys are name, install, gpu, python, demo, "
        "pip, no-deps, pytest, tests, benchmarks, gpu-install, gpu-pip"
    )


def test_a_misspelled_key_of_a_library_raises(matrix):
    (matrix / "warp.toml").write_text(LIBRARY + '[reference]\n"warp.x" = "warp-lang-1.6.1"\n')
    with pytest.raises(ValueError, match=r"^matrix/warp\.toml: unknown key 'reference'; the keys are cells, install"):
        cells.load_cells()


def test_a_cell_without_a_required_key_raises(matrix):
    (matrix / "warp.toml").write_text(LIBRARY.replace("gpu = false\n", ""))
    with pytest.raises(ValueError, match=r"^matrix/warp\.toml, cell 'warp-1\.6\.0': no 'gpu'; the keys are"):
        cells.load_cells()


def test_a_cell_named_twice_raises_instead_of_one_hiding_the_other(matrix):
    (matrix / "warp.toml").write_text(LIBRARY + LIBRARY.split("\n", 2)[2])
    with pytest.raises(ValueError, match="cells named twice, one hiding the other: warp-1.6.0"):
        cells.load_cells()
