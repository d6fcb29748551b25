import os
import sys

import pytest

from gpushim import switches
from tests.engine.synthetic import Target


@pytest.fixture
def syspath(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [name for name in sys.modules if name.startswith("synthlib")]:
        del sys.modules[name]


@pytest.fixture
def target(syspath):
    return Target(syspath)


@pytest.fixture(autouse=True)
def no_switches(monkeypatch):
    for name in [name for name in os.environ if name.startswith("GPUSHIM_")]:
        monkeypatch.delenv(name)
    monkeypatch.setattr(switches, "_warned", set())  # each test is a process of its own to the once-only warnings
