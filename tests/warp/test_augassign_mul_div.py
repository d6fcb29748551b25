"""warp.augassign_mul_div: ``a[i] *= x`` and ``a[i] /= x`` on array elements are dropped (NVIDIA/warp#342).

Kernels run on the CPU.  The corpus kernels live here, in one Warp module
with all their overloads declared up front, so that each release builds it
once per kernel cache.  The kernel-cache tests run a small script in fresh
interpreters sharing one cache directory of their own (``kernel_cache``).
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any

import pytest

from gpushim.patches.warp.augassign_mul_div import patch
from tests.support import applied, corpus_in_fresh_python, gate, record_faithful
from tests.warp.kernel_cache import assert_builds_kept_apart, assert_rebuilt_in_process, kernel_cache
from tests.warp.nvrtc import assert_generates_other_cuda_that_compiles

GATE = gate(patch)

import numpy as np
import warp

warp.config.quiet = True


@warp.kernel
def mul_div(a: warp.array(dtype=Any), x: Any, y: Any):
    i = warp.tid()
    a[i] *= x
    a[i] /= y


@warp.kernel
def add_sub(a: warp.array(dtype=Any), x: Any, y: Any):
    i = warp.tid()
    a[i] += x
    a[i] -= y


@warp.kernel
def mod_floordiv(a: warp.array(dtype=Any), x: Any, y: Any):
    i = warp.tid()
    a[i] %= x
    a[i] //= y


@warp.kernel
def power(a: warp.array(dtype=Any), x: Any):
    i = warp.tid()
    a[i] **= x


@warp.kernel
def squared(a: warp.array(dtype=Any)):
    i = warp.tid()
    a[i] *= a[i]


@warp.kernel
def by_other_2d(a: warp.array2d(dtype=float), b: warp.array2d(dtype=float)):
    i, j = warp.tid()
    a[i, j] *= b[i, j]
    a[i][j] /= 2.0


@warp.struct
class Holder:
    a: warp.array(dtype=float)


@warp.kernel
def struct_field(s: Holder, x: float):
    i = warp.tid()
    s.a[i] *= x


@warp.func
def scale_in(a: warp.array(dtype=float), i: int, x: float):
    a[i] *= x
    a[i] /= 4.0


@warp.kernel
def through_func(a: warp.array(dtype=float), x: float):
    scale_in(a, warp.tid(), x)


@warp.kernel
def component(a: warp.array(dtype=warp.vec3), x: float):
    i = warp.tid()
    a[i][0] *= x
    v = a[i]
    v[1] *= x
    a[i] = v


@warp.kernel
def copy_scale(x: warp.array(dtype=float), y: warp.array(dtype=float)):
    i = warp.tid()
    y[i] = x[i]
    y[i] *= 3.0


SCALARS = {
    "float32": warp.float32,
    "float64": warp.float64,
    "float16": warp.float16,
    "int32": warp.int32,
    "uint32": warp.uint32,
    "int64": warp.int64,
    "uint64": warp.uint64,
    "int8": warp.int8,  # not an atomic type: never dropped
}
COMPOSITES = {
    "vec3f": (warp.vec3f, warp.float32),
    "vec2d": (warp.vec2d, warp.float64),
    "vec4i": (warp.vec4i, warp.int32),
    "mat22f": (warp.mat22f, warp.float32),
    "quatf": (warp.quatf, warp.float32),  # no atomic_sub for quaternions: *= and /= only
}
for _scalar in SCALARS.values():
    for _kernel in (mul_div, add_sub, mod_floordiv):
        warp.overload(_kernel, [warp.array(dtype=_scalar), _scalar, _scalar])
for _scalar in (warp.float32, warp.float64):
    warp.overload(power, [warp.array(dtype=_scalar), _scalar])
for _scalar in (warp.float32, warp.float64, warp.int32):
    warp.overload(squared, [warp.array(dtype=_scalar)])
for _composite, _scalar in COMPOSITES.values():
    warp.overload(mul_div, [warp.array(dtype=_composite), _scalar, _scalar])
    if _composite is not warp.quatf:
        warp.overload(add_sub, [warp.array(dtype=_composite), _composite, _composite])


def cpu_array(data, dtype, **options):
    return warp.array(np.array(data), dtype=dtype, device="cpu", **options)


def launched(kernel, data, dtype, *args) -> list:
    array = cpu_array(data, dtype)
    warp.launch(kernel, dim=array.shape, inputs=[array, *args], device="cpu")
    return array.numpy().tolist()


def generated_code() -> dict:
    """The corpus module's CPU source as Warp generates it now, as a digest of its parts.

    The parts (functions, kernels, structs) are compared as a set with the
    8-digit hashes in their names left out: the patch changes the hashes on
    purpose, and Warp orders kernels by hash.
    """
    module = mul_div.module
    source = warp.context.ModuleBuilder(module, module.options).codegen("cpu")
    parts = sorted(
        re.sub(r"_[0-9a-f]{8}(?![0-9A-Za-z])", "_<hash>", part)
        for part in re.split(r"\n\s*\n(?=\S)", source)
        if "gpushim" not in part and "#include" not in part  # the header, and what other patches insert there
    )
    digest = hashlib.sha256("\n\n".join(parts).encode()).hexdigest()
    return {"parts": len(parts), "sha256": digest}


def run_corpus() -> dict:
    """Every case's resulting values, keyed by a description of the case."""
    outcomes = {}
    for name, scalar in SCALARS.items():
        data = ([7, -7, 9, 0] if name[0] == "i" else [7, 250, 9, 0]) if "int" in name else [2.0, 4.0, -1.5, 0.0]
        outcomes[f"{name} a[i] *= 3; a[i] /= 2"] = launched(mul_div, data, scalar, scalar(3), scalar(2))
        outcomes[f"{name} a[i] += 3; a[i] -= 2"] = launched(add_sub, data, scalar, scalar(3), scalar(2))
        outcomes[f"{name} a[i] %= 4; a[i] //= 2"] = launched(mod_floordiv, data, scalar, scalar(4), scalar(2))
    for scalar in (warp.float32, warp.float64):
        outcomes[f"{scalar.__name__} a[i] **= 2"] = launched(power, [2.0, -3.0, 0.5], scalar, scalar(2))
    for scalar in (warp.float32, warp.float64, warp.int32):
        outcomes[f"{scalar.__name__} a[i] *= a[i]"] = launched(squared, [2, -3, 5], scalar)
    for name, (composite, scalar) in COMPOSITES.items():
        length = math.prod(composite._shape_)  # type_length counts rows of a matrix from 1.8
        data = (np.arange(2 * length) + 1).reshape(2, *composite._shape_)
        outcomes[f"{name} a[i] *= 2; a[i] /= 4"] = launched(mul_div, data, composite, scalar(2), scalar(4))
        if composite is not warp.quatf:
            ones, twos = composite(*[1] * length), composite(*[2] * length)
            outcomes[f"{name} a[i] += 1; a[i] -= 2"] = launched(add_sub, data, composite, ones, twos)

    a = cpu_array(np.arange(6).reshape(2, 3), warp.float32)
    warp.launch(by_other_2d, dim=(2, 3), inputs=[a, cpu_array(np.full((2, 3), 3), warp.float32)], device="cpu")
    outcomes["2d a[i, j] *= b[i, j]; a[i][j] /= 2"] = a.numpy().tolist()
    holder = Holder()
    holder.a = cpu_array([1.0, 2.0], warp.float32)
    warp.launch(struct_field, dim=2, inputs=[holder, 5.0], device="cpu")
    outcomes["struct field s.a[i] *= 5"] = holder.a.numpy().tolist()
    outcomes["wp.func a[i] *= 8; a[i] /= 4"] = launched(through_func, [1.0, -2.0], warp.float32, 8.0)
    outcomes["vec3 a[i][0] *= 3, local v[1] *= 3"] = launched(component, [[1, 2, 3], [4, 5, 6]], warp.vec3, 3.0)

    x = cpu_array([1.0, 2.0], warp.float32, requires_grad=True)
    y = warp.zeros(2, dtype=float, device="cpu", requires_grad=True)
    tape = warp.Tape()
    with tape:
        warp.launch(copy_scale, dim=2, inputs=[x, y], device="cpu")
    tape.backward(grads={y: cpu_array([1.0, 1.0], warp.float32)})
    outcomes["tape y[i] = x[i]; y[i] *= 3"] = {"y": y.numpy().tolist(), "x.grad": x.grad.numpy().tolist()}
    outcomes["generated CPU code"] = generated_code()
    return outcomes


# Cases whose values tell the bug from the fix: (values unpatched on 1.4.0 and 1.4.1, values on 1.4.2).
TELLING = {
    "float32 a[i] *= 3; a[i] /= 2": ([2.0, 4.0, -1.5, 0.0], [3.0, 6.0, -2.25, 0.0]),
    "int32 a[i] *= 3; a[i] /= 2": ([7, -7, 9, 0], [10, -10, 13, 0]),
    "int32 a[i] %= 4; a[i] //= 2": ([7, -7, 9, 0], [1, -1, 0, 0]),
    "vec3f a[i] *= 2; a[i] /= 4": ([[1, 2, 3], [4, 5, 6]], [[0.5, 1, 1.5], [2, 2.5, 3]]),
    "mat22f a[i] *= 2; a[i] /= 4": ([[[1, 2], [3, 4]], [[5, 6], [7, 8]]], [[[0.5, 1], [1.5, 2]], [[2.5, 3], [3.5, 4]]]),
    "struct field s.a[i] *= 5": ([1.0, 2.0], [5.0, 10.0]),
    "wp.func a[i] *= 8; a[i] /= 4": ([1.0, -2.0], [2.0, -4.0]),
}
# Cases 1.4.0 and 1.4.1 always got right.
UNTOUCHED = {
    "float32 a[i] += 3; a[i] -= 2": [3.0, 5.0, -0.5, 1.0],
    "int8 a[i] *= 3; a[i] /= 2": [10, -10, 13, 0],
    "vec3f a[i] += 1; a[i] -= 2": [[0, 1, 2], [3, 4, 5]],
    "vec3 a[i][0] *= 3, local v[1] *= 3": [[3, 6, 3], [12, 15, 6]],
}


SCRIPT = """
import sys
import numpy as np
import warp

warp.config.quiet = False  # Warp says whether it compiled the module or found it in the cache


@warp.kernel
def scale(a: warp.array(dtype=float)):
    i = warp.tid()
    a[i] *= 3.0
    a[i] /= 2.0


KERNEL = scale


def run():
    a = warp.array(np.array([2.0, 4.0], dtype=np.float32), device="cpu")
    warp.launch(scale, dim=2, inputs=[a], device="cpu")
    print("@@values", a.numpy().tolist(), flush=True)
"""


@pytest.fixture(scope="module")
def cache_script(tmp_path_factory):
    return kernel_cache(tmp_path_factory.mktemp("augassign"), SCRIPT)


@GATE.affected_only
def test_needed_in_place_ops_on_array_elements_are_dropped_without_gpushim():
    outcomes, state = corpus_in_fresh_python(__name__, patch, "")
    assert state == "inactive"
    assert {name: outcomes[name] for name in TELLING} == {name: dropped for name, (dropped, _) in TELLING.items()}
    assert {name: outcomes[name] for name in UNTOUCHED} == UNTOUCHED


@GATE.affected_only
def test_a_kernel_built_by_an_earlier_process_without_gpushim_is_not_reused(cache_script):
    assert_builds_kept_apart(cache_script, "[2.0, 4.0]", "[3.0, 6.0]")


@GATE.affected_only
def test_a_kernel_built_in_this_process_before_gpushim_patch_is_rebuilt(cache_script):
    assert_rebuilt_in_process(cache_script, "[2.0, 4.0]", "[3.0, 6.0]")


@GATE.affected_only
def test_code_generation_dispatches_through_node_visitors():
    """Patching the method alone would change nothing: Warp calls the item of ``Adjoint.node_visitors``."""
    import ast

    from warp.codegen import Adjoint

    module = mul_div.module

    def stores() -> int:
        return warp.context.ModuleBuilder(module, module.options).codegen("cpu").count("wp::array_store(")

    original = vars(Adjoint)["emit_AugAssign"]
    try:
        released = stores()
        with applied(patch):
            installed = vars(Adjoint)["emit_AugAssign"]
            assert Adjoint.node_visitors[ast.AugAssign] is installed
            fixed = stores()
            Adjoint.node_visitors[ast.AugAssign] = original  # what a patch of the method alone would leave
            try:
                method_only = stores()
            finally:
                Adjoint.node_visitors[ast.AugAssign] = installed
    finally:
        module.mark_modified()  # the builds above re-hashed the kernels; let Warp hash them again
    assert method_only == released < fixed


@GATE.affected_only
@pytest.mark.parametrize("verbose", [False, True])
def test_the_warning_is_printed_only_when_verbose_as_in_1_4_2(verbose, capsys, monkeypatch):
    module = mul_div.module
    monkeypatch.setattr(warp.config, "verbose", verbose)
    try:
        with applied(patch):
            warp.context.ModuleBuilder(module, module.options).codegen("cpu")
    finally:
        module.mark_modified()
    assert ("Warning: in-place op <ast.Mult object at" in capsys.readouterr().out) is verbose


@GATE.ends_only
def test_the_cuda_build_compiles_the_patched_code_with_nvrtc():
    assert_generates_other_cuda_that_compiles(warp, mul_div, patch)


@GATE.recorded_only
def test_faithful_corpus_matches_the_fixed_release(request):
    """Recorded patched on 1.4.0 and 1.4.1 and unpatched on 1.4.2; the matrix compares the files."""
    if GATE.affected:
        request.getfixturevalue("gpushim_patched")
    outcomes = run_corpus()
    record_faithful(patch, outcomes)
    assert {name: outcomes[name] for name in TELLING} == {name: fixed for name, (_, fixed) in TELLING.items()}
    assert {name: outcomes[name] for name in UNTOUCHED} == UNTOUCHED
