"""``cupy.from_dlpack`` frees a DLPack tensor twice, and so crashes, on every dtype it rejects.

What breaks.  The conversion (``cupy._core.dlpack._dlpack_to_cupy_array``) first wraps the
``DLManagedTensor`` in an owner (``DLPackMemory``) whose destructor calls the tensor's deleter,
then checks the dtype, and renames the capsule to ``used_dltensor`` only once every check has
passed.  When a check raises, the owner dies and frees the tensor; the capsule still says
``dltensor``, so the producer's capsule destructor frees it again.  Every tensor rejected after
the owner exists takes that road: bfloat16 (``NotImplementedError``), vector lanes
(``ValueError``), any other code or width (``TypeError``), a ``kDLCUDAManaged`` pointer the CUDA
runtime refuses, a ``byte_offset`` of 2**63 or more (``OverflowError``) and a NULL ``data``
with a non-zero ``byte_offset`` (``AssertionError``).  CuPy 12.0.0 to 13.3.0 do this (the
conversion code is the same in all of them).

Fixed upstream.  cupy/cupy#8801 (``from_dlpack`` of a torch bfloat16 tensor segfaults), fixed
in 13.4.0 by cupy/cupy#8683, which implemented DLPack v1 and with it the right order: 13.4.0
renames the capsule as it takes the tensor, before any check, and raises the same exceptions:
the owner frees it, once.

How the fix works.  The patch lets CuPy convert and, when CuPy raises after taking the tensor,
renames the capsule ``used_dltensor`` itself, as 13.4.0 would have, before the exception reaches
the caller.  Renaming touches the capsule object only, never the freed tensor; the producer's
destructor then leaves the tensor alone.  CuPy took the tensor exactly when its traceback
runs through ``_dlpack_to_cupy_array`` and the error is not the one ``DLPackMemory`` raises
before taking it (a device CuPy is not built for: a plain ``RuntimeError``; a capsule already
used fails the name check below); were a traceback ever to read otherwise, the patch would
leave the capsule as CuPy left it rather than guess.  A capsule passed directly is the caller's
own argument; for any other object, CuPy gets a stand-in whose ``__dlpack_device__`` reads the
object's own and whose ``__dlpack__`` passes CuPy's arguments through and keeps the capsule it
returns, which CuPy would otherwise drop, and its producer free, while raising.  So CuPy itself
still asks whether there is a ``__dlpack_device__``, as these releases do: built with Cython
0.29 (setup.py: ``Cython>=0.29.22,<3``; 13.4.0 moved to Cython 3), their ``hasattr`` takes any
exception raised reading it (a property that raises, even ``KeyboardInterrupt``) for "no such
attribute", where Python's ``hasattr`` would propagate it; the producer's attribute is read as
often as unpatched.

Results and exceptions are CuPy's own: nothing is checked, converted or raised in CuPy's
place, and 13.4.0 raises the same types and messages for these tensors (checked by running
both, tests/cupy/test_from_dlpack_unsupported_dtype.py).  A rejected capsule ends up
consumed, as in 13.4.0; one CuPy refuses before taking it stays with its producer (13.4.0
also consumes a capsule on a foreign device; both free it once).  Accepted tensors are
converted by CuPy untouched, zero copy, and on that path the patch only passes the call on.

Not backported.  What 13.4.0 adds beyond the fix, DLPack v1 (``dltensor_versioned`` capsules,
``max_version`` and ``copy``), is a feature.

The probe.  ``cupy.from_dlpack`` is handed a bfloat16 capsule on a CUDA device whose deleter
frees nothing and counts; its data is a made-up address, never touched, or where a device is
present real device memory.  The tensor must be freed once.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, expect

patch = Patch(
    id="cupy.from_dlpack_unsupported_dtype",
    affected=">=12.0.0,<13.4.0",
    fixed_in="13.4.0",
    issue="cupy/cupy#8801",
    fix="cupy/cupy#8683",
    summary="cupy.from_dlpack frees a DLPack tensor twice (segfault) when it rejects its dtype, e.g. bfloat16.",
)

# PyCapsule_SetName keeps the pointer it is given, so the name must live as long as the module.
USED_NAME = b"used_dltensor"
CONVERSION = "cupy._core.dlpack._dlpack_to_cupy_array"
OWNER_INIT = "cupy._core.dlpack.DLPackMemory.__init__"


def took_the_tensor(error: BaseException) -> bool:
    """Whether CuPy had taken, and so has freed, the tensor when it raised ``error``."""
    frames = []
    traceback = error.__traceback__
    while traceback is not None:
        frames.append(traceback.tb_frame.f_code.co_name)
        traceback = traceback.tb_next
    if CONVERSION not in frames:
        return False  # raised before the conversion began: the capsule is untouched
    refused_device = type(error) is RuntimeError and frames[-1] == OWNER_INIT
    return not refused_device


class CapsuleKeeper:
    """Stands in for a ``__dlpack__`` producer during one ``from_dlpack`` call and keeps its capsule.

    CuPy reads ``__dlpack_device__`` and ``__dlpack__`` and calls them; each read is
    the producer's own, as often and with the same outcome, and the calls reach it unchanged.
    """

    __slots__ = ("_producer", "capsule")

    def __init__(self, producer) -> None:
        self._producer = producer
        self.capsule = None

    @property
    def __dlpack_device__(self):
        return self._producer.__dlpack_device__

    def __dlpack__(self, *args, **kwargs):
        self.capsule = self._producer.__dlpack__(*args, **kwargs)
        return self.capsule


_FROM_DLPACK = Parameters("array")
_FROM_DLPACK_DEPRECATED = Parameters("dltensor")  # fromDlpack


@patch.applier
def _apply(cupy, journal):
    import ctypes
    import warnings

    from cupy._core import dlpack

    expect(dlpack, "DLPackMemory", callable)  # the owner of the conversion this patch knows
    # An own handle: argtypes set on ctypes.pythonapi would be shared with every other user.
    api = ctypes.PyDLL(None)
    is_valid, set_name = api.PyCapsule_IsValid, api.PyCapsule_SetName
    is_valid.argtypes = set_name.argtypes = [ctypes.py_object, ctypes.c_char_p]
    is_valid.restype = set_name.restype = ctypes.c_int

    api.PyCapsule_New.restype = ctypes.py_object
    api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    capsule_type = type(api.PyCapsule_New(ctypes.addressof(ctypes.c_char()), USED_NAME, None))

    def consume_if_taken(capsule, error: BaseException) -> None:
        if is_valid(capsule, b"dltensor") and took_the_tensor(error):
            set_name(capsule, USED_NAME)

    def from_dlpack(wrapped, instance, args, kwargs):
        try:
            (array,) = _FROM_DLPACK.bind(*args, **kwargs)
        except TypeError:
            return wrapped(*args, **kwargs)  # CuPy refuses the call before it takes any tensor
        if type(array) is not capsule_type:
            keeper = CapsuleKeeper(array)
            try:
                return wrapped(keeper)
            except BaseException as error:
                consume_if_taken(keeper.capsule, error)
                raise
        try:
            return wrapped(*args, **kwargs)
        except BaseException as error:
            consume_if_taken(array, error)
            raise

    owners = (cupy, cupy._core, dlpack)
    patched_from_dlpack = journal.wrap(owners, "from_dlpack", from_dlpack)

    def fromDlpack(wrapped, instance, args, kwargs):  # noqa: N802  (CuPy's name)
        """CuPy's warning, then the conversion ``from_dlpack`` does for a capsule.

        Warned from here rather than by CuPy under this wrapper, so that the warning names
        the caller's line, as CuPy's own does.
        """
        try:
            (dltensor,) = _FROM_DLPACK_DEPRECATED.bind(*args, **kwargs)
        except TypeError:
            return wrapped(*args, **kwargs)  # CuPy refuses the call before it takes any tensor
        if type(dltensor) is not capsule_type:
            return wrapped(*args, **kwargs)  # CuPy refuses these before it takes any tensor
        warnings.warn("This function is deprecated in favor of cupy.from_dlpack", DeprecationWarning, stacklevel=2)
        return patched_from_dlpack(dltensor)

    journal.wrap(owners, "fromDlpack", fromDlpack)


@patch.prober
def _probe():
    """Hand ``cupy.from_dlpack`` a bfloat16 capsule on a CUDA device and count the frees.

    The capsule's deleter frees nothing and counts.  Its data is a made-up address, never
    touched, or where a device is present real device memory, so that no CUDA check of the
    pointer can stand in for the bug (gpushim.device).
    """
    import ctypes
    import gc

    import cupy

    from gpushim.device import device_memory

    deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

    class DLManagedTensor(ctypes.Structure):
        _fields_ = [
            ("data", ctypes.c_void_p),
            ("device", ctypes.c_int32 * 2),
            ("ndim", ctypes.c_int32),
            ("dtype", ctypes.c_uint8 * 4),
            ("shape", ctypes.POINTER(ctypes.c_int64)),
            ("strides", ctypes.c_void_p),
            ("byte_offset", ctypes.c_uint64),
            ("manager_ctx", ctypes.c_void_p),
            ("deleter", deleter),
        ]

    kdl_cuda, kdl_bfloat = 2, 4
    frees = []
    shape = (ctypes.c_int64 * 1)(3)
    api = ctypes.PyDLL(None)
    api.PyCapsule_New.restype = ctypes.py_object
    api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    for name in ("PyCapsule_IsValid", "PyCapsule_GetPointer"):
        getattr(api, name).argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p

    @ctypes.PYFUNCTYPE(None, ctypes.c_void_p)
    def producer_destructor(capsule):  # a producer frees the tensor unless a consumer renamed the capsule
        if api.PyCapsule_IsValid(capsule, b"dltensor"):
            tensor.deleter(api.PyCapsule_GetPointer(capsule, b"dltensor"))

    with device_memory(6) as data:
        tensor = DLManagedTensor(data, (kdl_cuda, 0), 1, (kdl_bfloat, 16, 1, 0), shape)
        tensor.deleter = deleter(frees.append)  # frees nothing, counts; the struct keeps it alive
        capsule = api.PyCapsule_New(
            ctypes.addressof(tensor), b"dltensor", ctypes.cast(producer_destructor, ctypes.c_void_p)
        )
        try:
            cupy.from_dlpack(capsule)
        except NotImplementedError:
            pass
        del capsule
        gc.collect()
    if len(frees) > 1:
        return f"cupy.from_dlpack rejected a bfloat16 DLPack tensor and it was freed {len(frees)} times (double free)"
    return None
