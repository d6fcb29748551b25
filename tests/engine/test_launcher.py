"""gpushim-run and the bootstrap: gpushim in every Python process a command starts."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from gpushim.launcher import BOOTSTRAP

ACTIVE = "import sys; print('gpushim.auto' in sys.modules)"
STATES = "import gpushim, json; print(json.dumps(sorted({r['state'] for r in gpushim.status()})))"
LAUNCHERS = {
    "gpushim-run": [str(Path(sys.executable).parent / "gpushim-run")],
    "python -m gpushim run": [sys.executable, "-m", "gpushim", "run"],
}
# Counts its runs where every interpreter shares them, and says it ran in its own module.
USER_SITECUSTOMIZE = "import builtins\nbuiltins.user_runs = getattr(builtins, 'user_runs', 0) + 1\nRAN = True\n"


def clean_env(**variables: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("GPUSHIM_")}
    return {**env, **variables}


def gpushim_run(*command: str, launcher="python -m gpushim run", **variables: str) -> subprocess.CompletedProcess:
    """Run ``command`` under a launcher, without inherited GPUSHIM_* switches."""
    return subprocess.run(
        [*LAUNCHERS[launcher], *command], env=clean_env(**variables), capture_output=True, text=True, timeout=120
    )


def python(code: str, **variables: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a plain interpreter, without inherited GPUSHIM_* switches."""
    return subprocess.run(
        [sys.executable, "-c", code], env=clean_env(**variables), capture_output=True, text=True, timeout=120
    )


def in_a_subprocess(code: str) -> str:
    return f"import subprocess, sys; sys.exit(subprocess.run([sys.executable, '-c', {code!r}]).returncode)"


@pytest.fixture
def user_site(tmp_path):
    """A directory holding a user's own sitecustomize."""
    site = tmp_path / "user_site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(USER_SITECUSTOMIZE)
    return site


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_the_command_runs_with_gpushim_active(launcher):
    finished = gpushim_run(sys.executable, "-c", ACTIVE, launcher=launcher)
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.strip() == "True"


def test_a_python_subprocess_of_the_command_has_gpushim_active():
    finished = gpushim_run(sys.executable, "-c", in_a_subprocess(ACTIVE))
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.strip() == "True"


def test_the_opt_out_reaches_a_subprocess_of_the_command():
    finished = gpushim_run(sys.executable, "-c", in_a_subprocess(STATES), GPUSHIM_DISABLE="all")
    assert finished.returncode == 0, finished.stderr
    assert json.loads(finished.stdout) == ["disabled"]


def test_the_command_takes_the_launcher_s_place():
    launcher = subprocess.Popen(
        [*LAUNCHERS["gpushim-run"], sys.executable, "-c", "import os; print(os.getpid())"],
        env=clean_env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    printed, _ = launcher.communicate(timeout=120)
    assert int(printed) == launcher.pid


@pytest.mark.parametrize(
    ("code", "status"),
    [("raise SystemExit(7)", 7), ("import os, signal; os.kill(os.getpid(), signal.SIGTERM)", -signal.SIGTERM)],
)
def test_the_exit_status_is_the_command_s(code, status):
    assert gpushim_run(sys.executable, "-c", code).returncode == status


def test_a_command_that_cannot_be_found_exits_127_as_in_a_shell():
    finished = gpushim_run("no-such-command-for-gpushim")
    assert finished.returncode == 127
    assert finished.stderr == "gpushim-run: no-such-command-for-gpushim: No such file or directory\n"


def test_an_existing_sitecustomize_still_runs_once_and_stays_the_sitecustomize(user_site):
    code = "import builtins, sitecustomize as s, sys; print(builtins.user_runs, s.RAN, 'gpushim.auto' in sys.modules)"
    finished = gpushim_run(sys.executable, "-c", code, PYTHONPATH=str(user_site))
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.split() == ["1", "True", "True"]


@pytest.mark.parametrize("spelling", ["symlink", "copy"])
def test_a_second_bootstrap_on_the_path_does_not_recurse(tmp_path, user_site, spelling):
    """The same directory under another name, or another install's copy of it, before the user's own."""
    second = tmp_path / "second_bootstrap"
    if spelling == "symlink":
        second.symlink_to(BOOTSTRAP, target_is_directory=True)
    else:
        shutil.copytree(BOOTSTRAP, second)
    path = os.pathsep.join([BOOTSTRAP, str(second), BOOTSTRAP, str(user_site)])
    code = "import builtins, sys; print(builtins.user_runs, 'gpushim.auto' in sys.modules)"
    finished = gpushim_run(sys.executable, "-c", code, PYTHONPATH=path)
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.split() == ["1", "True"]


def test_the_bootstrap_leaves_sys_path_and_stays_on_pythonpath():
    code = "import os, sys; print(os.environ['PYTHONPATH']); print(any('bootstrap' in entry for entry in sys.path))"
    finished = gpushim_run(sys.executable, "-c", code)
    assert finished.stdout.split() == [BOOTSTRAP, "False"]


def test_nested_launchers_put_the_bootstrap_on_the_path_once(user_site):
    code = "import os; print(os.environ['PYTHONPATH'])"
    finished = gpushim_run(*LAUNCHERS["gpushim-run"], sys.executable, "-c", code, PYTHONPATH=str(user_site))
    assert finished.stdout.strip() == os.pathsep.join([BOOTSTRAP, str(user_site)])


def test_the_bootstrap_imports_nothing_heavy():
    """Nothing heavy beyond what the interpreter's own startup imports (3.9's editable installs import typing)."""
    code = (
        "import sys\n"
        "heavy = {'wrapt', 'packaging', 'numpy', 'cupy', 'warp', 'nvidia', 'torch', 'importlib.metadata',"
        " 'logging', 'typing', 'dataclasses'}\n"
        "print(sorted(heavy & set(sys.modules)))"
    )
    finished = gpushim_run(sys.executable, "-c", code)
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout == python(code).stdout


def test_bootstrap_path_prints_the_directory_of_the_bootstrap():
    finished = python("from gpushim.cli import main; main(['bootstrap-path'])")
    assert finished.stdout.strip() == BOOTSTRAP
    assert (Path(BOOTSTRAP) / "sitecustomize.py").is_file()


def test_the_environment_alone_activates_gpushim():
    finished = python(in_a_subprocess(ACTIVE), PYTHONPATH=BOOTSTRAP, GPUSHIM_AUTO="1")
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.strip() == "True"


@pytest.mark.parametrize("auto", [None, "0", "off"])
def test_the_bootstrap_without_gpushim_auto_leaves_gpushim_off(user_site, auto):
    code = "import builtins, sys; print(builtins.user_runs, 'gpushim.auto' in sys.modules)"
    variables = {"PYTHONPATH": os.pathsep.join([BOOTSTRAP, str(user_site)])}
    if auto is not None:
        variables["GPUSHIM_AUTO"] = auto
    finished = python(code, **variables)
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.split() == ["1", "False"]


def test_an_invalid_gpushim_auto_warns_and_leaves_gpushim_off():
    finished = python(ACTIVE, PYTHONPATH=BOOTSTRAP, GPUSHIM_AUTO="maybe")
    assert finished.stdout.strip() == "False"
    assert "GPUSHIM_AUTO='maybe' is none of 1, true, yes, on, 0, false, no, off; gpushim stays off" in finished.stderr


@pytest.fixture(scope="module")
def bare(tmp_path_factory) -> Path:
    """A virtual environment without gpushim."""
    bare = tmp_path_factory.mktemp("bare")
    venv.create(bare, with_pip=False)
    return bare


def test_a_python_without_gpushim_warns_and_still_runs_its_sitecustomize(bare, user_site):
    code = "import builtins; print(builtins.user_runs)"
    finished = gpushim_run(str(bare / "bin" / "python"), "-c", code, PYTHONPATH=str(user_site))
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.strip() == "1"
    assert "GPUSHIM_AUTO is set but" in finished.stderr
    assert "has no gpushim installed; it runs without gpushim" in finished.stderr


def test_with_warnings_as_errors_a_python_without_gpushim_starts_as_without_gpushim_run(bare, user_site):
    """The warning is dropped, as gpushim's own are where the filters make it an error (gpushim.report)."""
    code = "import builtins; print(builtins.user_runs)"
    run = gpushim_run(str(bare / "bin" / "python"), "-c", code, PYTHONPATH=str(user_site), PYTHONWARNINGS="error")
    assert (run.returncode, run.stdout, run.stderr) == (0, "1\n", "")


def test_gpushim_run_reached_through_links_starts_the_python_beside_the_script_itself(tmp_path, bare):
    """As pipx links it into ~/.local/bin: a relative link to an absolute one; PATH's python3 lacks gpushim."""
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "gpushim-run").symlink_to(LAUNCHERS["gpushim-run"][0])
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "gpushim-run").symlink_to(Path("..", "tools", "gpushim-run"))
    finished = subprocess.run(
        [str(tmp_path / "bin" / "gpushim-run"), sys.executable, "-c", ACTIVE],
        env=clean_env(PATH=os.pathsep.join([str(bare / "bin"), "/usr/bin", "/bin"])),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (finished.returncode, finished.stdout) == (0, "True\n"), finished.stderr


def test_a_python_2_child_runs_its_sitecustomize_and_warns(user_site):
    python2 = shutil.which("python2.7")
    probe = python2 and subprocess.run([python2, "-c", "pass"], env=clean_env(PYENV_VERSION="2.7.18")).returncode
    if python2 is None or probe:
        pytest.skip("no Python 2.7 here")
    code = "import __builtin__; print(__builtin__.user_runs)"
    (user_site / "sitecustomize.py").write_text("import __builtin__\n__builtin__.user_runs = 1\n")
    finished = gpushim_run(python2, "-c", code, PYTHONPATH=str(user_site), PYENV_VERSION="2.7.18")
    assert (finished.returncode, finished.stdout) == (0, "1\n"), finished.stderr
    assert "has no gpushim installed; it runs without gpushim" in finished.stderr


def test_the_user_s_sitecustomize_runs_once_in_the_command_s_process(tmp_path):
    """As for the command alone: gpushim-run's own start runs no sitecustomize or .pth of the user's."""
    log = tmp_path / "runs"
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        f"import os\nwith open({str(log)!r}, 'a') as log:\n    log.write(f'{{os.getpid()}}\\n')\n"
    )
    finished = gpushim_run(
        sys.executable, "-c", "import os; print(os.getpid())", launcher="gpushim-run", PYTHONPATH=str(site)
    )
    assert finished.returncode == 0, finished.stderr
    assert log.read_text().split() == finished.stdout.split()


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_an_invalid_switch_warns_once_from_gpushim_not_from_the_interpreter_s_startup(launcher):
    finished = gpushim_run(sys.executable, "-c", "pass", launcher=launcher, GPUSHIM_DISABLE="wrap")
    warned = [line for line in finished.stderr.splitlines() if "GpushimWarning:" in line]
    assert len(warned) == 1, finished.stderr
    assert warned[0].startswith("gpushim:0: GpushimWarning: GPUSHIM_DISABLE: 'wrap' matches no gpushim patch")
