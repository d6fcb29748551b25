"""gpushim.device: the question "is there a CUDA device?" and the memory a probe gets, with and without one."""

from __future__ import annotations

import ctypes
import subprocess
import sys

import pytest

from gpushim import device
from tests.gpu import PretendDriver, pretend_a_device


@pytest.fixture(autouse=True)
def fresh_driver_cache():
    """Each test asks the driver afresh, and leaves no answer of its own cached."""
    ask = device.driver
    ask.cache_clear()
    yield
    ask.cache_clear()


def test_the_question_imports_no_library_and_raises_nothing():
    code = (
        "import sys\nfrom gpushim import device\nanswer = device.cuda_present()\n"
        "libraries = ('cupy', 'warp', 'nvidia.dali', 'torch', 'numpy')\n"
        "print(answer, sorted(name for name in libraries if name in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    answer, imported = done.stdout.strip().split(" ", 1)
    assert answer in ("True", "False")
    assert imported == "[]"


def test_no_driver_library_means_no_device(monkeypatch):
    def missing(name):
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(ctypes, "CDLL", missing)
    assert device.driver() is None
    assert device.cuda_present() is False


class Library:
    """A driver library whose calls answer the CUresult given (0: success)."""

    def __init__(self, init=0, count=1, count_result=0):
        self.init, self.count, self.count_result = init, count, count_result

    def cuInit(self, flags):  # noqa: N802  (the driver's names)
        return self.init

    def cuDeviceGetCount(self, pointer):  # noqa: N802
        pointer._obj.value = self.count
        return self.count_result


@pytest.mark.parametrize(
    ("library", "present"),
    [
        (Library(), True),
        (Library(init=100), False),  # CUDA_ERROR_NO_DEVICE, as with CUDA_VISIBLE_DEVICES=""
        (Library(count=0), False),
        (Library(count_result=3), False),  # CUDA_ERROR_NOT_INITIALIZED
    ],
    ids=["one device", "cuInit fails", "no device counted", "count fails"],
)
def test_the_driver_decides(monkeypatch, library, present):
    monkeypatch.setattr(ctypes, "CDLL", lambda name: library)
    assert device.cuda_present() is present


def test_without_a_device_memory_is_the_made_up_address(monkeypatch):
    monkeypatch.setattr(device, "driver", lambda: None)
    with device.device_memory(48) as pointer:
        assert pointer == device.MADE_UP_ADDRESS


def test_with_a_device_memory_is_allocated_and_freed_after_the_block(monkeypatch):
    driver = pretend_a_device(monkeypatch)
    with pytest.raises(KeyError):
        with device.device_memory(0) as pointer:
            assert pointer == PretendDriver.POINTER
            assert (driver.allocated, driver.freed) == ([1], [])
            raise KeyError("the block fails")
    assert driver.freed == [PretendDriver.POINTER]


class RecordingLibrary:
    """A driver library that records the calls :class:`gpushim.device.Driver` makes, answering ``results``."""

    def __init__(self, **results) -> None:
        self.calls: list[str] = []
        self.results = results

    def __getattr__(self, name):
        def call(*args):
            self.calls.append(name)
            if name == "cuMemAlloc_v2":
                args[0]._obj.value = 0x7D0000000000
            if name == "cuDriverGetVersion":
                args[0]._obj.value = 13000
            if name == "cuDeviceGetUuid_v2":
                ctypes.memmove(args[0], PretendDriver.UUID, 16)
            return self.results.get(name, 0)

        return call


def test_the_driver_allocates_in_the_primary_context_and_releases_it_when_freeing():
    library = RecordingLibrary()
    driver = device.Driver(library)
    pointer = driver.allocate(48)
    driver.free(pointer)
    assert pointer == 0x7D0000000000
    assert library.calls == [
        "cuDeviceGet",
        "cuDevicePrimaryCtxRetain",
        "cuCtxPushCurrent_v2",
        "cuMemAlloc_v2",
        "cuCtxPopCurrent_v2",
        "cuMemFree_v2",
        "cuDeviceGet",
        "cuDevicePrimaryCtxRelease_v2",
    ]


def test_a_failing_allocation_raises_with_the_context_popped_and_released():
    library = RecordingLibrary(cuMemAlloc_v2=2)  # CUDA_ERROR_OUT_OF_MEMORY
    with pytest.raises(OSError, match="cuMemAlloc_v2 failed with CUresult 2"):
        device.Driver(library).allocate(48)
    assert library.calls[-3:] == ["cuMemAlloc_v2", "cuCtxPopCurrent_v2", "cuDevicePrimaryCtxRelease_v2"]


def test_the_driver_says_its_cuda_version():
    assert device.Driver(RecordingLibrary()).version() == 13000


def test_the_driver_reads_a_devices_uuid_with_cuDeviceGetUuid_v2():  # noqa: N802
    library = RecordingLibrary()
    assert device.Driver(library).uuid(1) == PretendDriver.UUID
    assert library.calls == ["cuDeviceGet", "cuDeviceGetUuid_v2"]


def test_a_failing_uuid_read_raises():
    library = RecordingLibrary(cuDeviceGetUuid_v2=101)  # CUDA_ERROR_INVALID_DEVICE
    with pytest.raises(OSError, match="cuDeviceGetUuid_v2 failed with CUresult 101"):
        device.Driver(library).uuid(0)
