"""``Journal.add``: a name that a release lost by mistake, given back while the patch applies.

As more-itertools 11.0.0, which dropped ``pairwise`` (11.0.1 restored it):
here the synthetic target lacks ``lost``.
"""

from __future__ import annotations

import types

import pytest

from gpushim import GpushimWarning, Journal, TargetMismatch
from tests.engine.synthetic import make_patch, registry_for, state_of


def lost(x):
    return x


def adding(target, name="lost"):
    def apply(module, journal):
        journal.add(module, name, lost)

    return registry_for(make_patch(target, apply=apply))


def test_the_patch_adds_the_missing_name(target):
    registry = adding(target)
    registry.patch()
    assert target.import_().lost is lost
    assert state_of(registry)["state"] == "applied"


def test_unpatch_deletes_the_added_name(target):
    registry = adding(target)
    registry.patch()
    module = target.import_()
    registry.unpatch()
    assert not hasattr(module, "lost")


@pytest.mark.parametrize("name", ["compute", "__name__"], ids=["its own", "every module's"])
def test_a_name_the_release_has_is_refused_and_kept(target, name):
    registry = adding(target, name)
    registry.patch()
    with pytest.warns(GpushimWarning, match="there is nothing to add"):
        module = target.import_()
    record = state_of(registry)
    assert record["state"] == "failed" and "TargetMismatch" in record["reason"] and "nothing to add" in record["reason"]
    assert getattr(module, name) is not lost


def test_an_inherited_name_is_refused_on_a_class():
    class Base:
        def lost(self):
            return "released"

    class Derived(Base):
        pass

    with pytest.raises(TargetMismatch, match="Derived already has 'lost'"):
        Journal().add(Derived, "lost", lost)
    assert "lost" not in vars(Derived)


def test_patching_twice_adds_once_and_undo_leaves_a_name_the_program_rebound(target):
    registry = adding(target)
    registry.patch()
    registry.patch()
    module = target.import_()
    assert len(registry.journal("synth.compute").entries) == 1
    module.lost = "the program's"
    registry.unpatch()
    assert module.lost == "the program's"


@pytest.mark.parametrize("first", ["add", "wrap"], ids=["the addition undone first", "the wrapper undone first"])
def test_a_wrapper_put_on_an_added_name_leaves_nothing_once_both_are_undone(first):
    owner = types.SimpleNamespace()
    adding, wrapping = Journal(), Journal()
    adding.add(owner, "lost", lost)
    wrapping.wrap(owner, "lost", lambda wrapped, instance, args, kwargs: wrapped(*args, **kwargs) + 1)
    assert owner.lost(1) == 2
    for journal in (adding, wrapping) if first == "add" else (wrapping, adding):
        journal.undo()
    assert not hasattr(owner, "lost")
