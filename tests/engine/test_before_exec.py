"""Patches that act before a module of their target executes, and the gates on the environment."""

import contextlib
import importlib
import importlib.util
import sys
import threading
import types

import pytest

from gpushim import GpushimWarning, PatchError
from tests.engine.synthetic import Target, make_patch, registry_for, state_of, write_record

PROVIDED = "synthprovided"
PYTHON = ".".join(map(str, sys.version_info[:3]))


def before_patch(target, prepare=None, apply=None, **gates):
    """A patch that, before ``<target>.extra`` executes, provides module ``synthprovided`` for it to import."""
    synthetic = make_patch(target, apply=apply)
    patch = synthetic.patch
    patch.before = f"{target.name}.extra"
    patch.python = gates.get("python")
    patch.missing = gates.get("missing", ())
    if apply is None:
        patch.apply = None

    @patch.preparer
    def provide(module, journal):
        provided = types.ModuleType(PROVIDED)
        provided.seen_by = module.__name__
        journal.provide(PROVIDED, provided)

    if prepare is not None:
        patch.preparer(prepare)
    return synthetic


def needs_provided(target):
    """``<target>.extra`` fails to import without ``synthprovided``, as DALI's gast_util without distutils."""
    path = target.import_().__file__.replace("__init__.py", "extra.py")
    with open(path, "w") as source:
        source.write(f"import {PROVIDED}\nprovider = {PROVIDED}.seen_by\n")
    importlib.invalidate_caches()


@pytest.fixture
def prepared(target):
    needs_provided(target)
    del sys.modules[target.name]
    return target


def import_extra(target):
    return importlib.import_module(f"{target.name}.extra")


def test_the_preparer_runs_before_the_module_executes(prepared):
    registry = registry_for(before_patch(prepared))
    registry.patch()
    assert import_extra(prepared).provider == f"{prepared.name}.extra"
    assert state_of(registry)["state"] == "applied"


def test_without_the_patch_the_module_fails_to_import(prepared):
    with pytest.raises(ModuleNotFoundError, match=PROVIDED):
        import_extra(prepared)


def test_what_was_provided_is_gone_once_the_module_executed(prepared):
    registry = registry_for(before_patch(prepared))
    registry.patch()
    import_extra(prepared)
    assert PROVIDED not in sys.modules
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(PROVIDED)


def test_the_preparer_runs_before_and_the_applier_after(prepared):
    order = []

    def apply(module, journal):
        order.append(("apply", PROVIDED in sys.modules))

    def prepare(module, journal):
        order.append(("prepare", module.__name__))
        journal.provide(PROVIDED, types.ModuleType(PROVIDED)).seen_by = "x"

    registry = registry_for(before_patch(prepared, prepare=prepare, apply=apply))
    registry.patch()
    prepared.import_()
    import_extra(prepared)
    assert order == [("apply", False), ("prepare", f"{prepared.name}.extra")]


def test_the_release_is_read_from_the_file_the_import_system_found(syspath):
    target = Target(syspath, version="2.5.0")
    needs_provided(target)
    del sys.modules[target.name]
    registry = registry_for(before_patch(target))
    registry.patch()
    with pytest.raises(ModuleNotFoundError):
        import_extra(target)
    record = state_of(registry)
    assert (record["state"], record["reason"]) == ("not-affected", "synthlib-cuda12 2.5.0 is outside >=1.0,<2.0")


def test_a_folder_an_upgrade_left_behind_does_not_decide_the_release(syspath):
    """``pip install --target --upgrade`` from 0.9.0 to 1.5.0: the RECORD of 0.9.0's folder lists older files."""
    target = Target(syspath, version="1.5.0")
    needs_provided(target)
    del sys.modules[target.name]
    extra = f"{target.name}/extra.py"
    write_record(syspath / "synthlib_cuda12-1.5.0.dist-info", {extra: (syspath / extra).read_bytes()})
    leftover = syspath / "synthlib_cuda12-0.9.0.dist-info"
    leftover.mkdir()
    (leftover / "METADATA").write_text("Metadata-Version: 2.1\nName: synthlib-cuda12\nVersion: 0.9.0\n")
    write_record(leftover, {extra: b"from . import compute\n"})
    registry = registry_for(before_patch(target))
    registry.patch()
    assert import_extra(target).provider == f"{target.name}.extra"
    assert (state_of(registry)["state"], state_of(registry)["installed_version"]) == ("applied", "1.5.0")


def test_a_failing_preparer_leaves_the_import_as_without_gpushim(prepared):
    def prepare(module, journal):
        journal.provide(PROVIDED, types.ModuleType(PROVIDED))
        raise RuntimeError("cannot prepare")

    registry = registry_for(before_patch(prepared, prepare=prepare))
    registry.patch()
    with pytest.warns(GpushimWarning, match="cannot prepare"), pytest.raises(ModuleNotFoundError, match=PROVIDED):
        import_extra(prepared)
    assert PROVIDED not in sys.modules
    assert state_of(registry)["state"] == "failed"


def test_a_failing_preparer_raises_in_strict_mode(prepared, monkeypatch):
    monkeypatch.setenv("GPUSHIM_STRICT", "1")

    def prepare(module, journal):
        raise RuntimeError("cannot prepare")

    registry = registry_for(before_patch(prepared, prepare=prepare))
    registry.patch()
    with pytest.warns(GpushimWarning), pytest.raises(PatchError, match="cannot prepare"):
        import_extra(prepared)
    assert PROVIDED not in sys.modules


def test_unpatch_withdraws_what_is_left_and_stops_preparing(prepared):
    def prepare(module, journal):
        journal.provide(PROVIDED, types.ModuleType(PROVIDED)).seen_by = "x"

    registry = registry_for(before_patch(prepared, prepare=prepare))
    registry.patch()
    prepared.import_()
    extra = types.ModuleType(f"{prepared.name}.extra")
    registry._run_preparers(extra.__name__, extra)  # prepared, its module not executed yet
    assert exec(f"import {PROVIDED}", vars(extra)) is None
    registry.unpatch()
    with pytest.raises(ModuleNotFoundError):
        exec(f"import {PROVIDED}", vars(extra))
    with pytest.raises(ModuleNotFoundError):
        import_extra(prepared)


def test_a_provided_name_the_environment_holds_is_left_alone(prepared, monkeypatch):
    theirs = types.ModuleType(PROVIDED)
    theirs.seen_by = "theirs"
    monkeypatch.setitem(sys.modules, PROVIDED, theirs)
    registry = registry_for(before_patch(prepared))
    registry.patch()
    with pytest.warns(GpushimWarning, match="already holds"):
        assert import_extra(prepared).provider == "theirs"
    assert sys.modules[PROVIDED] is theirs


def test_threads_importing_at_once_prepare_once_and_leak_nothing(prepared):
    calls = []

    def prepare(module, journal):
        calls.append(module.__name__)
        journal.provide(PROVIDED, types.ModuleType(PROVIDED)).seen_by = "x"

    registry = registry_for(before_patch(prepared, prepare=prepare))
    registry.patch()
    barrier, results = threading.Barrier(8), []

    def run():
        barrier.wait()
        results.append(import_extra(prepared).provider)

    threads = [threading.Thread(target=run) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert (results, calls) == (["x"] * 8, [f"{prepared.name}.extra"])
    assert PROVIDED not in sys.modules


@pytest.mark.parametrize(
    ("gates", "state", "reason"),
    [
        ({"missing": ("synthnowhere",)}, "applied", "no module named synthnowhere"),
        ({"missing": ("json",)}, "not-affected", "the bug needs no module named json, and json is found"),
        ({"missing": ("json:nowhere",)}, "applied", "no attribute json:nowhere"),
        (
            {"missing": ("json:JSONDecoder.decode",)},
            "not-affected",
            "the bug needs no attribute json:JSONDecoder.decode, and json:JSONDecoder.decode is found",
        ),
        ({"python": ">=3.8"}, "applied", f"Python {PYTHON} >=3.8"),
        ({"python": "<3"}, "not-affected", f"the bug needs Python <3; this is Python {PYTHON}"),
    ],
)
def test_environment_gates_say_which_condition_applied(prepared, gates, state, reason):
    registry = registry_for(before_patch(prepared, **gates))
    registry.patch()
    try:
        import_extra(prepared)
    except ModuleNotFoundError:
        pass
    record = state_of(registry)
    if state == "applied":
        reason += f"; {prepared.name}.extra executed with {PROVIDED} provided, withdrawn since"
    assert (record["state"], record["reason"]) == (state, reason)


def test_a_module_the_bug_needs_missing_is_found_without_importing_it(prepared, syspath):
    (syspath / "synthfound.py").write_text("raise AssertionError('executed')\n")
    importlib.invalidate_caches()
    registry = registry_for(before_patch(prepared, missing=("synthfound",)))
    registry.patch()
    with pytest.raises(ModuleNotFoundError):
        import_extra(prepared)
    assert state_of(registry)["state"] == "not-affected"
    assert "synthfound" not in sys.modules


def test_a_target_whose_import_fails_after_the_preparer_ran_stays_pending(prepared):
    """As ``import nvidia.dali`` failing on a later module once gast_util executed; the import that succeeds applies."""
    init = importlib.util.find_spec(prepared.name).origin
    source = open(init).read()
    with open(init, "w") as broken:
        broken.write(f"{source}\nfrom . import extra\nimport a_missing_module\n")
    registry = registry_for(before_patch(prepared))
    registry.patch()
    with pytest.raises(ModuleNotFoundError, match="a_missing_module"):
        prepared.import_()
    assert state_of(registry)["state"] == "pending"
    with open(init, "w") as mended:
        mended.write(f"{source}\nfrom . import extra\n")
    importlib.invalidate_caches()
    assert (prepared.import_().extra.provider, state_of(registry)["state"]) == (f"{prepared.name}.extra", "applied")


@pytest.mark.parametrize("again", ["reload", "import"])
def test_a_module_executed_before_patch_is_prepared_when_it_executes_again(prepared, again):
    """As after ``unpatch(); patch()``, or a late ``import gpushim.auto``: the next execution is prepared."""
    registry = registry_for(before_patch(prepared))
    registry.patch()
    import_extra(prepared)
    registry.unpatch()
    registry.patch()
    assert state_of(registry)["state"] == "inactive"
    if again == "reload":
        extra = importlib.reload(sys.modules[f"{prepared.name}.extra"])
    else:
        del sys.modules[f"{prepared.name}.extra"]
        extra = import_extra(prepared)
    assert (extra.provider, state_of(registry)["state"]) == (f"{prepared.name}.extra", "applied")
    registry.unpatch()


IMPORTED_ELSEWHERE = f"""
try:
    import {PROVIDED}
    found = True
except ModuleNotFoundError:
    found = False
"""


def test_what_is_provided_is_seen_by_the_executing_modules_imports_alone(prepared):
    """Not by another thread's import while it executes (exec'd code has globals of its own)."""
    extra = importlib.util.find_spec(prepared.name).origin.replace("__init__.py", "extra.py")
    with open(extra, "a") as source:
        source.write(
            "import threading\n"
            "elsewhere = {}\n"
            f"thread = threading.Thread(target=exec, args=({IMPORTED_ELSEWHERE!r}, elsewhere))\n"
            "thread.start()\n"
            "thread.join()\n"
        )
    registry = registry_for(before_patch(prepared))
    registry.patch()
    module = import_extra(prepared)
    assert (module.provider, module.elsewhere["found"]) == (f"{prepared.name}.extra", False)


def test_a_patch_after_the_target_was_imported_prepares_a_module_that_executes_later(prepared):
    prepared.import_()
    registry = registry_for(before_patch(prepared))
    registry.patch()
    assert import_extra(prepared).provider == f"{prepared.name}.extra"
    assert state_of(registry)["state"] == "applied"


@pytest.mark.parametrize(
    ("missing", "state"), [("synthlazy:Node.value", "not-affected"), ("synthlazy:served", "applied")]
)
def test_an_attribute_the_bug_needs_missing_is_looked_up_without_running_code(prepared, syspath, missing, state):
    """A property is found without being read; what only a module ``__getattr__`` serves counts as missing."""
    ran = "raise AssertionError('ran')"
    lines = [
        "def __getattr__(name):",
        f"    {ran}",
        "class Node:",
        "    @property",
        "    def value(self):",
        f"        {ran}",
    ]
    (syspath / "synthlazy.py").write_text("\n".join(lines) + "\n")
    importlib.invalidate_caches()
    registry = registry_for(before_patch(prepared, missing=(missing,)))
    registry.patch()
    with contextlib.suppress(ModuleNotFoundError):
        import_extra(prepared)
    assert state_of(registry)["state"] == state
