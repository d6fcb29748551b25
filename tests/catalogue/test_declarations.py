"""gpushim's own catalogue: every patch module declares a valid patch for its own path, and ships."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import gpushim
from gpushim.catalogue import validate
from gpushim.expectations import expected_state

ROOT = Path(__file__).resolve().parents[2]
PATCHES = ROOT / "patches"


# The parts of every patch module's docstring, in this order, each opening a paragraph with its label;
# the paragraphs after a part's first belong to it.  docs/writing-a-patch.md shows the template.
DOCSTRING_PARTS = ("What breaks.", "Fixed upstream.", "How the fix works.", "Not backported.", "The probe.")

# A label, known or not: a short first sentence of a paragraph, without markup, ended by two spaces or the line.
LABEL = re.compile(r"[A-Z][^.`\n]{0,40}\.(?=  |\n|$)")


def patch_modules() -> list[str]:
    return sorted(f"{path.parent.name}.{path.stem}" for path in PATCHES.glob("*/[!_]*.py"))


def labels(docstring: str) -> list[str]:
    """The labels, known or not, that open the docstring's paragraphs after its summary line, in order."""
    summary, *paragraphs = re.split(r"\n\s*\n", docstring.strip())
    return [found.group(0) for found in map(LABEL.match, paragraphs) if found]


def test_every_module_under_patches_is_registered_under_its_path():
    assert gpushim.registry().ids == patch_modules()


@pytest.mark.parametrize("id", patch_modules())
def test_every_declaration_is_valid(id):
    validate(gpushim.registry()[id], id)


@pytest.mark.parametrize("id", patch_modules())
def test_every_patch_module_reads_as_the_template(id):
    library, name = id.split(".")
    docstring = ast.get_docstring(ast.parse((PATCHES / library / f"{name}.py").read_text()), clean=True)
    summary, first, *_ = docstring.split("\n\n")
    assert "\n" not in summary, "the summary is one line"
    assert first.startswith(DOCSTRING_PARTS[0]), "what breaks comes right after the summary"
    assert labels(docstring) == list(DOCSTRING_PARTS)


@pytest.mark.parametrize("id", [id for id in patch_modules() if gpushim.registry()[id].not_backported])
def test_releases_a_patch_is_not_backported_to_are_told_in_its_not_backported_part(id):
    import importlib

    docstring = importlib.import_module(f"gpushim.patches.{id}").__doc__
    part = docstring.partition("Not backported.")[2].partition("The probe.")[0]
    assert "status says ``not-backported``" in part


@pytest.mark.parametrize(
    ("version", "state"),
    [("1.0.0", "not-backported"), ("1.5.1", "not-backported"), ("1.6.0", "applied"), ("1.14.0", "not-affected")],
)
def test_the_state_derived_for_a_release_not_backported_to_is_not_backported(version, state):
    assert expected_state("warp.component_write_adjoint", {"warp-lang": version, "numpy": "2.2.6"}) == state


def test_a_label_outside_the_template_is_read_as_a_label():
    docstring = "Summary.\n\nWhat breaks.  It.\n\nWhy this is exact.  So.\n\nTwo traps.\nThese.\n\n``x`` is.  Not one."
    assert labels(docstring) == ["What breaks.", "Why this is exact.", "Two traps."]


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
