"""Corrected native source for what a library compiles at run time: its target checked first, undone by the journal.

Warp and CuPy compile C++ at run time: Warp each module's generated source
after a module header that includes its ``native/*.h``, CuPy its kernels'
templates.  A bug inside one of those header functions is fixed by an
overlay: the patch's own corrected function, compiled into every module in
place of the release's, while the release's headers stay as they are (and so
do the precompiled headers a release builds from them).

:class:`NativeFunction` is what the overlay expects of its target: the
release's function, found by its declaration, holding the text the bug is.
:class:`Inserted` is the module header the library formats, or prefixes to a
source, with the patch's code inserted at one of its lines each time; it keeps
the header it replaced as ``__wrapped__`` and composes with what is below it,
so that two patches' insertions can be undone in either order.
"""

from __future__ import annotations

from .errors import TargetMismatch


def _squeezed(text: str) -> str:
    return "".join(text.split())


class NativeFunction:
    """A function of a release's native source as an overlay expects it: ``declaration``, its body holding ``holds``.

    Both are compared without whitespace, so a release that only reformats
    the function still matches, and one that changed it does not.
    """

    def __init__(self, declaration: str, *holds: str) -> None:
        self.declaration, self.holds = declaration, holds

    def __repr__(self) -> str:
        return f"NativeFunction({self.declaration!r})"

    def body(self, source: str) -> str:
        """The function's body in ``source``, without whitespace; TargetMismatch where ``source`` lacks the function."""
        text = _squeezed(source)
        start = text.find(_squeezed(self.declaration) + "{")
        if start < 0:
            raise TargetMismatch(f"no function {self.declaration}")
        depth, position = 0, start + len(_squeezed(self.declaration))
        for end in range(position, len(text)):
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            if depth == 0:
                return text[position : end + 1]
        raise TargetMismatch(f"the body of {self.declaration} does not end")

    def check(self, source: str, where: str) -> None:
        """Raise TargetMismatch naming ``where`` unless ``source`` has the function, holding what it corrects."""
        try:
            body = self.body(source)
        except TargetMismatch as mismatch:
            raise TargetMismatch(f"{where} has {mismatch}") from None
        for held in self.holds:
            if _squeezed(held) not in body:
                raise TargetMismatch(f"{self.declaration} of {where} no longer holds {held.strip()!r}")


class _Text(str):
    """Source text bound where a release bound its own (kept as ``__wrapped__``): copied as a str, pickled as text."""

    __wrapped__: str

    def __copy__(self):
        return self  # as copying a str gives itself

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return str, (str(self),)


class Inserted(_Text):
    """A source header with ``before`` and ``after`` around its first ``line``, each time it is formatted or added to.

    The library reads the header as a format template (``.format(block_dim=...)``)
    or prefixes it to a source (``header + source``): both insert the code
    into the header below, which is the ``__wrapped__`` one (the journal
    re-points it when a patch beneath is undone), after it has been
    formatted, so the code's braces stay as written.  As text, it is the
    header with the code inserted.
    """

    _gpushim_layer = True  # the journal may re-point ``__wrapped__``
    line: str
    before: str
    after: str

    def __new__(cls, released: str, line: str, before: str = "", after: str = ""):
        if line not in released:
            raise TargetMismatch(f"the header has no line {line.strip()!r}")
        inserted = super().__new__(cls, released.replace(line, before + line + after, 1))
        inserted.__wrapped__, inserted.line, inserted.before, inserted.after = released, line, before, after
        return inserted

    def _insert(self, text: str) -> str:
        return text.replace(self.line, self.before + self.line + self.after, 1)

    def format(self, *args, **kwargs) -> str:
        return self._insert(self.__wrapped__.format(*args, **kwargs))

    def __add__(self, other: str) -> str:
        return self._insert(self.__wrapped__ + other)


class Renamed(_Text):
    """A native function's new name, bound where the release bound its own (kept as ``__wrapped__``)."""

    def __new__(cls, released: str, name: str):
        renamed = super().__new__(cls, name)
        renamed.__wrapped__ = released
        return renamed
