"""warp.tape_zero_seeded_grads: Tape.zero() leaves the gradients seeded through backward(grads=...) (NVIDIA/warp#407).

The corpus runs on Warp's CPU device: upstream's chain ``y = x; z = y``
seeded at ``y`` then at ``z`` with ``tape.zero()`` between, a Jacobian of
``y = 2 x`` taken row by row, seeds given as the gradient arrays themselves
and as copies, a seeded array without a gradient of its own, and
``tape.reset()``.  Each records every gradient after each ``backward`` and
after each ``zero``.  No ``from __future__ import annotations`` here: Warp
reads the kernels' annotations as types.
"""

from gpushim.patches.warp.tape_zero_seeded_grads import patch
from tests.support import applied, assert_unchanged_by, gate, record_corpus

GATE = gate(patch)

import warp as wp

wp.config.quiet = True
wp.init()


@wp.kernel
def chain(x: wp.array(dtype=float), y: wp.array(dtype=float), z: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i]
    z[i] = y[i]


@wp.kernel
def double(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 2.0 * x[i]


def arrays(requires_grad=True):
    x = wp.array([0.0, 1.0, 2.0], dtype=float, device="cpu", requires_grad=True)
    y = wp.zeros(3, dtype=float, device="cpu", requires_grad=requires_grad)
    z = wp.zeros(3, dtype=float, device="cpu", requires_grad=True)
    return {"x": x, "y": y, "z": z}


def grads(named):
    return {name: None if a.grad is None else a.grad.numpy().tolist() for name, a in named.items()}


def unit(row):
    return wp.array([1.0 if i == row else 0.0 for i in range(3)], dtype=float, device="cpu")


def seeded_in_turn(seeds, named, kernel, after=lambda tape: tape.zero()):
    """Each seed through ``backward(grads=...)`` on one tape, ``after`` it: the gradients at each step."""
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=3, inputs=list(named.values())[: len(kernel.adj.args)], device="cpu")
    steps = []
    for name, seed in seeds:
        tape.backward(grads={named[name]: seed})
        backward = grads(named)
        after(tape)
        steps.append({"seeded": name, "backward": backward, "after": grads(named)})
    return steps


def upstream_chain():
    named = arrays()
    return seeded_in_turn(
        [("y", wp.ones(3, dtype=float, device="cpu")), ("z", wp.ones(3, dtype=float, device="cpu"))], named, chain
    )


def run_corpus():
    named = arrays()
    jacobian = seeded_in_turn([("y", unit(row)) for row in range(3)], {"x": named["x"], "y": named["y"]}, double)
    own = arrays()
    return {
        "chain, zero between": upstream_chain(),
        "jacobian rows of 2 x": jacobian,
        "seed is the gradient array itself": seeded_in_turn([("y", own["y"].grad), ("z", own["z"].grad)], own, chain),
        "seeded array without a gradient": seeded_in_turn(
            [("y", wp.ones(3, dtype=float, device="cpu"))] * 2, arrays(requires_grad=False), chain
        ),
        "reset between": seeded_in_turn(
            [("y", wp.ones(3, dtype=float, device="cpu"))] * 2, arrays(), chain, after=lambda tape: tape.reset()
        ),
    }


@GATE.ends_only
def test_needed_a_seeded_gradient_survives_zero_without_gpushim():
    assert [step["backward"]["x"] for step in upstream_chain()] == [[1.0] * 3, [2.0] * 3]


@GATE.ends_only
def test_effective_every_gradient_is_zeroed_with_gpushim():
    with applied(patch):
        steps = upstream_chain()
    assert [step["backward"]["x"] for step in steps] == [[1.0] * 3, [1.0] * 3]
    assert steps[0]["after"] == {"x": [0.0] * 3, "y": [0.0] * 3, "z": [0.0] * 3}


@GATE.ends_only
def test_effective_the_tapes_record_of_seeds_is_kept_for_its_readers():
    named = arrays()
    tape = wp.Tape()
    tape.backward(grads={named["y"]: wp.ones(3, dtype=float, device="cpu")})
    with applied(patch):
        tape.zero()
    assert tape.const_gradients == {named["y"]}


@GATE.recorded_only
def test_faithful_corpus_matches_the_fixed_release():
    """Recorded patched on the affected releases and unpatched on 1.6.0; the matrix compares the files."""
    outcomes = record_corpus(patch, run_corpus)
    assert [step["backward"]["x"] for step in outcomes["jacobian rows of 2 x"]] == [
        [2.0, 0.0, 0.0],
        [0.0, 2.0, 0.0],
        [0.0, 0.0, 2.0],
    ]


@GATE.unaffected_only
def test_harmless_zero_is_warps_own():
    assert_unchanged_by(patch, wp.Tape, ("zero",))
    assert not hasattr(vars(wp.Tape)["zero"], "__wrapped__")
