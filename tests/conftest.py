import pytest


@pytest.fixture
def gpushim_patched():
    """gpushim's own patches applied for one test and undone after it."""
    import gpushim

    gpushim.patch()
    yield gpushim
    gpushim.unpatch()
