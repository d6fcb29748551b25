"""``cupy.copyto`` of a Python scalar, and so ``cupy.full``, raises TypeError under NumPy 2.

What breaks.  For a ``bool``, ``int``, ``float`` or ``complex`` source,
``cupy._manipulation.basic.copyto`` decides the cast with
``numpy.can_cast(src, dst.dtype, casting)``, and NumPy 2 refuses Python
scalars there (NEP 50): ``TypeError: can_cast() does not support Python ints,
floats, and complex``, whatever ``casting`` says.  Every fill of a CuPy array
with a Python number goes through that line: ``cupy.copyto(x, 1.5)``, and in
13.2.0's own source ``cupy.full`` and ``cupy.full_like``
(``casting='unsafe'``), ``cupy.select`` (its ``default``) and ``cupy.unwrap``
(``0`` and half the period, with ``where=``); ``cupy.full`` in turn is called
with Python numbers across CuPy and cupyx (nanmedian, piecewise,
``cupyx.scipy.ndimage`` filter weights, ``cupyx.scipy.sparse``...).  Inside
``cupy.fuse`` both code generators fail the same way on ``cupy.copyto(x,
1.5)``.  CuPy 13.0.0 to 13.2.0 do this with NumPy >= 2 (13.0 and 13.1
require NumPy < 1.29 and import under NumPy 2 only with
``cupy.numpy2_removed_names``); with NumPy 1 the release works.

Fixed upstream.  cupy/cupy#8391 (duplicate #8393), fixed by cupy/cupy#8430,
backported to v13 by #8435, released in 13.3.0.  13.3.0 asks NumPy itself
whether the value may be written into the destination's dtype under
``casting``: it copies the scalar into a 0-d NumPy array of ``dst.dtype``
with ``numpy.copyto`` and lets NumPy's own error (``TypeError``,
``OverflowError``) and warnings (``ComplexWarning``) through.  The scalar then
goes to the kernel unchanged, exactly as in 13.2.0.

How the fix works.  ``cupy.copyto`` and ``cupy._manipulation.basic.copyto``
(the one object every caller reaches; ``cupy.full`` looks up ``cupy.copyto``
at each call) get a wrapper that binds the call as ``copyto`` binds it and
then makes one type test of ``src``: anything but an exact
``bool``/``int``/``float``/``complex``, and any call that does not bind, goes
to the release's own ``copyto`` untouched.  For those four types the wrapper
runs 13.3.0's scalar path: NumPy's check on a 0-d array, then the release's
own tail for scalars, with the release's own objects looked up in its module
at each call (``_core.elementwise_copy``, ``fusion._is_fusing``,
``fusion._call_ufunc``, ``search._where_ufunc``).  That tail is line for line
the same in 13.2.0 and 13.3.0, so the kernel receives what it receives on
13.3.0.

Not backported.  #8430 also names the dtype of a ``cupy.fuse`` scalar
argument (``_FusionVarScalar``, ``_ScalarProxy``) correctly in the message of
a refused cast; 13.2.0 decides that cast right under NumPy 2, only its
message differs, on every NumPy, so it is not this bug.  NumPy scalars and
arrays took the same path in 13.2.0 and 13.3.0 and are not touched.

The probe.  ``cupy.full((3,), 2.5)``.  Without a CUDA device it gives the
array memory nobody touches and swaps the copy kernel for a recorder, so the
probe stops at the cast decision; with a device it uses real memory and the
real kernel, and never a made-up pointer.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, expect
from gpushim.patches.cupy._memory import untouched_memory

patch = Patch(
    id="cupy.copyto_python_scalar",
    affected=">=13.0.0,<13.3.0",
    fixed_in="13.3.0",
    issue="cupy/cupy#8391",
    fix="cupy/cupy#8430 (backport #8435)",
    summary="cupy.copyto, cupy.full and cupy.full_like raise TypeError on Python scalars under NumPy 2.",
    only_with={"numpy": ">=2"},
)

_PYTHON_SCALARS = frozenset((bool, int, float, complex))
_COPYTO = Parameters("dst", "src", casting="same_kind", where=None)


@patch.applier
def _apply(cupy, journal):
    import types

    import numpy

    basic = expect(cupy, "_manipulation.basic")
    _COPYTO.check(expect(basic, "copyto", types.FunctionType))
    core, fusion, search = (expect(basic, name) for name in ("_core", "fusion", "search"))
    for owner, name in ((core, "elementwise_copy"), (fusion, "_is_fusing"), (fusion, "_call_ufunc")):
        expect(owner, name, callable)
    expect(search, "_where_ufunc")

    def copyto(dst, src, casting="same_kind", where=None):
        numpy.copyto(numpy.empty((), dtype=dst.dtype), src, casting=casting)
        if fusion._is_fusing():
            if where is None:
                core.elementwise_copy(src, dst)
            else:
                fusion._call_ufunc(search._where_ufunc, where, src, dst, dst)
            return
        if where is not None:
            core.elementwise_copy(src, dst, _where=where)
            return
        if dst.size == 0:
            return
        core.elementwise_copy(src, dst)

    def wrapper(wrapped, instance, args, kwargs):
        try:
            dst, src, casting, where = _COPYTO.bind(*args, **kwargs)
        except TypeError:
            return wrapped(*args, **kwargs)  # a call CuPy itself rejects, with its own message
        if type(src) not in _PYTHON_SCALARS:
            return wrapped(*args, **kwargs)
        return copyto(dst, src, casting, where)

    journal.wrap((cupy, basic), "copyto", wrapper)


@patch.prober
def _probe():
    """``cupy.full((3,), 2.5)``, the seed of cupy/cupy#8391, up to the copy kernel."""
    import cupy

    from gpushim import device

    core, allocator, kernel = cupy._core, cupy.cuda.get_allocator(), cupy._core.elementwise_copy
    if not device.cuda_present():
        cupy.cuda.set_allocator(untouched_memory(cupy))
        core.elementwise_copy = lambda *args, **kwargs: None
    try:
        cupy.full((3,), 2.5)
    except TypeError as error:
        return f"cupy.full((3,), 2.5) raises TypeError: {str(error).splitlines()[0]}"
    finally:
        core.elementwise_copy = kernel
        cupy.cuda.set_allocator(allocator)
    return None
