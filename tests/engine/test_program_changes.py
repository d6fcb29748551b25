"""What a program does again to gpushim or to what it patched: gpushim purged and imported again, a module
reloaded, a binding made over a patched one."""

from __future__ import annotations

import importlib
import textwrap

from tests.engine.adversary import adversary_site, run_program
from tests.engine.synthetic import make_patch, registry_for, state_of


def test_gpushim_purged_from_sys_modules_and_imported_again_leaves_no_earlier_hook(tmp_path):
    site = adversary_site(tmp_path, None)
    code = textwrap.dedent(
        """
        import sys
        import gpushim.auto
        for name in [name for name in sys.modules if name.partition(".")[0] in ("gpushim", "synthcatalogue")]:
            del sys.modules[name]
        import gpushim.auto
        import synthadv
        print(sum(type(finder).__name__ == "PostImportHooks" for finder in sys.meta_path))
        """
    )
    finished = run_program(site, code, env={"GPUSHIM_STRICT": "1"})
    assert (finished.returncode, finished.stdout, finished.stderr) == (0, "1\n", "")


def test_unpatch_leaves_a_binding_the_program_made_after_patching(target):
    """As without gpushim: the program's own wrapper (or a test's monkeypatch) stays where it put it."""
    registry = registry_for(make_patch(target))
    registry.patch()
    module = target.import_()

    patched = module.compute

    def users_compute(x):
        return patched(x) * 100

    module.compute = users_compute
    registry.unpatch()
    assert module.compute is users_compute
    assert patched.__wrapped__(1) == 2


def test_a_reloaded_module_is_patched_again(target):
    """``importlib.reload`` runs the module's code again over the patched objects: the patch follows."""
    registry = registry_for(make_patch(target))
    registry.patch()
    module = importlib.reload(target.import_())
    assert (module.compute(1), state_of(registry)["state"]) == (3, "applied")
    registry.unpatch()
    assert module.compute(1) == 2
