"""``cupy.from_dlpack`` frees a DLPack tensor twice, and so crashes, on every dtype it rejects.

Who: CuPy 12.0.0 to 13.3.0 (the conversion code is the same in all of them).
Upstream: cupy/cupy#8801 (``from_dlpack`` of a torch bfloat16 tensor segfaults), fixed in
13.4.0 by cupy/cupy#8683, which implemented DLPack v1 and with it the right order below.

What breaks.  The conversion (``cupy._core.dlpack._dlpack_to_cupy_array``) first wraps the
``DLManagedTensor`` in an owner (``DLPackMemory``) whose destructor calls the tensor's deleter,
then checks the dtype, and renames the capsule to ``used_dltensor`` only once every check has
passed.  When a check raises, the owner dies and frees the tensor; the capsule still says
``dltensor``, so the producer's capsule destructor frees it again.  Every rejected tensor
takes that road: bfloat16 (``NotImplementedError``), vector lanes (``ValueError``), any other
code or width (``TypeError``), and, past the dtype, a ``kDLCUDAManaged`` tensor whose pointer
the CUDA runtime refuses, a ``byte_offset`` of 2**63 or more (``OverflowError``) and a NULL
``data`` with a non-zero ``byte_offset`` (``AssertionError``).  13.4.0 renames the capsule before
any check and raises the same exceptions, so the producer does not free the tensor again.

How.  The checks that run between taking ownership and renaming are run first, on the capsule,
without consuming it: ``PyCapsule_GetPointer`` through ctypes, then the ``DLTensor`` header
read in place.  A tensor CuPy would reject raises here, exactly what 13.4.0 raises, before
CuPy sees it; the capsule stays unconsumed and its producer frees the tensor once.  A tensor
CuPy accepts goes to CuPy's own function untouched: same capsule, same array, no copy.
``from_dlpack(obj)`` with an object that has ``__dlpack_device__`` gets a thin stand-in for
``obj``: its ``__dlpack_device__`` is ``obj``'s own bound method and its ``__dlpack__`` passes
CuPy's arguments (the stream) through unchanged and checks the capsule before handing it
over, so CuPy's device switch and stream negotiation are its own.  ``cupy.from_dlpack``,
``cupy.fromDlpack`` and their bindings in ``cupy._core`` and ``cupy._core.dlpack`` are the
compiled functions themselves and are all replaced; the functions that build the owner are
C-level and cannot be.

Why this is exact.  The checks are 13.3.0's, in 13.3.0's order, and those of 13.4.0, which has
the same code from the owner to the rename; each raises the type and message 13.4.0 raises,
checked by running both on hand-made capsules (tests/cupy/test_from_dlpack_unsupported_dtype.py).
Capsules CuPy refuses before taking ownership (not a capsule, already used, a device CuPy is not
built for) are left to CuPy, which raises its own error and frees nothing.  The AssertionError
is skipped under ``python -O``, as CuPy's own ``assert`` is.  One difference remains, by design:
13.4.0 consumes a capsule it rejects, the patch leaves it to its producer, so handing the same
rejected capsule over again raises the dtype error again rather than "cannot be consumed
multiple times".  What 13.4.0 adds beyond the fix, DLPack v1 (``dltensor_versioned`` capsules,
``max_version`` and ``copy``), is not backported: it is a feature, and 13.3.0 cannot consume
those capsules.
"""

from __future__ import annotations

from gpushim import Patch, ShapeError
from gpushim.patches.cupy import DISTRIBUTIONS

patch = Patch(
    id="cupy.from_dlpack_unsupported_dtype",
    target="cupy",
    distributions=DISTRIBUTIONS,
    affected=">=12.0.0,<13.4.0",
    fixed_in="13.4.0",
    issue="cupy/cupy#8801",
    fix="cupy/cupy#8683",
    summary="cupy.from_dlpack frees a DLPack tensor twice (segfault) when it rejects its dtype, e.g. bfloat16.",
)

# DLPack's enums (dlpack.h): device types and dtype codes.
KDL_CUDA, KDL_ROCM, KDL_CUDA_MANAGED = 2, 10, 13
KDL_INT, KDL_UINT, KDL_FLOAT, KDL_BFLOAT, KDL_COMPLEX, KDL_BOOL = 0, 1, 2, 4, 5, 6

# The widths 13.3.0 converts, per dtype code, and the names its TypeError messages use.
CONVERTED_BITS = {
    KDL_INT: (8, 16, 32, 64),
    KDL_UINT: (8, 16, 32, 64),
    KDL_FLOAT: (16, 32, 64),
    KDL_COMPLEX: (64, 128),
    KDL_BOOL: (8,),
}
_NAMES = {KDL_INT: "int", KDL_UINT: "uint", KDL_FLOAT: "float", KDL_COMPLEX: "complex"}


def dtype_error(code: int, bits: int, lanes: int) -> Exception | None:
    """What 13.4.0 raises for a DLPack dtype it does not convert; None for one it converts."""
    if lanes != 1:
        return ValueError(f"vector dtypes (lanes={lanes}) is not supported")
    if code == KDL_BFLOAT:
        return NotImplementedError("CuPy does not support bfloat16 yet")
    converted = CONVERTED_BITS.get(code)
    if converted is None:
        return TypeError(f"Unsupported dtype. dtype code: {code}")
    if bits in converted:
        return None
    if code == KDL_BOOL:
        return TypeError(f"{bits}-bit bool is not supported")
    return TypeError(f"{_NAMES[code]}{bits} is not supported.")


def capsule_check(own_devices: tuple[int, ...], pointer_attributes):
    """``rejection(obj)``: the exception CuPy 13.4.0 raises after taking ``obj``'s tensor, else None.

    ``obj`` is left as it was.  None also stands for "CuPy refuses it before taking ownership,
    or takes it": not a capsule, not named ``dltensor``, or on a device CuPy is not built for.
    """
    import ctypes
    import sys

    class DLTensor(ctypes.Structure):  # the head of a DLManagedTensor, as dlpack.h lays it out
        _fields_ = [
            ("data", ctypes.c_ssize_t),  # CuPy reads it as intptr_t
            ("device_type", ctypes.c_int32),
            ("device_id", ctypes.c_int32),
            ("ndim", ctypes.c_int32),
            ("dtype", ctypes.c_uint32),  # DLDataType {uint8 code, uint8 bits, uint16 lanes}
            ("shape", ctypes.c_void_p),
            ("strides", ctypes.c_void_p),
            ("byte_offset", ctypes.c_uint64),
        ]

    class DLDataType(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]

    def word(code: int, bits: int, lanes: int) -> int:
        return int.from_bytes(bytes(DLDataType(code, bits, lanes)), sys.byteorder)

    converted = frozenset(word(code, bits, 1) for code, widths in CONVERTED_BITS.items() for bits in widths)
    # Own handle: argtypes set on ctypes.pythonapi would be shared with every other user.  The
    # capsule goes in as its address, id(); a py_object argument costs a third more per call.
    get_pointer = ctypes.PyDLL(None).PyCapsule_GetPointer
    get_pointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    get_pointer.restype = ctypes.c_void_p
    tensor_at = DLTensor.from_address
    dtype_offset = DLTensor.dtype.offset
    largest_offset = (1 << 63) - 1  # CuPy passes byte_offset on as a C long (ptrdiff_t)

    def rejection(obj):
        try:  # PyCapsule_GetPointer checks that obj is a capsule first: any live object is safe here
            address = get_pointer(id(obj), b"dltensor")
        except ValueError:  # not a capsule, used, versioned: CuPy refuses it before owning it
            return None
        tensor = tensor_at(address)
        device = tensor.device_type
        if device not in own_devices:
            return None  # CuPy raises its RuntimeError before owning the tensor
        if device == KDL_CUDA_MANAGED:
            try:
                pointer_attributes(tensor.data)  # CuPy asks the runtime next, owning the tensor
            except Exception as error:
                return error
        if tensor.dtype not in converted:
            dtype = DLDataType.from_address(address + dtype_offset)
            return dtype_error(dtype.code, dtype.bits, dtype.lanes)
        offset = tensor.byte_offset
        if offset:
            if offset > largest_offset:
                return OverflowError("Python int too large to convert to C long")
            if __debug__ and not tensor.data:  # CuPy's MemoryPointer asserts it (not under -O)
                return AssertionError()
        return None

    return rejection


class CheckedProducer:
    """Stands in for a ``__dlpack__`` producer during one ``from_dlpack`` call.

    CuPy calls ``__dlpack_device__``, which is the producer's own bound method, and
    ``__dlpack__`` with its stream; both reach the producer unchanged.  The capsule the
    producer returns is checked before CuPy gets it: one CuPy would reject is dropped
    unconsumed, so the producer frees its tensor once, and the check's exception is raised.
    """

    __slots__ = ("_producer", "_rejection", "__dlpack_device__")

    def __init__(self, producer, rejection) -> None:
        self._producer = producer
        self._rejection = rejection
        self.__dlpack_device__ = producer.__dlpack_device__

    def __dlpack__(self, *args, **kwargs):
        capsule = self._producer.__dlpack__(*args, **kwargs)
        error = self._rejection(capsule)
        if error is None:
            return capsule
        del capsule  # the last reference: the producer frees its tensor now, once
        try:
            raise error
        finally:
            del error  # see _apply


_MISSING = object()


def _sole_argument(args: tuple, kwargs: dict, name: str):
    """The one argument of a call ``f(x)`` or ``f(name=x)``; _MISSING for any other call."""
    if len(args) == 1 and not kwargs:
        return args[0]
    if not args and len(kwargs) == 1:
        return kwargs.get(name, _MISSING)
    return _MISSING


@patch.applier
def _apply(cupy, site):
    import warnings

    from cupy._core import dlpack

    if not callable(getattr(dlpack, "DLPackMemory", None)):
        raise ShapeError("cupy._core.dlpack has no DLPackMemory: not the conversion this patch knows")
    runtime = cupy.cuda.runtime
    own_devices = (KDL_ROCM,) if runtime.is_hip else (KDL_CUDA, KDL_CUDA_MANAGED)
    rejection = capsule_check(own_devices, runtime.pointerGetAttributes)

    def from_dlpack(wrapped, instance, args, kwargs):
        array = args[0] if len(args) == 1 and not kwargs else _sole_argument(args, kwargs, "array")
        if hasattr(array, "__dlpack_device__"):
            return wrapped(CheckedProducer(array, rejection))
        error = rejection(array)
        if error is None:
            return wrapped(*args, **kwargs)
        try:
            raise error
        finally:
            # A frame holding the exception it raised is in a cycle with its traceback, which
            # would keep the capsule (and the producer's tensor) until the garbage collector runs.
            del error

    def fromDlpack(wrapped, instance, args, kwargs):  # noqa: N802  (CuPy's name)
        error = rejection(_sole_argument(args, kwargs, "dltensor"))
        if error is not None:
            # CuPy warns before converting; the warning names the caller's line, as CuPy's does.
            warnings.warn("This function is deprecated in favor of cupy.from_dlpack", DeprecationWarning, stacklevel=2)
            try:
                raise error
            finally:
                del error
        return wrapped(*args, **kwargs)

    owners = (cupy, cupy._core, dlpack)
    site.wrap(owners, "from_dlpack", from_dlpack)
    site.wrap(owners, "fromDlpack", fromDlpack)


@patch.prober
def _probe():
    """Hand ``cupy.from_dlpack`` a bfloat16 capsule on a CUDA device and count the frees (no GPU used)."""
    import ctypes
    import gc

    import cupy

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

    frees = []
    shape = (ctypes.c_int64 * 1)(3)
    tensor = DLManagedTensor(0x7F0000000000, (KDL_CUDA, 0), 1, (KDL_BFLOAT, 16, 1, 0), shape)
    tensor.deleter = deleter(frees.append)  # frees nothing, counts; the struct keeps it alive
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
