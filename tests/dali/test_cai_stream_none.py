"""dali.cai_stream_none: a CUDA Array Interface saying ``"stream": None`` builds DALI tensors.

Runs without a GPU: producers describe a made-up address on device 0, which
DALI wraps without any CUDA call (see ``cai_corpus``).  Affected releases
(1.32 to 1.36) prove the patch needed and effective; 1.31, from before the
regression, proves it harmless and is the reference the corpus is compared
with.
"""

from __future__ import annotations

import gc
import json
import sys
import weakref
from pathlib import Path

import pytest

pytest.importorskip("nvidia.dali")

import nvidia.dali  # noqa: F401
from nvidia.dali import backend_impl

from gpushim.patches.dali.cai_stream_none import patch
from tests.dali.cai_corpus import (
    DEVICE,
    INTERFACES,
    Producer,
    called_cuda,
    corpus_outcomes,
    interface,
    outcome,
    routes,
)
from tests.gpu import PRESENT
from tests.support import applied, gate, record_faithful, run_python

GATE = gate(patch)
AFFECTED = GATE.affected
without_gpu = pytest.mark.skipif(
    PRESENT, reason="relies on CUDA calls failing, and would copy from made-up addresses on a GPU"
)

ROOT = Path(__file__).resolve().parents[2]
TensorGPU, TensorListGPU = CLASSES = (backend_impl.TensorGPU, backend_impl.TensorListGPU)
NONE = interface((2, 3), "<f4", stream=None)
ABSENT = interface((2, 3), "<f4")


def fresh_outcomes(gpushim_import: str | None, interfaces: dict[str, dict]) -> dict:
    """Every route's outcome for each of ``interfaces``, in a fresh interpreter.

    ``gpushim_import``: None (no gpushim), "before" or "after" ``import nvidia.dali``.
    """
    imports = ["import nvidia.dali"]
    if gpushim_import == "before":
        imports.insert(0, "import gpushim.auto")
    elif gpushim_import == "after":
        imports.append("import gpushim.auto")
    code = "\n".join(
        [
            "import json, sys, warnings",
            "warnings.simplefilter('ignore')",
            f"sys.path.insert(0, {str(ROOT)!r})",
            *imports,
            "from tests.dali.cai_corpus import layout_for, outcome, routes",
            f"interfaces = {interfaces!r}",
            "print(json.dumps({route + ' | ' + name: outcome(build, d, layout_for(d))",
            "                  for route, build in routes().items() for name, d in interfaces.items()}))",
        ]
    )
    done = run_python(code)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def built(result: dict) -> bool:
    return "error" not in result


def with_and_without_gpushim(function):
    """``function()`` as DALI is, then with this patch applied: the two results."""
    without = function()
    with applied(patch):
        return function(), without


# needed ------------------------------------------------------------------------------------


@GATE.affected_only
def test_stream_none_fails_on_every_route_without_gpushim():
    results = fresh_outcomes(None, {"none": NONE})
    assert len(results) == len(routes())
    for result in results.values():
        assert result["during"] == "TypeError: an integer is required"


@GATE.affected_only
def test_the_same_interface_without_stream_key_builds_without_gpushim():
    assert all(built(result) for result in fresh_outcomes(None, {"absent": ABSENT}).values())


# effective ---------------------------------------------------------------------------------


@GATE.affected_only
@pytest.mark.parametrize("gpushim_import", ["before", "after"])
def test_stream_none_builds_like_no_stream_key_on_every_route(gpushim_import):
    results = fresh_outcomes(gpushim_import, {"none": NONE, "absent": ABSENT})
    for route in routes():
        assert built(results[f"{route} | none"])
        assert results[f"{route} | none"] == results[f"{route} | absent"]


@GATE.affected_only
def test_results_are_the_plain_dali_classes(gpushim_patched):
    assert type(TensorGPU(Producer(NONE), "HW", DEVICE)) is TensorGPU
    assert type(TensorListGPU(Producer(NONE), "W", DEVICE)) is TensorListGPU


@GATE.affected_only
def test_positional_and_keyword_forms_keep_shape_layout_and_pointer(gpushim_patched):
    for tensor in (
        TensorGPU(Producer(NONE), "HW", DEVICE),
        TensorGPU(Producer(NONE), layout="HW", device_id=DEVICE),
        TensorGPU(object=Producer(NONE), layout="HW", device_id=DEVICE),
    ):
        assert (tensor.shape(), tensor.layout(), tensor.data_ptr()) == ([2, 3], "HW", NONE["data"][0])
    for tensors in (
        TensorListGPU(Producer(NONE), "W", DEVICE),
        TensorListGPU(object=Producer(NONE), layout="W", device_id=DEVICE),
    ):
        expected = ([(3,), (3,)], "W", NONE["data"][0])
        assert (tensors.shape(), tensors.layout(), tensors.data_ptr()) == expected


@GATE.affected_only
@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_the_producer_lives_as_long_as_the_tensor(gpushim_patched, cls):
    producer = Producer(NONE)
    alive = weakref.ref(producer)
    tensor = cls(producer, "", DEVICE)
    del producer
    gc.collect()
    assert alive() is not None
    del tensor
    gc.collect()
    assert alive() is None


@GATE.affected_only
@without_gpu
@pytest.mark.parametrize("stream", [1, 2, 0, 0x5EED])
def test_integer_streams_reach_dali_unchanged(stream):
    """DALI adopts an integer stream, which calls CUDA: without a GPU, that call fails."""
    described = interface((2, 3), "<f4", stream=stream)
    with_gpushim, without = with_and_without_gpushim(lambda: outcome(TensorGPU, Producer(described), "HW", DEVICE))
    assert with_gpushim == without
    assert called_cuda(with_gpushim)


def other_overloads() -> dict:
    """Every constructor that is not given a CUDA Array Interface object."""
    import numpy

    tensor = TensorGPU(Producer(ABSENT), "HW", DEVICE)
    tensors = TensorListGPU(Producer(ABSENT), "W", DEVICE)
    cases = {
        "TensorGPU(TensorGPU)": lambda: TensorGPU(tensor, "XY", DEVICE),
        "TensorGPU(host DLPack capsule)": lambda: TensorGPU(numpy.arange(4).__dlpack__()),
        "TensorListGPU()": lambda: TensorListGPU(),
        "TensorListGPU(TensorListGPU, layout)": lambda: TensorListGPU(tensors, "X"),
        "TensorListGPU(tl=TensorListGPU)": lambda: TensorListGPU(tl=tensors),
        "TensorListGPU([TensorGPU])": lambda: TensorListGPU([tensor, tensor], "HW"),
        "TensorListGPU(list_of_tensors=[TensorGPU])": lambda: TensorListGPU(list_of_tensors=[tensor]),
        "TensorListGPU(host DLPack capsule)": lambda: TensorListGPU(numpy.ones((2, 2)).__dlpack__()),
        "TensorGPU(not an array)": lambda: TensorGPU(5),
    }
    return {name: outcome(build) for name, build in cases.items()}


@GATE.affected_only
@without_gpu
def test_tensors_lists_and_capsules_are_taken_as_before():
    with_gpushim, without = with_and_without_gpushim(other_overloads)
    assert with_gpushim == without
    assert built(with_gpushim["TensorGPU(TensorGPU)"])
    assert built(with_gpushim["TensorListGPU(tl=TensorListGPU)"])


class ReadSpy:
    """A producer that records which module reads its interface."""

    def __init__(self, described: dict) -> None:
        self.described = described
        self.readers: list[str] = []

    @property
    def __cuda_array_interface__(self):
        self.readers.append(sys._getframe(1).f_globals.get("__name__"))
        return self.described


@GATE.affected_only
@without_gpu
def test_list_elements_are_converted_through_the_patched_constructor(gpushim_patched):
    """pybind11 converts list elements by calling TensorGPU, so through its patched ``__init__``.

    The conversion asks CUDA for the current device, so without a GPU it
    fails with or without gpushim; what shows is that the patch read the
    element's interface, and so handed DALI the stand-in.
    """
    spy = ReadSpy(NONE)
    result = outcome(TensorListGPU, [spy], "HW")
    assert result["message"] == "Object at position 0 cannot be converted to TensorGPU."
    assert spy.readers == [patch.apply.__module__]


@GATE.affected_only
def test_a_failed_construction_can_be_reported_with_the_locals_of_every_frame():
    """An unbuilt DALI tensor crashes when printed; the patch's frame must not show one."""
    code = "\n".join(
        [
            "import traceback, gpushim.auto",
            "from nvidia.dali.tensors import TensorGPU, TensorListGPU",
            "for cls in (TensorGPU, TensorListGPU):",
            "    try:",
            "        cls(5, '', 0)",
            "    except RuntimeError as error:",
            "        report = traceback.TracebackException.from_exception(error, capture_locals=True)",
            "        print(''.join(report.format()).count('<DALI constructor>'))",
        ]
    )
    done = run_python(code)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["1", "1"]


# harmless -----------------------------------------------------------------------------------


@GATE.unaffected_only
def test_stream_none_builds_like_no_stream_key_without_gpushim():
    results = fresh_outcomes(None, {"none": NONE, "absent": ABSENT})
    for route in routes():
        assert built(results[f"{route} | none"])
        assert results[f"{route} | none"] == results[f"{route} | absent"]


# faithful -----------------------------------------------------------------------------------


def test_corpus_outcomes_are_recorded_for_the_matrix(gpushim_patched):
    """Patched affected releases and the reference must agree on every case; the matrix compares.

    Integer streams are not in the corpus: 1.31 ignores them while the fixed
    release adopts them (a CUDA call); the patch leaves them to DALI
    (test_integer_streams_reach_dali_unchanged).
    """
    outcomes = corpus_outcomes()
    record_faithful(patch, outcomes)
    assert len(INTERFACES) >= 40
    for key, result in outcomes.items():
        if key.endswith(", stream None"):
            assert result == outcomes[key.replace(", stream None", ", stream absent")], key
