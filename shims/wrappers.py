"""The objects a patch puts in place, which pickle and copy as what they replaced.

:func:`wrapper_type` is the class of what :meth:`gpushim.Journal.wrap`
puts in place, a wrapt wrapper made on first use; :class:`PatchedProperty`
is what :meth:`gpushim.Journal.wrap_property` puts in place.  Each keeps
what it replaced as ``__wrapped__``.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing costs ~2 ms to import; `import gpushim.auto` has a 5 ms budget
if TYPE_CHECKING:
    from typing import Any, Callable

# What this module holds for the process is kept when importlib.reload() runs it again (as %autoreload does).
_PatchedFunction: Any = globals().get("_PatchedFunction")  # made by wrapper_type() once a patch wraps something


def is_wrapper(value: object) -> bool:
    """Whether ``value`` is of :func:`wrapper_type`, importing nothing: no wrapper exists before its class."""
    return _PatchedFunction is not None and isinstance(value, _PatchedFunction)


def _lookup(module_name: object, qualname: object) -> object:
    """The object pickle would find for ``module.qualname``, or None."""
    if not isinstance(module_name, str) or not isinstance(qualname, str):
        return None
    found = sys.modules.get(module_name)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return found


class _Reference:
    """Pickles as the module it names, loaded by ``importlib.import_module`` on the other side."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __reduce__(self):
        import importlib

        return importlib.import_module, (self.name,)


class _Namespace:
    """Pickles as the namespace of the class it holds, ``vars(cls)``, where a class keeps the patched object itself."""

    __slots__ = ("cls",)

    def __init__(self, cls: type) -> None:
        self.cls = cls

    def __reduce__(self):
        return vars, (self.cls,)


def _reduces_to_a_name(value: object) -> bool:
    """Whether pickle saves ``value`` as a global: its ``__reduce__`` gives a name, not a recipe."""
    try:
        return isinstance(value.__reduce__(), str)
    except Exception:
        return False


def wrapper_type() -> Any:
    """The wrapper class, made on first use: wrapt is imported only once a patch applies."""
    global _PatchedFunction
    if _PatchedFunction is not None:
        return _PatchedFunction
    import wrapt

    def raise_unless_picklable(original: object, patched: object, protocol: int) -> None:
        """Raise as pickling ``original`` would, unless pickle saves it by name, which now finds ``patched``.

        Functions and classes are saved by name, and so is what reduces to a
        name (``functools.lru_cache``'s wrapper): any other callable (a fused
        kernel, say) is saved by value, whatever name it claims.
        """
        import pickle
        import types

        found = None
        if isinstance(original, (types.FunctionType, types.BuiltinFunctionType, type)) or _reduces_to_a_name(original):
            found = _lookup(getattr(original, "__module__", None), getattr(original, "__qualname__", None))
        if found is not patched and getattr(found, "_self_parent", None) is not patched:
            pickle.dumps(original, protocol)

    class BoundPatchedFunction(wrapt.BoundFunctionWrapper):
        """A :class:`PatchedFunction` read through a class or an instance, which pickles and copies as that read does.

        Read through its class, it pickles as the patched function and copies
        to itself (a function read so is itself); through an instance, as a
        bound method does: by reference to that attribute of the instance
        (which must pickle), copied as that attribute of the instance or of a
        deep copy of it.
        """

        def __reduce_ex__(self, protocol):
            parent = self._self_parent
            if self._self_instance is not None:
                return getattr, (self._self_instance, parent._self_home[1])
            parent.__reduce_ex__(protocol)  # raises as the original would
            return getattr, parent._self_home

        def __copy__(self):
            if self._self_instance is None:
                self._self_parent.__copy__()
                return self
            return getattr(self._self_instance, self._self_parent._self_home[1])

        def __deepcopy__(self, memo):
            import copy

            if self._self_instance is None:
                self._self_parent.__deepcopy__(memo)
                return self
            return getattr(copy.deepcopy(self._self_instance, memo), self._self_parent._self_home[1])

    class PatchedFunction(wrapt.FunctionWrapper):
        """A wrapt wrapper that pickles and copies as the attribute it replaced.

        The original pickles by reference to where it was defined; this one
        pickles by reference to where the patch put it, so that loading gives
        the patched object back, and copies to itself as a function does.  An
        original that cannot be pickled or copied, as its owner gave it to be
        read (``_self_read``), makes this fail in the same way.
        """

        __bound_function_wrapper__ = BoundPatchedFunction

        def __reduce_ex__(self, protocol):
            import operator
            import pickle

            raise_unless_picklable(self._self_read, self, protocol)
            owner, name = self._self_home
            if isinstance(owner, type):
                return operator.getitem, (_Namespace(owner), name)  # getattr would bind it to the class
            if isinstance(owner, type(pickle)):
                owner = _Reference(owner.__name__)
            return getattr, (owner, name)

        def __copy__(self):
            import copy

            copy.copy(self._self_read)  # raises as the original would (a pybind11 method, say)
            return self

        def __deepcopy__(self, memo):
            import copy

            copy.deepcopy(self._self_read, memo)
            return self

    _PatchedFunction = PatchedFunction
    return PatchedFunction


class PatchedProperty(property):
    """A property put in place of ``released``, which it keeps as ``__wrapped__``, as every replacement does.

    It sets and deletes as ``released`` does, and copies to itself, as
    :mod:`copy` copies a property.
    """

    def __init__(self, fget: Callable[[Any], Any], released: property, doc: str) -> None:
        super().__init__(fget, released.fset, released.fdel)
        self.__doc__ = doc  # before Python 3.12 a subclass of property drops doc=
        self.__wrapped__ = released

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self
