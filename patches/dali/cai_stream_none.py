"""DALI 1.32 to 1.36 cannot wrap GPU memory whose CUDA Array Interface says ``"stream": None``.

What breaks.  Version 3 of the CUDA Array Interface lets a producer publish
``"stream": None`` to say that the consumer need not synchronize with
anything (PyCUDA's ``gpuarray`` does).  NVIDIA/DALI#5125, released in 1.32.0,
taught ``TensorGPU``/``TensorListGPU`` to adopt the producer's stream, but
converts the ``stream`` value to a pointer whenever the key is present.  For
None that conversion leaves a pending ``TypeError: an integer is required``
and goes on with a null stream, so the construction fails: with a GPU as a
``SystemError`` (a result with an error set), without one as the
``RuntimeError`` of the CUDA call that follows, with the ``TypeError`` as its
context.

Fixed upstream.  NVIDIA/DALI#5423, fixed by NVIDIA/DALI#5425 (1.37.0), which
skips a None stream, exactly what every release does when the key is absent.

How the fix works.  DALI is handed, in place of an object whose interface
says ``"stream": None``, a stand-in whose interface is the same dictionary
without the ``stream`` key.  DALI keeps a reference to the object it was
given for as long as the tensor shares its memory; the stand-in holds the
original, so the producer's buffer lives exactly as long as before.  Integer
streams, and objects without the key, reach DALI untouched.

The stand-in is given to ``__init__`` of the very classes, replaced in
place: the results stay plain ``TensorGPU``/``TensorListGPU`` instances
(DALI's plugins test ``type(t) is TensorGPU``), every other overload
(DLPack capsules, ``TensorListGPU(tl)``, lists of tensors) is reached as
before, and pybind11's implicit conversion of list elements into
``TensorGPU``, which calls the class, goes through the same ``__init__``.
That covers ``Pipeline.feed_input``, ``fn.external_source`` and eager mode,
which all build their GPU inputs with these constructors.  Nightly and weekly
builds are gated by their version like releases; their ``1.37.0.dev`` builds
from before the fix are left alone.

Not backported.  1.37 also starts rejecting a ``stream`` of ``0``; that is a
separate change.

The probe.  Device memory described with ``"stream": None`` wrapped on device
0.  With ``device_id=0`` and no stream to adopt, a right release asks nothing
of CUDA and never touches the memory, so without a GPU a made-up address
does; where a device is present it is real device memory.
"""

from __future__ import annotations

from gpushim import Patch, expect, expect_same

patch = Patch(
    id="dali.cai_stream_none",
    affected=">=1.32.0,<1.37.0",
    fixed_in="1.37.0",
    issue="NVIDIA/DALI#5423",
    fix="NVIDIA/DALI#5425 (regression from NVIDIA/DALI#5125)",
    summary="TensorGPU/TensorListGPU from a CUDA Array Interface whose stream is None fail.",
)


class _WithoutStream:
    """What DALI wraps instead of ``source``: its interface, less ``"stream": None``.

    DALI reads nothing from the object but ``__cuda_array_interface__`` and
    keeps the object alive while it shares the memory; ``source`` rides
    along so that the producer's buffer does too.  ``repr`` is the
    source's so that pybind11's messages, which list the arguments, do not
    change.
    """

    __slots__ = ("__cuda_array_interface__", "source")

    def __init__(self, source: object, interface: dict) -> None:
        self.source = source
        self.__cuda_array_interface__ = interface

    def __repr__(self) -> str:
        return repr(self.source)


class _ConstructionInProgress:
    """DALI's ``__init__`` bound to the instance it is building, out of sight.

    Printing a DALI tensor whose ``__init__`` has not succeeded crashes the
    interpreter, and pytest, IPython and error reporters print the locals
    of every frame of a traceback.  DALI's own constructor has no Python
    frame; the wrapper's frame holds only this, whose ``repr`` is safe.
    """

    __slots__ = ("init",)

    def __repr__(self) -> str:
        return "<DALI constructor>"


def _constructor_wrapper(earlier_overloads: tuple[type, ...]):
    """A wrapt wrapper for ``__init__`` that fixes the CUDA Array Interface argument.

    That argument is the first positional one or ``object=``.  Objects an
    earlier overload takes (a list of tensors, a ``TensorListGPU``) are
    passed on as they are, so that overload still takes them.
    """

    def wrapper(wrapped, instance, args, kwargs):
        construction = _ConstructionInProgress()
        construction.init = wrapped  # not through an __init__, which would be one more Python call per construction
        del wrapped, instance  # see _ConstructionInProgress
        if args:
            source = args[0]
            if isinstance(source, earlier_overloads):
                return construction.init(*args, **kwargs)
        elif "object" in kwargs:
            source = kwargs["object"]
        else:
            return construction.init(*args, **kwargs)
        try:
            interface = getattr(source, "__cuda_array_interface__", None)
        except Exception:
            interface = None  # DALI reads it again and reports the object as it always did
        if isinstance(interface, dict) and "stream" in interface and interface["stream"] is None:
            stand_in = _WithoutStream(source, {key: value for key, value in interface.items() if key != "stream"})
            if args:
                args = (stand_in, *args[1:])
            else:
                kwargs = {**kwargs, "object": stand_in}
        return construction.init(*args, **kwargs)

    return wrapper


@patch.applier
def _apply(dali, journal):
    from nvidia.dali import backend_impl, tensors

    for name, earlier_overloads in (
        ("TensorGPU", ()),
        ("TensorListGPU", (list, backend_impl.TensorListGPU)),
    ):
        cls = expect(backend_impl, name)
        expect_same(
            getattr(tensors, name, None), cls, f"nvidia.dali.tensors.{name}", f"nvidia.dali.backend_impl.{name}"
        )
        expect(cls, "__init__", own=True)
        journal.wrap(cls, "__init__", _constructor_wrapper(earlier_overloads))


@patch.prober
def _probe():
    """Wrap device memory described with ``"stream": None`` on device 0.

    With ``device_id=0`` and no stream to adopt, a right release asks
    nothing of CUDA and never touches the memory, so without a GPU a
    made-up address does; where a device is present it is real device
    memory, so that no check of the pointer can stand in for the bug
    (gpushim.device).
    """
    from nvidia.dali.backend_impl import TensorGPU

    from gpushim.device import device_memory

    class Producer:
        def __init__(self, data):
            self.__cuda_array_interface__ = {
                "shape": (4,),
                "typestr": "<f4",
                "data": (data, False),
                "version": 3,
                "stream": None,
            }

    with device_memory(16) as data:
        try:
            TensorGPU(Producer(data), "", 0)
        except Exception as error:
            message = str(error).split("\n")[0]
            context = error.__context__
            during = f" (during {type(context).__name__}: {context})" if context is not None else ""
            return f"TensorGPU(obj) with 'stream': None raises {type(error).__name__}: {message}{during}"
    return None
