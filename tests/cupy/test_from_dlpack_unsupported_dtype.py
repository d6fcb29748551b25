"""cupy.from_dlpack_unsupported_dtype: ``from_dlpack`` frees a rejected DLPack tensor twice (cupy/cupy#8801).

Everything runs on the CPU: the tensors are hand-made capsules on a CUDA device whose deleter
only counts (tests/cupy/dlpack_capsules.py), so "freed twice" is a number, not a crash, and no
GPU memory is touched.  The expected exceptions below are what CuPy 13.4.0 and 13.4.1 raise,
recorded by running them; ``test_fixed_release_...`` keeps checking that in their cells.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from packaging.version import Version

from gpushim.patches.cupy.from_dlpack_unsupported_dtype import patch
from gpushim.states import APPLIED
from tests import gpu
from tests.gpu import pretend_a_device
from tests.support import answer_in_fresh_python, applied, gate, record_faithful

GATE = gate(patch)
RELEASE = GATE.release

import cupy

from tests.cupy import dlpack_capsules as dc

AFFECTED = GATE.affected
REFERENCE = GATE.reference
# 13.4.x convert exactly as 13.3.0 does; 13.5 words fromDlpack's deprecation anew, 14 converts bfloat16 too.
FIXED_ALIKE = Version(patch.fixed_in) <= Version(RELEASE[1]) < Version("13.5")

ROOT = Path(__file__).resolve().parents[2]
BUILTINS = "builtins."

# Every class of tensor CuPy takes and then rejects, with what 13.4.x raises for it.
REJECTED = {
    "bfloat16": ({"code": dc.KDL_BFLOAT, "bits": 16}, ["NotImplementedError", "CuPy does not support bfloat16 yet"]),
    "dtype code 7": ({"code": 7, "bits": 32}, ["TypeError", "Unsupported dtype. dtype code: 7"]),
    "float32, lanes=4": ({"lanes": 4}, ["ValueError", "vector dtypes (lanes=4) is not supported"]),
    "int128": ({"code": dc.KDL_INT, "bits": 128}, ["TypeError", "int128 is not supported."]),
    "uint1": ({"code": dc.KDL_UINT, "bits": 1}, ["TypeError", "uint1 is not supported."]),
    "float8": ({"code": dc.KDL_FLOAT, "bits": 8}, ["TypeError", "float8 is not supported."]),
    "complex32": ({"code": dc.KDL_COMPLEX, "bits": 32}, ["TypeError", "complex32 is not supported."]),
    "bool16": ({"code": dc.KDL_BOOL, "bits": 16}, ["TypeError", "16-bit bool is not supported"]),
    "byte_offset 2**63": ({"byte_offset": 1 << 63}, ["OverflowError", "Python int too large to convert to C long"]),
    "NULL data, byte_offset 8": ({"data": 0, "byte_offset": 8}, ["AssertionError", ""]),
}
ACCEPTED = {
    (dc.KDL_INT, 8): "int8", (dc.KDL_INT, 16): "int16", (dc.KDL_INT, 32): "int32", (dc.KDL_INT, 64): "int64",
    (dc.KDL_UINT, 8): "uint8", (dc.KDL_UINT, 16): "uint16", (dc.KDL_UINT, 32): "uint32", (dc.KDL_UINT, 64): "uint64",
    (dc.KDL_FLOAT, 16): "float16", (dc.KDL_FLOAT, 32): "float32", (dc.KDL_FLOAT, 64): "float64",
    (dc.KDL_COMPLEX, 64): "complex64", (dc.KDL_COMPLEX, 128): "complex128", (dc.KDL_BOOL, 8): "bool",
}  # fmt: skip
DEPRECATED = ["DeprecationWarning: This function is deprecated in favor of cupy.from_dlpack"]


def expected(way: str, raises: list[str], freed: int = 1) -> dict:
    outcome = {"raises": [BUILTINS + raises[0], raises[1]]}
    if way == "fromDlpack(capsule)":
        outcome["warnings"] = DEPRECATED
    return {**outcome, "freed": freed}


def fixed_release_outcome(code: int, bits: int, lanes: int) -> str:
    """13.4.x's outcome for a tensor of this dtype, as ``dtype_sweep`` words it (checked in its cells)."""
    if lanes != 1:
        return f"ValueError: vector dtypes (lanes={lanes}) is not supported"
    if (code, bits) in ACCEPTED:
        return f"dtype {ACCEPTED[code, bits]}"
    if code == dc.KDL_BFLOAT:
        return "NotImplementedError: CuPy does not support bfloat16 yet"
    names = {dc.KDL_INT: "int{} is not supported.", dc.KDL_UINT: "uint{} is not supported.",
             dc.KDL_FLOAT: "float{} is not supported.", dc.KDL_COMPLEX: "complex{} is not supported.",
             dc.KDL_BOOL: "{}-bit bool is not supported"}  # fmt: skip
    if code in names:
        return "TypeError: " + names[code].format(bits)
    return f"TypeError: Unsupported dtype. dtype code: {code}"


def outcomes_in_fresh_python(before_cupy: str = "", after_cupy: str = "") -> tuple[dict, str]:
    """Every rejected class, every way, in a fresh interpreter: (outcomes by "way name", patch state)."""
    cases = {name: capsule for name, (capsule, _) in REJECTED.items()}
    code = "\n".join(
        [
            before_cupy,
            "import cupy",
            after_cupy,
            "from tests.cupy import dlpack_capsules as dc",
            f"cases = {cases!r}",
            "outcomes = {f'{way} {name}': dc.convert(cupy, way, **capsule)",
            "            for name, capsule in cases.items() for way in dc.WAYS}",
            "import gpushim",
        ]
    )
    outcomes, state = answer_in_fresh_python(code, f"[outcomes, gpushim.record({patch.id!r})['state']]")
    return outcomes, state


def probe_in_fresh_python(env: dict[str, str] | None = None) -> str | None:
    code = "import gpushim.auto\nfrom gpushim.patches.cupy.from_dlpack_unsupported_dtype import patch"
    return answer_in_fresh_python(code, "patch.probe()", env)


def bindings() -> dict[str, object]:
    from cupy._core import dlpack

    return {
        f"{module.__name__}.{name}": vars(module)[name]
        for module in (cupy, cupy._core, dlpack)
        for name in ("from_dlpack", "fromDlpack")
    }


# Needed: the bug shows on affected releases without gpushim.


@GATE.affected_only
def test_needed_every_rejected_tensor_is_freed_twice_without_gpushim():
    outcomes, state = outcomes_in_fresh_python()
    assert state == "inactive"  # gpushim was never asked to patch
    assert outcomes == {
        f"{way} {name}": expected(way, raises, freed=2) for name, (_, raises) in REJECTED.items() for way in dc.WAYS
    }


@GATE.affected_only
def test_probe_shows_the_double_free_without_gpushim():
    assert probe_in_fresh_python(env={"GPUSHIM_DISABLE": patch.id}) == (
        "cupy.from_dlpack rejected a bfloat16 DLPack tensor and it was freed 2 times (double free)"
    )


# Effective: gone with gpushim, imported before or after CuPy.


@GATE.affected_only
@pytest.mark.parametrize("order", ["gpushim first", "cupy first"])
def test_effective_every_rejected_tensor_raises_as_13_4_and_is_freed_once(order):
    if order == "gpushim first":
        outcomes, state = outcomes_in_fresh_python(before_cupy="import gpushim.auto")
    else:
        outcomes, state = outcomes_in_fresh_python(after_cupy="import gpushim.auto")
    assert state == "applied"
    assert outcomes == {
        f"{way} {name}": expected(way, raises) for name, (_, raises) in REJECTED.items() for way in dc.WAYS
    }


@GATE.affected_only
def test_probe_finds_no_double_free_with_gpushim():
    assert probe_in_fresh_python() is None


@GATE.affected_only
@pytest.mark.skipif(gpu.PRESENT, reason="with a device the capsule points at real memory, which the runtime accepts")
@pytest.mark.parametrize("way", dc.WAYS)
def test_managed_tensor_the_runtime_refuses_is_freed_once(this_patch, way):
    outcome = dc.convert(cupy, way, device_type=dc.KDL_CUDA_MANAGED)
    assert outcome["raises"][0] == "cupy_backends.cuda.api.runtime.CUDARuntimeError"
    assert outcome["freed"] == 1


def test_capsules_lie_in_device_memory_where_a_device_is_present(request, monkeypatch):
    """The capsules' GPU branch, on the CPU: with a device "present", a capsule lies in the driver's memory.

    The driver is pretended (tests/gpu.py), so its memory is made up as
    well: CuPy, asked about a managed pointer, still consults the runtime,
    which here (no driver) refuses, and on a GPU host answers about real
    memory.  The device switch around ``__dlpack__`` is CuPy's own.
    """
    if AFFECTED:
        request.getfixturevalue("this_patch")
    monkeypatch.setattr(dc, "_device_block", None)
    driver = pretend_a_device(monkeypatch)
    capsule, tensor = dc.make_capsule(code=7, bits=32)
    _, other = dc.make_capsule(device_type=dc.KDL_CUDA_MANAGED)
    assert (tensor.data, other.data, driver.allocated) == (driver.POINTER, driver.POINTER, [dc.DEVICE_BLOCK])
    with pytest.raises(TypeError, match="Unsupported dtype. dtype code: 7"):
        cupy.from_dlpack(capsule)
    assert tensor.freed == 1
    get_device = cupy.cuda.runtime.getDevice
    with dc.device_switch_without_gpu(cupy) as switches:
        assert cupy.cuda.runtime.getDevice is get_device
    assert switches == []
    outcome = dc.convert(cupy, "from_dlpack(capsule)", device_type=dc.KDL_CUDA_MANAGED)
    assert outcome["raises"][0] == "cupy_backends.cuda.api.runtime.CUDARuntimeError"
    assert outcome["freed"] == 1


@GATE.affected_only
def test_rejected_capsule_is_consumed_as_13_4_consumes_it(this_patch):
    capsule, tensor = dc.make_capsule(code=dc.KDL_BFLOAT, bits=16)
    with pytest.raises(NotImplementedError):
        cupy.from_dlpack(capsule)
    assert (dc.capsule_name(capsule), tensor.freed) == (b"used_dltensor", 1)
    del capsule
    assert tensor.freed == 1


@GATE.affected_only
@pytest.mark.parametrize("way", dc.WAYS)
def test_capsule_on_a_foreign_device_stays_with_its_producer(this_patch, way):
    outcome = dc.convert(cupy, way, device_type=dc.KDL_CPU)
    assert outcome["raises"][0] == "builtins.RuntimeError"
    assert outcome["freed"] == 1


@GATE.affected_only
def test_fromDlpack_warns_at_the_callers_line_before_raising_as_cupy_does(this_patch):  # noqa: N802
    capsule, _ = dc.make_capsule(code=dc.KDL_BFLOAT, bits=16)
    with pytest.warns(DeprecationWarning, match="in favor of cupy.from_dlpack") as caught:
        with pytest.raises(NotImplementedError):
            cupy.fromDlpack(capsule)
    assert caught[0].filename == __file__


# Accepted tensors go to CuPy untouched.


@GATE.affected_only
@pytest.mark.parametrize("way", dc.WAYS)
@pytest.mark.parametrize(("code", "bits"), list(ACCEPTED), ids=list(ACCEPTED.values()))
def test_accepted_dtype_converts_zero_copy(this_patch, way, code, bits):
    outcome = dc.convert(cupy, way, code=code, bits=bits, shape=(2, 3), strides=(3, 1))
    strides = [3 * bits // 8, bits // 8]
    common = {"dtype": ACCEPTED[code, bits], "shape": [2, 3], "strides": strides, "zero_copy": True, "freed": 1}
    assert outcome == ({**common, "warnings": DEPRECATED} if way == "fromDlpack(capsule)" else common)


@GATE.affected_only
def test_accepted_capsule_is_consumed_by_cupy_itself(this_patch):
    capsule, tensor = dc.make_capsule(bits=32)
    array = cupy.from_dlpack(capsule)
    assert type(array.data.mem) is cupy._core.dlpack.DLPackMemory
    assert array.data.ptr == tensor.data
    assert dc.capsule_name(capsule) == b"used_dltensor"
    del array
    assert tensor.freed == 1


@GATE.affected_only
def test_producer_sees_the_same_calls_as_without_the_patch(this_patch):
    def calls(from_dlpack):
        producer = dc.Producer(bits=32)
        with dc.device_switch_without_gpu(cupy) as switches:
            from_dlpack(producer)
        return producer.calls, switches

    assert calls(cupy.from_dlpack) == calls(cupy.from_dlpack.__wrapped__)


# The rule, over the whole dtype space.


@pytest.mark.skipif(not (AFFECTED or FIXED_ALIKE), reason=f"{RELEASE[1]} converts by other rules")
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    code=st.integers(0, 255),
    bits=st.integers(0, 255),
    lanes=st.one_of(st.just(1), st.integers(0, 65535)),
)
def test_any_dtype_is_freed_once_and_converts_as_13_4(request, code, bits, lanes):
    """Patched on affected releases; on 13.4.x as released, which checks the oracle itself."""
    if AFFECTED:
        request.getfixturevalue("this_patch")
    capsule, tensor = dc.make_capsule(code=code, bits=bits, lanes=lanes)
    try:
        outcome = f"dtype {cupy.from_dlpack(capsule).dtype}"
    except Exception as error:
        outcome = f"{type(error).__name__}: {error}"
    del capsule
    assert (outcome, tensor.freed) == (fixed_release_outcome(code, bits, lanes), 1)


@pytest.mark.skipif(not FIXED_ALIKE, reason="only the releases with the upstream fix")
@pytest.mark.parametrize("way", dc.WAYS)
@pytest.mark.parametrize("name", list(REJECTED))
def test_fixed_release_raises_so_and_frees_once(way, name):
    capsule, raises = REJECTED[name]
    assert dc.convert(cupy, way, **capsule) == expected(way, raises)


# Faithful: the corpus, recorded patched on affected releases and as released on 13.4.0.

EXTRA_CASES = {
    "float32 2-D strided": {"shape": (2, 3), "strides": (3, 1)},
    "float32 byte_offset 16": {"byte_offset": 16},
    "float32 on the CPU": {"device_type": dc.KDL_CPU},
    "bfloat16 on the CPU": {"code": dc.KDL_BFLOAT, "bits": 16, "device_type": dc.KDL_CPU},
    "float32 managed": {"device_type": dc.KDL_CUDA_MANAGED},
    "bfloat16 managed": {"code": dc.KDL_BFLOAT, "bits": 16, "device_type": dc.KDL_CUDA_MANAGED},
    "float32 negative shape": {"shape": (-1,)},
    "bfloat16 lanes=2": {"code": dc.KDL_BFLOAT, "bits": 16, "lanes": 2},
}


def faithful_corpus() -> dict:
    cases = {name: capsule for name, (capsule, _) in REJECTED.items()}
    cases.update({name: {"code": code, "bits": bits} for (code, bits), name in ACCEPTED.items()})
    cases.update(EXTRA_CASES)
    outcomes = {f"{way} {name}": dc.convert(cupy, way, **capsule) for name, capsule in cases.items() for way in dc.WAYS}
    outcomes["dtype sweep"], outcomes["dtype sweep: not freed once"] = dc.dtype_sweep(cupy)
    return outcomes


@pytest.mark.skipif(not (AFFECTED or REFERENCE), reason="neither affected nor the reference release")
def test_faithful_corpus_matches_the_fixed_release(request):
    """Compared by the matrix: patched 13.2.0/13.3.0 against 13.4.0 as released."""
    if AFFECTED:
        request.getfixturevalue("this_patch")
    outcomes = faithful_corpus()
    record_faithful(patch, outcomes)
    assert outcomes["dtype sweep: not freed once"] == []
    assert all(outcome["freed"] == 1 for name, outcome in outcomes.items() if not name.startswith("dtype sweep"))


# Unpatch and harmless.


@GATE.affected_only
def test_patch_wraps_every_binding_and_unpatch_restores_the_identical_originals():
    originals = bindings()
    with applied(patch):
        for name, installed in bindings().items():
            assert installed is not originals[name], name
            assert installed.__wrapped__ is originals[name], name
    assert bindings() == originals
    assert all(a is b for a, b in zip(bindings().values(), originals.values()))


@GATE.unaffected_only
def test_harmless_not_affected_and_cupy_keeps_its_own_functions():
    import gpushim

    originals = bindings()
    with applied(patch):
        record = next(record for record in gpushim.status() if record["id"] == patch.id)
        assert record["state"] == "not-affected"
        assert all(bindings()[name] is original for name, original in originals.items())
        assert type(cupy.from_dlpack).__name__ == "builtin_function_or_method"
        assert cupy.from_dlpack is cupy._core.dlpack.from_dlpack


# Fail-open with the real CuPy: odd producers, and an import racing gpushim.patch().


class DeviceRaises:
    """A producer whose ``__dlpack_device__`` property raises ``error``; CuPy never gets to ``__dlpack__``."""

    def __init__(self, error: BaseException) -> None:
        self.error, self.reads = error, 0

    @property
    def __dlpack_device__(self):
        self.reads += 1
        raise self.error

    def __dlpack__(self, stream=None):
        raise AssertionError("CuPy asked for the tensor")


ERRORS = {
    "RuntimeError": lambda: RuntimeError("device unknown"),
    "AttributeError": lambda: AttributeError("no device"),
    "ValueError": lambda: ValueError("bad device"),
    "KeyboardInterrupt": KeyboardInterrupt,
}


def conversions() -> dict[str, list]:
    """Each producer handed to each entry point: [exception type, message, warnings, reads of the property]."""
    results = {}
    for name, error in ERRORS.items():
        for function in ("from_dlpack", "fromDlpack"):
            producer = DeviceRaises(error())
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    getattr(cupy, function)(producer)
                    raised = ["nothing", ""]
                except BaseException as exception:
                    raised = [type(exception).__name__, str(exception)]
            results[f"{function}, {name}"] = [*raised, [str(w.message) for w in caught], producer.reads]
    return results


@GATE.affected_only
def test_a_dlpack_device_property_that_raises_gives_cupys_own_outcome():
    """CuPy (Cython 0.29) takes any exception reading ``__dlpack_device__`` for its absence; so must the patch."""
    unpatched = conversions()
    assert unpatched["from_dlpack, RuntimeError"][:2] == [
        "ValueError",
        "A DLPack tensor object cannot be consumed multiple times",
    ]
    with applied(patch):
        assert conversions() == unpatched


RACE = """
import importlib.util, sys, threading

class HeldImport:
    '''Holds the execution of ``cupy`` until released, as a slow import on another thread would.'''

    def __init__(self):
        self.started, self.release = threading.Event(), threading.Event()

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "cupy":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        execute = spec.loader.exec_module

        def exec_module(module):
            self.started.set()
            self.release.wait(120)
            execute(module)

        spec.loader.exec_module = exec_module
        return spec

held = HeldImport()
sys.meta_path.insert(0, held)
importer = threading.Thread(target=importlib.import_module, args=("cupy",))
importer.start()
assert held.started.wait(120)
import gpushim
patcher = threading.Thread(target=gpushim.patch)
patcher.start()
patcher.join(1)
waited = patcher.is_alive()
held.release.set()
importer.join(300)
patcher.join(300)
patched = hasattr(sys.modules["cupy"].from_dlpack, "__wrapped__")  # read before any other import
"""


@GATE.affected_only
def test_patch_while_another_thread_imports_cupy_applies_when_both_return():
    """The import is held on an event while ``gpushim.patch()`` runs in another thread; then both are let go."""
    report = answer_in_fresh_python(
        RACE, f"{{'waited': waited, 'patched': patched, 'state': gpushim.record({patch.id!r})['state']}}"
    )
    assert report == {"waited": True, "patched": True, "state": APPLIED}
