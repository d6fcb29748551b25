"""warp.sgd_argument_order on a CUDA device: ``warp.optim.SGD`` stepping parameters that live on ``cuda``.

NVIDIA/warp#1143, "[BUG] SGD Optimizer Parameter Order Bug", reads:

    The `SGD` optimizer in `warp/_src/optim/sgd.py` has a parameter order
    mismatch between the kernel signature and the kernel call, causing
    momentum, dampening, and weight_decay arguments to be swapped.

    **Kernel signature (line 24):**
    ```python
    def sgd_step_kernel(
        g, b, lr, weight_decay, momentum, damping, nesterov, t, params
    ):
    ```

    **Kernel call (line 109):**
    ```python
    kernel_inputs = [g, b, lr, momentum, dampening, weight_decay, int(nesterov), t, params]
    ```

The issue has no script; the fix (NVIDIA/warp@acc688c63, in 1.11.0) adds
warp/tests/test_sgd.py, run on every device, whose first test reads:

    with wp.ScopedDevice(device):
        # Start with params = [1.0, 2.0], constant gradient = [0.1, 0.2]
        params = wp.array([1.0, 2.0], dtype=float, requires_grad=False)
        grad = wp.array([0.1, 0.2], dtype=float)

        lr = 0.1
        momentum = 0.9
        opt = warp.optim.SGD([params], lr=lr, momentum=momentum, dampening=0.0)

        # Step 1: momentum buffer should be initialized to gradient
        opt.step([grad])
        result1 = params.numpy()

and expects 0.99 and 1.98, then 0.971 and 1.942 after a second step; its
weight-decay and dampening tests expect 0.99, 1.98 (``weight_decay=0.1``, zero
gradient) and 0.9, then 0.76 (``momentum=0.9, dampening=0.5``, gradient 1).
The tests marked ``gpu`` run those three on ``device="cuda"`` with gpushim,
the first without it on the affected releases (0.9 and 1.8: momentum taken as
weight decay), and compare every combination of the three factors and
Nesterov on the device with the same steps on the CPU, whose outcomes the CPU
tests prove equal to 1.11.0's.  Without a device they are skipped with "no
CUDA device" (tests/gpu.py), and none of them has run yet.  The probe has no
device branch (it steps on the CPU).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from gpushim.patches.warp.sgd_argument_order import patch
from tests.gpu import on_gpu
from tests.support import gate

GATE = gate(patch)

import warp as wp
import warp.optim

DEVICE = "cuda"
STEPS = 3
SETTINGS = [
    {"momentum": momentum, "dampening": dampening, "weight_decay": weight_decay, "nesterov": nesterov}
    for momentum, dampening, weight_decay, nesterov in itertools.product((0.0, 0.9), (0.0, 0.25), (0.0, 0.1), (0, 1))
]


def steps(params, grad, count=2, **setting) -> list:
    """``params`` after each of ``count`` steps of ``SGD(lr=0.1, **setting)`` with the constant gradient ``grad``."""
    with wp.ScopedDevice(DEVICE):
        params = wp.array(params, dtype=float, requires_grad=False)
        grad = wp.array(grad, dtype=float)
        opt = warp.optim.SGD([params], lr=0.1, **setting)
        after = []
        for _ in range(count):
            opt.step([grad])
            after.append(params.numpy().tolist())
    return after


def history(setting, device) -> list:
    """Parameters and momentum buffers after each of STEPS steps, for a float32 and a vec3 parameter.

    Each step's values are copied: on the CPU ``numpy()`` is a view of the array's memory, which the next step changes.
    """
    params = [
        wp.array([1.0, -2.0, 0.5], dtype=wp.float32, device=device),
        wp.array([[1.0, 2.0, 3.0], [-1.0, 0.0, 4.0]], dtype=wp.vec3, device=device),
    ]
    grads = [
        wp.array([0.1, 0.2, -0.3], dtype=wp.float32, device=device),
        wp.array([[0.5, -0.5, 0.25], [0.0, 1.0, -2.0]], dtype=wp.vec3, device=device),
    ]
    optimizer = warp.optim.SGD(params, lr=0.1, **setting)
    found = []
    for _ in range(STEPS):
        optimizer.step(grads)
        found.append([array.numpy().copy() for array in (*params, *optimizer.b)])
    return found


@on_gpu
@GATE.ends_only
def test_needed_momentum_acts_as_weight_decay_on_the_device_without_gpushim():
    after = steps([1.0, 2.0], [0.1, 0.2], momentum=0.9, dampening=0.0)
    np.testing.assert_allclose(after, [[0.9, 1.8], [0.809, 1.618]], rtol=1e-5)


@on_gpu
@GATE.recorded_only
def test_momentum_accumulation_as_the_fixed_release(this_patch):
    after = steps([1.0, 2.0], [0.1, 0.2], momentum=0.9, dampening=0.0)
    np.testing.assert_allclose(after, [[0.99, 1.98], [0.971, 1.942]], rtol=1e-5)


@on_gpu
@GATE.recorded_only
def test_weight_decay_as_the_fixed_release(this_patch):
    after = steps([1.0, 2.0], [0.0, 0.0], count=1, momentum=0.0, weight_decay=0.1)
    np.testing.assert_allclose(after, [[0.99, 1.98]], rtol=1e-5)


@on_gpu
@GATE.recorded_only
def test_dampening_as_the_fixed_release(this_patch):
    after = steps([1.0, 1.0], [1.0, 1.0], momentum=0.9, dampening=0.5)
    np.testing.assert_allclose(after, [[0.9, 0.9], [0.76, 0.76]], rtol=1e-5)


@on_gpu
@GATE.recorded_only
@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()))
def test_the_device_steps_as_the_cpu_does(this_patch, setting):
    """Every combination of the factors: parameters and momentum buffers on the device equal the CPU's."""
    for on_device, on_cpu in zip(history(setting, DEVICE), history(setting, "cpu")):
        for device_values, cpu_values in zip(on_device, on_cpu):
            np.testing.assert_allclose(device_values, cpu_values, rtol=1e-6, atol=1e-7)
