import sys

import pytest

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
    for name in ("GPUSHIM_DISABLE", "GPUSHIM_ENABLE", "GPUSHIM_STRICT", "GPUSHIM_LOG"):
        monkeypatch.delenv(name, raising=False)
