"""A patch of a module the library's own import does not load applies when that module is imported."""

import importlib
import importlib.util
import os

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


def moved(target):
    """``compute`` defined in ``_src.defining`` and re-exported by ``extra``, as Warp 1.10 moved its code."""
    package = os.path.dirname(importlib.util.find_spec(target.name).origin)
    os.mkdir(os.path.join(package, "_src"))
    with open(os.path.join(package, "_src", "__init__.py"), "w"):
        pass
    with open(os.path.join(package, "_src", "defining.py"), "w") as source:
        source.write("def compute(x):\n    return x + 1\n")
    with open(os.path.join(package, "extra.py"), "w") as source:
        source.write(f"from {target.name}._src.defining import compute\n")
    importlib.invalidate_caches()


def moved_patch(target):
    return make_patch(target, apply=wrap_extra, module=(f"{target.name}._src.defining", f"{target.name}.extra"))


def test_it_waits_for_the_first_of_its_modules_that_the_release_has(target):
    """Code that imports the defining module alone gets the fix."""
    moved(target)
    registry = registry_for(moved_patch(target))
    registry.patch()
    target.import_()
    defining = importlib.import_module(f"{target.name}._src.defining")
    assert (defining.compute(1), state_of(registry)["state"]) == (3, "applied")


def test_a_release_without_the_first_of_its_modules_waits_for_the_next(target):
    registry = registry_for(moved_patch(target))
    registry.patch()
    target.import_()
    assert state_of(registry)["reason"] == f"applies when {target.name}.extra is imported"
    assert importlib.import_module(f"{target.name}.extra").compute(1) == 3
