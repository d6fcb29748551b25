"""The constant Warp refuses, in a module of its own: a kernel that cannot build fails its whole module."""

import warp


@warp.kernel
def none(out: warp.array(dtype=float)):
    out[0] = None
