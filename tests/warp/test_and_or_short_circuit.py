"""warp.and_or_short_circuit: ``and``/``or`` in a kernel evaluate every operand (NVIDIA/warp#1329, #520).

An opt-in patch: every proof of it turned on sets ``GPUSHIM_ENABLE``, and
one proves it stays off without.  Kernels run on the CPU.  The corpus is
one kernel of boolean operations, each operand after the first a call that
counts itself in a slot of its own, one that guards a read of an array
passed as None, and one run under a tape; they live in this file's Warp
module.  No ``from __future__ import annotations`` here: Warp 1.2, the
lowest release of the matrix in the range, evaluates no string annotation.
The proofs that start interpreters run on the lowest and highest affected
release of the matrix only; the faithful corpus, and the contract's probes,
on every one.
"""

import signal

import pytest

import gpushim
from gpushim.patches.warp._codegen import codegen_and_context
from gpushim.patches.warp.and_or_short_circuit import patch
from tests.support import ROOT, answer_in_fresh_python, applied, gate, record_faithful, run_python
from tests.warp.kernel_cache import assert_builds_kept_apart, assert_rebuilt_in_process, kernel_cache
from tests.warp.nvrtc import assert_generates_other_cuda_that_compiles

GATE = gate(patch)
ENABLE = {"GPUSHIM_ENABLE": patch.id}

import numpy as np  # noqa: E402
import warp  # noqa: E402

warp.config.quiet = True


@warp.func
def counted(calls: warp.array(dtype=warp.int32), slot: int, value: int):
    warp.atomic_add(calls, slot, 1)
    return value


@warp.func
def counted_float(calls: warp.array(dtype=warp.int32), slot: int, x: float):
    warp.atomic_add(calls, slot, 1)
    return x


# The operations of the corpus at i = 0, in the order of their results in ``out``; each counts its calls by slot.
OPERATIONS = [
    "i > 0 and f() > 0",
    "i < 1 or f() > 0",
    "i < 1 and f() > 0",
    "i > 0 or f() > 0",
    "i < 1 and f() > 0 and g() > 0 (f false)",
    "i > 0 or f() > 0 or g() > 0 (f true)",
    "(i > 0 and f() > 0) or g() > 0",
    "f() and g() on ints (f is 0)",
    "while j < 3 and f(j) < 2",
]
SLOTS = 11


@warp.kernel
def operations(calls: warp.array(dtype=warp.int32), out: warp.array(dtype=warp.int32)):
    i = warp.tid()
    if i > 0 and counted(calls, 0, 1) > 0:
        out[0] = 1
    if i < 1 or counted(calls, 1, 1) > 0:
        out[1] = 1
    if i < 1 and counted(calls, 2, 1) > 0:
        out[2] = 1
    if i > 0 or counted(calls, 3, 0) > 0:
        out[3] = 1
    if i < 1 and counted(calls, 4, 0) > 0 and counted(calls, 5, 1) > 0:
        out[4] = 1
    if i > 0 or counted(calls, 6, 1) > 0 or counted(calls, 7, 1) > 0:
        out[5] = 1
    if (i > 0 and counted(calls, 8, 1) > 0) or counted(calls, 9, 1) > 0:
        out[6] = 1
    if counted(calls, 10, 0) and counted(calls, 10, 3):
        out[7] = 1
    j = int(0)  # noqa: UP018  (a literal would be a constant, which Warp refuses to mutate)
    while j < 3 and counted(calls, 10, j) < 2:
        j = j + 1
    out[8] = j


@warp.kernel
def guarded_read(arr: warp.array(dtype=int), result: warp.array(dtype=int)):
    i = warp.tid()
    if arr and i >= 0 and arr[i] == 0:
        result[i] = -1
    elif not arr or i < 0 or arr[i] > 5:
        result[i] = 2
    else:
        result[i] = 1


@warp.kernel
def gated_square(calls: warp.array(dtype=warp.int32), x: warp.array(dtype=float), y: warp.array(dtype=float)):
    i = warp.tid()
    v = float(0.0)  # noqa: UP018  (as j above)
    if x[i] > 0.0 and counted_float(calls, 0, x[i]) > 1.0:
        v = x[i] * x[i]
    if x[i] < 0.0 or counted_float(calls, 1, x[i]) > 1.0:
        v = v + 3.0 * x[i]
    y[i] = v


def cpu_array(data, dtype, **options):
    return warp.array(np.array(data), dtype=dtype, device="cpu", **options)


def run_calls() -> dict:
    """What each operation decided and how often each slot's call ran."""
    warp.init()  # Warp up to 1.2 makes no array before init
    calls = warp.zeros(SLOTS, dtype=warp.int32, device="cpu")
    out = warp.zeros(len(OPERATIONS), dtype=warp.int32, device="cpu")
    warp.launch(operations, dim=1, inputs=[calls, out], device="cpu")
    return {"decided": dict(zip(OPERATIONS, out.numpy().tolist())), "calls": calls.numpy().tolist()}


def run_corpus() -> dict:
    """:func:`run_calls`, then reads guarded by an array passed as None or not, then values and gradients."""
    outcomes = run_calls()
    result = warp.zeros(3, dtype=int, device="cpu")
    warp.launch(guarded_read, dim=3, inputs=[None, result], device="cpu")
    outcomes["guarded by None"] = result.numpy().tolist()
    warp.launch(guarded_read, dim=3, inputs=[cpu_array([0, 9, 3], int), result], device="cpu")
    outcomes["guarded by an array"] = result.numpy().tolist()

    calls = warp.zeros(2, dtype=warp.int32, device="cpu")
    x = cpu_array([2.0, -2.0, 0.5], warp.float32, requires_grad=True)
    y = warp.zeros(3, dtype=float, device="cpu", requires_grad=True)
    tape = warp.Tape()
    with tape:
        warp.launch(gated_square, dim=3, inputs=[calls, x, y], device="cpu")
    forward = calls.numpy().tolist()
    tape.backward(grads={y: cpu_array([1.0, 1.0, 1.0], warp.float32)})
    outcomes["tape"] = {
        "y": y.numpy().tolist(),
        "x.grad": x.grad.numpy().tolist(),
        "calls forward": forward,
        "calls forward and backward": calls.numpy().tolist(),
    }
    return outcomes


# 1.13.0's calls per slot, and the calls every affected release makes: every operand, always.
SHORT_CIRCUIT = [0, 0, 1, 1, 1, 0, 1, 0, 0, 1, 4]
EVERY_OPERAND = [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 5]


def calls_in_fresh_python(prelude: str, env: dict) -> tuple[list, str]:
    code = f"{prelude}\nfrom {__name__} import run_calls\ncalls = run_calls()['calls']\nimport gpushim"
    calls, state = answer_in_fresh_python(code, f"[calls, gpushim.record({patch.id!r})['state']]", env)
    return calls, state


@GATE.ends_only
def test_needed_every_operand_runs_without_gpushim():
    assert calls_in_fresh_python("", {}) == (EVERY_OPERAND, "opt-in")


@GATE.ends_only
def test_needed_a_read_guarded_by_an_array_passed_as_none_kills_the_interpreter_without_gpushim():
    code = f"from {__name__} import run_corpus\nrun_corpus()"
    finished = run_python(f"import sys; sys.path.insert(0, {str(ROOT)!r})\n{code}")
    assert finished.returncode == -signal.SIGSEGV, finished.stderr[-2000:]


@GATE.ends_only
def test_opt_in_with_gpushim_but_no_gpushim_enable_every_operand_still_runs():
    assert calls_in_fresh_python("import gpushim.auto", {}) == (EVERY_OPERAND, "opt-in")


@GATE.ends_only
def test_effective_enabled_with_gpushim_imported_before_warp_operands_short_circuit_and_none_guards_reads():
    """The other order, gpushim imported after Warp, the contract checks with the probe."""
    code = f"import gpushim.auto\nfrom {__name__} import run_corpus\noutcomes = run_corpus()\nimport gpushim"
    outcomes, state = answer_in_fresh_python(code, f"[outcomes, gpushim.record({patch.id!r})['state']]", ENABLE)
    assert (outcomes["calls"], state) == (SHORT_CIRCUIT, "applied")
    assert (outcomes["guarded by None"], outcomes["guarded by an array"]) == ([2, 2, 2], [-1, 2, 1])


SCRIPT = """
import os
import sys
import warp

os.environ["GPUSHIM_ENABLE"] = "warp.and_or_short_circuit"
warp.config.quiet = False  # Warp says whether it compiled the module or found it in the cache


@warp.func
def counted(calls: warp.array(dtype=warp.int32)):
    warp.atomic_add(calls, 0, 1)
    return 1


@warp.kernel
def decided(calls: warp.array(dtype=warp.int32)):
    i = warp.tid()
    if i > 0 and counted(calls) > 0:
        calls[1] = 1


KERNEL = decided


def run():
    warp.init()
    calls = warp.zeros(2, dtype=warp.int32, device="cpu")
    warp.launch(decided, dim=1, inputs=[calls], device="cpu")
    print("@@values", calls.numpy().tolist(), flush=True)
"""
EVERY_VALUES, SHORT_VALUES = "[1, 0]", "[0, 0]"


@pytest.fixture(scope="module")
def cache_script(tmp_path_factory):
    return kernel_cache(tmp_path_factory.mktemp("and_or_short_circuit"), SCRIPT)


@GATE.ends_only
def test_a_kernel_built_by_an_earlier_process_without_gpushim_is_not_reused(cache_script):
    assert_builds_kept_apart(cache_script, EVERY_VALUES, SHORT_VALUES)


@GATE.ends_only
@pytest.mark.skipif(
    "ModuleHasher" not in vars(codegen_and_context(warp)[1]),
    reason="up to 1.3 Warp hashes a module once per load: one loaded before the patch keeps its build",
)
def test_a_kernel_built_in_this_process_before_gpushim_patch_is_rebuilt(cache_script):
    assert_rebuilt_in_process(cache_script, EVERY_VALUES, SHORT_VALUES)


@GATE.ends_only
def test_the_cuda_build_compiles_the_patched_code_with_nvrtc(monkeypatch):
    monkeypatch.setenv("GPUSHIM_ENABLE", patch.id)
    assert_generates_other_cuda_that_compiles(warp, operations, patch)


@GATE.affected_only
def test_opt_in_without_gpushim_enable_warps_generator_stays_the_releases(monkeypatch):
    import ast

    monkeypatch.delenv("GPUSHIM_ENABLE", raising=False)
    adjoint = codegen_and_context(warp)[0].Adjoint
    with applied(patch):
        assert gpushim.record(patch.id)["state"] == "opt-in"
        assert adjoint.node_visitors[ast.BoolOp] is vars(adjoint)["emit_BoolOp"]
        assert not hasattr(vars(adjoint)["emit_BoolOp"], "__wrapped__")


@GATE.unaffected_only
def test_harmless_outside_the_range_warps_generator_stays_the_releases(gpushim_patched):
    import ast

    adjoint = codegen_and_context(warp)[0].Adjoint
    assert not hasattr(vars(adjoint)["emit_BoolOp"], "__wrapped__")
    assert adjoint.node_visitors[ast.BoolOp] is vars(adjoint)["emit_BoolOp"]


@GATE.recorded_only
def test_faithful_corpus_matches_the_fixed_release(monkeypatch):
    """Recorded with the patch turned on and applied on affected releases, and on 1.13.0 as released; the matrix
    compares the files."""
    monkeypatch.setenv("GPUSHIM_ENABLE", patch.id)
    with applied(patch):
        outcomes = run_corpus()
        record_faithful(patch, outcomes)
    assert outcomes["calls"] == SHORT_CIRCUIT
