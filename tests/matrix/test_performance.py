"""docs/performance.md's figures are the benchmarks' own output, written by ``nox -s results``."""

from __future__ import annotations

from matrix import results
from matrix.cells import load_cells


def blocks() -> list[tuple[str, str]]:
    return [(match[2], match[3]) for match in results._FIGURES.finditer(results.PERFORMANCE.read_text())]


def test_each_figure_block_names_a_benchmark_its_cell_runs():
    assert blocks()
    for benchmark, cell in blocks():
        assert f"benchmarks/{benchmark}" in load_cells()[cell]["benchmarks"], (benchmark, cell)


def test_a_block_is_refilled_from_its_benchmark_s_last_output_and_the_others_keep_theirs(tmp_path, monkeypatch):
    page = tmp_path / "performance.md"
    page.write_text(results.PERFORMANCE.read_text())
    monkeypatch.setattr(results, "PERFORMANCE", page)
    monkeypatch.setattr(results, "CELLS_DIR", tmp_path)
    index = load_cells()["warp-1.6.0"]["benchmarks"].index("benchmarks/bench_status.py")
    (tmp_path / f"warp-1.6.0.bench{index}.txt").write_text("bench_status.py: ...\nmeasured today\n")
    before = page.read_text()
    results.write_performance()
    after = page.read_text()
    block = "<!-- bench_status.py in warp-1.6.0, written by nox -s results -->\n"
    assert block + "\n```text\nbench_status.py: ...\nmeasured today\n```\n\n<!-- end of figures -->" in after
    assert before.split(block)[0] == after.split(block)[0]
