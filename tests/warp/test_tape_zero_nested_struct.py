"""warp.tape_zero_nested_struct: Tape.zero() leaves gradients of arrays in nested structs (NVIDIA/warp GH-807).

The corpus runs kernels over structs nested two and three deep on Warp's CPU
device for several iterations of record, backward, read the gradients, zero,
with a new tape each time and with one tape reset each time, and records every
gradient before and after ``tape.zero()`` along with what the tape remembered.
No ``from __future__ import annotations`` here: Warp reads the kernels' and
structs' annotations as types.
"""

from gpushim.patches.warp.tape_zero_nested_struct import patch
from tests.support import applied, gate, record_corpus

GATE = gate(patch)

import warp as wp

wp.config.quiet = True
wp.init()


ITERATIONS = 3


@wp.struct
class Level1:
    x: wp.array(dtype=float)


@wp.struct
class Level2:
    l1: Level1
    y: wp.array(dtype=float)
    c: float


@wp.struct
class Level3:
    l2: Level2
    z: wp.array(dtype=float)
    v: wp.vec3


@wp.kernel
def two_deep(s: Level2, loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, s.l1.x[i] * s.c + s.y[i] * s.y[i])


@wp.kernel
def three_deep(s: Level3, loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, 2.0 * s.l2.l1.x[i] + s.l2.y[i] * s.l2.c + s.z[i] * s.v[1])


def leaf(values, requires_grad=True):
    return wp.array(values, dtype=float, device="cpu", requires_grad=requires_grad)


def make_two_deep(x_requires_grad=True):
    """The struct and its parts by name, structs included."""
    s = Level2()
    s.l1 = Level1()
    s.l1.x = leaf([1.0, 2.0, 3.0], x_requires_grad)
    s.y = leaf([0.5, -1.0, 2.0])
    s.c = 3.0
    return s, {"l1": s.l1, "l1.x": s.l1.x, "y": s.y}


def make_three_deep():
    s = Level3()
    s.l2 = make_two_deep()[0]
    s.z = leaf([4.0, 5.0, 6.0])
    s.v = wp.vec3(1.0, 0.25, 2.0)
    return s, {"l2": s.l2, "l2.l1": s.l2.l1, "l2.l1.x": s.l2.l1.x, "l2.y": s.l2.y, "z": s.z}


def grads(parts):
    return {
        name: None if part.grad is None else part.grad.numpy().tolist()
        for name, part in parts.items()
        if isinstance(part, wp.array)
    }


def remembered(tape, parts):
    """What the tape keeps gradients for, in its order, by name."""
    names = {id(part): name for name, part in parts.items()}
    return [names.get(id(key), "unnamed") for key in tape.gradients]


def iterate(kernel, s, parts, fresh_tape):
    """ITERATIONS rounds of record, backward and zero: the gradients and the tape's memory at each."""
    loss = wp.zeros(1, dtype=float, device="cpu", requires_grad=True)
    parts = {"s": s, **parts, "loss": loss}
    tape = wp.Tape()
    rounds = []
    for _ in range(ITERATIONS):
        if fresh_tape:
            tape = wp.Tape()
        else:
            tape.reset()
        loss.zero_()
        with tape:
            wp.launch(kernel, dim=3, inputs=[s, loss], device="cpu")
        tape.backward(loss)
        backward = grads(parts)
        gradients = remembered(tape, parts)
        tape.zero()
        rounds.append({"backward": backward, "zeroed": grads(parts), "tape": gradients})
    return rounds


def run_corpus():
    outcomes = {}
    for fresh_tape in (True, False):
        tape_kind = "new tape" if fresh_tape else "tape.reset()"
        outcomes[f"two deep, {tape_kind}"] = iterate(two_deep, *make_two_deep(), fresh_tape)
        outcomes[f"three deep, {tape_kind}"] = iterate(three_deep, *make_three_deep(), fresh_tape)
    outcomes["two deep, nested array without grad"] = iterate(two_deep, *make_two_deep(False), True)
    return outcomes


@GATE.ends_only
def test_needed_nested_gradients_pile_up_without_gpushim():
    rounds = iterate(two_deep, *make_two_deep(), fresh_tape=True)
    assert [r["backward"]["l1.x"] for r in rounds] == [[3.0] * 3, [6.0] * 3, [9.0] * 3]
    assert [r["backward"]["y"] for r in rounds] == [[1.0, -2.0, 4.0]] * 3


@GATE.ends_only
def test_effective_nested_gradients_are_zeroed_with_gpushim():
    with applied(patch):
        rounds = iterate(three_deep, *make_three_deep(), fresh_tape=False)
    assert [r["backward"]["l2.l1.x"] for r in rounds] == [[2.0] * 3] * 3
    assert all(value == [0.0] * 3 for r in rounds for name, value in r["zeroed"].items() if name != "loss")


@GATE.recorded_only
def test_faithful_corpus_matches_the_fixed_release():
    """Recorded patched on the affected releases and unpatched on 1.8.1; the matrix compares the files."""
    outcomes = record_corpus(patch, run_corpus)
    assert [r["backward"]["l1.x"] for r in outcomes["two deep, new tape"]] == [[3.0] * 3] * 3


@GATE.unaffected_only
def test_harmless_get_adjoint_is_warps_own():
    before = vars(wp.Tape)["get_adjoint"]
    with applied(patch):
        assert vars(wp.Tape)["get_adjoint"] is before
    assert not hasattr(before, "__wrapped__")
