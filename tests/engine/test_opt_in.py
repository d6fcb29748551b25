"""Opt-in patches: affected releases keep the released behaviour unless GPUSHIM_ENABLE names the patch."""

import pytest

from gpushim import GpushimWarning
from tests.engine.synthetic import make_patch, registry_for, state_of


def test_an_opt_in_patch_is_not_applied_by_default_and_says_how_to_turn_it_on(target):
    registry = registry_for(make_patch(target, opt_in=True))
    registry.patch()
    assert target.import_().compute(1) == 2
    record = state_of(registry)
    assert record["state"] == "opt-in"
    assert record["reason"] == "an opt-in patch: GPUSHIM_ENABLE=synth.compute turns it on"
    assert registry.journal("synth.compute") is None


@pytest.mark.parametrize("value", ["synth.compute", "synth", "synth.*", "other.thing, synth.compute", "1", "all"])
def test_gpushim_enable_turns_it_on_by_id_library_glob_or_all(target, monkeypatch, value):
    monkeypatch.setenv("GPUSHIM_ENABLE", value)
    registry = registry_for(make_patch(target, opt_in=True))
    registry.patch()
    assert target.import_().compute(1) == 3
    assert state_of(registry)["state"] == "applied"


def test_gpushim_enable_names_only_what_it_names(target, monkeypatch):
    monkeypatch.setenv("GPUSHIM_ENABLE", "synth.other")
    registry = registry_for(make_patch(target, opt_in=True), make_patch(target, id="synth.other", opt_in=True))
    registry.patch()
    target.import_()
    assert state_of(registry, "synth.compute")["state"] == "opt-in"
    assert state_of(registry, "synth.other")["state"] == "applied"


def test_gpushim_disable_wins_over_gpushim_enable(target, monkeypatch):
    monkeypatch.setenv("GPUSHIM_ENABLE", "synth.compute")
    monkeypatch.setenv("GPUSHIM_DISABLE", "synth.compute")
    registry = registry_for(make_patch(target, opt_in=True))
    registry.patch()
    assert target.import_().compute(1) == 2
    assert state_of(registry)["state"] == "disabled"


def test_outside_the_range_an_opt_in_patch_is_not_affected(target):
    registry = registry_for(make_patch(target, affected="<1.0", opt_in=True))
    registry.patch()
    target.import_()
    assert state_of(registry)["state"] == "not-affected"


@pytest.mark.parametrize(("enable", "state"), [("", "opt-in"), ("synth.compute", "inactive")])
def test_status_without_gpushim_active_tells_opt_in_from_inactive(target, monkeypatch, enable, state):
    monkeypatch.setenv("GPUSHIM_ENABLE", enable)
    registry = registry_for(make_patch(target, opt_in=True))
    assert state_of(registry)["state"] == state


def test_patching_again_once_enabled_applies_it_to_the_imported_target(target, monkeypatch):
    registry = registry_for(make_patch(target, opt_in=True))
    registry.patch()
    module = target.import_()
    monkeypatch.setenv("GPUSHIM_ENABLE", "synth.compute")
    registry.patch()
    assert module.compute(1) == 3
    registry.unpatch()
    assert module.compute(1) == 2


def test_naming_a_patch_that_is_not_opt_in_changes_nothing(target, monkeypatch):
    monkeypatch.setenv("GPUSHIM_ENABLE", "synth.compute")
    registry = registry_for(make_patch(target))
    registry.patch()
    assert target.import_().compute(1) == 3


def test_a_pattern_that_names_no_patch_warns_and_never_raises(target, monkeypatch):
    monkeypatch.setenv("GPUSHIM_ENABLE", "cupy.nothing_like_this")
    registry = registry_for(make_patch(target, opt_in=True))
    with pytest.warns(GpushimWarning, match="GPUSHIM_ENABLE: 'cupy.nothing_like_this' matches no gpushim patch"):
        registry.patch()
        target.import_()
    assert state_of(registry)["state"] == "opt-in"
