"""warp.inplace_adjoints: ``a[i] += x`` doubles a's gradient, ``v[k] = x`` drops x's (Warp before 1.4.0).

The corpus is one kernel of this file's Warp module, run on the CPU under a
tape seeded with ones: every in-place form 1.4.0 lowers anew, each right side
a call that counts itself in a slot of its own.  Its outcomes are recorded
patched on the ends of the range and as released on 1.4.1 (1.4.0 has no
cell); the proofs that start interpreters run on the ends only.  No
``from __future__ import annotations``: Warp 1.2 reads the kernels'
annotations as types.
"""

import pytest
from packaging.version import Version

from gpushim.patches.warp.inplace_adjoints import patch
from tests.support import corpus_in_fresh_python, gate, record_corpus
from tests.warp.kernel_cache import assert_builds_kept_apart, assert_rebuilt_in_process, kernel_cache
from tests.warp.nvrtc import assert_compiles_for_cuda

GATE = gate(patch)

import numpy as np  # noqa: E402
import warp as wp  # noqa: E402

from tests.warp.counted_calls import counted, cpu, launch_taped  # noqa: E402

wp.config.quiet = True

# The statements of the corpus, in the order of their slots in ``calls``.
STATEMENTS = [
    "a[i] += f(2x)",
    "b[i] -= f(3x)",
    "vs[i] += vec3(f(x), 2x, 0)",
    "v[1] = f(5x)",
    "v[2] += f(7x)",
    "v.x = f(11x)",
    "m[0, 1] = f(13x)",
    "m[1] = vec2(f(x), 17x)",
    "m[1, 0] -= f(19x)",
]


@wp.kernel
def inplace(
    calls: wp.array(dtype=wp.int32),
    x: wp.array(dtype=float),
    a: wp.array(dtype=float),
    b: wp.array(dtype=float),
    vs: wp.array(dtype=wp.vec3),
    ov: wp.array(dtype=wp.vec3),
    om: wp.array(dtype=wp.mat22),
):
    i = wp.tid()
    a[i] += counted(calls, 0, 2.0 * x[i])
    b[i] -= counted(calls, 1, 3.0 * x[i])
    vs[i] += wp.vec3(counted(calls, 2, x[i]), 2.0 * x[i], 0.0)
    v = wp.vec3(1.0, 2.0, 3.0)
    v[1] = counted(calls, 3, 5.0 * x[i])
    v[2] += counted(calls, 4, 7.0 * x[i])
    v.x = counted(calls, 5, 11.0 * x[i])
    ov[i] = v
    m = wp.mat22(1.0, 2.0, 3.0, 4.0)
    m[0, 1] = counted(calls, 6, 13.0 * x[i])
    m[1] = wp.vec2(counted(calls, 7, x[i]), 17.0 * x[i])
    m[1, 0] -= counted(calls, 8, 19.0 * x[i])
    om[i] = m


def run_corpus() -> dict:
    """Values, gradients and the forward pass's calls per statement."""
    wp.init()  # Warp 1.2.0 makes no array before it
    arrays = {
        "x": cpu([1.0, 2.0]),
        "a": cpu([10.0, 20.0]),
        "b": cpu([30.0, 40.0]),
        "vs": cpu(np.ones((2, 3)), wp.vec3),
        "ov": cpu(np.zeros((2, 3)), wp.vec3),
        "om": cpu(np.zeros((2, 2, 2)), wp.mat22),
    }
    outputs = [array for name, array in arrays.items() if name != "x"]
    forward = launch_taped(inplace, len(STATEMENTS), list(arrays.values()), outputs)
    return {
        "calls": dict(zip(STATEMENTS, forward)),
        "values": {name: array.numpy().tolist() for name, array in arrays.items()},
        "gradients": {name: array.grad.numpy().tolist() for name, array in arrays.items()},
    }


# What 1.4.0 and 1.4.1 give, per thread: x's gradient through every output, and the in-place arrays' own.
FIXED = {
    "x": [2.0 - 3.0 + 1.0 + 2.0 + 5.0 + 7.0 + 11.0 + 13.0 + 1.0 + 17.0 - 19.0] * 2,
    "a": [1.0, 1.0],
    "b": [1.0, 1.0],
    "vs": [[1.0, 1.0, 1.0]] * 2,
}


def gradients(outcomes: dict) -> dict:
    return {name: outcomes["gradients"][name] for name in FIXED}


@GATE.ends_only
def test_needed_in_place_gradients_are_wrong_without_gpushim():
    outcomes, state = corpus_in_fresh_python(__name__, patch, "")
    assert state == "inactive"
    found = gradients(outcomes)
    assert found["a"] == found["b"] == [2.0, 2.0]  # the element's gradient, added back by the load
    assert found["vs"] == [[2.0, 2.0, 2.0]] * 2
    assert found["x"] == [2.0 - 3.0 + 1.0 + 2.0] * 2  # the component writes give nothing


@GATE.ends_only
def test_effective_with_gpushim_imported_before_warp_each_right_side_evaluated_once():
    outcomes, state = corpus_in_fresh_python(__name__, patch, "import gpushim.auto")
    assert state == "applied"
    assert gradients(outcomes) == FIXED
    assert outcomes["calls"] == dict.fromkeys(STATEMENTS, 2)  # two threads, once each


SCRIPT = """
import sys
import numpy as np
import warp

warp.config.quiet = False  # Warp says whether it compiled the module or found it in the cache


@warp.kernel
def component(x: warp.array(dtype=float), z: warp.array(dtype=float)):
    i = warp.tid()
    v = warp.vec3(0.0, 0.0, 0.0)
    v[1] = 5.0 * x[i]
    z[i] = v[1]


KERNEL = component


def run():
    warp.init()  # Warp 1.2.0 makes no array before it
    x = warp.array(np.array([1.0], dtype=np.float32), device="cpu", requires_grad=True)
    z = warp.zeros(1, dtype=float, device="cpu", requires_grad=True)
    tape = warp.Tape()
    with tape:
        warp.launch(component, dim=1, inputs=[x, z], device="cpu")
    tape.backward(grads={z: warp.array(np.ones(1, dtype=np.float32), device="cpu")})
    print("@@values", x.grad.numpy().tolist(), flush=True)
"""
DROPPED, FIXED_GRAD = "[0.0]", "[5.0]"


@pytest.fixture(scope="module")
def cache_script(tmp_path_factory):
    return kernel_cache(tmp_path_factory.mktemp("inplace_adjoints"), SCRIPT)


@GATE.ends_only
def test_a_kernel_built_by_an_earlier_process_without_gpushim_is_not_reused(cache_script):
    assert_builds_kept_apart(cache_script, DROPPED, FIXED_GRAD)


@GATE.ends_only
@pytest.mark.skipif(
    Version(GATE.release[1]) < Version("1.3"),
    reason="Warp up to 1.2 does not say whether each launch compiled its module or found it in the cache",
)
def test_a_kernel_built_in_this_process_before_gpushim_patch_is_rebuilt(cache_script):
    assert_rebuilt_in_process(cache_script, DROPPED, FIXED_GRAD)


@GATE.ends_only
def test_the_cuda_build_compiles_the_corrected_module_with_nvrtc(gpushim_patched):
    assert_compiles_for_cuda(wp, inplace, patch)


@GATE.unaffected_only
def test_harmless_outside_the_range_nothing_of_it_is_in_place(gpushim_patched):
    """Warp's generators may be other patches' wrappers (from 1.4.0), not its."""
    assert gpushim_patched.registry().journal(patch.id) is None


@GATE.recorded_only
@pytest.mark.skipif(GATE.affected and not GATE.at_an_end, reason="recorded on the ends of the range")
def test_faithful_corpus_matches_the_fixed_release():
    """Recorded patched on the ends of the range and unpatched on 1.4.1; the matrix compares the files.

    Without the calls: 1.4.1 runs those of ``v[2] += f()`` and ``m[1, 0] -= f()`` twice
    (warp.augassign_single_evaluation), the patched releases once.
    """
    outcomes = record_corpus(patch, lambda: {key: found for key, found in run_corpus().items() if key != "calls"})
    assert gradients(outcomes) == FIXED
