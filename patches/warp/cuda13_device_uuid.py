"""On a CUDA 13 driver every Warp CUDA device's UUID is all zeros (Warp 1.5.1 to 1.8.0).

What breaks.  Warp's native library asks the driver for each entry point at
an explicit CUDA version, and these releases ask for ``cuDeviceGetUuid`` at
110400 where 11040 (CUDA 11.4, which brought ``cuDeviceGetUuid_v2``) was
meant.  Drivers up to CUDA 12 answer; a CUDA 13 driver (R580 on) answers
CUDA error 1, so every ``wp.init()`` prints three ``Warp CUDA error`` lines
(the entry point not found, then error 36 in ``cuda_init``) and reads no
device's UUID: every CUDA ``Device.uuid`` is
``GPU-00000000-0000-0000-0000-000000000000``.  Everything else works, so
code that matches devices across libraries by UUID (torch, CuPy, NVML)
silently finds no match, or the wrong GPU among several.  Seen with Warp
1.6.0 on driver 580.159.04 (CUDA 13.0).

Fixed upstream.  NVIDIA/warp GH-851, fixed by NVIDIA/warp@91fcd4d65 (in
1.8.1; 3fa6c9b19 on main, in 1.9.0), which asks at 11040.  The wrong
version came with NVIDIA/warp@2df89edcb ("Fix driver API function
versions", first in 1.6.0) and its backport 242729417 (in 1.5.1); up to
1.5.0 Warp asks for every entry point at 11040.  Read in each tag's
``warp/native/cuda_util.cpp``: 110400 in every release from 1.5.1 to 1.8.0,
11040 before and after.

How the fix works.  The request is made by compiled code during
``wp.init()``, out of Python's reach: its three lines stay.  The UUID can be
right.  ``Device.__init__`` (in ``warp/context.py`` in all these releases),
which formats the 16 bytes the native library copied as ``GPU-`` and
lowercase hex in groups of 8-4-4-4-12, is wrapped: where the released
answer is all zeros and the driver supports CUDA 13 or later, the device's
UUID is read from the driver itself, ``cuDeviceGetUuid_v2`` (the function
1.8.1 gets at 11040) through ctypes (:mod:`gpushim.device`), and formatted
as every release from 1.5.1 to 1.8.1 formats it.  A UUID the release did
read, a driver before CUDA 13, a CPU device and a driver that cannot answer
leave the released answer as it is.  The driver is asked only then, in a
process where Warp has just initialised CUDA; so the environment cannot be
told when Warp is imported, and the patch applies to every affected release
and acts on CUDA 13 drivers alone.  The patch checks ``Device.__init__``'s
parameters; anything else is a TargetMismatch.

Not backported.  The native request and its three lines.  Devices Warp made
before the patch was applied (``wp.init()`` before gpushim became active)
keep the released answer.

The probe.  Where a CUDA 13 driver sees a device, ``cuda:0``'s UUID as Warp
reads it must be the driver's; elsewhere the probe cannot run.
"""

from __future__ import annotations

from gpushim import Parameters, Patch, ProbeCannotRun, expect

patch = Patch(
    id="warp.cuda13_device_uuid",
    affected=">=1.5.1,<1.8.1",
    fixed_in="1.8.1",
    issue="NVIDIA/warp GH-851",
    fix="NVIDIA/warp@91fcd4d65 (3fa6c9b19 on main)",
    summary="On a CUDA 13 driver every Warp CUDA device's uuid is all zeros, so devices cannot be told apart.",
)

_INIT = Parameters("runtime", "alias", ordinal=-1, is_primary=False, context=None)
_CUDA_13 = 13000  # as cuDriverGetVersion says it


def formatted(uuid: bytes) -> str:
    """``uuid`` as Warp's ``Device.uuid`` shows it, which is how ``nvidia-smi -L`` does."""
    digits = uuid.hex()
    return "GPU-" + "-".join(digits[start:end] for start, end in ((0, 8), (8, 12), (12, 16), (16, 20), (20, 32)))


_UNREAD = formatted(bytes(16))


def _from_a_cuda13_driver(ordinal: int) -> str | None:
    """Device ``ordinal``'s UUID, formatted, from a driver of CUDA 13 or later; None from any other or none."""
    from gpushim import device

    driver = device.driver()
    try:
        if driver is None or driver.version() < _CUDA_13:
            return None
        return formatted(driver.uuid(ordinal))
    except (OSError, AttributeError):  # a failing call, or a driver library without the function
        return None


def _init(wrapped, instance, args, kwargs):
    wrapped(*args, **kwargs)
    if instance.uuid == _UNREAD:
        instance.uuid = _from_a_cuda13_driver(instance.ordinal) or _UNREAD


@patch.applier
def _apply(warp, journal):
    device = expect(warp, "context.Device", type)
    _INIT.check(expect(device, "__init__", callable, own=True), method=True)
    journal.wrap(device, "__init__", _init)


def cuda13_driver():
    """The driver, where it sees a device and supports CUDA 13 or later; raises ProbeCannotRun, saying why, if not."""
    from gpushim import device

    device.require_a_device()
    driver = device.driver()
    version = driver.version()
    if version < _CUDA_13:
        major, minor = divmod(version // 10, 100)
        raise ProbeCannotRun(f"the bug needs a CUDA 13 driver; this one supports CUDA {major}.{minor}")
    return driver


@patch.prober
def _probe():
    """With a CUDA 13 driver and a device, Warp's ``cuda:0`` UUID is the driver's."""
    driver = cuda13_driver()
    import warp

    warp.config.quiet = True
    warp.init()
    found, expected = warp.get_cuda_device(0).uuid, formatted(driver.uuid(0))
    if found != expected:
        return f"Warp reads cuda:0's UUID as {found}; the driver's is {expected}"
    return None
