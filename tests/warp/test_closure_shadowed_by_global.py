"""warp.closure_shadowed_by_global: a kernel reads a global instead of its closure's variable of that name.

Kernels run on the CPU.  Each case is a kernel defined inside a function of
this module, defined anew at every run of the corpus so that Warp hashes its
module again; the cases that build are one Warp module, each case Warp
refuses to build a module of its own.  For every case the corpus records the
value the kernel writes (or the exception) and the constants Warp hashes for
it.  The kernel-cache tests run a small script in fresh interpreters sharing
one cache directory of their own.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from gpushim.patches.warp.closure_shadowed_by_global import patch
from tests.support import corpus_in_fresh_python, gate, record_corpus, run_python
from tests.warp.nvrtc import assert_generates_other_cuda_that_compiles

GATE = gate(patch)

import warp

warp.config.quiet = True


ROOT = Path(__file__).resolve().parents[2]

# The globals the closures below shadow, or not.
SHADOWED_INT = warp.constant(17)
SHADOWED_FLOAT = warp.constant(1.5)
SHADOWED_BOOL = warp.constant(False)
SHADOWED_VEC = warp.constant(warp.vec3(1.0, 2.0, 3.0))
GLOBAL_ONLY = warp.constant(7)
GLOBAL_NONE = None
EMPTIED_WITH_GLOBAL = warp.constant(17)
CLOSURE_NONE = warp.constant(17)


class Consts:
    VALUE = warp.constant(1)


@warp.func
def helper(x: int):
    return x + 1


def int_closure():
    SHADOWED_INT = warp.constant(42)

    def closure_int(out: warp.array(dtype=int)):
        out[0] = SHADOWED_INT

    return closure_int, int


def float_closure():
    SHADOWED_FLOAT = warp.constant(2.5)

    def closure_float(out: warp.array(dtype=float)):
        out[0] = SHADOWED_FLOAT * 2.0

    return closure_float, float


def bool_closure():
    SHADOWED_BOOL = warp.constant(True)

    def closure_bool(out: warp.array(dtype=int)):
        if SHADOWED_BOOL:
            out[0] = 1
        else:
            out[0] = 2

    return closure_bool, int


def vec_closure():
    SHADOWED_VEC = warp.constant(warp.vec3(4.0, 5.0, 6.0))

    def closure_vec(out: warp.array(dtype=warp.vec3)):
        out[0] = SHADOWED_VEC

    return closure_vec, warp.vec3


def closure_only():
    CLOSURE_ONLY = warp.constant(5)

    def closure_alone(out: warp.array(dtype=int)):
        out[0] = CLOSURE_ONLY

    return closure_alone, int


def global_only():
    def global_alone(out: warp.array(dtype=int)):
        out[0] = GLOBAL_ONLY

    return global_alone, int


def over_a_none_global():
    GLOBAL_NONE = warp.constant(9)

    def closure_over_none(out: warp.array(dtype=int)):
        out[0] = GLOBAL_NONE

    return closure_over_none, int


def class_closure():
    class Consts:
        VALUE = warp.constant(3)

    def closure_class(out: warp.array(dtype=int)):
        out[0] = Consts.VALUE

    return closure_class, int


def function_closure():
    @warp.func
    def helper(x: int):
        return x * 10

    def closure_function(out: warp.array(dtype=int)):
        out[0] = helper(2)

    return closure_function, int


def func_closure():
    SHADOWED_INT = warp.constant(42)

    @warp.func
    def read_closure(x: int):
        return x + SHADOWED_INT

    def closure_in_func(out: warp.array(dtype=int)):
        out[0] = read_closure(1)

    return closure_in_func, int


def mixed_closure():
    SHADOWED_INT = warp.constant(42)

    def closure_mixed(out: warp.array(dtype=int)):
        local = GLOBAL_ONLY
        out[0] = SHADOWED_INT * 100 + local

    return closure_mixed, int


def emptied_with_global():
    EMPTIED_WITH_GLOBAL = warp.constant(42)

    def closure_emptied(out: warp.array(dtype=int)):
        out[0] = EMPTIED_WITH_GLOBAL  # noqa: F821 (deleted below: an empty cell)

    del EMPTIED_WITH_GLOBAL
    return closure_emptied, int


def emptied_without_global():
    EMPTIED = warp.constant(42)

    def closure_emptied_alone(out: warp.array(dtype=int)):
        out[0] = EMPTIED  # noqa: F821 (deleted below: an empty cell)

    del EMPTIED
    return closure_emptied_alone, int


def none_closure():
    CLOSURE_NONE = None

    def closure_none(out: warp.array(dtype=int)):
        out[0] = CLOSURE_NONE

    return closure_none, int


BUILDING = {
    "int constant shadowing an int global": int_closure,
    "float constant shadowing a float global": float_closure,
    "bool constant shadowing a bool global": bool_closure,
    "vec3 constant shadowing a vec3 global": vec_closure,
    "constant of the closure alone": closure_only,
    "global alone": global_only,
    "constant shadowing a global that is None": over_a_none_global,
    "class attribute, class shadowing a global class": class_closure,
    "wp.func shadowing a global wp.func, called": function_closure,
    "wp.func reading its own closure's constant": func_closure,
    "shadowing constant beside a global": mixed_closure,
}
# Cases some release refuses to build, each in a Warp module of its own.
ALONE = {
    "emptied closure cell, global of the name": emptied_with_global,
    "emptied closure cell, no global": emptied_without_global,
    "None in the closure, a global of the name": none_closure,
}


def defined(factory, module: str):
    """The case's kernel, defined now in the Warp module ``module``, and the dtype it writes."""
    func, dtype = factory()
    func.__module__ = module
    return warp.kernel(func), dtype


def launched(kernel, dtype) -> dict:
    out = warp.zeros(1, dtype=dtype, device="cpu")
    try:
        warp.launch(kernel, dim=1, inputs=[out], device="cpu")
    except Exception as error:
        return {"raises": f"{type(error).__name__}: {error}"}
    return {"writes": out.numpy().tolist()[0]}


def hashed_constants(kernel) -> dict:
    """The constants Warp hashes for the kernel's module on its behalf (from Warp 1.2)."""
    references = getattr(kernel.adj, "get_constant_references", None)
    if references is None:
        return {}
    try:
        return {name: f"{type(value).__name__} {value}" for name, value in sorted(references().items())}
    except Exception as error:
        return {"raises": f"{type(error).__name__}: {error}"}


def run_corpus() -> dict:
    kernels = {name: defined(factory, f"{__name__}.corpus") for name, factory in BUILDING.items()}
    kernels.update(
        {name: defined(factory, f"{__name__}.alone{index}") for index, (name, factory) in enumerate(ALONE.items())}
    )
    return {
        name: {**launched(kernel, dtype), "hashed constants": hashed_constants(kernel)}
        for name, (kernel, dtype) in kernels.items()
    }


# Cases whose outcome tells the bug from the fix: (1.3.1 unpatched, 1.3.2); a str is the exception's type.
TELLING = {
    "emptied closure cell, global of the name": ("ValueError", 17),
    "emptied closure cell, no global": ("ValueError", "WarpCodegenKeyError"),
    "None in the closure, a global of the name": (17, "WarpCodegenKeyError"),
    "int constant shadowing an int global": (17, 42),
    "float constant shadowing a float global": (3.0, 5.0),
    "bool constant shadowing a bool global": (2, 1),
    "vec3 constant shadowing a vec3 global": ([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]),
    "class attribute, class shadowing a global class": (1, 3),
    "wp.func reading its own closure's constant": (18, 43),
    "shadowing constant beside a global": (1707, 4207),
}
# Cases every release gets right.
UNTOUCHED = {
    "constant of the closure alone": 5,
    "global alone": 7,
    "constant shadowing a global that is None": 9,
    "wp.func shadowing a global wp.func, called": 20,
}


def writes(outcomes: dict, names) -> dict:
    """What each case wrote, or the type of the exception it raised."""
    return {
        name: outcomes[name]["writes"] if "writes" in outcomes[name] else outcomes[name]["raises"].partition(":")[0]
        for name in names
    }


@GATE.affected_only
def test_needed_kernels_read_the_global_a_closure_shadows_without_gpushim():
    outcomes, state = corpus_in_fresh_python(__name__, patch, "")
    assert state == "inactive"
    assert writes(outcomes, TELLING) == {name: released for name, (released, _) in TELLING.items()}
    assert writes(outcomes, UNTOUCHED) == UNTOUCHED


@GATE.affected_only
def test_effective_with_gpushim_imported_before_warp():
    outcomes, state = corpus_in_fresh_python(__name__, patch, "import gpushim.auto")
    assert state == "applied"
    assert writes(outcomes, TELLING) == {name: fixed for name, (_, fixed) in TELLING.items()}
    assert writes(outcomes, UNTOUCHED) == UNTOUCHED


@GATE.ends_only
def test_the_cuda_build_compiles_the_patched_code_with_nvrtc():
    assert_generates_other_cuda_that_compiles(warp, warp.kernel(int_closure()[0]), patch)


@GATE.recorded_only
def test_faithful_corpus_matches_the_fixed_release():
    """Recorded patched on the affected releases and unpatched on 1.3.2; the matrix compares the files."""
    outcomes = record_corpus(patch, run_corpus)
    assert writes(outcomes, TELLING) == {name: fixed for name, (_, fixed) in TELLING.items()}
    assert writes(outcomes, UNTOUCHED) == UNTOUCHED
    assert outcomes["int constant shadowing an int global"]["hashed constants"] == {"SHADOWED_INT": "int 42"}


SCRIPT = """
import sys
import numpy as np
import warp

warp.config.quiet = False  # Warp says whether it compiled the module or found it in the cache
SHADOWED = warp.constant(17)


def closing_over(value):
    SHADOWED = warp.constant(value)

    @warp.kernel
    def write(out: warp.array(dtype=int)):
        out[0] = SHADOWED

    return write


if "gpushim" in sys.argv:
    import gpushim.auto
out = warp.zeros(1, dtype=int, device="cpu")
warp.launch(closing_over(int(sys.argv[1])), dim=1, inputs=[out], device="cpu")
print("@@value", out.numpy()[0], flush=True)
"""


@pytest.fixture(scope="module")
def cache_script(tmp_path_factory):
    """A kernel script and a kernel cache directory of its own, shared by the cache tests."""
    folder = tmp_path_factory.mktemp("closure")
    script = folder / "closure.py"
    script.write_text(textwrap.dedent(SCRIPT))
    cache = folder / "kernels"
    cache.mkdir()

    def run(*arguments: str) -> tuple[str, str]:
        """(the value written, whether Warp compiled the module or found it in the cache)."""
        finished = run_python(
            f"import sys; sys.argv = {[str(script), *arguments]!r}; "
            f"sys.path.insert(0, {str(ROOT)!r}); exec(compile(open({str(script)!r}).read(), {str(script)!r}, 'exec'))",
            env={"WARP_CACHE_PATH": str(cache)},
        )
        assert finished.returncode == 0, finished.stderr
        lines = finished.stdout.splitlines()
        loaded = next(line for line in lines if line.startswith("Module __main__"))
        value = next(line for line in lines if line.startswith("@@value"))
        return value.split()[1], "compiled" if "(compiled)" in loaded else "cached"

    run.cache = cache
    return run


@GATE.affected_only
def test_a_kernel_built_by_an_earlier_process_without_gpushim_is_not_reused(cache_script):
    assert cache_script("42") == ("17", "compiled")
    assert cache_script("42", "gpushim") == ("42", "compiled")
    # both builds stay in the cache, apart, and each is found again by its own kind of process
    assert cache_script("42") == ("17", "cached")
    assert cache_script("42", "gpushim") == ("42", "cached")
    assert len(list(cache_script.cache.glob("wp___main___*"))) == 2


@GATE.affected_only
def test_a_new_value_in_the_closure_is_built_anew_not_found_in_the_cache(cache_script):
    """The constants Warp hashes are the closure's, as in 1.3.2; unpatched, Warp hashed the global."""
    assert cache_script("43", "gpushim") == ("43", "compiled")
    assert cache_script("44", "gpushim") == ("44", "compiled")
    assert cache_script("43", "gpushim") == ("43", "cached")


@GATE.affected_only
def test_code_generation_dispatches_through_node_visitors():
    """Warp evaluates names through the item of ``Adjoint.node_visitors``: the patch replaces it too."""
    import ast

    from tests.support import applied

    with applied(patch):
        Adjoint = warp.codegen.Adjoint
        assert Adjoint.node_visitors[ast.Name] is vars(Adjoint)["emit_Name"]
        assert Adjoint.node_visitors[ast.Name].__wrapped__ is not None
