"""Synthetic targets: small packages with real distribution metadata, made per test.

They stand in for a GPU library only here, to test the engine; patches are
proven on real releases under tests/<library>/.
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import itertools
import sys
import textwrap

from gpushim import Patch
from gpushim.catalogue import Library
from gpushim.engine import Registry

_serial = itertools.count()

SOURCE = """
__version__ = "{version}"

def compute(x):
    return x + 1

class Widget:
    def size(self):
        return 1
"""


def write_distribution(root, distribution, version):
    """The metadata of an installed ``distribution`` under ``root``, which is all gpushim reads of a release."""
    dist_info = root / f"{distribution.replace('-', '_')}-{version}.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: {version}\n")


def write_record(dist_info, installed):
    """``dist_info``'s RECORD as an installer writes it: each path (relative to the folder above) with its content.

    ``installed`` maps each path to the bytes the release installed there:
    what lies there now, or for a folder an upgrade left behind, what an
    older release put there.
    """
    lines = [f"{dist_info.name}/RECORD,,"]
    for path, content in installed.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(content).digest()).rstrip(b"=").decode()
        lines.append(f"{path},sha256={digest},{len(content)}")
    (dist_info / "RECORD").write_text("\n".join(lines) + "\n")


class Target:
    """A synthetic library installed under a fresh directory on sys.path."""

    def __init__(self, root, version="1.5.0", distribution="synthlib-cuda12", declared=None):
        self.name = f"synthlib{next(_serial)}"
        self.distribution = distribution
        package = root / self.name
        package.mkdir()
        (package / "__init__.py").write_text(textwrap.dedent(SOURCE.format(version=declared or version)))
        (package / "extra.py").write_text(f"from {self.name} import compute\n")
        write_distribution(root, distribution, version)
        importlib.invalidate_caches()

    def import_(self):
        return importlib.import_module(self.name)

    @property
    def module(self):
        return sys.modules[self.name]


def add_one_more(wrapped, instance, args, kwargs):
    return wrapped(*args, **kwargs) + 1


class SyntheticPatch:
    """A patch declaration with the library facts its folder's ``__init__`` would state."""

    def __init__(self, patch, target, distributions):
        self.patch, self.target, self.distributions = patch, target, distributions


def make_patch(
    target,
    affected=">=1.0,<2.0",
    distributions=None,
    apply=None,
    id="synth.compute",
    only_with=None,
    module=None,
    not_backported=None,
    opt_in=False,
):
    """A patch of ``target.compute`` (unless ``apply`` says otherwise) for releases in ``affected``."""
    patch = Patch(
        id=id,
        affected=affected,
        fixed_in="2.0",
        issue="synth/synth#1",
        fix="synth/synth#2",
        summary="compute() is one short",
        only_with=only_with,
        module=module,
        not_backported=not_backported,
        opt_in=opt_in,
    )

    @patch.applier
    def wrap_compute(module, journal):
        journal.wrap(module, "compute", add_one_more)

    @patch.prober
    def probe():
        return None

    if apply is not None:
        patch.applier(apply)
    return SyntheticPatch(patch, target.name, distributions or (target.distribution,))


def registry_for(*synthetic):
    """A registry of in-memory libraries, one per target and distributions, holding these patches."""
    groups = {}
    for item in synthetic:
        groups.setdefault((item.target, item.distributions), []).append(item.patch)
    libraries = [
        Library("synth", target, distributions, [patch.id for patch in patches], {p.id: p for p in patches}.__getitem__)
        for (target, distributions), patches in groups.items()
    ]
    return Registry(libraries)


def state_of(registry, id="synth.compute"):
    return registry.record(id)
