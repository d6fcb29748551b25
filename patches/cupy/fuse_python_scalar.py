"""STUB written by the lead so the registry loads; the owning helper overwrites this file."""
from gpushim import Patch
from gpushim.patches.cupy import DISTRIBUTIONS

patch = Patch(id="cupy.fuse_python_scalar", target="__stub_cupy", distributions=DISTRIBUTIONS, affected="<0", fixed_in="0",
              issue="-", fix="-", summary="stub")
