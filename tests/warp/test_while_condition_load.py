"""warp.while_condition_load: ``while flags[i]:`` compares an address with ``false`` and fails to build.

Kernels run on the CPU, each declared when the corpus runs: a loop over an
int array's element, over a bool array's element, over a struct's field
(upstream's test), nested loops over elements, and a loop whose test is no
reference, which the release builds too.  The reference is 1.4.1 (1.4.0, the
fixed release, has no cell; run, it gives the same outcomes).  Warp does not
build a module again in a process where its build failed, so the failure is
shown in a fresh interpreter.
"""

from __future__ import annotations

from gpushim.patches.warp._codegen import codegen_and_context
from gpushim.patches.warp.while_condition_load import patch
from tests.support import answer_in_fresh_python, applied, assert_unchanged_by, gate, record_corpus
from tests.warp.kernel_cache import assert_builds_kept_apart, kernel_cache
from tests.warp.nvrtc import assert_generates_other_cuda_that_compiles

GATE = gate(patch)

import warp  # noqa: E402

warp.config.quiet = True
warp.init()


@warp.struct
class Countdown:
    left: int


def int_element(flags: warp.array(dtype=int), out: warp.array(dtype=int)):
    i = warp.tid()
    turns = warp.int32(0)
    while flags[i]:
        flags[i] = flags[i] - 1
        turns = turns + 1
    out[i] = turns


def bool_element(flags: warp.array(dtype=warp.bool), out: warp.array(dtype=int)):
    i = warp.tid()
    turns = warp.int32(0)
    while flags[i]:
        turns = turns + 1
        flags[i] = turns < 4
    out[i] = turns


def struct_field(flags: warp.array(dtype=int), out: warp.array(dtype=int)):
    i = warp.tid()
    countdown = Countdown()
    countdown.left = flags[i]
    turns = warp.int32(0)
    while countdown.left:
        countdown.left = countdown.left - 1
        turns = turns + 1
    out[i] = turns


def nested(flags: warp.array(dtype=int), out: warp.array(dtype=int)):
    i = warp.tid()
    turns = warp.int32(0)
    while flags[i]:
        flags[i] = flags[i] - 1
        rounds = warp.int32(2)
        while rounds:
            rounds = rounds - 1
            turns = turns + 1
    out[i] = turns


def no_reference(flags: warp.array(dtype=int), out: warp.array(dtype=int)):
    i = warp.tid()
    turns = warp.int32(0)
    while turns < flags[i]:
        turns = turns + 1
    out[i] = turns


CASES = [int_element, bool_element, struct_field, nested, no_reference]


def launch(function) -> list:
    """What the kernel, declared now, writes for the elements 3, 0 and 1."""
    kernel = warp.kernel(function)
    dtype = warp.bool if function is bool_element else int
    flags = warp.array([3, 0, 1], dtype=dtype, device="cpu")
    out = warp.zeros(3, dtype=int, device="cpu")
    warp.launch(kernel, dim=3, inputs=[flags, out], device="cpu")
    return out.numpy().tolist()


def run_corpus() -> dict:
    return {function.__name__: launch(function) for function in CASES}


SCRIPT = """
import sys
import warp

warp.config.quiet = False  # Warp says whether it compiled the module or found it in the cache


@warp.kernel
def no_reference(flags: warp.array(dtype=int), out: warp.array(dtype=int)):
    i = warp.tid()
    turns = warp.int32(0)
    while turns < flags[i]:
        turns = turns + 1
    out[i] = turns


KERNEL = no_reference


def run():
    out = warp.zeros(2, dtype=int, device="cpu")
    warp.launch(no_reference, dim=2, inputs=[warp.array([3, 0], dtype=int, device="cpu"), out], device="cpu")
    print("@@values", out.numpy().tolist(), flush=True)
"""


@GATE.ends_only
def test_needed_while_over_an_element_fails_to_build_without_gpushim():
    """In a fresh interpreter: Warp does not build a module again in the process where its build failed."""
    code = f"""
from {__name__} import int_element, launch

try:
    outcome = launch(int_element)
except Exception as error:
    outcome = str(error)
"""
    assert "build failed" in str(answer_in_fresh_python(code, "outcome"))


@GATE.affected_only
def test_effective_while_over_an_element_runs_with_gpushim():
    with applied(patch):
        assert launch(int_element) == [3, 0, 1]


@GATE.ends_only
def test_builds_with_and_without_gpushim_are_kept_apart_in_the_cache(tmp_path):
    """A while loop the release builds gives the same values both ways, from builds of their own."""
    assert_builds_kept_apart(kernel_cache(tmp_path, SCRIPT), "[3, 0]", "[3, 0]")


@GATE.ends_only
def test_the_cuda_build_compiles_the_patched_code_with_nvrtc():
    assert_generates_other_cuda_that_compiles(warp, warp.kernel(int_element), patch)


@GATE.unaffected_only
def test_harmless_outside_the_range_warps_while_loops_stay_the_releases():
    assert_unchanged_by(patch, codegen_and_context(warp)[0].Adjoint, ("emit_While", "eval"))


@GATE.recorded_only
def test_faithful_corpus_matches_the_fixed_release():
    """Recorded patched on the affected releases and unpatched on 1.4.1; the matrix compares the files."""
    outcomes = record_corpus(patch, run_corpus)
    assert outcomes["int_element"] == [3, 0, 1]
