"""Fixtures of the command tests."""

from __future__ import annotations

import pytest

from tests.cli.scripts import RELEASES, environment, write_distribution


@pytest.fixture
def installed(tmp_path) -> dict[str, str]:
    """An environment in which the releases of RELEASES are installed, as metadata on PYTHONPATH."""
    site = tmp_path / "site"
    for distribution, version in RELEASES.items():
        write_distribution(site, distribution, version)
    return environment(PYTHONPATH=str(site))
