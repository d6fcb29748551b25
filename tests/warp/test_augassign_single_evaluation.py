"""warp.augassign_single_evaluation: ``x op= f()`` calls ``f`` more than once (NVIDIA/warp#1230, #1233).

Kernels run on the CPU.  The corpus is one kernel of augmented assignments,
one statement per kind of target and operator, each with a call that counts
itself in a slot of its own, and one kernel run under a tape; both live in
this file's Warp module, which each release builds once per kernel cache.
On 1.4.0 and 1.4.1 the faithful corpus runs with warp.augassign_mul_div
applied too: together they must give 1.12.1's results.  The proofs that
start interpreters run on the lowest and highest affected release of the
matrix only; the faithful corpus, and the contract's probes, on every one.
"""

from __future__ import annotations

import re

import pytest

from gpushim.patches.warp.augassign_mul_div import patch as mul_div
from gpushim.patches.warp.augassign_single_evaluation import patch
from tests.support import applied, corpus_in_fresh_python, gate, record_faithful
from tests.warp.kernel_cache import assert_builds_kept_apart, assert_rebuilt_in_process, kernel_cache
from tests.warp.nvrtc import assert_generates_other_cuda_that_compiles

GATE = gate(patch)

import numpy as np  # noqa: E402
import warp  # noqa: E402

warp.config.quiet = True


@warp.func
def counted(calls: warp.array(dtype=warp.int32), slot: int, x: float):
    warp.atomic_add(calls, slot, 1)
    return x


@warp.func
def counted_index(calls: warp.array(dtype=warp.int32), slot: int, i: int):
    warp.atomic_add(calls, slot, 1)
    return i


@warp.struct
class Holder:
    value: float


# The statements of the corpus, in the order of their slots in ``calls`` and of their results in ``out``.
STATEMENTS = [
    "x += f()",
    "x -= f()",
    "x *= f()",
    "x /= f()",
    "a[0] += f()",
    "a[1] -= f()",
    "a[2] *= f()",
    "a[3] /= f()",
    "a[g()] *= 2.0",
    "a[g()] += 1.0",
    "int8 b[0] += f()",
    "int8 b[1] *= f()",
    "v[0] += f()",
    "v[1] *= f()",
    "v.z /= f()",
    "m[0, 1] *= f()",
    "vectors[0][1] *= f()",
    "grid[g(), 1] *= f()",
    "s.value += f()",
    "s.value *= f()",
    "holders[g()].value += f()",
    "holders[1].value *= f()",
]


@warp.kernel
def statements(
    calls: warp.array(dtype=warp.int32),
    out: warp.array(dtype=float),
    a: warp.array(dtype=float),
    b: warp.array(dtype=warp.int8),
    vectors: warp.array(dtype=warp.vec3),
    grid: warp.array2d(dtype=float),
    holders: warp.array(dtype=Holder),
):
    x = warp.float32(6.0)
    x += counted(calls, 0, 2.0)
    out[0] = x
    x -= counted(calls, 1, 3.0)
    out[1] = x
    x *= counted(calls, 2, 4.0)
    out[2] = x
    x /= counted(calls, 3, 5.0)
    out[3] = x
    a[0] += counted(calls, 4, 2.0)
    a[1] -= counted(calls, 5, 3.0)
    a[2] *= counted(calls, 6, 4.0)
    a[3] /= counted(calls, 7, 5.0)
    a[counted_index(calls, 8, 4)] *= 2.0
    a[counted_index(calls, 9, 5)] += 1.0
    b[0] += warp.int8(counted_index(calls, 10, 5))
    b[1] *= warp.int8(counted_index(calls, 11, 3))
    v = warp.vec3(1.0, 2.0, 3.0)
    v[0] += counted(calls, 12, 2.0)
    v[1] *= counted(calls, 13, 4.0)
    v.z /= counted(calls, 14, 2.0)
    out[4] = v[0]
    out[5] = v[1]
    out[6] = v[2]
    m = warp.mat22(1.0, 2.0, 3.0, 4.0)
    m[0, 1] *= counted(calls, 15, 3.0)
    out[7] = m[0, 1]
    vectors[0][1] *= counted(calls, 16, 5.0)
    grid[counted_index(calls, 17, 1), 1] *= counted(calls, 17, 3.0)
    s = Holder()
    s.value = 1.5
    s.value += counted(calls, 18, 2.0)
    out[8] = s.value
    s.value *= counted(calls, 19, 2.0)
    out[9] = s.value
    holders[counted_index(calls, 20, 0)].value += counted(calls, 20, 5.0)
    holders[1].value *= counted(calls, 21, 3.0)


@warp.kernel
def scaled_under_tape(calls: warp.array(dtype=warp.int32), x: warp.array(dtype=float), y: warp.array(dtype=float)):
    i = warp.tid()
    v = x[i]
    v *= counted(calls, 0, x[i])
    y[i] = v
    y[i] *= counted(calls, 1, 3.0)


def cpu_array(data, dtype, **options):
    return warp.array(np.array(data), dtype=dtype, device="cpu", **options)


def run_corpus() -> dict:
    """Per statement, how often its calls ran and what it left; then the tape's values, gradients and counts."""
    calls = warp.zeros(len(STATEMENTS), dtype=warp.int32, device="cpu")
    out = warp.zeros(10, dtype=float, device="cpu")
    a = cpu_array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], warp.float32)
    b = cpu_array([7, 7], warp.int8)
    vectors = cpu_array([[1.0, 2.0, 3.0]], warp.vec3)
    grid = cpu_array(np.arange(6.0).reshape(3, 2), warp.float32)
    holders = cpu_array(np.array([(10.0,), (2.0,)], dtype=[("value", np.float32)]), Holder)
    warp.launch(statements, dim=1, inputs=[calls, out, a, b, vectors, grid, holders], device="cpu")
    results = [
        *out.numpy()[:4].tolist(),
        *a.numpy()[:6].tolist(),
        *b.numpy().tolist(),
        *out.numpy()[4:8].tolist(),
        vectors.numpy()[0, 1].item(),
        grid.numpy()[1, 1].item(),
        *out.numpy()[8:].tolist(),
        *[float(holder[0]) for holder in holders.numpy()],
    ]
    outcomes = {
        statement: {"calls": count, "result": result}
        for statement, count, result in zip(STATEMENTS, calls.numpy().tolist(), results)
    }

    calls = warp.zeros(2, dtype=warp.int32, device="cpu")
    x = cpu_array([1.0, -2.0], warp.float32, requires_grad=True)
    y = warp.zeros(2, dtype=float, device="cpu", requires_grad=True)
    tape = warp.Tape()
    with tape:
        warp.launch(scaled_under_tape, dim=2, inputs=[calls, x, y], device="cpu")
    forward = calls.numpy().tolist()
    tape.backward(grads={y: cpu_array([1.0, 1.0], warp.float32)})
    outcomes["tape v = x[i]; v *= f(x[i]); y[i] = v; y[i] *= f()"] = {
        "y": y.numpy().tolist(),
        "x.grad": x.grad.numpy().tolist(),
        "calls forward": forward,
        "calls forward and backward": calls.numpy().tolist(),
    }
    return outcomes


# How often 1.12.1 runs each statement's calls: once per call written.
CALLS = {
    statement: 2 if statement in ("grid[g(), 1] *= f()", "holders[g()].value += f()") else 1 for statement in STATEMENTS
}
TAPE = "tape v = x[i]; v *= f(x[i]); y[i] = v; y[i] *= f()"
# Statements whose calls every affected release runs twice (and the patch once).
TWICE = ["int8 b[0] += f()", "int8 b[1] *= f()", "v[1] *= f()", "m[0, 1] *= f()", "vectors[0][1] *= f()"]


def calls_of(outcomes: dict) -> dict:
    return {statement: outcomes[statement]["calls"] for statement in STATEMENTS}


SCRIPT = """
import sys
import numpy as np
import warp

warp.config.quiet = False  # Warp says whether it compiled the module or found it in the cache


@warp.func
def counted(calls: warp.array(dtype=warp.int32), x: float):
    warp.atomic_add(calls, 0, 1)
    return x


@warp.kernel
def scale(calls: warp.array(dtype=warp.int32), out: warp.array(dtype=float)):
    v = warp.vec3(1.0, 2.0, 3.0)
    v[1] *= counted(calls, 4.0)
    out[0] = v[1]


KERNEL = scale


def run():
    calls = warp.zeros(1, dtype=warp.int32, device="cpu")
    out = warp.zeros(1, dtype=float, device="cpu")
    warp.launch(scale, dim=1, inputs=[calls, out], device="cpu")
    print("@@values", [int(calls.numpy()[0]), float(out.numpy()[0])], flush=True)
"""
TWICE_VALUES, ONCE_VALUES = "[2, 8.0]", "[1, 8.0]"


@pytest.fixture(scope="module")
def cache_script(tmp_path_factory):
    return kernel_cache(tmp_path_factory.mktemp("augassign_single_evaluation"), SCRIPT)


@GATE.ends_only
def test_needed_calls_in_augmented_assignments_run_twice_without_gpushim():
    outcomes, state = corpus_in_fresh_python(__name__, patch, "")
    assert state == "inactive"
    assert {statement: calls_of(outcomes)[statement] for statement in TWICE} == dict.fromkeys(TWICE, 2)


@GATE.ends_only
def test_effective_with_gpushim_imported_before_warp_each_call_runs_once():
    outcomes, state = corpus_in_fresh_python(__name__, patch, "import gpushim.auto")
    assert state == "applied"
    assert calls_of(outcomes) == CALLS
    assert outcomes[TAPE]["calls forward and backward"] == [4, 4]


@GATE.ends_only
def test_a_kernel_built_by_an_earlier_process_without_gpushim_is_not_reused(cache_script):
    assert_builds_kept_apart(cache_script, TWICE_VALUES, ONCE_VALUES)


@GATE.ends_only
def test_a_kernel_built_in_this_process_before_gpushim_patch_is_rebuilt(cache_script):
    assert_rebuilt_in_process(cache_script, TWICE_VALUES, ONCE_VALUES)


@GATE.ends_only
def test_the_cuda_build_compiles_the_patched_code_with_nvrtc():
    assert_generates_other_cuda_that_compiles(warp, statements, patch)


@GATE.unaffected_only
def test_harmless_outside_the_range_nothing_of_it_is_in_place(gpushim_patched):
    """Warp's generator may be another patch's wrapper (``warp.inplace_adjoints`` before 1.4), not its."""
    assert gpushim_patched.registry().journal(patch.id) is None


@GATE.recorded_only
def test_faithful_corpus_matches_the_fixed_release(request):
    """Recorded with every patch applied on affected releases (warp.augassign_mul_div too, on 1.4.0 and 1.4.1)
    and unpatched on 1.12.1; the matrix compares the files."""
    if GATE.affected:
        request.getfixturevalue("gpushim_patched")
    outcomes = run_corpus()
    record_faithful(patch, outcomes)
    assert calls_of(outcomes) == CALLS


@pytest.mark.skipif(not gate(mul_div).affected, reason="warp.augassign_mul_div does not apply here")
def test_augassign_mul_div_alone_runs_the_calls_of_the_statements_it_lowers_once():
    """1.4.2's lowering, which it backports, runs them twice; the patch must not bring that bug with its fix."""
    with applied(mul_div):
        outcomes = run_corpus()
    lowered = [statement for statement in STATEMENTS if re.search(r"\] [*/]=", statement)]
    assert {statement: calls_of(outcomes)[statement] for statement in lowered} == {
        statement: CALLS[statement] for statement in lowered
    }
    assert outcomes["a[2] *= f()"]["result"] == 12.0
