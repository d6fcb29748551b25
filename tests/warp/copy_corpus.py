"""Arrays for the ``wp.copy`` corpora of warp.copy_strided_offsets and warp.copy_adjoint_offsets.

Each array is made on Warp's CPU device from a NumPy base: contiguous, or a
strided view of a larger base whose other elements hold a marker, so that
what a copy writes outside its range shows in the base.
"""

from __future__ import annotations

import numpy as np

MARKER = 77

# name: (step, start) of the view of its base
LAYOUTS = {
    "contiguous": (1, 0),
    "every 2nd": (2, 0),
    "every 3rd from 1": (3, 1),
}


NUMPY_TYPES = {"float32": np.float32, "float64": np.float64, "int32": np.int32, "uint8": np.uint8}


def warp_module():
    import warp

    warp.config.quiet = True
    warp.init()
    return warp


def values(length, dtype, first=1):
    """``length`` distinct values of ``dtype`` (vec3: three per element), from ``first``."""
    if dtype == "vec3":
        return np.arange(first, first + 3 * length, dtype=np.float32).reshape(length, 3)
    return np.arange(first, first + length).astype(NUMPY_TYPES[dtype])


def laid_out(data, layout, dtype, requires_grad=False):
    """``(view, base)``: ``data`` as a Warp array of ``dtype`` in ``layout``, and the array it is a view of."""
    warp = warp_module()
    step, start = LAYOUTS[layout]
    shape = (start + step * len(data),) + data.shape[1:]
    base = np.full(shape, MARKER, dtype=data.dtype)
    base[start::step] = data
    base = warp.array(base, dtype=getattr(warp, dtype), device="cpu", requires_grad=requires_grad)
    view = base if step == 1 else base[start::step]
    return view, base


def listed(array):
    return array.numpy().tolist()


def raised(error):
    return f"{type(error).__name__}: {error}"
