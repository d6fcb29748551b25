"""warp.empty_slice: empty slices of a Warp array raise ``Invalid indexing`` (NVIDIA/warp GH-958).

The corpus slices CPU arrays of one, two and three dimensions, with and
without gradients, with slices that select nothing (``a[2:2]``, ``a[:0]``,
``a[-1:-1]``, stepped, mixed with integers, with other slices and with index
arrays), with slices that select something, and with keys Warp rejects
(a start at the end, a stop before the start, an index out of range, a
string).  It records each view's type, shape, strides, size, offset from its
base, contiguity and contents (and its gradient's shape), or the exception,
and what a kernel launched over an empty view does, and what NumPy makes of
an empty view's host copy, which ``.numpy()`` of a device array reads.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpushim.patches.warp.empty_slice import patch
from tests.support import applied, gate, record_corpus

GATE = gate(patch)

import warp

warp.config.quiet = True


def arrays() -> dict:
    def filled(shape, **options):
        data = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
        return warp.array(data, dtype=warp.float32, device="cpu", **options)

    return {
        "1d": filled((3,)),
        "2d": filled((3, 4)),
        "3d": filled((4, 3, 2)),
        "1d grad": filled((3,), requires_grad=True),
    }


def key_of(text: str):
    """The key that ``a[<text>]`` passes to ``__getitem__``."""
    return eval(f"_Keys()[{text}]", {"_Keys": _Keys, "indices": _indices})


class _Keys:
    def __getitem__(self, key):
        return key


def _indices(*values):
    return warp.array(values, dtype=warp.int32, device="cpu")


CASES = {
    "1d": ["2:2", ":0", "0:0", "-1:-1", "1:1:2", "3:3", "2:1", "1:2", ":", "0:3:2", "-4:", "5", "'x'"],
    "2d": ["1:1", "1:1, :", ":, :0", "0, 1:1", "1:1, 0", "2:2, 1:3", "1:2, 3:3", ":0, :0", "indices(0, 2), 1:1"],
    "3d": ["1:1, :0, -1:-1", "0, 0, 1:1", "1:3, 0, :", ":, :, 2:2"],
    "1d grad": ["1:1", ":0", "0:2"],
}


def described(base, view) -> dict:
    if isinstance(view, warp.array):
        return {
            "type": type(view).__name__,
            "shape": list(view.shape),
            "strides": list(view.strides),
            "size": view.size,
            "offset": view.ptr - base.ptr,
            "contiguous": view.is_contiguous,
            "values": view.numpy().tolist(),
            "grad": None if view.grad is None else list(view.grad.shape),
        }
    return {"type": type(view).__name__, "shape": list(view.shape), "values": view.numpy().tolist()}


@warp.kernel
def add_one(a: warp.array(dtype=float)):
    a[warp.tid()] += 1.0


def launched_over_an_empty_view() -> dict:
    base = warp.zeros(3, dtype=float, device="cpu")
    try:
        view = base[1:1]
        warp.launch(add_one, dim=view.shape, inputs=[view], device="cpu")
    except Exception as error:
        return {"raises": f"{type(error).__name__}: {error}"}
    return {"base": base.numpy().tolist()}


def host_copy_of_an_empty_view() -> dict:
    """``numpy.asarray`` of ``view.to("cpu")`` where ``view`` is on a device: 1.9.1's ``numpy()`` past its copy.

    The copy is made here from a CPU view, as ``to`` makes it from a device's:
    ``warp.clone``, whose empty array has no pointer.
    """
    base = warp.zeros(3, dtype=float, device="cpu")
    try:
        host = warp.clone(base[1:1], device="cpu")
        return {"values": np.asarray(host).tolist()}
    except Exception as error:
        return {"raises": type(error).__name__}


def run_corpus() -> dict:
    outcomes = {}
    for name, base in arrays().items():
        for text in CASES[name]:
            try:
                outcomes[f"{name}[{text}]"] = described(base, base[key_of(text)])
            except Exception as error:
                outcomes[f"{name}[{text}]"] = {"raises": f"{type(error).__name__}: {error}"}
    outcomes["a kernel over 1d[1:1]"] = launched_over_an_empty_view()
    outcomes["numpy of the host copy of 1d[1:1]"] = host_copy_of_an_empty_view()
    return outcomes


EMPTY = {"type": "array", "shape": [0], "strides": [4], "size": 0, "contiguous": True, "values": [], "grad": None}
# Cases whose outcome tells the bug from the fix: (message raised by 1.9.0 unpatched, the view 1.9.1 gives).
TELLING = {
    "1d[2:2]": ("2:2:1", {**EMPTY, "offset": 8}),
    "1d[:0]": ("0:0:1", {**EMPTY, "offset": 0}),
    "1d[-1:-1]": ("2:2:1", {**EMPTY, "offset": 8}),
    "3d[1:1, :0, -1:-1]": ("1:1:1", None),
    "1d grad[1:1]": ("1:1:1", {**EMPTY, "offset": 4, "grad": [0]}),
}
# Cases every release answers alike.
UNTOUCHED = {
    "1d[3:3]": {"raises": "RuntimeError: Invalid indexing in slice: 3:3:1"},
    "1d[2:1]": {"raises": "RuntimeError: Invalid indexing in slice: 2:1:1"},
    "1d[1:2]": {**EMPTY, "shape": [1], "size": 1, "offset": 4, "values": [1.0]},
}


def view(outcomes: dict, name: str):
    return outcomes[name].get("raises") or outcomes[name]


@GATE.affected_only
def test_needed_empty_slices_raise_without_gpushim():
    outcomes = run_corpus()
    for name, (released, _) in TELLING.items():
        assert view(outcomes, name) == f"RuntimeError: Invalid indexing in slice: {released}"
    assert {name: outcomes[name] for name in UNTOUCHED} == UNTOUCHED


@GATE.recorded_only
def test_faithful_corpus_matches_the_fixed_release():
    """Recorded patched on the affected releases and unpatched on 1.9.1; the matrix compares the files."""
    outcomes = record_corpus(patch, run_corpus)
    for name, (_, fixed) in TELLING.items():
        assert "raises" not in outcomes[name]
        if fixed is not None:
            assert outcomes[name] == fixed
    assert outcomes["3d[1:1, :0, -1:-1]"]["shape"] == [0, 0, 0]  # the fix's regression test
    assert outcomes["a kernel over 1d[1:1]"] == {"base": [0.0, 0.0, 0.0]}
    assert outcomes["numpy of the host copy of 1d[1:1]"] == {"raises": "ValueError"}  # NumPy refuses a null pointer
    assert {name: outcomes[name] for name in UNTOUCHED} == UNTOUCHED


@GATE.affected_only
def test_tracebacks_point_at_warps_own_source():
    """The recompiled method keeps Warp's file and line numbers: an error names the line Warp's file has."""
    import linecache
    import traceback

    with applied(patch):
        try:
            warp.zeros(3, dtype=float, device="cpu")[3:3]
        except RuntimeError as error:
            frame = traceback.extract_tb(error.__traceback__)[-1]
    assert frame.filename == warp.types.__file__
    assert "raise RuntimeError" in linecache.getline(frame.filename, frame.lineno)


@GATE.affected_only
@pytest.mark.parametrize("key", [slice(1, 2), (slice(0, 2), 1)])
def test_non_empty_views_are_the_releases_own(key):
    base = warp.array(np.arange(12, dtype=np.float32).reshape(3, 4), device="cpu")
    released = described(base, base[key])
    with applied(patch):
        assert described(base, base[key]) == released
