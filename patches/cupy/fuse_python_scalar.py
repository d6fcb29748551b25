"""``cupy.fuse`` cannot fuse a function that mixes a Python scalar constant with arrays under NumPy 2.

What breaks.  ``cupy.fuse`` first traces a function with its older code
generator, ``cupy._core.fusion``.  To choose a ufunc loop,
``_FusionHistory.call_ufunc`` runs a closure (``can_cast1``) which, for a
scalar operand, asks ``numpy.can_cast(value, loop_dtype)``.  For a constant
written in the function body (the ``1`` of ``1 + mu * dt * delta_phi``) the
value is the Python int/float/complex/bool itself, and NumPy 2 refuses Python
scalars in ``can_cast`` (NEP 50) with a TypeError.  ``cupy.fuse`` then falls
back for good to its newer generator, ``cupy._core.new_fusion``: a different
kernel, and on these releases one that writes ``inf``/``nan`` constants as
bare identifiers (see ``cupy.fuse_inf_nan``).  CuPy 13.0.0 to 13.4.0 do this
with NumPy >= 2 (13.0 and 13.1 import under it only with
``cupy.numpy2_removed_names``).

Fixed upstream.  cupy/cupy#8536, fixed by cupy/cupy#9012 (hot-fix backport
#9016) in 13.4.1, which asks instead whether the scalar would promote the
loop's dtype: ``numpy.result_type(value, loop_dtype) != loop_dtype`` means
"no".

How the fix works.  The closure cannot be reached, but it reads ``numpy``
from the module globals of ``cupy._core.fusion`` at each call.  This patch
binds that one global to :class:`_NumPyForFusion`, which hands out NumPy's
own objects for every attribute except ``can_cast``; its ``can_cast`` answers
13.4.1's question for a scalar *value* and is NumPy's ``can_cast`` for
anything else.

In 13.2.0 to 13.4.0 ``cupy._core.fusion`` calls ``numpy.can_cast`` in four
places.  Three pass ``arg.dtype`` (a dtype) and keep NumPy's answer.  The
fourth, the scalar branch of ``can_cast1``, is the only one that passes a
value: a Python number (a constant in the body) or a NumPy scalar (a NumPy
scalar constant, or ``dtype.type(0)`` standing for a scalar argument).  For
those the patched call computes 13.4.1's own expression with the same
``numpy.result_type``, so the loop chosen is 13.4.1's for every value, by
construction.  Python numbers are exactly the values that raised before, so
nothing that worked changes; for NumPy scalars NumPy 2's ``can_cast`` and the
13.4.1 rule agree on all 16 dtypes CuPy fuses (the tests check the full
table), so those decisions are the release's own as well.  No other module
sees the replacement; ``gpushim.unpatch()`` rebinds the NumPy module itself.

Not backported.  Nothing: 13.4.1 changed nothing else in
``cupy._core.fusion``.

The probe.  The seed of cupy/cupy#8536 traced with the first code generator,
never compiled; without a device the arrays get made-up addresses nobody
touches.
"""

from __future__ import annotations

from types import ModuleType

from gpushim import Patch, expect, expect_same
from gpushim.patches.cupy._memory import untouched_memory

patch = Patch(
    id="cupy.fuse_python_scalar",
    affected=">=13.0.0,<13.4.1",
    fixed_in="13.4.1",
    issue="cupy/cupy#8536",
    fix="cupy/cupy#9012 (hot-fix #9016)",
    summary="cupy.fuse raises TypeError from numpy.can_cast on Python scalar constants under NumPy 2.",
    only_with={"numpy": ">=2"},
)


class _NumPyForFusion(ModuleType):
    """NumPy as ``cupy._core.fusion`` sees it: NumPy's objects, 13.4.1's ``can_cast`` for scalar values.

    A module whose namespace is a copy of NumPy's, so that each of the
    fusion module's ``numpy.<name>`` lookups (``numpy.generic`` on every
    cached call with a scalar argument) is the same C-level dictionary
    lookup it is on NumPy itself.  The copy stays in step with NumPy because
    NumPy's namespace does not change once ``import numpy`` has finished,
    and this copy is made after that, when CuPy has imported NumPy: what
    NumPy adds later is a submodule imported afterwards (``numpy.testing``)
    or a name its module ``__getattr__`` serves (lazy submodules, the errors
    for names NumPy 2 removed).  The copy hands any name it lacks to
    ``getattr(numpy, name)``, which finds both and raises NumPy's own
    errors.  A program that rebinds an attribute of ``numpy`` after CuPy's
    import is not seen by the fusion module; ``can_cast`` itself always
    calls the ``numpy.can_cast`` of the moment.
    """

    __slots__ = ()

    def __init__(self, numpy):
        super().__init__(numpy.__name__)
        namespace = vars(self)
        namespace.update(vars(numpy))

        def can_cast(from_, to, casting="safe"):
            if casting == "safe" and isinstance(from_, (int, float, complex, numpy.generic)):
                # 13.4.1: "promoted = numpy.result_type(scalar, dtype); if promoted != dtype: no loop".
                return not (numpy.result_type(from_, to) != to)
            return numpy.can_cast(from_, to, casting)

        def __getattr__(name):
            return getattr(numpy, name)

        namespace["can_cast"] = can_cast
        namespace["__getattr__"] = __getattr__
        namespace["__wrapped__"] = numpy

    def __repr__(self):
        return f"<NumPy {self.__version__} for cupy._core.fusion, patched by {patch.id}>"


@patch.applier
def _apply(cupy, journal):
    import importlib

    import numpy

    fusion = importlib.import_module("cupy._core.fusion")
    expect_same(getattr(fusion, "numpy", None), numpy, "cupy._core.fusion.numpy", "the NumPy module")
    expect(fusion, "_FusionHistory.call_ufunc", callable)
    journal.replace(fusion, "numpy", _NumPyForFusion(numpy))


@patch.prober
def _probe():
    """Trace the seed of cupy/cupy#8536 with the first code generator.

    Tracing needs arrays with a shape and a dtype, not their memory: without a device they
    get made-up addresses nobody touches; where one is present, CuPy's own device memory.
    """
    import cupy
    from cupy._core import _fusion_thread_local, fusion

    from gpushim import device

    if not device.cuda_present():
        cupy.cuda.set_allocator(untouched_memory(cupy))
    args = (cupy.empty((), "float32"), cupy.empty((), "float32"), cupy.empty((10, 10), "float32"))

    def seed(dt, mu, delta_phi):
        return 1 + mu * dt * delta_phi

    local = _fusion_thread_local.thread_local
    history = fusion._FusionHistory()
    local.history, local.is_old_fusing = history, True  # as Fusion.__call__ does
    try:
        history.get_fusion(seed, args, "seed")
    except TypeError as error:
        return f"cupy.fuse cannot trace 1 + mu * dt * delta_phi: TypeError: {str(error).splitlines()[0]}"
    finally:
        local.history, local.is_old_fusing = None, False
    return None
