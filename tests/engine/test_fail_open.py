"""Nothing gpushim does makes the user's import or program fail; only strict mode raises.

Each test tries one hostile condition on a synthetic target and checks that
the target's import and behaviour are what they would be without gpushim.
"""

import copy
import importlib
import pickle
import sys
import threading
import traceback
import types
import warnings

import pytest

from gpushim import GpushimWarning, PatchError, TargetMismatch
from tests.engine import synthetic
from tests.engine.synthetic import make_patch, registry_for, state_of, write_distribution
from tests.support import run_python


class LoadsOnDictAccess(types.ModuleType):
    """A lazy module, as apipkg makes: reading ``__dict__`` loads (here: fails to load) its contents."""

    @property
    def __dict__(self):
        raise ModuleNotFoundError("No module named 'an_optional_dependency'")


def test_a_late_patch_reads_no_lazy_module_and_still_applies(target, monkeypatch):
    module = target.import_()
    monkeypatch.setitem(sys.modules, "lazy_thing", LoadsOnDictAccess("lazy_thing"))
    monkeypatch.setitem(sys.modules, "not_a_module", object())
    monkeypatch.setitem(sys.modules, "nothing_here", None)
    registry = registry_for(make_patch(target), make_patch(target, id="synth.second"))
    registry.patch()
    assert module.compute(1) == 4
    assert {state_of(registry, id)["state"] for id in ("synth.compute", "synth.second")} == {"applied"}


@pytest.mark.parametrize("version", [None, "13.3.0garbage!", "not a version"])
def test_a_missing_or_non_pep_440_version_fails_the_patch_not_the_import(syspath, target, version):
    dist_info = next(syspath.glob("synthlib_cuda12-*.dist-info"))
    field = "" if version is None else f"Version: {version}\n"
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: synthlib-cuda12\n{field}")
    registry = registry_for(make_patch(target))
    registry.patch()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module = target.import_()
    assert module.compute(1) == 2
    assert state_of(registry)["state"] == "failed"
    assert registry.status()  # and status still answers


class HeldImport:
    """A finder that holds one module's execution until released, as a slow import in another thread would."""

    def __init__(self, name):
        self.name, self.started, self.release = name, threading.Event(), threading.Event()

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        sys.meta_path.insert(0, self)
        original = spec.loader.exec_module

        def exec_module(module):
            self.started.set()
            self.release.wait(10)
            original(module)

        spec.loader.exec_module = exec_module
        return spec


def test_patch_while_another_thread_imports_the_target_applies_once_both_return(target):
    held = HeldImport(target.name)
    sys.meta_path.insert(0, held)
    try:
        importer = threading.Thread(target=target.import_)
        importer.start()
        held.started.wait(10)
        registry = registry_for(make_patch(target))
        patcher = threading.Thread(target=registry.patch)
        patcher.start()
        held.release.set()
        importer.join(10)
        patcher.join(10)
    finally:
        sys.meta_path.remove(held)
    assert state_of(registry)["state"] == "applied"
    assert target.module.compute(1) == 3


def test_patch_from_inside_the_targets_own_import_does_not_deadlock(syspath, target):
    (syspath / target.name / "__init__.py").write_text(
        "from tests.engine import test_fail_open as t\nt.REGISTRY.patch()\ndef compute(x):\n    return x + 1\n"
    )
    global REGISTRY
    REGISTRY = registry_for(make_patch(target))
    module = target.import_()
    importlib.import_module(f"{target.name}.extra")
    assert module.compute(1) == 3


def refuse(module, journal):
    raise TargetMismatch("compute() has an unexpected signature")


def test_warnings_as_errors_still_leave_the_import_alive(target):
    registry = registry_for(make_patch(target, apply=refuse))
    registry.patch()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        module = target.import_()
    assert module.compute(1) == 2
    assert state_of(registry)["state"] == "failed"


def test_an_invalid_switch_under_warnings_as_errors_never_raises(target, monkeypatch):
    monkeypatch.setenv("GPUSHIM_STRICT", "maybe")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        registry_for(make_patch(target)).patch()
    assert target.import_().compute(1) == 3


def test_the_warning_points_at_the_users_import_line(target):
    registry_for(make_patch(target, apply=refuse)).patch()
    with pytest.warns(GpushimWarning) as caught:
        target.import_()  # synthetic.Target.import_ holds the user's import
    assert [warning.filename for warning in caught] == [synthetic.__file__]


def test_a_long_switch_value_is_not_echoed_in_full(target, monkeypatch):
    monkeypatch.setenv("GPUSHIM_DISABLE", "x" * 120_000)
    with pytest.warns(Warning) as caught:
        registry_for(make_patch(target)).patch()
    assert len(str(caught[0].message)) < 1000


def test_strict_mode_finishes_every_patch_then_raises_one_error_naming_each(target, monkeypatch):
    monkeypatch.setenv("GPUSHIM_STRICT", "1")
    registry = registry_for(
        make_patch(target, apply=refuse, id="synth.first"),
        make_patch(target, id="synth.works"),
        make_patch(target, apply=refuse, id="synth.third"),
    )
    registry.patch()
    with pytest.raises(PatchError) as raised:
        target.import_()
    assert "synth.first" in str(raised.value) and "synth.third" in str(raised.value)
    states = {id: state_of(registry, id)["state"] for id in ("synth.first", "synth.works", "synth.third")}
    assert states == {"synth.first": "failed", "synth.works": "applied", "synth.third": "failed"}


def test_a_patched_function_pickles_by_reference_to_the_patched_object(target):
    module = target.import_()
    registry_for(make_patch(target)).patch()
    assert pickle.loads(pickle.dumps(module.compute)) is module.compute
    assert copy.copy(module.compute) is module.compute
    assert copy.deepcopy(module.compute) is module.compute


def test_a_patched_function_that_cannot_pickle_fails_as_the_original_does(target):
    module = target.import_()
    module.compute = lambda x: x + 1
    with pytest.raises(Exception) as unpatched:
        pickle.dumps(module.compute)
    registry_for(make_patch(target)).patch()
    with pytest.raises(type(unpatched.value)):
        pickle.dumps(module.compute)


def test_a_target_imported_again_is_patched_again_and_unpatch_restores_it(target):
    registry = registry_for(make_patch(target))
    registry.patch()
    target.import_()
    del sys.modules[target.name]
    module = target.import_()
    original = module.compute.__wrapped__
    assert module.compute(1) == 3
    assert state_of(registry)["state"] == "applied"
    registry.unpatch()
    assert module.compute is original


def test_the_finder_leaves_sys_meta_path_once_it_watches_nothing():
    finished = run_python(
        "import sys, gpushim\nfrom gpushim.importhook import hooks\n"
        "gpushim.patch(); watching = hooks in sys.meta_path\n"
        "gpushim.unpatch(); print(watching, hooks in sys.meta_path)"
    )
    assert finished.stdout.split() == ["True", "False"], finished.stderr


def test_broken_metadata_files_of_other_distributions_do_not_matter(syspath, target):
    write_distribution(syspath, "unrelated-broken", "1.0")
    (next(syspath.glob("unrelated_broken-*.dist-info")) / "METADATA").write_bytes(b"\xff\xfe garbage")
    registry = registry_for(make_patch(target))
    registry.patch()
    assert target.import_().compute(1) == 3


class RefusesCompute(types.ModuleType):
    """A module that no longer lets ``compute`` be bound: unpatch() cannot put it back."""

    def __setattr__(self, name, value):
        if name == "compute":
            raise AttributeError("compute is frozen")
        super().__setattr__(name, value)


def _stuck_and_other(syspath, target):
    def wrap_compute_and_size(module, journal):
        journal.wrap(module, "compute", synthetic.add_one_more)
        journal.wrap(module.Widget, "size", synthetic.add_one_more)

    other = synthetic.Target(syspath, distribution="synthother")
    registry = registry_for(make_patch(target, apply=wrap_compute_and_size), make_patch(other, id="synth.other"))
    registry.patch()
    module = target.import_()
    module.__class__ = RefusesCompute
    return registry, module, other.import_()


def test_unpatch_undoes_all_it_can_then_reports_what_it_could_not(syspath, target):
    """A binding that cannot be put back stops neither the rest of its patch nor the patches after it."""
    registry, module, other = _stuck_and_other(syspath, target)
    with pytest.warns(GpushimWarning, match=r"could not undo synth\.compute .*compute is frozen"):
        registry.unpatch()
    assert (module.Widget().size(), other.compute(1)) == (1, 2)
    assert (state_of(registry)["state"], state_of(registry, "synth.other")["state"]) == ("failed", "inactive")
    assert "compute is frozen" in state_of(registry)["reason"]


def test_strict_mode_raises_for_what_unpatch_could_not_undo_once_it_undid_the_rest(syspath, target, monkeypatch):
    registry, module, other = _stuck_and_other(syspath, target)
    monkeypatch.setenv("GPUSHIM_STRICT", "1")
    with pytest.raises(PatchError, match=r"synth\.compute"):
        registry.unpatch()
    assert (module.Widget().size(), other.compute(1)) == (1, 2)


def _frames_of_failing_import(name):
    try:
        __import__(name)
    except ZeroDivisionError as error:
        return [(frame.filename, frame.name) for frame in traceback.extract_tb(error.__traceback__)]
    raise AssertionError(f"{name} imported")


@pytest.mark.parametrize("act_before", [False, True], ids=["after", "before and after"])
def test_a_failing_import_has_the_traceback_it_has_without_gpushim(target, act_before):
    """The interpreter removes importlib's frames from it; gpushim's loader in between must go with them."""
    init = target.import_().__file__
    del sys.modules[target.name]
    with open(init, "a") as source:
        source.write("1 / 0\n")
    importlib.invalidate_caches()
    without = _frames_of_failing_import(target.name)
    patch = make_patch(target)
    if act_before:
        patch.patch.before = target.name
        patch.patch.preparer(lambda module, journal: None)
    registry_for(patch).patch()
    assert _frames_of_failing_import(target.name) == without
