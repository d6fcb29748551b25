"""warp.atomic_minmax_old_value: float ``atomic_min``/``atomic_max`` on CUDA return the old value (NVIDIA/warp#1058).

The bug is in the CUDA build alone, which needs a device to run
(``test_gpu_atomic_minmax_old_value.py``).  On the CPU: the CUDA source
Warp generates for the corpus calls the release's compare-and-swap loop,
which swaps again after the swap that stored the value (needed); patched,
that source points the calls at the overlay's functions and compiles with
the real NVRTC, while the CPU build's source is the release's, character for
character (effective); the CPU build returns what 1.11.0's does on the
corpus (faithful), and outside the range Warp's headers are untouched.  Each
check costs a module build or an NVRTC compile and proves nothing new
between the ends of the range: they run at its ends (and the corpus on the
reference).  No ``from __future__ import annotations`` here: Warp 1.2, the
lowest release of the matrix in the range, evaluates no string annotation.
"""

import re
import sys

import pytest

from gpushim.overlay import NativeFunction
from gpushim.patches.warp.atomic_minmax_old_value import patch
from tests.support import applied, gate, record_faithful
from tests.warp.nvrtc import assert_compiles_for_cuda, cuda_source

GATE = gate(patch)

import warp  # noqa: E402

from tests.warp import atomic_minmax_corpus as corpus  # noqa: E402


def _codegen():
    context = sys.modules[warp.launch.__module__]
    return context, sys.modules[context.__name__.rpartition(".")[0] + ".codegen"]


def _cpu_source(kernel) -> str:
    """The CPU source of ``kernel``'s module, with the hash in its kernels' names (which the patch salts) left out."""
    context = _codegen()[0]
    source = context.ModuleBuilder(kernel.module, dict(kernel.module.options)).codegen("cpu")
    return re.sub(r"_[0-9a-f]{8}(?![0-9a-z])", "_<hash>", source)


def _cuda_branch(header: str, declaration: str) -> str:
    """The part of the function's body (whitespace left out) that the CUDA build compiles."""
    body = NativeFunction(declaration).body(header)
    return body.partition("#ifdefined(__CUDA_ARCH__)")[2].partition("#else")[0]


# builtin.h's float loop up to 1.10.1: it runs while the value would replace what the last swap returned,
# so after the swap that stores it (which returns the old value) it swaps again, fails, and returns the value.
RELEASED_LOOPS = {
    "inline CUDA_CALLABLE float atomic_min(float* address, float val)": (
        "while(val<__int_as_float(old)){assumed=old;old=atomicCAS(address_as_int,assumed,__float_as_int(val));}"
        "return__int_as_float(old);"
    ),
    "inline CUDA_CALLABLE float atomic_max(float* address, float val)": (
        "while(val>__int_as_float(old)){assumed=old;old=atomicCAS(address_as_int,assumed,__float_as_int(val));}"
        "return__int_as_float(old);"
    ),
}


@GATE.affected_only
@GATE.ends_only
def test_needed_the_cuda_build_reaches_a_loop_that_returns_the_stored_value():
    from gpushim.patches.warp._overlay import native_header

    source = cuda_source(warp, corpus.one_thread)
    assert "wp::atomic_min(var_" in source and "wp::atomic_max(var_" in source
    assert patch.id not in source
    header = native_header(warp, "builtin.h")
    for declaration, loop in RELEASED_LOOPS.items():
        assert _cuda_branch(header, declaration).endswith(loop)


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
        inserted = _codegen()[1].cpu_module_header.after
    assert patch.id in inserted and patched.count(inserted) == 1
    # one block, which a build without __CUDA_ARCH__ skips whole
    assert inserted.startswith("#if defined(__CUDA_ARCH__)\n") and inserted.endswith("#endif\n")
    assert [line for line in inserted.splitlines() if line.startswith("#") and "define " not in line] == [
        "#if defined(__CUDA_ARCH__)",
        "#endif",
    ]
    assert patched.replace(inserted, "", 1) == released


@pytest.mark.skipif(not (GATE.at_an_end or GATE.reference), reason="the CPU build is the release's (above)")
def test_faithful_the_cpu_build_returns_what_the_fixed_release_returns(request):
    if GATE.affected:
        request.getfixturevalue("this_patch")
    outcomes = corpus.run_corpus()
    record_faithful(patch, outcomes)
    assert outcomes == corpus.FIXED


@GATE.unaffected_only
def test_harmless_outside_the_range_warps_module_headers_hold_none_of_its_code(this_patch):
    codegen = _codegen()[1]
    assert not any(patch.id in getattr(codegen, name) for name in ("cpu_module_header", "cuda_module_header"))
