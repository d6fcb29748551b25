"""DALI 1.33 to 1.43 cannot be imported on Python 3.12 without setuptools: ``gast_util`` imports ``distutils``.

What breaks.  ``import nvidia.dali`` imports the autograph copy that DALI
vendors for conditionals, whose ``nvidia/dali/_autograph/pyct/gast_util.py``
runs ``from distutils.version import LooseVersion`` at import, to compare
gast's version with ``"0.5"``.  Python 3.12 removed ``distutils``
(PEP 632); only setuptools brings it back, as a shim, and a plain virtual
environment (``python -m venv``, ``uv venv``) has no setuptools.  There
``import nvidia.dali`` raises ``ModuleNotFoundError: No module named
'distutils'``, so DALI cannot be used at all.  Checked on the wheels of
``nvidia-dali-cuda120``: 1.27.0 (whose gast_util learned to read gast's
version) to 1.35.0, the last on the registry reached here, carry the line
unchanged, and 1.22.0 to 1.26.0 have no ``distutils`` on the path of
``import nvidia.dali``; but up to 1.32.0 the wheels have no build of
``nvidia.dali.python_function_plugin`` for Python 3.12, whose import fails
first, so on 3.12 the bug shows from 1.33.0 (the first release that
imports there with setuptools) on.

Fixed upstream.  NVIDIA/DALI#5687 (merged 2024-10-23, after 1.42.0, whose
failure NVIDIA/DALI#5679 reports) moves DALI from ``distutils`` to
``packaging``, first in 1.44.0.  The DALI mirror cannot be fetched here (its
snapshot is larger than allowed) and the main wheels of 1.36 to 1.52 cannot
be installed, but the pull request changed the TensorFlow plugin together
with DALI's Python code, and the registry has that plugin's sdist of every
release (``nvidia-dali-tf-plugin-cuda120``), each naming its release's
commit: 1.42.0 (3c97d9b61) and 1.43.0 (4562f157a) still import
``StrictVersion`` and ``LooseVersion`` from ``distutils.version``, 1.44.0
(a0feb6cd9) imports ``packaging.version`` and requires ``packaging``.  So
1.43.0 has the bug and 1.44.0 is the first fixed release.

How the fix works.  Right before ``gast_util`` executes, the patch puts in
``sys.modules`` a ``distutils`` package and a ``distutils.version`` module
of its own, whose ``LooseVersion`` compares as distutils' does (the same
split into numbers and letters, the same ordering, strings converted).
``gast_util`` imports it and keeps its ``LooseVersion``; once the module has
executed both are withdrawn, so user code that imports ``distutils``
afterwards gets ``ModuleNotFoundError`` exactly as without gpushim.  The
patch applies only on Python 3.12 and later where ``distutils`` cannot be
found (setuptools' shim installed, nothing happens) and checks that the
module about to execute has the very import line; anything else is a
TargetMismatch.

Not backported.  The framework plugins import ``distutils`` too and are
left alone: ``nvidia.dali.plugin.numba.experimental`` (every release
checked, 1.22.0 on) as its first import, so on 1.35.0 with gpushim it still
raises ``No module named 'distutils'``; ``plugin.tf`` (1.22.0 on),
``plugin.jax`` (1.27.0 on) and ``plugin.paddle`` (1.30.0 on) after importing
their framework, which was not installed to try them.

The probe.  A CPU pipeline with conditionals (``enable_conditionals``), which
goes through the vendored autograph and the ``compat_assign`` that
``gast_util`` chose by gast's version, run once.
"""

from __future__ import annotations

import re
from types import ModuleType

from gpushim import Patch, expect_lines
from gpushim.patches.dali._before_gast_util import GAST_UTIL, conditional_pipeline_bug

patch = Patch(
    id="dali.distutils_missing",
    affected=">=1.33.0,<1.44.0",
    fixed_in="1.44.0",
    issue="NVIDIA/DALI#5679",
    fix="NVIDIA/DALI#5687",
    summary="import nvidia.dali raises ModuleNotFoundError: No module named 'distutils' on Python 3.12+.",
    before=GAST_UTIL,
    python=">=3.12",
    missing=("distutils",),
)

_COMPONENTS = re.compile(r"(\d+|[a-z]+|\.)")


def _component(part: str) -> object:
    try:
        return int(part)
    except ValueError:
        return part


class LooseVersion:
    """A version string as distutils' ``LooseVersion`` compares it: numbers and letters, in order.

    ``"1.10a"`` is ``[1, 10, "a"]``; lists compare element by element, so a
    number meeting a word raises TypeError as in distutils.  A ``str``
    compared with it is read as a LooseVersion first.
    """

    def __init__(self, vstring: str | None = None) -> None:
        if vstring:
            self.parse(vstring)

    def parse(self, vstring: str) -> None:
        self.vstring = vstring
        self.version = [_component(part) for part in _COMPONENTS.split(vstring) if part and part != "."]

    def __str__(self) -> str:
        return self.vstring

    def __repr__(self) -> str:
        return f"LooseVersion ('{self}')"

    def _cmp(self, other: object):
        if isinstance(other, str):
            other = LooseVersion(other)
        elif not isinstance(other, LooseVersion):
            return NotImplemented
        if self.version == other.version:
            return 0
        return -1 if self.version < other.version else 1

    def __eq__(self, other: object):
        compared = self._cmp(other)
        return compared if compared is NotImplemented else compared == 0

    def __lt__(self, other: object):
        compared = self._cmp(other)
        return compared if compared is NotImplemented else compared < 0

    def __le__(self, other: object):
        compared = self._cmp(other)
        return compared if compared is NotImplemented else compared <= 0

    def __gt__(self, other: object):
        compared = self._cmp(other)
        return compared if compared is NotImplemented else compared > 0

    def __ge__(self, other: object):
        compared = self._cmp(other)
        return compared if compared is NotImplemented else compared >= 0

    __hash__ = None


@patch.preparer
def _prepare(gast_util, journal):
    expect_lines(gast_util, "from distutils.version import LooseVersion")
    version = ModuleType("distutils.version", "LooseVersion for DALI's gast_util alone, provided by gpushim.")
    version.LooseVersion = LooseVersion
    distutils = ModuleType("distutils", "Provided by gpushim for DALI's gast_util alone, while it executes.")
    distutils.__path__ = []
    distutils.version = version
    journal.provide("distutils", distutils)
    journal.provide("distutils.version", version)


@patch.prober
def _probe():
    return conditional_pipeline_bug()
