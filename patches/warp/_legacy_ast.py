"""The ``ast`` names Python 3.14 removed, as 3.13 had them, for the Warp modules that still read them.

``Num``, ``Str``, ``Bytes``, ``NameConstant`` and ``Ellipsis`` are
subclasses of ``ast.Constant`` that no parser makes; ``isinstance`` asks the
type of a constant's value, as 3.8 to 3.13 did (a ``bool`` is a
``NameConstant``, never a ``Num``).  :data:`LEGACY_AST` is a view of ``ast``
that holds them and reads every other name through (``__wrapped__`` is
``ast``), bound in the namespace of the Warp modules that read them alone:
the view never changes ``ast`` itself.
"""

from __future__ import annotations

import ast
from types import ModuleType


class _Legacy(type):
    def __instancecheck__(cls, instance: object) -> bool:
        if not isinstance(instance, ast.Constant):
            return type.__instancecheck__(cls, instance)
        return isinstance(instance.value, cls.values) and not isinstance(instance.value, cls.excluded)


def _legacy(name: str, values: tuple[type, ...], excluded: tuple[type, ...] = ()) -> type:
    namespace = {"__module__": "ast", "__doc__": f"ast.{name} as Python 3.13 had it.", "values": values}
    return _Legacy(name, (ast.Constant,), {**namespace, "excluded": excluded})


Num = _legacy("Num", (int, float, complex), (bool,))
_CLASSES = {
    "Num": Num,
    "Str": _legacy("Str", (str,)),
    "Bytes": _legacy("Bytes", (bytes,)),
    "NameConstant": _legacy("NameConstant", (type(None), bool)),
    "Ellipsis": _legacy("Ellipsis", (type(...),)),
}
NAMES = tuple(_CLASSES)


class _View(ModuleType):
    """``ast`` with the removed names; every other attribute is read from ``ast`` itself."""

    def __init__(self) -> None:
        super().__init__("ast", ast.__doc__)
        for own in ("__package__", "__loader__", "__spec__"):
            del self.__dict__[own]
        vars(self).update(_CLASSES)
        self.__wrapped__ = ast

    def __getattr__(self, name: str) -> object:
        return getattr(self.__wrapped__, name)

    def __repr__(self) -> str:
        return f"<ast with the names Python 3.14 removed, as gpushim shows it to Warp: {self.__wrapped__!r}>"


LEGACY_AST = _View()
