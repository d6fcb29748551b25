"""Synthetic catalogues: a patches package on disk, discovered as gpushim discovers its own."""

from __future__ import annotations

import importlib
import itertools
import textwrap

_serial = itertools.count()

LIBRARY = """
TARGET = "{target}"
DISTRIBUTIONS = ("{distribution}",)
"""

PATCH = """
from gpushim import Patch
from tests.engine.synthetic import add_one_more

patch = Patch(
    id="{id}",
    affected="{affected}",
    fixed_in="2.0",
    issue="synth/synth#1",
    fix="synth/synth#2",
    summary="compute() is one short",
)


@patch.applier
def _apply(module, journal):
    journal.wrap(module, "{name}", add_one_more)


@patch.prober
def _probe():
    return None
"""


def write_catalogue(root, target, modules: dict[str, str], library="synth") -> str:
    """A package ``synthpatchesN`` under ``root`` with one library folder of ``modules``; returns its name."""
    package = root / f"synthpatches{next(_serial)}"
    folder = package / library
    folder.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (folder / "__init__.py").write_text(LIBRARY.format(target=target.name, distribution=target.distribution))
    for name, source in modules.items():
        (folder / f"{name}.py").write_text(textwrap.dedent(source))
    importlib.invalidate_caches()
    return package.name


def patch_source(id, affected=">=1.0,<2.0", name="compute"):
    return PATCH.format(id=id, affected=affected, name=name)
