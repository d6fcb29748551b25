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


SITECUSTOMIZE = """
import gpushim
from gpushim.engine import Registry

gpushim._registry = Registry.discover("synthcatalogue")
"""

STANDALONE_PATCH = PATCH.replace("from tests.engine.synthetic import add_one_more\n", "").replace(
    "@patch.applier",
    "def add_one_more(wrapped, instance, args, kwargs):\n    return wrapped(*args, **kwargs) + 1\n\n\n@patch.applier",
)


def write_site(root, target_name, distribution, version, declared):
    """A directory for ``PYTHONPATH`` where every interpreter's gpushim has a synthetic catalogue.

    It holds the target ``target_name`` (its module says ``declared`` as its
    ``__version__``, its metadata ``version``), a catalogue ``synthcatalogue``
    with one patch of it, ``synth.compute``, and a ``sitecustomize`` that puts
    that catalogue in the place of gpushim's own.
    """
    site = root / "site"
    (site / target_name).mkdir(parents=True)
    (site / target_name / "__init__.py").write_text(
        f'__version__ = "{declared}"\n\ndef compute(x):\n    return x + 1\n'
    )
    dist_info = site / f"{distribution.replace('-', '_')}-{version}.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: {version}\n")
    folder = site / "synthcatalogue" / "synth"
    folder.mkdir(parents=True)
    (site / "synthcatalogue" / "__init__.py").write_text("")
    (folder / "__init__.py").write_text(LIBRARY.format(target=target_name, distribution=distribution))
    (folder / "compute.py").write_text(
        STANDALONE_PATCH.format(id="synth.compute", affected=">=1.0,<2.0", name="compute")
    )
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return site
