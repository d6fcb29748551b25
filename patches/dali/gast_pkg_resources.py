"""DALI 1.27 on cannot be imported with gast older than 0.5.3 where ``pkg_resources`` is gone (setuptools 82).

What breaks.  ``import nvidia.dali`` imports the autograph copy that DALI
vendors for conditionals, whose ``gast_util`` asks, at import, for gast's
version: ``gast.__version__``, which gast has from 0.5.3 on, or else
``pkg_resources.get_distribution("gast").version``, in a ``try`` whose
``except pkg_resources.DistributionNotFound`` names the module the ``try``
failed to import.  setuptools 82.0.0 no longer ships ``pkg_resources``
(81.0.0 is the last that does), and a plain virtual environment has no
setuptools at all; with gast 0.3.3 to 0.5.2, which DALI accepts
(``gast>=0.3.3``), ``import nvidia.dali`` then raises ``UnboundLocalError:
cannot access local variable 'pkg_resources'`` and DALI cannot be used at
all.  Checked on the wheels of ``nvidia-dali-cuda120``: ``get_gast_version``
first appears in 1.27.0 (1.26.0 reads ``hasattr(gast, "Str")``) and is the
same code in every release since, 1.53.0 and 2.4.0 included.

Fixed upstream.  Not fixed: nvidia-dali-cuda120 2.4.0, the newest on the
registry reached here, reads gast's version the same way, and no upstream
issue reports it.

How the fix works.  Right before ``gast_util`` executes, the patch puts in
``sys.modules`` a ``pkg_resources`` module of its own with the two names
``gast_util`` uses: ``get_distribution(name).version``, read from the
distribution's metadata by :mod:`importlib.metadata` as ``pkg_resources``
reads it, and ``DistributionNotFound``, raised where no distribution of that
name is installed.  ``gast_util`` then finds gast's version as it does where
setuptools still ships ``pkg_resources``, and picks the same ``Assign`` for
gast 0.4; once the module has executed the module is withdrawn, so user code
that imports ``pkg_resources`` afterwards gets ``ModuleNotFoundError`` as
without gpushim, and neither gast nor any other shared object is changed.
The patch applies only with gast older than 0.5.3 and where ``pkg_resources``
cannot be found, and checks that the module about to execute has the very
lines; anything else is a TargetMismatch.

Not backported.  Nothing: there is no upstream fix.

The probe.  A CPU pipeline with conditionals (``enable_conditionals``), which
goes through the vendored autograph and the ``compat_assign`` that
``gast_util`` chose by gast's version, run once.
"""

from __future__ import annotations

from types import ModuleType

from gpushim import Patch, expect_lines
from gpushim.patches.dali._before_gast_util import GAST_UTIL, conditional_pipeline_bug

patch = Patch(
    id="dali.gast_pkg_resources",
    affected=">=1.27.0",
    fixed_in=None,
    issue="not reported upstream (setuptools 82.0.0 dropped pkg_resources)",
    fix="no release yet (2.4.0 has the bug)",
    summary="import nvidia.dali raises UnboundLocalError ('pkg_resources') with gast < 0.5.3 and setuptools >= 82.",
    before=GAST_UTIL,
    only_with={"gast": "<0.5.3"},
    missing=("pkg_resources",),
)


class DistributionNotFound(Exception):
    """No distribution of the name asked is installed."""


class _Distribution:
    __slots__ = ("project_name", "version")

    def __init__(self, project_name: str, version: str) -> None:
        self.project_name, self.version = project_name, version


def get_distribution(name: str) -> _Distribution:
    """The installed distribution ``name``, with its version as its metadata states it."""
    from importlib import metadata

    try:
        return _Distribution(name, metadata.version(name))
    except metadata.PackageNotFoundError:
        raise DistributionNotFound(name) from None


@patch.preparer
def _prepare(gast_util, journal):
    expect_lines(
        gast_util,
        "import pkg_resources",
        'return pkg_resources.get_distribution("gast").version',
        "except pkg_resources.DistributionNotFound:",
    )
    pkg_resources = ModuleType("pkg_resources", "Provided by gpushim for DALI's gast_util alone, while it executes.")
    pkg_resources.get_distribution = get_distribution
    pkg_resources.DistributionNotFound = DistributionNotFound
    journal.provide("pkg_resources", pkg_resources)


@patch.prober
def _probe():
    return conditional_pipeline_bug()
