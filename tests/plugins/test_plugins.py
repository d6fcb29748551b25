"""Patches from other distributions behave as gpushim's own: lazy, gated, fail-open, switchable, listed.

The example distribution adds ``exampletarget.compute_off_by_one`` for a
synthetic library and ``warp.example_synchronize`` for Warp; the broken one
adds everything that cannot be used.  Each check runs a fresh interpreter
with the distributions and the target on ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.plugins.conftest import HERE
from tests.support import PYTEST, run_python

ID = "exampletarget.compute_off_by_one"
LABEL = f"{ID} [gpushim-example-patches]"


def python(code: str, *folders, env: dict | None = None) -> str:
    """What ``code`` prints, run with ``folders`` on ``PYTHONPATH``; it must succeed."""
    finished = run_python(code, env={"PYTHONPATH": os.pathsep.join(map(str, folders)), **(env or {})})
    assert finished.returncode == 0, finished.stderr
    return finished.stdout


def gpushim_command(*arguments: str, folders, check: bool = True) -> subprocess.CompletedProcess:
    clean = {key: value for key, value in os.environ.items() if not key.startswith("GPUSHIM_")}
    finished = subprocess.run(
        [sys.executable, "-m", "gpushim", *arguments],
        env={**clean, "PYTHONPATH": os.pathsep.join(map(str, folders))},
        capture_output=True,
        text=True,
    )
    assert not check or finished.returncode == 0, finished.stderr
    return finished


APPLIED_CHECK = f"""
import gpushim_example_target as target
import gpushim
record = gpushim.record({ID!r})
print(target.compute(1), record["state"], record["origin"], hasattr(target.compute, "__wrapped__"))
"""


def test_import_gpushim_auto_imports_nothing_of_another_distribution(sites, affected):
    code = (
        "import sys, gpushim.auto; print(sorted(m for m in sys.modules if m.endswith('_patches') or '_patches.' in m))"
    )
    assert python(code, sites["example"], sites["broken"], affected) == "[]\n"


@pytest.mark.parametrize(
    "before, after", [("import gpushim.auto", ""), ("", "import gpushim.auto")], ids=["gpushim first", "target first"]
)
def test_a_patch_of_another_distribution_applies_to_an_affected_release(sites, affected, before, after):
    code = f"{before}\nimport gpushim_example_target\n{after}\n{APPLIED_CHECK}"
    assert python(code, sites["example"], affected) == "3 applied gpushim-example-patches True\n"


def test_outside_the_affected_range_it_changes_nothing(sites, fixed):
    code = f"import gpushim.auto\n{APPLIED_CHECK}"
    assert python(code, sites["example"], fixed) == "3 not-affected gpushim-example-patches False\n"


def test_gpushim_disable_turns_it_off(sites, affected):
    code = f"import gpushim.auto\n{APPLIED_CHECK}"
    output = python(code, sites["example"], affected, env={"GPUSHIM_DISABLE": "exampletarget"})
    assert output == "2 disabled gpushim-example-patches False\n"


def test_a_patch_for_a_library_gpushim_knows_takes_gpushims_target_and_distributions(sites):
    code = "import gpushim; library = gpushim.registry().library('warp.example_synchronize')\n"
    code += "print(library.target, library.distributions)"
    assert python(code, sites["example"]) == "warp ('warp-lang',)\n"


@pytest.fixture(scope="module")
def broken_status(sites, tmp_path_factory):
    """The status, once the target is imported, with both distributions installed; the target's own result."""
    from tests.plugins.conftest import install_target

    target = install_target(tmp_path_factory.mktemp("target"), "1.0")
    code = """
import json, warnings
warnings.simplefilter("ignore")
import gpushim.auto
import gpushim_example_target
import gpushim
print(json.dumps([gpushim_example_target.compute(1), [record.as_dict() for record in gpushim.status()]]))
"""
    return json.loads(python(code, sites["example"], sites["broken"], target))


def test_a_broken_distribution_leaves_the_import_and_every_other_patch_working(broken_status):
    result, records = broken_status
    by_id = {record["id"]: record for record in records}
    assert result == 3 and by_id[ID]["state"] == "applied"
    assert by_id["warp.sgd_argument_order"]["origin"] == "gpushim"
    assert by_id["warp.sgd_argument_order"]["state"] == "not-installed"


@pytest.mark.parametrize(
    "id, reason",
    [
        ("gpushim-broken-patches:missing", "ModuleNotFoundError: No module named 'gpushim_broken_nowhere'"),
        ("gpushim-broken-patches:object", "the entry point must name a package"),
        ("gpushim-broken-patches:nolib", "TARGET is not a string literal: ("),
        ("gpushim-broken-patches:warp.sgd_argument_order", "gpushim already has a patch warp.sgd_argument_order"),
        ("exampletarget.missing_module", "ModuleNotFoundError: No module named 'gpushim_broken_dependency'"),
        ("exampletarget.syntax_error", "SyntaxError"),
        ("exampletarget.wrong_id", "declares the id 'exampletarget.another_id'"),
        ("exampletarget.raises_when_applied", "RuntimeError: this patch cannot be applied"),
        ("exampletarget.exits_at_import", "SystemExit: this patch module exits"),
        ("exampletarget.halts_when_applied", "Halt: this patch halts"),
        ("exampletarget.exits_when_prepared", "SystemExit: this patch exits before its module executes"),
    ],
)
def test_each_unusable_thing_is_a_failed_record_with_its_reason(broken_status, id, reason):
    _, records = broken_status
    (record,) = [record for record in records if record["id"] == id]
    assert record["state"] == "failed" and reason in record["reason"]
    assert record["origin"] == "gpushim-broken-patches"


def test_import_gpushim_auto_warns_once_of_each_unusable_thing(sites):
    finished = run_python("import gpushim.auto, gpushim; gpushim.patch()", env={"PYTHONPATH": str(sites["broken"])})
    assert finished.returncode == 0
    warned = [line for line in finished.stderr.splitlines() if "GpushimWarning: gpushim cannot use" in line]
    assert len(warned) == 4 and "gpushim-broken-patches:missing (" in finished.stderr


def test_gpushim_strict_makes_an_unusable_thing_an_error(sites):
    finished = run_python("import gpushim.auto", env={"PYTHONPATH": str(sites["broken"]), "GPUSHIM_STRICT": "1"})
    assert finished.returncode == 1
    assert "PatchError: gpushim cannot use gpushim-broken-patches:warp.sgd_argument_order" in finished.stderr


def test_status_names_the_distribution(sites, affected):
    table = gpushim_command("status", folders=[sites["example"], affected]).stdout
    assert f"{LABEL}  inactive" in table


def test_patches_names_the_distribution(sites):
    declarations = json.loads(gpushim_command("patches", "--json", folders=[sites["example"]]).stdout)
    assert {"id": ID, "origin": "gpushim-example-patches"}.items() <= declarations[-2].items()


def test_selftest_finds_the_patch_effective_and_the_unusable_ones_errors(sites, affected):
    finished = gpushim_command("selftest", "--json", folders=[sites["example"], sites["broken"], affected], check=False)
    verdicts = {result["id"]: result["verdict"] for result in json.loads(finished.stdout)}
    assert verdicts[ID] == "effective"
    assert verdicts["gpushim-broken-patches:missing"] == "probe-error"
    assert finished.returncode == 1


def test_freeze_pins_the_distribution_as_it_was_installed_and_names_it_with_its_patches(sites, affected):
    """pip installed it from its wheel, a file that no index has: the file is what installs it again."""
    lines = gpushim_command("freeze", folders=[sites["example"], affected]).stdout.splitlines()
    (pinned,) = [line for line in lines if line.startswith("gpushim-example-patches")]
    assert pinned.startswith("gpushim-example-patches @ file:///") and pinned.endswith("-0.1.0-py3-none-any.whl")
    assert lines[lines.index(pinned) + 1] == "#   adds gpushim patches"
    assert f"#   {LABEL}: inactive" in lines


@pytest.fixture
def own_suite(tmp_path):
    """The example distribution's own tests, copied out of gpushim's tree as they would be in its repository."""
    suite = tmp_path / "suite"
    shutil.copytree(HERE / "example" / "tests", suite)
    return suite


def contract(suite, *folders, options=()) -> subprocess.CompletedProcess:
    clean = {key: value for key, value in os.environ.items() if not key.startswith("GPUSHIM_")}
    return subprocess.run(
        [*PYTEST, "-rs", *options, str(suite)],
        cwd=suite,
        env={**clean, "PYTHONPATH": os.pathsep.join(map(str, folders))},
        capture_output=True,
        text=True,
    )


def test_the_contract_runs_in_the_distributions_own_suite_on_an_affected_release(sites, affected, own_suite):
    finished = contract(own_suite, sites["example"], affected)
    assert finished.returncode == 0, finished.stdout
    assert "8 passed, 2 skipped" in finished.stdout  # harmless: where it does not apply; opt-in: for opt-in patches
    assert f"gpushim-example-target 1.0 (inactive: {LABEL})" in finished.stdout  # the pytest header


def test_the_contract_runs_in_the_distributions_own_suite_on_a_fixed_release(sites, fixed, own_suite):
    finished = contract(own_suite, sites["example"], fixed)
    assert finished.returncode == 0, finished.stdout
    assert "6 passed, 4 skipped" in finished.stdout  # disabled, unpatch, pickling: for affected ones; opt-in


AFTER_THE_CONTRACT = f"""
import sys

import gpushim
import gpushim_example_target

FOUND = dict(sys.modules)  # collected before any test runs


def test_after_the_contract():
    state, result = gpushim.record({ID!r})["state"], gpushim_example_target.compute(1)
    replaced = [name for name, module in FOUND.items() if sys.modules.get(name) is not module]
    print("after the contract:", state, result, replaced)
"""


@pytest.mark.parametrize(
    "options, found", [(["--gpushim"], "applied 3 []"), ([], "inactive 2 []")], ids=["active", "inactive"]
)
def test_the_contract_leaves_the_session_as_it_found_it(sites, affected, own_suite, options, found):
    """A test that runs after the contract's has the fix exactly where the session had it, and the same modules."""
    (own_suite / "test_patched_after_the_contract.py").write_text(AFTER_THE_CONTRACT)
    finished = contract(own_suite, sites["example"], affected, options=[*options, "-s"])
    assert finished.returncode == 0, finished.stdout
    assert f"after the contract: {found}\n" in finished.stdout, finished.stdout


def test_the_contract_fails_a_patch_that_breaks_it(sites, affected, own_suite):
    (own_suite / "test_gpushim_contract.py").write_text(
        "from gpushim.testing import Contract\n\n"
        "class TestGpushimContract(Contract):\n"
        "    ids = ('exampletarget.raises_when_applied',)\n"
    )
    finished = contract(own_suite, sites["broken"], affected)
    assert finished.returncode == 1
    assert "test_the_state_is_the_one_derived_from_the_declaration_and_the_install" in finished.stdout


PREPARED = """
from types import ModuleType

from gpushim import Patch

patch = Patch(
    id="exampletarget.prepared_step",
    affected=">=1.0,<2.0",
    fixed_in="2.0",
    issue="example/target#3",
    fix="example/target#4",
    summary="scaled(x) scales by 1 instead of 2.",
    before="gpushim_example_target",
)


@patch.preparer
def _prepare(module, journal):
    step = ModuleType("gpushim_example_step")
    step.STEP = 2
    journal.provide("gpushim_example_step", step)


@patch.prober
def _probe():
    import gpushim_example_target

    result = gpushim_example_target.scaled(2)
    return None if result == 4 else f"scaled(2) returned {result}, not 4"
"""

SCALES_BY_WHAT_IS_PROVIDED = """
try:
    from gpushim_example_step import STEP
except ImportError:
    STEP = 1


def scaled(x):
    return x * STEP
"""


def test_the_contract_passes_a_patch_that_acts_before_its_target_executes(tmp_path, sites, affected, own_suite):
    """Its bug is no failed import; with the target imported first only gpushim active before could prepare it."""
    site = shutil.copytree(sites["example"], tmp_path / "example")
    (site / "example_patches" / "patches" / "exampletarget" / "prepared_step.py").write_text(PREPARED)
    with open(affected / "gpushim_example_target" / "__init__.py", "a") as source:
        source.write(SCALES_BY_WHAT_IS_PROVIDED)
    (own_suite / "test_gpushim_contract.py").write_text(
        "from gpushim.testing import Contract\n\n"
        "class TestGpushimContract(Contract):\n"
        "    ids = ('exampletarget.prepared_step',)\n"
    )
    finished = contract(own_suite, site, affected)
    assert finished.returncode == 0, finished.stdout
    assert "gpushim_example_target executed before import gpushim.auto" in finished.stdout
    reason = python(
        "import gpushim.auto, gpushim_example_target, gpushim\n"
        "print(gpushim.record('exampletarget.prepared_step')['reason'])",
        site,
        affected,
    )
    assert reason == "gpushim_example_target executed with gpushim_example_step provided, withdrawn since\n"


def test_the_contract_skips_the_checks_of_a_probe_that_cannot_run_here_with_its_reason(sites, affected, own_suite):
    """As cupy.expm_pade_term's probe on a GPU host without cuBLAS: no verdict, and no failure of the patch."""
    with open(affected / "gpushim_example_target" / "__init__.py", "a") as source:
        source.write(
            "def compute(x):\n"
            "    from gpushim import ProbeCannotRun\n"
            "    raise ProbeCannotRun('it needs libexample.so.1, which is not installed')\n"
        )
    finished = contract(own_suite, sites["example"], affected)
    assert finished.returncode == 0, finished.stdout
    assert "3 passed, 7 skipped" in finished.stdout  # the 5 checks that ask the probe, harmless, opt-in
    reason = f"the probe of {ID} cannot run here: it needs libexample.so.1, which is not installed"
    assert re.search(rf"SKIPPED \[5\] .*: {re.escape(reason)}$", finished.stdout, re.MULTILINE), finished.stdout


def found_without_gpushim(sites, affected) -> str:
    """What the contract's runner says the example patch's probe found, asked without gpushim."""
    return python(
        f"from gpushim.testing import WITHOUT, probes; print(probes(({ID!r},), WITHOUT)[{ID!r}][0])",
        sites["example"],
        affected,
    )


def test_a_target_whose_import_raises_shows_the_bug_described_by_the_exception(sites, affected):
    with open(affected / "gpushim_example_target" / "__init__.py", "a") as source:
        source.write("import gpushim_example_nowhere\n")
    printed = found_without_gpushim(sites, affected)
    assert printed == (
        "import gpushim_example_target raises ModuleNotFoundError: No module named 'gpushim_example_nowhere'\n"
    )


def test_a_probe_that_raises_shows_the_bug_described_by_the_exception(sites, affected):
    """As Warp 1.2.0 under NumPy 2, which cannot make the arrays the probes of its other patches make."""
    with open(affected / "gpushim_example_target" / "__init__.py", "a") as source:
        source.write("def compute(x):\n    raise RuntimeError('cannot compute')\n")
    printed = found_without_gpushim(sites, affected)
    assert printed == "the probe raises RuntimeError: cannot compute\n"


@pytest.mark.parametrize(
    ("mode", "before_the_target"),
    [("WITHOUT_GPUSHIM", False), ("TARGET_FIRST", False), ("GPUSHIM_FIRST", True)],
)
def test_the_runner_imports_gpushim_before_the_target_only_where_gpushim_comes_first(
    sites, affected, tmp_path, mode, before_the_target
):
    """Without gpushim means none of it imported when the target is, not one patch switched off."""
    seen = tmp_path / "seen"
    with open(affected / "gpushim_example_target" / "__init__.py", "a") as source:
        source.write(
            "import os, sys\n"
            "with open(os.environ['EXAMPLE_SEEN'], 'w') as seen:\n"
            "    seen.write(' '.join(name for name in sys.modules if name.split('.')[0] == 'gpushim'))\n"
        )
    python(
        f"from gpushim import probing; probing.ask(probing.{mode}, [{ID!r}])",
        sites["example"],
        affected,
        env={"EXAMPLE_SEEN": str(seen)},
    )
    assert bool(seen.read_text()) == before_the_target, seen.read_text()


def test_with_gpushim_imported_after_a_failed_import_the_contract_imports_the_target_again(sites, affected):
    """As its user would: what fails without gpushim may import once gpushim is there."""
    with open(affected / "gpushim_example_target" / "__init__.py", "a") as source:
        source.write(
            "import builtins\n"
            "if not hasattr(builtins, 'gpushim_example_tried'):\n"
            "    builtins.gpushim_example_tried = True\n"
            "    raise ImportError('the first import fails')\n"
        )
    code = "\n".join(
        [
            "from gpushim.testing import TARGET_FIRST, WITHOUT, probes",
            f"print(probes(({ID!r},), WITHOUT)[{ID!r}])",
            f"print(probes(({ID!r},), TARGET_FIRST)[{ID!r}])",
        ]
    )
    without, target_first = python(code, sites["example"], affected).splitlines()
    assert without.startswith("('import gpushim_example_target raises ImportError: the first import fails'")
    assert target_first == "(None, 'applied')"
