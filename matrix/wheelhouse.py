"""Download what ``python -m matrix.gpu --cell NAME`` installs, for a GPU host without network.

``python -m matrix.wheelhouse --cell NAME --python-version 3.12 DIR`` fetches
into DIR the wheels of the cell's releases (``install``, ``no-deps``,
``pip``: not ``gpu-install`` nor ``gpu-pip``, which the host brings), of the
test tools, and of what gpushim needs to be built from this checkout and to
run, for that Python on x86-64 Linux with glibc 2.28 or later.  Markers
(``python_version < '3.11'``) are those of the Python that runs this, so run
it with a Python on the same side of them as the host's.
``--split-mib 60`` then cuts each wheel larger than 60 MiB into pieces of at
most that size (``<wheel>.part000``, ...) for hosts that take files only in
limited sizes; the runner joins them again.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from matrix.cells import MATRIX, TEST_TOOLS, load_cells, tomllib

PYPROJECT = tomllib.loads((MATRIX.parent / "pyproject.toml").read_text())
# gpushim is built from the checkout on the host (build-system) and needs its dependencies there (project).
GPUSHIM_NEEDS = [*PYPROJECT["build-system"]["requires"], *PYPROJECT["project"]["dependencies"]]
# pip takes these tags literally: manylinux2014 alone would refuse manylinux_2_27 wheels (nvidia-cublas-cu12).
PLATFORMS = ["manylinux2014_x86_64", *(f"manylinux_2_{minor}_x86_64" for minor in range(17, 29))]
PART = ".part"


def download(spec: dict, python_version: str, folder: Path) -> None:
    pip = [sys.executable, "-m", "pip", "download", "--dest", str(folder), "--only-binary=:all:"]
    pip += ["--python-version", python_version, *(f"--platform={platform}" for platform in PLATFORMS)]
    subprocess.run([*pip, *spec["install"], *spec["pip"], *TEST_TOOLS, *GPUSHIM_NEEDS], check=True)
    if spec["no-deps"]:
        subprocess.run([*pip, "--no-deps", *spec["no-deps"]], check=True)


def split(folder: Path, size: int) -> None:
    """Replace each wheel of ``folder`` larger than ``size`` bytes by its pieces of at most ``size`` bytes."""
    for wheel in sorted(folder.glob("*.whl")):
        if wheel.stat().st_size <= size:
            continue
        with wheel.open("rb") as whole:
            for index, piece in enumerate(iter(lambda: whole.read(size), b"")):
                wheel.with_name(f"{wheel.name}{PART}{index:03}").write_bytes(piece)
        wheel.unlink()


def join(folder: Path, into: Path) -> None:
    """Write into ``into`` each wheel that ``folder`` holds in pieces."""
    for first in sorted(folder.glob(f"*.whl{PART}000")):
        wheel = first.name[: -len(f"{PART}000")]
        with (into / wheel).open("wb") as whole:
            for piece in sorted(folder.glob(f"{wheel}{PART}*")):
                whole.write(piece.read_bytes())


def main(arguments: list[str] | None = None) -> None:
    cells = load_cells()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cell", required=True, choices=sorted(cells), metavar="CELL", help="a cell of matrix/*.toml")
    parser.add_argument("--python-version", required=True, help="the GPU host's Python, e.g. 3.12")
    parser.add_argument("--split-mib", type=int, help="cut wheels larger than this many MiB into pieces")
    parser.add_argument("folder", type=Path)
    options = parser.parse_args(arguments)
    download(cells[options.cell], options.python_version, options.folder)
    if options.split_mib:
        split(options.folder, options.split_mib * 2**20)


if __name__ == "__main__":
    main()
