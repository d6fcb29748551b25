"""cupy.testing_pkg_resources: ``cupy.testing.installed`` and ``with_requires`` without pkg_resources (cupy/cupy#8480).

Before 13.3.0, where setuptools 82 or none is installed, every call of
``installed``, ``numpy_satisfies`` or ``with_requires`` raises
``ModuleNotFoundError``; with gpushim they answer as 13.3.0 answers (see
``requirement_corpus``), and a test suite decorated with ``with_requires``
collects and runs.  The cells have no setuptools, but ``cupy-13.2.0-numpy1``
has setuptools 81.0.0, the last with ``pkg_resources``: there the release
works and the patch does not apply.
"""

import os
import subprocess
import textwrap

import pytest

cupy = pytest.importorskip("cupy")

from gpushim.patches.cupy.testing_pkg_resources import patch
from tests.cupy import requirement_corpus
from tests.support import PYTEST, gate, record_corpus

GATE = gate(patch)
MISSING = "ModuleNotFoundError: No module named 'pkg_resources'"
# The calls that reach pkg_resources: all but a keyword, which Python refuses first.
REACHING = [case for case in requirement_corpus.CASES if case != "installed a keyword"]

SUITE = """
import cupy.testing


@cupy.testing.with_requires("numpy>=1")
def test_runs():
    assert cupy.testing.numpy_satisfies(">=1")


@cupy.testing.with_requires("gpushim-nowhere")
def test_is_skipped():
    raise AssertionError("ran without its requirement")
"""


def helper():
    from cupy.testing import _helper

    return _helper


@GATE.affected_only
def test_needed_every_call_raises_without_gpushim():
    outcomes = requirement_corpus.run(REACHING)
    assert set(outcomes.values()) == {MISSING}


@GATE.affected_only
def test_effective_calls_answer_with_metadata(this_patch):
    outcomes = requirement_corpus.run()
    assert MISSING not in outcomes.values()
    assert outcomes["installed numpy>=1"] is outcomes["installed cupy_cuda12x>=12"] is True
    assert outcomes["installed a missing distribution"] is outcomes["numpy_satisfies <1"] is False
    assert outcomes["with_requires numpy<1"] == {"mark": "skipif", "skips": True, "reason": "requires: numpy<1"}


@GATE.affected_only
@pytest.mark.parametrize("gpushim", [False, True], ids=["without gpushim", "with gpushim"])
def test_a_suite_decorated_with_with_requires(gpushim, tmp_path):
    (tmp_path / "test_suite.py").write_text(textwrap.dedent(SUITE))
    options = ["--gpushim"] if gpushim else []
    clean = {key: value for key, value in os.environ.items() if not key.startswith(("GPUSHIM_", "PYTEST_"))}
    finished = subprocess.run(
        [*PYTEST, *options, "-q", "-rs", str(tmp_path)], env=clean, capture_output=True, text=True, cwd=tmp_path
    )
    if gpushim:
        assert finished.returncode == 0, finished.stdout[-3000:]
        assert "1 passed, 1 skipped" in finished.stdout
        assert "requires: gpushim-nowhere" in finished.stdout
    else:
        assert finished.returncode == 2, finished.stdout[-3000:]
        assert MISSING in finished.stdout


@GATE.unaffected_only
def test_harmless_not_affected_and_the_functions_are_cupys_own(gpushim_patched):
    state = next(r for r in gpushim_patched.status() if r["id"] == patch.id)["state"]
    assert state == "not-affected"
    assert cupy.testing.installed is helper().installed
    assert cupy.testing.with_requires is helper().with_requires
    assert helper().installed.__module__ == helper().with_requires.__module__ == "cupy.testing._helper"
    assert not hasattr(helper().installed, "__wrapped__")


@GATE.recorded_only
def test_faithful_answers_of_the_corpus():
    """Patched old releases record what unpatched 13.3.0 records; the matrix compares the files."""
    outcomes = record_corpus(patch, requirement_corpus.run)
    assert len(outcomes) == len(requirement_corpus.CASES)
    assert MISSING not in outcomes.values()
