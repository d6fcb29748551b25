"""The environment variables: opting out, strictness, logging."""

import logging
import warnings

import pytest

from gpushim import GpushimWarning
from tests.engine.synthetic import make_patch, registry_for, state_of


@pytest.mark.parametrize("value", ["synth.compute", "synth.*", "other.thing, synth.compute", "1", "all", "*"])
def test_disable_by_id_glob_or_all(target, monkeypatch, value):
    monkeypatch.setenv("GPUSHIM_DISABLE", value)
    registry = registry_for(make_patch(target))
    registry.patch()
    assert target.import_().compute(1) == 2
    assert state_of(registry)["state"] == "disabled"


def test_disable_leaves_other_patches_on(target, monkeypatch):
    monkeypatch.setenv("GPUSHIM_DISABLE", "synth.other")
    registry = registry_for(make_patch(target), make_patch(target, id="synth.other"))
    registry.patch()
    target.import_()
    assert state_of(registry, "synth.compute")["state"] == "applied"
    assert state_of(registry, "synth.other")["state"] == "disabled"


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("GPUSHIM_DISABLE", "cupy.nothing_like_this", "matches no gpushim patch"),
        ("GPUSHIM_STRICT", "maybe", "is none of 1, true, yes, on, 0, false, no, off"),
        ("GPUSHIM_LOG", "loud", "is not one of debug, info, warning"),
    ],
)
def test_invalid_values_warn_and_never_raise(target, monkeypatch, name, value, message):
    monkeypatch.setenv(name, value)
    registry = registry_for(make_patch(target))
    with pytest.warns(GpushimWarning, match=message):
        registry.patch()
        target.import_()
    assert target.module.compute(1) == 3


def test_a_misspelt_switch_name_warns_with_the_name_it_is_nearest_to(target, monkeypatch):
    monkeypatch.setenv("GPUSHIM_DISABEL", "synth")
    with pytest.warns(GpushimWarning, match="'GPUSHIM_DISABEL' is not a gpushim switch.* did you mean GPUSHIM_DISABLE"):
        registry_for(make_patch(target)).patch()


def test_an_unknown_switch_name_far_from_any_lists_them(target, monkeypatch):
    monkeypatch.setenv("GPUSHIM_COLOUR", "1")
    with pytest.warns(GpushimWarning, match="gpushim reads GPUSHIM_AUTO, GPUSHIM_DISABLE"):
        registry_for(make_patch(target)).patch()


def test_a_misspelt_library_names_the_library_once(target, monkeypatch):
    monkeypatch.setenv("GPUSHIM_DISABLE", "synht")
    registry = registry_for(make_patch(target))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        registry.patch()
        registry.status()
    messages = [str(warning.message) for warning in caught if warning.category is GpushimWarning]
    assert messages == ["GPUSHIM_DISABLE: 'synht' matches no gpushim patch; did you mean 'synth'?"]


def test_log_level_sets_the_gpushim_logger(target, monkeypatch):
    monkeypatch.setenv("GPUSHIM_LOG", "debug")
    registry_for(make_patch(target)).patch()
    assert logging.getLogger("gpushim").level == logging.DEBUG


def test_no_switches_no_warnings(target):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        registry_for(make_patch(target)).patch()
        target.import_()
