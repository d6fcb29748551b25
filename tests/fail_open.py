"""Fail-open checks that the library tests share: a patched object pickles and copies as its original does.

Whatever a patch replaces is read as a user reads it (``cupy.from_dlpack``,
``warp.types.array._init_from_data``, a method through an instance), once
with the patch undone and once with it applied, and pickled, copied and
deep-copied.  Where the original read loads back as itself, the patched read
must load back as the patched object; where the original fails, the patched
one must fail with the same exception type; where the original gives another
object, the patched one may give itself.
"""

from __future__ import annotations

import copy
import importlib
import pickle

import pytest

import gpushim
from gpushim.states import APPLIED, INACTIVE, PENDING
from tests.support import applied

WAYS = {"pickle": lambda value: pickle.loads(pickle.dumps(value)), "copy": copy.copy, "deepcopy": copy.deepcopy}


def applying_here(target: str) -> list[str]:
    """The ids of ``target``'s patches that apply to this install: applied, pending or inactive."""
    registry = gpushim.registry()
    ids = [id for id in registry.ids if registry.library(id).target == target]
    return [id for id in ids if gpushim.record(id)["state"] in (INACTIVE, PENDING, APPLIED)]


def _identity(value: object) -> object:
    """What makes two reads the same: the object, or for a bound method (wrapt's too) its function and instance."""
    parent = getattr(value, "_self_parent", None)  # a wrapt bound wrapper: a new one per read
    if parent is not None:
        return parent, value._self_instance
    function = getattr(value, "__func__", None)
    if function is not None and hasattr(value, "__self__"):
        return function, value.__self__
    return value


def _kind(result: object, value: object) -> str:
    same, other = _identity(result), _identity(value)
    if type(same) is tuple and type(other) is tuple:
        same = all(mine is theirs for mine, theirs in zip(same, other))
    else:
        same = same is other
    if not same:
        return "an equal one" if result == value else "another"
    if hasattr(result, "__wrapped__") != hasattr(value, "__wrapped__"):
        return "itself, unpatched"
    return "itself"


def outcomes(read) -> dict[str, str]:
    """What pickling, copying and deep-copying ``read()`` gives: itself, something else, or an exception type."""
    answers = {}
    for way, act in WAYS.items():
        value = read()
        try:
            result = act(value)
        except Exception as error:
            answers[way] = f"raises {type(error).__name__}"
        else:
            answers[way] = _kind(result, value)
    return answers


def _label(owner: object, name: str) -> str:
    if isinstance(owner, type):
        return f"{owner.__module__}.{owner.__qualname__}.{name}"
    return f"{getattr(owner, '__name__', repr(owner))}.{name}"


def replacements(id: str) -> list[tuple[object, object, bool]]:
    """``(owner, name, item)`` of every binding patch ``id`` replaces here: ``owner.name``, or ``owner[name]``."""
    patch = gpushim.registry()[id]
    if getattr(patch, "module", None):
        try:
            importlib.import_module(patch.module)  # the module of the library it patches
        except ImportError as error:
            pytest.skip(f"{patch.module} cannot be imported here: {error}")
    with applied(patch):
        assert gpushim.record(id)["state"] == APPLIED, gpushim.record(id)
        entries = gpushim.registry().journal(id).entries
        return [(entry.owner, entry.name, getattr(entry, "item", False)) for entry in entries]


def pickling_differences(id: str, instances: dict | None = None) -> dict[str, tuple[dict, dict]]:
    """Every read of what patch ``id`` replaces whose outcomes disagree patched: ``{read: (unpatched, patched)}``.

    Each binding is read through its owner, and through ``instances[owner]``
    too when given (a method read through an instance is a bound method).
    """
    reads = {}
    for owner, name, item in replacements(id):
        if item:
            reads[f"{type(owner).__name__}[{name!r}]"] = lambda owner=owner, name=name: owner[name]
            continue
        reads[_label(owner, name)] = lambda owner=owner, name=name: getattr(owner, name)
        instance = (instances or {}).get(owner)
        if instance is not None:
            reads[f"an instance's {_label(owner, name)}"] = lambda instance=instance, name=name: getattr(instance, name)
    unpatched = {label: outcomes(read) for label, read in reads.items()}
    with applied(gpushim.registry()[id]):
        patched = {label: outcomes(read) for label, read in reads.items()}
    assert unpatched, f"{id} replaced nothing"
    return {
        label: (unpatched[label], patched[label])
        for label in reads
        if not all(_agrees(unpatched[label][way], patched[label][way]) for way in WAYS)
    }


def _agrees(unpatched: str, patched: str) -> bool:
    """Whether a patched read's outcome is the original's.

    An exception must be the same; a read that gives itself must still; where
    the original gives another object (a callable object copied), the patched
    one may give itself, which is still patched.
    """
    if unpatched.startswith("raises") or patched.startswith("raises") or unpatched == "itself":
        return unpatched == patched
    return True
