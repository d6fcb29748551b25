"""warp.component_write_adjoint: writes to a component of an array element drop their gradient (NVIDIA/warp GH-583).

The corpus kernels live here, in one Warp module, so that each release builds
it once per kernel cache; they run on the CPU under a tape, seeded with ones.
The writes some releases reject are kernels of Warp modules of their own,
whose errors are recorded.  The kernel-cache tests run a small script in fresh interpreters sharing one
cache directory of their own.  No ``from __future__ import annotations``
here: Warp reads the kernels' annotations as types.
"""

import json
import re
import textwrap
from pathlib import Path

import pytest

import gpushim
from gpushim.patches.warp.component_write_adjoint import patch
from tests.support import gate, record_corpus, run_python
from tests.warp.nvrtc import assert_generates_other_cuda_that_compiles

GATE = gate(patch)

import numpy as np  # noqa: E402
import warp as wp  # noqa: E402

wp.config.quiet = True

ROOT = Path(__file__).resolve().parents[2]


@wp.struct
class Inner:
    m: wp.mat22


@wp.struct
class Body:
    a: float
    v: wp.vec3
    inner: Inner


@wp.kernel
def composites(
    x: wp.array(dtype=float),
    v: wp.array(dtype=wp.vec3),
    q: wp.array(dtype=wp.quat),
):
    i = wp.tid()
    v[i].y = 2.0 * x[i]
    v[i][2] = x[i] * x[i]
    q[i].w = 3.0 * x[i]


@wp.kernel
def struct_fields(x: wp.array(dtype=float), b: wp.array(dtype=Body)):
    i = wp.tid()
    b[i].a = 6.0 * x[i]
    b[i].v.x = 7.0 * x[i]


@wp.kernel
def grid(x: wp.array2d(dtype=float), v: wp.array2d(dtype=wp.vec3)):
    i, j = wp.tid()
    v[i, j].z = 9.0 * x[i, j]
    v[i][j].x = x[i, j]  # the right side is a reference into x


@wp.kernel
def released(x: wp.array(dtype=float), v: wp.array(dtype=wp.vec3)):
    """Writes 1.14.0 leaves as they were: augmented, and through a local copy of the element."""
    i = wp.tid()
    v[i].y += 2.0 * x[i]
    e = v[i]
    e.z = 3.0 * x[i]
    v[i] = e


@wp.kernel
def overwrites(x: wp.array(dtype=float), whole: wp.array(dtype=wp.vec3), part: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    whole[i] = wp.vec3(x[i], x[i], x[i])
    part[i].x = x[i]


def matrix_element(x: wp.array(dtype=float), m: wp.array(dtype=wp.mat22)):
    i = wp.tid()
    m[i][0, 1] = 4.0 * x[i]  # 1.6.0 rejects it: no indexref of a matrix element


def nested_matrix_element(x: wp.array(dtype=float), b: wp.array(dtype=Body)):
    i = wp.tid()
    b[i].inner.m[1, 0] = 8.0 * x[i]  # rejected as the last one is


def transform_component(x: wp.array(dtype=float), t: wp.array(dtype=wp.transform)):
    i = wp.tid()
    t[i][1] = 5.0 * x[i]  # 1.6.0 rejects it: "Can only subscript assign array, vector, ..."


def transform_translation(x: wp.array(dtype=float), t: wp.array(dtype=wp.transform)):
    i = wp.tid()
    t[i].p = wp.vec3(x[i], 5.0 * x[i], 0.0)  # every release before 1.14.0 rejects it


def integer_into_float(x: wp.array(dtype=float), v: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    v[i].x = 1  # not the slot's type: the release's own code rejects it, in 1.14.0 too


def cpu(data, dtype=float, **options):
    return wp.array(data, dtype=dtype, device="cpu", **options)


def ones_like(array):
    if array.dtype is Body:
        body = Body()
        body.a, body.v, body.inner.m = 1.0, wp.vec3(1.0, 1.0, 1.0), wp.mat22(1.0, 1.0, 1.0, 1.0)
        return cpu([body] * array.shape[0], Body)
    return cpu(np.ones_like(array.numpy()), array.dtype)


def plain(value):
    """NumPy's values, structured ones included, as lists and numbers."""
    if isinstance(value, (np.ndarray, np.generic)):
        return plain(value.tolist())
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return value


def taped(kernel, shape, inputs: dict) -> dict:
    """``kernel`` run on ``inputs`` under a tape, the outputs' gradients seeded with ones: x's gradient, all values."""
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=shape, inputs=list(inputs.values()), device="cpu")
    tape.backward(grads={array: ones_like(array) for name, array in inputs.items() if name != "x"})
    return {"x.grad": plain(inputs["x"].grad.numpy()), **{name: plain(array.numpy()) for name, array in inputs.items()}}


def attempted(function, dtype) -> dict:
    """``function`` as a kernel of a Warp module of its own, taped as the corpus is, or the error it raises."""
    function.__module__ = f"{__name__}.{function.__name__}"  # Warp's module is the function's
    kernel = wp.kernel(function)
    inputs = {
        "x": cpu([1.0, 2.0], requires_grad=True),
        "out": wp.zeros(2, dtype=dtype, device="cpu", requires_grad=True),
    }
    try:
        return taped(kernel, 2, inputs)
    except Exception as error:
        message = str(error).splitlines()[-1].replace("warp._src.", "warp.")  # the layout's, not the patch's
        return {"raises": [type(error).__name__, message]}


def slot_accessors() -> list:
    """The slots the corpus module's generated CPU code writes through ``adj_array_store_slot``."""
    module = composites.module
    source = getattr(wp, "_src", wp).context.ModuleBuilder(module, module.options).codegen("cpu")
    found = re.findall(r"wp::adj_array_store_slot\(.*?return _e(.*?); \}", source)
    return sorted(re.sub(r"var_\w+", "var", access) for access in found)


def run_corpus() -> dict:
    """Values and gradients for each kernel of the corpus, and the slot writes it generates.

    The module is hashed anew first, so that it is built as the patch's current state has it.
    """
    wp.init()
    composites.module.mark_modified()
    x = [1.0, 2.0]

    def composite_inputs():
        return {
            "x": cpu(x, requires_grad=True),
            "v": wp.zeros(2, dtype=wp.vec3, device="cpu", requires_grad=True),
            "q": wp.zeros(2, dtype=wp.quat, device="cpu", requires_grad=True),
        }

    body = {"x": cpu(x, requires_grad=True), "b": wp.zeros(2, dtype=Body, device="cpu", requires_grad=True)}
    outcomes = {
        "composites": taped(composites, 2, composite_inputs()),
        "struct fields": taped(struct_fields, 2, body),
        "2d arrays": taped(
            grid,
            (2, 2),
            {
                "x": cpu([[1.0, 2.0], [3.0, 4.0]], requires_grad=True),
                "v": wp.zeros((2, 2), dtype=wp.vec3, device="cpu", requires_grad=True),
            },
        ),
        "augmented and local copy": taped(
            released, 2, {"x": cpu(x, requires_grad=True), "v": cpu(np.ones((2, 3)), wp.vec3, requires_grad=True)}
        ),
    }
    whole, part = (wp.zeros(2, dtype=wp.vec3, device="cpu", requires_grad=True) for _ in range(2))
    outcomes["overwrites"] = taped(overwrites, 2, {"x": cpu(x, requires_grad=True), "whole": whole, "part": part})
    # 1.13.0 clears the gradient an element's store overwrites, and 1.14.0 a slot's; 1.10.0 to 1.12.0 keep both
    outcomes["a slot's gradient is kept or cleared as a whole element's is"] = (
        part.grad.numpy()[:, 0].tolist() == whole.grad.numpy()[:, 0].tolist()
    )
    for function, dtype in (
        (matrix_element, wp.mat22),
        (nested_matrix_element, Body),
        (transform_component, wp.transform),
        (transform_translation, wp.transform),
        (integer_into_float, wp.vec3),
    ):
        outcomes[function.__name__] = attempted(function, dtype)
    outcomes["slot writes generated"] = slot_accessors()
    return outcomes


# The gradient of x through each kernel, without the fix (1.10.0 to 1.13.0) and with it (1.14.0).
TELLING = {
    "composites": ([0.0, 0.0], [2.0 + 2.0 + 3.0, 2.0 + 4.0 + 3.0]),
    "struct fields": ([0.0, 0.0], [13.0, 13.0]),
    "2d arrays": ([[0.0, 0.0], [0.0, 0.0]], [[10.0, 10.0], [10.0, 10.0]]),
    "overwrites": ([3.0, 3.0], [4.0, 4.0]),
}


# Building the corpus takes seconds, several times a cell: its tests run on the first and the last release
# the patch applies to (and the reference); the contract's probe runs on every cell.
ENDS = ("1.6.0", "1.13.0")
ends_only = pytest.mark.skipif(
    GATE.release[1] not in ENDS, reason=f"the corpus runs on {' and '.join(ENDS)}, the ends of the patch's range"
)


def gradients(outcomes: dict) -> dict:
    return {case: outcomes[case]["x.grad"] for case in TELLING}


@GATE.affected_only
@ends_only
def test_needed_component_writes_have_no_gradient_without_gpushim():
    assert gpushim.record(patch.id)["state"] == "inactive"
    outcomes = run_corpus()
    assert gradients(outcomes) == {case: dropped for case, (dropped, _) in TELLING.items()}
    assert outcomes["slot writes generated"] == []
    for case in ("matrix_element", "nested_matrix_element", "transform_component", "transform_translation"):
        assert outcomes[case].get("x.grad", [0.0, 0.0]) == [0.0, 0.0]  # where the release builds it


@GATE.affected_only
@ends_only
def test_effective_with_gpushim_auto_imported_before_warp():
    """After Warp's import, the patch is applied by the faithful test below (and the contract's probe)."""
    code = "\n".join(
        [
            "import sys, json",
            f"sys.path.insert(0, {str(ROOT)!r})",
            "import gpushim.auto",
            "from tests.warp import test_component_write_adjoint as corpus",
            "outcomes = corpus.run_corpus()",
            f"print('@@', gpushim.record({patch.id!r})['state'], json.dumps(corpus.gradients(outcomes)))",
        ]
    )
    finished = run_python(code)
    assert finished.returncode == 0, finished.stderr
    state, found = next(line for line in finished.stdout.splitlines() if line.startswith("@@"))[3:].split(" ", 1)
    assert state == "applied"
    assert json.loads(found) == {case: fixed for case, (_, fixed) in TELLING.items()}


SCRIPT = """
import sys
import numpy as np
import warp

warp.config.quiet = False  # Warp says whether it compiled the module or found it in the cache

if "gpushim" in sys.argv:
    import gpushim.auto


@warp.kernel
def component(x: warp.array(dtype=float), y: warp.array(dtype=warp.vec3)):
    i = warp.tid()
    y[i].y = 2.0 * x[i]


x = warp.array(np.array([1.0, 2.0], dtype=np.float32), device="cpu", requires_grad=True)
y = warp.zeros(2, dtype=warp.vec3, device="cpu", requires_grad=True)
tape = warp.Tape()
with tape:
    warp.launch(component, dim=2, inputs=[x, y], device="cpu")
tape.backward(grads={y: warp.array(np.ones((2, 3), dtype=np.float32), dtype=warp.vec3, device="cpu")})
print("@@grad", x.grad.numpy().tolist(), flush=True)
"""


@GATE.affected_only
@ends_only
def test_patched_and_unpatched_processes_sharing_a_kernel_cache_never_reuse_each_others_build(tmp_path):
    script = tmp_path / "component.py"
    script.write_text(textwrap.dedent(SCRIPT))
    cache = tmp_path / "kernels"
    cache.mkdir()

    def run(*arguments: str) -> tuple[str, str]:
        finished = run_python(
            f"import sys; sys.argv = {[str(script), *arguments]!r}; sys.path.insert(0, {str(ROOT)!r}); "
            f"exec(compile(open({str(script)!r}).read(), {str(script)!r}, 'exec'))",
            env={"WARP_CACHE_PATH": str(cache)},
        )
        assert finished.returncode == 0, finished.stderr
        loaded = next(line for line in finished.stdout.splitlines() if line.startswith("Module __main__"))
        grad = next(line for line in finished.stdout.splitlines() if line.startswith("@@grad"))
        return grad[7:], "compiled" if "(compiled)" in loaded else "cached" if "(cached)" in loaded else loaded

    dropped, fixed = "[0.0, 0.0]", "[2.0, 2.0]"
    assert run() == (dropped, "compiled")
    assert run("gpushim") == (fixed, "compiled")
    assert run() == (dropped, "cached")
    assert run("gpushim") == (fixed, "cached")
    # both builds stay in the cache (in a folder per release from 1.13), one with the helper 1.14.0 adds to array.h
    builds = [path for path in cache.rglob("wp___main___*.cpp")]
    assert sorted("adj_array_store_slot" in path.read_text() for path in builds) == [False, True]


@GATE.affected_only
@ends_only
def test_the_cuda_build_compiles_the_patched_code_with_nvrtc():
    assert_generates_other_cuda_that_compiles(wp, composites, patch)


@GATE.recorded_only
@pytest.mark.skipif(GATE.affected and GATE.release[1] not in ENDS, reason=ends_only.kwargs["reason"])
def test_faithful_corpus_matches_the_fixed_release():
    """Recorded patched on the affected releases and unpatched on 1.14.0; the matrix compares the files."""
    outcomes = record_corpus(patch, run_corpus)
    assert gradients(outcomes) == {case: fixed for case, (_, fixed) in TELLING.items()}
    assert outcomes["augmented and local copy"]["x.grad"] == [3.0, 3.0]
    assert outcomes["transform_translation"]["x.grad"] == [6.0, 6.0]
    assert outcomes["matrix_element"]["x.grad"] == [4.0, 4.0]
    assert outcomes["nested_matrix_element"]["x.grad"] == [8.0, 8.0]
    assert outcomes["transform_component"]["x.grad"] == [5.0, 5.0]
    assert outcomes["integer_into_float"]["raises"][0] == "RuntimeError"
