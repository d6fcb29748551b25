"""Where a patch changed things, so that it can be undone exactly.

A :class:`Journal` is handed to a patch's ``apply``.  Every replacement goes
through it and is recorded with the object it replaced, so ``unpatch()``
puts back the identical original on every module or class it was set on.
Whatever a patch puts in place keeps what it replaced as ``__wrapped__``
(see :mod:`gpushim.wrappers`).
"""

from __future__ import annotations

import sys

from .errors import PatchError, TargetMismatch
from .shape import name_of
from .wrappers import PatchedProperty, is_wrapper, wrapper_type

TYPE_CHECKING = False  # typing costs ~2 ms to import; `import gpushim.auto` has a 5 ms budget
if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import ModuleType
    from typing import Any, Callable, Union

    Owners = Union[object, Sequence[object]]


def _as_sequence(owners: Owners) -> Sequence[object]:
    return owners if isinstance(owners, (list, tuple)) else (owners,)


def _describe(owner: object) -> str:
    return getattr(owner, "__qualname__", None) or getattr(owner, "__name__", repr(owner))


def _unpatched(value: Any) -> object:
    """``value``, or the original behind it if it is a wrapper whose journal was undone.

    A module imported again binds what its submodules held at that moment,
    which can be the wrapper of the application that is being replaced.
    """
    while is_wrapper(value) and value._self_retired:
        value = value.__wrapped__
    return value


def _own_attribute(owner: object, name: str) -> tuple[object, bool]:
    """The object ``owner`` binds to ``name`` and whether it is inherited, without running descriptors.

    Looked up in the owner's own ``__dict__`` first so that a class keeps the
    very function, property or descriptor it had; an inherited one is read
    through ``getattr``, and undo deletes it rather than re-setting it.
    """
    try:
        return _unpatched(vars(owner)[name]), False
    except (TypeError, KeyError):
        pass
    try:
        return _unpatched(getattr(owner, name)), True
    except AttributeError:
        raise TargetMismatch(f"{_describe(owner)} has no attribute {name!r}") from None


def _read(owner: object, name: str, original: object) -> object:
    """What reading ``owner.name`` gives while it holds ``original``: through a class, a static method's function."""
    try:
        if vars(owner).get(name) is original:
            return getattr(owner, name)
    except Exception:
        pass
    return original


class Replacement:
    """One binding a patch changed: ``owner.name`` was ``original`` (its own, or ``inherited``) and is ``new``.

    For an ``item``, the binding is ``owner[name]`` of a mapping instead; an
    ``added`` binding was not there at all (``original`` is None).
    """

    __slots__ = ("owner", "name", "original", "new", "inherited", "item", "added")

    def __init__(self, owner: Any, name: Any, original: object, new: Any, inherited: bool, item=False, added=False):
        self.owner, self.name, self.original, self.new = owner, name, original, new
        self.inherited, self.item, self.added = inherited, item, added

    def bound(self) -> object:
        """What the binding holds now (``None`` for an item or an attribute of the owner's own that is gone)."""
        if self.item:
            return self.owner.get(self.name)
        namespace = getattr(self.owner, "__dict__", None)
        return getattr(self.owner, self.name, None) if namespace is None else namespace.get(self.name)

    def restore(self) -> None:
        if self.item:
            self.owner[self.name] = self.original
        elif self.inherited or self.added:
            delattr(self.owner, self.name)
        else:
            setattr(self.owner, self.name, self.original)

    def __repr__(self) -> str:
        return f"<Replacement {_describe(self.owner)}.{self.name}>"


# The replacements in place at each binding, oldest first, keyed by (id(owner), name): two
# patches can wrap the same function, and either may be undone first.
# Kept when importlib.reload() runs this module again (as %autoreload does).
_LAYERS: dict[tuple[int, Any], list[Replacement]] = globals().get("_LAYERS", {})


def _remove_layer(entry: Replacement) -> None:
    """Take ``entry`` out of its binding, leaving any wrapper put on top of it in place.

    A gpushim wrapper (or source layer, :mod:`gpushim.overlay`) above it is re-pointed at what ``entry`` replaced; the
    binding itself is restored only when ``entry`` is the top layer (or the
    layer above cannot be re-pointed, and then goes with it).
    """
    key = (id(entry.owner), entry.name)
    layers = _LAYERS.get(key, [])
    position = next((index for index, layer in enumerate(layers) if layer is entry), None)
    if position is None:
        return  # went with a layer below it
    above = layers[position + 1] if position + 1 < len(layers) else None
    if above is not None and entry.added:
        above.original, above.inherited, above.added = None, False, True  # undoing it now deletes the name
        del layers[position]
        return
    if above is not None and (is_wrapper(above.new) or getattr(type(above.new), "_gpushim_layer", False)):
        above.new.__wrapped__ = entry.original
        above.original, above.inherited = entry.original, entry.inherited
        del layers[position]
        return
    del layers[position:]
    if not layers:
        _LAYERS.pop(key, None)
    if _holds_its_own(entry):
        entry.restore()


def _holds_its_own(entry: Replacement) -> bool:
    """Whether the binding still holds what ``entry`` put there: one the program made since stays as it made it."""
    try:
        return entry.bound() is entry.new
    except Exception:
        return True  # an owner that hides its namespace: restore, as when nothing rebound it


class Journal:
    """The replacements one application of a patch made, in order."""

    def __init__(self, executing: ModuleType | None = None, release: tuple[str, str] | None = None) -> None:
        self.executing = executing  # the module about to execute, for a preparer's journal
        self.release = release  # (distribution, version) of what the patch changes, as the gate read it
        self.entries: list[Replacement] = []
        self.provided: dict[str, object] = {}
        self.lent: list[tuple[object, str, object, bool]] = []
        self.lent_names: list[str] = []  # what was ever lent, for status: it outlives the withdrawal
        self.provided_names: list[str] = []  # what was ever provided, for status likewise

    def provide(self, name: str, module: ModuleType) -> ModuleType:
        """Have the import statements of the module about to execute get ``module`` for ``name`` until :meth:`withdraw`.

        Nothing else sees it, ``sys.modules`` included (see :mod:`gpushim.provided`).
        Only a name that nothing holds can be provided: one the user's
        environment has is theirs.
        """
        from . import provided

        if self.executing is None:
            raise TypeError("only the journal of a preparer, for the module about to execute, provides modules")
        if name in sys.modules:
            raise TargetMismatch(f"sys.modules already holds {name!r}")
        provided.provide(self.executing, name, module)
        self.provided[name] = module
        self.provided_names.append(name)
        return module

    def lend(self, owner: object, name: str, value: object, shared: bool = False) -> object:
        """Have ``owner.name`` read as ``value`` by the module about to execute, until :meth:`withdraw`.

        For a shared module that only the executing module must see changed
        (a name NumPy 2 removed, on ``numpy``): the import statements of that
        module, and of its submodules for a package, get a view of ``owner``
        holding it (see :mod:`gpushim.provided`).  ``shared=True`` binds it on
        ``owner`` itself, where every thread sees it, for a compiled module
        that reads it: those import without ``__import__``.  Only a name
        ``owner`` does not hold itself can be lent.
        """
        from . import provided

        if name in vars(owner):
            raise TargetMismatch(f"{_describe(owner)} already holds {name!r}")
        if shared:
            setattr(owner, name, value)
        elif self.executing is None or not isinstance(owner, type(sys)):
            raise TypeError("only the journal of a preparer lends, and only a module's name, unless shared=True")
        else:
            provided.lend(self.executing, owner, name, value)  # pyright: ignore[reportArgumentType]  (a module, checked)
        self.lent.append((owner, name, value, shared))
        self.lent_names.append(f"{_describe(owner)}.{name}")
        return value

    def withdraw(self) -> None:
        """Withdraw what :meth:`provide` provided, and remove what :meth:`lend` bound where it still holds it.

        Raises as :meth:`undo` does.
        """
        _raise_for(self._withdraw())

    def _withdraw(self) -> list[str]:
        from . import provided

        stuck = []
        while self.provided:
            name, module = self.provided.popitem()
            provided.withdraw(self.executing, name, module)  # pyright: ignore[reportArgumentType]  (see provide)
        while self.lent:
            owner, name, value, shared = self.lent.pop()
            try:
                if not shared:
                    provided.take_back(self.executing, owner, name, value)  # pyright: ignore[reportArgumentType]  (see lend)
                elif vars(owner).get(name) is value:
                    delattr(owner, name)
            except Exception as error:
                stuck.append(f"{_describe(owner)}.{name} ({type(error).__name__}: {error})")
        return stuck

    def replace(self, owners: Owners, name: str, new: object) -> object:
        """Bind ``name`` to ``new`` on each owner, remembering what was there.

        ``new`` must keep what it replaces as ``__wrapped__``, as :meth:`wrap`'s
        wrappers do, so that the original is reachable the same way everywhere.
        """
        owners = _as_sequence(owners)
        originals = [_own_attribute(owner, name) for owner in owners]
        for owner, (original, inherited) in zip(owners, originals):
            setattr(owner, name, new)
            entry = Replacement(owner, name, original, new, inherited)
            self.entries.append(entry)
            _LAYERS.setdefault((id(owner), name), []).append(entry)
        return new

    def add(self, owners: Owners, name: str, value: object) -> object:
        """Bind ``name``, which no owner has, to ``value`` on each: a name a release lost by mistake.

        (more-itertools 11.0.0 dropped ``pairwise``, and 11.0.1 restored it.)
        A name an owner has, its own or inherited, is the release's, to
        replace or wrap, and is refused.  Undoing deletes the name again,
        where the owner still holds ``value``.
        """
        owners = _as_sequence(owners)
        for owner in owners:
            try:
                _own_attribute(owner, name)
            except TargetMismatch:
                continue
            raise TargetMismatch(f"{_describe(owner)} already has {name!r}: there is nothing to add")
        for owner in owners:
            setattr(owner, name, value)
            entry = Replacement(owner, name, None, value, inherited=False, added=True)
            self.entries.append(entry)
            _LAYERS.setdefault((id(owner), name), []).append(entry)
        return value

    def replace_item(self, mapping: dict, key: object, new: object) -> object:
        """Bind ``mapping[key]`` to ``new`` in place, remembering what was there.

        For a table a library dispatches through, such as a class-level dict of
        handlers: every holder of the mapping sees the change, the key keeps its
        place, and other items (another patch's among them) are left alone.
        """
        try:
            original = mapping[key]
        except (KeyError, TypeError):
            raise TargetMismatch(f"the mapping has no item {key!r}") from None
        mapping[key] = new
        entry = Replacement(mapping, key, original, new, inherited=False, item=True)
        self.entries.append(entry)
        _LAYERS.setdefault((id(mapping), key), []).append(entry)
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
        original, _ = _own_attribute(owners[0], name)
        for owner in owners[1:]:
            if _own_attribute(owner, name)[0] is not original:
                raise TargetMismatch(f"{_describe(owner)}.{name} is not {_describe(owners[0])}.{name}")
        patched = wrapper_type()(original, wrapper)
        patched._self_home = (owners[0], name)
        patched._self_read = _read(owners[0], name, original)
        patched._self_retired = False
        return self.replace(owners, name, patched)

    def wrap_property(
        self,
        owner: type,
        name: str,
        getter: Callable[[Callable[[Any], Any], Any], Any],
        doc: str,
    ) -> PatchedProperty:
        """Replace the property ``owner`` defines as ``name`` by one that reads through ``getter``.

        ``getter(released, instance)`` is called for each read, with the
        released property's getter; setting and deleting stay the release's.
        The new property keeps the released one as ``__wrapped__`` and has
        ``doc`` as its docstring.
        """
        released = vars(owner).get(name) if isinstance(owner, type) else None
        if not isinstance(released, property) or released.fget is None:
            raise TargetMismatch(f"{name_of(owner)}.{name} is not a property with a getter")
        read = released.fget

        def fget(instance):
            return getter(read, instance)

        fget.__name__, fget.__qualname__ = name, f"{owner.__qualname__}.{name}"
        patched = PatchedProperty(fget, released, doc)
        self.replace(owner, name, patched)
        return patched

    @property
    def wrapped_originals(self) -> list[object]:
        return [entry.original for entry in self.entries if is_wrapper(entry.new)]

    def undo(self) -> None:
        """Put every original back, latest replacement first, and withdraw what was provided.

        A binding whose owner refuses to take its original back stops none of
        the others; then :class:`PatchError` names each binding left patched.
        """
        stuck = self._withdraw()
        while self.entries:
            entry = self.entries.pop()
            if is_wrapper(entry.new):
                entry.new._self_retired = True
            try:
                _remove_layer(entry)
            except Exception as error:
                stuck.append(f"{_describe(entry.owner)}.{entry.name} ({type(error).__name__}: {error})")
        _raise_for(stuck)


def _raise_for(stuck: list[str]) -> None:
    if stuck:
        raise PatchError(f"could not restore {', '.join(stuck)}")
