"""warp.conditional_expression_loads: ``a if cond else arr[i]`` reads ``arr[i]`` either way (NVIDIA/warp#1094).

Kernels run on the CPU: upstream's guarded read with the index out of
bounds and in them, branches that read an element against branches that
compute, forward and through a tape, nested conditional expressions, a
constant condition and vector components.  The index out of bounds crashes
an affected release, so the corpus runs patched there (and as released on
1.11.1); the proof that it is needed runs the crash in a fresh interpreter.
"""

from __future__ import annotations

import pytest

from gpushim.patches.warp._codegen import codegen_and_context
from gpushim.patches.warp.conditional_expression_loads import patch
from tests.support import ROOT, assert_unchanged_by, corpus_in_fresh_python, gate, record_faithful, run_python
from tests.warp.kernel_cache import assert_builds_kept_apart, assert_rebuilt_in_process, kernel_cache
from tests.warp.nvrtc import assert_generates_other_cuda_that_compiles

GATE = gate(patch)

import warp  # noqa: E402

warp.config.quiet = True

FAR = -(2**30)


@warp.kernel
def guarded(arr: warp.array(dtype=float), idx: int, out: warp.array(dtype=float)):
    out[0] = -1.0 if idx < 0 else arr[idx]
    out[1] = -1.0 if idx < 0 else (arr[idx] if idx < 2 else -2.0)
    out[2] = arr[idx] if idx >= 0 else -1.0


@warp.kernel
def read_or_compute(x: warp.array(dtype=float), c: int, out: warp.array(dtype=float)):
    out[0] = x[0] * 2.0 if c > 0 else x[1]
    out[1] = x[0] if c > 0 else x[1] * 3.0
    out[2] = x[0] if c > 0 else x[1]
    out[3] = x[0] if True else x[1]


@warp.kernel
def components(v: warp.vec3, c: int, out: warp.array(dtype=float)):
    out[0] = v[0] if c > 0 else v[2]


def guarded_reads() -> dict:
    arr = warp.array([1.0, 2.0], dtype=float, device="cpu")
    outcomes = {}
    for idx in (FAR, 0, 1):
        out = warp.zeros(3, dtype=float, device="cpu")
        warp.launch(guarded, dim=1, inputs=[arr, idx, out], device="cpu")
        outcomes[f"guarded, idx={idx}"] = out.numpy().tolist()
    return outcomes


def run_corpus() -> dict:
    """What each kernel writes, and the gradients a tape gives for ``read_or_compute``."""
    outcomes = guarded_reads()
    x = warp.array([1.0, 2.0], dtype=float, device="cpu", requires_grad=True)
    for c in (1, 0):
        out = warp.zeros(4, dtype=float, device="cpu", requires_grad=True)
        tape = warp.Tape()
        with tape:
            warp.launch(read_or_compute, dim=1, inputs=[x, c, out], device="cpu")
        tape.backward(grads={out: warp.array([1.0, 10.0, 100.0, 1000.0], dtype=float, device="cpu")})
        outcomes[f"read or compute, c={c}"] = {"out": out.numpy().tolist(), "x.grad": x.grad.numpy().tolist()}
        x.grad.zero_()
        out = warp.zeros(1, dtype=float, device="cpu")
        warp.launch(components, dim=1, inputs=[warp.vec3(1.0, 2.0, 3.0), c, out], device="cpu")
        outcomes[f"components, c={c}"] = out.numpy().tolist()
    return outcomes


FIXED_READ_OR_COMPUTE = [2.0, 1.0, 1.0, 1.0]  # c=1; the gradients are the corpus's to compare

CRASH = f"""
import sys

sys.path.insert(0, {str(ROOT)!r})
import warp
from {__name__} import guarded

arr = warp.array([1.0, 2.0], dtype=float, device="cpu")
out = warp.zeros(3, dtype=float, device="cpu")
warp.launch(guarded, dim=1, inputs=[arr, {FAR}, out], device="cpu")
print("@@values", out.numpy().tolist(), flush=True)
"""

# Where both branches read, each affected release gets its own value or gradient wrong (1.8.0 the
# gradient, 1.11.0 the value): the released run of the script says which, the patched one must not.
SCRIPT = """
import sys
import warp

warp.config.quiet = False  # Warp says whether it compiled the module or found it in the cache


@warp.kernel
def both_read(x: warp.array(dtype=float), c: int, out: warp.array(dtype=float)):
    out[0] = x[0] if c > 0 else x[1]


KERNEL = both_read


def run():
    x = warp.array([1.0, 2.0], dtype=float, device="cpu", requires_grad=True)
    out = warp.zeros(1, dtype=float, device="cpu", requires_grad=True)
    tape = warp.Tape()
    with tape:
        warp.launch(both_read, dim=1, inputs=[x, 1, out], device="cpu")
    tape.backward(grads={out: warp.ones(1, dtype=float, device="cpu")})
    print("@@values", [out.numpy().tolist(), x.grad.numpy().tolist()], flush=True)
"""
RIGHT = "[[1.0], [0.0, 0.0]]"  # as 1.11.1 gives it


@pytest.fixture(scope="module")
def cache_script(tmp_path_factory):
    return kernel_cache(tmp_path_factory.mktemp("conditional_expression_loads"), SCRIPT)


@GATE.ends_only
def test_needed_an_index_out_of_bounds_crashes_without_gpushim():
    finished = run_python(CRASH)
    assert finished.returncode < 0, (finished.returncode, finished.stdout, finished.stderr)


@GATE.ends_only
def test_effective_with_gpushim_imported_before_warp():
    outcomes, state = corpus_in_fresh_python(__name__, patch, "import gpushim.auto")
    assert state == "applied"
    assert outcomes[f"guarded, idx={FAR}"] == [-1.0, -1.0, -1.0]
    assert outcomes["read or compute, c=1"]["out"] == FIXED_READ_OR_COMPUTE


@GATE.ends_only
def test_a_kernel_built_by_an_earlier_process_without_gpushim_is_not_reused(cache_script):
    (wrong, _), *_ = cache_script()
    assert wrong != RIGHT
    assert_builds_kept_apart(cache_script, wrong, RIGHT)


@GATE.ends_only
def test_a_kernel_built_in_this_process_before_gpushim_patch_is_rebuilt(cache_script):
    (wrong, _), *_ = cache_script()
    assert_rebuilt_in_process(cache_script, wrong, RIGHT)


@GATE.ends_only
def test_the_cuda_build_compiles_the_patched_code_with_nvrtc():
    assert_generates_other_cuda_that_compiles(warp, guarded, patch)


@GATE.unaffected_only
def test_harmless_outside_the_range_warps_conditional_expressions_stay_the_releases():
    assert_unchanged_by(patch, codegen_and_context(warp)[0].Adjoint, ("emit_IfExp", "eval"))


@GATE.recorded_only
def test_faithful_corpus_matches_the_fixed_release(request):
    """Recorded patched on affected releases and unpatched on 1.11.1; the matrix compares the files."""
    if GATE.affected:
        request.getfixturevalue("gpushim_patched")
    outcomes = run_corpus()
    record_faithful(patch, outcomes)
    assert outcomes["read or compute, c=1"]["out"] == FIXED_READ_OR_COMPUTE
