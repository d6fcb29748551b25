"""warp.atomic_minmax_old_value: float ``atomic_min``/``atomic_max`` on CUDA return the old value (NVIDIA/warp#1058).

The bug is in the CUDA build alone, whose kernels need a device
(``test_gpu_atomic_minmax_old_value.py``).  On the CPU, the CUDA text runs
one thread at a time (``tests/warp/cuda_on_cpu.py``): the release's float
functions, which the CUDA source Warp generates for the corpus calls, return
the value they stored (needed); patched, that source calls the overlay's
functions and compiles with the real NVRTC, while the CPU build's source is
the release's, character for character (effective); the overlay's functions
return what 1.11.0's do, signed zeros and NaN included (faithful, recorded
for the matrix); outside the range Warp's headers are untouched.  The CPU
build returns the same on the corpus in 1.2.0, 1.10.1 (patched or not) and
1.11.0 (run by hand: the CPU branches did not change).  Each check costs a
module build or an NVRTC compile and proves nothing new between the ends of
the range: they run at its ends (and the record on the reference).  No
``from __future__ import annotations`` here: Warp 1.2, the lowest release
of the matrix in the range, evaluates no string annotation.
"""

import functools
import hashlib
import re

import pytest

from gpushim.patches.warp._codegen import codegen_and_context
from gpushim.patches.warp._overlay import native_header
from gpushim.patches.warp.atomic_minmax_old_value import patch
from tests.support import applied, gate, record_corpus
from tests.warp.cuda_on_cpu import NAMESPACE, compiled_for_the_cpu, cuda_branch, device_code, harness
from tests.warp.nvrtc import assert_compiles_for_cuda, cuda_source

GATE = gate(patch)

import warp  # noqa: E402

from tests.warp import atomic_minmax_corpus as corpus  # noqa: E402


def _cpu_source(kernel) -> str:
    """The CPU source of ``kernel``'s module, with the hash in its kernels' names (which the patch salts) left out."""
    context = codegen_and_context(warp)[1]
    source = context.ModuleBuilder(kernel.module, dict(kernel.module.options)).codegen("cpu")
    return re.sub(r"_[0-9a-f]{8}(?![0-9a-z])", "_<hash>", source)


NAN, INF = float("nan"), float("inf")
# (held, value): smaller, larger, equal; signed zeros, NaN either side, infinities.
CUDA_CASES = [
    (2.0, 1.0),
    (2.0, 3.0),
    (2.0, 2.0),
    (0.0, -0.0),
    (-0.0, 0.0),
    (1.0, NAN),
    (NAN, 1.0),
    (-INF, 5.0),
    (3.0, INF),
]
# builtin.h's float functions, whose CUDA branches the build compiles.
RELEASED = {
    "min": "inline CUDA_CALLABLE float atomic_min(float* address, float val)",
    "max": "inline CUDA_CALLABLE float atomic_max(float* address, float val)",
}


def _cuda_extrema(
    held: warp.array(dtype=float), values: warp.array(dtype=float), out: warp.array(dtype=float), i: int
): ...


def _cases(held: warp.array(dtype=float), values: warp.array(dtype=float), out: warp.array(dtype=float)):
    CUDA_EXTREMA(held, values, out, warp.tid())  # noqa: F821 (bound by _cuda_outcomes)


def _cuda_functions() -> str:
    """The release's float CUDA branches as ``released_atomic_min`` and ``_max``, and as ``built_atomic_min`` and
    ``_max`` the functions the CUDA build calls: the overlay's where the patch applies, the release's elsewhere."""
    header = native_header(warp, "builtin.h")
    functions = [
        f"inline float released_atomic_{name}(float* address, float val)\n{{{cuda_branch(header, declaration)}}}\n"
        for name, declaration in RELEASED.items()
    ]
    built = "released"
    if GATE.affected:
        with applied(patch):
            functions.append(device_code(codegen_and_context(warp)[0].cuda_module_header.after))
        built = "gpushim"
    for name in RELEASED:
        call = f"{built}_atomic_{name}(address, val)"
        functions.append(f"inline float built_atomic_{name}(float* address, float val)\n{{ return {call}; }}\n")
    return harness(*functions)


@functools.lru_cache(maxsize=None)
def _cuda_outcomes() -> dict:
    """[returned, stored] of each function of :func:`_cuda_functions`, one thread on the CPU, per case."""
    code = _cuda_functions()
    calls = [f"wp::{NAMESPACE}::{kind}_atomic_{name}" for kind in ("released", "built") for name in RELEASED]
    snippet = f"// {hashlib.sha256(code.encode()).hexdigest()}: Warp's module hash covers the snippet, not the header\n"
    snippet += "float cell;\n" + "".join(
        f"cell = held.data[i]; out.data[8 * i + {2 * slot}] = {call}(&cell, values.data[i]); "
        f"out.data[8 * i + {2 * slot + 1}] = cell;\n"
        for slot, call in enumerate(calls)
    )
    globals()["CUDA_EXTREMA"] = warp.func_native(snippet)(_cuda_extrema)
    kernel = warp.kernel(_cases)
    out = warp.zeros(8 * len(CUDA_CASES), dtype=float, device="cpu")
    inputs = [warp.array([case[index] for case in CUDA_CASES], dtype=float, device="cpu") for index in (0, 1)]
    with compiled_for_the_cpu(warp, code):
        warp.launch(kernel, dim=len(CUDA_CASES), inputs=[*inputs, out], device="cpu")
    rows = [[repr(float(x)) for x in row] for row in out.numpy().reshape(len(CUDA_CASES), 8)]
    return {
        kind: {
            repr(case): {"min": row[start : start + 2], "max": row[start + 2 : start + 4]}
            for case, row in zip(CUDA_CASES, rows)
        }
        for kind, start in (("released", 0), ("built", 4))
    }


@GATE.affected_only
@GATE.ends_only
def test_needed_the_releases_cuda_functions_return_the_value_they_stored():
    source = cuda_source(warp, corpus.one_thread)
    assert "wp::atomic_min(var_" in source and "wp::atomic_max(var_" in source
    assert patch.id not in source
    released = _cuda_outcomes()["released"]
    assert released["(2.0, 1.0)"]["min"] == ["1.0", "1.0"]  # returned, stored: 2.0 was there
    assert released["(2.0, 3.0)"]["max"] == ["3.0", "3.0"]
    assert released == {**CUDA_FIXED, **CUDA_RELEASED}


@GATE.affected_only
@GATE.ends_only
def test_effective_the_cuda_build_calls_the_overlay_and_nvrtc_compiles_it(this_patch):
    source = cuda_source(warp, corpus.one_thread)
    overlaid = source.index(f"// gpushim {patch.id}")
    guard = source.rindex("#if defined(__CUDA_ARCH__)", 0, overlaid)
    define = source.index("#define atomic_min gpushim_atomic_min", overlaid)
    assert guard < overlaid < define < source.index("#endif", define) < source.index("wp::atomic_min(var_")
    assert_compiles_for_cuda(warp, corpus.one_thread, patch)


@GATE.affected_only
@GATE.ends_only
def test_effective_the_cpu_build_compiles_the_releases_source():
    released = _cpu_source(corpus.one_thread)
    with applied(patch):
        patched = _cpu_source(corpus.one_thread)
        inserted = codegen_and_context(warp)[0].cpu_module_header.after
    assert patch.id in inserted and patched.count(inserted) == 1
    # one block, which a build without __CUDA_ARCH__ skips whole
    assert inserted.startswith("#if defined(__CUDA_ARCH__)\n") and inserted.endswith("#endif\n")
    assert [line for line in inserted.splitlines() if line.startswith("#") and "define " not in line] == [
        "#if defined(__CUDA_ARCH__)",
        "#endif",
    ]
    assert patched.replace(inserted, "", 1) == released


@pytest.mark.skipif(not (GATE.at_an_end or GATE.reference), reason="the overlay's text is the same in every release")
def test_faithful_the_cuda_functions_the_build_calls_return_what_1_11_0s_do():
    built = _cuda_outcomes()["built"]  # built first: reading the overlay's text applies the patch for a moment
    assert record_corpus(patch, lambda: built) == CUDA_FIXED


@GATE.unaffected_only
def test_harmless_outside_the_range_warps_module_headers_hold_none_of_its_code(this_patch):
    codegen = codegen_and_context(warp)[0]
    assert not any(patch.id in getattr(codegen, name) for name in ("cpu_module_header", "cuda_module_header"))


# 1.11.0's CUDA functions, one thread on the CPU: [returned, stored] of atomic_min and atomic_max, per (held, value).
CUDA_FIXED = {
    "(2.0, 1.0)": {"min": ["2.0", "1.0"], "max": ["2.0", "2.0"]},
    "(2.0, 3.0)": {"min": ["2.0", "2.0"], "max": ["2.0", "3.0"]},
    "(2.0, 2.0)": {"min": ["2.0", "2.0"], "max": ["2.0", "2.0"]},
    "(0.0, -0.0)": {"min": ["0.0", "0.0"], "max": ["0.0", "0.0"]},
    "(-0.0, 0.0)": {"min": ["-0.0", "-0.0"], "max": ["-0.0", "-0.0"]},
    "(1.0, nan)": {"min": ["1.0", "1.0"], "max": ["1.0", "1.0"]},
    "(nan, 1.0)": {"min": ["nan", "nan"], "max": ["nan", "nan"]},
    "(-inf, 5.0)": {"min": ["-inf", "-inf"], "max": ["-inf", "5.0"]},
    "(3.0, inf)": {"min": ["3.0", "3.0"], "max": ["3.0", "inf"]},
}
# Where 1.0 to 1.10.1's differ: where the value is stored, they return it.
CUDA_RELEASED = {
    "(2.0, 1.0)": {"min": ["1.0", "1.0"], "max": ["2.0", "2.0"]},
    "(2.0, 3.0)": {"min": ["2.0", "2.0"], "max": ["3.0", "3.0"]},
    "(-inf, 5.0)": {"min": ["-inf", "-inf"], "max": ["5.0", "5.0"]},
    "(3.0, inf)": {"min": ["3.0", "3.0"], "max": ["inf", "inf"]},
}
