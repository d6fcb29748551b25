"""``cupyx.scipy.linalg.expm`` uses a wrong Padé approximant and silently loses accuracy.

What breaks.  ``expm`` scales A, forms A2 = A @ A, A4 and A6, and hands them
with the identity E and the 14 coefficients b of Higham's [13/13] Padé
approximant to the fused function ``cupyx.scipy.linalg._matfuncs._expm_inner``,
which sums the even polynomials U1, U2, V1 and V2; the result is
``solve(V - U, V + U)`` with ``U = A @ (A6 @ U1 + U2)``, ``V = A6 @ V1 + V2``.
V1 must be ``b[12]*A6 + b[10]*A4 + b[8]*A2``; the released body writes
``b[8]*A``.  Nothing raises, and every result is off, more so as the norm of A
grows: the exponential of [[0, 5], [-5, 0]] is off by 1e-4 where 13.5.0 is
exact to 2e-16, and over the test corpus in float64 the worst error relative
to SciPy is 3e-5 against 4e-13.  CuPy 13.0.0 to 13.4.1 do this (12.x has no
``expm``), with every NumPy.

Fixed upstream.  cupy/cupy#9138, fixed by cupy/cupy#9142 (v13 backport
#9144) in 13.5.0, which passes ``(E, A2, A4, A6, b)`` and reads A2 there.

How the fix works.  ``_matfuncs`` is imported with ``cupyx.scipy.linalg``,
which CuPy does not import itself, so the patch names it as its ``module`` and
applies when the user imports it.  ``_expm_inner``, which ``expm`` looks up
among its module's globals at each call, is wrapped: a call with the
release's arguments ``(E, A, A2, A4, A6, b)``, bound as the release binds
them, goes to a new fused function taking 13.5.0's ``(E, A2, A4, A6, b)``,
whose body is the release's own body handed A2 in the place of A; a call
that does not bind goes to the release's function, which rejects it.

The released body reads A only in ``b[8]*A``, so handed A2 there it is
13.5.0's formula, term by term in the same order; the body is the same in
13.0.0 to 13.4.1.  Traced on the CPU, the new function's kernel is 13.5.0's to
the character for real dtypes (both named ``_expm_inner``); for complex dtypes
the two differ only in spelling ``complex<T>`` where 13.5.0 writes
``thrust::complex<T>``, a change of its fusion code generator (cupy/cupy#9040)
that names the same type.  Fused kernels are cached by each fused function:
the new one compiles its own, so a kernel the release compiled before the
patch is not reused, and ``gpushim.unpatch()`` puts the released function back
with its cache.

Not backported.  13.5.0's ``expm`` no longer hands A to ``_expm_inner``;
patched, the release's ``expm`` still does and the wrapper drops it (A is
computed anyway).  13.0.0's ``expm`` also lacks the dtype handling of
cupy/cupy#8206 (in 13.1.0), so there only float64 inputs give 13.5.0's
results; that is another fix.

The probe.  The release's own ``expm`` code, the fused function included,
run on NumPy arrays: its module's ``cupy`` is read as NumPy, and CuPy runs a
fused function's Python body itself when no argument is a CuPy array.  So
nothing runs on a GPU and no device memory is touched; importing
``cupyx.scipy.linalg`` needs libcublas all the same, which on a machine
without a CUDA toolkit the ``nvidia-cublas-cu12`` wheel can provide.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, ProbeCannotRun, expect

MODULE = "cupyx.scipy.linalg._matfuncs"

patch = Patch(
    id="cupy.expm_pade_term",
    affected=">=13.0.0,<13.5.0",
    fixed_in="13.5.0",
    issue="cupy/cupy#9138",
    fix="cupy/cupy#9142 (backport #9144)",
    summary="cupyx.scipy.linalg.expm sums b[8]*A where the Pade approximant needs b[8]*A2: wrong results.",
    module=MODULE,
)


# The parameters of the released _expm_inner, whose body reads A only in b[8]*A.
_EXPM_INNER = Parameters("E", "A", "A2", "A4", "A6", "b")


def _fixed_terms(cupy, released):
    """A fused function with 13.5.0's parameters and formula, made of the released one's body."""
    body = released.func

    def _expm_inner(E, A2, A4, A6, b):
        return body(E, A2, A2, A4, A6, b)

    return cupy.fuse(kernel_name=released.name)(_expm_inner)


@patch.applier
def _apply(matfuncs, journal):
    released = expect(matfuncs, "_expm_inner")
    expect(released, "name", str)  # a cupy.fuse function, named for its kernel
    _EXPM_INNER.check(expect(released, "func", callable))
    fixed = _fixed_terms(matfuncs.cupy, released)

    def expm_inner(wrapped, instance, args, kwargs):
        try:
            E, A, A2, A4, A6, b = _EXPM_INNER.bind(*args, **kwargs)
        except TypeError:
            return wrapped(*args, **kwargs)  # a call CuPy itself rejects, with its own message
        return fixed(E, A2, A4, A6, b)

    journal.wrap(matfuncs, "_expm_inner", expm_inner)


def _import_linalg():
    """Import ``cupyx.scipy.linalg``, with the ``nvidia-cublas-cu12`` wheel's libcublas if no other is found.

    CuPy links its cuBLAS module against libcublas, which a machine without a
    CUDA toolkit lacks; the library named by the error is loaded from the
    wheel, if installed, and the import tried again.
    """
    import re

    try:
        import cupyx.scipy.linalg
    except ImportError as error:
        soname = re.search(r"libcublas\.so\.\d+", str(error))
        if soname is None:
            raise
        if not _load_from_the_wheel(soname.group(0)):
            raise ProbeCannotRun(
                f"cupyx.scipy.linalg needs {soname.group(0)}, which is neither on the loader's path nor installed"
                " by nvidia-cublas-cu12"
            ) from error
        import cupyx.scipy.linalg

    return cupyx.scipy.linalg


def _load_from_the_wheel(soname):
    """Load ``soname`` from the ``nvidia-cublas-cu12`` wheel; whether the wheel has it."""
    import ctypes
    import importlib.util
    from pathlib import Path

    try:
        wheel = importlib.util.find_spec("nvidia.cublas")
    except ImportError:  # no ``nvidia`` package at all
        return False
    folders = (wheel.submodule_search_locations or []) if wheel else []
    for library in (Path(folder, "lib", soname) for folder in folders):
        if library.exists():
            ctypes.CDLL(str(library), mode=ctypes.RTLD_GLOBAL)
            return True
    return False


def _expm_on_numpy(matfuncs):
    """The release's ``expm``, reading NumPy wherever it reads ``cupy``, and its module's globals as they are now."""
    import types

    import numpy

    return types.FunctionType(matfuncs.expm.__code__, {**vars(matfuncs), "cupy": numpy}, "expm")


@patch.prober
def _probe():
    """``expm`` of the generator of a rotation by 5 radians, run on NumPy arrays, against the rotation."""
    import math
    import sys

    import numpy

    if not hasattr(_import_linalg(), "expm"):
        return None  # CuPy 12 has no expm
    a = numpy.array([[0.0, 5.0], [-5.0, 0.0]])
    cos, sin = math.cos(5.0), math.sin(5.0)
    error = numpy.abs(_expm_on_numpy(sys.modules[MODULE])(a) - [[cos, sin], [-sin, cos]]).max()
    if error > 1e-12:
        return f"cupyx.scipy.linalg.expm([[0, 5], [-5, 0]]) is off the rotation by 5 rad by {error:.1e} (b[8]*A in V)"
    return None
