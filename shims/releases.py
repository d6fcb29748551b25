"""Which release of a target is installed, and whether it is affected.

The import name alone is ambiguous (``warp`` on PyPI is another project,
``nvidia-dali`` is a placeholder), so releases come from the metadata of the
distributions a patch names.  This runs inside the user's ``import cupy``,
so it answers without ``importlib.metadata`` (20 ms and a hundred modules
that Warp, say, never imports) and, for the plain releases and ranges that
patches declare, without ``packaging``; the answers are the ones those two
give, by the rules below (tests/engine/test_releases.py checks them against
both on the same installs).

Finding installs: the rules of ``importlib.metadata``'s path finder.
- Each ``sys.path`` entry is listed, in order, as ``importlib.metadata``
  does: a directory with ``os.listdir`` (``""`` is the working directory), a
  zip file (a zipapp, a zipped egg) with ``zipfile``, imported only then.
- A child named ``<name>-<anything>.dist-info`` or ``.egg-info`` (any case;
  ``<name>.egg-info`` too, as ``setup.py develop`` leaves it in a source
  tree) installs ``<name>``.  Names are compared normalised as PEP 503 does,
  with ``-`` then written ``_`` as in wheel folder names (PEP 427 escaping):
  lower case, every run of ``-``, ``_`` and ``.`` one ``_``.  So
  ``Cupy.Cuda12x-13.3.0.dist-info`` installs ``cupy-cuda12x`` (as
  ``importlib.metadata`` finds it from Python 3.10; 3.9's does not normalise
  the name asked for).
- A ``*.egg`` entry on the path with an ``EGG-INFO`` child installs the
  name before the egg's first ``-``, lower case with ``-`` as ``_`` and dots
  kept (``importlib.metadata``'s legacy rule for eggs).
- Editable installs need nothing more: a PEP 660 install (setuptools'
  ``__editable__`` finders and ``.pth`` files, hatchling, flit) leaves an
  ordinary ``.dist-info`` in site-packages, and ``setup.py develop`` puts
  the source tree, with its ``<name>.egg-info``, on the path.
- Another ``sys.meta_path`` finder that finds distributions (beside
  ``PathFinder``) is consulted only through ``importlib.metadata``, which is
  then imported.
- Every install of a distribution is reported, in path order (sorted by
  folder name within one entry): two releases side by side are for the
  engine to tell apart with the module's ``__version__``, which must agree
  with one of them (:func:`same_release`); ``importlib.metadata`` would pick
  the first one ``os.listdir`` happens to return.

The version: the ``Version`` header of ``METADATA``, else of ``PKG-INFO``
(else of the ``.egg-info`` file itself), read up to that header, never from
the folder name.  The folder name would do for installs made by an
installer, which names the folder after ``Name`` and ``Version``, but a
hand-made or broken install can disagree with it, and then gpushim reports
what ``importlib.metadata`` reports: a missing header or an unreadable file
is a version of ``None``.

A thousand other folders cost little beyond the listing: only the names
asked for are looked up (one ``str.find`` per library in the listing, lower
case and joined once), and only their metadata is read.  The listing is the
one the import system keeps for the entry, when it is current: the
standard library's ``FileFinder`` in ``sys.path_importer_cache``, whose
``_path_mtime`` is the directory's ``st_mtime`` (the same test the import
system makes before it trusts its listing; the attributes date from Python
3.3, and the engine's tests run on 3.9 to 3.13).  Any other entry is listed
with ``os.listdir``.  Listing a site-packages of a thousand folders takes
0.36 ms here, nearly as long as all the rest of ``status()``, and the
target's import has just done it.

Once per process: each ``sys.path`` entry is listed, and each ``METADATA``
read, the first time a question needs it, and the answer to each question
is kept for as long as ``sys.path`` is the same.  What the process imported
does not change when an install changes under it; :func:`forget` drops
everything, the import system's listings included, for a test that changes
an install that was already read.

Ranges: a plain release (``13.3.0``: digits and dots) against a specifier
whose clauses are all ``>=``, ``<=``, ``>``, ``<``, ``==`` or ``!=`` and a
plain release compares release tuples with trailing zeros dropped, which is
what PEP 440 says for final releases (``13.3 == 13.3.0``; ``<`` and ``>``
only treat pre-, post- and local releases specially).  Anything else (pre,
post, dev or local parts, epochs, wildcards, ``~=``, ``===``, a version that
is not PEP 440) goes to ``packaging``; when it cannot be imported, only those
unusual cases fail, with :class:`BadVersion`.
"""

from __future__ import annotations

import io
import os
import sys

# The classes behind importlib.machinery's PathFinder and FileFinder, loaded with the interpreter.
from _frozen_importlib_external import FileFinder, PathFinder

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Callable, Optional, TextIO

    Reader = Callable[[str], Optional[TextIO]]


class BadVersion(ValueError):
    """A release that cannot be placed in a range; the message says why."""


class _Entry:
    """What one ``sys.path`` entry installs."""

    __slots__ = ("children", "listing", "eggs", "read", "starting", "versions")

    def __init__(self, children: list[str], eggs: dict, read: Reader) -> None:
        self.children = children
        self.listing = "\0" + "\0".join(children).lower()
        self.eggs = eggs
        self.read = read
        self.starting: dict[str, list[str]] = {}
        self.versions: dict[str, str | None] = {}

    def folders_of(self, name: str) -> list[str]:
        """The ``.dist-info`` and ``.egg-info`` children that install ``name`` (normalised), sorted."""
        # A folder's normalised name starts with the same run of letters and digits as the folder,
        # and the names of one library share it (cupy-cuda12x, cupy-cuda11x, ... are one look).
        first = name.partition("_")[0]
        try:
            children = self.starting[first]
        except KeyError:
            children = self.starting[first] = self._starting_with(first)
        return sorted(child for child in children if _folder_name(child) == name)

    def _starting_with(self, prefix: str) -> list[str]:
        needle = "\0" + prefix
        found = []
        position = self.listing.find(needle)
        while position != -1:
            found.append(self.children[self.listing.count("\0", 0, position)])
            position = self.listing.find(needle, position + 1)
        return found

    def version(self, folder: str) -> str | None:
        try:
            return self.versions[folder]
        except KeyError:
            version = self.versions[folder] = _version_header(self.read, folder)
            return version


_entries: dict[str, _Entry] = {}
_installs: dict[tuple[tuple[str, ...], tuple[str, ...]], tuple[tuple[str, str | None], ...]] = {}
_specifiers: dict[str, list[tuple[str, tuple[int, ...]]] | None] = {}


def forget() -> None:
    """Drop everything read so far: the next question lists and reads again."""
    import importlib

    importlib.invalidate_caches()
    _entries.clear()
    _installs.clear()
    _specifiers.clear()


def installed(distributions: Iterable[str]) -> list[tuple[str, str | None]]:
    """``(distribution, version)`` for every install of each of ``distributions``.

    In the order of ``distributions``, then of ``sys.path``; the version is
    ``None`` when the metadata states none.
    """
    if any(finder is not PathFinder and hasattr(finder, "find_distributions") for finder in sys.meta_path):
        return _installed_by_importlib(distributions)
    key = (tuple(distributions), tuple(path for path in sys.path if isinstance(path, str)))
    try:
        return list(_installs[key])
    except KeyError:
        pass
    entries = [_entry(path) for path in key[1]]
    found: list[tuple[str, str | None]] = []
    for distribution in key[0]:
        name, legacy = _normalise(distribution), distribution.lower().replace("-", "_")
        for entry in entries:
            for folder in entry.folders_of(name) + entry.eggs.get(legacy, []):
                install = (distribution, entry.version(folder))
                if install not in found:
                    found.append(install)
    _installs[key] = tuple(found)
    return found


def metadata_folders() -> list[tuple[str, str, Reader]]:
    """``(path, folder, reader)`` for every ``.dist-info`` and ``.egg-info`` folder of each ``sys.path`` entry.

    In path order, sorted by name within an entry, listed as :func:`installed`
    lists them; for :mod:`gpushim.plugins` to read the entry points declared.
    """
    found = []
    for path in sys.path:
        if isinstance(path, str):
            entry = _entry(path)
            found.extend(
                (path, child, entry.read) for child in sorted(entry.children) if child.lower().endswith(_METADATA)
            )
    return found


def is_affected(version: str | None, specifier: str) -> bool:
    """Whether ``version`` lies in ``specifier``, pre-releases included.

    Raises :class:`BadVersion` for a missing or non-PEP 440 version, a
    specifier that is not PEP 440, or an unusual one when ``packaging``
    cannot be imported.
    """
    if version is None:
        raise BadVersion("the installed metadata states no Version")
    try:
        clauses = _specifiers[specifier]
    except KeyError:
        clauses = _specifiers[specifier] = _plain_clauses(specifier)
    release = _plain(version)
    if release is None or clauses is None:
        return _is_affected_by_packaging(version, specifier)
    for operator, bound in clauses:
        if operator == ">=":
            inside = release >= bound
        elif operator == "<":
            inside = release < bound
        elif operator == "<=":
            inside = release <= bound
        elif operator == ">":
            inside = release > bound
        elif operator == "==":
            inside = release == bound
        else:
            inside = release != bound
        if not inside:
            return False
    return True


def same_release(a: str | None, b: str | None) -> bool:
    """Whether two version strings name the same release (``13.3`` is ``13.3.0``)."""
    if a is None or b is None:
        return a is b
    plain_a, plain_b = _plain(a), _plain(b)
    if plain_a is not None and plain_b is not None:
        return plain_a == plain_b
    try:
        from packaging.version import InvalidVersion, Version
    except ImportError:
        return a == b
    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a == b


_METADATA = (".dist-info", ".egg-info")


def _folder_name(child: str) -> str | None:
    """The normalised name of the distribution a ``.dist-info`` or ``.egg-info`` child installs."""
    low = child.lower()
    if not low.endswith(_METADATA):
        return None
    return _normalise(low.rpartition(".")[0].partition("-")[0])


def _normalise(name: str) -> str:
    name = name.lower().replace("-", "_").replace(".", "_")
    while "__" in name:
        name = name.replace("__", "_")
    return name


def _plain(version: str) -> tuple[int, ...] | None:
    """The release of a plain ``N(.N)*`` version, trailing zeros dropped; ``None`` for anything else."""
    parts = version.split(".")
    for part in parts:
        if not (part.isascii() and part.isdecimal()):
            return None
    release = [int(part) for part in parts]
    while release and release[-1] == 0:
        release.pop()
    return tuple(release)


_OPERATORS = (">=", "<=", "==", "!=", ">", "<")


def _plain_clauses(specifier: str) -> list[tuple[str, tuple[int, ...]]] | None:
    """The clauses of a specifier of plain releases and simple operators; ``None`` for anything else."""
    clauses = []
    for clause in specifier.split(","):
        clause = clause.strip()
        if not clause:
            continue
        for operator in _OPERATORS:
            if clause.startswith(operator):
                break
        else:
            return None
        bound = _plain(clause[len(operator) :].strip())
        if bound is None:
            return None
        clauses.append((operator, bound))
    return clauses


def _is_affected_by_packaging(version: str, specifier: str) -> bool:
    try:
        from packaging.specifiers import InvalidSpecifier, SpecifierSet
        from packaging.version import InvalidVersion, Version
    except ImportError as missing:
        raise BadVersion(
            f"placing {version!r} in {specifier!r} needs the packaging library, which cannot be imported ({missing})"
        ) from None
    try:
        parsed = Version(version)
    except InvalidVersion:
        raise BadVersion(f"{version!r} is not a PEP 440 version") from None
    try:
        return SpecifierSet(specifier).contains(parsed, prereleases=True)
    except InvalidSpecifier:
        raise BadVersion(f"{specifier!r} is not a PEP 440 specifier") from None


def _entry(path: str) -> _Entry:
    try:
        return _entries[path]
    except KeyError:
        entry = _entries[path] = _list(path or ".")
        return entry


def _list(root: str) -> _Entry:
    children = _listed_by_the_import_system(root)
    if children is not None:
        read = _directory_reader(root)
    else:
        try:
            children = os.listdir(root)
            read = _directory_reader(root)
        except NotADirectoryError:
            children, read = _zip_children(root)
        except (OSError, ValueError):
            children, read = [], _nothing
    eggs: dict[str, list[str]] = {}
    if root.lower().endswith(".egg") and any(child.lower() == "egg-info" for child in children):
        name = os.path.basename(root).lower().rpartition(".")[0].partition("-")[0].replace("-", "_")
        eggs[name] = [child for child in children if child.lower() == "egg-info"]
    return _Entry(children, eggs, read)


def _listed_by_the_import_system(root: str) -> list[str] | None:
    """The children of directory ``root`` as its ``FileFinder`` last listed them, if still current.

    Only the standard library's own finder is trusted (a path hook may put
    any object there), and only for an absolute ``root``: a relative one
    names another directory once the working directory changes, and its
    finder keeps the first.
    """
    finder = sys.path_importer_cache.get(root)
    if type(finder) is not FileFinder or not os.path.isabs(root):
        return None
    try:
        listing, listed_at = finder._path_cache, finder._path_mtime
        current = listed_at == os.stat(root).st_mtime
    except (AttributeError, OSError, ValueError):
        return None
    return list(listing) if current and isinstance(listing, set) else None


def _directory_reader(root: str) -> Reader:
    def read(name: str) -> TextIO | None:
        try:
            return open(os.path.join(root, name), encoding="utf-8", newline="")
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
            return None

    return read


def _zip_children(root: str) -> tuple[list[str], Reader]:
    import zipfile

    try:
        archive = zipfile.ZipFile(root)
        names = archive.namelist()
    except (OSError, zipfile.BadZipFile):
        return [], _nothing

    def read(name: str) -> TextIO | None:
        try:
            return io.StringIO(archive.read(name).decode("utf-8"), newline="")
        except KeyError:
            return None

    return list(dict.fromkeys(name.split("/", 1)[0] for name in names)), read


def _nothing(name: str) -> None:
    return None


def _version_header(read: Reader, folder: str) -> str | None:
    """The first ``Version`` header of the metadata, as ``importlib.metadata`` reads it.

    Lines end as the ``email`` parser ends them (``\\r\\n``, ``\\r`` or
    ``\\n``), and only the lines up to the answer are read: the header
    comes third, before a description that can be tens of kilobytes.
    """
    for name in (f"{folder}/METADATA", f"{folder}/PKG-INFO", folder):
        metadata = read(name)
        if metadata is None:
            continue
        with metadata:
            if metadata.readline():
                metadata.seek(0)
                return _first_version(metadata)
    return None


def _first_version(lines: Iterable[str]) -> str | None:
    for line in lines:
        line = line.rstrip("\r\n")
        if line[:1] in (" ", "\t"):
            continue
        name, colon, value = line.partition(":")
        if not colon or not name.isprintable() or " " in name:
            return None
        if name.lower() == "version":
            return value.lstrip(" \t")
    return None


def _installed_by_importlib(distributions: Iterable[str]) -> list[tuple[str, str | None]]:
    from importlib import metadata

    found: list[tuple[str, str | None]] = []
    for distribution in distributions:
        for install in metadata.distributions(name=distribution):
            release = (distribution, install.version)
            if release not in found:
                found.append(release)
    return found
