"""warp.static_loop_variable: wp.static() of a loop's variable reads a global of the same name (NVIDIA/warp#1139).

Kernels run on the CPU, in a module whose globals ``i``, ``j`` and ``k``
shadow the loop variables: upstream's case, nested loops, ``wp.static``
choosing a function by the index, an expression that reads a global only,
one that reads the variable after its loop, and a dynamic loop, whose index
is no constant at code generation either, so the fixed release reads the
global there too.  Each kernel is declared when the
corpus runs (after ``gpushim.patch()`` in the faithful record); Warp
evaluates ``wp.static`` at declaration.  The proofs that start interpreters
run on the lowest and highest affected release of the matrix only.
"""

from __future__ import annotations

import pytest

from gpushim.patches.warp._codegen import codegen_and_context
from gpushim.patches.warp.static_loop_variable import patch
from tests.support import assert_unchanged_by, corpus_in_fresh_python, gate, record_faithful
from tests.warp.kernel_cache import assert_builds_kept_apart, kernel_cache
from tests.warp.nvrtc import assert_generates_other_cuda_that_compiles

GATE = gate(patch)

import warp  # noqa: E402

warp.config.quiet = True

# Left behind by earlier code, as a script's or a notebook's loops leave them.
i, j, k = 60, 7, 1
SCALE = 3


@warp.func
def first(x: float):
    return x + 1.0


@warp.func
def second(x: float):
    return x * 10.0


FUNCTIONS = [first, second]


def upstream(out: warp.array(dtype=warp.int32)):
    for i in range(3):
        out[i] = warp.static(i * 10)


def nested(out: warp.array(dtype=warp.int32)):
    for i in range(2):
        for j in range(3):
            out[i * 3 + j] = warp.static(i * 100 + j)


def function_by_index(out: warp.array(dtype=warp.float32)):
    for k in range(2):
        out[k] = warp.static(FUNCTIONS[k])(2.0)


def global_only(out: warp.array(dtype=warp.int32)):
    for i in range(2):
        out[i] = warp.static(SCALE * 2) + i


def after_the_loop(out: warp.array(dtype=warp.int32)):
    acc = warp.int32(0)
    for i in range(2):
        acc += i
    out[0] = acc + warp.static(i)


def dynamic_loop(n: int, out: warp.array(dtype=warp.int32)):
    for i in range(n):
        out[i] = warp.static(i * 10)


CASES = [(upstream, 3, warp.int32), (nested, 6, warp.int32), (function_by_index, 2, warp.float32)]
CASES += [(global_only, 2, warp.int32), (after_the_loop, 1, warp.int32), (dynamic_loop, 3, warp.int32)]
FIXED = {
    "upstream": [0, 10, 20],
    "nested": [0, 1, 2, 100, 101, 102],
    "function_by_index": [3.0, 20.0],
    "global_only": [6, 7],
    "after_the_loop": [61],
    "dynamic_loop": [600, 600, 600],
}
# What 1.4.0 to 1.11.0 give where they differ.
RELEASED = {"upstream": [600] * 3, "nested": [6007] * 6, "function_by_index": [20.0, 20.0]}


def run_corpus() -> dict:
    """What each kernel, declared now, writes, by its name.

    All are declared before the first launch, so that Warp builds their module once, not once per kernel.
    """
    outcomes = {}
    kernels = [(warp.kernel(function), size, dtype) for function, size, dtype in CASES]
    for kernel, size, dtype in kernels:
        out = warp.zeros(size, dtype=dtype, device="cpu")
        inputs = [size, out] if "n" in kernel.adj.arg_types else [out]
        warp.launch(kernel, dim=1, inputs=inputs, device="cpu")
        outcomes[kernel.func.__name__] = out.numpy().tolist()
    return outcomes


# gpushim comes before the kernel's declaration, where Warp evaluates wp.static.
SCRIPT = """
import sys

if "gpushim" in sys.argv:
    import gpushim.auto
import warp

warp.config.quiet = False  # Warp says whether it compiled the module or found it in the cache

for i in range(3):
    pass


@warp.kernel
def scaled_index(out: warp.array(dtype=warp.int32)):
    for i in range(3):
        out[i] = warp.static(i * 10)


KERNEL = scaled_index


def run():
    out = warp.zeros(3, dtype=warp.int32, device="cpu")
    warp.launch(scaled_index, dim=1, inputs=[out], device="cpu")
    print("@@values", out.numpy().tolist(), flush=True)
"""


@pytest.fixture(scope="module")
def cache_script(tmp_path_factory):
    return kernel_cache(tmp_path_factory.mktemp("static_loop_variable"), SCRIPT)


@GATE.ends_only
def test_needed_the_global_wins_without_gpushim():
    outcomes, state = corpus_in_fresh_python(__name__, patch, "")
    assert state == "inactive"
    assert {name: outcomes[name] for name in RELEASED} == RELEASED
    assert {name: outcomes[name] for name in FIXED if name not in RELEASED} == {
        name: value for name, value in FIXED.items() if name not in RELEASED
    }


@GATE.ends_only
def test_effective_with_gpushim_imported_before_warp():
    outcomes, state = corpus_in_fresh_python(__name__, patch, "import gpushim.auto")
    assert state == "applied"
    assert {name: outcomes[name] for name in FIXED} == FIXED


@GATE.ends_only
def test_a_kernel_built_by_an_earlier_process_without_gpushim_is_not_reused(cache_script):
    assert_builds_kept_apart(cache_script, "[20, 20, 20]", "[0, 10, 20]")


@GATE.ends_only
def test_the_cuda_build_compiles_the_patched_code_with_nvrtc():
    assert_generates_other_cuda_that_compiles(warp, warp.kernel(upstream), patch)


@GATE.unaffected_only
def test_harmless_outside_the_range_warps_static_expressions_stay_the_releases():
    assert_unchanged_by(
        patch, codegen_and_context(warp)[0].Adjoint, ("replace_static_expressions", "evaluate_static_expression")
    )


@GATE.recorded_only
def test_faithful_corpus_matches_the_fixed_release(request):
    """Recorded patched on affected releases and unpatched on 1.11.1; the matrix compares the files."""
    if GATE.affected:
        request.getfixturevalue("gpushim_patched")
    outcomes = run_corpus()
    record_faithful(patch, outcomes)
    assert {name: outcomes[name] for name in FIXED} == FIXED
