"""gpushim's sessions: lint, engine tests, the release matrix, Ray and Dask.

``nox`` runs them all, a session per processor at a time, the fast ones
first so that a newcomer sees a result within minutes: ``lint``, the engine
tests on each Python, then the matrix, one environment per release cell of
``matrix/*.toml`` (``nox -s matrix -- CELL ...`` for some of them, ``--
--wheelhouse DIR`` to install from DIR alone), then ``ray`` and ``dask`` run
the README's Ray and Dask recipes on a local cluster, and ``compare``, alone
and last, checks that every patched old release behaved as its fixed release
did.  A session's output is shown when it ends (``-j 1`` shows it as it
comes).
Outside the default run: ``bench`` runs a cell's benchmarks, ``results``
writes matrix/RESULTS.md from the last run, ``docs`` docs/patches.md's patch
table, ``gpu`` the GPU tests, ``demo`` the self-test table and ``radar`` the
smoke corpus of each library over matrix/radar.toml's grid of releases and
environments, with and without gpushim, into matrix/RADAR.md.

The engine tests run on every Python gpushim supports (``ENGINE_RUNS``), a release cell on the
Python its ``python`` key names (nox's own otherwise); an interpreter not found
on PATH skips its sessions instead of failing them, and ``compare`` and the
demo name the cells that did not run.  Where ``CI`` is set, nox fails such a
session instead (its default), and ``.ci/run`` makes every one visible.  nox itself,
``lint`` and ``compare`` need Python 3.11 or later (``tomllib``).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import nox

ROOT = Path(__file__).parent
sys.path.insert(0, str(ROOT))

from matrix.cells import TEST_TOOLS, load_cells  # noqa: E402

nox.needs_version = ">=2026.10.20"  # sessions run in parallel
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = ["lint", "tests", "matrix", "ray", "dask", "compare"]
# ``compare`` and ``demo`` read what the sessions before them left: they run alone, after them.
nox.options.parallel = "auto"
nox.options.allow_parallel = True
nox.options.reuse_venv = "yes"
# Each cell starts dozens of fresh interpreters that import CuPy or Warp; where PYTHONDONTWRITEBYTECODE is
# set (as on CI's machines), each would compile them from source again: the venvs get bytecode at install.
os.environ["UV_COMPILE_BYTECODE"] = "1"
# Likewise the repository's own modules: pytest rewrites the asserts of every test module in every cell
# (3 to 6 s each) unless it may keep the result in __pycache__, and the cells' interpreters import tests/.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

ARTEFACTS = ROOT / ".artefacts"
MAIN_PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
# wrapt 1.x and 2.x on the oldest Python and the newest; 2.x alone on the others, where the engine
# meets the same wrapt it does on its neighbours.  Python 3.8's wrapt releases end at 2.0.1.
ENGINE_RUNS = [
    ("3.8", "1.17.3"),
    ("3.8", "2.0.1"),
    ("3.9", "2.5.2"),
    ("3.10", "2.5.2"),
    (MAIN_PYTHON, "2.5.2"),
    ("3.12", "2.5.2"),
    ("3.13", "1.17.3"),
    ("3.13", "2.5.2"),
]
# The suites that start an interpreter per case (hostile environments, the pytest plugin's sessions, and
# tests/plugins: patches from other distributions) are most of an engine session's time.  They run with
# wrapt 1.x on the oldest Python and with 2.x from nox's own on, over the import system's latest changes;
# the other runs leave them out.
PER_CASE_INTERPRETERS = [
    "tests/engine/test_hostile_environments.py",
    "tests/engine/test_pickling_patched.py",
    "tests/engine/test_program_changes.py",
    "tests/engine/test_pytest_plugin.py",
    "tests/engine/test_threads.py",
]
EVERY_SUITE_RUNS = [
    (python, wrapt)
    for python, wrapt in ENGINE_RUNS
    if (wrapt.startswith("1.") and python == ENGINE_RUNS[0][0])
    or (wrapt.startswith("2.") and tuple(map(int, python.split("."))) >= sys.version_info[:2])
]
RAY = ["ray==2.60.0", "warp-lang==1.6.0", "numpy==2.2.6"]
DASK = ["dask[distributed]==2026.8.0", "warp-lang==1.6.0", "numpy==2.2.6"]
CELLS = load_cells()


def split_posargs(posargs: list[str]) -> tuple[list[str], list[str], list[str]]:
    """Cell names, ``--wheelhouse DIR`` install options and pytest's arguments from ``nox -s matrix -- ...``.

    An argument that names a cell selects it; everything else but ``--wheelhouse DIR`` goes to pytest
    (``nox -s "matrix(cell='warp-1.6.0')" -- --durations=15``).
    """
    names, options, pytest_args = [], [], []
    arguments = iter(posargs)
    for argument in arguments:
        if argument == "--wheelhouse":
            options += ["--no-index", "--find-links", next(arguments)]
        elif argument in CELLS:
            names.append(argument)
        else:
            pytest_args.append(argument)
    return names, options, pytest_args


@nox.session
def lint(session: nox.Session) -> None:
    """ruff, and pyright (basic mode) on the hints of the engine, which ships py.typed.

    pyright reads the engine as installed, where it is the package ``gpushim`` that its modules import:
    in the tree, shims/ would be a second package beside it.  Its settings (pyproject's ``[tool.pyright]``)
    are handed to it from the session's folder, since with the tree as its root it skips whatever lies
    under a folder named with a dot, as .nox/ is, and would check nothing.
    """
    import json

    import tomllib

    session.install("ruff", "pyright[nodejs]", ".", "pytest")  # Node.js from PyPI, as a wheel
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    where = "import gpushim, os; print(os.path.dirname(gpushim.__file__))"
    engine = Path(session.run("python", "-c", where, silent=True).strip())
    modules = [*engine.glob("*.py"), *engine.glob("bootstrap/*.py"), *engine.glob("advisories/*.py")]
    config = Path(session.create_tmp()) / "pyrightconfig.json"
    config.write_text(json.dumps(tomllib.loads(Path("pyproject.toml").read_text())["tool"]["pyright"]))
    session.run("pyright", "--project", str(config), *sorted(str(path) for path in modules))


@nox.session
@nox.parametrize(("python", "wrapt"), ENGINE_RUNS)
def tests(session: nox.Session, wrapt: str) -> None:
    """The engine against synthetic targets, and patches from other distributions; on nox's own Python also the
    catalogue's declarations, the commands as installed, the radar's grid and the GPU host's runner."""
    session.install(".", f"wrapt=={wrapt}", "pip", "hatchling", *TEST_TOOLS)
    if (session.python, wrapt) in EVERY_SUITE_RUNS:
        suites = ["tests/engine", "tests/plugins"]
    else:
        suites = ["tests/engine", *(f"--ignore={suite}" for suite in PER_CASE_INTERPRETERS)]
    if session.python == MAIN_PYTHON:
        session.install("twine", "mkdocs")  # the sdist and the wheel checked as PyPI will; the docs built
        suites += ["tests/catalogue", "tests/cli", "tests/docs", "tests/gpu_runner", "tests/radar"]
    session.run("pytest", *suites, *session.posargs)


def install_cell(session: nox.Session, cell: str) -> dict:
    """Install one cell's releases and gpushim, or skip the cell if ``posargs`` name others."""
    names, options, _ = split_posargs(session.posargs)
    if names and cell not in names:
        session.skip(f"not among {names}")
    spec = CELLS[cell]
    session.install(*options, *spec["install"], ".", *TEST_TOOLS)
    if spec["no-deps"]:
        session.install(*options, "--no-deps", *spec["no-deps"])
    if spec["pip"]:
        session.install("pip")
        session.run("python", "-m", "pip", "install", *options, *spec["pip"])
    # CUDA libraries installed as wheels (nvidia-cublas-cu12 for cupyx.scipy.linalg, NVRTC for tests/cupy/nvrtc.py)
    # are found through the loader's path, as their users set it; without a driver nothing else needs them.
    libraries = sorted(Path(session.virtualenv.location).glob("lib/python*/site-packages/nvidia/*/lib"))
    if libraries:
        session.env["LD_LIBRARY_PATH"] = os.pathsep.join(map(str, libraries))
    (ARTEFACTS / "cells").mkdir(parents=True, exist_ok=True)
    return spec


def run_into(session: nox.Session, path: Path, *args: str) -> None:
    """Run a command with its standard output, and nothing else, written to ``path`` once it has succeeded.

    An interrupted or failed command leaves the last complete ``path`` as it was.
    """
    partial = path.with_name(path.name + ".partial")
    with partial.open("w") as output:
        session.run(*args, stdout=output, stderr=None)
    partial.replace(path)


def by_cell(names: list[str]):
    """Parametrize a session by cell, on the cell's ``python`` (else nox's own), named ``session(cell='NAME')``."""
    cells = [(CELLS[name].get("python"), name) for name in names]
    return nox.parametrize(("python", "cell"), cells, ids=[f"cell={name!r}" for name in names])


@nox.session
@by_cell(list(CELLS))
def matrix(session: nox.Session, cell: str) -> None:
    """One release cell: the contract of every patch, its library's tests and the derived states."""
    spec = install_cell(session, cell)
    # A cell's results say what this run found, or nothing; the self-test the demo shows stays until replaced.
    for stale in (f"{cell}.xml", f"{cell}.states.json"):
        (ARTEFACTS / "cells" / stale).unlink(missing_ok=True)
    junit = ARTEFACTS / "cells" / f"{cell}.xml"
    # A cell on a Python of its own keeps its recorded outcomes out of ``compare``: exception messages
    # differ between Pythons (3.9 leaves the class out of "f() missing 1 required positional argument").
    outcomes = ARTEFACTS / f"python-{spec['python']}" if "python" in spec else ARTEFACTS
    env = {"MATRIX_ARTEFACTS": str(outcomes), "MATRIX_CELL": cell}
    _, _, pytest_args = split_posargs(session.posargs)
    tests = [*spec["pytest"], "tests/contract", spec["tests"], f"--junitxml={junit}", *pytest_args]
    session.run("pytest", *tests, env=env)
    run_into(session, ARTEFACTS / "cells" / f"{cell}.states.json", "python", "-m", "matrix.cell_states")


@nox.session
@by_cell(list(CELLS))
def bench(session: nox.Session, cell: str) -> None:
    """One cell's benchmarks (``benchmarks`` in its ``matrix/*.toml``), outside the default run: they print
    figures for docs/performance.md, and ``nox -s results`` puts them in matrix/RESULTS.md."""
    spec = install_cell(session, cell)
    for old in ARTEFACTS.glob(f"cells/{cell}.bench*"):
        old.unlink()
    for index, benchmark in enumerate(spec["benchmarks"]):
        run_into(session, ARTEFACTS / "cells" / f"{cell}.bench{index}.txt", "python", benchmark)


@nox.session(tags=["gpu"])
@by_cell([name for name, spec in CELLS.items() if spec["gpu"]])
def gpu(session: nox.Session, cell: str) -> None:
    """One cell's GPU tests (marker ``gpu``: the contract's and the library's), on a GPU host with network; without
    a device each is skipped, saying so.  ``python -m matrix.gpu`` runs them offline, and records the run."""
    spec = install_cell(session, cell)
    if spec["gpu-install"]:
        session.install(*spec["gpu-install"])
    if spec["gpu-pip"]:
        session.install("pip")
        session.run("python", "-m", "pip", "install", *spec["gpu-pip"])
    (ARTEFACTS / "gpu").mkdir(parents=True, exist_ok=True)
    junit = f"--junitxml={ARTEFACTS / 'gpu' / f'{cell}.xml'}"
    session.run("pytest", "-m", "gpu", "-rs", "tests/contract", spec["tests"], junit)


@nox.session
def ray(session: nox.Session) -> None:
    """The README's Ray recipe on a local Ray (loopback only) with Warp 1.6.0: tasks patched with it, not without."""
    session.install(*RAY, ".", *TEST_TOOLS)
    session.run("pytest", "tests/ray", *session.posargs)


@nox.session
def dask(session: nox.Session) -> None:
    """The README's Dask recipe on a local cluster of worker processes (loopback only) with Warp 1.6.0."""
    session.install(*DASK, ".", *TEST_TOOLS)
    session.run("pytest", "tests/dask", *session.posargs)


@nox.session(allow_parallel=False)
def compare(session: nox.Session) -> None:
    """Each patched old release's outcomes against its fixed release's."""
    session.install(".", *TEST_TOOLS)
    session.run("pytest", "tests/matrix", env={"MATRIX_ARTEFACTS": str(ARTEFACTS)})


@nox.session
def results(session: nox.Session) -> None:
    """matrix/RESULTS.md from what the last matrix run (and any ``bench`` sessions) left in .artefacts/."""
    session.install(".", *TEST_TOOLS)
    session.run("python", "-m", "matrix.results", env={"MATRIX_ARTEFACTS": str(ARTEFACTS)})


DEMO_CELLS = [name for name, spec in CELLS.items() if spec["demo"]]


@nox.session(tags=["demo"])
@by_cell(DEMO_CELLS)
def selftest(session: nox.Session, cell: str) -> None:
    """``python -m gpushim selftest`` in one demo cell, saved for the demo table.

    Not in the default run: it asks every probe of the library again, each
    without its patch and then with the patches, the two ways the contract
    asks them at each range's ends.
    """
    install_cell(session, cell)
    run_into(session, ARTEFACTS / "cells" / f"{cell}.selftest.json", "python", "-m", "gpushim", "selftest", "--json")


@nox.session(tags=["demo"], allow_parallel=False)
def demo(session: nox.Session) -> None:
    """The self-test of the demo cells as one table: each bug without gpushim, and with it."""
    session.install(".")
    session.run("python", "-m", "matrix.results", "--demo", *DEMO_CELLS)


@nox.session
def radar(session: nox.Session) -> None:
    """matrix/RADAR.md: each library's smoke corpus over matrix/radar.toml's grid of releases and environments
    (a venv per point under .radar/, kept between runs), without and with gpushim; ``-- --only python=3.12`` runs
    part of it (``python -m matrix.radar --help``)."""
    session.install("uv")
    session.run("python", "-m", "matrix.radar", *session.posargs)


@nox.session
def docs(session: nox.Session) -> None:
    """Regenerate docs/patches.md's patch table from the patch declarations, docs/coverage.md's table and the
    README's headline from the list of upstream fixes, and the README's pytest header lines, active and not, as
    the plugin prints them with Warp 1.6.0 (``tests/cli`` and ``tests/catalogue`` check them)."""
    session.install(".", "pytest")
    table = session.run("python", "-m", "gpushim", "patches", "--markdown", silent=True)
    page = ROOT / "docs" / "patches.md"
    before, rest = page.read_text().split(TABLE_BEGIN)
    _, after = rest.split(TABLE_END)
    page.write_text(f"{before}{TABLE_BEGIN}\n{table}{TABLE_END}{after}")
    session.run("python", "-m", "matrix.coverage")
    release = Path(session.create_tmp()) / "warp-1.6.0"
    (release / "warp_lang-1.6.0.dist-info").mkdir(parents=True, exist_ok=True)
    (release / "warp_lang-1.6.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: warp-lang\nVersion: 1.6.0\n"
    )
    printed = session.run("python", "-c", HEADERS, env={"PYTHONPATH": str(release)}, silent=True)
    inactive, active = printed.splitlines()
    readme = ROOT / "README.md"
    lines = iter([active, inactive])
    readme.write_text(HEADER_BLOCK.sub(lambda block: f"```text\n{next(lines)}\n```", readme.read_text(), count=2))


HEADERS = """import gpushim
from gpushim.pytest_plugin import header
print(header(gpushim.status()))
gpushim.patch()
print(header(gpushim.status()))"""


TABLE_BEGIN = "<!-- patch table: generated by `nox -s docs` from patches/ -->"
TABLE_END = "<!-- end of patch table -->"
# The README's two pytest header lines, active then not: "gpushim VERSION: ...", unlike its other text blocks.
HEADER_BLOCK = re.compile(r"```text\ngpushim \d[^\s:]*: [^\n]*\n```")
