"""gpushim's sessions: lint, engine tests, and the release matrix.

``nox`` runs them all, the matrix last: one environment per release cell of
``matrix/*.toml`` (``nox -s matrix -- CELL ...`` for some of them,
``-- --wheelhouse DIR`` to install from DIR alone), then ``compare`` checks
that every patched old release behaved as its fixed release did.
"""

from __future__ import annotations

import json
from pathlib import Path

import nox
import tomllib

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = ["lint", "tests", "matrix", "compare"]
nox.options.reuse_venv = "yes"

ROOT = Path(__file__).parent
TEST_TOOLS = ["pytest", "hypothesis"]


def load_cells() -> dict[str, dict]:
    """Every release cell by name, each with its library's ``tests`` folder."""
    cells = {}
    for path in sorted((ROOT / "matrix").glob("*.toml")):
        library = tomllib.loads(path.read_text())
        for cell in library["cells"]:
            cells[cell["name"]] = {**cell, "tests": library["tests"]}
    return cells


CELLS = load_cells()


def split_posargs(posargs: list[str]) -> tuple[list[str], list[str]]:
    """Cell names and ``--wheelhouse DIR`` install options from ``nox -s matrix -- ...``."""
    names, options = [], []
    arguments = iter(posargs)
    for argument in arguments:
        if argument == "--wheelhouse":
            options += ["--no-index", "--find-links", next(arguments)]
        else:
            names.append(argument)
    unknown = set(names) - set(CELLS)
    if unknown:
        raise SystemExit(f"unknown matrix cells {sorted(unknown)}; known: {sorted(CELLS)}")
    return names, options


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
@nox.parametrize("wrapt", ["1.17.3", "2.5.2"])
def tests(session: nox.Session, wrapt: str) -> None:
    """The engine against synthetic targets, with wrapt 1.x and 2.x."""
    session.install(".", f"wrapt=={wrapt}", *TEST_TOOLS)
    session.run("pytest", "tests/engine", *session.posargs)


@nox.session
@nox.parametrize("cell", list(CELLS))
def matrix(session: nox.Session, cell: str) -> None:
    """One release cell: its library's tests, then the patch states it expects."""
    names, options = split_posargs(session.posargs)
    if names and cell not in names:
        session.skip(f"not among {names}")
    spec = CELLS[cell]
    session.install(*options, *spec["install"], ".", *TEST_TOOLS)
    session.run("pytest", spec["tests"], env={"GPUSHIM_ARTEFACTS": str(ROOT / ".artefacts")})
    session.run(
        "python", "-m", "tests.matrix.cell_states",
        "--applied", ",".join(spec["applied"]),
        "--not-affected", ",".join(spec["not-affected"]),
    )  # fmt: skip


@nox.session
def compare(session: nox.Session) -> None:
    """Each patched old release's recorded outcomes against its fixed release's."""
    session.install(".", *TEST_TOOLS)
    session.run("pytest", "tests/matrix", env={"GPUSHIM_ARTEFACTS": str(ROOT / ".artefacts")})


AFFECTED_CELLS = [name for name, spec in CELLS.items() if spec["applied"]]


@nox.session(tags=["demo"])
@nox.parametrize("cell", AFFECTED_CELLS)
def selftest(session: nox.Session, cell: str) -> None:
    """``python -m gpushim selftest`` in one affected release cell, saved for the demo table."""
    names, options = split_posargs(session.posargs)
    if names and cell not in names:
        session.skip(f"not among {names}")
    session.install(*options, *CELLS[cell]["install"], ".")
    report = session.run("python", "-m", "gpushim", "selftest", "--json", silent=True)
    path = ROOT / ".artefacts" / "selftest" / f"{cell}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(report)


@nox.session(tags=["demo"], venv_backend="none")
def demo(session: nox.Session) -> None:
    """The self-test of every affected cell as one table: the bug without gpushim, and with it."""
    rows = [("release", "patch", "without gpushim", "with gpushim")]
    for path in sorted((ROOT / ".artefacts" / "selftest").glob("*.json")):
        for result in json.loads(path.read_text()):
            if result["verdict"].startswith("skipped"):
                continue
            release = f"{result['distribution']} {result['installed_version']}"
            without = f"bug: {result['without']}" if result["verdict"] != "not-needed" else "no bug here"
            fixed = {"effective": "fixed", "needed": "STILL BROKEN", "not-needed": "-"}[result["verdict"]]
            rows.append((release, result["id"], without[:90], fixed))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


@nox.session
def docs(session: nox.Session) -> None:
    """Regenerate the README's patch table from the patch declarations."""
    session.install(".")
    table = session.run("python", "-m", "gpushim", "patches", silent=True)
    readme = ROOT / "README.md"
    before, rest = readme.read_text().split(TABLE_BEGIN)
    _, after = rest.split(TABLE_END)
    readme.write_text(f"{before}{TABLE_BEGIN}\n{table}{TABLE_END}{after}")


TABLE_BEGIN = "<!-- patch table: generated by `nox -s docs` from patches/ -->"
TABLE_END = "<!-- end of patch table -->"
