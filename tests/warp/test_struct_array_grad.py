"""warp.struct_array_grad: a struct holds an array but not its gradient (NVIDIA/warp GH-720).

The corpus assigns arrays with and without gradients, ``None``, arrays of the
wrong dtype and unknown fields to structs on Warp's CPU device, then turns
``requires_grad`` off or replaces the gradient and collects garbage, and
records for each case the exception or whether the gradient the struct's ctype
points at is still alive, with the gradient a kernel's backward pass writes
through the struct.  No ``from __future__ import annotations`` here: Warp reads
the kernels' and structs' annotations as types.
"""

import gc
import weakref

from gpushim.patches.warp.struct_array_grad import patch
from tests.support import applied, gate, record_corpus

GATE = gate(patch)

import warp as wp

wp.config.quiet = True
wp.init()


@wp.struct
class Holder:
    a: wp.array(dtype=float)
    b: wp.array(dtype=float)
    c: float


@wp.kernel
def square_sum(s: Holder, loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, s.a[i] * s.a[i] + s.c * s.b[i])


def gradient_outlives(assign, drop):
    """Whether the gradient of the array assigned to ``a`` survives ``drop``, or the exception."""
    holder = Holder()
    try:
        assign(holder)
    except Exception as error:
        return {"raises": [type(error).__name__, str(error)]}
    grad = None if holder.a is None or holder.a.grad is None else weakref.ref(holder.a.grad)
    drop(holder)
    gc.collect()
    return {"had grad": grad is not None, "grad alive": grad is not None and grad() is not None}


def with_grad(values=(1.0, 2.0, 3.0)):
    return wp.array(values, dtype=float, device="cpu", requires_grad=True)


def assign_a(make):
    def assign(holder):
        holder.a = make()

    return assign


def requires_grad_off(holder):
    holder.a.requires_grad = False


def grad_replaced(holder):
    holder.a.grad = wp.zeros_like(holder.a)


def nothing(holder):
    pass


ASSIGNMENTS = {
    "array with grad": assign_a(with_grad),
    "array without grad": assign_a(lambda: wp.array([1.0, 2.0], dtype=float, device="cpu")),
    "array assigned twice": lambda holder: (assign_a(with_grad)(holder), assign_a(with_grad)(holder)),
    "wrong dtype": assign_a(lambda: wp.zeros(3, dtype=wp.int32, device="cpu", requires_grad=False)),
    "unknown field": lambda holder: setattr(holder, "d", with_grad()),
}

DROPS = {"requires_grad off": requires_grad_off, "grad replaced": grad_replaced, "nothing": nothing}


def backward_through_struct():
    """The gradients a backward pass writes through the struct, after ``b``'s gradient is replaced."""
    holder = Holder()
    holder.a = with_grad()
    holder.b = with_grad((0.5, 0.5, 0.5))
    holder.c = 2.0
    holder.b.grad = wp.zeros(3, dtype=float, device="cpu")
    gc.collect()
    loss = wp.zeros(1, dtype=float, device="cpu", requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(square_sum, dim=3, inputs=[holder, loss], device="cpu")
    tape.backward(loss)
    return {"a": holder.a.grad.numpy().tolist(), "b": holder.b.grad.numpy().tolist()}


def run_corpus():
    outcomes = {}
    for assignment, assign in ASSIGNMENTS.items():
        for dropped, drop in DROPS.items():
            outcomes[f"{assignment}, {dropped}"] = gradient_outlives(assign, drop)
    outcomes["None after an array"] = gradient_outlives(
        lambda holder: (assign_a(with_grad)(holder), setattr(holder, "a", None)), nothing
    )
    outcomes["backward through the struct"] = backward_through_struct()
    return outcomes


@GATE.affected_only
def test_needed_the_gradient_is_collected_without_gpushim():
    assert gradient_outlives(assign_a(with_grad), requires_grad_off) == {"had grad": True, "grad alive": False}


@GATE.affected_only
def test_effective_the_struct_keeps_the_gradient_with_gpushim():
    with applied(patch):
        outcome = gradient_outlives(assign_a(with_grad), requires_grad_off)
    assert outcome == {"had grad": True, "grad alive": True}


@GATE.affected_only
def test_the_struct_keeps_the_gradient_under_the_name_the_fixed_release_uses():
    holder = Holder()
    with applied(patch):
        holder.a = with_grad()
    assert vars(holder)["_a_grad"] is holder.a.grad


@GATE.recorded_only
def test_faithful_corpus_matches_the_fixed_release():
    """Recorded patched on the affected releases and unpatched on 1.7.2; the matrix compares the files."""
    outcomes = record_corpus(patch, run_corpus)
    assert outcomes["array with grad, requires_grad off"] == {"had grad": True, "grad alive": True}
