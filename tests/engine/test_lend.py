"""``Journal.lend``: a name on a shared object, there only while one module of the target executes."""

import importlib
import importlib.util
import sys
import types

import pytest

from gpushim import GpushimWarning
from tests.engine.synthetic import make_patch, registry_for, state_of

SHARED = "synthshared"


@pytest.fixture
def shared(monkeypatch):
    """A module every importer shares, as ``numpy`` is: it lacks ``removed``, which ``<target>.extra`` reads."""
    module = types.ModuleType(SHARED)
    monkeypatch.setitem(sys.modules, SHARED, module)
    return module


@pytest.fixture
def reader(target, shared):
    path = target.import_().__file__.replace("__init__.py", "extra.py")
    with open(path, "w") as source:
        source.write(f"import {SHARED}\nread = {SHARED}.removed\n")
    importlib.invalidate_caches()
    del sys.modules[target.name]
    return target


def lending(target, shared, value="lent"):
    synthetic = make_patch(target)
    patch = synthetic.patch
    patch.before, patch.apply = f"{target.name}.extra", None

    @patch.preparer
    def lend(module, journal):
        journal.lend(shared, "removed", value)

    return synthetic


def import_extra(target):
    return importlib.import_module(f"{target.name}.extra")


def test_the_module_reads_the_lent_name_while_it_executes(reader, shared):
    registry_for(lending(reader, shared)).patch()
    assert import_extra(reader).read == "lent"


def test_the_lent_name_is_gone_from_the_shared_object_once_the_module_executed(reader, shared):
    registry_for(lending(reader, shared)).patch()
    import_extra(reader)
    assert not hasattr(shared, "removed")


def test_status_names_what_was_lent(reader, shared):
    registry = registry_for(lending(reader, shared))
    registry.patch()
    import_extra(reader)
    reason = state_of(registry)["reason"]
    assert reason.endswith(f"{reader.name}.extra executed with {SHARED}.removed lent, withdrawn since")


def test_a_name_the_shared_object_holds_is_not_lent(reader, shared):
    shared.removed = "theirs"
    registry = registry_for(lending(reader, shared))
    registry.patch()
    with pytest.warns(GpushimWarning, match="already holds 'removed'"):
        assert import_extra(reader).read == "theirs"
    assert shared.removed == "theirs"
    assert state_of(registry)["state"] == "failed"


def test_unpatch_withdraws_a_name_still_lent(reader, shared):
    registry = registry_for(lending(reader, shared))
    registry.patch()
    reader.import_()
    extra = types.ModuleType(f"{reader.name}.extra")
    registry._on_executing(extra.__name__, extra)  # prepared, not executed yet
    exec(f"import {SHARED}\nread = {SHARED}.removed", vars(extra))
    assert (extra.read, hasattr(shared, "removed")) == ("lent", False)
    registry.unpatch()
    with pytest.raises(AttributeError):
        exec(f"import {SHARED}\nread = {SHARED}.removed", vars(extra))
    assert extra.synthshared is shared


IMPORTED_ELSEWHERE = f"""
import {SHARED}
found = hasattr({SHARED}, "removed")
"""


def test_no_other_module_sees_the_lent_name_while_the_module_executes(reader, shared):
    """Another thread's code (exec'd code has globals of its own), and the module holds the shared one after."""
    extra = importlib.util.find_spec(reader.name).origin.replace("__init__.py", "extra.py")
    with open(extra, "a") as source:
        source.write(
            "import threading\n"
            "elsewhere = {}\n"
            f"thread = threading.Thread(target=exec, args=({IMPORTED_ELSEWHERE!r}, elsewhere))\n"
            "thread.start()\n"
            "thread.join()\n"
        )
    registry_for(lending(reader, shared)).patch()
    module = import_extra(reader)
    assert (module.read, module.elsewhere["found"], module.synthshared) == ("lent", False, shared)
