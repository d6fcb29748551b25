"""When a patch is applied relative to its target's import, and how often."""

import importlib
import importlib.machinery
import importlib.util
import sys
import threading
import time
import types
import zipfile
import zipimport

import pytest

from gpushim.importhook import hooks
from tests.engine.synthetic import make_patch, registry_for, state_of, write_distribution


def test_patch_before_import_applies_when_the_target_finishes_importing(target):
    registry = registry_for(make_patch(target))
    registry.patch()
    assert state_of(registry)["state"] == "pending"
    module = target.import_()
    assert module.compute(1) == 3
    assert state_of(registry)["state"] == "applied"


def test_patch_after_import_applies_at_once(target):
    module = target.import_()
    registry = registry_for(make_patch(target))
    registry.patch()
    assert module.compute(1) == 3


def test_patched_callable_exposes_the_original_as_wrapped(target):
    original = target.import_().compute
    registry_for(make_patch(target)).patch()
    assert target.module.compute.__wrapped__ is original


def test_patching_twice_wraps_once(target):
    original = target.import_().compute
    registry = registry_for(make_patch(target))
    registry.patch()
    registry.patch()
    assert target.module.compute.__wrapped__ is original
    assert target.module.compute(1) == 3


def test_unpatch_restores_the_identical_original(target):
    original = target.import_().compute
    registry = registry_for(make_patch(target))
    registry.patch()
    registry.unpatch()
    assert target.module.compute is original


def test_patch_unpatch_patch_applies_again(target):
    target.import_()
    registry = registry_for(make_patch(target))
    registry.patch()
    registry.unpatch()
    registry.patch()
    assert target.module.compute(1) == 3
    assert state_of(registry)["state"] == "applied"


def test_unpatch_without_patch_changes_nothing(target):
    original = target.import_().compute
    registry_for(make_patch(target)).unpatch()
    assert target.module.compute is original


def test_unpatch_before_import_cancels_the_pending_patch(target):
    registry = registry_for(make_patch(target))
    registry.patch()
    registry.unpatch()
    assert target.import_().compute(1) == 2


def test_unpatch_restores_every_module_the_original_was_set_on(target):
    module = target.import_()
    original = module.compute
    extra = __import__(f"{target.name}.extra", fromlist=["compute"])

    def wrap_both(module, journal):
        journal.wrap([module, extra], "compute", lambda wrapped, instance, args, kwargs: 0)

    registry = registry_for(make_patch(target, apply=wrap_both))
    registry.patch()
    assert module.compute(1) == extra.compute(1) == 0
    registry.unpatch()
    assert module.compute is original and extra.compute is original


def test_methods_on_classes_are_wrapped_and_restored(target):
    module = target.import_()
    original = vars(module.Widget)["size"]

    def wrap_method(module, journal):
        journal.wrap(module.Widget, "size", lambda wrapped, instance, args, kwargs: wrapped() * 10)

    registry = registry_for(make_patch(target, apply=wrap_method))
    registry.patch()
    assert module.Widget().size() == 10
    registry.unpatch()
    assert vars(module.Widget)["size"] is original


def test_concurrent_first_imports_apply_the_patch_once(target):
    calls = []

    def counting_apply(module, journal):
        calls.append(module)
        journal.wrap(module, "compute", lambda wrapped, instance, args, kwargs: wrapped(*args) + 1)

    registry_for(make_patch(target, apply=counting_apply)).patch()
    barrier = threading.Barrier(8)
    results = []

    def import_and_call():
        barrier.wait()
        results.append(target.import_().compute(1))

    threads = [threading.Thread(target=import_and_call) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1
    assert results == [3] * 8


def test_a_target_still_executing_when_patched_is_patched_at_the_next_import(target):
    """As when another thread is importing the target while this one calls patch()."""
    module = target.import_()
    module.__spec__._initializing = True
    registry = registry_for(make_patch(target))
    registry.patch()
    module.__spec__._initializing = False
    assert module.compute(1) == 2
    importlib.import_module(f"{target.name}.extra")
    assert module.compute(1) == 3
    assert state_of(registry)["state"] == "applied"


def test_one_patch_undone_and_patched_again_beside_another_applies_at_once(target):
    module = target.import_()
    registry = registry_for(make_patch(target), make_patch(target, id="synth.other"))
    registry.patch()
    registry.unpatch("synth.compute")
    registry.patch("synth.compute")
    assert state_of(registry)["state"] == "applied"
    assert module.compute(1) == 4


def test_undoing_the_inner_of_two_wrappers_keeps_the_outer(target):
    module = target.import_()
    original = module.compute
    registry = registry_for(make_patch(target), make_patch(target, id="synth.other"))
    registry.patch()
    registry.unpatch("synth.compute")
    assert module.compute(1) == 3
    assert module.compute.__wrapped__ is original
    registry.unpatch()
    assert module.compute is original


class FindsItsOwn:
    """An import hook ahead of gpushim's that finds its modules without the other finders, as typeguard's does."""

    def __init__(self, name):
        self.name = name

    def find_spec(self, fullname, path=None, target=None):
        if fullname == self.name:
            return importlib.machinery.PathFinder.find_spec(fullname, path, target)
        return None


LOOKS = {
    "status": lambda registry: registry.status(),
    "patch": lambda registry: registry.patch(),
}


@pytest.mark.parametrize("look", list(LOOKS))
def test_a_target_a_hook_ahead_of_gpushims_found_is_patched_when_gpushim_next_looks(target, look):
    registry = registry_for(make_patch(target))
    registry.patch()
    hook = FindsItsOwn(target.name)
    sys.meta_path.insert(0, hook)
    try:
        module = target.import_()
    finally:
        sys.meta_path.remove(hook)
    LOOKS[look](registry)
    assert (module.compute(1), state_of(registry)["state"]) == (3, "applied")


def test_a_target_a_hook_put_ahead_of_gpushims_finds_is_patched_before_its_import_returns(target, syspath):
    """As under ``typeguard.install_import_hook``: the program imports something else first, as programs do."""
    registry = registry_for(make_patch(target))
    registry.patch()
    hook = FindsItsOwn(target.name)
    sys.meta_path.insert(0, hook)
    try:
        (syspath / "synthlibother.py").write_text("")
        importlib.invalidate_caches()
        importlib.import_module("synthlibother")
        assert target.import_().compute(1) == 3
        assert state_of(registry)["state"] == "applied"
    finally:
        sys.meta_path.remove(hook)
        registry.unpatch()


@pytest.mark.parametrize("statement", ["import {name}", "__import__({name!r})", "from {name} import compute"])
def test_a_target_imported_straight_after_a_hook_is_put_ahead_of_gpushims_is_patched_before_its_import_returns(
    target, statement
):
    """As ``typeguard.install_import_hook`` then ``import cupy``: no other import reaches gpushim's finder between."""
    registry = registry_for(make_patch(target))
    registry.patch()
    hook = FindsItsOwn(target.name)
    sys.meta_path.insert(0, hook)
    try:
        exec(statement.format(name=target.name), {})
        assert (target.module.compute(1), sys.meta_path[1]) == (3, hook)
    finally:
        sys.meta_path.remove(hook)
        registry.unpatch()


def test_once_gpushims_finder_has_left_an_import_leaves_the_finders_as_they_are(target, monkeypatch):
    """After ``unpatch()`` the finder leaves ``sys.meta_path``; the audit hook that put it first stays, idle."""
    registry = registry_for(make_patch(target))
    registry.patch()
    registry.unpatch()
    hook = FindsItsOwn(target.name)
    monkeypatch.setattr(sys, "meta_path", [hook, *(finder for finder in sys.meta_path if finder is not hooks)])
    exec(f"import {target.name}", {})
    assert (target.module.compute(1), hooks in sys.meta_path, sys.meta_path[0]) == (2, False, hook)


class ImportsWhileFinding:
    """A hook ahead of gpushim's that imports a module of its own when asked to find ``name``, and finds nothing."""

    def __init__(self, name, syspath):
        self.name = name
        self.syspath = syspath

    def find_spec(self, fullname, path=None, target=None):
        if fullname == self.name:
            (self.syspath / "synthhelper.py").write_text("")
            importlib.invalidate_caches()
            sys.modules.pop("synthhelper", None)
            __import__("synthhelper")
        return None


def test_an_import_a_hook_makes_while_it_finds_a_target_does_not_make_that_finding_skip_gpushims_finder(
    target, syspath
):
    """Put first during the hook's own import, gpushim's finder would leave the iteration that is asking the hook
    to see the hook again and skip gpushim's (``importlib.import_module`` raises no audit event for its module)."""
    registry = registry_for(make_patch(target))
    registry.patch()
    hook = ImportsWhileFinding(target.name, syspath)
    sys.meta_path.insert(0, hook)
    try:
        assert target.import_().compute(1) == 3
    finally:
        sys.meta_path.remove(hook)
        registry.unpatch()


def test_a_target_imported_from_a_zip_is_patched_when_it_finishes_importing(syspath):
    """Before Python 3.10 ``zipimporter`` loads with ``load_module`` alone, and no ``exec_module``."""
    archive = syspath / "site.zip"
    with zipfile.ZipFile(archive, "w") as site:
        site.writestr("synthlibzip/__init__.py", "def compute(x):\n    return x + 1\n")
        site.writestr(
            "synthlib_zip-1.5.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: synthlib-zip\nVersion: 1.5.0\n"
        )
    sys.path.insert(0, str(archive))
    try:
        target = types.SimpleNamespace(name="synthlibzip", distribution="synthlib-zip")
        registry = registry_for(make_patch(target))
        registry.patch()
        module = importlib.import_module("synthlibzip")
        assert module.compute(1) == 3
        assert type(module.__loader__) is type(module.__spec__.loader) is zipimport.zipimporter
    finally:
        sys.path.remove(str(archive))


def test_a_namespace_package_target_is_patched_when_it_finishes_importing(syspath):
    """Up to Python 3.12 a namespace package is found without a loader, and nothing of it executes."""
    (syspath / "synthlibns").mkdir()
    (syspath / "synthlibns" / "core.py").write_text("def compute(x):\n    return x + 1\n")
    write_distribution(syspath, "synthlib-ns", "1.5.0")
    target = types.SimpleNamespace(name="synthlibns", distribution="synthlib-ns")
    registry = registry_for(make_patch(target, module="synthlibns.core"))
    registry.patch()
    try:
        module = importlib.import_module("synthlibns.core")
        assert (module.compute(1), state_of(registry)["state"]) == (3, "applied")
        package = sys.modules["synthlibns"]
        assert package.__file__ is None and "NamespaceLoader" in type(package.__loader__).__name__
    finally:
        registry.unpatch()


def test_a_status_while_another_thread_executes_a_target_loaded_by_hand_waits_for_its_end(syspath):
    """As importlib's documented recipe loads a module: no import lock, and the module in ``sys.modules`` before its
    code has run."""
    source = syspath / "synthlibhand.py"
    source.write_text("import time\ntime.sleep(0.5)\n\ndef compute(x):\n    return x + 1\n")
    write_distribution(syspath, "synthlib-hand", "1.5.0")
    registry = registry_for(make_patch(types.SimpleNamespace(name="synthlibhand", distribution="synthlib-hand")))
    registry.patch()

    def load():
        spec = importlib.util.spec_from_file_location("synthlibhand", source)
        module = importlib.util.module_from_spec(spec)
        sys.modules["synthlibhand"] = module
        spec.loader.exec_module(module)

    loading = threading.Thread(target=load)
    loading.start()
    try:
        time.sleep(0.2)
        assert state_of(registry)["state"] == "pending"
    finally:
        loading.join()
        registry.status()
    try:
        assert (sys.modules["synthlibhand"].compute(1), state_of(registry)["state"]) == (3, "applied")
    finally:
        registry.unpatch()
