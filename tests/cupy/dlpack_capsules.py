"""Hand-made DLPack capsules whose deleter only counts, for tests that must touch no GPU.

A capsule made here describes memory on a CUDA device (``kDLCUDA``) that nothing reads or
writes: a made-up address without a device; with one (``tests.gpu.PRESENT``), real device memory,
so that a driver asked about the pointer (CuPy asks for ``kDLCUDAManaged``) answers about memory
it knows rather than with a CUDA error.  Its producer behaves as real ones (PyTorch, CuPy) do: the capsule's
destructor calls the tensor's deleter only while the capsule is still named ``dltensor`` (or
``dltensor_versioned``), that is, when no consumer took the tensor.  The deleter frees nothing
and counts its calls, so a double free shows as ``tensor.freed == 2`` instead of a crash.

Layouts on x86-64 (dlpack.h 0.8 legacy and 1.0 versioned), as the ctypes structures below
give them; the patch reads the dtype at the offsets asserted here:

    DLTensor: data@0 device{type i32@8, id i32@12} ndim i32@16 dtype{code u8@20, bits u8@21,
              lanes u16@22} shape@24 strides@32 byte_offset u64@40
    DLManagedTensor: DLTensor@0 manager_ctx@48 deleter@56
    DLManagedTensorVersioned: version{major, minor u32}@0 manager_ctx@8 deleter@16 flags@24 DLTensor@32
"""

from __future__ import annotations

import contextlib
import ctypes
import sys
import warnings

from gpushim.device import MADE_UP_ADDRESS
from tests import gpu

KDL_CPU, KDL_CUDA, KDL_ROCM, KDL_CUDA_MANAGED = 1, 2, 10, 13
KDL_INT, KDL_UINT, KDL_FLOAT, KDL_BFLOAT, KDL_COMPLEX, KDL_BOOL = 0, 1, 2, 4, 5, 6

DEVICE_BLOCK = 1 << 12  # bytes of real device memory the capsules point into on a GPU host
_device_block: int | None = None  # its address, once allocated; never freed


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device_type", ctypes.c_int32),
        ("device_id", ctypes.c_int32),
        ("ndim", ctypes.c_int32),
        ("code", ctypes.c_uint8),
        ("bits", ctypes.c_uint8),
        ("lanes", ctypes.c_uint16),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("major", ctypes.c_uint32),
        ("minor", ctypes.c_uint32),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", DELETER),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


assert DLManagedTensor.dl_tensor.offset + DLTensor.code.offset == 20
assert DLManagedTensorVersioned.dl_tensor.offset + DLTensor.code.offset == 52

LEGACY, VERSIONED = b"dltensor", b"dltensor_versioned"

_api = ctypes.PyDLL(None)  # own handle: argtypes on ctypes.pythonapi would be everybody's
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_GetName.restype = ctypes.c_char_p
_api.PyCapsule_GetName.argtypes = [ctypes.py_object]
# The destructor is handed a capsule whose reference count is already 0: use its bare address.
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]

_live: dict[int, Tensor] = {}  # address of each managed tensor -> its record, kept alive


class Tensor:
    """One hand-made managed tensor and the number of times it was freed."""

    def __init__(self, struct, keep_alive) -> None:
        self.struct = struct
        self.address = ctypes.addressof(struct)
        self.data = struct.dl_tensor.data or 0
        self.freed = 0
        self._keep_alive = keep_alive


@DELETER
def _counting_deleter(address):
    _live[address].freed += 1


@ctypes.PYFUNCTYPE(None, ctypes.c_void_p)
def _producer_destructor(capsule):
    for name in (LEGACY, VERSIONED):
        if _api.PyCapsule_IsValid(capsule, name):  # not consumed: the producer frees the tensor
            address = _api.PyCapsule_GetPointer(capsule, name)
            _live[address].struct.deleter(address)


def tensor_data() -> int:
    """Where a capsule's tensor lies unless told: :data:`MADE_UP_ADDRESS`, or device memory where a device is.

    The capsules of one process share one block of :data:`DEVICE_BLOCK` bytes,
    allocated by the CUDA driver (``gpushim.device``) in the primary context
    CuPy uses, and kept to the end: nothing reads or writes it, the deleter
    frees nothing, and a dtype sweep makes tens of thousands of capsules.
    """
    global _device_block
    if not gpu.PRESENT:
        return MADE_UP_ADDRESS
    if _device_block is None:
        from gpushim import device

        _device_block = device.driver().allocate(DEVICE_BLOCK)
    return _device_block


def make_capsule(
    *,
    code: int = KDL_FLOAT,
    bits: int = 32,
    lanes: int = 1,
    shape: tuple[int, ...] = (4,),
    strides: tuple[int, ...] | None = None,
    data: int | None = None,
    byte_offset: int = 0,
    device_type: int = KDL_CUDA,
    device_id: int = 0,
    versioned: bool = False,
):
    """A fresh capsule and its :class:`Tensor`: ``capsule, tensor = make_capsule(code=..., bits=...)``.

    ``data`` None: at :func:`tensor_data`.
    """
    data = tensor_data() if data is None else data
    shape_array = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    strides_array = None if strides is None else (ctypes.c_int64 * max(len(strides), 1))(*strides)
    struct = DLManagedTensorVersioned(1, 0) if versioned else DLManagedTensor()
    tensor = struct.dl_tensor
    tensor.data, tensor.device_type, tensor.device_id = data, device_type, device_id
    tensor.ndim, tensor.code, tensor.bits, tensor.lanes = len(shape), code, bits, lanes
    tensor.shape = shape_array
    if strides_array is not None:
        tensor.strides = strides_array
    tensor.byte_offset = byte_offset
    struct.deleter = _counting_deleter
    record = Tensor(struct, (shape_array, strides_array))
    _live[record.address] = record
    destructor = ctypes.cast(_producer_destructor, ctypes.c_void_p)
    capsule = _api.PyCapsule_New(record.address, VERSIONED if versioned else LEGACY, destructor)
    return capsule, record


def capsule_name(capsule) -> bytes:
    """``b'dltensor'`` until a consumer takes the tensor (CuPy then renames it ``b'used_dltensor'``)."""
    return _api.PyCapsule_GetName(capsule)


class Producer:
    """An object with ``__dlpack__`` that hands out one hand-made capsule and records CuPy's calls.

    It keeps the capsule it handed out: the destructor above is Python code, which must not
    run while an exception propagates, as it would if a consumer dropped the last reference
    while raising.  An unconsumed tensor is therefore freed when the producer goes.
    """

    def __init__(self, device=(KDL_CUDA, 0), **capsule):
        self.capsule, self.tensor = make_capsule(**capsule)
        self.device = device
        self.calls: list[dict] = []
        self._issued = []

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, **kwargs):
        self.calls.append(kwargs)
        self._issued.append(self.capsule)
        return self.capsule


@contextlib.contextmanager
def device_switch_without_gpu(cupy):
    """Let ``cupy.from_dlpack(obj)`` reach ``obj.__dlpack__`` on a machine without a GPU.

    CuPy switches to the producer's device around ``__dlpack__`` with the Python-level
    ``cupy.cuda.runtime.getDevice``/``setDevice``, replaced here by no-ops that record the
    calls.  Its stream lookup fails without a driver, reports that and goes on with the
    default stream; the reports are silenced.  With a GPU present (``tests.gpu.PRESENT``),
    nothing is replaced and no switch is recorded.
    """
    runtime = cupy.cuda.runtime
    switches: list = []
    if gpu.PRESENT:
        yield switches
        return
    saved = runtime.getDevice, runtime.setDevice, sys.excepthook, sys.unraisablehook
    runtime.getDevice = lambda: switches.append("getDevice") or 0
    runtime.setDevice = lambda device: switches.append(("setDevice", device))
    sys.excepthook = sys.unraisablehook = lambda *report: None
    try:
        yield switches
    finally:
        runtime.getDevice, runtime.setDevice, sys.excepthook, sys.unraisablehook = saved


WAYS = ("from_dlpack(capsule)", "fromDlpack(capsule)", "from_dlpack(producer)")


def convert(cupy, way: str, **capsule) -> dict:
    """Hand a fresh tensor to CuPy one way; what came of it, and how often it was freed in the end.

    The outcome is ``{"raises": [type, message]}`` or the array's dtype, shape, strides and
    whether it points at the tensor's own data (zero copy); ``freed`` is counted once the
    array, the capsule and the producer are gone.  ``fromDlpack`` also reports its warnings.
    """
    producer = Producer(**capsule) if way == "from_dlpack(producer)" else None
    argument, tensor = (producer, producer.tensor) if producer else make_capsule(**capsule)
    function = cupy.fromDlpack if way == "fromDlpack(capsule)" else cupy.from_dlpack
    outcome: dict = {}
    with warnings.catch_warnings(record=True) as caught, device_switch_without_gpu(cupy):
        warnings.simplefilter("always")
        try:
            array = function(argument)
        except Exception as error:
            outcome["raises"] = [f"{type(error).__module__}.{type(error).__qualname__}", str(error)]
        else:
            offset = capsule.get("byte_offset", 0)
            outcome.update(
                dtype=str(array.dtype),
                shape=list(array.shape),
                strides=list(array.strides),
                zero_copy=array.data.ptr == tensor.data + offset,
            )
            del array
    if way == "fromDlpack(capsule)":
        outcome["warnings"] = [f"{warning.category.__name__}: {warning.message}" for warning in caught]
    del argument, producer
    outcome["freed"] = tensor.freed
    return outcome


def dtype_sweep(cupy) -> tuple[dict, list]:
    """``from_dlpack`` of every (code, bits) with one lane, and a few lane counts.

    Returns the outcomes grouped as ``{lanes: {outcome: [[first, last], ...]}}``, cases numbered
    in the order they ran (``code * 256 + bits`` for one lane), and the (code, bits, lanes,
    times freed) of each tensor not freed exactly once.
    """
    grouped: dict = {}
    not_once = []
    for lanes in (1, 0, 2, 4, 65535):
        groups = grouped[str(lanes)] = {}
        cases = (
            (code, bits) for code in range(256) for bits in (range(256) if lanes == 1 else (0, 8, 16, 32, 64, 128, 255))
        )
        for number, (code, bits) in enumerate(cases):
            capsule, tensor = make_capsule(code=code, bits=bits, lanes=lanes)
            try:
                key = f"dtype {cupy.from_dlpack(capsule).dtype}"
            except Exception as error:
                key = f"{type(error).__name__}: {error}"
            del capsule
            if tensor.freed == 1:
                del _live[tensor.address]
            else:
                not_once.append((code, bits, lanes, tensor.freed))
            ranges = groups.setdefault(key, [])
            if ranges and ranges[-1][1] == number - 1:
                ranges[-1][1] = number
            else:
                ranges.append([number, number])
    return grouped, not_once
