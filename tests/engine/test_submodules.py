"""A patch of a module the library's own import does not load applies when that module is imported."""

import importlib

from tests.engine.synthetic import make_patch, registry_for, state_of


def wrap_extra(module, journal):
    journal.wrap(module, "compute", lambda wrapped, instance, args, kwargs: wrapped(*args, **kwargs) + 1)


def extra_patch(target):
    return make_patch(target, apply=wrap_extra, module=f"{target.name}.extra")


def test_it_waits_for_its_module_after_the_library_is_imported(target):
    registry = registry_for(extra_patch(target))
    registry.patch()
    target.import_()
    record = state_of(registry)
    assert (record["state"], record["reason"]) == ("pending", f"applies when {target.name}.extra is imported")
    extra = importlib.import_module(f"{target.name}.extra")
    assert extra.compute(1) == 3
    assert state_of(registry)["state"] == "applied"


def test_it_applies_at_once_when_its_module_is_already_imported(target):
    target.import_()
    extra = importlib.import_module(f"{target.name}.extra")
    registry_for(extra_patch(target)).patch()
    assert extra.compute(1) == 3


def test_unpatch_restores_it_and_stops_waiting(target):
    registry = registry_for(extra_patch(target))
    registry.patch()
    target.import_()
    registry.unpatch()
    extra = importlib.import_module(f"{target.name}.extra")
    assert extra.compute(1) == 2
    assert state_of(registry)["state"] == "inactive"
