"""warp.tape_zero_nested_struct on a CUDA device: the reproducer of NVIDIA/warp#807 run on ``cuda``.

NVIDIA/warp#807, "[BUG] Gradient arrays in nested structs are not reset by
tape.zero()", reads:

    import warp as wp


    @wp.struct
    class B:
        arr_doubly_nested: wp.array(dtype=float)


    @wp.struct
    class A:
        b: B
        arr_nested: wp.array(dtype=float)


    @wp.kernel
    def fn(a: A, loss: wp.array(dtype=float)):
        i = wp.tid()
        wp.atomic_add(loss, 0, a.arr_nested[i])
        wp.atomic_add(loss, 0, a.b.arr_doubly_nested[i])


    a = A()
    a.b.arr_doubly_nested = wp.ones(shape=(1,), dtype=float, requires_grad=True)
    a.arr_nested = wp.ones(shape=(1,), dtype=float, requires_grad=True)

    loss = wp.zeros(shape=(1,), dtype=float, requires_grad=True)

    tape = wp.Tape()
    with tape:
        wp.launch(fn, dim=1, inputs=(a, loss))

    print(loss)  # [2]

    tape.backward(loss)
    # both grads are correct
    print(a.arr_nested.grad)  # [1]
    print(a.b.arr_doubly_nested.grad)  # [1]

    tape.zero()
    # Both grad arrays *should* be reset, but only a.arr_nested is
    print(a.arr_nested.grad)  # [0]
    print(a.b.arr_doubly_nested.grad)  # [1]

The tests marked ``gpu`` run it with every array on ``device="cuda"``, in a
fresh interpreter without and with gpushim, and, in this process, for several
iterations of record, backward and zero, where the fixed release (1.8.1) keeps
every gradient at 1.  Without a device they are skipped with "no CUDA device"
(tests/gpu.py), and none of them has run yet.  The probe has no device branch
(it takes a struct's adjoint on the CPU and compiles nothing).
No ``from __future__ import annotations`` here: Warp reads the annotations as types.
"""

from gpushim.patches.warp.tape_zero_nested_struct import patch
from tests.gpu import on_gpu
from tests.support import applied, gate
from tests.warp.gpu_scripts import run_script

GATE = gate(patch)

import warp as wp

DEVICE = "cuda"
ITERATIONS = 3

# The reproducer with its arrays and launch on the device, and its printed values kept in ``result``.
REPRODUCER = """
import warp as wp

wp.config.quiet = True


@wp.struct
class B:
    arr_doubly_nested: wp.array(dtype=float)


@wp.struct
class A:
    b: B
    arr_nested: wp.array(dtype=float)


@wp.kernel
def fn(a: A, loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, a.arr_nested[i])
    wp.atomic_add(loss, 0, a.b.arr_doubly_nested[i])


a = A()
a.b.arr_doubly_nested = wp.ones(shape=(1,), dtype=float, requires_grad=True, device="cuda")
a.arr_nested = wp.ones(shape=(1,), dtype=float, requires_grad=True, device="cuda")

loss = wp.zeros(shape=(1,), dtype=float, requires_grad=True, device="cuda")

tape = wp.Tape()
with tape:
    wp.launch(fn, dim=1, inputs=(a, loss), device="cuda")

result = {"loss": loss.numpy().tolist()}

tape.backward(loss)
result["backward"] = [a.arr_nested.grad.numpy().tolist(), a.b.arr_doubly_nested.grad.numpy().tolist()]

tape.zero()
result["zeroed"] = [a.arr_nested.grad.numpy().tolist(), a.b.arr_doubly_nested.grad.numpy().tolist()]
result["device"] = str(loss.device)
"""


@wp.struct
class B:
    arr_doubly_nested: wp.array(dtype=float)


@wp.struct
class A:
    b: B
    arr_nested: wp.array(dtype=float)


@wp.kernel
def fn(a: A, loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, a.arr_nested[i])
    wp.atomic_add(loss, 0, a.b.arr_doubly_nested[i])


@on_gpu
@GATE.ends_only
def test_needed_the_reproducer_keeps_the_nested_gradient_without_gpushim(tmp_path):
    result = run_script(REPRODUCER, tmp_path, gpushim=False)
    assert result["device"].startswith("cuda")
    assert result["backward"] == [[1.0], [1.0]]
    assert result["zeroed"] == [[0.0], [1.0]]


@on_gpu
@GATE.recorded_only
def test_reproducer_zeroes_both_gradients_with_gpushim(tmp_path):
    """What 1.8.1 prints: loss [2], both gradients [1], then both [0]."""
    result = run_script(REPRODUCER, tmp_path, gpushim=True)
    assert result["device"].startswith("cuda")
    assert result["loss"] == [2.0]
    assert result["backward"] == [[1.0], [1.0]]
    assert result["zeroed"] == [[0.0], [0.0]]


@on_gpu
@GATE.recorded_only
def test_gradients_stay_at_one_over_iterations_on_the_device():
    """Record, backward and zero ITERATIONS times on one tape: 1, 1, 1 as in 1.8.1, not 1, 2, 3."""
    with applied(patch):
        a = A()
        a.b.arr_doubly_nested = wp.ones(shape=(1,), dtype=float, requires_grad=True, device=DEVICE)
        a.arr_nested = wp.ones(shape=(1,), dtype=float, requires_grad=True, device=DEVICE)
        loss = wp.zeros(shape=(1,), dtype=float, requires_grad=True, device=DEVICE)
        tape = wp.Tape()
        rounds = []
        for _ in range(ITERATIONS):
            tape.reset()
            loss.zero_()
            with tape:
                wp.launch(fn, dim=1, inputs=(a, loss), device=DEVICE)
            tape.backward(loss)
            rounds.append([a.arr_nested.grad.numpy().tolist(), a.b.arr_doubly_nested.grad.numpy().tolist()])
            tape.zero()
    assert rounds == [[[1.0], [1.0]]] * ITERATIONS
    assert a.b.arr_doubly_nested.grad.numpy().tolist() == [0.0]
