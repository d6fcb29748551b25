"""warp.float64_constants (NVIDIA/warp#485) and warp.float64_constant_sign (NVIDIA/warp#1540).

Both give 1.15.0's code for 64-bit constants, on 1.0.0-1.12.0 and on
1.12.1-1.14.x, so they share one corpus: one kernel, in one Warp module, built
once per kernel cache.  No string annotations (no ``from __future__ import
annotations``): Warp before 1.3 evaluates none.  The kernel-cache tests run a
small script in fresh interpreters sharing one cache directory of their own
(``tests.warp.kernel_cache``).
"""

import json
import math
from pathlib import Path

import pytest
from packaging.version import Version

from gpushim.patches.warp.float64_constant_sign import patch as sign_patch
from gpushim.patches.warp.float64_constants import patch as constants_patch
from tests.support import Gate, gate, record_corpus, run_python
from tests.warp.kernel_cache import assert_builds_kept_apart, assert_rebuilt_in_process, kernel_cache
from tests.warp.nvrtc import assert_generates_other_cuda_that_compiles

CONSTANTS, SIGN = gate(constants_patch), gate(sign_patch)
AFFECTED = constants_patch if CONSTANTS.affected else sign_patch if SIGN.affected else None
AFFECTED_RELEASE = CONSTANTS.release[1]
# The proofs run at the ends of each patch's range; in between, the contract checks the patch applies.
ends_only = pytest.mark.skipif(
    not (CONSTANTS.at_an_end or SIGN.at_an_end), reason="not the lowest or highest affected release of the matrix"
)

import warp  # noqa: E402

warp.config.quiet = True

ROOT = Path(__file__).resolve().parents[2]

TAU = warp.constant(warp.float64(2.0 * math.pi))
SEVEN = warp.constant(warp.int64(7))


@warp.kernel
def constants(
    x: warp.array(dtype=warp.float64),
    i: warp.array(dtype=warp.int64),
    f: warp.array(dtype=warp.float64),
    n: warp.array(dtype=warp.int64),
    u: warp.array(dtype=warp.uint64),
    v: warp.array(dtype=warp.vec3d),
    m: warp.array(dtype=warp.mat22d),
):
    f[0] = warp.float64(warp.PI)
    f[1] = warp.float64(0.1)
    f[2] = warp.float64(1e-300)
    f[3] = warp.float64(-0.1)
    f[4] = -TAU * x[0]
    f[5] = TAU * -x[0]
    f[6] = -warp.float64(0.1) * x[0]
    f[7] = warp.float64(9007199254740991)
    f[8] = warp.float64(-warp.inf)
    f[9] = warp.abs(-TAU)
    f[10] = warp.float64(TAU)
    f[11] = warp.sqrt(TAU)
    f[12] = -TAU / x[0]
    f[13] = warp.float64(0.1) * warp.float64(3.0)
    n[0] = warp.int64(-9223372036854775807)
    n[1] = -SEVEN * i[0]
    n[2] = warp.int64(5000000000)
    u[0] = warp.uint64(0xFF51AFD7ED558CCD)
    v[0] = warp.vec3d(warp.float64(0.1), warp.float64(warp.PI), warp.float64(1e-300))
    m[0] = warp.mat22d(warp.float64(0.1), warp.float64(-0.1), TAU, -TAU)


def run_corpus() -> dict:
    """Every output of the corpus kernel, floats by ``repr`` so that each bit counts."""
    warp.init()  # Warp before 1.2 makes no array before it
    x = warp.array([3.0], dtype=warp.float64, device="cpu")
    i = warp.array([2], dtype=warp.int64, device="cpu")
    f = warp.zeros(14, dtype=warp.float64, device="cpu")
    n = warp.zeros(3, dtype=warp.int64, device="cpu")
    u = warp.zeros(1, dtype=warp.uint64, device="cpu")
    v = warp.zeros(1, dtype=warp.vec3d, device="cpu")
    m = warp.zeros(1, dtype=warp.mat22d, device="cpu")
    warp.launch(constants, dim=1, inputs=[x, i, f, n, u, v, m], device="cpu")
    return {
        "f": [repr(value) for value in f.numpy().tolist()],
        "n": n.numpy().tolist(),
        "u": u.numpy().tolist(),
        "v": [repr(value) for value in v.numpy()[0].tolist()],
        "m": [repr(value) for value in m.numpy()[0].ravel().tolist()],
    }


FIXED = {
    "f": [
        repr(math.pi),
        "0.1",
        "1e-300",
        "-0.1",
        repr(-2 * math.pi * 3),
        repr(-2 * math.pi * 3),
        "-0.30000000000000004",
        "9007199254740991.0",
        "-inf",
        repr(2 * math.pi),
        repr(2 * math.pi),
        repr(math.sqrt(2 * math.pi)),
        repr(-2 * math.pi / 3),
        "0.30000000000000004",
    ],
    "n": [-9223372036854775807, -14, 5000000000],
    "u": [0xFF51AFD7ED558CCD],
    "v": ["0.1", repr(math.pi), "1e-300"],
    "m": ["0.1", "-0.1", repr(2 * math.pi), repr(-2 * math.pi)],
}
# What each bug changes, as (place, index): the value without the patch.
ROUNDED = {
    ("f", 0): "3.1415927410125732",
    ("f", 1): "0.10000000149011612",
    ("f", 2): "0.0",
    ("f", 3): "-0.10000000149011612",
    ("f", 6): "-0.30000000447034836",
    ("f", 7): "-1.0",  # 2**53 - 1 as an int32
    ("f", 13): "0.30000000447034836",
    ("n", 0): 1,
    ("n", 2): 705032704,
    ("u", 0): 0xFFFFFFFFED558CCD,
    ("v", 0): "0.10000000149011612",
    ("v", 1): "3.1415927410125732",
    ("v", 2): "0.0",
    ("m", 0): "0.10000000149011612",
    ("m", 1): "-0.10000000149011612",
}
SIGN_LOST = {("f", 4): repr(2 * math.pi * 3), ("n", 1): 14}


def corpus_in_fresh_python(prelude: str, after: str = "") -> tuple[dict, dict]:
    """The corpus in a fresh interpreter, ``prelude`` before Warp's import and ``after`` it: (outcomes, states)."""
    finished = corpus_process(prelude, after)
    assert finished.returncode == 0, finished.stderr
    (line,) = [line for line in finished.stdout.splitlines() if line.startswith("@@")]
    return tuple(json.loads(line[2:]))


def corpus_process(prelude: str, after: str = ""):
    code = "\n".join(
        [
            "import sys, json",
            f"sys.path.insert(0, {str(ROOT)!r})",
            prelude,
            "import warp",
            after,
            "from tests.warp import test_float64_constants as corpus",
            "outcomes = corpus.run_corpus()",
            "import gpushim",
            f"states = {{id: gpushim.record(id)['state'] for id in {[constants_patch.id, sign_patch.id]!r}}}",
            "print('@@' + json.dumps([outcomes, states]))",
        ]
    )
    return run_python(code)


def expected_without_patch() -> dict:
    """1.15.0's outcomes, with the places the affected release's bug changes."""
    outcomes = json.loads(json.dumps(FIXED))
    for (place, index), value in (ROUNDED if CONSTANTS.affected else SIGN_LOST).items():
        outcomes[place][index] = value
    return outcomes


# From 1.6.0 to 1.11.x, -TAU folds into a float32 constant, and -TAU * x with a float64 x does not compile.
FOLDS_TO_FLOAT32 = CONSTANTS.affected and Version("1.6.0") <= Version(AFFECTED_RELEASE) < Version("1.12.0")


@ends_only
@pytest.mark.skipif(not FOLDS_TO_FLOAT32, reason="-TAU is not folded into a float32 constant here")
def test_needed_negating_a_float64_constant_gives_a_float32_one_without_gpushim():
    finished = corpus_process(prelude="")
    assert finished.returncode != 0
    assert "f[4] = -TAU * x[0]" in finished.stderr  # the line Warp cannot compile


@ends_only
@pytest.mark.skipif(FOLDS_TO_FLOAT32, reason="the corpus does not compile without gpushim here")
def test_needed_the_bug_shows_without_gpushim():
    outcomes, states = corpus_in_fresh_python(prelude="")
    assert states[AFFECTED.id] == "inactive"
    assert outcomes == expected_without_patch()


@ends_only
@pytest.mark.parametrize("order", ["before", "after"])
def test_effective_with_gpushim_auto_before_or_after_warp(order):
    prelude, after = ("import gpushim.auto", "") if order == "before" else ("", "import gpushim.auto")
    outcomes, states = corpus_in_fresh_python(prelude, after)
    assert states[AFFECTED.id] == "applied"
    assert outcomes == FIXED


@ends_only
def test_the_cuda_build_compiles_the_patched_code_with_nvrtc():
    assert_generates_other_cuda_that_compiles(warp, constants, AFFECTED)


@pytest.mark.skipif(CONSTANTS.affected or SIGN.affected, reason="a patch applies here")
def test_harmless_outside_both_ranges_nothing_applies():
    outcomes, states = corpus_in_fresh_python(prelude="import gpushim.auto")
    assert set(states.values()) == {"not-affected"}
    assert outcomes == FIXED  # from 1.15.0 on, both fixes are released


@pytest.mark.parametrize("patch", [constants_patch, sign_patch], ids=lambda patch: patch.id)
def test_faithful_corpus_matches_1_15_0(patch):
    """Recorded patched at each end of the range and unpatched on 1.15.0; the matrix compares the files."""
    found = Gate(patch)
    if not found.records:
        pytest.skip(f"{' '.join(found.release)} is neither an end of the range of {patch.id} nor its reference")
    assert record_corpus(patch, run_corpus) == FIXED


RETYPED = """
import gpushim.auto
import warp

warp.config.quiet = True
warp.init()


@warp.kernel
def reuse(out: warp.array(dtype=warp.float64), half: warp.array(dtype=float)):
    c = 0.1
    out[0] = warp.float64(c)
    half[0] = c * 2.0  # 1.15.0 has retyped c to float64 by now, and fails to compile this


out, half = warp.zeros(1, dtype=warp.float64, device="cpu"), warp.zeros(1, dtype=float, device="cpu")
warp.launch(reuse, dim=1, inputs=[out, half], device="cpu")
print("@@", repr(float(out.numpy()[0])), repr(float(half.numpy()[0])))
"""


@CONSTANTS.ends_only
def test_the_patch_does_not_bring_1_15_0s_retyping_of_a_constant_variable(tmp_path):
    script = tmp_path / "reuse.py"  # Warp compiles no kernel defined in a string
    script.write_text(RETYPED)
    finished = run_python(f"import runpy; runpy.run_path({str(script)!r}, run_name='__main__')")
    assert finished.returncode == 0, finished.stderr
    assert "@@ 0.1 0.20000000298023224" in finished.stdout.splitlines()


SCRIPT = """
import sys
import warp

warp.config.quiet = False  # Warp says whether it compiled the module or found it in the cache
TWO = warp.constant(warp.float64(2.0))


@warp.kernel
def tenth(out: warp.array(dtype=warp.float64)):
    out[0] = warp.float64(0.1)
    out[1] = warp.float64(-TWO)


KERNEL = tenth


def run():
    warp.init()  # Warp before 1.2 makes no array before it
    out = warp.zeros(2, dtype=warp.float64, device="cpu")
    warp.launch(tenth, dim=1, inputs=[out], device="cpu")
    print("@@values", repr(out.numpy().tolist()), flush=True)
"""


@pytest.fixture(scope="module")
def cache_script(tmp_path_factory):
    return kernel_cache(tmp_path_factory.mktemp("float64"), SCRIPT)


def script_values(fixed: bool) -> str:
    """What the script prints: ``wp.float64(0.1)`` and ``wp.float64(-TWO)``, as the release or 1.15.0 computes them."""
    if fixed:
        return "[0.1, -2.0]"
    return "[0.10000000149011612, -2.0]" if CONSTANTS.affected else "[0.1, 2.0]"


@ends_only
def test_a_kernel_cache_shared_with_unpatched_processes_never_serves_the_other_build(cache_script):
    assert_builds_kept_apart(cache_script, script_values(fixed=False), script_values(fixed=True))


@ends_only
@pytest.mark.skipif(
    Version(AFFECTED_RELEASE) < Version("1.4.0"),
    reason="before 1.4.0 a module loaded before gpushim.patch() keeps its build (not backported)",
)
def test_a_kernel_built_in_this_process_before_gpushim_patch_is_rebuilt(cache_script):
    assert_rebuilt_in_process(cache_script, script_values(fixed=False), script_values(fixed=True))
