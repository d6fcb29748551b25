"""One registry per process: from threads that first use gpushim at once, in a forked child, after a reload.

Each case runs in a fresh interpreter whose ``gpushim.registry()`` finds
the synthetic catalogue of ``write_site`` (target ``synthone``, patch
``synth.compute``, which adds one to ``compute``) instead of gpushim's own.
"""

from __future__ import annotations

import textwrap

import pytest

from tests.engine.catalogues import LIBRARY, STANDALONE_PATCH, write_site
from tests.engine.synthetic import write_distribution
from tests.support import run_python

# gpushim's first use finds the synthetic catalogue, slowly enough for threads to meet in it.
FIRST_USE = """
import sys, threading, time
import gpushim, gpushim.catalogue

discover = gpushim.catalogue.discover

def slow_discover(package):
    time.sleep(0.2)
    return discover("synthcatalogue")

gpushim.catalogue.discover = slow_discover


def wait_for(child):  # five seconds at most for a forked child; one that hangs is killed and named
    import os

    for _ in range(50):
        if os.waitpid(child, os.WNOHANG) != (0, 0):
            return
        time.sleep(0.1)
    os.kill(child, 9)
    print("the child hangs")
"""


@pytest.fixture
def site(tmp_path):
    """The synthetic target and catalogue, without the sitecustomize that would make the registry beforehand."""
    site = write_site(tmp_path, "synthone", "synthone-dist", "1.5.0", declared="1.5.0")
    (site / "sitecustomize.py").unlink()
    return site


def run(site, code, *args, timeout=60):
    return run_python(FIRST_USE + textwrap.dedent(code), env={"PYTHONPATH": str(site)}, args=args, timeout=timeout)


@pytest.mark.parametrize("other", ["patch", "status"])
def test_threads_that_first_use_gpushim_at_once_share_one_registry(site, other):
    """Two registries would apply the patch twice, or report and undo another registry's patches."""
    finished = run(
        site,
        """
        threads = [threading.Thread(target=getattr(gpushim, name)) for name in sys.argv[1:]]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        import synthone
        print(synthone.compute(1), gpushim.record("synth.compute")["state"])
        gpushim.unpatch()
        print(synthone.compute(1))
        """,
        "patch",
        other,
    )
    assert finished.stdout.split() == ["3", "applied", "2"], finished.stderr


def test_a_child_forked_while_another_thread_patches_can_use_gpushim(site):
    """The patching thread holds the registry's lock at the fork, and does not exist in the child to release it."""
    finished = run(
        site,
        """
        import os
        import gpushim.journal

        wrap = gpushim.journal.Journal.wrap

        def slow_wrap(*args, **kwargs):
            time.sleep(1)
            return wrap(*args, **kwargs)

        gpushim.journal.Journal.wrap = slow_wrap
        gpushim.patch()
        patching = threading.Thread(target=__import__, args=("synthone",))
        patching.start()
        time.sleep(0.3)
        child = os.fork()
        if child == 0:
            print("child", gpushim.record("synth.compute")["state"], flush=True)
            os._exit(0)
        wait_for(child)
        patching.join()
        print("parent", gpushim.record("synth.compute")["state"])
        """,
    )
    assert finished.stdout.splitlines() == ["child pending", "parent applied"], finished.stderr


def test_a_child_forked_while_another_thread_imports_for_gpushim_can_patch(site):
    """The patching thread is importing wrapt at the fork, and holds wrapt's import lock: the child, without that
    thread, imports another patched library, whose patching needs wrapt."""
    two = site / "synthcatalogue" / "two"
    two.mkdir()
    (two / "__init__.py").write_text(LIBRARY.format(target="synthtwo", distribution="synthtwo-dist"))
    (two / "compute.py").write_text(STANDALONE_PATCH.format(id="two.compute", affected=">=1.0,<2.0", name="compute"))
    (site / "synthtwo").mkdir()
    (site / "synthtwo" / "__init__.py").write_text("def compute(x):\n    return x + 1\n")
    write_distribution(site, "synthtwo-dist", "1.5.0")
    finished = run(
        site,
        """
        import importlib.util, os

        class SlowWrapt:
            def find_spec(self, name, path=None, target=None):
                if name != "wrapt":
                    return None
                sys.meta_path.remove(self)
                spec = importlib.util.find_spec(name)
                execute = spec.loader.exec_module
                spec.loader.exec_module = lambda module: (time.sleep(1), execute(module))
                return spec

        sys.meta_path.insert(0, SlowWrapt())
        gpushim.patch()
        patching = threading.Thread(target=__import__, args=("synthone",))
        patching.start()
        time.sleep(0.5)
        child = os.fork()
        if child == 0:
            import synthtwo
            print("child", synthtwo.compute(1), gpushim.record("two.compute")["state"], flush=True)
            os._exit(0)
        wait_for(child)
        patching.join()
        """,
    )
    assert finished.stdout.splitlines() == ["child 3 applied"], finished.stderr


@pytest.mark.parametrize("module", ["gpushim", "gpushim.importhook", "gpushim.journal"])
def test_reloading_a_module_of_gpushim_keeps_what_it_did(site, module):
    """As ``%autoreload`` does to an editable install: the target imported again is patched, and unpatch() undoes
    the patch."""
    finished = run(
        site,
        """
        import importlib
        gpushim.patch()
        import synthone
        importlib.reload(importlib.import_module(sys.argv[1]))
        del sys.modules["synthone"]
        import synthone
        print(synthone.compute(1), gpushim.record("synth.compute")["state"])
        gpushim.unpatch()
        print(synthone.compute(1))
        """,
        module,
    )
    assert finished.stdout.split() == ["3", "applied", "2"], finished.stderr


def test_reloading_the_wrappers_module_keeps_the_wrappers_class():
    """Undo re-points a wrapper made before the reload at what the one beneath it replaced: the two undone in
    either order leave the original."""
    finished = run_python(
        textwrap.dedent(
            """
            import importlib, types
            import gpushim.wrappers
            from gpushim import Journal

            module = types.ModuleType("owner")
            module.compute = lambda: 1
            below, above = Journal(), Journal()
            below.wrap(module, "compute", lambda wrapped, instance, args, kwargs: wrapped() + 1)
            above.wrap(module, "compute", lambda wrapped, instance, args, kwargs: wrapped() * 10)
            importlib.reload(gpushim.wrappers)
            below.undo()
            print(module.compute())
            above.undo()
            print(module.compute())
            """
        )
    )
    assert finished.stdout.split() == ["10", "1"], finished.stderr
