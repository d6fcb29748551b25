"""Which installs a patch applies to: release, distribution name, shape of the target."""

import pytest

from gpushim import GpushimWarning, NotAffected, PatchError, TargetMismatch
from tests.engine.synthetic import Target, make_patch, registry_for, state_of


@pytest.mark.parametrize(
    ("version", "state"),
    [("0.9.0", "not-affected"), ("1.0.0", "applied"), ("1.9.9", "applied"), ("2.0.0", "not-affected")],
)
def test_release_below_inside_and_above_the_range(syspath, version, state):
    target = Target(syspath, version=version)
    registry = registry_for(make_patch(target))
    registry.patch()
    module = target.import_()
    assert state_of(registry)["state"] == state
    assert module.compute(1) == (3 if state == "applied" else 2)


def test_prereleases_inside_the_range_are_affected(syspath):
    target = Target(syspath, version="1.9.0rc1")
    registry = registry_for(make_patch(target))
    registry.patch()
    target.import_()
    assert state_of(registry)["state"] == "applied"


def test_any_of_the_distribution_names_provides_the_release(syspath):
    target = Target(syspath, distribution="synthlib-cuda13")
    registry = registry_for(make_patch(target, distributions=("synthlib-cuda11", "synthlib-cuda13")))
    registry.patch()
    target.import_()
    record = state_of(registry)
    assert (record["state"], record["distribution"], record["installed_version"]) == (
        "applied",
        "synthlib-cuda13",
        "1.5.0",
    )


def test_a_module_of_that_name_without_the_distribution_is_not_installed(target):
    registry = registry_for(make_patch(target, distributions=("another-project",)))
    registry.patch()
    assert target.import_().compute(1) == 2
    assert state_of(registry)["state"] == "not-installed"


def test_a_module_version_that_contradicts_the_metadata_fails(syspath):
    target = Target(syspath, version="1.5.0", declared="2.1.0")
    registry = registry_for(make_patch(target))
    registry.patch()
    with pytest.warns(GpushimWarning, match="__version__ is 2.1.0"):
        module = target.import_()
    assert module.compute(1) == 2
    assert state_of(registry)["state"] == "failed"


def test_a_missing_attribute_fails_and_the_import_still_succeeds(target):
    def wrap_missing(module, journal):
        journal.wrap(module, "no_such_function", lambda wrapped, instance, args, kwargs: None)

    registry = registry_for(make_patch(target, apply=wrap_missing))
    registry.patch()
    with pytest.warns(GpushimWarning, match=r"synth.compute to synthlib-cuda12 1.5.0 .*no_such_function"):
        module = target.import_()
    assert module.compute(1) == 2
    record = state_of(registry)
    assert record["state"] == "failed"
    assert "no attribute 'no_such_function'" in record["reason"]


def test_strict_mode_turns_a_failure_into_an_import_error(target, monkeypatch):
    def refuse(module, journal):
        raise TargetMismatch("compute() has an unexpected signature")

    monkeypatch.setenv("GPUSHIM_STRICT", "1")
    registry_for(make_patch(target, apply=refuse)).patch()
    with pytest.raises(PatchError, match="unexpected signature"):
        target.import_()


def test_any_exception_in_an_applier_fails_open(target):
    def crash(module, journal):
        raise RuntimeError("bug in the patch")

    registry = registry_for(make_patch(target, apply=crash))
    registry.patch()
    with pytest.warns(GpushimWarning, match="RuntimeError: bug in the patch"):
        target.import_()
    assert state_of(registry)["reason"] == "RuntimeError: bug in the patch"


def test_a_failure_midway_undoes_what_the_applier_already_replaced(target):
    original = target.import_().compute

    def half(module, journal):
        journal.wrap(module, "compute", lambda wrapped, instance, args, kwargs: 0)
        raise TargetMismatch("second half missing")

    with pytest.warns(GpushimWarning):
        registry_for(make_patch(target, apply=half)).patch()
    assert target.module.compute is original


def test_an_applier_can_declare_the_install_not_affected(target):
    def numpy_one(module, journal):
        raise NotAffected("NumPy 1.x does not have the bug")

    registry = registry_for(make_patch(target, apply=numpy_one))
    registry.patch()
    target.import_()
    assert (state_of(registry)["state"], state_of(registry)["reason"]) == (
        "not-affected",
        "NumPy 1.x does not have the bug",
    )


UNREACHED = {"<1.0": "synth 0.x computes elsewhere"}


@pytest.mark.parametrize(
    ("version", "state"), [("0.9.0", "not-backported"), ("1.5.0", "applied"), ("2.0.0", "not-affected")]
)
def test_a_release_with_the_bug_that_the_backport_does_not_reach_is_not_backported(syspath, version, state):
    target = Target(syspath, version=version)
    registry = registry_for(make_patch(target, not_backported=UNREACHED))
    registry.patch()
    module = target.import_()
    assert state_of(registry)["state"] == state
    assert module.compute(1) == (3 if state == "applied" else 2)


def test_not_backported_says_why_in_the_reason(syspath):
    target = Target(syspath, version="0.9.0")
    registry = registry_for(make_patch(target, not_backported=UNREACHED))
    assert state_of(registry)["reason"] == (
        "synthlib-cuda12 0.9.0 has the bug; not backported to <1.0: synth 0.x computes elsewhere"
    )


def test_an_environment_without_the_bug_is_not_affected_in_a_range_not_backported_to(syspath):
    target = Target(syspath, version="0.9.0")
    registry = registry_for(make_patch(target, not_backported=UNREACHED, only_with={"synth-absent": ">=1"}))
    assert state_of(registry)["state"] == "not-affected"


def test_late_patching_names_the_bindings_it_cannot_reach(target):
    target.import_()
    __import__(f"{target.name}.extra")
    with pytest.warns(GpushimWarning, match=rf"still hold the unpatched object: {target.name}\.extra\.compute"):
        registry_for(make_patch(target)).patch()
