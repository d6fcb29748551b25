"""dali.cai_stream_none on a CUDA device: DALI tensors from device memory whose interface says ``"stream": None``.

NVIDIA/DALI#5423, "Bug in creating `TensorGPU` when `stream` key is `None` in
CUDA array interface", reported on DALI 1.36.0 with this reproducer:

    import numpy as np
    import nvidia.dali.backend as backend
    import pycuda.autoinit  # noqa
    import pycuda.gpuarray as gpuarray

    test_input = np.random.randn(4, 4).astype(np.float32)
    g = gpuarray.to_gpu(test_input)
    print(g.__cuda_array_interface__)
    # {'shape': (4, 4), 'strides': (16, 4), 'data': (139775629590528, False),
    #  'typestr': '<f4', 'stream': None, 'version': 3}
    backend.TensorGPU(g)

(its comment wrapped here) and ``SystemError: <built-in method __init__ of
PyCapsule object ...>``.  The tests marked ``gpu`` port it with CuPy as the
producer, its interface shown as PyCUDA's is (``"stream": None``), through
every constructor route and ``fn.external_source`` in a pipeline, and run the
reproducer itself where PyCUDA is installed.  Without a device they are
skipped with "no CUDA device" (tests/gpu.py), and none of them has run yet.
The last test runs on the CPU: it takes the probe's device branch by
pretending a driver.
"""

from __future__ import annotations

from pathlib import Path

import numpy
import pytest

pytest.importorskip("nvidia.dali")

from gpushim.patches.dali.cai_stream_none import patch
from tests.dali.gpu_producers import StreamNone
from tests.gpu import on_gpu, pretend_a_device
from tests.support import answer_in_fresh_python, gate

GATE = gate(patch)
AFFECTED = GATE.affected

ROOT = Path(__file__).resolve().parents[2]


def device_array(shape=(2, 4, 3), dtype="float32"):
    import cupy

    return cupy.arange(int(numpy.prod(shape)), dtype=dtype).reshape(shape)


def values(tensor) -> numpy.ndarray:
    """What a DALI GPU tensor or list holds, copied to the host by DALI."""
    if type(tensor).__name__ == "TensorListGPU":
        tensor = tensor.as_tensor()
    return numpy.array(tensor.as_cpu())


def constructor_routes():
    from nvidia.dali.tensors import TensorGPU, TensorListGPU

    return {
        "TensorGPU(obj)": lambda obj: TensorGPU(obj),
        "TensorGPU(obj, layout)": lambda obj: TensorGPU(obj, "HWC"),
        "TensorGPU(obj, layout, device_id)": lambda obj: TensorGPU(obj, "HWC", 0),
        "TensorGPU(object=, layout=, device_id=)": lambda obj: TensorGPU(object=obj, layout="HWC", device_id=0),
        "TensorListGPU(obj)": lambda obj: TensorListGPU(obj),
        "TensorListGPU(obj, layout)": lambda obj: TensorListGPU(obj, "WC"),
        "TensorListGPU(obj, layout, device_id)": lambda obj: TensorListGPU(obj, "WC", 0),
        "TensorListGPU(object=, layout=, device_id=)": lambda obj: TensorListGPU(object=obj, layout="WC", device_id=0),
    }


@on_gpu
@GATE.affected_only
def test_needed_stream_none_fails_without_gpushim():
    """On a device the failure is the SystemError of the issue, with the pending TypeError as its context."""
    code = (
        "from tests.dali.gpu_producers import StreamNone\n"
        "import cupy\nfrom nvidia.dali.tensors import TensorGPU\n"
        "try:\n    TensorGPU(StreamNone(cupy.ones((4, 4), 'float32')))\n"
        "except Exception as error:\n"
        "    raised = f'{type(error).__name__} | {type(error.__context__).__name__} {error.__context__}'\n"
    )
    raised = answer_in_fresh_python(code, "raised")
    assert raised.endswith("| TypeError an integer is required"), raised


@on_gpu
@GATE.affected_only
@pytest.mark.parametrize("route", list(constructor_routes()))
def test_every_constructor_route_wraps_the_memory_and_keeps_its_values(gpushim_patched, route):
    array = device_array()
    tensor = constructor_routes()[route](StreamNone(array))
    assert tensor.data_ptr() == array.data.ptr  # wrapped, not copied
    numpy.testing.assert_array_equal(values(tensor), array.get())


@on_gpu
@GATE.affected_only
@pytest.mark.parametrize("batch", [True, False], ids=["batch", "samples"])
def test_external_source_in_a_pipeline_round_trips(gpushim_patched, batch):
    """``fn.external_source(device="gpu")`` fed with stream-None producers: the pipeline returns their values."""
    from nvidia.dali import fn, pipeline_def

    batches = [device_array((2, 4, 3)), device_array((2, 4, 3)) * 10]
    source = [StreamNone(array) if batch else [StreamNone(array[0]), StreamNone(array[1])] for array in batches]

    @pipeline_def(batch_size=2, num_threads=1, device_id=0)
    def pipeline():
        return fn.external_source(source=source, device="gpu", batch=True, cycle=True)

    pipe = pipeline()
    pipe.build()
    for array in batches:
        (output,) = pipe.run()
        numpy.testing.assert_array_equal(values(output), array.get())


@on_gpu
@GATE.affected_only
def test_feed_input_round_trips(gpushim_patched):
    from nvidia.dali import fn, pipeline_def

    array = device_array((2, 4, 3))

    @pipeline_def(batch_size=2, num_threads=1, device_id=0, prefetch_queue_depth=1)
    def pipeline():
        return fn.external_source(name="data", device="gpu")

    pipe = pipeline()
    pipe.build()
    pipe.feed_input("data", StreamNone(array))
    (output,) = pipe.run()
    numpy.testing.assert_array_equal(values(output), array.get())


@on_gpu
@GATE.affected_only
def test_the_issue_reproducer_with_pycuda():
    """NVIDIA/DALI#5423's own code, with gpushim, in a fresh interpreter (where PyCUDA is installed)."""
    pytest.importorskip("pycuda")
    code = (
        "import gpushim.auto\nimport numpy as np\nimport nvidia.dali.backend as backend\n"
        "import pycuda.autoinit  # noqa\nimport pycuda.gpuarray as gpuarray\n"
        "test_input = np.random.randn(4, 4).astype(np.float32)\ng = gpuarray.to_gpu(test_input)\n"
        "assert g.__cuda_array_interface__['stream'] is None\n"
        "t = backend.TensorGPU(g)\n"
    )
    assert answer_in_fresh_python(code, "bool(np.array_equal(np.array(t.as_cpu()), test_input))") is True


def test_probe_uses_device_memory_where_a_device_is_present(monkeypatch):
    """On the CPU, with a pretended driver: the probe wraps the driver's memory, freed after, same verdict."""
    driver = pretend_a_device(monkeypatch)
    verdict = patch.probe()
    assert driver.allocated == [16]
    assert driver.freed == [driver.POINTER]
    assert (verdict is not None) == AFFECTED
    if AFFECTED:
        assert "TypeError: an integer is required" in verdict
