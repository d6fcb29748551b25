"""The radar: the smoke corpus of each library over ``matrix/radar.toml``'s grid, without gpushim and with it.

``nox -s radar`` runs ``python -m matrix.radar``: for each grid point, a virtual environment under
``.radar/venvs`` (created by ``uv venv`` the first time, brought up to date by ``uv pip install`` each
run), then ``matrix/radar_smoke.py`` in a subprocess of it twice, plain and with ``import gpushim.auto``
first.  Each point's outcome is kept in ``.radar/results``; the grid of every outcome kept, the points
run now and those run before, is printed and written to ``matrix/RADAR.md``.

``--only KEY=VALUE[,VALUE...]`` (repeatable) runs part of the grid: the keys are ``library``,
``release``, ``python`` and the dimensions' names (``--only library=dali --only python=3.12``).
``--missing`` runs only the points with no kept outcome; ``--report`` writes the report from the kept
outcomes without running anything.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

MATRIX = Path(__file__).parent
ROOT = MATRIX.parent
GRID = MATRIX / "radar.toml"
REPORT = MATRIX / "RADAR.md"
SMOKE = MATRIX / "radar_smoke.py"
WORK = ROOT / ".radar"
INSTALL_TIMEOUT = 1200
SMOKE_TIMEOUT = 600


@dataclass(frozen=True)
class Point:
    """One release of one library in one environment: a Python and a value of each of its dimensions."""

    library: str
    release: str
    python: str
    environment: tuple[tuple[str, str], ...]

    @property
    def id(self) -> str:
        values = "".join(f"-{dimension}-{value}" for dimension, value in self.environment)
        return f"{self.library}-{self.release}-py{self.python}{values}"

    def value(self, key: str) -> str:
        return {"library": self.library, "release": self.release, "python": self.python, **dict(self.environment)}[key]

    def matches(self, selection: dict[str, list[str]], lacking: bool = False) -> bool:
        """Whether every key of ``selection`` has one of its values here; a dimension this point lacks matches
        if ``lacking`` (``--only gast=old`` keeps Warp's points, an exclusion of gast 0.4.0 leaves them)."""
        return all(self.value(key) in values if self.has(key) else lacking for key, values in selection.items())

    def has(self, key: str) -> bool:
        return key in ("library", "release", "python") or key in dict(self.environment)


@dataclass
class Grid:
    """``radar.toml``: its points (exclusions left out), what each installs, and why points are left out."""

    document: dict = field(repr=False)

    @classmethod
    def load(cls, path: Path = GRID) -> Grid:
        return cls(tomllib.loads(path.read_text()))

    @property
    def libraries(self) -> dict[str, dict]:
        return self.document["libraries"]

    def every_point(self) -> list[Point]:
        """Each release of each library on each Python in each combination of its dimensions' values, in order."""
        points = []
        for library, spec in self.libraries.items():
            combinations: list[tuple[tuple[str, str], ...]] = [()]
            for dimension in spec.get("dimensions", []):
                values = self.document["dimensions"][dimension]
                combinations = [(*chosen, (dimension, value)) for chosen in combinations for value in values]
            points += [
                Point(library, release, python, environment)
                for release in spec["releases"]
                for python in self.document["pythons"]
                for environment in combinations
            ]
        return points

    def exclusion(self, point: Point) -> str | None:
        """Why the grid leaves ``point`` out (its first matching ``[[exclude]]``), or None."""
        for entry in self.document.get("exclude", []):
            selection = {key: _as_list(value) for key, value in entry.items() if key != "why"}
            if point.matches(selection):
                return entry["why"]
        return None

    def points(self, selection: dict[str, list[str]] | None = None) -> list[Point]:
        selection = selection or {}
        return [p for p in self.every_point() if self.exclusion(p) is None and p.matches(selection, lacking=True)]

    def requirements(self, point: Point) -> list[str]:
        """The release and its environment's requirements; only the latter are forced over the release's pins."""
        distribution = self.libraries[point.library]["distribution"]
        return [f"{distribution}=={point.release}", *self.overrides(point), *self.projects(point)]

    def overrides(self, point: Point) -> list[str]:
        return [value for value in self._values(point) if not value.startswith("./")]

    def projects(self, point: Point) -> list[str]:
        """The projects of this checkout the point installs (``./matrix/py314_emulation``), built into wheels."""
        return [value for value in self._values(point) if value.startswith("./")]

    def _values(self, point: Point) -> list[str]:
        dimensions = self.document["dimensions"]
        return [dimensions[name][value] for name, value in point.environment if dimensions[name][value]]


def _as_list(value) -> list[str]:
    return value if isinstance(value, list) else [value]


def parse_selection(arguments: list[str]) -> dict[str, list[str]]:
    """``["library=dali", "python=3.12,3.13"]`` as ``{"library": ["dali"], "python": ["3.12", "3.13"]}``."""
    selection: dict[str, list[str]] = {}
    for argument in arguments:
        key, _, values = argument.partition("=")
        if not values:
            raise ValueError(f"--only takes KEY=VALUE[,VALUE...], not {argument!r}")
        selection.setdefault(key, []).extend(values.split(","))
    return selection


def _run(command: list[str], timeout: int, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, **kwargs)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


def build_gpushim() -> Path:
    """gpushim's wheel from this checkout, built once per run into ``.radar/wheel``."""
    wheels = WORK / "wheel"
    shutil.rmtree(wheels, ignore_errors=True)
    _run(["uv", "build", "--quiet", "--wheel", "--out-dir", str(wheels), str(ROOT)], INSTALL_TIMEOUT).check_returncode()
    (wheel,) = wheels.glob("gpushim-*.whl")
    return wheel


def project_wheel(project: str) -> Path:
    """The wheel of a project of this checkout, built once per run into ``.radar/wheel`` beside gpushim's."""
    wheels = WORK / "wheel" / Path(project).name
    if not wheels.exists():
        command = ["uv", "build", "--quiet", "--wheel", "--out-dir", str(wheels), str(ROOT / project)]
        _run(command, INSTALL_TIMEOUT).check_returncode()
    (wheel,) = wheels.glob("*.whl")
    return wheel


def prepare(grid: Grid, point: Point, wheel: Path) -> str | None:
    """Bring ``point``'s environment up to date, made afresh if its requirements changed; None, or why it failed."""
    venv = WORK / "venvs" / point.id
    python = venv / "bin" / "python"
    wanted = "\n".join(grid.requirements(point)) + "\n"
    marker = venv / "radar-requirements.txt"
    if not python.exists() or not marker.exists() or marker.read_text() != wanted:
        shutil.rmtree(venv, ignore_errors=True)
        created = _run(["uv", "venv", "--quiet", "--python", point.python, str(venv)], INSTALL_TIMEOUT)
        if created.returncode:
            return f"uv venv: {_last_line(created.stderr)}"
    overrides = venv / "radar-overrides.txt"
    overrides.write_text("".join(f"{requirement}\n" for requirement in grid.overrides(point)))
    install = ["uv", "pip", "install", "--quiet", "--python", str(python), "--only-binary", ":all:"]
    requirements = [str(project_wheel(r)) if r in grid.projects(point) else r for r in grid.requirements(point)]
    install += ["--override", str(overrides), "--reinstall-package", "gpushim", *requirements, str(wheel)]
    installed = _run(install, INSTALL_TIMEOUT)
    if installed.returncode:
        return f"uv pip install: {_last_line(installed.stderr)}"
    marker.write_text(wanted)
    return None


def smoke(point: Point, distribution: str, with_gpushim: bool) -> dict:
    """The smoke corpus' outcome in ``point``'s environment: the releases it found and each check's outcome."""
    python = WORK / "venvs" / point.id / "bin" / "python"
    command = [str(python), "-I", str(SMOKE), point.library, distribution] + (["--gpushim"] if with_gpushim else [])
    env = {key: value for key, value in os.environ.items() if not key.startswith(("GPUSHIM_", "PYTHON", "VIRTUAL_ENV"))}
    try:
        finished = _run(command, SMOKE_TIMEOUT, env=env)
    except subprocess.TimeoutExpired:
        return {"checks": {"run": f"timed out after {SMOKE_TIMEOUT} s"}}
    for line in reversed(finished.stdout.splitlines()):
        if line.startswith("RADAR "):
            return json.loads(line[len("RADAR ") :])
    return {"checks": {"run": f"exit status {finished.returncode}: {_last_line(finished.stderr)}"}}


def run_point(grid: Grid, point: Point, wheel: Path) -> dict:
    started = time.monotonic()
    result: dict = {"point": point.id, "date": datetime.date.today().isoformat()}
    try:
        failure = prepare(grid, point, wheel)
    except subprocess.TimeoutExpired as error:
        failure = f"{' '.join(error.cmd[:3])}: timed out after {error.timeout} s"
    if failure:
        result["install"] = failure
    else:
        distribution = grid.libraries[point.library]["distribution"]
        result["without"] = smoke(point, distribution, with_gpushim=False)
        result["with"] = smoke(point, distribution, with_gpushim=True)
    result["seconds"] = round(time.monotonic() - started, 1)
    results = WORK / "results"
    results.mkdir(parents=True, exist_ok=True)
    (results / f"{point.id}.json").write_text(json.dumps(result, indent=1) + "\n")
    print(f"{point.id}: {verdict(result, 'without')} | with gpushim: {verdict(result, 'with')}", flush=True)
    return result


def verdict(result: dict, side: str) -> str:
    """``ok``, or the first failed check as ``check: Error: message``."""
    if "install" in result:
        return f"install: {result['install']}"
    for check, outcome in result[side]["checks"].items():
        if outcome != "ok":
            return f"{check}: {outcome}"
    return "ok"


def kept_results() -> dict[str, dict]:
    return {path.stem: json.loads(path.read_text()) for path in sorted((WORK / "results").glob("*.json"))}


def report(grid: Grid, results: dict[str, dict]) -> str:
    """The grid as Markdown: per library, a row per environment and a column per release, ``without / with``."""
    failures: dict[str, list[int]] = {}  # the first failed check: how many points it failed without and with gpushim

    def mark(result: dict, side: str) -> str:
        found = verdict(result, side)
        if found == "ok":
            return "ok"
        failures.setdefault(found, [0, 0])[side == "with"] += 1
        return f"F{list(failures).index(found) + 1}"

    points = grid.every_point()
    ran = [point for point in points if point.id in results]
    last = max((results[point.id]["date"] for point in ran), default="-")
    broken = {side: sum(verdict(results[p.id], side) != "ok" for p in ran) for side in ("without", "with")}
    lines = [
        "# Radar",
        "",
        "Generated by `nox -s radar` (matrix/radar.py over matrix/radar.toml); do not edit.  Each cell is a",
        "release in one environment: its smoke corpus (matrix/radar_smoke.py) without gpushim / with",
        "`import gpushim.auto` first.  `ok`: every check passed; `F<n>`: the first failed check, listed",
        "under the tables; `n/a`: the grid leaves the point out (see the end); `·`: not run.  Environment",
        "requirements are forced over the release's own pins, as a user's pins force them; the versions",
        "they resolved to are in brackets.  Rows with no point run are left out.",
        "",
        f"{len(ran)} of the grid's {len(grid.points())} points run, the last on {last}: {broken['without']} fail",
        f"without gpushim, {broken['with']} with it.",
    ]
    if len(ran) < len(grid.points()):
        lines[-1] += "  `nox -s radar -- --missing` runs the others."
    for library, spec in grid.libraries.items():
        rows: dict[tuple, dict[str, Point]] = {}
        for point in points:
            if point.library == library:
                rows.setdefault((point.python, *point.environment), {})[point.release] = point
        table = []
        for row, by_release in rows.items():
            if not any(point.id in results for point in by_release.values()):
                continue
            cells = []
            for point in by_release.values():
                if grid.exclusion(point):
                    cells.append("n/a")
                elif point.id in results:
                    cells.append(f"{mark(results[point.id], 'without')} / {mark(results[point.id], 'with')}")
                else:
                    cells.append("·")
            versions = _row_versions(by_release.values(), results)
            names = [f"{value} ({versions[name]})" if versions.get(name) else value for name, value in row[1:]]
            table.append(f"| {row[0]} | {' | '.join(names)} | {' | '.join(cells)} |")
        if table:
            header = ["Python", *spec.get("dimensions", []), *spec["releases"]]
            lines += ["", f"## {spec['distribution']}", "", f"| {' | '.join(header)} |", f"|{'---|' * len(header)}"]
            lines += table
    if failures:
        lines += [
            "",
            "## Failures",
            "",
            "The first failed check, and at how many points it failed without / with gpushim.",
            "",
        ]
        lines += [
            f"- F{n}: {_code(text)} ({without} / {with_})"
            for n, (text, (without, with_)) in enumerate(failures.items(), 1)
        ]
    lines += ["", "## Left out", ""]
    for entry in grid.document.get("exclude", []):
        where = ", ".join(f"{key} {' or '.join(_as_list(value))}" for key, value in entry.items() if key != "why")
        lines.append(f"- {where}: {entry['why']}")
    return "\n".join(lines) + "\n"


def _code(text: str) -> str:
    """``text`` as a Markdown code span, also where it holds backticks."""
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def _row_versions(points, results: dict[str, dict]) -> dict[str, str]:
    """The releases a row's environment resolved to (``2.x`` is 2.2.6 on Python 3.10), from a point that ran."""
    for point in points:
        result = results.get(point.id, {})
        versions = result.get("without", {}).get("versions")
        if versions:
            return {name: version for name, version in versions.items() if name in dict(point.environment)}
    return {}


def main(arguments: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m matrix.radar", description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[], metavar="KEY=VALUE[,VALUE...]")
    parser.add_argument("--jobs", type=int, default=1, help="points prepared and run at once (default 1)")
    parser.add_argument("--report", action="store_true", help="only write the report from the kept outcomes")
    parser.add_argument("--missing", action="store_true", help="run only the points with no kept outcome")
    options = parser.parse_args(arguments)
    grid = Grid.load()
    selection = parse_selection(options.only)
    unknown = set(selection) - {"library", "release", "python", *grid.document["dimensions"]}
    if unknown:
        parser.error(f"--only names no key of the grid: {', '.join(sorted(unknown))}")
    if not options.report:
        points = grid.points(selection)
        if options.missing:
            kept = kept_results()
            points = [point for point in points if point.id not in kept]
        print(f"radar: {len(points)} points", flush=True)
        wheel = build_gpushim()
        with ThreadPoolExecutor(options.jobs) as pool:
            list(pool.map(lambda point: run_point(grid, point, wheel), points))
    text = report(grid, kept_results())
    REPORT.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
