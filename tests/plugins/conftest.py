"""Two distributions that add patches, built once per session and installed with pip, and their target.

``example/`` adds a working patch for a synthetic library and one for Warp;
``broken/`` adds every kind of unusable patch.  Each is installed into a
folder of its own, put on ``PYTHONPATH`` by the tests that want it, so that
entry points, metadata and packages are found as pip laid them out.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.engine.synthetic import write_distribution

collect_ignore = ["example", "broken"]  # their own test suites run inside the tests, in their environment

HERE = Path(__file__).parent

TARGET = """
__version__ = "{version}"


def compute(x):
    return x + {step}
"""


@pytest.fixture(scope="session")
def sites(tmp_path_factory) -> dict[str, Path]:
    """``example`` and ``broken``: the folder each distribution is installed into.

    Built with the session's own hatchling (the ``tests`` session installs
    it): an isolated build environment per wheel cost more than the tests.
    """
    wheels = tmp_path_factory.mktemp("wheels")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    build = [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", wheels, HERE / "example", HERE / "broken"]
    subprocess.run(build, check=True)
    installed = {}
    for name in ("example", "broken"):
        site = installed[name] = tmp_path_factory.mktemp(name)
        (wheel,) = wheels.glob(f"gpushim_{name}_patches-*.whl")
        subprocess.run([*pip, "install", "--no-deps", "--target", site, wheel], check=True)
    return installed


def install_target(root: Path, version: str) -> Path:
    """``gpushim_example_target`` at ``version``: ``compute(x)`` is ``x + 1`` before 2.0 and ``x + 2`` from it."""
    package = root / "gpushim_example_target"
    package.mkdir(parents=True)
    step = 2 if tuple(map(int, version.split("."))) >= (2,) else 1
    (package / "__init__.py").write_text(TARGET.format(version=version, step=step))
    write_distribution(root, "gpushim-example-target", version)
    return root


@pytest.fixture
def affected(tmp_path) -> Path:
    return install_target(tmp_path / "target-1.0", "1.0")


@pytest.fixture
def fixed(tmp_path) -> Path:
    return install_target(tmp_path / "target-2.0", "2.0")
