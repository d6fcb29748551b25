"""CUDA Array Interface producers and what DALI makes of them, without a GPU.

Every producer points at a made-up device address: with ``device_id=0`` and
no stream to adopt, DALI wraps the pointer without any CUDA call and never
touches the memory, so shapes, types, layouts, pointers and error messages
can be compared on any machine.  A stream DALI adopts makes it call CUDA,
which fails without a GPU (a CUDA runtime or driver API error): that error
is how a test sees that a stream reached DALI.
"""

from __future__ import annotations

import re

from gpushim.device import MADE_UP_ADDRESS

DEVICE = 0


class Producer:
    """An object whose ``__cuda_array_interface__`` is exactly ``interface``."""

    def __init__(self, interface: dict, name: str = "producer") -> None:
        self.__cuda_array_interface__ = interface
        self.name = name
        shape = interface.get("shape")
        self.shape = shape  # what fn.external_source reads to check a batch

    def __repr__(self) -> str:
        return f"<Producer {self.name}>"


def interface(shape=(2, 3), typestr="<f4", stream=..., **fields) -> dict:
    """A version 3 interface at :data:`MADE_UP_ADDRESS`; ``stream=...`` leaves the key out."""
    described = {"shape": shape, "typestr": typestr, "data": (MADE_UP_ADDRESS, False), "version": 3}
    described.update(fields)
    if stream is not ...:
        described["stream"] = stream
    return described


def _interfaces() -> dict[str, dict]:
    cases = {
        "f4 2x3": interface(),
        "f8 4": interface((4,), "<f8"),
        "i4 1x1x5": interface((1, 1, 5), "<i4"),
        "u1 2x2x3 HWC": interface((2, 2, 3), "|u1"),
        "f2 3x2": interface((3, 2), "<f2"),
        "b1 5": interface((5,), "|b1"),
        "i8 0x3 empty": interface((0, 3), "<i8", data=(0, False)),
        "u2 scalar": interface((), "<u2"),
        "i2 2x3 contiguous strides": interface((2, 3), "<i2", strides=(6, 2)),
        "f4 1x1x5 collapsed strides": interface((1, 1, 5), "<f4", strides=(4, 20, 4)),
        "f4 2x3 strided": interface((2, 3), "<f4", strides=(16, 4)),
        "f4 2x3 wrong number of strides": interface((2, 3), "<f4", strides=(4,)),
        "version 2": interface(version=2),
        "mask None": interface(mask=None),
        "mask set": interface(mask=Producer(interface(typestr="|b1"))),
        "descr": interface(descr=[("", "<f4")]),
        "big endian f4": interface((4,), ">f4"),
        "unsupported typestr c8": interface((4,), "<c8"),
        "typestr not a string": interface((4,), 4),
        "shape a list": interface([2, 3]),
        "no version": {"shape": (4,), "typestr": "<f4", "data": (MADE_UP_ADDRESS, False)},
        "data one item": interface(data=(MADE_UP_ADDRESS,)),
    }
    corpus = {}
    for name, described in cases.items():
        corpus[f"{name}, stream absent"] = dict(described)
        corpus[f"{name}, stream None"] = {**described, "stream": None}
    return corpus


INTERFACES = _interfaces()
LAYOUTS = {1: "A", 2: "HW", 3: "HWC"}


def layout_for(described: dict) -> str:
    shape = described.get("shape")
    return LAYOUTS.get(len(shape), "") if isinstance(shape, (tuple, list)) else ""


def normalized_message(error: BaseException) -> str:
    """The message without what differs between builds: source lines and native stack traces."""
    message = str(error).split("\nStacktrace")[0]
    message = re.sub(r"\[/[^\]]*\.(cc|h|cu|cuh):\d+\] ", "", message)
    # DALI_ENFORCE quotes the C++ condition it checked; its wording changes between releases.
    message = re.sub(r'Assert on ".*?" failed: ', "", message, flags=re.DOTALL)
    return re.sub(r" at 0x[0-9a-f]+", "", message)


def outcome(build, *arguments) -> dict:
    """What ``build(*arguments)`` gives: its tensor's type, shape, dtype, layout, pointer, or the error."""
    try:
        tensor = build(*arguments)
    except Exception as error:
        context = error.__context__
        return {
            "error": type(error).__name__,
            "message": normalized_message(error),
            "during": None if context is None else f"{type(context).__name__}: {context}",
        }
    return describe(tensor)


def describe(tensor) -> dict:
    if isinstance(tensor, list):
        return {"list": [describe(item) for item in tensor]}
    return {
        "type": type(tensor).__qualname__,  # __module__: backend_impl in 1.31/1.32, tensors in 1.35
        "shape": [list(extent) for extent in tensor.shape()]
        if type(tensor).__name__.startswith("TensorList")
        else list(tensor.shape()),
        "dtype": str(tensor.dtype),
        "layout": tensor.layout(),
        "data_ptr": _data_ptr(tensor),
    }


def _data_ptr(tensor):
    try:
        return tensor.data_ptr()
    except RuntimeError:  # an empty TensorListGPU is not contiguous and has none
        return None


def called_cuda(result: dict) -> bool:
    """Whether an :func:`outcome` is DALI failing in a CUDA call, as every one fails without a GPU."""
    return result.get("error") == "RuntimeError" and result["message"].startswith(
        ("CUDA runtime API error", "CUDA driver API error")
    )


def routes():
    """Every way into DALI's CUDA Array Interface constructor that runs without a GPU.

    Names map to ``build(described, layout)`` functions.  The external-source
    route is the conversion ``Pipeline.feed_input``, ``fn.external_source``
    and eager mode share; what follows it (a user stream, a copy) needs a GPU.
    """
    from nvidia.dali.external_source import _prep_data_for_feed_input
    from nvidia.dali.tensors import TensorGPU, TensorListGPU

    return {
        "TensorGPU positional": lambda d, layout: TensorGPU(Producer(d), layout, DEVICE),
        "TensorGPU keywords": lambda d, layout: TensorGPU(object=Producer(d), layout=layout, device_id=DEVICE),
        "TensorListGPU positional": lambda d, layout: TensorListGPU(Producer(d), layout, DEVICE),
        "TensorListGPU keywords": lambda d, layout: TensorListGPU(object=Producer(d), layout=layout, device_id=DEVICE),
        "external source sample list": lambda d, layout: _prep_data_for_feed_input(
            [Producer(d), Producer(d)], 4, layout, DEVICE
        ),
        "external source batch": lambda d, layout: _prep_data_for_feed_input(
            Producer(d), 4, layout[1:] if layout else layout, DEVICE
        ),
    }


def corpus_outcomes() -> dict[str, dict]:
    """Every interface of :data:`INTERFACES` through every route of :func:`routes`."""
    results = {}
    for route, build in routes().items():
        for name, described in INTERFACES.items():
            layout = layout_for(described)
            results[f"{route} | {name}"] = outcome(build, described, layout)
    return results
