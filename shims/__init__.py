"""gpushim: upstream bug fixes for old, pinned releases of GPU libraries.

``import gpushim.auto`` applies every patch whose target is installed in an
affected release, as soon as that target finishes importing.  gpushim never
imports a target itself, and a patch that cannot be applied leaves its
target working as released (see :mod:`gpushim.engine`).

PYTEST_DONT_REWRITE: pytest marks this package for assertion rewriting (it
has a pytest11 entry point), and ``gpushim-run`` has imported it before
pytest starts.
"""

from __future__ import annotations

from . import states
from .declaration import Patch
from .errors import GpushimWarning, InvalidDeclaration, NotAffected, PatchError, ProbeCannotRun, TargetMismatch
from .locks import ForkSafeRLock

TYPE_CHECKING = False  # typing costs ~2 ms to import; `import gpushim.auto` has a 5 ms budget
if TYPE_CHECKING:
    from .engine import Registry
    from .journal import Journal, PatchedProperty
    from .shape import Parameters, expect, expect_lines, expect_reads, expect_same
    from .states import Record

__version__ = "0.3.0"
__all__ = [
    "GpushimWarning",
    "InvalidDeclaration",
    "Journal",
    "NotAffected",
    "Parameters",
    "Patch",
    "PatchError",
    "PatchedProperty",
    "ProbeCannotRun",
    "TargetMismatch",
    "expect",
    "expect_lines",
    "expect_reads",
    "expect_same",
    "patch",
    "record",
    "registry",
    "states",
    "status",
    "unpatch",
]

# What this module holds for the process is kept when importlib.reload() runs it again (as %autoreload does).
_registry = globals().get("_registry")
_making_registry = globals().get("_making_registry") or ForkSafeRLock()  # one registry for threads that meet here


# What patches use once they apply, by the module that holds it; imported on first use, which keeps
# ``import gpushim.auto`` within its budget.
_KIT = {
    "Journal": "journal",
    "PatchedProperty": "journal",
    "Parameters": "shape",
    "expect": "shape",
    "expect_lines": "shape",
    "expect_reads": "shape",
    "expect_same": "shape",
}


def __getattr__(name: str):
    if name in _KIT:
        import importlib

        return getattr(importlib.import_module(f".{_KIT[name]}", __name__), name)
    raise AttributeError(f"module 'gpushim' has no attribute {name!r}")


def registry() -> Registry:
    """The registry of gpushim's own patches (``gpushim.patches``) and other distributions', discovered on first use.

    Other distributions' come through entry points (:mod:`gpushim.plugins`).
    """
    global _registry
    if _registry is None:
        with _making_registry:
            if _registry is None:
                from .catalogue import discover
                from .engine import Registry
                from .plugins import find

                own = discover(f"{__name__}.patches")
                theirs, problems = find(own)
                _registry = Registry(own + theirs, problems)
    return _registry


def patch(*ids: str) -> None:
    """Apply the patches named (all by default) now or when their targets are imported."""
    registry().patch(*ids)


def unpatch(*ids: str) -> None:
    """Undo the patches named (all by default), restoring the identical original objects."""
    registry().unpatch(*ids)


def status() -> list[Record]:
    """One record per patch: id, target, release, affected range, state and reason."""
    return registry().status()


def record(id: str) -> Record:
    """The status record of one patch, by id."""
    return registry().record(id)
