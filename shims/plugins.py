"""Patches from other distributions, found through the ``gpushim.patches`` entry point group.

A distribution declares a package laid out as ``gpushim.patches`` is, one
folder per library::

    [project.entry-points."gpushim.patches"]
    acme = "acme_fixes.patches"

Its folder ``acme_fixes/patches/warp/`` adds patches to a library gpushim
knows (``warp``, ``cupy``, ``dali``: the target and distributions are
gpushim's), and a folder of another name adds a library, whose ``__init__``
states ``TARGET`` and ``DISTRIBUTIONS`` as literals.  The ids are formed as
gpushim's own (``warp.acme_stream_leak``), and must differ from them.

Finding them imports nothing of theirs: the entry points are read from the
``entry_points.txt`` of the installed distributions (the listing of
:mod:`gpushim.releases`, without ``importlib.metadata``), the package's
folders are located by the import system's finders without executing it,
and a new library's ``__init__`` is read as text for its two literals.
Their patch modules are imported as gpushim's own are, when their target
finishes importing.

What cannot be used (a package that is not there, a folder that states no
target, an id gpushim or another distribution already has) is reported as a
``failed`` status record of its own, and everything else, gpushim's own
patches first, works on.
"""

from __future__ import annotations

import os
import sys

from .catalogue import Library, library_folders, module_loader, patch_ids
from .errors import InvalidDeclaration
from .states import FAILED, Record

TYPE_CHECKING = False  # typing costs ~2 ms to import; `import gpushim.auto` has a 5 ms budget
if TYPE_CHECKING:
    from collections.abc import Container, Iterable

    from .releases import Reader, _Listing
    from .states import Fields

GROUP = "gpushim.patches"


def find(own: list[Library]) -> tuple[list[Library], list[Record]]:
    """The libraries other distributions add to ``own``, and a failed record for each thing that cannot be used."""
    known = {library.name: library for library in own}
    taken = {id: library.origin for library in own for id in library.ids}
    libraries, problems = [], []
    try:
        declared = declarations()
    except Exception as error:
        return [], [problem("-", GROUP, f"the entry points could not be read ({type(error).__name__}: {error})")]
    for distribution, name, package in declared:
        try:
            found = _libraries(distribution, package, known)
        except Exception as error:
            problems.append(problem(distribution, name, f"{package}: {type(error).__name__}: {error}"))
            continue
        for library in found:
            for id in [id for id in library.ids if id in taken]:
                problems.append(problem(distribution, id, f"{taken[id]} already has a patch {id}"))
            library.ids = [id for id in library.ids if id not in taken]
            taken.update((id, distribution) for id in library.ids)
            if library.ids:
                libraries.append(library)
    return libraries, problems


def labelled(record: Fields) -> str:
    """The patch id of a status record, with the distribution it comes from when that is not gpushim."""
    origin = record.get("origin", "gpushim")
    return record["id"] if origin == "gpushim" or record["target"] is None else f"{record['id']} [{origin}]"


def problem(distribution: str, name: str, reason: str) -> Record:
    """The status record of something of ``distribution`` that cannot be used, named ``distribution:name``."""
    return Record(
        id=f"{distribution}:{name}",
        target=None,
        distribution=None,
        installed_version=None,
        affected=None,
        fixed_in=None,
        state=FAILED,
        reason=reason,
        upstream=None,
        summary=None,
        origin=distribution,
    )


def declarations() -> list[tuple[str, str, str]]:
    """``(distribution, name, package)`` of each entry point in the group, the first install of each distribution.

    Of two folders of one distribution in one ``sys.path`` entry that
    declare differently, the one that owns the files installed there says;
    of several that no file contradicts, the one that lists the most of them.
    The folders that cannot declare are known without reading them where
    :mod:`gpushim.entrycache` remembers their directory.
    """
    from . import entrycache

    found: list[tuple[str, str, str]] = []
    seen: list[Container[str]] = []  # the names each entry before installs
    for listing, names, candidates in entrycache.candidates(_declares):
        for key, folders in candidates:
            if any(key in earlier for earlier in seen):
                continue
            declared = {folder: _entry_points(listing.read, folder) for folder in folders}
            folder = folders[0]
            if len(set(declared.values())) > 1:
                folder = listing.most_vouched(listing.owners(folders))
            text = declared[folder]
            if text is not None:
                distribution = _name(listing.read, folder) or key
                found.extend((distribution, name, package) for name, package in _group(text.splitlines()))
        seen.append(names)
    return found


def _declares(listing: _Listing, folders: list[str]) -> bool:
    """Whether one of ``folders``, the metadata folders of one distribution in ``listing``, declares the group."""
    return any(_entry_points(listing.read, folder) is not None for folder in folders)


def _entry_points(read: Reader, folder: str) -> str | None:
    """The ``entry_points.txt`` of ``folder``, if it declares the group.

    Read as the version is (:mod:`gpushim.releases`): from a regular file, at
    most its first 256 KiB; one that cannot be read declares nothing.
    """
    data = read(f"{folder}/entry_points.txt")
    return data.decode("utf-8", "replace") if data and _MARK in data else None


_MARK = f"[{GROUP}]".encode()


def _group(lines: Iterable[str]) -> list[tuple[str, str]]:
    """The ``name = value`` lines of the section ``[gpushim.patches]`` of an ``entry_points.txt``."""
    entries, inside = [], False
    for line in lines:
        line = line.strip()
        if line.startswith("["):
            inside = line == f"[{GROUP}]"
        elif inside and line and not line.startswith(("#", ";")):
            name, _, value = line.partition("=")
            entries.append((name.strip(), value.strip()))
    return entries


def _name(read, folder: str) -> str | None:
    """The ``Name`` header of the distribution's metadata."""
    from .releases import text

    metadata = read(f"{folder}/METADATA") or read(f"{folder}/PKG-INFO")
    for line in text(metadata or b""):
        header, colon, value = line.partition(":")
        if not colon or not line.strip():
            return None
        if header.lower() == "name":
            return value.strip()
    return None


def _libraries(distribution: str, package: str, known: dict[str, Library]) -> list[Library]:
    if not package or ":" in package or "[" in package:
        raise InvalidDeclaration("the entry point must name a package (no object, no extras)")
    libraries = []
    for name, folder in library_folders(_folders(package)):
        target, distributions = _literals(os.path.join(folder, "__init__.py"))
        if name in known:
            own = known[name]
            if (target or own.target) != own.target or tuple(distributions or own.distributions) != own.distributions:
                raise InvalidDeclaration(f"{name}/__init__.py disagrees with gpushim's {own!r}")
            target, distributions = own.target, own.distributions
        elif target is None or distributions is None:
            raise InvalidDeclaration(f"{name}/__init__.py states no TARGET and DISTRIBUTIONS")
        ids = patch_ids(name, folder)
        libraries.append(Library(name, target, distributions, ids, module_loader(package), origin=distribution))
    return libraries


def _folders(package: str) -> list[str]:
    """The folders of the package ``package``, located as the import system would, executing none of it."""
    top, *rest = package.split(".")
    module = sys.modules.get(top)
    folders: list[str]
    if module is not None:
        folders = list(getattr(module, "__path__", ()))
    else:
        for finder in sys.meta_path:
            find_spec = getattr(finder, "find_spec", None)
            spec = find_spec(top, None) if find_spec is not None else None
            if spec is not None:
                folders = list(spec.submodule_search_locations or ())
                break
        else:
            raise ModuleNotFoundError(f"No module named {top!r}")
    for part in rest:
        folders = [os.path.join(folder, part) for folder in folders if os.path.isdir(os.path.join(folder, part))]
    if not folders:
        raise ModuleNotFoundError(f"No package named {package!r}")
    return folders


def _literals(path: str) -> tuple[str | None, tuple[str, ...] | None]:
    """``TARGET`` and ``DISTRIBUTIONS`` of a library folder's ``__init__``, read as text, never executed.

    Each is stated on a line of its own, in the first 256 KiB, as ``TARGET = "name"`` and
    ``DISTRIBUTIONS = ("name", ...)``: plain string literals, which is how
    gpushim's own folders state them (compiling the file instead would cost
    ``import gpushim.auto`` most of a millisecond).
    """
    from .releases import regular_file

    source = regular_file(path)
    if source is None:
        raise InvalidDeclaration(f"{path} cannot be read")
    stated: dict[str, str] = {}
    for line in source.decode("utf-8", "replace").splitlines():
        name, equals, value = line.partition("=")
        if equals and name.strip() in ("TARGET", "DISTRIBUTIONS"):
            stated[name.strip()] = value.partition("#")[0].strip()
    target = distributions = None
    if "TARGET" in stated:
        target = _string(stated["TARGET"])
        if target is None:
            raise InvalidDeclaration(f"{path}: TARGET is not a string literal: {stated['TARGET']}")
    if "DISTRIBUTIONS" in stated:
        value = stated["DISTRIBUTIONS"]
        items = [item.strip() for item in value[1:-1].split(",")] if value[:1] + value[-1:] in ("()", "[]") else [""]
        strings = [_string(item) for item in items if item]
        if not strings or None in strings or "" in items[:-1]:
            raise InvalidDeclaration(f"{path}: DISTRIBUTIONS is not a tuple of string literals: {value}")
        distributions = tuple(string for string in strings if string is not None)
    return target, distributions


def _string(literal: str) -> str | None:
    """The text of a plain string literal (``"warp"`` or ``'warp'``, no escapes), else ``None``."""
    quote = literal[:1]
    if quote in ('"', "'") and len(literal) >= 2 and literal.endswith(quote) and literal.count(quote) == 2:
        inner = literal[1:-1]
        return inner if "\\" not in inner else None
    return None
