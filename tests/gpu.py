"""The GPU half of the proof: whether this machine has a CUDA device, and the mark for tests that need one.

The tests under ``tests/<library>/`` prove each patch on the CPU, through
stand-ins for the device.  The tests marked :func:`on_gpu` (pytest marker
``gpu``, in ``test_gpu_<patch>.py`` beside them) port the upstream
reproducers as their reporters ran them, with real producers (torch, CuPy)
and real device memory; they run with ``pytest -m gpu`` and are skipped with
the reason :data:`NO_DEVICE` on a machine without a device, as on every
machine of this project so far: none of them has run yet.

There is one question, asked once: :func:`gpushim.device.cuda_present`, which
asks the CUDA driver how many devices it sees and never raises (where
``cupy.cuda.runtime.getDeviceCount()`` raises without a driver, and DALI
answers only through a failing CUDA call).  The probes of the patches ask the
same function, so a test and a probe never disagree about the machine.
"""

from __future__ import annotations

import sys

import pytest

from gpushim.device import cuda_present

NO_DEVICE = "no CUDA device"
PRESENT = cuda_present()


def on_gpu(test):
    """Mark ``test`` as a GPU test: marker ``gpu``, skipped with :data:`NO_DEVICE` without a device.

    That skip comes before the test's other conditions, wherever the
    decorator stands, so that without a device every GPU test says why.
    """
    others = list(getattr(test, "pytestmark", []))
    test.pytestmark = [pytest.mark.skipif(not PRESENT, reason=NO_DEVICE).mark, pytest.mark.gpu.mark, *others]
    return test


def cuda_torch():
    """torch, with a CUDA build able to use the device; the test is skipped, saying why, otherwise."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip(f"torch {torch.__version__} cannot use the device (CUDA build: {torch.version.cuda})")
    return torch


class PretendDriver:
    """Stands in for the CUDA driver in :mod:`gpushim.device`: one device, and a record of what was asked of it.

    The pointers it hands out are made up as well (and differ from
    ``gpushim.device.MADE_UP_ADDRESS``), so a probe run with it on the CPU
    takes its device branch without any memory being touched.  It supports
    CUDA 13.0 (driver 580's) unless a test sets ``cuda_version``, and its
    device's UUID is :data:`UUID` unless a test sets ``device_uuid``, None
    for a ``cuDeviceGetUuid_v2`` that fails.
    """

    POINTER = 0x7E0000002000
    UUID = bytes.fromhex("5f1c2a3b4d6e48f0a1b2c3d4e5f60718")

    def __init__(self) -> None:
        self.allocated: list[int] = []
        self.freed: list[int] = []
        self.cuda_version = 13000
        self.device_uuid: bytes | None = self.UUID
        self.uuids_read: list[int] = []

    def device_count(self) -> int:
        return 1

    def version(self) -> int:
        return self.cuda_version

    def uuid(self, ordinal: int) -> bytes:
        self.uuids_read.append(ordinal)
        if self.device_uuid is None:
            raise OSError("cuDeviceGetUuid_v2 failed with CUresult 101")  # CUDA_ERROR_INVALID_DEVICE
        return self.device_uuid

    def allocate(self, nbytes: int) -> int:
        self.allocated.append(nbytes)
        return self.POINTER + 0x100 * (len(self.allocated) - 1)

    def free(self, pointer: int) -> None:
        self.freed.append(pointer)


def pretend_a_device(monkeypatch) -> PretendDriver:
    """Make ``gpushim.device`` and :data:`PRESENT` see one CUDA device for this test; its :class:`PretendDriver`.

    So the GPU branches of the probes and of the tests' stand-ins run on the
    CPU, and are not dead code until a device appears.
    """
    from gpushim import device

    pretend = PretendDriver()
    monkeypatch.setattr(device, "driver", lambda: pretend)
    monkeypatch.setattr(sys.modules[__name__], "PRESENT", True)
    return pretend
