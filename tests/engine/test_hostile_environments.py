"""A hostile environment, tried in fresh interpreters: gpushim never changes what the user's program does.

Each case sets up one hostile condition (a strange ``sys.modules`` entry,
broken metadata, a missing dependency of gpushim's), then runs the same user
program twice: with gpushim (``import gpushim.auto`` before or after the
target's import) and without it.  Standard output and exit status must be
the same, under ``python -W error`` too; the gpushim run then reports the
states of its patches, which must be the expected ones.  In strict mode
(``GPUSHIM_STRICT=1``) a case where a patch fails must end the program with
one ``PatchError`` naming every failed patch, and otherwise be the same.

The target ``synthadv`` and its synthetic catalogue are tests/engine/adversary.py's;
some cases take ``refused`` away so that ``synth.refused`` fails.  The program
never calls the patched functions through gpushim's wrappers: only the states
say whether a patch applied.  Besides, the standard modules gpushim imports
only when it needs them are made unimportable one by one.
"""

from __future__ import annotations

import functools
import sys

import pytest

from tests.engine.adversary import (
    DIST_INFO,
    DISTRIBUTION,
    REPORT,
    TARGET,
    WITHOUT_GPUSHIM,
    adversary_site,
    assert_same_program,
    program_output,
    run_program,
)

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


_sites: dict = {}
_baselines: dict = {}


def _site(name, tmp_path_factory):
    if name not in _sites:
        _sites[name] = adversary_site(tmp_path_factory.mktemp("adversary"), CASES[name][0])
    return _sites[name]


def _baseline(name, warnings_as_errors, tmp_path_factory, prelude=None):
    """The program without gpushim: its catalogue's sitecustomize does nothing, nothing imports gpushim."""
    key = (name, warnings_as_errors, prelude)
    if key not in _baselines:
        _, case_prelude, epilogue, _ = CASES[name]
        code = PROGRAM.format(prelude=prelude or case_prelude, early="", late="", epilogue=epilogue)
        code += "import sys\nassert 'gpushim' not in sys.modules\n"
        finished = run_program(_site(name, tmp_path_factory), code, warnings_as_errors, {WITHOUT_GPUSHIM: "1"})
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


@pytest.mark.parametrize("warnings_as_errors", [False, True], ids=["warnings", "-W error"])
@pytest.mark.parametrize("where", ["early", "late"])
@pytest.mark.parametrize("name", list(CASES))
def test_the_program_runs_as_without_gpushim(name, where, warnings_as_errors, tmp_path_factory):
    site = _site(name, tmp_path_factory)
    finished = run_program(site, _with_gpushim(name, where), warnings_as_errors)
    assert_same_program(finished, _baseline(name, warnings_as_errors, tmp_path_factory))
    states = program_output(finished)[1]
    expected = _states(name, where)
    assert {id: states[id] for id in expected} == expected, finished.stderr[-3000:]
    if not warnings_as_errors and "failed" in expected.values():
        assert finished.stderr.count("GpushimWarning") == list(expected.values()).count("failed")


@pytest.mark.parametrize("where", ["early", "late"])
@pytest.mark.parametrize("name", list(CASES))
def test_strict_mode_raises_one_patch_error_naming_every_failed_patch(name, where, tmp_path_factory):
    site = _site(name, tmp_path_factory)
    finished = run_program(site, _with_gpushim(name, where), env={"GPUSHIM_STRICT": "1"})
    failed = sorted(id for id, state in _states(name, where).items() if state == "failed")
    if not failed:
        assert_same_program(finished, _baseline(name, False, tmp_path_factory))
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
    return run_program(".", BLOCK.format(names=[module]) + "import wrapt\n").returncode == 0


@pytest.mark.parametrize("where", ["early", "late"])
@pytest.mark.parametrize("module", STDLIB_GPUSHIM_IMPORTS_LATE)
def test_a_module_gpushim_imports_lazily_being_none_in_sys_modules(module, where, tmp_path_factory):
    """Standard modules gpushim imports only when it needs them (to warn, log, match, wait), made unimportable."""
    prelude = BLOCK.format(names=[module]) + SWITCHES
    name = "a patch that does not fit"
    finished = run_program(_site(name, tmp_path_factory), _with_gpushim(name, where, prelude))
    assert_same_program(finished, _baseline(name, False, tmp_path_factory, prelude))
    compute = "applied" if _wrapt_imports_without(module) else "failed"
    assert program_output(finished)[1] == {"synth.compute": compute, "synth.refused": "failed"}, finished.stderr[-3000:]
