"""``gpushim selftest`` on synthetic libraries: answers, interpreters, progress and summary.

Every interpreter of the run, the command's and its children, loads the
registry of ``synthpatches`` (a user ``sitecustomize`` on PYTHONPATH puts
it in gpushim's place), so the probes are known: ``synthone`` has two bugs
whose probes say whether the other patch is on, and a third that is not
there; ``synthtwo`` prints a banner on import as Warp does without a CUDA
driver, and one of its probes kills the interpreter while its bug is there;
``synththree`` imports a module that is not installed, which a patch provides
before it executes; ``synthfour`` links a shared library this machine lacks, as CuPy 12
links the CUDA driver's.  Each probe appends its interpreter's process id to a log.
"""

from __future__ import annotations

import json
import re
import signal
import textwrap
from collections import defaultdict

import pytest

from tests.cli.scripts import command, environment, write_distribution

SYNTHONE = """
__version__ = "1.5.0"

def compute(x):
    return x

def size():
    return 0
"""

SYNTHTWO = """
print("Visit https://example.invalid/README.md#installing for guidance.")
__version__ = "2.0.0"

def healthy():
    return False
"""

SYNTHTHREE = """
from synthmissing import VALUE

__version__ = "1.0.0"
"""

SYNTHFOUR = """
try:
    raise ImportError("libsynthdriver.so.1: cannot open shared object file: No such file or directory")
except ImportError as error:
    raise ImportError(f"Failed to import synthfour.\\n\\nOriginal error:\\n  ImportError: {error}") from error
"""

SYNTHPATCHES = """
import os
import sys

from gpushim import Patch

BANNER = "Visit https://example.invalid/README.md#installing for guidance."


def declare(id, target, apply, probe):
    patch = Patch(id=id, affected="<3", fixed_in="3.0", issue="synth/synth#1", fix="synth/synth#2", summary=id)
    patch.applier(apply)
    patch.prober(probe)
    return target, patch


def note(id):
    with open(os.environ["SYNTH_LOG"], "a") as log:
        log.write(f"{os.getpid()} {id}\\n")


def wrapped(function):
    return hasattr(function, "__wrapped__")


def add_one(wrapped, instance, args, kwargs):
    return wrapped(*args, **kwargs) + 1


def compute_probe():
    note("one.compute")
    import synthone

    print(BANNER)
    if synthone.compute(1) != 2:
        return f"compute(1) is {synthone.compute(1)}; size patched: {wrapped(synthone.size)}"


def size_probe():
    note("one.size")
    import synthone

    if synthone.size() != 1:
        return f"size() is {synthone.size()}; compute patched: {wrapped(synthone.compute)}"


def fine_probe():
    note("one.fine")
    import synthone

    print("the last line a library printed")


def noisy_probe():
    note("two.noisy")
    import synthtwo

    print(BANNER)


def crash_probe():
    note("two.crash")
    import synthtwo

    if not synthtwo.healthy():
        os.kill(os.getpid(), 9)


PATCHES = [
    declare("one.compute", "synthone", lambda module, journal: journal.wrap(module, "compute", add_one), compute_probe),
    declare("one.size", "synthone", lambda module, journal: journal.wrap(module, "size", add_one), size_probe),
    declare("one.fine", "synthone", lambda module, journal: None, fine_probe),
    declare("two.noisy", "synthtwo", lambda module, journal: None, noisy_probe),
    declare("two.crash", "synthtwo", lambda m, journal: journal.replace(m, "healthy", lambda: True), crash_probe),
]


def broken_probe():
    raise LookupError("the probe is wrong")


def unrunnable_probe():
    from gpushim import ProbeCannotRun

    raise ProbeCannotRun("it needs libsynth.so.1, which is not installed")


def provide_missing(module, journal):
    import types

    missing = types.ModuleType("synthmissing")
    missing.VALUE = 1
    journal.provide("synthmissing", missing)


def three_probe():
    import synththree

    if synththree.VALUE != 1:
        return f"VALUE is {synththree.VALUE}"


def before(id, target, prepare, probe):
    patch = Patch(
        id=id, affected="<3", fixed_in="3.0", issue="synth/synth#1", fix="synth/synth#2", summary=id, before=target
    )
    patch.preparer(prepare)
    patch.prober(probe)
    return target, patch


if os.environ.get("SYNTH_BEFORE"):
    PATCHES = [
        before("three.missing", "synththree", provide_missing, three_probe),
        declare("three.other", "synththree", lambda module, journal: None, three_probe),
    ]
if os.environ.get("SYNTH_BROKEN"):
    PATCHES = [declare("one.broken", "synthone", lambda module, journal: None, broken_probe)]
def four_probe():
    import synthfour  # noqa: F401


if os.environ.get("SYNTH_UNLOADABLE"):
    PATCHES = [declare("four.linked", "synthfour", lambda module, journal: None, four_probe)]
if os.environ.get("SYNTH_UNRUNNABLE"):
    PATCHES = [declare("one.unrunnable", "synthone", lambda module, journal: None, unrunnable_probe)]
if os.environ.get("SYNTH_NOT_BACKPORTED"):
    unreached = Patch(
        id="one.unreached",
        affected=">=2,<3",
        fixed_in="3.0",
        issue="synth/synth#1",
        fix="synth/synth#2",
        summary="one.unreached",
        not_backported={"<2": "synthone 1.x computes elsewhere"},
    )
    unreached.applier(lambda module, journal: None)
    unreached.prober(broken_probe)
    PATCHES = [("synthone", unreached)]
if os.environ.get("SYNTH_OPT_IN"):
    PATCHES = [declare("one.opt", "synthone", lambda m, journal: journal.wrap(m, "compute", add_one), compute_probe)]
    PATCHES[0][1].opt_in = True
"""

SITECUSTOMIZE = """
import os

import gpushim
from gpushim.catalogue import Library
from gpushim.engine import Registry

import synthpatches

targets = {target: {} for target, _ in synthpatches.PATCHES}
for target, patch in synthpatches.PATCHES:
    targets[target][patch.id] = patch
gpushim._registry = Registry(
    Library(target, target, (target,), list(patches), patches.__getitem__) for target, patches in targets.items()
)
if os.environ.get("SYNTH_NO_TEMPORARY_DIRECTORY"):  # as on a read-only file system
    import tempfile

    tempfile.tempdir = os.devnull
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    site = tmp_path_factory.mktemp("site")
    for name, source in {"synthpatches.py": SYNTHPATCHES, "sitecustomize.py": SITECUSTOMIZE}.items():
        (site / name).write_text(textwrap.dedent(source))
    for name, source, version in (
        ("synthone", SYNTHONE, "1.5.0"),
        ("synthtwo", SYNTHTWO, "2.0.0"),
        ("synththree", SYNTHTHREE, "1.0.0"),
        ("synthfour", SYNTHFOUR, "1.0.0"),
    ):
        (site / name).mkdir()
        (site / name / "__init__.py").write_text(textwrap.dedent(source))
        write_distribution(site, name, version)
    return site


@pytest.fixture(scope="module")
def run(site):
    """``gpushim selftest --json`` and ``gpushim selftest`` over the synthetic libraries, and their probes' log."""
    log = site / "probes.log"
    env = environment(PYTHONPATH=str(site), SYNTH_LOG=str(log))
    as_json = command("gpushim", "selftest", "--json", env=env)
    probes = log.read_text().splitlines()
    as_table = command("gpushim", "selftest", env=env)
    return as_json, probes, as_table


@pytest.fixture(scope="module")
def results(run):
    as_json = run[0]
    assert as_json.returncode == 0, as_json.stderr
    return {result["id"]: result for result in json.loads(as_json.stdout)}


def test_verdicts(results):
    assert {id: result["verdict"] for id, result in results.items()} == {
        "one.compute": "effective",
        "one.size": "effective",
        "one.fine": "not-needed",
        "two.noisy": "not-needed",
        "two.crash": "effective",
    }


def test_a_probe_answers_through_its_own_channel_not_standard_output(results):
    assert results["one.compute"]["without"].startswith("compute(1) is 1;")
    assert (results["one.fine"]["without"], results["two.noisy"]["without"]) == ("no bug", "no bug")


def test_without_turns_off_only_the_probed_patch(results):
    """In the interpreter the library's probes share, the other patches stay on."""
    assert results["one.compute"]["without"] == "compute(1) is 1; size patched: True"
    assert results["one.size"]["without"] == "size() is 0; compute patched: True"


def test_with_is_shown_where_the_bug_showed_without(results):
    assert [results[id]["with"] for id in ("one.compute", "one.size", "two.crash")] == ["no bug"] * 3
    assert results["one.fine"]["with"] == ""


def test_a_probe_that_kills_the_interpreter_shows_the_bug(results):
    assert results["two.crash"]["without"] == f"the interpreter died of signal {int(signal.SIGKILL)}"


def test_one_interpreter_per_library_and_state_and_after_a_crash_one_for_the_probe_that_crashed_it(run):
    """synthone: without, with. synthtwo: without (killed at two.crash, two.noisy answered), two.crash alone, with;
    the two libraries at once."""
    interpreters = defaultdict(list)
    for line in run[1]:
        pid, id = line.split()
        interpreters[pid].append(id)
    by_library = defaultdict(list)
    for ids in interpreters.values():
        by_library[ids[0].split(".")[0]].append(ids)
    assert by_library == {
        "one": [["one.compute", "one.size", "one.fine"], ["one.compute", "one.size"]],
        "two": [["two.noisy", "two.crash"], ["two.crash"], ["two.crash"]],
    }


def test_progress_goes_to_standard_error(run):
    lines = [re.sub(r" \(\d+\.\d s\)$", " (T s)", line) for line in run[0].stderr.splitlines()]
    assert lines == [
        "gpushim selftest: synthone 1.5.0: 3 probes, each without its patch ...",
        "gpushim selftest: synthone 1.5.0: 2 of 3 showed the bug without (T s)",
        "gpushim selftest: synthone 1.5.0: 2 probes with the patches ...",
        "gpushim selftest: synthone 1.5.0: 0 of 2 showed the bug with (T s)",
        "gpushim selftest: synthtwo 2.0.0: 2 probes, each without its patch ...",
        f"gpushim selftest: the interpreter died of signal {int(signal.SIGKILL)} at two.crash; "
        "asking it in an interpreter of its own, and the probes after it again",
        "gpushim selftest: synthtwo 2.0.0: 1 of 2 showed the bug without (T s)",
        "gpushim selftest: synthtwo 2.0.0: 1 probe with the patches ...",
        "gpushim selftest: synthtwo 2.0.0: 0 of 1 showed the bug with (T s)",
    ]


def test_the_table_has_both_columns_and_ends_with_the_count(run):
    as_table = run[2]
    assert as_table.returncode == 0, as_table.stderr
    lines = as_table.stdout.splitlines()
    assert lines[0].split() == ["id", "distribution", "installed_version", "verdict", "without", "with"]
    assert lines[-1] == "3 effective, 2 not-needed, 0 needed"


def test_a_probe_that_raises_is_an_error_not_a_verdict_on_the_bug(site):
    finished = command("gpushim", "selftest", env=environment(PYTHONPATH=str(site), SYNTH_BROKEN="1"))
    assert finished.returncode == 1
    lines = finished.stdout.splitlines()
    row = [cell.strip() for cell in lines[1].split("  ") if cell.strip()]
    assert row == ["one.broken", "synthone", "1.5.0", "probe-error", "LookupError: the probe is wrong", "-"]
    assert lines[-1] == "0 effective, 0 not-needed, 0 needed, 1 probe-error"


def test_a_probe_that_cannot_run_here_says_why_and_is_no_error_of_the_patch(site):
    finished = command("gpushim", "selftest", env=environment(PYTHONPATH=str(site), SYNTH_UNRUNNABLE="1"))
    assert finished.returncode == 0, finished.stderr
    lines = finished.stdout.splitlines()
    row = [cell.strip() for cell in lines[1].split("  ") if cell.strip()]
    assert row == [
        "one.unrunnable",
        "synthone",
        "1.5.0",
        "cannot-run",
        "it needs libsynth.so.1, which is not installed",
        "-",
    ]
    assert lines[-1] == "0 effective, 0 not-needed, 0 needed, 1 cannot-run"


def test_a_patch_not_backported_to_the_release_cannot_run_its_probe_for_the_reason_status_gives(site):
    finished = command("gpushim", "selftest", env=environment(PYTHONPATH=str(site), SYNTH_NOT_BACKPORTED="1"))
    assert finished.returncode == 0, finished.stderr
    lines = finished.stdout.splitlines()
    row = [cell.strip() for cell in lines[1].split("  ") if cell.strip()]
    reason = "synthone 1.5.0 has the bug; not backported to <2: synthone 1.x computes elsewhere"
    assert row == ["one.unreached", "synthone", "1.5.0", "cannot-run", reason, "-"]
    assert lines[-1] == "0 effective, 0 not-needed, 0 needed, 1 cannot-run"
    status = command("gpushim", "status", "--json", env=environment(PYTHONPATH=str(site), SYNTH_NOT_BACKPORTED="1"))
    (record,) = json.loads(status.stdout)
    assert (record["state"], record["reason"]) == ("not-backported", reason)


def test_without_a_temporary_directory_it_says_so_in_one_line_and_exits_with_status_3(site):
    finished = command("gpushim", "selftest", env=environment(PYTHONPATH=str(site), SYNTH_NO_TEMPORARY_DIRECTORY="1"))
    assert (finished.returncode, finished.stdout) == (3, ""), finished.stderr
    said = [line for line in finished.stderr.splitlines() if not line.startswith("gpushim selftest: synth")]
    assert len(said) == 1 and said[0].startswith("gpushim selftest: cannot run: no temporary file"), said


def test_a_target_the_loader_cannot_link_here_cannot_run_its_probes(site):
    """The loader's own words, carried in the library's ImportError, say what this machine lacks."""
    finished = command("gpushim", "selftest", "--json", env=environment(PYTHONPATH=str(site), SYNTH_UNLOADABLE="1"))
    assert finished.returncode == 0, finished.stderr
    (result,) = json.loads(finished.stdout)
    assert (result["verdict"], result["without"]) == (
        "cannot-run",
        "the loader finds no libsynthdriver.so.1 here, which synthfour needs",
    )


def test_the_probes_interpreters_run_no_code_from_the_working_directory(site, tmp_path, results):
    """Only the probes run: a ``json.py`` in the working directory is not the standard library's."""
    (tmp_path / "json.py").write_text(f"open({str(tmp_path / 'ran')!r}, 'w').close()\nfrom _json import *\n")
    env = environment(PYTHONPATH=str(site), SYNTH_LOG=str(tmp_path / "probes.log"))
    finished = command("gpushim", "selftest", "--json", env=env, cwd=tmp_path)
    assert not (tmp_path / "ran").exists()
    assert {result["id"]: result["verdict"] for result in json.loads(finished.stdout)} == {
        id: result["verdict"] for id, result in results.items()
    }


def test_a_patch_acting_before_its_module_executes_is_asked_again_off_from_the_start(site):
    """The library's shared interpreter imported it with that patch on: alone, with it disabled, the import fails."""
    finished = command("gpushim", "selftest", "--json", env=environment(PYTHONPATH=str(site), SYNTH_BEFORE="1"))
    assert finished.returncode == 0, finished.stderr
    assert {
        result["id"]: (result["verdict"], result["without"], result["with"]) for result in json.loads(finished.stdout)
    } == {
        "three.missing": (
            "effective",
            "import synththree raises ModuleNotFoundError: No module named 'synthmissing'",
            "no bug",
        ),
        "three.other": ("not-needed", "no bug", ""),
    }


@pytest.mark.parametrize(("enable", "verdict"), [("", "skipped: opt-in"), ("one.opt", "effective")])
def test_an_opt_in_patch_is_skipped_unless_enabled_and_then_probed_with_it_on(site, tmp_path, enable, verdict):
    env = environment(PYTHONPATH=str(site), SYNTH_OPT_IN="1", SYNTH_LOG=str(tmp_path / "log"), GPUSHIM_ENABLE=enable)
    finished = command("gpushim", "selftest", "--json", env=env)
    assert finished.returncode == 0, finished.stderr
    (result,) = json.loads(finished.stdout)
    assert result["verdict"] == verdict
