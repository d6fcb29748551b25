"""What the tests of real releases share: release gates, fresh interpreters, artefacts.

The tests under ``tests/<library>/`` run inside one nox matrix cell at a
time, a virtual environment with exactly one release of the library.  Each
test file decides from the installed release whether it is proving that a
patch is needed and effective (affected releases) or harmless (the others),
and records the outcomes of its corpus as artefacts that the final matrix
step (``tests/matrix``, with ``matrix/cells.py``) compares with the first fixed release's.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import gpushim
from gpushim import Patch
from gpushim.interpreters import python_command
from gpushim.states import APPLIED, INACTIVE, NOT_INSTALLED, OPT_IN, PENDING
from matrix.cells import ARTEFACTS, load_cells, reference_of


class Gate:
    """Where this environment stands for one patch: its target's release, and what the patch does here.

    ``affected`` is whether the patch would apply here, as gpushim decides it
    (release, ``only_with`` and all; an opt-in patch once enabled); ``reference`` is whether this release is
    the one the patch's outcomes are compared with (``matrix/*.toml``);
    ``at_an_end`` whether it is affected and the lowest or highest release of
    the matrix's cells in the patch's range, where proofs too costly for
    every cell run.  The corpus ``records`` there and on the reference: a
    release between the ends runs the same patched code, and the corpus
    builds the most kernels of a patch's tests.
    """

    def __init__(self, patch: Patch) -> None:
        import pytest

        record = gpushim.record(patch.id)
        self.release = (record["distribution"], record["installed_version"])
        self.state = record["state"]
        self.affected = self.state in (INACTIVE, PENDING, APPLIED, OPT_IN)
        self.reference = "-".join(self.release) == reference_of(patch.id)
        self.at_an_end = self.affected and self.release[1] in affected_ends(patch, self.release[0])
        self.records = self.at_an_end or self.reference
        name = " ".join(self.release)
        self.affected_only = pytest.mark.skipif(not self.affected, reason=f"{name} does not have the bug here")
        self.unaffected_only = pytest.mark.skipif(self.affected, reason=f"{name} has the bug")
        self.recorded_only = pytest.mark.skipif(
            not self.records, reason=f"{name} is neither an end of the range nor the reference"
        )
        self.ends_only = pytest.mark.skipif(
            not self.at_an_end, reason=f"{name} is not the lowest or highest affected release of the matrix"
        )


def affected_ends(patch: Patch, distribution: str) -> set[str]:
    """The lowest and highest release of ``distribution`` in ``patch``'s range that a cell of the matrix installs and
    runs the patch's tests in (``tests/<library>/test_<name>.py``; a cell may run a few modules only)."""
    from packaging.version import Version

    from gpushim.releases import is_affected

    library, _, name = patch.id.partition(".")
    releases = _matrix_releases(distribution, f"tests/{library}/test_{name}.py")
    versions = sorted((version for version in releases if is_affected(version, patch.affected)), key=Version)
    return {versions[0], versions[-1]} if versions else set()


def probed_releases(patch: Patch, distribution: str, installed: str) -> set[str]:
    """The releases where the contract asks ``patch``'s probe: the lowest and highest in its range, affected or not
    backported, and the one next to each outside it, among the matrix's releases of ``distribution`` and the
    ``installed`` one.

    A probe tells something at its range's ends and just outside them; in
    between, the contract's other checks show the patch applies as it does at
    the ends, and each probe asked there costs an interpreter importing the
    target in each of four ways.
    """
    from packaging.version import Version

    from gpushim.releases import is_affected

    specifiers = [patch.affected, *patch.not_backported]
    releases = sorted({*_matrix_releases(distribution), installed}, key=Version)
    inside = [index for index, release in enumerate(releases) if any(is_affected(release, s) for s in specifiers)]
    if not inside:
        return set()
    ends = (inside[0] - 1, inside[0], inside[-1], inside[-1] + 1)
    return {releases[index] for index in ends if 0 <= index < len(releases)}


@functools.lru_cache(maxsize=None)
def _matrix_releases(distribution: str, module: str | None = None) -> list[str]:
    """Every release of ``distribution`` that a cell of the matrix installs, of the cells that run ``module`` if
    given."""
    from packaging.utils import canonicalize_name

    return [
        version
        for cell in load_cells().values()
        if module is None or _runs(cell, module)
        for name, _, version in (requirement.partition("==") for requirement in cell["install"])
        if canonicalize_name(name) == canonicalize_name(distribution)
    ]


def _runs(cell: dict, module: str) -> bool:
    """Whether ``cell`` runs the test ``module``: its library's folder does, or the cell names the module."""
    return any(module == path or module.startswith(f"{path}/") for path in [cell["tests"], *cell["pytest"]])


def gate(patch: Patch) -> Gate:
    """The :class:`Gate` of ``patch``; skips the calling test module where its target is not installed."""
    import pytest

    if gpushim.record(patch.id)["state"] == NOT_INSTALLED:
        pytest.skip(
            f"no distribution of {gpushim.registry().library(patch.id).target} is installed", allow_module_level=True
        )
    return Gate(patch)


@contextlib.contextmanager
def applied(patch: Patch):
    """``patch`` applied (where this release is affected) inside a ``with`` block, undone after it."""
    gpushim.patch(patch.id)
    try:
        yield
    finally:
        gpushim.unpatch(patch.id)


def assert_unchanged_by(patch: Patch, owner: object, names: tuple[str, ...]) -> None:
    """Applying ``patch`` (outside its range) leaves what ``owner`` itself binds to each of ``names`` as it was."""
    before = {name: vars(owner).get(name) for name in names}
    with applied(patch):
        assert {name: vars(owner).get(name) for name in names} == before


# A pytest session of its own, as a user's: no cache written into the suite, and without hypothesis's plugin,
# which gpushim's tests install and such a session never uses (importing it costs 2 s a session).
PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:hypothesispytest"]


def run_python(
    code: str, env: dict[str, str] | None = None, timeout: float = 600, args: list[str] = ()
) -> subprocess.CompletedProcess:
    """Run ``code`` (with ``args``) in a fresh interpreter of this environment, without inherited GPUSHIM_* switches."""
    clean = {key: value for key, value in os.environ.items() if not key.startswith("GPUSHIM_")}
    return subprocess.run(
        python_command(code, *args),
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


ROOT = Path(__file__).resolve().parents[1]
ANSWER = "@@answer "  # what the fresh interpreter's answer follows, on a line of its own, whatever else it prints


def answer_in_fresh_python(code: str, answer: str, env: dict[str, str] | None = None) -> Any:
    """Run ``code`` in a fresh interpreter (as :func:`run_python`, with the repository's ``tests`` importable), then
    evaluate the expression ``answer`` there: its value, read back as JSON.  The interpreter must exit cleanly."""
    script = "\n".join(
        [
            f"import sys; sys.path.insert(0, {str(ROOT)!r})",
            code,
            "import json",
            f"print({ANSWER!r} + json.dumps({answer}), flush=True)",
        ]
    )
    finished = run_python(script, env)
    assert finished.returncode == 0, finished.stderr[-3000:]
    line = next(line for line in reversed(finished.stdout.splitlines()) if line.startswith(ANSWER))
    return json.loads(line[len(ANSWER) :])


def corpus_in_fresh_python(module: str, patch: Patch, prelude: str) -> tuple[object, str]:
    """``run_corpus()`` of test module ``module`` in a fresh interpreter after ``prelude``: (outcomes, patch state)."""
    code = f"{prelude}\nfrom {module} import run_corpus\noutcomes = run_corpus()\nimport gpushim"
    outcomes, state = answer_in_fresh_python(code, f"[outcomes, gpushim.record({patch.id!r})['state']]")
    return outcomes, state


def record_corpus(patch: Patch, run) -> object:
    """``run()``'s outcomes on a patch's corpus, patched where this release is affected, recorded for the matrix."""
    with applied(patch) if Gate(patch).affected else contextlib.nullcontext():
        outcomes = run()
        record_faithful(patch, outcomes)
    return outcomes


def record_faithful(patch: Patch, outcomes: object) -> Path:
    """Write this release's outcomes on a patch's corpus for the matrix to compare.

    Called by the same test on affected releases (with the patch applied) and
    on the reference release (where it is not), so equal files mean the
    patched old release behaves as the fixed one does.
    """
    record = gpushim.record(patch.id)
    release = f"{record['distribution']}-{record['installed_version']}"
    path = ARTEFACTS / f"{patch.id}@{os.environ.get('MATRIX_CELL', release)}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {"patch": patch.id, "release": release, "state": record["state"], "outcomes": outcomes}
    path.write_text(json.dumps(document, indent=1, sort_keys=True, default=repr) + "\n")
    return path


def states_of_tasks(command: list[str], env: dict[str, str], timeout: float, what: str) -> list[str]:
    """The patch states a cluster job's tasks print as ``@@state PID STATE``, each from a process other than the job's.

    The job runs in a process group of its own, killed whole if it outlives
    ``timeout`` (``what`` names it in the failure).
    """
    import pytest

    job = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        stdout, stderr = job.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)
        stdout, stderr = job.communicate()
        pytest.fail(f"the {what} took more than {timeout} s:\n{stderr[-3000:]}")
    assert job.returncode == 0, stderr[-3000:]
    reports = [line.split()[1:] for line in stdout.splitlines() if line.startswith("@@state")]
    assert len({pid for pid, _ in reports}) == len(reports) == 2
    assert str(job.pid) not in {pid for pid, _ in reports}
    return [state for _, state in reports]


def refusal(wrapper, *args, **kwargs) -> tuple[str, str]:
    """The ``TypeError`` messages of a call that does not bind, through a patch's ``wrapper`` and as released.

    The wrapper passes such a call on unchanged, so the two must be equal.
    """
    import pytest

    messages = []
    for function in (wrapper, wrapper.__wrapped__):
        with pytest.raises(TypeError) as refused:
            function(*args, **kwargs)
        messages.append(str(refused.value))
    return messages[0], messages[1]
