"""``cupy.fuse`` writes ``inf`` and ``nan`` constants as bare identifiers that CUDA does not know.

What breaks.  When ``cupy.fuse``'s older code generator gives up (it cannot
index with ``newaxis``, as in ``cupy.where(mask[:, cupy.newaxis], cupy.inf,
points)``; under NumPy 2 it also gives up on any Python scalar constant, see
``cupy.fuse_python_scalar``), the newer one, ``cupy._core.new_fusion``, names
each constant with the ``var_name`` property of
``cupy._core._fusion_variable._TraceScalar``, which used ``str()``: the CUDA
source gets ``double v2 = inf;`` and nvrtc stops with ``identifier "inf" is
undefined``.  CuPy 12.x and 13.x before 13.4.1 do this, with every NumPy.

Fixed upstream.  cupy/cupy#9005, fixed by cupy/cupy#9034 (backported as
#9043 and #9044) in 13.4.1, which writes constants with
``cupy._core._scalar._get_cuda_scalar_repr`` (``CUDART_INF``,
``-CUDART_INF_F``, ``CUDART_NAN``, ``1ll``, ``thrust::complex<double>(...)``),
the function the older generator has used since 12.0.

How the fix works.  ``_TraceScalar`` is a Python class, so its ``var_name``
property is replaced through the journal's ``wrap_property`` by one that
keeps the release's own getter for non-constant scalars (kernel parameters,
``a<id>``) and returns ``_get_cuda_scalar_repr(const_value, dtype)`` for
constants.

That is 13.4.1's whole ``var_name``: the ``a<id>`` branch is unchanged there,
and the constant branch is the one call above, to a ``cpdef`` function of
``cupy._core._scalar`` whose source is the same in 13.2.0 to 13.4.1 and which
this patch calls through its Python entry point.  13.4.1 changed nothing else
in ``_fusion_variable``.

Not backported.  Nothing: like 13.4.1, complex constants keep ``str()`` of
their parts, so a complex inf or nan is still written bare; that is the fixed
release's behaviour, kept on purpose.

The probe.  The seed of cupy/cupy#9005 traced with the second code generator,
never compiled: the CUDA source must hold no bare ``inf`` or ``nan``.
"""

from __future__ import annotations

from gpushim import Patch, expect
from gpushim.patches.cupy._memory import untouched_memory

patch = Patch(
    id="cupy.fuse_inf_nan",
    affected=">=12.0.0,<13.4.1",
    fixed_in="13.4.1",
    issue="cupy/cupy#9005",
    fix="cupy/cupy#9034 (backports #9043, #9044)",
    summary="cupy.fuse's second code generator writes cupy.inf/cupy.nan as undefined identifiers inf/nan.",
)


@patch.applier
def _apply(cupy, journal):
    from cupy._core import _fusion_variable, _scalar

    cuda_scalar_repr = expect(_scalar, "_get_cuda_scalar_repr", callable)

    def var_name(released, scalar):
        if scalar.const_value is None:
            return released(scalar)
        return cuda_scalar_repr(scalar.const_value, scalar.dtype)

    doc = f"CUDA name of the scalar (patched by {patch.id})"
    journal.wrap_property(expect(_fusion_variable, "_TraceScalar", type), "var_name", var_name, doc)


@patch.prober
def _probe():
    """Trace the seed of cupy/cupy#9005 with the second code generator.

    Tracing needs arrays with a shape and a dtype, not their memory: without a device they
    get made-up addresses nobody touches; where one is present, CuPy's own device memory.
    """
    import re

    import cupy
    from cupy._core import new_fusion

    from gpushim import device

    if not device.cuda_present():
        cupy.cuda.set_allocator(untouched_memory(cupy))
    mask, points = cupy.empty((8,), "bool"), cupy.empty((8, 3), "float64")

    def seed(mask, points):
        return cupy.where(mask[:, cupy.newaxis], cupy.inf, points)

    body = new_fusion._get_fused_kernel("seed", seed, (mask, points))._cuda_body
    bare = re.search(r"= -?(inf|nan);", body)
    if bare:
        return f"cupy.fuse writes cupy.inf as a bare identifier: {bare.group(0)!r} (nvrtc: identifier is undefined)"
    return None
