"""gpushim: upstream bug fixes for old, pinned releases of GPU libraries.

``import gpushim.auto`` applies every patch whose target is installed in an
affected release, as soon as that target finishes importing.  gpushim never
imports a target itself, and a patch that cannot be applied leaves its
target working as released (see :mod:`gpushim.engine`).
"""

from __future__ import annotations

from .declaration import Patch
from .errors import GpushimWarning, NotAffected, PatchError, ShapeError

__version__ = "0.1.0"
__all__ = [
    "GpushimWarning",
    "NotAffected",
    "Patch",
    "PatchError",
    "ShapeError",
    "Site",
    "patch",
    "registry",
    "status",
    "unpatch",
]

_registry = None


def __getattr__(name: str):
    # Site is only needed once a patch is applied; importing it lazily keeps
    # ``import gpushim.auto`` within its budget.
    if name == "Site":
        from .site import Site

        return Site
    raise AttributeError(f"module 'gpushim' has no attribute {name!r}")


def registry():
    """The registry of gpushim's own patches, loaded on first use."""
    global _registry
    if _registry is None:
        from .engine import Registry
        from .patches import load

        _registry = Registry(load())
    return _registry


def patch(*ids: str) -> None:
    """Apply the patches named (all by default) now or when their targets are imported."""
    registry().patch(*ids)


def unpatch(*ids: str) -> None:
    """Undo the patches named (all by default), restoring the identical original objects."""
    registry().unpatch(*ids)


def status() -> list[dict[str, str | None]]:
    """One record per patch: id, target, release, affected range, state and reason."""
    return registry().status()
