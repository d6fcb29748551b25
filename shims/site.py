"""Where a patch changed things, so that it can be undone exactly.

A :class:`Site` is handed to a patch's ``apply``.  Every replacement goes
through it and is recorded with the object it replaced, so ``unpatch()``
puts back the identical original on every module or class it was set on,
and under every key of a mapping whose item it replaced.
"""

from __future__ import annotations

from .errors import ShapeError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, Callable, Union

    Owners = Union[object, Sequence[object]]

_ABSENT = object()


def _as_sequence(owners: Owners) -> Sequence[object]:
    return owners if isinstance(owners, (list, tuple)) else (owners,)


def _describe(owner: object) -> str:
    return getattr(owner, "__qualname__", None) or getattr(owner, "__name__", repr(owner))


def _own_attribute(owner: object, name: str) -> object:
    """The object ``owner`` holds under ``name``, without running descriptors.

    Looked up in the owner's own ``__dict__`` first so that a class keeps the
    very function, property or descriptor it had; an inherited one is read
    through ``getattr`` and marked so undo deletes rather than re-sets it.
    """
    try:
        return vars(owner)[name]
    except (TypeError, KeyError):
        pass
    try:
        getattr(owner, name)
    except AttributeError:
        raise ShapeError(f"{_describe(owner)} has no attribute {name!r}") from None
    return _ABSENT


class Site:
    """The replacements one application of a patch made."""

    def __init__(self) -> None:
        # (owner, name, original, False) for an attribute, (mapping, key, original, True) for an item
        self._replaced: list[tuple[Any, Any, object, bool]] = []
        self.wrapped_originals: list[object] = []

    @property
    def owners(self) -> list[tuple[object, str]]:
        return [(owner, name) for owner, name, _, item in self._replaced if not item]

    def replace(self, owners: Owners, name: str, new: object) -> object:
        """Bind ``name`` to ``new`` on each owner, remembering what was there."""
        owners = _as_sequence(owners)
        originals = [_own_attribute(owner, name) for owner in owners]
        for owner, original in zip(owners, originals):
            setattr(owner, name, new)
            self._replaced.append((owner, name, original, False))
        return new

    def replace_item(self, mapping: dict, key: object, new: object) -> object:
        """Bind ``mapping[key]`` to ``new`` in place, remembering what was there.

        For a table a library dispatches through, such as a class-level dict
        of handlers: every holder of the mapping sees the change, and other
        patches' items in it are left alone.  The key must be present; undo
        puts the identical original back under it, so the order is kept too.
        """
        try:
            original = mapping[key]
        except (KeyError, TypeError):
            raise ShapeError(f"the mapping has no item {key!r}") from None
        mapping[key] = new
        self._replaced.append((mapping, key, original, True))
        return new

    def wrap(
        self,
        owners: Owners,
        name: str,
        wrapper: Callable[[Any, Any, tuple, dict], Any],
    ) -> object:
        """Wrap the callable every owner binds to ``name`` with one wrapt wrapper.

        All owners must hold the same object: a wrapper that replaced only
        some of its bindings would leave the bug reachable through the rest.
        The installed wrapper exposes the original as ``__wrapped__``.
        """
        owners = _as_sequence(owners)
        original = _own_attribute(owners[0], name)
        if original is _ABSENT:
            original = getattr(owners[0], name)
        for owner in owners[1:]:
            other = getattr(owner, name, _ABSENT)
            if other is not original:
                raise ShapeError(f"{_describe(owner)}.{name} is not {_describe(owners[0])}.{name}")
        import wrapt

        self.wrapped_originals.append(original)
        return self.replace(owners, name, wrapt.FunctionWrapper(original, wrapper))

    def undo(self) -> None:
        """Put every original back, latest replacement first."""
        self.wrapped_originals.clear()
        while self._replaced:
            owner, name, original, item = self._replaced.pop()
            if item:
                owner[name] = original
            elif original is _ABSENT:
                delattr(owner, name)
            else:
                setattr(owner, name, original)
