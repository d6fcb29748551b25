"""Fail-open with the real CuPy: an import racing patch(), pickling what the patches replace, odd producers.

No GPU is used: the race only imports CuPy, pickling touches no memory, and
``from_dlpack`` refuses the producers below before it asks for any tensor.
"""

from __future__ import annotations

import json
import warnings

import pytest

from gpushim.patches.cupy.from_dlpack_unsupported_dtype import patch
from gpushim.states import APPLIED
from tests.fail_open import applying_here, pickling_differences
from tests.support import applied, gate, run_python

GATE = gate(patch)

import cupy  # noqa: E402

AFFECTED_HERE = applying_here("cupy")


@pytest.mark.skipif(not AFFECTED_HERE, reason=f"no CuPy patch applies to {' '.join(GATE.release)}")
@pytest.mark.parametrize("id", AFFECTED_HERE)
def test_what_a_patch_replaces_pickles_and_copies_as_the_original_does(id):
    if id == "cupy.expm_pade_term":
        from gpushim.patches.cupy.expm_pade_term import _import_linalg

        try:
            _import_linalg()  # with libcublas from the nvidia-cublas-cu12 wheel where there is no other
        except ImportError as error:
            pytest.skip(f"cupyx.scipy.linalg cannot be imported: {error}")
    assert pickling_differences(id) == {}


class DeviceRaises:
    """A producer whose ``__dlpack_device__`` property raises ``error``; CuPy never gets to ``__dlpack__``."""

    def __init__(self, error: BaseException) -> None:
        self.error, self.reads = error, 0

    @property
    def __dlpack_device__(self):
        self.reads += 1
        raise self.error

    def __dlpack__(self, stream=None):
        raise AssertionError("CuPy asked for the tensor")


ERRORS = {
    "RuntimeError": lambda: RuntimeError("device unknown"),
    "AttributeError": lambda: AttributeError("no device"),
    "ValueError": lambda: ValueError("bad device"),
    "KeyboardInterrupt": KeyboardInterrupt,
}


def conversions() -> dict[str, list]:
    """Each producer handed to each entry point: [exception type, message, warnings, reads of the property]."""
    results = {}
    for name, error in ERRORS.items():
        for function in ("from_dlpack", "fromDlpack"):
            producer = DeviceRaises(error())
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    getattr(cupy, function)(producer)
                    raised = ["nothing", ""]
                except BaseException as exception:
                    raised = [type(exception).__name__, str(exception)]
            results[f"{function}, {name}"] = [*raised, [str(w.message) for w in caught], producer.reads]
    return results


@GATE.affected_only
def test_a_dlpack_device_property_that_raises_gives_cupys_own_outcome():
    """CuPy (Cython 0.29) takes any exception reading ``__dlpack_device__`` for its absence; so must the patch."""
    unpatched = conversions()
    assert unpatched["from_dlpack, RuntimeError"][:2] == [
        "ValueError",
        "A DLPack tensor object cannot be consumed multiple times",
    ]
    with applied(patch):
        assert conversions() == unpatched


RACE = """
import importlib.util, json, sys, threading

class HeldImport:
    '''Holds the execution of ``cupy`` until released, as a slow import on another thread would.'''

    def __init__(self):
        self.started, self.release = threading.Event(), threading.Event()

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "cupy":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        execute = spec.loader.exec_module

        def exec_module(module):
            self.started.set()
            self.release.wait(120)
            execute(module)

        spec.loader.exec_module = exec_module
        return spec

held = HeldImport()
sys.meta_path.insert(0, held)
importer = threading.Thread(target=importlib.import_module, args=("cupy",))
importer.start()
assert held.started.wait(120)
import gpushim
patcher = threading.Thread(target=gpushim.patch)
patcher.start()
patcher.join(1)
waited = patcher.is_alive()
held.release.set()
importer.join(300)
patcher.join(300)
patched = hasattr(sys.modules["cupy"].from_dlpack, "__wrapped__")  # read before any other import
print("@@" + json.dumps({"waited": waited, "patched": patched, "state": gpushim.record({id!r})["state"]}))
"""


@GATE.affected_only
def test_patch_while_another_thread_imports_cupy_applies_when_both_return():
    """The import is held on an event while ``gpushim.patch()`` runs in another thread; then both are let go."""
    finished = run_python(RACE.replace("{id!r}", repr(patch.id)))
    assert finished.returncode == 0, finished.stderr[-3000:]
    report = json.loads(next(line[2:] for line in finished.stdout.splitlines() if line.startswith("@@")))
    assert report == {"waited": True, "patched": True, "state": APPLIED}
