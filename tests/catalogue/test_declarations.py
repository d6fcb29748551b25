"""gpushim's own catalogue: every patch module declares a valid patch for its own path, and ships."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import gpushim
from gpushim.catalogue import validate

ROOT = Path(__file__).resolve().parents[2]
PATCHES = ROOT / "patches"


def patch_modules() -> list[str]:
    return sorted(f"{path.parent.name}.{path.stem}" for path in PATCHES.glob("*/[!_]*.py"))


def test_every_module_under_patches_is_registered_under_its_path():
    assert gpushim.registry().ids == patch_modules()


@pytest.mark.parametrize("id", patch_modules())
def test_every_declaration_is_valid(id):
    validate(gpushim.registry()[id], id)


@pytest.mark.parametrize("library", sorted(path.parent.name for path in PATCHES.glob("*/__init__.py")))
def test_every_library_names_its_target_and_distributions_once(library):
    package = __import__(f"gpushim.patches.{library}", fromlist=["TARGET"])
    assert isinstance(package.TARGET, str) and package.DISTRIBUTIONS
    assert all(isinstance(name, str) for name in package.DISTRIBUTIONS)


def test_the_wheel_holds_every_module_of_the_tree(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True,
    )
    (wheel,) = tmp_path.glob("gpushim-*.whl")
    shipped = {name for name in zipfile.ZipFile(wheel).namelist() if name.endswith(".py")}
    tree = {f"gpushim/{path.relative_to(ROOT / 'shims')}" for path in (ROOT / "shims").rglob("*.py")}
    tree |= {f"gpushim/patches/{path.relative_to(PATCHES)}" for path in PATCHES.rglob("*.py")}
    assert shipped == tree
