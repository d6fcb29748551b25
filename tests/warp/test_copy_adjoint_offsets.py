"""warp.copy_adjoint_offsets: gradients of ``wp.copy`` with distinct offsets (NVIDIA/warp GH-1533).

The corpus runs ``Tape.backward`` on Warp's CPU device through copies
between contiguous arrays (the path warp.copy_strided_offsets leaves to the
release) of float32, float64 and vec3 elements: ranges with distinct and
equal offsets, at either end, the whole array, sources shorter and longer
than their destination (where the released gradient reads past an end and
raises), 2-d arrays, whole copies between strided views, two copies in a
row, and a copy between two kernels.  Each destination gradient is seeded
with distinct values; it records the gradients after the forward pass and
after ``backward`` (or the error ``backward`` raises), and the source's
after ``tape.zero()`` (up to 1.5 it leaves seeded gradients as they are).
"""

from __future__ import annotations

import numpy as np

from gpushim.patches.warp.copy_adjoint_offsets import patch
from tests.support import applied, gate, record_corpus
from tests.warp.copy_corpus import laid_out, listed, raised, values, warp_module

GATE = gate(patch)

# name: (dest_offset, src_offset, count), with the lengths of the destination and the source
RANGES = {
    "2 from 1 to 2": (2, 1, 2, 4, 4),
    "2 from 2 to 0": (0, 2, 2, 4, 4),
    "1 from 0 to the last": (5, 0, 1, 6, 6),
    "1 from the last to 0": (0, 5, 1, 6, 6),
    "3 from 1 to 1": (1, 1, 3, 6, 6),
    "whole": (0, 0, 0, 6, 6),
    "3 from 3 to 0": (0, 3, 3, 6, 6),
    "shorter source, 2 from 0 to 4": (4, 0, 2, 6, 2),
    "longer source, 2 from 4 to 0": (0, 4, 2, 2, 6),
    "shorter source, 2 from 1 to 3": (3, 1, 2, 6, 3),
}

DTYPES = ("float32", "float64", "vec3")


def backward_through(copies, dest, src, src_base=None):
    """Run ``copies()`` under a tape, then backward from ``dest``; the gradients along the way."""
    warp = warp_module()
    tape = warp.Tape()
    with tape:
        copies()
    outcome = {"forward dest grad": listed(dest.grad)}
    src.grad.zero_()
    shape = dest.grad.numpy().shape
    seed = np.arange(10, 10 + np.prod(shape), dtype=np.float32).reshape(shape)
    try:
        tape.backward(grads={dest: warp.array(seed, dtype=dest.dtype, device="cpu")})
        outcome["src grad"] = listed(src.grad)
        if src_base is not None:
            outcome["src base grad"] = listed(src_base.grad)
    except Exception as error:
        outcome["raised"] = raised(error)
    tape.zero()
    outcome["src grad after tape.zero"] = listed((src if src_base is None else src_base).grad)
    return outcome


def copied(dest_offset, src_offset, count, dest_length, src_length, dtype, dest_layout="contiguous", src_layout=None):
    warp = warp_module()
    dest, _ = laid_out(np.zeros_like(values(dest_length, dtype)), dest_layout, dtype, requires_grad=True)
    src, src_base = laid_out(values(src_length, dtype), src_layout or dest_layout, dtype, requires_grad=True)
    src.grad.assign(warp.array(values(src_length, dtype, first=100), dtype=src.dtype, device="cpu"))

    def copy():
        warp.copy(dest, src, dest_offset=dest_offset, src_offset=src_offset, count=count)

    return backward_through(copy, dest, src, src_base)


def two_copies():
    """``b[1:3] = a[3:5]``, then ``c[0:2] = b[2:4]``: c's gradient reaches a[4] only."""
    warp = warp_module()
    a, b, c = (warp.zeros(6, dtype=warp.float32, device="cpu", requires_grad=True) for _ in range(3))
    a.assign(warp.array(values(6, "float32"), device="cpu"))

    def copies():
        warp.copy(b, a, dest_offset=1, src_offset=3, count=2)
        warp.copy(c, b, dest_offset=0, src_offset=2, count=2)

    return backward_through(copies, c, a)


def between_kernels():
    """``y = 2 x``, ``z[0:3] = y[2:5]``, ``loss = sum(z * z)``: the gradient of x through the copy."""
    warp = warp_module()

    @warp.kernel
    def double(x: warp.array(dtype=float), y: warp.array(dtype=float)):
        i = warp.tid()
        y[i] = 2.0 * x[i]

    @warp.kernel
    def sum_of_squares(z: warp.array(dtype=float), loss: warp.array(dtype=float)):
        i = warp.tid()
        warp.atomic_add(loss, 0, z[i] * z[i])

    x = warp.array(values(6, "float32"), device="cpu", requires_grad=True)
    y = warp.zeros(6, dtype=float, device="cpu", requires_grad=True)
    z = warp.zeros(4, dtype=float, device="cpu", requires_grad=True)
    loss = warp.zeros(1, dtype=float, device="cpu", requires_grad=True)
    tape = warp.Tape()
    with tape:
        warp.launch(double, dim=6, inputs=[x], outputs=[y], device="cpu")
        warp.copy(z, y, dest_offset=0, src_offset=2, count=3)
        warp.launch(sum_of_squares, dim=4, inputs=[z], outputs=[loss], device="cpu")
    tape.backward(loss=loss)
    # not y.grad: 1.14.0 and 1.15.0 zero it once it is read, 1.5.1 keeps it
    return {"loss": listed(loss), "x grad": listed(x.grad)}


def run_corpus():
    outcomes = {}
    for name, (dest_offset, src_offset, count, dest_length, src_length) in RANGES.items():
        for dtype in DTYPES:
            outcomes[f"{name}, {dtype}"] = copied(dest_offset, src_offset, count, dest_length, src_length, dtype)
    for layout in ("every 2nd", "every 3rd from 1"):
        outcomes[f"whole, {layout}"] = copied(0, 0, 0, 6, 6, "float32", layout)
        outcomes[f"whole, contiguous to {layout}"] = copied(0, 0, 0, 6, 6, "float32", layout, "contiguous")
    warp = warp_module()
    for name, (dest_offset, src_offset, count) in {"2-d, 4 from 2 to 5": (5, 2, 4), "2-d, whole": (0, 0, 0)}.items():
        src = warp.array(values(12, "float32").reshape(3, 4), device="cpu", requires_grad=True)
        dest = warp.zeros((3, 4), dtype=warp.float32, device="cpu", requires_grad=True)

        def copy():
            warp.copy(dest, src, dest_offset=dest_offset, src_offset=src_offset, count=count)  # noqa: B023

        outcomes[name] = backward_through(copy, dest, src)
    outcomes["two copies in a row"] = two_copies()
    outcomes["between two kernels"] = between_kernels()
    return outcomes


@GATE.ends_only
def test_needed_the_gradient_lands_at_the_destination_offset_without_gpushim():
    assert copied(2, 1, 2, 4, 4, "float32")["src grad"] == [0, 0, 11, 12]


@GATE.ends_only
def test_effective_the_gradient_lands_where_the_copy_read_with_gpushim():
    with applied(patch):
        assert copied(2, 1, 2, 4, 4, "float32")["src grad"] == [0, 12, 13, 0]


@GATE.ends_only
def test_a_longer_source_gets_its_gradient_instead_of_an_error():
    with applied(patch):
        outcome = copied(0, 4, 2, 2, 6, "float32")
    assert outcome["src grad"] == [0, 0, 0, 0, 10, 11]


@GATE.ends_only
def test_a_gradient_through_a_copy_between_kernels_reaches_the_elements_copied():
    with applied(patch):
        outcome = between_kernels()
    assert outcome["x grad"] == [0, 0, 24, 32, 40, 0]


@GATE.ends_only
def test_copies_recorded_before_the_patch_backpropagate_with_it():
    warp = warp_module()
    src = warp.array(values(4, "float32"), device="cpu", requires_grad=True)
    dest = warp.zeros(4, dtype=warp.float32, device="cpu", requires_grad=True)
    tape = warp.Tape()
    with tape:
        warp.copy(dest, src, dest_offset=2, src_offset=1, count=2)
    with applied(patch):
        tape.backward(grads={dest: warp.array(values(4, "float32"), device="cpu")})
    assert listed(src.grad) == [0, 3, 4, 0]


@GATE.recorded_only
def test_faithful_corpus_matches_the_fixed_release():
    """Recorded patched on the affected releases and unpatched on 1.15.0; the matrix compares the files."""
    outcomes = record_corpus(patch, run_corpus)
    assert outcomes["2 from 1 to 2, float32"]["src grad"] == [0, 12, 13, 0]
