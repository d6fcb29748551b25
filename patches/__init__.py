"""gpushim's patches: one module per upstream bug, grouped by library.

Each module defines ``patch``, a :class:`gpushim.Patch` that is the single
source of truth about that bug and its fix.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gpushim import Patch

MODULES = (
    "cupy.from_dlpack_unsupported_dtype",
    "cupy.fuse_python_scalar",
    "cupy.fuse_inf_nan",
    "dali.cai_stream_none",
    "warp.cai_missing_strides",
    "warp.augassign_mul_div",
)


def load() -> list[Patch]:
    """Every patch declaration, in the order of :data:`MODULES`."""
    return [__import__(f"{__name__}.{name}", fromlist=["patch"]).patch for name in MODULES]
