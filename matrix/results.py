"""Write ``matrix/RESULTS.md`` from what the last matrix run left in the artefacts folder.

Also the figures of ``docs/performance.md``: each block there names the cell
and the benchmark whose last output it shows.

Per cell and patch: its state, whether the contract's probe showed the bug
without gpushim (needed) and not with it (effective), whether its recorded outcomes
equal the reference release's (faithful), and whether an unaffected release
was left alone with its tests passing (harmless); and that patch's GPU tests
in the cell's last run on a device, as its record in ``matrix/gpu-runs/``
says (``python -m matrix.gpu``).  Never edited by hand.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import subprocess
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from matrix.cells import ARTEFACTS, MATRIX, load_cells, load_references, not_run, reference_record, saved

CELLS_DIR = ARTEFACTS / "cells"
GPU_RUNS = MATRIX / "gpu-runs"
PERFORMANCE = MATRIX.parent / "docs" / "performance.md"
_FIGURES = re.compile(r"(<!-- (\S+) in (\S+), written by nox -s results -->\n).*?(?=<!-- end of figures -->)", re.S)


def _tests(path: Path) -> tuple[str, bool]:
    if not path.exists():
        return "not run", False
    suite = ElementTree.parse(path).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    total, failed = int(suite.get("tests")), int(suite.get("failures")) + int(suite.get("errors"))
    skipped = int(suite.get("skipped"))
    text = f"{total - failed - skipped} passed, {failed} failed, {skipped} skipped"
    return text, failed == 0


def gpu_runs() -> dict[str, dict]:
    """The last recorded GPU run of each cell, by cell: records are named ``CELL@DATE.json``."""
    runs = (json.loads(path.read_text()) for path in sorted(GPU_RUNS.glob("*@*.json")))
    return {run["cell"]: run for run in runs}


def _gpu(run: dict | None, id: str | None) -> str:
    """The GPU tests of patch ``id`` (of all patches if None) in ``run``, with its date and device."""
    if run is None:
        return "not run"
    counts = run["tests"] if id is None else run["patches"].get(id)
    if counts is None:
        return "no GPU test"
    return f"{_counts(counts)} ({run['date']}, {run['device'] or 'no CUDA device'})"


def _counts(counts: dict[str, int]) -> str:
    return f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped"


def _faithful(id: str, cell: str, release: str, state: str, references: dict[str, str]) -> str:
    if release == references.get(id):
        return "reference"
    if state not in ("applied", "opt-in"):  # an opt-in patch's tests record its corpus turned on
        return "-"
    mine, theirs = ARTEFACTS / f"{id}@{cell}.json", reference_record(id)
    if not (mine.exists() and theirs):
        return "not recorded"
    same = json.loads(mine.read_text())["outcomes"] == theirs["outcomes"]
    return f"= {references[id]}" if same else f"DIFFERS from {references[id]}"


def _contract_outcomes(path: Path) -> dict[tuple[str, str], list[str]]:
    """The outcomes of the contract's checks in one cell's junit file, by check and patch id."""
    outcomes: dict[tuple[str, str], list[str]] = {}
    if not path.exists():
        return outcomes
    for case in ElementTree.parse(path).getroot().iter("testcase"):
        check, _, parameters = case.get("name", "").partition("[")
        if "test_contract" not in case.get("classname", "") or not parameters:
            continue
        id = parameters.rstrip("]").split("-")[0]
        failed = case.find("failure") is not None or case.find("error") is not None
        outcome = "failed" if failed else "skipped" if case.find("skipped") is not None else "passed"
        outcomes.setdefault((check, id), []).append(outcome)
    return outcomes


def _needed_and_effective(outcomes: dict[tuple[str, str], list[str]], id: str, state: str) -> tuple[str, str]:
    """Whether the contract found the bug without gpushim, and gone with it, for ``id`` in state ``state``.

    A check it skipped (the probe is asked only in and next to its range) says nothing: ``-``.
    """
    needed = outcomes.get(("test_needed_the_probe_shows_the_bug_without_gpushim_exactly_where_it_applies", id), [])
    effective = outcomes.get(("test_effective_with_gpushim_before_or_after_the_target", id), [])
    has_bug = state in ("applied", "opt-in", "not-backported")
    said = {"passed": "yes" if has_bug else "no", "failed": "NOT AS DECLARED"}.get(needed[0] if needed else "", "-")
    if "failed" in effective:
        return said, "NO"
    return said, "yes" if state in ("applied", "opt-in") and "passed" in effective else "-"


def rows() -> list[tuple[str, ...]]:
    references, runs = load_references(), gpu_runs()
    table = []
    for cell in load_cells():
        states = saved(cell, "states")
        tests, passed = _tests(CELLS_DIR / f"{cell}.xml")
        if states is None:
            table.append((cell, "-", "did not run", "-", "-", "-", "-", tests, _gpu(runs.get(cell), None)))
            continue
        outcomes = _contract_outcomes(CELLS_DIR / f"{cell}.xml")
        for record in states["records"]:
            if record["state"] == "not-installed":
                continue
            release = f"{record['distribution']}-{record['installed_version']}"
            needed, effective = _needed_and_effective(outcomes, record["id"], record["state"])
            untouched = record["state"] in ("not-affected", "not-backported")
            harmless = ("yes" if passed else "NO") if untouched else "-"
            faithful = _faithful(record["id"], cell, release, record["state"], references)
            gpu = _gpu(runs.get(cell), record["id"])
            table.append((cell, record["id"], record["state"], needed, effective, faithful, harmless, tests, gpu))
    return table


def _demo_cells(result: dict) -> tuple[str, str]:
    """What the demo says of one self-test verdict: only ``needed`` is a fix that did not work.

    A probe that cannot run here (no CUDA device) proves nothing either way,
    and a bug whose backport this release cannot take is no failed fix: each
    says why in its own words.
    """
    verdict = result["verdict"]
    if result["state"] == "not-backported":
        return "not backported", f"why: {result['reason']}"
    if verdict == "effective":
        return "fixed", f"bug: {result['without']}"
    if verdict == "cannot-run":
        return "cannot run here", f"why: {result['without']}"
    if verdict == "needed":
        return "STILL BROKEN", f"bug: {result['without']}"
    return verdict, result["without"]


def selftest_table(cells: list[str]) -> str:
    """The demo's table: per cell and affected patch, the bug without gpushim and with it.

    Rows are labelled by cell, which tells the environment apart where the
    release alone does not (``cupy-13.2.0-numpy1``).  The last line names
    each cell whose self-test did not run, why, and the command that runs it.
    """
    lines = [("cell", "patch", "with gpushim", "without gpushim")]
    for cell in cells:
        for result in saved(cell, "selftest") or []:
            if result["verdict"].startswith("skipped") or result["verdict"] == "not-needed":
                continue
            lines.append((cell, result["id"], *_demo_cells(result)))
    widths = [max(len(line[i]) for line in lines) for i in range(4)]
    table = "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in lines)
    missing = not_run(cells, "selftest")
    if missing:
        sessions = " ".join(f'"selftest(cell={cell!r})"' for cell in missing)
        reasons = ", ".join(f"{cell} ({why_not_run(cell)})" for cell in missing)
        table += f"\n\nnot run: {reasons}; to run them: nox -s {sessions} demo"
    return table


def why_not_run(cell: str) -> str:
    """Why ``cell``'s session saved nothing: its Python, looked for as nox does, by name on PATH; else not selected."""
    python = load_cells()[cell].get("python")
    if python is None or _runs(f"python{python}"):
        return "not selected, or its session failed"
    return f"python{python} not found on PATH: with pyenv, select {python} too, as the README says"


def _runs(command: str) -> bool:
    """Whether ``command`` starts a Python here: a pyenv shim of a version not selected is on PATH but fails."""
    try:
        return subprocess.run([command, "-c", ""], capture_output=True, timeout=60).returncode == 0
    except OSError:
        return False


def where_it_ran() -> str:
    """What the cells ran on, as their records say."""
    environments = [states["environment"] for cell in load_cells() if (states := saved(cell, "states"))]
    if not environments:
        return "no cell has run"
    machines = sorted({f"{env['machine']}, Python {env['python']}" for env in environments})
    devices = sum(env["cuda_device"] for env in environments)
    gpu = f"a CUDA device in {devices} of them" if devices else "no CUDA device in any"
    return f"{len(environments)} cells ran on {'; '.join(machines)}, {gpu}"


def gpu_run_lines() -> list[str]:
    """Each cell's last GPU run: what it ran on, its totals, and where it did not have what the cell pins."""
    lines = ["Recorded by `python -m matrix.gpu` in `matrix/gpu-runs/` (docs/gpu.md):", ""]
    for run in gpu_runs().values():
        device = f"{run['device'] or 'no CUDA device'} (driver {run['driver']}, CUDA {run['cuda']})"
        releases = ", ".join(f"{name} {version}" for name, version in run["releases"].items())
        lines.append(
            f"- {run['cell']}, {run['date']}: gpushim {run['gpushim']} on {device}, Python {run['python']}, "
            f"{releases}: {_counts(run['tests'])}; not as the cell pins: {'; '.join(run['deviations']) or 'none'}"
        )
    return lines


def write_results() -> None:
    header = ("cell", "patch", "state", "needed", "effective", "faithful", "harmless", "tests", "GPU tests")
    today = datetime.date.today().isoformat()
    lines = [
        "# Release matrix results",
        "",
        f"Generated by `nox -s results` on {today}: {where_it_ran()}. "
        "GPU tests: each patch's in the cell's last recorded run on a device (below). Never edited by hand.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows()]
    lines += ["", "## GPU runs", "", *gpu_run_lines(), "", "## Benchmarks", ""]
    for path in sorted(CELLS_DIR.glob("*.bench*.txt")):
        if path.read_text().strip():
            lines += [f"{path.name.split('.bench')[0]}:", "", "```", path.read_text().strip(), "```", ""]
    (MATRIX / "RESULTS.md").write_text("\n".join(lines) + "\n")


def bench_output(cell: str, benchmark: str) -> str | None:
    """What ``benchmark`` printed in ``cell``'s last ``bench`` session, if it ran here."""
    scripts = load_cells()[cell]["benchmarks"]
    path = CELLS_DIR / f"{cell}.bench{scripts.index(f'benchmarks/{benchmark}')}.txt"
    return path.read_text().strip() if path.exists() and path.read_text().strip() else None


def write_performance() -> None:
    """Refill each figure block of docs/performance.md whose benchmark ran here; the others keep their last figures."""

    def refill(block: re.Match) -> str:
        output = bench_output(cell=block[3], benchmark=block[2])
        return block[0] if output is None else f"{block[1]}\n```text\n{output}\n```\n\n"

    PERFORMANCE.write_text(_FIGURES.sub(refill, PERFORMANCE.read_text()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demo", nargs="+", metavar="CELL", help="print the demo table of these cells instead")
    arguments = parser.parse_args()
    if arguments.demo:
        print(selftest_table(arguments.demo))
    else:
        write_results()
        write_performance()


if __name__ == "__main__":
    main()
