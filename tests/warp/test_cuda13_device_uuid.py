"""warp.cuda13_device_uuid: on a CUDA 13 driver, Warp 1.5.1 to 1.8.0 give every CUDA device an all-zero UUID.

A Warp CUDA device is made on the CPU by the release's own ``Device.__init__``
over a stand-in for Warp's native library (``runtime.core``) with one device,
whose UUID it copies out as the release read it from the driver: all zeros
where the release asked for the entry point at the wrong version, as on a
CUDA 13 driver.  The driver is ``tests.gpu.PretendDriver`` (CUDA 13.0 unless
a test says otherwise).  The native half of the upstream fix, the entry point
at 11040, cannot run without a driver: on 1.8.1 the stand-in copies out the
driver's UUID, as 1.8.1 reads it, and the GPU tests check both halves against
a real driver and torch.

The corpus: the UUID of a device made so, over drivers with several UUIDs, a
driver that cannot read it, and of the CPU device.
"""

from __future__ import annotations

import ctypes
import types
from pathlib import Path

import pytest

from gpushim import ProbeCannotRun
from gpushim.patches.warp.cuda13_device_uuid import patch
from tests.gpu import PretendDriver, pretend_a_device
from tests.support import answer_in_fresh_python, applied, gate, record_corpus

GATE = gate(patch)
ROOT = Path(__file__).resolve().parents[2]

UNREAD = "GPU-00000000-0000-0000-0000-000000000000"
DRIVERS = "GPU-5f1c2a3b-4d6e-48f0-a1b2-c3d4e5f60718"  # PretendDriver.UUID as Warp shows it
CORPUS = {
    "the pretend driver's": PretendDriver.UUID,
    "leading zeros in each group": bytes.fromhex("000000010002000300040000000000ff"),
    "bytes 0xf0 to 0xff": bytes(range(0xF0, 0x100)),
    "unreadable by the driver": None,
}


class NativeLibrary:
    """Warp's native library after ``cuda_init`` found two devices, whose UUIDs it read as ``uuid``."""

    def __init__(self, uuid: bytes) -> None:
        self.uuid = uuid

    def cuda_device_get_count(self) -> int:
        return 2

    def cuda_device_get_name(self, ordinal: int) -> bytes:
        return b"Pretend GPU"

    def cuda_device_get_uuid(self, ordinal: int, buffer) -> None:
        ctypes.memmove(buffer, self.uuid, 16)

    def __getattr__(self, name):
        return lambda *args: 0  # every other property of the device


def cuda_device(read: bytes, ordinal: int = 0):
    """A Warp CUDA device made by the release's ``Device.__init__``, whose UUID the native library read as ``read``."""
    import warp
    import warp.context

    runtime = types.SimpleNamespace(core=NativeLibrary(read), nvrtc_supported_archs=set())
    return warp.context.Device(runtime, f"cuda:{ordinal}", ordinal=ordinal, is_primary=True)


def read_by_this_release(driver: PretendDriver) -> bytes:
    """What this release's native library reads from ``driver``: nothing, from a CUDA 13 driver, where affected."""
    unread = GATE.affected and driver.cuda_version >= 13000
    return bytes(16) if unread or driver.device_uuid is None else driver.device_uuid


def run_corpus(driver: PretendDriver) -> dict:
    outcomes = {}
    for case, uuid in CORPUS.items():
        driver.device_uuid = uuid
        outcomes[case] = cuda_device(read_by_this_release(driver)).uuid
    import warp.context

    cpu = warp.context.Device(types.SimpleNamespace(core=NativeLibrary(bytes(16))), "cpu")
    outcomes["the CPU device"] = cpu.uuid
    return outcomes


@GATE.affected_only
def test_needed_the_release_shows_an_unread_uuid_as_all_zeros():
    assert cuda_device(bytes(16)).uuid == UNREAD


@GATE.affected_only
def test_effective_the_uuid_is_the_drivers_with_gpushim(monkeypatch):
    driver = pretend_a_device(monkeypatch)
    with applied(patch):
        assert cuda_device(bytes(16), ordinal=1).uuid == DRIVERS
    assert driver.uuids_read == [1]


@GATE.ends_only
@pytest.mark.parametrize("prelude", ["import gpushim.auto\nimport warp", "import warp\nimport gpushim.auto"])
def test_effective_with_gpushim_auto_before_or_after_warp(prelude):
    code = (
        f"{prelude}\n"
        "import pytest\nfrom tests.gpu import pretend_a_device\n"
        "from tests.warp.test_cuda13_device_uuid import cuda_device\n"
        "with pytest.MonkeyPatch.context() as monkeypatch:\n"
        "    pretend_a_device(monkeypatch)\n"
        "    uuid = cuda_device(bytes(16)).uuid"
    )
    assert answer_in_fresh_python(code, "uuid") == DRIVERS


@GATE.affected_only
def test_a_uuid_the_release_read_is_left_alone(monkeypatch):
    driver = pretend_a_device(monkeypatch)
    with applied(patch):
        assert cuda_device(bytes.fromhex("00112233445566778899aabbccddeeff")).uuid == (
            "GPU-00112233-4455-6677-8899-aabbccddeeff"
        )
    assert driver.uuids_read == []


@GATE.affected_only
@pytest.mark.parametrize("version", [12090, 12000, 11040])
def test_before_cuda_13_the_driver_is_not_asked(monkeypatch, version):
    driver = pretend_a_device(monkeypatch)
    driver.cuda_version = version
    with applied(patch):
        assert cuda_device(bytes(16)).uuid == UNREAD
    assert driver.uuids_read == []


@GATE.affected_only
def test_without_a_driver_library_the_release_answers(monkeypatch):
    from gpushim import device

    monkeypatch.setattr(device, "driver", lambda: None)
    with applied(patch):
        assert cuda_device(bytes(16)).uuid == UNREAD


@GATE.affected_only
def test_the_probe_cannot_run_before_cuda_13(monkeypatch):
    pretend_a_device(monkeypatch).cuda_version = 12090
    with pytest.raises(ProbeCannotRun, match=r"^the bug needs a CUDA 13 driver; this one supports CUDA 12\.9$"):
        patch.probe()


@GATE.recorded_only
def test_faithful_corpus_matches_the_fixed_release(monkeypatch):
    """Recorded patched on the affected releases and unpatched on 1.8.1; the matrix compares the files."""
    outcomes = record_corpus(patch, lambda: run_corpus(pretend_a_device(monkeypatch)))
    assert outcomes["the pretend driver's"] == DRIVERS
    assert outcomes["unreadable by the driver"] == UNREAD
    assert outcomes["the CPU device"] is None


@GATE.unaffected_only
def test_harmless_device_init_is_warps_own():
    import warp

    warp.config.quiet = True
    warp.init()
    device = type(warp.get_device("cpu"))  # warp.context.Device up to 1.9, warp._src.context.Device from 1.10
    before = vars(device)["__init__"]
    with applied(patch):
        assert vars(device)["__init__"] is before
    assert not hasattr(before, "__wrapped__")
