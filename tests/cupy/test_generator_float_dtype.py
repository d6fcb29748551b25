"""cupy.generator_float_dtype: the buffer ``Generator.random``/``uniform`` fill with float32 samples (cupy/cupy#8538).

Before 13.4.0 a dtype other than float64 gets an output of its own size,
which cuRAND's float32 kernel fills with four bytes an element; with gpushim
the kernel fills a float32 array, as in 13.4.0.  The allocations are
observed as they are asked for, on memory nobody touches, with a generator
whose state is a stand-in nobody reads: without a driver the fill is a launch
that fails unchecked, and the first launch CuPy checks (the cast, the
arithmetic of ``uniform``) ends the call.  That the kernel writes past the
buffer, over another array, is ``test_gpu_generator_float_dtype.py``'s.
"""

import contextlib
from unittest import mock

import pytest

cupy = pytest.importorskip("cupy")


from gpushim.patches.cupy.generator_float_dtype import _StandInBitGenerator, patch
from gpushim.wrappers import is_wrapper
from tests import gpu
from tests.cupy.host_copies import recorded_allocations
from tests.support import gate, record_corpus

GATE = gate(patch)
# Without a driver, the fill asks for the current stream in a function that cannot raise, and CuPy reports the
# failure as unraisable before the launch, which fails unchecked.
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")

DTYPES = ("float16", "float32", "float64", "int32", "uint8", "complex64", "bool", None, "e", "not a dtype")
SIZES = {"None": None, "1000": 1000, "(3, 4)": (3, 4), "0": 0, "(2, 0)": (2, 0), "-1": -1}
# name: (out's shape, out's dtype), for random's ``out`` in the dtype asked for or another
OUTS = {"none": None, "float16 (3, 4)": ((3, 4), "float16"), "float32 (3, 4)": ((3, 4), "float32")}
# name: (low's shape, high's shape), device arrays
BOUNDS = {"0-d": ((), ()), "5 and 0-d": ((5,), ()), "(3, 4) and 4": ((3, 4), (4,))}


def generator():
    """A generator with cuRAND's state on the device, or without one a stand-in nobody reads."""
    from cupy.random._generator_api import Generator

    return Generator(cupy.random.XORWOW(0) if gpu.PRESENT else _StandInBitGenerator())


def on_this_device(array):
    """``cupy.asarray`` of a device array, which asks the driver for the current device: this one, without a driver."""
    assert isinstance(array, cupy.ndarray)
    return array


def described(result):
    """The result's shape and dtype, and with a device its values (cuRAND's, from seed 0)."""
    found = {"shape": list(result.shape), "dtype": str(result.dtype)}
    if gpu.PRESENT:
        found["values"] = result.get().tolist()
    return found


def cases():
    """``{case: prepare}``: random over dtypes, sizes and outs; uniform over dtypes, sizes and bounds.

    ``prepare()`` makes the case's device arrays and returns the call, so
    that the allocations recorded are the call's own.
    """
    found = {}
    for dtype in DTYPES:
        for size_name, size in SIZES.items():
            for out_name, out in OUTS.items():
                found[f"random size={size_name} dtype={dtype} out={out_name}"] = random(out, size, dtype)
            for bounds_name, bounds in BOUNDS.items():
                found[f"uniform size={size_name} dtype={dtype} bounds={bounds_name}"] = uniform(
                    bounds, size=size, dtype=dtype
                )
        found[f"random keywords dtype={dtype}"] = random(None, dtype=dtype, size=7)
        found[f"uniform size=None dtype={dtype}"] = uniform(((3,), ()), dtype=dtype)
    found["random unknown keyword"] = random(None, 7, shape=3)
    found["uniform too many arguments"] = uniform(((), ()), 3, "e", 5)
    return found


def random(out, *args, **kwargs):
    """``random(*args, **kwargs)``, with ``out`` a device array of the shape and dtype ``out`` gives, if any."""

    def prepare():
        given = {} if out is None else {"out": cupy.empty(*out)}
        return lambda: generator().random(*args, **given, **kwargs)

    return prepare


def uniform(bounds, *args, **kwargs):
    """``uniform(low, high, *args, **kwargs)``, with device arrays of the shapes ``bounds`` gives."""

    def prepare():
        low, high = (cupy.empty(shape) for shape in bounds)
        return lambda: generator().uniform(low, high, *args, **kwargs)

    return prepare


def run(selected=None):
    """``{case: {"allocated": [sizes], "outcome": ...}}`` for the corpus, or the cases named in ``selected``."""
    every = cases()
    outcomes = {}
    with contextlib.ExitStack() as stack:
        sizes = stack.enter_context(recorded_allocations())
        if not gpu.PRESENT:
            stack.enter_context(mock.patch.object(cupy, "asarray", on_this_device))
        for case in every if selected is None else selected:
            call = every[case]()
            sizes.clear()
            try:
                outcome = described(call())
            except Exception as error:
                outcome = f"{type(error).__name__}: {error}"
            outcomes[case] = {"allocated": list(sizes), "outcome": outcome}
    return outcomes


def one(case):
    return run([case])[case]


@GATE.affected_only
def test_needed_float16_gets_half_the_bytes_the_float32_kernel_writes_without_gpushim():
    assert one("random size=1000 dtype=float16 out=none")["allocated"] == [2000]
    assert one("uniform size=1000 dtype=float16 bounds=0-d")["allocated"][:1] == [2000]


@GATE.affected_only
@pytest.mark.parametrize("method", ["random", "uniform"])
@pytest.mark.parametrize("dtype", ["float16", "e", "int32", "uint8", "bool"])
def test_effective_the_float32_kernel_fills_a_float32_array(method, dtype, this_patch):
    extra = "out=none" if method == "random" else "bounds=0-d"
    assert one(f"{method} size=1000 dtype={dtype} {extra}")["allocated"][:1] == [4000]


@GATE.unaffected_only
def test_harmless_not_affected_and_the_methods_are_cupys_own(gpushim_patched):
    from cupy.random._generator_api import Generator

    state = next(r for r in gpushim_patched.status() if r["id"] == patch.id)["state"]
    assert state == "not-affected"
    assert not is_wrapper(vars(Generator)["random"])
    assert not is_wrapper(vars(Generator)["uniform"])


@GATE.recorded_only
def test_faithful_allocations_results_and_errors_of_the_corpus(gpushim_patched):
    """Patched old releases record what unpatched 13.4.0 records; the matrix compares the files."""
    outcomes = record_corpus(patch, run)
    assert len(outcomes) == len(cases()) == 382
    assert outcomes["random size=(3, 4) dtype=float16 out=float16 (3, 4)"]["allocated"][:1] == [48]
