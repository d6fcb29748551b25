"""``v[1:] = torch.tensor([1.0, 2.0])`` on a Warp vector leaves the slice as it was (Warp 1.x before 1.11.0).

What breaks.  A vector's ``__setitem__`` hands a slice to ``ctypes.Array``,
which takes only sequences: a torch tensor, a set, a dict view or any other
sized iterable that is not a sequence makes it raise ``TypeError`` ("Tensor is
not a sequence").  The vector then checks that each item converts to its
scalar type, to raise a clearer ``TypeError`` for one that does not, and
returns without assigning anything: ``v = wp.vec3(); v[1:] =
torch.tensor([1.0, 2.0])`` leaves ``[0, 0, 0]``, and nothing raises.

Fixed upstream.  NVIDIA/warp GH-1121, fixed by NVIDIA/warp@f5175e1f1 (in
1.11.0), which assigns each converted item in that fallback.  The fallback
that checks without assigning came with NVIDIA/warp@4804a46c0 (0.11.0), so
every 1.x release before 1.11.0 has it (run on 1.0.2 and 1.10.1).  A size
mismatch is refused by ``ctypes`` with ``ValueError`` before the fallback,
in both.

How the fix works.  Each vector class ``warp.types.vector`` makes (``vec_t``;
``wp.vec3f``, quaternions and transforms subclass one and inherit its
method) gets its ``__setitem__`` wrapped: those that exist when the patch applies, and
each one ``vector`` makes afterwards (the factory is wrapped for that, as
``warp.vec`` and wherever Warp's modules import it).  A
slice assigned from an iterable, in a vector whose scalar is not
``float16`` (converted before the fallback, so never in it), is handed to
``ctypes.Array`` as the release hands it; where that raises ``TypeError``,
each item is converted to the scalar type and assigned in turn, as 1.11.0
does, and an item that does not convert goes back to the release, which
raises its own ``TypeError`` naming the item's type.  Everything else is
the release's.

Not backported.  1.11.0's changes elsewhere in ``types.py``.

The probe.  ``v = wp.vec3(); v[1:] = {1.0: None, 2.0: None}.keys()`` must
give ``[0, 1, 2]``: a dict view takes the same path as a torch tensor, and
needs no torch.
"""

from __future__ import annotations

import ctypes
import threading

from gpushim import Patch, TargetMismatch, expect

patch = Patch(
    id="warp.vec_slice_from_torch",
    affected="<1.11.0",
    fixed_in="1.11.0",
    issue="NVIDIA/warp GH-1121",
    fix="NVIDIA/warp@f5175e1f1",
    summary="v[1:] = torch.tensor(...) (any sized non-sequence) leaves a Warp vector's slice unassigned.",
)

_OWN_SETITEM = "vector.<locals>.vec_t.__setitem__"  # the method each class made by ``vector`` defines


def _slice_assignment(float16):
    """The wrapper of a vector class's ``__setitem__``: 1.11.0's fallback for a slice ``ctypes`` refuses."""

    def wrapper(wrapped, instance, args, kwargs):
        try:
            key, value = args
        except ValueError:
            return wrapped(*args, **kwargs)
        if not isinstance(key, slice) or instance._wp_scalar_type_ is float16:
            return wrapped(*args, **kwargs)
        try:
            iter(value)
        except TypeError:
            return wrapped(*args, **kwargs)
        try:
            return ctypes.Array.__setitem__(instance, key, value)
        except TypeError:
            pass
        for index, item in zip(range(*key.indices(instance._length_)), value):
            try:
                converted = instance._type_(item)
            except TypeError:
                return wrapped(*args, **kwargs)  # the release's TypeError, naming the item's type
            ctypes.Array.__setitem__(instance, index, converted)
        return None

    return wrapper


def _made_by_vector(cls, types) -> bool:
    """Whether ``cls`` defines the ``__setitem__`` of the classes ``types.vector`` makes, as released."""
    method = vars(cls).get("__setitem__")
    return getattr(method, "__qualname__", None) == _OWN_SETITEM and method.__module__ == types.__name__


def _vector_classes(types):
    """Every vector class ``types.vector`` has made so far, among the subclasses of ``ctypes.Array``."""
    found, pending = set(), list(ctypes.Array.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if _made_by_vector(cls, types):
            found.add(cls)
    return list(found)


def _factory(journal, types, assignment):
    """The wrapper of ``vector``: a class it gives with the released ``__setitem__`` has it wrapped, once."""
    lock = threading.Lock()

    def wrapper(wrapped, instance, args, kwargs):
        cls = wrapped(*args, **kwargs)
        with lock:
            if _made_by_vector(cls, types):
                journal.wrap(cls, "__setitem__", assignment)
        return cls

    return wrapper


@patch.applier
def _apply(warp, journal):
    import sys

    types = sys.modules.get("warp._src.types") or sys.modules.get("warp.types")
    vector = expect(types, "vector", callable)
    classes = _vector_classes(types)
    if not set(expect(warp, "vec3", type).__mro__) & set(classes):
        raise TargetMismatch("warp.vec3 does not have the released vector __setitem__")
    assignment = _slice_assignment(expect(types, "float16", type))
    for cls in classes:
        journal.wrap(cls, "__setitem__", assignment)
    warp_modules = [
        module
        for name, module in list(sys.modules.items())
        if name.split(".")[0] == "warp" and isinstance(module, type(sys))
    ]
    holders = [module for module in warp_modules if vars(module).get("vector") is vector]
    installed = journal.wrap(holders, "vector", _factory(journal, types, assignment))
    if vars(warp).get("vec") is vector:
        journal.replace(warp, "vec", installed)  # the same object, which pickles by the name it was given


@patch.prober
def _probe():
    """``v = wp.vec3(); v[1:] = {1.0: None, 2.0: None}.keys()`` gives [0, 1, 2]."""
    import warp

    vector = warp.vec3(0.0, 0.0, 0.0)
    vector[1:] = {1.0: None, 2.0: None}.keys()
    if list(vector) != [0.0, 1.0, 2.0]:
        return f"v = wp.vec3(); v[1:] = a dict view of [1.0, 2.0] leaves {list(vector)}"
    return None
