"""Fail-open checks that the library tests share: a patched object pickles and copies as its original does.

Whatever a patch replaces is read as a user reads it (``cupy.from_dlpack``,
``warp.types.array._init_from_data``, a method through an instance), once
with the patch undone and once with it applied, and pickled, copied and
deep-copied.  Where the original read loads back as itself, the patched read
must load back as the patched object; where the original fails, the patched
one must fail with the same exception type.
"""

from __future__ import annotations

import copy
import pickle

import gpushim
from gpushim.states import APPLIED
from tests.support import applied

WAYS = {"pickle": lambda value: pickle.loads(pickle.dumps(value)), "copy": copy.copy, "deepcopy": copy.deepcopy}


def _same(result: object, read: object) -> bool:
    """Whether ``result`` is ``read``, or (wrapt gives a new bound wrapper per read) an equal wrapper of the same."""
    if result is read:
        return True
    wrapped = getattr(read, "__wrapped__", None)
    return wrapped is not None and getattr(result, "__wrapped__", None) == wrapped and result == read


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
            answers[way] = "itself" if _same(result, value) else f"another {type(result).__name__}"
    return answers


def _label(owner: object, name: str) -> str:
    if isinstance(owner, type):
        return f"{owner.__module__}.{owner.__qualname__}.{name}"
    return f"{getattr(owner, '__name__', repr(owner))}.{name}"


def replacements(id: str) -> list[tuple[object, str]]:
    """``(owner, name)`` of every binding patch ``id`` replaces in this environment."""
    with applied(gpushim.registry()[id]):
        assert gpushim.record(id)["state"] == APPLIED, gpushim.record(id)
        return [(entry.owner, entry.name) for entry in gpushim.registry().journal(id).entries]


def pickling_differences(id: str, instances: dict | None = None) -> dict[str, tuple[dict, dict]]:
    """Every read of what patch ``id`` replaces whose outcomes differ patched: ``{read: (unpatched, patched)}``.

    Each binding is read through its owner, and through ``instances[owner]``
    too when given (a method read through an instance is a bound method).
    """
    reads = {}
    for owner, name in replacements(id):
        reads[_label(owner, name)] = lambda owner=owner, name=name: getattr(owner, name)
        instance = (instances or {}).get(owner)
        if instance is not None:
            reads[f"an instance's {_label(owner, name)}"] = lambda instance=instance, name=name: getattr(instance, name)
    unpatched = {label: outcomes(read) for label, read in reads.items()}
    with applied(gpushim.registry()[id]):
        patched = {label: outcomes(read) for label, read in reads.items()}
    assert unpatched, f"{id} replaced nothing"
    return {label: (unpatched[label], patched[label]) for label in reads if unpatched[label] != patched[label]}
