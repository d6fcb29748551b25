"""cupy.from_dlpack_unsupported_dtype on a CUDA device, with torch CUDA tensors (cupy/cupy#8801).

cupy/cupy#8801, "`from_dlpack` causes segmentation fault on unsupported dtype",
reported on CuPy 13.3.0 that this reproducer kills the interpreter:

    import cupy, torch
    cupy.from_dlpack(torch.arange(3, dtype=torch.bfloat16, device="cuda:0"))

The tests marked ``gpu`` run it as written, and the conversions it must not
disturb, on a real device; without one they are skipped with "no CUDA device"
(tests/gpu.py), and none of them has run yet.  The other tests here run on
the CPU: they take the probe's device branch by pretending a driver.
"""

from __future__ import annotations

import pytest

from gpushim.patches.cupy.from_dlpack_unsupported_dtype import patch
from tests.gpu import cuda_torch, on_gpu, pretend_a_device
from tests.support import answer_in_fresh_python, gate

GATE = gate(patch)
RELEASE = GATE.release
AFFECTED = GATE.affected
WAYS = ["from_dlpack(tensor)", "fromDlpack(to_dlpack(tensor))"]
TORCH_DTYPES = ("float16", "float32", "int64", "bool")


def skip_without_fromdlpack(way: str) -> None:
    import cupy

    if way.startswith("fromDlpack") and not hasattr(cupy, "fromDlpack"):
        pytest.skip(f"{RELEASE[0]} {RELEASE[1]} has no cupy.fromDlpack")


@on_gpu
@GATE.affected_only
@pytest.mark.parametrize("way", WAYS)
def test_bfloat16_reproducer_raises_and_the_interpreter_survives(way):
    """The reproducer of cupy/cupy#8801, with gpushim, in a fresh interpreter: a crash is a failure here.

    CuPy 13.x answers NotImplementedError, and the interpreter then goes on
    allocating, freeing and computing on the device.
    """
    cuda_torch()
    skip_without_fromdlpack(way)
    call = {
        "from_dlpack(tensor)": "cupy.from_dlpack(tensor)",
        "fromDlpack(to_dlpack(tensor))": "cupy.fromDlpack(torch.utils.dlpack.to_dlpack(tensor))",
    }[way]
    code = f"""
import gc, warnings
import gpushim.auto
import cupy, torch
import torch.utils.dlpack
warnings.simplefilter("ignore", DeprecationWarning)
outcomes = set()
for _ in range(20):
    tensor = torch.arange(3, dtype=torch.bfloat16, device="cuda:0")
    try:
        outcomes.add("array " + str({call}.dtype))
    except NotImplementedError as error:
        outcomes.add("NotImplementedError: " + str(error))
    del tensor
    gc.collect()
check = torch.ones(1 << 20, device="cuda:0") * 2
torch.cuda.synchronize()
"""
    answer = "[sorted(outcomes), float(check.sum()), float(cupy.arange(10).sum())]"
    outcomes, checked, summed = answer_in_fresh_python(code, answer)
    assert (checked, summed) == (2.0 * (1 << 20), 45.0), outcomes
    if RELEASE[1].startswith("13."):
        assert outcomes == ["NotImplementedError: CuPy does not support bfloat16 yet"]


@on_gpu
@GATE.affected_only
@pytest.mark.parametrize("dtype", TORCH_DTYPES)
@pytest.mark.parametrize("way", WAYS)
def test_supported_dtypes_convert_zero_copy(gpushim_patched, dtype, way):
    """What CuPy accepts still converts, sharing the tensor's memory: same pointer, same values, shared writes."""
    import warnings

    import cupy

    skip_without_fromdlpack(way)
    torch = cuda_torch()
    tensor = torch.arange(6, device="cuda:0").reshape(2, 3)
    tensor = tensor % 2 == 0 if dtype == "bool" else tensor.to(getattr(torch, dtype))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        if way == "from_dlpack(tensor)":
            array = cupy.from_dlpack(tensor)
        else:
            array = cupy.fromDlpack(torch.utils.dlpack.to_dlpack(tensor))
    assert array.data.ptr == tensor.data_ptr()
    assert str(array.dtype) == dtype
    assert array.shape == (2, 3)
    assert (cupy.asnumpy(array) == tensor.cpu().numpy()).all()
    array[1, 2] = array[0, 0]
    assert tensor[1, 2].item() == tensor[0, 0].item()


@on_gpu
@GATE.affected_only
def test_producer_on_a_non_default_stream(gpushim_patched):
    """CuPy hands its stream to ``__dlpack__`` through gpushim's stand-in, so torch orders its work before CuPy's."""
    import cupy

    torch = cuda_torch()
    size = 1 << 22
    producer_stream = torch.cuda.Stream()
    with torch.cuda.stream(producer_stream):
        tensor = torch.full((size,), 3.0, device="cuda:0")
        tensor = tensor * 2
    with cupy.cuda.Stream(non_blocking=True):
        array = cupy.from_dlpack(tensor)
        total = float(array.sum())
    assert array.data.ptr == tensor.data_ptr()
    assert total == 6.0 * size


def test_probe_uses_device_memory_where_a_device_is_present(monkeypatch):
    """On the CPU, with a pretended driver: the probe's tensor gets the driver's memory, freed after, same verdict."""
    driver = pretend_a_device(monkeypatch)
    verdict = patch.probe()
    assert driver.allocated == [6]
    assert driver.freed == [driver.POINTER]
    if AFFECTED:
        assert verdict == "cupy.from_dlpack rejected a bfloat16 DLPack tensor and it was freed 2 times (double free)"
    else:
        assert verdict is None
