"""Patches are found without a list, loaded only when their target is imported, and fail alone."""

import sys

import pytest

from gpushim.engine import Registry
from tests.engine.catalogues import patch_source, write_catalogue


def loaded(package):
    return sorted(name for name in sys.modules if name.startswith(f"{package}.synth."))


def test_every_module_of_a_library_folder_is_a_patch_named_by_its_path(syspath, target):
    package = write_catalogue(syspath, target, {"compute": patch_source("synth.compute"), "_helpers": ""})
    assert Registry.discover(package).ids == ["synth.compute"]


def test_patch_modules_are_imported_when_the_target_is_not_before(syspath, target):
    package = write_catalogue(syspath, target, {"compute": patch_source("synth.compute")})
    registry = Registry.discover(package)
    registry.patch()
    assert loaded(package) == []
    assert target.import_().compute(1) == 3
    assert loaded(package) == [f"{package}.synth.compute"]


def test_a_library_whose_target_is_not_imported_stays_unloaded(syspath, target):
    package = write_catalogue(syspath, target, {"compute": patch_source("synth.compute")})
    Registry.discover(package).patch()
    assert loaded(package) == []


def unreached_source(id, specifier):
    return patch_source(id).replace("affected=", f'not_backported={{"{specifier}": "-"}}, affected=')


BROKEN = {
    "raises": "raise RuntimeError('this patch module is broken')",
    "no_patch": "patch = None",
    "wrong_id": patch_source("synth.another_id"),
    "bad_range": patch_source("synth.bad_range", affected=">=one"),
    "fixed_inside": patch_source("synth.fixed_inside", affected=">=1.0"),
    "fixed_unreached": unreached_source("synth.fixed_unreached", ">=2.0"),
    "bad_unreached": unreached_source("synth.bad_unreached", "<one"),
    "no_prober": patch_source("synth.no_prober").replace("@patch.prober", ""),
    "no_applier": patch_source("synth.no_applier").replace("@patch.applier", ""),
}
REASONS = {
    "raises": "RuntimeError: this patch module is broken",
    "no_patch": "defines no gpushim.Patch named 'patch'",
    "wrong_id": "declares the id 'synth.another_id'",
    "bad_range": "is not a version specifier",
    "fixed_inside": "fixed_in 2.0 lies inside affected >=1.0",
    "fixed_unreached": "fixed_in 2.0 lies inside not_backported >=2.0",
    "bad_unreached": "not_backported '<one' is not a version specifier",
    "no_prober": "declares no prober",
    "no_applier": "declares no applier",
}


@pytest.mark.parametrize("broken", sorted(BROKEN))
def test_a_broken_patch_module_fails_alone_and_the_import_goes_on(syspath, target, broken):
    modules = {"compute": patch_source("synth.compute"), broken: BROKEN[broken]}
    registry = Registry.discover(write_catalogue(syspath, target, modules))
    registry.patch()
    with pytest.warns(Warning):
        module = target.import_()
    assert module.compute(1) == 3
    assert registry.record("synth.compute")["state"] == "applied"
    record = registry.record(f"synth.{broken}")
    assert record["state"] == "failed"
    assert REASONS[broken] in record["reason"]
