"""Is there a CUDA device here, and real device memory for a probe that needs a pointer.

Probes reproduce their bugs on the CPU with stand-ins for the device: made-up
device addresses, an allocator that hands them out, a Warp device that only
claims to be ``cuda:0``.  Nothing reads or writes those addresses, but with a
driver present a library may check a pointer (its attributes, the current
device) and answer with a CUDA error instead of the bug, and a self-test on a
user's GPU machine would then report wrongly.  So a probe asks
:func:`cuda_present` and, where a device is present, uses real device memory:
:func:`device_memory` here, or its library's own allocator.

The question goes to the CUDA driver itself (``libcuda``) through ctypes, so
that answering it imports no library and creates no context: ``cuInit`` and
``cuDeviceGetCount`` only.  No driver library, a failing ``cuInit`` (no
device, ``CUDA_VISIBLE_DEVICES=""``) or a count of 0 all mean "no device";
nothing here raises for want of a driver, unlike
``cupy.cuda.runtime.getDeviceCount()``.  Tests substitute :func:`driver` to
take the device branch on a machine without one.

A patch that corrects what a library read from the driver asks the driver
too: its CUDA version and a device's UUID (``warp.cuda13_device_uuid``).  The
probe of a bug only a device shows starts with :func:`require_a_device`.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
from collections.abc import Iterator

from .errors import ProbeCannotRun

MADE_UP_ADDRESS = 0x7F0000001000  # a device address nobody reads or writes
_LIBRARIES = ("libcuda.so.1", "libcuda.so")  # the driver library; Linux, as gpushim's targets


class Driver:
    """The few CUDA driver API calls gpushim makes, on device 0's primary context."""

    def __init__(self, library: ctypes.CDLL) -> None:
        self._library = library

    def _call(self, name: str, *args) -> None:
        result = getattr(self._library, name)(*args)
        if result != 0:
            raise OSError(f"{name} failed with CUresult {result}")

    def device_count(self) -> int:
        count = ctypes.c_int(0)
        self._call("cuDeviceGetCount", ctypes.byref(count))
        return count.value

    def version(self) -> int:
        """The CUDA version the driver supports, as ``cuDriverGetVersion`` says it: 13000 for 13.0."""
        version = ctypes.c_int(0)
        self._call("cuDriverGetVersion", ctypes.byref(version))
        return version.value

    def uuid(self, ordinal: int) -> bytes:
        """Device ``ordinal``'s UUID, the 16 bytes of ``cuDeviceGetUuid_v2`` (CUDA 11.4 on), as ``nvidia-smi`` shows."""
        device, uuid = ctypes.c_int(0), (ctypes.c_char * 16)()
        self._call("cuDeviceGet", ctypes.byref(device), ordinal)
        self._call("cuDeviceGetUuid_v2", uuid, device)
        return bytes(uuid)

    def allocate(self, nbytes: int) -> int:
        """``nbytes`` of device memory in device 0's primary context, the one CUDA libraries share."""
        device, context, pointer = ctypes.c_int(0), ctypes.c_void_p(), ctypes.c_uint64(0)
        self._call("cuDeviceGet", ctypes.byref(device), 0)
        self._call("cuDevicePrimaryCtxRetain", ctypes.byref(context), device)
        self._call("cuCtxPushCurrent_v2", context)
        allocated = self._library.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(nbytes))
        self._call("cuCtxPopCurrent_v2", ctypes.byref(ctypes.c_void_p()))
        if allocated != 0:
            self._call("cuDevicePrimaryCtxRelease_v2", device)
            raise OSError(f"cuMemAlloc_v2 failed with CUresult {allocated}")
        return pointer.value

    def free(self, pointer: int) -> None:
        """Free what :meth:`allocate` gave, and release the primary context it retained."""
        device = ctypes.c_int(0)
        self._call("cuMemFree_v2", ctypes.c_uint64(pointer))
        self._call("cuDeviceGet", ctypes.byref(device), 0)
        self._call("cuDevicePrimaryCtxRelease_v2", device)


@functools.lru_cache(maxsize=None)
def driver() -> Driver | None:
    """The initialised CUDA driver, or None where there is none or ``cuInit`` fails."""
    for name in _LIBRARIES:
        try:
            library = ctypes.CDLL(name)
        except OSError:
            continue
        try:
            if library.cuInit(0) == 0:
                return Driver(library)
        except AttributeError:
            pass
        return None
    return None


def cuda_present() -> bool:
    """Whether the CUDA driver sees at least one device.  Never raises."""
    found = driver()
    if found is None:
        return False
    try:
        return found.device_count() > 0
    except OSError:
        return False


def require_a_device() -> None:
    """Raise :class:`ProbeCannotRun` where the driver sees no device: for the probe of a bug only a device shows."""
    if not cuda_present():
        raise ProbeCannotRun("no CUDA device")


@contextlib.contextmanager
def device_memory(nbytes: int) -> Iterator[int]:
    """Real memory on CUDA device 0 for the ``with`` block where a device is present, else
    :data:`MADE_UP_ADDRESS`, which the caller must hand only to code that never touches it."""
    found = driver() if cuda_present() else None
    if found is None:
        yield MADE_UP_ADDRESS
        return
    pointer = found.allocate(max(nbytes, 1))
    try:
        yield pointer
    finally:
        found.free(pointer)
