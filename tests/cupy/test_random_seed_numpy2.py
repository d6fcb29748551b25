"""cupy.random_seed_numpy2: seeding CuPy's random generator under NumPy 2 (cupy/cupy#8392).

On CuPy 13.2.0 with NumPy 2, ``RandomState.seed(42)``, ``RandomState(42)`` and
``cupy.random.seed(42)`` raise NumPy's TypeError; with gpushim they check the
seed as 13.3.0 does and hand cuRAND the same integer.  cuRAND is a stand-in
that records its calls (``RecordingCurand``), and ``get_random_state`` is
given device 0 as the current device, so no GPU and no libcurand are needed.
"""

import contextlib
import decimal
import fractions
import os
import types
import warnings

import pytest

cupy = pytest.importorskip("cupy")

import numpy

from gpushim.patches.cupy.random_seed_numpy2 import RecordingCurand, installed_curand, patch
from tests.support import gate, record_faithful

NUMPY2 = int(numpy.__version__.split(".")[0]) >= 2
GATE = gate(patch)
NUMPY2_REFUSAL = "TypeError: Cannot cast scalar from dtype('int64') to dtype('uint64') according to the rule 'safe'"


class Opaque:
    """Any object that is not a number."""

    def __repr__(self):
        return "Opaque()"


SEEDS = [
    0,
    1,
    42,
    2**32,
    2**63 - 1,
    2**63,
    2**64 - 1,
    2**64,
    2**100,
    -1,
    -(2**63),
    -(2**63) - 1,
    True,
    False,
    numpy.int8(-1),
    numpy.int8(5),
    numpy.uint8(255),
    numpy.int32(-7),
    numpy.int64(42),
    numpy.int64(-5),
    numpy.uint64(0),
    numpy.uint64(2**64 - 1),
    numpy.bool_(True),
    0.0,
    42.0,
    42.5,
    -1.0,
    float("inf"),
    float("nan"),
    numpy.float16(1),
    numpy.float32(3),
    numpy.float64(2.0),
    1j,
    numpy.complex64(1),
    "42",
    b"42",
    [42],
    [-1],
    [2**64],
    [1.5],
    [1, 2],
    (3,),
    [],
    numpy.array(42),
    numpy.array(-1),
    numpy.array(1.5),
    numpy.arange(4),
    numpy.arange(4.0),
    numpy.array([], dtype="u8"),
    numpy.arange(8)[::2],
    numpy.array([True]),
    numpy.array(["a"]),
    decimal.Decimal(5),
    fractions.Fraction(3, 1),
    Opaque(),
]
METHODS = ("CURAND_RNG_PSEUDO_DEFAULT", "CURAND_RNG_PSEUDO_MT19937", "CURAND_RNG_PSEUDO_PHILOX4_32_10")
CUPY_SEEDS = ("0", "42", "18446744073709551615", "18446744073709551616", "-1", "4.5", "abc")


def generator_module():
    from cupy.random import _generator

    return _generator


def label(value):
    return f"{type(value).__module__}.{type(value).__qualname__} {value!r}".replace("builtins.", "")


@contextlib.contextmanager
def seeding():
    """cuRAND as a recorder, device 0 as the current device, no random states before or after."""
    generator = generator_module()
    curand = RecordingCurand()
    device = types.SimpleNamespace(Device=lambda: types.SimpleNamespace(id=0))
    cuda, generator.cuda = generator.cuda, device
    with installed_curand(curand):
        generator.reset_states()
        try:
            yield curand
        finally:
            generator.reset_states()  # their __del__ destroys generators through the stand-in
            generator.cuda = cuda


def outcome(call, curand, drawn=0):
    """How ``call()`` (which returns a RandomState) ends: the seed kept and what cuRAND was told, or the error.

    The first ``drawn`` seeds cuRAND gets are drawn from ``os.urandom``; each
    is checked to be a Python int in ``[0, 2**64)`` and written as ``<random>``.
    """
    del curand.calls[:]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            state = call()
        except Exception as error:
            ended = {"error": f"{type(error).__name__}: {error}"}
        else:
            calls, kept = [], f"{type(state._rk_seed).__name__} {state._rk_seed!r}"
            for name, *args in curand.calls:
                if name == "setPseudoRandomGeneratorSeed" and drawn:
                    drawn -= 1
                    assert type(args[1]) is int and 0 <= args[1] < 2**64, args
                    kept = kept if args[1] != state._rk_seed else "<random>"
                    args[1] = "<random>"
                calls.append([name, *(arg if arg == "<random>" else repr(arg) for arg in args)])
            assert not drawn, curand.calls
            ended = {"rk_seed": kept, "curand": calls}
    if caught:
        ended["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]
    return ended


def bare_state(method="CURAND_RNG_PSEUDO_DEFAULT"):
    """A RandomState as ``__init__`` leaves it, without calling it."""
    state_class = generator_module().RandomState
    state = state_class.__new__(state_class)
    state._generator, state.method = 1, getattr(RecordingCurand, method)
    return state


def seeded(*args, **kwargs):
    state = bare_state()
    state.seed(*args, **kwargs)
    return state


def global_state_seeded(*args):
    generator = generator_module()
    cupy.random.seed(*args)
    return generator.get_random_state()


def from_cupy_seed(value):
    generator = generator_module()
    os.environ["CUPY_SEED"] = value
    try:
        return generator.get_random_state()
    finally:
        del os.environ["CUPY_SEED"]


def cases():
    """``{case: (call, drawn)}``: every seed through every way in, and how many seeds are drawn at random.

    ``cupy.random.seed`` first makes the device's state, from a random seed.
    """
    state_class = generator_module().RandomState
    found = {}
    for seed in SEEDS:
        found[f"seed({label(seed)})"] = (lambda s=seed: seeded(s), 0)
    for seed in (0, 42, 2**64 - 1, 2**64, -1, numpy.int64(7), 1.5, numpy.arange(3)):
        found[f"seed(seed={label(seed)})"] = (lambda s=seed: seeded(seed=s), 0)
        found[f"cupy.random.seed({label(seed)})"] = (lambda s=seed: global_state_seeded(s), 1)
        for method in METHODS:
            found[f"RandomState({label(seed)}, {method})"] = (
                lambda s=seed, m=method: state_class(s, getattr(RecordingCurand, m)),
                0,
            )
    for value in CUPY_SEEDS:
        found[f"CUPY_SEED={value} get_random_state()"] = (lambda v=value: from_cupy_seed(v), 0)
    found["seed()"] = (seeded, 1)
    found["seed(None)"] = (lambda: seeded(None), 1)
    found["RandomState()"] = (state_class, 1)
    found["cupy.random.seed()"] = (global_state_seeded, 2)
    found["seed(1, 2)"] = (lambda: seeded(1, 2), 0)
    found["seed(value=1)"] = (lambda: seeded(value=1), 0)
    return found


def run():
    """``{case: outcome}``, each case starting without a random state for the device."""
    found = {}
    with seeding() as curand:
        for case, (call, drawn) in cases().items():
            generator_module().reset_states()
            found[case] = outcome(call, curand, drawn)
    return found


@GATE.affected_only
def test_needed_integer_seeds_raise_numpy2_typeerror_without_gpushim():
    outcomes = run()
    for case in ("seed(int 42)", "seed(int 0)", "seed(seed=int 42)", "RandomState(int 42, CURAND_RNG_PSEUDO_DEFAULT)"):
        assert outcomes[case].get("error") == NUMPY2_REFUSAL, (case, outcomes[case])
    assert outcomes["cupy.random.seed(int 42)"]["error"] == NUMPY2_REFUSAL
    refused = [case for case, ended in outcomes.items() if ended.get("error") == NUMPY2_REFUSAL]
    assert len(refused) >= 20, refused


@GATE.affected_only
def test_needed_cupy_seed_variable_and_random_seeds_work_without_gpushim():
    """``CUPY_SEED`` reaches ``seed`` as a ``numpy.uint64`` and ``None`` as a Python int, which the safe cast takes."""
    outcomes = run()
    assert outcomes["CUPY_SEED=42 get_random_state()"]["rk_seed"] == "int 42"
    assert outcomes["seed()"]["rk_seed"] == "<random>"
    assert outcomes["RandomState()"]["rk_seed"] == "<random>"


@GATE.affected_only
def test_effective_integer_seeds_reach_curand(gpushim_patched):
    outcomes = run()
    assert not [case for case, ended in outcomes.items() if ended.get("error") == NUMPY2_REFUSAL]
    assert outcomes["cupy.random.seed(int 42)"]["rk_seed"] == "int 42"
    largest = outcomes["seed(int 18446744073709551615)"]
    assert ["setPseudoRandomGeneratorSeed", "1", "18446744073709551615"] in largest["curand"]
    assert outcomes["seed(int -1)"]["error"] == "ValueError: Seed must be an integer between 0 and 2**64 - 1"
    assert outcomes["seed(float 42.0)"]["error"] == "TypeError: Seed must be an integer."


@GATE.recorded_only
def test_faithful_seeds_of_the_corpus(gpushim_patched):
    """Patched 13.2.0 records what unpatched 13.3.0 records; the matrix compares the files."""
    outcomes = run()
    assert len(outcomes) > 100
    record_faithful(patch, outcomes)


def test_curand_stand_in_is_removed_after_use():
    import sys

    before = sys.modules.get("cupy_backends.cuda.libs.curand")
    with installed_curand(RecordingCurand()) as curand:
        from cupy_backends.cuda.libs import curand as imported

        assert imported is curand
    assert sys.modules.get("cupy_backends.cuda.libs.curand") is before


def test_curand_stand_in_takes_the_place_cupy_12_binds_at_import_and_leaves_it(monkeypatch):
    """12.x's ``_generator`` binds ``from cupy.cuda import curand`` once; its ``seed`` reads that name."""
    from cupy.random import _generator

    bound = types.ModuleType("curand")
    monkeypatch.setattr(_generator, "curand", bound, raising=False)
    with installed_curand(RecordingCurand()) as curand:
        assert _generator.curand is curand
    assert _generator.curand is bound


def test_curand_stand_in_adds_no_name_where_the_release_binds_none():
    from cupy.random import _generator

    with installed_curand(RecordingCurand()):
        pass
    assert "curand" not in vars(_generator)
