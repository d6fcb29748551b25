"""cupy.get_stream_packing: ``ndarray.get(stream=s)`` packs a non-contiguous array on ``s`` (cupy/cupy#8369).

``get`` asks the driver for the device before it packs, so without a device
neither the release nor 13.3.0 gets to its kernel (``test_gpu_get_stream_packing.py``
shows the copy reading the packed array too early).  What the CPU shows is
the wrapper's part, with stand-ins for the release's ``get``, the array's
device and the stream: which calls it runs with the array's device and then
the stream given made current; and that the calls' host-side checks (types,
dtypes, shapes of ``out``) come out as 13.3.0's.
"""

import types

import pytest

cupy = pytest.importorskip("cupy")

import numpy

from gpushim.patches.cupy.get_stream_packing import _fixed, patch
from gpushim.wrappers import is_wrapper
from tests.cupy.fusion_tracing import untouched_allocator
from tests.support import gate, record_corpus

GATE = gate(patch)


class Entered:
    """A context manager that records in ``log`` when it is entered and left."""

    def __init__(self, name, log):
        self.name, self.log = name, log

    def __enter__(self):
        self.log.append(f"enter {self.name}")

    def __exit__(self, *exc):
        self.log.append(f"leave {self.name}")


def stand_in(shape, c_contiguous, f_contiguous, log, dtype="float64"):
    """What the wrapper reads of an array: flags, size, dtype, shape, and a device whose entry is logged."""
    flags = types.SimpleNamespace(c_contiguous=c_contiguous, f_contiguous=f_contiguous)
    size = int(numpy.prod(shape))
    return types.SimpleNamespace(
        flags=flags, size=size, dtype=numpy.dtype(dtype), shape=shape, device=Entered("device", log)
    )


def called(array, log, *args, **kwargs):
    """``array.get(*args, **kwargs)`` through the wrapper: what was current (logged) when the release ran, with
    which stream; the current stream is ``Entered("current", log)``."""
    current = Entered("current", log)

    def release(stream=None, order="C", out=None, blocking=True):
        log.append(f"release with {stream.name}")

    cuda = types.SimpleNamespace(get_current_stream=lambda: current)
    _fixed(numpy, types.SimpleNamespace(cuda=cuda))(release, array, args, kwargs)
    return log


STRIDED = ((8, 4), False, False)
C_ONLY = ((8, 4), True, False)
F_ONLY = ((8, 4), False, True)
PACKED_IN_THE_STREAM = ["enter device", "enter stream", "release with stream", "leave stream", "leave device"]


@pytest.mark.parametrize(
    "layout, kwargs",
    [
        (STRIDED, {}),
        (C_ONLY, {"order": "F"}),
        (F_ONLY, {"order": "C"}),
        (F_ONLY, {"order": "c"}),
        (STRIDED, {"order": "A"}),
        (C_ONLY, {"out": numpy.empty((8, 4), order="F")}),
        (STRIDED, {"out": numpy.empty((8, 4))}),
        (STRIDED, {"out": numpy.empty((8, 8))[:, ::2]}),
        (STRIDED, {"order": "K"}),
    ],
    ids=[
        "strided",
        "C as F",
        "F as C",
        "F as c",
        "strided as A",
        "C into F out",
        "strided into out",
        "strided into a strided out",
        "an order the release refuses",
    ],
)
def test_a_packed_copy_runs_with_the_array_s_device_and_the_stream_given_current(layout, kwargs):
    log = []
    stream = Entered("stream", log)
    assert called(stand_in(*layout, log), log, stream, **kwargs) == PACKED_IN_THE_STREAM


@pytest.mark.parametrize(
    "layout, kwargs",
    [
        (C_ONLY, {}),
        (F_ONLY, {"order": "F"}),
        (F_ONLY, {"order": "A"}),
        (C_ONLY, {"out": numpy.empty((8, 4))}),
        (STRIDED, {"out": numpy.empty((8, 4), "float32")}),
        (STRIDED, {"out": numpy.empty((4, 8))}),
        (STRIDED, {"out": [0.0] * 32}),
        (((0, 4), False, False), {}),
        (STRIDED, {"order": 1}),
    ],
    ids=[
        "C",
        "F as F",
        "F as A",
        "C into C out",
        "out of another dtype",
        "out of another shape",
        "a list out",
        "no elements",
        "an order that is not a string",
    ],
)
def test_what_the_release_copies_as_it_is_or_refuses_first_enters_nothing(layout, kwargs):
    log = []
    assert called(stand_in(*layout, log), log, Entered("stream", log), **kwargs) == ["release with stream"]


@pytest.mark.parametrize("args", [(), (None,), (None, "C")])
def test_without_a_stream_the_current_one_is_resolved_first_and_used_alike(args):
    log = []
    expected = ["enter device", "enter current", "release with current", "leave current", "leave device"]
    assert called(stand_in(*STRIDED, log), log, *args) == expected
    log = []
    assert called(stand_in(*C_ONLY, log), log, *args) == ["release with current"]


def test_a_call_that_does_not_bind_is_the_release_s_own():
    log = []
    with pytest.raises(TypeError):
        called(stand_in(*STRIDED, log), log, Entered("stream", log), nonsense=1)
    assert log == []


@GATE.affected_only
def test_effective_cupy_ndarray_gets_through_the_wrapper(this_patch):
    assert is_wrapper(vars(cupy.ndarray)["get"])


@GATE.unaffected_only
def test_harmless_get_is_cupys_own(gpushim_patched):
    state = next(r for r in gpushim_patched.status() if r["id"] == patch.id)["state"]
    assert state == "not-affected"
    assert "get" not in vars(cupy.ndarray)


# name: (array shape, slicing, keyword arguments of get); out as (shape, dtype, order) or a list
CALLS = {
    "strided": ((8, 8), (slice(None), slice(None, None, 2)), {}),
    "strided order=F": ((8, 8), (slice(None), slice(None, None, 2)), {"order": "F"}),
    "strided order=X": ((8, 8), (slice(None), slice(None, None, 2)), {"order": "X"}),
    "strided order=1": ((8, 8), (slice(None), slice(None, None, 2)), {"order": 1}),
    "C": ((8, 4), (), {}),
    "C order=F": ((8, 4), (), {"order": "F"}),
    "empty strided": ((0, 8), (slice(None), slice(None, None, 2)), {}),
    "strided out C": ((8, 8), (slice(None), slice(None, None, 2)), {"out": ((8, 4), "float64", "C")}),
    "strided out float32": ((8, 8), (slice(None), slice(None, None, 2)), {"out": ((8, 4), "float32", "C")}),
    "strided out (4, 8)": ((8, 8), (slice(None), slice(None, None, 2)), {"out": ((4, 8), "float64", "C")}),
    "strided out list": ((8, 8), (slice(None), slice(None, None, 2)), {"out": [0.0] * 32}),
    "unknown keyword": ((8, 4), (), {"shape": 3}),
}


def run():
    """``{call: outcome}``: ``get`` without a stream and with CuPy's null stream, each with its host-side checks.

    Without a device every call that passes them stops at the driver.
    """
    outcomes = {}
    with untouched_allocator():
        for name, (shape, index, kwargs) in CALLS.items():
            for stream_name in ("none", "null"):
                array = cupy.empty(shape)[index]
                out = kwargs.get("out")
                given = (
                    dict(kwargs, out=numpy.empty(out[0], out[1], order=out[2])) if isinstance(out, tuple) else kwargs
                )
                stream = None if stream_name == "none" else cupy.cuda.Stream.null
                try:
                    result = array.get(stream, **given)
                except Exception as error:
                    outcomes[f"{name} stream={stream_name}"] = f"{type(error).__name__}: {error}"
                else:
                    outcomes[f"{name} stream={stream_name}"] = [list(result.shape), str(result.dtype)]
    return outcomes


@GATE.recorded_only
def test_faithful_host_side_checks_as_13_3_0_s(gpushim_patched):
    """Patched old releases record what unpatched 13.3.0 records; the matrix compares the files."""
    outcomes = record_corpus(patch, run)
    assert len(outcomes) == 2 * len(CALLS)
