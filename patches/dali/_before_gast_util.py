"""What the DALI patches acting before ``nvidia.dali._autograph.pyct.gast_util`` executes share."""

from __future__ import annotations

from types import ModuleType

from gpushim import TargetMismatch

GAST_UTIL = "nvidia.dali._autograph.pyct.gast_util"


def expect_source(module: ModuleType, *lines: str) -> None:
    """Raise TargetMismatch unless the source of ``module``, about to execute, has each of ``lines`` (stripped)."""
    try:
        source = module.__spec__.loader.get_source(module.__name__)
    except Exception as error:
        raise TargetMismatch(f"the source of {module.__name__} cannot be read: {error}") from None
    found = {line.strip() for line in (source or "").splitlines()}
    for line in lines:
        if line not in found:
            raise TargetMismatch(f"{module.__name__} has no line {line!r}")
