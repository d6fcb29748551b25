"""Rounds of threads that import the target and call ``patch()``, ``unpatch()`` and ``status()`` all at once, after
which one ``patch()`` must leave each patch applied exactly once."""

from __future__ import annotations

import pytest

from tests.engine.adversary import TARGET, adversary_site, run_program

CONCURRENT = """
import random, sys, threading, time
import gpushim

errors = []
def guarded(action):
    def run():
        try:
            barrier.wait()
            action()
        except BaseException as error:
            errors.append(repr(error))
    return run

def import_target():
    import synthadv

actions = [import_target, gpushim.patch, gpushim.unpatch, gpushim.status, import_target, gpushim.patch]
random.seed({seed})
for round in range({rounds}):
    gpushim.unpatch()
    sys.modules.pop("synthadv", None)
    chosen = random.sample(actions, len(actions))
    barrier = threading.Barrier(len(chosen))
    threads = [threading.Thread(target=guarded(action)) for action in chosen]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    gpushim.patch()
    import synthadv
    compute = synthadv.compute
    states = {{record["id"]: record["state"] for record in gpushim.status()}}
    assert states == {{"synth.compute": "applied", "synth.refused": "applied"}}, (round, chosen, states)
    assert compute(1) == 3 and compute.__wrapped__(1) == 2, (round, chosen)
    assert not hasattr(compute.__wrapped__, "__wrapped__"), (round, chosen)
    gpushim.unpatch()
    assert synthadv.compute is compute.__wrapped__ and synthadv.compute(1) == 2, (round, chosen)
assert not errors, errors
from gpushim.importhook import hooks
assert hooks not in sys.meta_path
print("ok")
"""


def _slow_target(site):
    source = site / TARGET / "__init__.py"
    source.write_text("import time\ntime.sleep(0.002)\n" + source.read_text())


@pytest.mark.parametrize("seed", range(4))
def test_import_patch_unpatch_and_status_from_several_threads(seed, tmp_path):
    """Rounds of six threads started together; after them ``patch()`` and an import leave both patches applied once."""
    site = adversary_site(tmp_path, _slow_target)
    finished = run_program(site, CONCURRENT.format(seed=seed, rounds=25))
    assert finished.stdout.strip() == "ok", finished.stderr[-3000:]


IMPORTS_ITS_TARGET = """
import threading, time
import gpushim

gpushim.patch()
reading = threading.Thread(target=gpushim.status, daemon=True)
reading.start()
time.sleep(0.2)
importing = threading.Thread(target=__import__, args=("synthadv",), daemon=True)
importing.start()
for thread in (reading, importing):
    thread.join(10)
if reading.is_alive() or importing.is_alive():
    print("hangs", flush=True)
    import os
    os._exit(1)
import synthadv
print(synthadv.compute(1), gpushim.record("synth.compute")["state"])
"""


def _patch_module_imports_its_target(site):
    """The patch module, slow to load, imports its target at its top, as a careless plugin's may."""
    module = site / "synthcatalogue" / "synth" / "compute.py"
    module.write_text("import time\ntime.sleep(0.5)\nimport synthadv\n" + module.read_text())


def test_a_patch_module_that_imports_its_target_and_a_status_in_another_thread_do_not_wait_for_each_other(tmp_path):
    """status() loads the patch module, which waits for the target's import in the other thread; that import's
    patching waits for the module's declaration."""
    site = adversary_site(tmp_path, _patch_module_imports_its_target)
    finished = run_program(site, IMPORTS_ITS_TARGET)
    assert finished.stdout.split() == ["3", "applied"], finished.stderr[-3000:]
