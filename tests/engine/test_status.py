"""What gpushim reports about itself, and what importing it costs."""

from gpushim.states import Record
from tests.engine.synthetic import make_patch, registry_for, state_of
from tests.support import run_python

FIELDS = {"id", "target", "distribution", "installed_version", "affected", "fixed_in", "state", "reason", "upstream"}


def test_a_status_record_holds_the_declaration_and_the_release(target):
    registry = registry_for(make_patch(target))
    record = state_of(registry)
    assert isinstance(record, Record)
    assert (record.state, record["state"]) == ("inactive", "inactive")
    assert FIELDS <= set(record.as_dict())
    assert record.as_dict() == {
        **record.as_dict(),
        "target": target.name,
        "distribution": "synthlib-cuda12",
        "installed_version": "1.5.0",
        "affected": ">=1.0,<2.0",
        "fixed_in": "2.0",
        "state": "inactive",
        "upstream": "synth/synth#1, fixed by synth/synth#2",
    }


def test_a_patch_is_inactive_until_patch_is_called_and_pending_after(target):
    registry = registry_for(make_patch(target))
    assert state_of(registry)["state"] == "inactive"
    registry.patch()
    assert state_of(registry)["state"] == "pending"


def test_status_never_imports_the_target(target):
    registry = registry_for(make_patch(target))
    registry.patch()
    registry.status()
    assert target.name not in __import__("sys").modules


def test_status_of_a_release_outside_the_range_before_import(syspath):
    from tests.engine.synthetic import Target

    target = Target(syspath, version="2.3.0")
    registry = registry_for(make_patch(target))
    registry.patch()
    assert state_of(registry)["state"] == "not-affected"


def test_auto_imports_nothing_heavy():
    """Nothing heavy that was not imported before it (3.9's editable installs import typing at startup)."""
    result = run_python(
        "import sys\n"
        "before = set(sys.modules)\n"
        "import gpushim.auto\n"
        "heavy = {'wrapt', 'packaging', 'numpy', 'cupy', 'warp', 'nvidia', 'torch', 'importlib.metadata',"
        " 'logging', 'typing', 'dataclasses'}\n"
        "print(sorted(heavy & (set(sys.modules) - before)))"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
