"""Which release of a target is installed, and whether it is affected.

The import name alone is ambiguous (``warp`` on PyPI is another project,
``nvidia-dali`` is a placeholder), so releases come from the metadata of the
distributions a patch names.  This runs inside the user's ``import cupy``,
so it answers without ``importlib.metadata`` (20 ms and a hundred modules
that Warp, say, never imports) and, for the plain releases and ranges that
patches declare, without ``packaging``; the answers are the ones those two
give, by the rules below (tests/engine/test_releases.py checks them against
both on the same installs).

Read at the moment of asking: nothing here outlives the question.  A
process that installs, upgrades or downgrades a library and then imports it
gets the answers a fresh process would, whatever a folder's mtime says.
Several questions asked together (one ``status()``, the patches gated by
one import) may share one :class:`Listings`, so that each ``sys.path`` entry
is listed once for them.

Starting from the module: :func:`installed_with` answers for the module an
import found (its name and the file it came from, before or after it
executes): the installs of the named distributions in the ``sys.path``
entry that holds its top-level package, which is where an installer put
both.  Only when there are none (an editable install, a source tree on the
path) are all installs asked for, with :func:`installed`.

Finding installs: the rules of ``importlib.metadata``'s path finder.
- Each ``sys.path`` entry is listed, in order: a directory with
  ``os.listdir`` (``""`` is the working directory), a regular file as a zip
  (a zipapp, a zipped egg), opened only while it is read.  Anything else (a
  FIFO, a device) is skipped, as is an entry that cannot be listed.
- A child named ``<name>-<anything>.dist-info`` or ``.egg-info`` (any case;
  ``<name>.egg-info`` too, as ``setup.py develop`` leaves it in a source
  tree) installs ``<name>``.  Names are compared normalised as PEP 503 does,
  with ``-`` then written ``_`` as in wheel folder names (PEP 427 escaping).
- A ``*.egg`` entry on the path with an ``EGG-INFO`` child installs the
  name before the egg's first ``-``, lower case with ``-`` as ``_`` and dots
  kept (``importlib.metadata``'s legacy rule for eggs).
- Another ``sys.meta_path`` finder that finds distributions (beside
  ``PathFinder``) is consulted only through ``importlib.metadata``, which is
  then imported.
- Every install of a distribution is reported, in path order (sorted by
  folder name within one entry): two releases side by side are for the
  engine to tell apart with the module's ``__version__``.
- But of two folders of one distribution in one entry, as ``pip install
  --target --upgrade`` leaves the replaced release's beside the new one,
  only those that own the files there are installs: the one whose RECORD
  lists the module found as it is, else those whose RECORD the files do
  not contradict (:meth:`_Listing.owners`).  ``importlib.metadata``
  reports both; this is the one place the answers differ.

The version: the ``Version`` header of ``METADATA``, else of ``PKG-INFO``
(else of the ``.egg-info`` file itself), parsed up to that header in at
most its first 256 KiB, from a regular file only (a FIFO or a link to a
device is no metadata); never from the folder name.  A missing header or an
unreadable file is a version of ``None``, as ``importlib.metadata`` says.

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
import stat
import sys

# The class behind importlib.machinery's PathFinder, loaded with the interpreter.
from _frozen_importlib_external import PathFinder

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Callable, Optional

    Reader = Callable[[str], Optional[bytes]]
    Install = tuple[str, Optional[str]]

_METADATA_LIMIT = 256 * 1024  # bytes; the Version header comes third


class BadVersion(ValueError):
    """A release that cannot be placed in a range; the message says why."""


class _Listing:
    """The children of one ``sys.path`` entry, read once for the questions that share it."""

    __slots__ = ("root", "children", "joined", "eggs", "read", "found")

    def __init__(self, root: str, listed: bool = True) -> None:
        self.root = root
        # Not listed: only its files are read (by a question that knows their names).
        self.children, self.read = _children(root) if listed else ([], _directory_reader(root))
        # One string to search: a library's names are found by one str.find each, not a look at every child.
        self.joined = "\0" + "\0".join(self.children).lower()
        self.eggs: dict[str, list[str]] = {}
        if root.lower().endswith(".egg") and "\0egg-info" in self.joined:
            name = os.path.basename(root).lower().rpartition(".")[0].partition("-")[0].replace("-", "_")
            self.eggs[name] = [child for child in self.children if child.lower() == "egg-info"]
        self.found: dict[str, list[Install]] = {}

    def installs(self, distribution: str, file: str | None = None) -> list[Install]:
        """The installs of ``distribution`` here; ``file``, a path under this entry, is where to look first."""
        if distribution not in self.found:
            name, legacy = _normalise(distribution), distribution.lower().replace("-", "_")
            folders = sorted(child for child in self._starting_with(name) if _folder_name(child) == name)
            folders = self.owners(folders, file)
            folders += self.eggs.get(legacy, [])
            self.found[distribution] = [(distribution, _version_header(self.read, folder)) for folder in folders]
        return self.found[distribution]

    def owners(self, folders: list[str], file: str | None = None) -> list[str]:
        """Those of ``folders``, the metadata folders of one distribution here, that own the files installed here.

        ``pip install --target --upgrade`` (or a downgrade) leaves the folder
        of the release it replaced beside the new one, and that folder's
        RECORD lists files since replaced.  The one folder whose RECORD lists
        ``file`` (the module the import system found) as it is, if there is
        one; else the folders are checked against the files their RECORDs
        list, a file of each in turn, until one is left that no file
        contradicts; all of them where none or every one is contradicted.
        """
        if len(folders) < 2 or not os.path.isdir(self.root):
            return folders
        if file is not None:
            owning = [folder for folder in folders if _lists_as_installed(self.root, folder, self.read, file)]
            if len(owning) == 1:
                return owning
        checking = {folder: _verdicts(self.root, folder, self.read) for folder in folders}
        contradicted: set[str] = set()
        while checking and len(folders) - len(contradicted) > 1:
            for folder, verdicts in list(checking.items()):
                verdict = next(verdicts, None)
                if verdict is not True:
                    del checking[folder]
                    if verdict is False:
                        contradicted.add(folder)
        return [folder for folder in folders if folder not in contradicted] or folders

    def most_vouched(self, folders: list[str]) -> str:
        """Of ``folders``, metadata folders of one distribution here, the one whose RECORD lists the most files as
        they are here; the first of those that tie.

        Where no file contradicts either of two (the replaced release's
        RECORD lists only files the upgrade left unchanged, or there is none)
        the upgrade's own lists more: every file it installed.
        """
        return max(folders, key=lambda folder: sum(_verdicts(self.root, folder, self.read, every=True)))

    def _starting_with(self, name: str) -> Iterator[str]:
        """The children whose name starts as ``name`` does: with the same run of letters and digits."""
        needle = "\0" + name.partition("_")[0]
        position = self.joined.find(needle)
        while position != -1:
            yield self.children[self.joined.count("\0", 0, position)]
            position = self.joined.find(needle, position + 1)


class Listings:
    """What questions asked together read: each ``sys.path`` entry's listing, and each answer; made anew per group."""

    __slots__ = ("entries", "answers")

    def __init__(self) -> None:
        self.entries: dict[str, _Listing] = {}
        self.answers: dict[tuple[tuple[str, ...], tuple[str, ...]], list[Install]] = {}

    def of(self, path: str) -> _Listing:
        if path not in self.entries:
            self.entries[path] = _Listing(path or ".")
        return self.entries[path]


def installed(distributions: Iterable[str], listings: Listings | None = None) -> list[Install]:
    """``(distribution, version)`` for every install of each of ``distributions``, read now.

    In the order of ``distributions``, then of ``sys.path``; the version is
    ``None`` when the metadata states none.
    """
    if any(finder is not PathFinder and hasattr(finder, "find_distributions") for finder in sys.meta_path):
        return _installed_by_importlib(distributions)
    listings = Listings() if listings is None else listings
    key = (tuple(distributions), tuple(path for path in sys.path if isinstance(path, str)))
    if key not in listings.answers:
        found: list[Install] = []
        for distribution in key[0]:
            for path in key[1]:
                found.extend(install for install in listings.of(path).installs(distribution) if install not in found)
        listings.answers[key] = found
    return list(listings.answers[key])


def installed_with(
    module: str, origin: str | None, distributions: Iterable[str], listings: Listings | None = None
) -> list[Install]:
    """The installs of ``distributions`` that can own module ``module``, found in file ``origin``.

    Those in the ``sys.path`` entry that holds the module's top-level
    package; every install (:func:`installed`) when that entry has none, or
    the module came from no file.
    """
    listings = Listings() if listings is None else listings
    distributions = list(distributions)
    if isinstance(origin, str) and os.path.isabs(origin):
        root = origin
        for _ in range(module.count(".") + 1 + os.path.basename(origin).startswith("__init__.")):
            root = os.path.dirname(root)
        file = os.path.relpath(origin, root).replace(os.sep, "/")
        listing = listings.of(root)
        found = [install for distribution in distributions for install in listing.installs(distribution, file)]
        if found:
            return found
    return installed(distributions, listings)


def metadata_folders(listing: _Listing) -> dict[str, list[str]]:
    """The ``.dist-info`` and ``.egg-info`` folders of each distribution in ``listing``, by normalised name.

    In the order of the folders' names, each distribution's sorted, listed as
    :func:`installed` lists them; for :mod:`gpushim.plugins` to read the
    entry points declared (and to ask ``listing.owners(folders)`` where two
    folders disagree).
    """
    folders: dict[str, list[str]] = {}
    for child in sorted(listing.children):
        name = _folder_name(child)
        if name is not None:
            folders.setdefault(name, []).append(child)
    return folders


def is_affected(version: str | None, specifier: str) -> bool:
    """Whether ``version`` lies in ``specifier``, pre-releases included.

    Raises :class:`BadVersion` for a missing or non-PEP 440 version, a
    specifier that is not PEP 440, or an unusual one when ``packaging``
    cannot be imported.
    """
    if version is None:
        raise BadVersion("the installed metadata states no Version")
    clauses = _plain_clauses(specifier)
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


def _children(root: str) -> tuple[list[str], Reader]:
    """The children of ``root`` and a reader of its files; nothing for an entry that is neither folder nor file."""
    try:
        mode = os.stat(root).st_mode
        if stat.S_ISDIR(mode):
            return os.listdir(root), _directory_reader(root)
        if stat.S_ISREG(mode):
            return _zip_children(root)
    except (OSError, ValueError):
        pass
    return [], _nothing


def _directory_reader(root: str) -> Reader:
    folder = os.path.join(root, "")
    return lambda name: regular_file(folder + name)


# Not blocking: a FIFO opens at once, and is then no regular file.
_READING = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)


def regular_file(path: str, limit: int = _METADATA_LIMIT) -> bytes | None:
    """The first ``limit`` bytes (256 KiB) of the file at ``path``; ``None`` when it is no regular file or cannot be
    read."""
    try:
        descriptor = os.open(path, _READING)
    except OSError:
        return None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            return None
        return os.read(descriptor, min(status.st_size, limit))
    except OSError:
        return None
    finally:
        os.close(descriptor)


def _zip_children(root: str) -> tuple[list[str], Reader]:
    import zipfile

    try:
        with zipfile.ZipFile(root) as archive:
            names = archive.namelist()
    except (OSError, zipfile.BadZipFile):
        return [], _nothing

    def read(name: str) -> bytes | None:
        try:
            with zipfile.ZipFile(root) as archive, archive.open(name) as file:
                return file.read(_METADATA_LIMIT)
        except Exception:  # a member that will not inflate, in an unknown compression, encrypted: unreadable
            return None

    return list(dict.fromkeys(name.split("/", 1)[0] for name in names)), read


def text(data: bytes) -> io.StringIO:
    """What a reader read, as lines ending as the ``email`` parser ends them (``\\r\\n``, ``\\r`` or ``\\n``)."""
    return io.StringIO(data.decode("utf-8", "replace"), newline="")


def _nothing(name: str) -> None:
    return None


def _lists_as_installed(root: str, folder: str, read: Reader, file: str) -> bool:
    """Whether ``folder``'s RECORD lists ``file`` (a path under ``root``) as it is there."""
    rows = [row for row in _record(read, folder) if row[0] == file]
    return bool(rows) and all(_installed_as(os.path.join(root, path), digest, size) for path, digest, size in rows)


def _verdicts(root: str, folder: str, read: Reader, every: bool = False) -> Iterator[bool]:
    """For each file ``folder``'s RECORD lists under ``root``, whether it is there as listed; until one is not, unless
    ``every``.

    Files in metadata folders, outside ``root`` or without a hash are not
    asked; a folder without a RECORD (an ``.egg-info``) has no verdicts.
    """
    for path, digest, size in _record(read, folder):
        top = path.partition("/")[0]
        if digest and not (top.lower().endswith(_METADATA) or top == ".." or os.path.isabs(path)):
            agrees = _installed_as(os.path.join(root, path), digest, size)
            yield agrees
            if not (agrees or every):
                return


def _record(read: Reader, folder: str) -> list[list[str]]:
    """The ``path,hash,size`` rows of ``folder``'s RECORD, from its first 256 KiB; none where it cannot be read."""
    import csv

    record = read(f"{folder}/RECORD") or b""
    lines = record.decode("utf-8", "replace").splitlines()
    if len(record) == _METADATA_LIMIT:
        lines.pop()  # cut short
    try:
        return [row for row in csv.reader(lines) if len(row) == 3]
    except csv.Error:
        return []


def _installed_as(path: str, digest: str, size: str) -> bool:
    """Whether the file at ``path`` has the size and (up to 256 KiB) the hash that a RECORD line states."""
    import base64
    import hashlib

    try:
        status = os.stat(path)
    except (OSError, ValueError):
        return False
    if size.isdecimal() and int(size) != status.st_size:
        return False
    algorithm, _, expected = digest.partition("=")
    if status.st_size > _METADATA_LIMIT or algorithm not in ("sha256", "sha384", "sha512"):
        return True
    content = regular_file(path)
    if content is None:
        return False
    return base64.urlsafe_b64encode(hashlib.new(algorithm, content).digest()).rstrip(b"=").decode() == expected


def _version_header(read: Reader, folder: str) -> str | None:
    """The first ``Version`` header of the metadata, as ``importlib.metadata`` reads it."""
    for name in (f"{folder}/METADATA", f"{folder}/PKG-INFO", folder):
        metadata = read(name)
        if metadata:
            return _first_version(text(metadata))
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


def _installed_by_importlib(distributions: Iterable[str]) -> list[Install]:
    from importlib import metadata

    found: list[Install] = []
    for distribution in distributions:
        for install in metadata.distributions(name=distribution):
            release = (distribution, install.version)
            if release not in found:
                found.append(release)
    return found
