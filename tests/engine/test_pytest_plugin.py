"""The pytest plugin: header line, --gpushim, --gpushim-strict and the gpushim_status fixture.

A session runs in a subprocess, where gpushim has a synthetic catalogue
(tests/engine/catalogues.py); its target is an impostor: metadata of
synthimpostor-dist 1.5.0 (affected) over a ``synthimpostor`` module that
declares another version, which gpushim refuses to patch, so that importing
it leaves a failed record.
"""

import os
import subprocess
import sys
import textwrap

import pytest

import gpushim
from gpushim.launcher import BOOTSTRAP
from gpushim.pytest_plugin import header
from tests.engine.catalogues import write_site
from tests.engine.synthetic import make_patch, registry_for
from tests.support import PYTEST

IMPORTS_TARGET = "def test_imports_target():\n    import synthimpostor\n"


@pytest.fixture
def impostor(tmp_path):
    return write_site(tmp_path, "synthimpostor", "synthimpostor-dist", "1.5.0", declared="1.5.9")


@pytest.fixture
def run_pytest(tmp_path, impostor):
    """Run pytest on one test file in a fresh directory, with the impostor on the path."""

    def run(tests, *options, conftest="", env=None):
        suite = tmp_path / "suite"
        suite.mkdir()
        (suite / "test_suite.py").write_text(textwrap.dedent(tests))
        (suite / "conftest.py").write_text(textwrap.dedent(conftest))
        variables = {key: value for key, value in os.environ.items() if not key.startswith(("GPUSHIM_", "PYTEST_"))}
        variables["PYTHONPATH"] = str(impostor)
        return subprocess.run(
            [*PYTEST, *options],
            cwd=suite,
            env={**variables, **(env or {})},
            capture_output=True,
            text=True,
            timeout=120,
        )

    return run


def test_header_names_each_installed_release_with_how_many_patches_are_in_each_state(target):
    registry = registry_for(make_patch(target), make_patch(target, affected=">=3.0", id="synth.later"))
    registry.patch()
    target.import_()
    assert header(registry.status()) == (
        f"gpushim {gpushim.__version__}: synthlib-cuda12 1.5.0 (1 applied, 1 not-affected)"
    )


def test_header_when_no_target_is_installed(target):
    registry = registry_for(make_patch(target, distributions=("not-installed-anywhere",)))
    assert header(registry.status()) == f"gpushim {gpushim.__version__}: no target library installed"


def test_the_header_line_opens_the_session(run_pytest):
    finished = run_pytest("def test_nothing():\n    pass\n")
    line = next(line for line in finished.stdout.splitlines() if line.startswith("gpushim "))
    assert line.startswith(f"gpushim {gpushim.__version__}: ")
    assert "synthimpostor-dist 1.5.0 (1 inactive)" in line


def test_the_fixture_gives_the_status_records_by_id(run_pytest):
    finished = run_pytest(
        """
        import gpushim

        def test_records(gpushim_status):
            assert list(gpushim_status) == [record["id"] for record in gpushim.status()]
            assert gpushim_status["synth.compute"]["installed_version"] == "1.5.0"
        """
    )
    assert finished.returncode == 0, finished.stdout


def test_gpushim_applies_the_patches_before_conftest_files_are_imported(run_pytest):
    conftest = """
        import sys
        from gpushim.importhook import hooks

        assert hooks in sys.meta_path, "gpushim is not active yet"
    """
    finished = run_pytest("def test_nothing():\n    pass\n", "--gpushim", conftest=conftest)
    assert finished.returncode == 0, finished.stdout


def test_without_strict_a_failed_patch_only_warns(run_pytest):
    finished = run_pytest(IMPORTS_TARGET, "--gpushim")
    assert finished.returncode == 0, finished.stdout
    assert "GpushimWarning: gpushim could not apply synth.compute" in finished.stdout


def test_strict_makes_a_failed_patch_an_error(run_pytest):
    finished = run_pytest(IMPORTS_TARGET, "--gpushim", "--gpushim-strict")
    assert finished.returncode == pytest.ExitCode.TESTS_FAILED
    assert "FAILED test_suite.py::test_imports_target - gpushim.errors.PatchError" in finished.stdout


def test_strict_fails_the_session_when_the_tests_let_a_failed_patch_pass(run_pytest):
    swallows = (
        "def test_imports_target():\n    try:\n        import synthimpostor\n    except Exception:\n        pass\n"
    )
    finished = run_pytest(swallows, "--gpushim", "--gpushim-strict")
    assert finished.returncode == pytest.ExitCode.TESTS_FAILED
    assert "1 passed" in finished.stdout
    assert "gpushim --gpushim-strict: synth.compute failed: TargetMismatch: " in finished.stdout


def test_strict_holds_for_the_session_s_subprocesses(run_pytest):
    reads_the_switch = "import os\n\ndef test_env():\n    assert os.environ['GPUSHIM_STRICT'] == '1'\n"
    finished = run_pytest(reads_the_switch, "--gpushim-strict")
    assert finished.returncode == 0, finished.stdout


def test_strict_applies_to_gpushim_made_active_by_the_bootstrap(run_pytest, impostor):
    """As under ``gpushim-run pytest --gpushim-strict``: gpushim is active before pytest reads the option."""
    bootstrap = {"PYTHONPATH": os.pathsep.join([BOOTSTRAP, str(impostor)]), "GPUSHIM_AUTO": "1"}
    finished = run_pytest(IMPORTS_TARGET, "--gpushim-strict", env=bootstrap)
    assert finished.returncode == pytest.ExitCode.TESTS_FAILED
    assert "gpushim.errors.PatchError" in finished.stdout


def test_importing_the_plugin_loads_no_patch_and_no_target():
    code = (
        "import sys, gpushim.pytest_plugin\n"
        "print(sorted({'gpushim.patches', 'gpushim.engine', 'wrapt', 'cupy', 'warp', 'nvidia'} & set(sys.modules)))"
    )
    finished = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert finished.stdout.strip() == "[]", finished.stderr
