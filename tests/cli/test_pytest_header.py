"""The pytest header tells a session where gpushim is active from one where it is not."""

from __future__ import annotations

import subprocess

import gpushim
from gpushim.pytest_plugin import INACTIVE_NOTE, OPT_IN_NOTE, header
from tests.support import PYTEST


def record(id, state, distribution="warp-lang", version="1.6.0"):
    return {"id": id, "target": "warp", "distribution": distribution, "installed_version": version, "state": state}


def test_inactive_patches_are_named_and_explained():
    records = [record("warp.a", "inactive"), record("warp.b", "not-affected"), record("dali.c", "not-installed", None)]
    assert header(records) == (
        f"gpushim {gpushim.__version__}: warp-lang 1.6.0 (1 inactive, 1 not-affected); {INACTIVE_NOTE}"
    )


def test_a_patch_not_backported_to_the_release_is_named_with_its_state():
    records = [record("warp.a", "pending"), record("warp.b", "not-backported")]
    assert header(records) == f"gpushim {gpushim.__version__}: warp-lang 1.6.0 (1 pending, not-backported: warp.b)"


def test_the_usual_states_are_counted_and_the_others_name_their_patches():
    records = [
        *(record(f"warp.p{n}", "pending") for n in range(30)),
        *(record(f"warp.n{n}", "not-affected") for n in range(20)),
        record("warp.f", "failed"),
        record("warp.d", "disabled"),
        record("warp.e", "disabled"),
    ]
    assert header(records) == (
        f"gpushim {gpushim.__version__}: warp-lang 1.6.0 (30 pending, 20 not-affected, failed: warp.f, "
        "disabled: warp.d, warp.e)"
    )


def test_opt_in_patches_are_named_and_explained():
    records = [record("warp.a", "pending"), record("warp.b", "opt-in")]
    assert header(records) == (
        f"gpushim {gpushim.__version__}: warp-lang 1.6.0 (1 pending, opt-in: warp.b); {OPT_IN_NOTE}"
    )


def test_pending_patches_need_no_explanation():
    assert header([record("warp.a", "pending")]) == f"gpushim {gpushim.__version__}: warp-lang 1.6.0 (1 pending)"


def session_header(installed, tmp_path, *options):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    finished = subprocess.run(
        [*PYTEST, *options],
        cwd=suite,
        env=installed,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    return next(line for line in finished.stdout.splitlines() if line.startswith("gpushim "))


def test_a_session_without_gpushim_says_it_is_not_active(installed, tmp_path):
    line = session_header(installed, tmp_path)
    assert "pending" not in line
    assert "inactive" in line.split(";")[0]
    assert line.endswith(f"; {INACTIVE_NOTE}; {OPT_IN_NOTE}")  # Warp 1.6.0 is in warp.and_or_short_circuit's range


def test_a_session_with_gpushim_says_pending(installed, tmp_path):
    line = session_header(installed, tmp_path, "--gpushim")
    assert "pending" in line
    assert "inactive" not in line
