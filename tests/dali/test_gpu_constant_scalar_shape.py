"""dali.constant_scalar_shape on a CUDA device: constants placed on the GPU, from a GPU pipeline.

The CPU tests show the shapes of constants on the CPU; a device adds the
``Constant`` operator's GPU backend, which takes the same shape from the
same Python code.  Without a device the tests are skipped with "no CUDA
device" (tests/gpu.py), and none of them has run yet.
"""

from __future__ import annotations

import pytest

from gpushim.patches.dali.constant_scalar_shape import patch
from tests.dali import constant_corpus
from tests.gpu import on_gpu
from tests.support import gate

GATE = gate(patch)


def on_device(case):
    return constant_corpus.run(device="gpu", device_id=0)[case]


@on_gpu
@GATE.affected_only
def test_needed_a_gpu_constant_of_3_0_is_a_one_element_tensor_without_gpushim():
    assert [sample["shape"] for sample in on_device("Constant(device) of 3.0")] == [[1], [1]]


@on_gpu
@GATE.recorded_only
@pytest.mark.parametrize("value", ["3.0", "3", "True", "[3.0]", "float32(3)"])
def test_gpu_constants_are_shaped_as_on_the_cpu_in_the_fixed_release(value, this_patch):
    expected = [[], []] if value in ("3.0", "3", "True", "float32(3)") else [[1], [1]]
    assert [sample["shape"] for sample in on_device(f"Constant(device) of {value}")] == expected
