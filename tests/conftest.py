import pytest


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "gpu: needs a CUDA device (tests/gpu.py); skipped with the reason 'no CUDA device' without one"
    )


@pytest.fixture
def gpushim_patched():
    """gpushim's own patches applied for one test and undone after it."""
    import gpushim

    gpushim.patch()
    yield gpushim
    gpushim.unpatch()


@pytest.fixture
def this_patch(request):
    """The test module's ``patch`` applied, where the release is affected, for one test, and undone after it."""
    from tests.support import applied

    with applied(request.module.patch):
        yield
