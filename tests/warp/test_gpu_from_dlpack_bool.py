"""warp.from_dlpack_bool on a CUDA device: bool tensors from torch and from Warp itself, read with ``wp.from_dlpack``.

NVIDIA/warp#1619, "`wp.from_dlpack()` rejects Boolean tensors", reads:

    import warp as wp

    source = wp.array([True, False, True], dtype=wp.bool, device="cpu")

    for dtype in (None, wp.bool):
        capsule = wp.to_dlpack(source)

        try:
            result = wp.from_dlpack(capsule, dtype=dtype)
        except RuntimeError as error:
            print(error)

with the output ``Unknown DLPack datatype (6, 8)`` and ``Unsupported DLPack
dtype ('bool', 8)``, and adds: "The same failures occur on CUDA devices."
The tests marked ``gpu`` run it with the source on ``device="cuda"`` (Warp
exports bool from 1.4.0; older releases skip it, a missing feature, not this
bug), in a fresh interpreter without and with gpushim, and read a CUDA bool
tensor from torch, ``wp.from_dlpack(torch.tensor([True, False],
device="cuda"))``: 1.16.0, the first fixed release, gives a ``wp.bool`` array
over the tensor's memory, accepts ``dtype=wp.bool``, ``wp.int8`` and
``wp.uint8``, and refuses other dtypes with "Incompatible data types: DLPack
bool8 and Warp ...".  The torch tests need a CUDA build of torch
(``gpu-pip`` in matrix/warp.toml).  Without a device every test is skipped
with "no CUDA device" (tests/gpu.py), and none of them has run yet.  The
probe has no device branch (it reads a NumPy bool array on the CPU).
"""

from __future__ import annotations

import pytest
from packaging.version import Version

from gpushim.patches.warp.from_dlpack_bool import patch
from tests.gpu import cuda_torch, on_gpu
from tests.support import answer_in_fresh_python, gate
from tests.warp.gpu_scripts import run_script

GATE = gate(patch)

import warp as wp

exports_bool = pytest.mark.skipif(
    Version(GATE.release[1]) < Version("1.4.0"),
    reason=f"warp-lang {GATE.release[1]} cannot export bool (missing feature, not this bug)",
)
UNKNOWN = ["RuntimeError", "Unknown DLPack datatype (6, 8)"]

# The reproducer with the source on the device, and what each import gives kept in ``result``.
REPRODUCER = """
import warp as wp

wp.config.quiet = True

source = wp.array([True, False, True], dtype=wp.bool, device="cuda")

result = {}
for dtype in (None, wp.bool):
    capsule = wp.to_dlpack(source)

    try:
        array = wp.from_dlpack(capsule, dtype=dtype)
    except RuntimeError as error:
        result[getattr(dtype, "__name__", "None")] = ["RuntimeError", str(error)]
    else:
        result[getattr(dtype, "__name__", "None")] = {
            "dtype": array.dtype.__name__,
            "device": str(array.device),
            "values": array.numpy().tolist(),
            "zero_copy": array.ptr == source.ptr,
        }
"""


@on_gpu
@exports_bool
@GATE.affected_only
def test_needed_warp_cannot_read_its_own_device_bool_export_without_gpushim(tmp_path):
    result = run_script(REPRODUCER, tmp_path, gpushim=False)
    assert result == {"None": UNKNOWN, "bool": ["RuntimeError", "Unsupported DLPack dtype ('bool', 8)"]}


@on_gpu
@GATE.recorded_only
@exports_bool
def test_reproducer_round_trips_device_bool_arrays_with_gpushim(tmp_path):
    result = run_script(REPRODUCER, tmp_path, gpushim=True)
    for dtype in ("None", "bool"):
        assert result[dtype]["dtype"] == "bool", result
        assert result[dtype]["device"].startswith("cuda")
        assert result[dtype]["values"] == [True, False, True]
        assert result[dtype]["zero_copy"]


@on_gpu
@GATE.affected_only
def test_needed_a_torch_bool_tensor_fails_without_gpushim():
    cuda_torch()
    code = (
        "import torch, warp as wp\nwp.config.quiet = True\n"
        "try:\n    wp.from_dlpack(torch.tensor([True, False], device='cuda'))\n"
        "except Exception as error:\n    raised = f'{type(error).__name__} {error}'\n"
    )
    assert answer_in_fresh_python(code, "raised").startswith("RuntimeError Unknown DLPack datatype (6, 8)")


@on_gpu
@GATE.recorded_only
@pytest.mark.parametrize("dtype", [None, "bool", "int8", "uint8"])
def test_a_torch_bool_tensor_is_read_over_its_memory(this_patch, dtype):
    """As 1.16.0: a bool (or int8/uint8) array on the tensor's device and memory, with its values."""
    torch = cuda_torch()
    tensor = torch.tensor([True, False], device="cuda")
    array = wp.from_dlpack(tensor, dtype=getattr(wp, dtype) if dtype else None)
    assert array.dtype is getattr(wp, dtype or "bool")
    assert array.device.is_cuda and array.device.ordinal == tensor.device.index
    assert array.ptr == tensor.data_ptr()
    assert array.numpy().tolist() == ([True, False] if dtype in (None, "bool") else [1, 0])


@on_gpu
@GATE.recorded_only
def test_a_torch_bool_tensor_is_written_through_the_warp_array(this_patch):
    torch = cuda_torch()
    tensor = torch.tensor([True, False, True, False], device="cuda")
    wp.from_dlpack(tensor, dtype=wp.uint8).fill_(1)
    assert tensor.tolist() == [True] * 4


@on_gpu
@GATE.recorded_only
@pytest.mark.parametrize(("dtype", "named"), [("float32", "float32"), ("int32", "int32"), ("vec2", "vec2f")])
def test_a_torch_bool_tensor_refuses_other_dtypes_as_the_fixed_release(this_patch, dtype, named):
    torch = cuda_torch()
    tensor = torch.tensor([[True, False], [False, True]], device="cuda")
    with pytest.raises(RuntimeError) as raised:
        wp.from_dlpack(tensor, dtype=getattr(wp, dtype))
    assert str(raised.value) == f"Incompatible data types: DLPack bool8 and Warp {named}"
