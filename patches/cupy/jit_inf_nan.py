"""``cupyx.jit`` writes infinite and NaN constants as the identifiers ``inf``, ``nan``, ``inff``, ``nanf``.

What breaks.  ``cupyx.jit`` turns each constant of a kernel (``cupy.inf``,
``cupy.nan``, ``numpy.float32(numpy.inf)``, ``cupy.dtype(t).type(cupy.nan)``)
into CUDA text with ``cupyx.jit._cuda_types.get_cuda_code_from_constant``,
which writes ``str(x)`` followed by the dtype's literal suffix: ``x[i] =
inff;`` (a Python float is a ``float`` in ``cuda`` mode), ``inf``, ``nanf``, or
``complex<float>(nan, 0.0)``.  CUDA C++ defines none of these, so nvrtc stops
with ``identifier "inff" is undefined``.  CuPy 12.x and 13.x before 13.4.0 do
this, with every NumPy; the function has written constants so since CuPy
9.0.0 (``cupyx/jit/_types.py``), and its text is identical in v12.0.0 and
v13.3.0.  A sibling of ``cupy.fuse_inf_nan``, in the other code generator.

Fixed upstream.  cupy/cupy#8707 (merged as a2298230c), backported as #8712,
released in 13.4.0; ``git tag --contains 06855e619`` (the merge of #8712)
starts at v13.4.0.  The declared range starts where gpushim's CuPy range
does, at 12.0.0; CuPy 12.x cannot import without a CUDA driver, so the bug's
presence there is read from git.

How the fix works.  13.4.0 writes a complex constant as its type applied to
its real and imaginary parts, each written as a constant of the matching real
type (``complex<float>(nanf(""), 0.0f)``), and a non-finite real as
``CUDART_INF``/``-CUDART_INF``/``nan("")`` for ``double`` and
``CUDART_INF_F``/``-CUDART_INF_F``/``nanf("")`` for the narrower floats;
finite reals are written as before.  The patch wraps
``get_cuda_code_from_constant`` in ``cupyx.jit._cuda_types``, where every
caller (``_internal_types.Data.init``, ``CArray``'s template arguments) looks
it up at each call: complex and non-finite constants get 13.4.0's text, every
other constant the release's own.  ``cupyx.jit`` is not imported by ``import
cupy``, so the patch waits for ``cupyx.jit._cuda_types``.

Like 13.4.0, the patched function asks ``numpy.isfinite`` about every real
constant, so a Python integer beyond 64 bits (``2**70``), which 13.3.0 writes
as a literal nvrtc cannot hold, raises NumPy's TypeError while transpiling.

The generated source changes, so the kernel CuPy compiles and caches is
13.4.0's: a cached kernel of an unpatched process has other source and is
never reused for it.  Finite complex parts get their suffix too
(``complex<float>(1.0f, 2.0f)`` where 13.3.0 writes ``(1.0, 2.0)``), as in
13.4.0.

Not backported.  13.4.0's new tests.

The probe.  A kernel that stores ``cupy.inf`` into a ``float32`` array,
transpiled without compiling: the source must hold no bare identifier.
"""

from __future__ import annotations

import re

from gpushim import Parameters, Patch, expect

patch = Patch(
    id="cupy.jit_inf_nan",
    affected=">=12.0.0,<13.4.0",
    fixed_in="13.4.0",
    issue="cupy/cupy#8707",
    fix="cupy/cupy@a2298230c (backport #8712)",
    summary="cupyx.jit writes cupy.inf/cupy.nan as undefined identifiers inf, inff, nan, nanf.",
    module="cupyx.jit._cuda_types",
)

_BARE = re.compile(r"(?<![\w\"])-?(inf|nan)f?(?![\w(])")


_CONSTANT = Parameters("x", "ctype")  # get_cuda_code_from_constant's


def _fixed(scalar):
    """The wrapper of ``get_cuda_code_from_constant``: 13.4.0's text for complex and non-finite constants."""
    import numpy

    def constant(released, x, ctype):
        dtype = ctype.dtype
        if dtype.kind == "c":
            part = scalar(dtype.char.lower())
            return f"{ctype}({constant(released, x.real, part)}, {constant(released, x.imag, part)})"
        if numpy.isfinite(x):
            return released(x, ctype)
        double = dtype == numpy.float64
        if numpy.isnan(x):
            return 'nan("")' if double else 'nanf("")'
        return ("-" if x < 0 else "") + ("CUDART_INF" if double else "CUDART_INF_F")

    def wrapper(wrapped, instance, args, kwargs):
        try:
            x, ctype = _CONSTANT.bind(*args, **kwargs)
        except TypeError:
            return wrapped(*args, **kwargs)
        return constant(wrapped, x, ctype)

    return wrapper


@patch.applier
def _apply(cuda_types, journal):
    _CONSTANT.check(expect(cuda_types, "get_cuda_code_from_constant", callable))
    journal.wrap(cuda_types, "get_cuda_code_from_constant", _fixed(expect(cuda_types, "Scalar", type)))


@patch.prober
def _probe():
    """The source ``cupyx.jit`` makes of ``x[threadIdx.x] = cupy.inf`` for a float32 ``x``, never compiled."""
    import cupy
    import numpy
    from cupyx import jit
    from cupyx.jit import _compile, _cuda_types

    def store_inf(x):
        x[jit.threadIdx.x] = cupy.inf

    array = _cuda_types.CArray(numpy.dtype("float32"), 1, True, True)
    code = _compile.transpile(store_inf, ['extern "C"', "__global__"], "cuda", (array,), _cuda_types.void).code
    bare = _BARE.search(code)
    if bare:
        return f"cupyx.jit writes cupy.inf as the bare identifier {bare.group(0)!r} (nvrtc: identifier is undefined)"
    return None
