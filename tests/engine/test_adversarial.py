"""A hostile environment, tried in fresh interpreters: gpushim never changes what the user's program does.

Each case sets up one hostile condition (a strange ``sys.modules`` entry,
broken metadata, a missing dependency of gpushim's), then runs the same user
program twice: with gpushim (``import gpushim.auto`` before or after the
target's import) and without it.  Standard output and exit status must be
the same, under ``python -W error`` too; the gpushim run then reports the
states of its patches, which must be the expected ones.  In strict mode
(``GPUSHIM_STRICT=1``) a case where a patch fails must end the program with
one ``PatchError`` naming every failed patch, and otherwise be the same.

The target ``synthadv`` comes with a synthetic catalogue of two patches
(tests/engine/catalogues.py ``write_site``): ``synth.compute`` wraps
``compute``, ``synth.refused`` wraps ``refused``, which some cases take away
so that the patch fails.  The program never calls the patched functions
through gpushim's wrappers: only the states say whether a patch applied.

Besides: the standard modules gpushim imports only when it needs them, made
unimportable one by one; pickling and copying patched callables, compared
with the originals; and rounds of threads that import the target and call
``patch()``, ``unpatch()`` and ``status()`` all at once, after which one
``patch()`` must leave each patch applied exactly once.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.engine.catalogues import STANDALONE_PATCH, write_site
from tests.engine.synthetic import make_patch, registry_for, state_of

TARGET = "synthadv"
DISTRIBUTION = "synthadv-dist"
DIST_INFO = "synthadv_dist-1.5.0.dist-info"
WITHOUT_GPUSHIM = "SYNTHADV_WITHOUT_GPUSHIM"

TARGET_SOURCE = """
__version__ = "1.5.0"

def compute(x):
    return x + 1

def refused(x):
    return x

def other(x):
    return x * 10

class Widget:
    def size(self, x):
        return x + 1

    @staticmethod
    def make(x):
        return x + 1

class Refuses:
    def __call__(self, x):
        return x + 1

    def __reduce_ex__(self, protocol):
        raise TypeError("cannot pickle or copy a Refuses")

refuses = Refuses()

class Fused:  # claims the name of the function it stands for, as cupy.fuse does

    def __init__(self, function):
        self.function, self.__module__, self.__qualname__ = function, function.__module__, function.__qualname__

    def __call__(self, x):
        return self.function(x)

def fused(x):
    return x + 1

fused = Fused(fused)

def _make_local():
    def local(x):
        return x + 1

    return local

local = _make_local()
"""

# The user's program.  PRELUDE sets up the hostile condition; EARLY and LATE are
# where gpushim is imported, when it is.
PROGRAM = """
{prelude}
{early}
print("importing synthadv")
try:
    import synthadv
except BaseException as error:
    print("import failed:", type(error).__name__, error)
    synthadv = None
else:
    print("other:", synthadv.other(2))
    print("compute unpatched:", getattr(synthadv.compute, "__wrapped__", synthadv.compute)(1))
{late}
{epilogue}
"""

REPORT = """
import gpushim
print("@@" + json.dumps({record["id"]: record["state"] for record in gpushim.status()}))
"""


def _set_metadata(text):
    def setup(site):
        (site / DIST_INFO / "METADATA").write_bytes(text if isinstance(text, bytes) else text.encode())

    return setup


def _metadata_is_a_directory(site):
    (site / DIST_INFO / "METADATA").unlink()
    (site / DIST_INFO / "METADATA").mkdir()


def _metadata_dangles(site):
    (site / DIST_INFO / "METADATA").unlink()
    (site / DIST_INFO / "METADATA").symlink_to(site / "nowhere")


def _second_install(version):
    def setup(site):
        other = site / f"synthadv_dist-{version}.dist-info"
        other.mkdir()
        (other / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {DISTRIBUTION}\nVersion: {version}\n")

    return setup


def _without_refused(site):
    source = site / TARGET / "__init__.py"
    source.write_text(source.read_text().replace("def refused(x):\n    return x\n", ""))


def _without_version_attribute(site):
    source = site / TARGET / "__init__.py"
    source.write_text(source.read_text().replace('__version__ = "1.5.0"\n', ""))


def _lazy_helper(site):
    (site / "lazyhelper.py").write_text("print('lazyhelper executed')\nimport a_missing_optional_dependency\n")


def _loud_target(site):
    source = site / TARGET / "__init__.py"
    source.write_text("print('executing synthadv')\n" + source.read_text())


def _broken_target(site):
    source = site / TARGET / "__init__.py"
    source.write_text(source.read_text() + "import a_missing_optional_dependency\n")


BLOCK = "import sys\nfor name in {names!r}:\n    sys.modules[name] = None\n"
FINDER_BLOCK = """
import sys

class Refuse:
    def find_spec(self, fullname, path=None, target=None):
        if fullname.partition(".")[0] in {names!r}:
            raise ImportError(f"{{fullname}} is blocked here")
        return None

for name in [name for name in sys.modules if name.partition(".")[0] in {names!r}]:
    del sys.modules[name]
sys.meta_path.insert(0, Refuse())
"""
WEIRD_ENTRIES = """
import sys, types

class DictRaises(types.ModuleType):
    @property
    def __dict__(self):
        raise RuntimeError("no namespace for you")

class EverythingRaises(types.ModuleType):
    def __getattribute__(self, name):
        raise RuntimeError(f"{name}? no")

class GetattrRaises(types.ModuleType):
    def __getattr__(self, name):
        raise ImportError(f"{name} needs an optional dependency")

class Unequal:
    def __eq__(self, other):
        raise RuntimeError("no comparing")
    __hash__ = object.__hash__

sys.modules["weird_none"] = None
sys.modules["weird_object"] = object()
sys.modules["weird_int"] = 42
sys.modules["weird_unequal"] = Unequal()
sys.modules["weird_dict"] = DictRaises("weird_dict")
sys.modules["weird_everything"] = EverythingRaises("weird_everything")
sys.modules["weird_getattr"] = GetattrRaises("weird_getattr")
sys.modules[("not", "a", "string")] = types.ModuleType("tuple_key")
"""
LAZY = """
import importlib.util, sys

spec = importlib.util.find_spec("lazyhelper")
spec.loader = importlib.util.LazyLoader(spec.loader)
lazy = importlib.util.module_from_spec(spec)
sys.modules["lazyhelper"] = lazy
spec.loader.exec_module(lazy)
"""
LAZY_TARGET = LAZY.replace("lazyhelper", "synthadv")
NOT_A_MODULE = """
import sys, types

sys.modules["synthadv"] = types.SimpleNamespace(other=lambda x: x * 10, compute=lambda x: x + 1)
"""
LAZY_LOADED = "print('lazyhelper loaded:', object.__getattribute__(sys.modules['lazyhelper'], '__class__').__name__)\n"

# name: (site setup, prelude, epilogue, states without strict mode, or those by where gpushim is imported).
APPLIED = {"synth.compute": "applied", "synth.refused": "applied"}
FAILED = {"synth.compute": "failed", "synth.refused": "failed"}
CASES = {
    "plain": (None, "", "", APPLIED),
    "a patch that does not fit": (_without_refused, "", "", {"synth.compute": "applied", "synth.refused": "failed"}),
    "weird sys.modules entries": (None, WEIRD_ENTRIES, "", APPLIED),
    "a lazy module that cannot load": (_lazy_helper, LAZY, LAZY_LOADED, APPLIED),
    "a name bound before a late patch": (None, "", "from synthadv import compute as early_binding\n", APPLIED),
    "the target loaded lazily": (_loud_target, LAZY_TARGET, "", APPLIED),
    # Its load fails half way and leaves the module in sys.modules.  Before 3.13 that is an ordinary module,
    # which gpushim takes as loaded once it looks; from 3.13 on the patches wait for a load that succeeds.
    "the target is a lazy module that cannot load": (
        _broken_target,
        LAZY_TARGET,
        "",
        APPLIED if sys.version_info < (3, 13) else {"synth.compute": "pending", "synth.refused": "pending"},
    ),
    "the target is not a module": (None, NOT_A_MODULE, "", FAILED),
    "the target is None in sys.modules": (
        None,
        BLOCK.format(names=[TARGET]),
        "",
        {"synth.compute": "pending", "synth.refused": "pending"},
    ),
    "wrapt is None in sys.modules": (None, BLOCK.format(names=["wrapt"]), "", FAILED),
    "wrapt refused by a finder": (None, FINDER_BLOCK.format(names=["wrapt"]), "", FAILED),
    "packaging refused by a finder": (None, FINDER_BLOCK.format(names=["packaging"]), "", APPLIED),
    "wrapt and packaging refused": (None, FINDER_BLOCK.format(names=["wrapt", "packaging"]), "", FAILED),
    "metadata without Version": (_set_metadata(f"Metadata-Version: 2.1\nName: {DISTRIBUTION}\n"), "", "", FAILED),
    "a version that is not PEP 440": (
        _set_metadata(f"Metadata-Version: 2.1\nName: {DISTRIBUTION}\nVersion: 1.5.0garbage!\n"),
        "",
        "",
        FAILED,
    ),
    "a version not PEP 440, packaging refused": (
        _set_metadata(f"Metadata-Version: 2.1\nName: {DISTRIBUTION}\nVersion: 1.5.0garbage!\n"),
        FINDER_BLOCK.format(names=["packaging"]),
        "",
        FAILED,
    ),
    "metadata of binary garbage": (_set_metadata(b"\xff\xfe\x00garbage"), "", "", FAILED),
    "METADATA is a directory": (_metadata_is_a_directory, "", "", FAILED),
    "METADATA is a dangling link": (_metadata_dangles, "", "", FAILED),
    "two installs, the module agrees with one": (_second_install("2.5.0"), "", "", APPLIED),
    "two installs, the module agrees with neither": (
        lambda site: (_second_install("2.5.0")(site), _set_metadata(f"Name: {DISTRIBUTION}\nVersion: 1.4.0\n")(site)),
        "",
        "",
        FAILED,
    ),
    "two installs, no __version__ to choose": (
        lambda site: (_second_install("2.5.0")(site), _without_version_attribute(site)),
        "",
        "",
        APPLIED,
    ),
}
SWITCHES = "import os\nos.environ.update(GPUSHIM_LOG='info', GPUSHIM_DISABLE='synth.nothing*')\n"
# Not types: with it blocked, re and enum cannot be imported, nor anything that needs them
# (the program's own json), which an editable install hides by importing them at startup.
STDLIB_GPUSHIM_IMPORTS_LATE = [
    "warnings",
    "logging",
    "fnmatch",
    "pickle",
    "zipfile",
    "importlib",
    "importlib.metadata",
]


def _write_site(root, setup):
    """``write_site``'s target and catalogue, and a sitecustomize that installs the catalogue unless told not to."""
    site = write_site(root, TARGET, DISTRIBUTION, "1.5.0", declared="1.5.0")
    (site / TARGET / "__init__.py").write_text(textwrap.dedent(TARGET_SOURCE))
    folder = site / "synthcatalogue" / "synth"
    (folder / "refused.py").write_text(
        STANDALONE_PATCH.format(id="synth.refused", affected=">=1.0,<2.0", name="refused")
    )
    customize = site / "sitecustomize.py"
    body = textwrap.indent(customize.read_text(), "    ")
    customize.write_text(f"import os\n\nif not os.environ.get({WITHOUT_GPUSHIM!r}):\n{body}")
    if setup is not None:
        setup(site)
    return site


def _run(site, code, warnings_as_errors=False, env=None):
    variables = {key: value for key, value in os.environ.items() if not key.startswith(("GPUSHIM_", "PYTHON"))}
    variables.update(PYTHONPATH=str(site), PYTHONDONTWRITEBYTECODE="1", **(env or {}))
    flags = ["-W", "error"] if warnings_as_errors else []
    return subprocess.run(
        [sys.executable, *flags, "-c", code], env=variables, capture_output=True, text=True, timeout=60
    )


def _output(finished):
    lines = finished.stdout.splitlines()
    states = [json.loads(line[2:]) for line in lines if line.startswith("@@")]
    return [line for line in lines if not line.startswith("@@")], (states[0] if states else None)


_sites: dict = {}
_baselines: dict = {}


def _site(name, tmp_path_factory):
    if name not in _sites:
        _sites[name] = _write_site(tmp_path_factory.mktemp("adversary"), CASES[name][0])
    return _sites[name]


def _baseline(name, warnings_as_errors, tmp_path_factory, prelude=None):
    """The program without gpushim: its catalogue's sitecustomize does nothing, nothing imports gpushim."""
    key = (name, warnings_as_errors, prelude)
    if key not in _baselines:
        _, case_prelude, epilogue, _ = CASES[name]
        code = PROGRAM.format(prelude=prelude or case_prelude, early="", late="", epilogue=epilogue)
        code += "import sys\nassert 'gpushim' not in sys.modules\n"
        finished = _run(_site(name, tmp_path_factory), code, warnings_as_errors, {WITHOUT_GPUSHIM: "1"})
        _baselines[key] = finished
    return _baselines[key]


def _with_gpushim(name, where, prelude=None):
    _, case_prelude, epilogue, _ = CASES[name]
    line = "import gpushim.auto"
    return PROGRAM.format(
        prelude=prelude or case_prelude,
        early=line if where == "early" else "",
        late=line if where == "late" else "",
        epilogue=epilogue + "import json\n" + REPORT,
    )


def _states(name, where):
    states = CASES[name][3]
    return states.get(where, states)


def _assert_same_program(finished, baseline):
    assert finished.returncode == baseline.returncode, finished.stderr[-3000:]
    assert _output(finished)[0] == _output(baseline)[0], finished.stderr[-3000:]
    if "Traceback" not in baseline.stderr:
        assert "Traceback" not in finished.stderr, finished.stderr[-3000:]


@pytest.mark.parametrize("warnings_as_errors", [False, True], ids=["warnings", "-W error"])
@pytest.mark.parametrize("where", ["early", "late"])
@pytest.mark.parametrize("name", list(CASES))
def test_the_program_runs_as_without_gpushim(name, where, warnings_as_errors, tmp_path_factory):
    site = _site(name, tmp_path_factory)
    finished = _run(site, _with_gpushim(name, where), warnings_as_errors)
    _assert_same_program(finished, _baseline(name, warnings_as_errors, tmp_path_factory))
    states = _output(finished)[1]
    expected = _states(name, where)
    assert {id: states[id] for id in expected} == expected, finished.stderr[-3000:]
    if not warnings_as_errors and "failed" in expected.values():
        assert finished.stderr.count("GpushimWarning") == list(expected.values()).count("failed")


@pytest.mark.parametrize("where", ["early", "late"])
@pytest.mark.parametrize("name", list(CASES))
def test_strict_mode_raises_one_patch_error_naming_every_failed_patch(name, where, tmp_path_factory):
    site = _site(name, tmp_path_factory)
    finished = _run(site, _with_gpushim(name, where), env={"GPUSHIM_STRICT": "1"})
    failed = sorted(id for id, state in _states(name, where).items() if state == "failed")
    if not failed:
        _assert_same_program(finished, _baseline(name, False, tmp_path_factory))
        return
    # Raised by the user's import, which the program catches and prints, or by ``import gpushim.auto``.
    errors = [line for line in finished.stdout.splitlines() if line.startswith("import failed: PatchError ")]
    if finished.returncode:
        assert finished.stderr.count("Traceback") == 1, finished.stderr[-3000:]
        errors.append(finished.stderr.strip().splitlines()[-1])
        assert errors[-1].startswith("gpushim.errors.PatchError: "), finished.stderr[-3000:]
    assert len(errors) == 1, (finished.stdout, finished.stderr[-3000:])
    error = errors[0]
    assert sorted(id for id in _states(name, where) if id in error) == failed


@functools.lru_cache(maxsize=None)
def _wrapt_imports_without(module):
    """Whether wrapt can be imported with ``module`` unimportable: some need it (wrapt 2 needs logging, say)."""
    return _run(".", BLOCK.format(names=[module]) + "import wrapt\n").returncode == 0


@pytest.mark.parametrize("where", ["early", "late"])
@pytest.mark.parametrize("module", STDLIB_GPUSHIM_IMPORTS_LATE)
def test_a_module_gpushim_imports_lazily_being_none_in_sys_modules(module, where, tmp_path_factory):
    """Standard modules gpushim imports only when it needs them (to warn, log, match, wait), made unimportable."""
    prelude = BLOCK.format(names=[module]) + SWITCHES
    name = "a patch that does not fit"
    finished = _run(_site(name, tmp_path_factory), _with_gpushim(name, where, prelude))
    _assert_same_program(finished, _baseline(name, False, tmp_path_factory, prelude))
    compute = "applied" if _wrapt_imports_without(module) else "failed"
    assert _output(finished)[1] == {"synth.compute": compute, "synth.refused": "failed"}, finished.stderr[-3000:]


PICKLING = """
import copy, pickle
{early}
import synthadv
{late}
widget = synthadv.Widget()
reads = {{
    "a module's function": lambda: synthadv.compute,
    "a method read through its class": lambda: synthadv.Widget.size,
    "a method read through an instance": lambda: widget.size,
    "a local function": lambda: synthadv.local,
    "a static method read through its class": lambda: synthadv.Widget.make,
    "a callable that refuses pickling and copying": lambda: synthadv.refuses,
    "a callable that claims a function's name": lambda: synthadv.fused,
}}
functions = {{"a module's function", "a local function"}}
ways = {{"pickle": lambda value: pickle.loads(pickle.dumps(value)), "copy": copy.copy, "deepcopy": copy.deepcopy}}
for label, read in reads.items():
    for way, act in ways.items():
        value = read()
        try:
            result = act(value)
        except Exception as error:
            print(label, way, "raises", type(error).__name__)
            continue
        arguments = (widget, 1) if label == "a method read through its class" else (1,)
        # The copy behaves as the attribute does now, patched or not; a function copies to itself.  (A patched
        # callable copies to itself too, where a callable object copies to another.)
        print(label, way, result(*arguments) == read()(*arguments), result is value if label in functions else "")
"""
IN_WIDGET = STANDALONE_PATCH.replace("journal.wrap(module,", "journal.wrap(module.Widget,")
PICKLED_PATCHES = {
    "size": IN_WIDGET,
    "make": IN_WIDGET,
    **{name: STANDALONE_PATCH for name in ("local", "refuses", "fused")},
}


@pytest.mark.parametrize("where", ["early", "late"])
def test_patched_callables_pickle_and_copy_as_their_originals_do(where, tmp_path):
    """Functions, methods through the class and an instance, a static method, and what cannot be pickled or copied."""
    site = _write_site(tmp_path, None)
    for name, source in PICKLED_PATCHES.items():
        (site / "synthcatalogue" / "synth" / f"{name}.py").write_text(
            source.format(id=f"synth.{name}", affected=">=1.0,<2.0", name=name)
        )
    program = PICKLING.format(
        early="import gpushim.auto" if where == "early" else "", late="import gpushim.auto" if where == "late" else ""
    )
    finished = _run(site, program + REPORT.replace("json", "__import__('json')"))
    baseline = _run(site, PICKLING.format(early="", late=""), env={WITHOUT_GPUSHIM: "1"})
    _assert_same_program(finished, baseline)
    assert "raises" in baseline.stdout and "True True" in baseline.stdout  # both kinds are tried
    assert set(_output(finished)[1].values()) == {"applied"}


CONCURRENT = """
import random, sys, threading, time
import gpushim

errors = []
def guarded(action):
    def run():
        try:
            barrier.wait()
            action()
        except BaseException as error:
            errors.append(repr(error))
    return run

def import_target():
    import synthadv

actions = [import_target, gpushim.patch, gpushim.unpatch, gpushim.status, import_target, gpushim.patch]
random.seed({seed})
for round in range({rounds}):
    gpushim.unpatch()
    sys.modules.pop("synthadv", None)
    chosen = random.sample(actions, len(actions))
    barrier = threading.Barrier(len(chosen))
    threads = [threading.Thread(target=guarded(action)) for action in chosen]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    gpushim.patch()
    import synthadv
    compute = synthadv.compute
    states = {{record["id"]: record["state"] for record in gpushim.status()}}
    assert states == {{"synth.compute": "applied", "synth.refused": "applied"}}, (round, chosen, states)
    assert compute(1) == 3 and compute.__wrapped__(1) == 2, (round, chosen)
    assert not hasattr(compute.__wrapped__, "__wrapped__"), (round, chosen)
    gpushim.unpatch()
    assert synthadv.compute is compute.__wrapped__ and synthadv.compute(1) == 2, (round, chosen)
assert not errors, errors
from gpushim.importhook import hooks
assert hooks not in sys.meta_path
print("ok")
"""


def _slow_target(site):
    source = site / TARGET / "__init__.py"
    source.write_text("import time\ntime.sleep(0.002)\n" + source.read_text())


@pytest.mark.parametrize("seed", range(4))
def test_import_patch_unpatch_and_status_from_several_threads(seed, tmp_path):
    """Rounds of six threads started together; after them ``patch()`` and an import leave both patches applied once."""
    site = _write_site(tmp_path, _slow_target)
    finished = _run(site, CONCURRENT.format(seed=seed, rounds=25))
    assert finished.stdout.strip() == "ok", finished.stderr[-3000:]


def test_gpushim_purged_from_sys_modules_and_imported_again_leaves_no_earlier_hook(tmp_path):
    site = _write_site(tmp_path, None)
    code = textwrap.dedent(
        """
        import sys
        import gpushim.auto
        for name in [name for name in sys.modules if name.partition(".")[0] in ("gpushim", "synthcatalogue")]:
            del sys.modules[name]
        import gpushim.auto
        import synthadv
        print(sum(type(finder).__name__ == "ImportHooks" for finder in sys.meta_path))
        """
    )
    finished = _run(site, code, env={"GPUSHIM_STRICT": "1"})
    assert (finished.returncode, finished.stdout, finished.stderr) == (0, "1\n", "")


def test_unpatch_leaves_a_binding_the_program_made_after_patching(target):
    """As without gpushim: the program's own wrapper (or a test's monkeypatch) stays where it put it."""
    registry = registry_for(make_patch(target))
    registry.patch()
    module = target.import_()

    patched = module.compute

    def users_compute(x):
        return patched(x) * 100

    module.compute = users_compute
    registry.unpatch()
    assert module.compute is users_compute
    assert patched.__wrapped__(1) == 2


def test_a_reloaded_module_is_patched_again(target):
    """``importlib.reload`` runs the module's code again over the patched objects: the patch follows."""
    registry = registry_for(make_patch(target))
    registry.patch()
    module = importlib.reload(target.import_())
    assert (module.compute(1), state_of(registry)["state"]) == (3, "applied")
    registry.unpatch()
    assert module.compute(1) == 2
