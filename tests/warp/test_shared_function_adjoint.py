"""warp.shared_function_adjoint: a function shared with a forward-only kernel may get a stub adjoint.

Which kernel a module builds first is the order of a weak set, so each case
builds fresh modules until one comes out with the forward-only kernel first,
the order that shows the bug (the patch's probe does this): one module most
often, two or three at times.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import gpushim
from gpushim.patches.warp.shared_function_adjoint import _TRIES, _shared_helper_gradient, patch
from tests.support import applied, gate, record_corpus, run_python

GATE = gate(patch)

import numpy  # noqa: E402
import warp  # noqa: E402

warp.config.quiet = True
warp.init()


def forward_only_first_gradient(name: str) -> float:
    """The gradient through the shared functions in the first of up to ``_TRIES`` fresh modules built in the
    order that shows the bug."""
    for attempt in range(_TRIES):
        gradient = _shared_helper_gradient(warp, numpy, f"{name}_{attempt}")
        if gradient is not None:
            return gradient
    raise AssertionError(f"no module of {_TRIES} built its forward-only kernel first")


@GATE.affected_only
def test_effective_a_function_shared_with_a_forward_only_kernel_built_first_gets_its_adjoint():
    with applied(patch):
        assert forward_only_first_gradient("gpushim_test_effective") == 6.0


@GATE.ends_only
def test_a_stub_build_cached_by_an_unpatched_process_is_not_reused_with_gpushim(tmp_path):
    """Processes without and with gpushim share one kernel cache: the patched one builds its own."""
    probe = "import gpushim; print('@@', gpushim.registry()['warp.shared_function_adjoint'].probe())"
    env = {"WARP_CACHE_PATH": str(tmp_path)}
    without = run_python(f"import warp\n{probe}", env)
    built = sorted(path.name for path in tmp_path.rglob("wp_gpushim_forward_only_first_*"))
    with_gpushim = run_python(f"import gpushim.auto\n{probe}", env)
    assert [finished.stdout.splitlines()[-1] for finished in (without, with_gpushim)] == [
        "@@ the gradient through a function a forward-only kernel built first is 0.0, not 6.0",
        "@@ None",
    ], without.stderr + with_gpushim.stderr
    assert not set(path.name for path in tmp_path.rglob("wp_gpushim_forward_only_first_*")) <= set(built)


@GATE.ends_only
def test_a_module_whose_differentiable_kernel_comes_first_is_not_built():
    """Warp's module hash does not depend on the order, so a later process would load such a build, under the same
    name, in the order that shows the bug, and find no bug: the probe builds a name in that order only."""
    names = (f"gpushim_test_unbuilt_{uuid.uuid4().hex[:8]}_{attempt}" for attempt in range(_TRIES))
    name = next(name for name in names if _shared_helper_gradient(warp, numpy, name) is None)
    assert not list(Path(warp.config.kernel_cache_dir).rglob(f"wp_{name}_*"))


@GATE.unaffected_only
def test_harmless_outside_the_range_nothing_is_replaced():
    with applied(patch):
        assert gpushim.registry().journal(patch.id) is None


@GATE.recorded_only
def test_faithful_corpus_matches_the_fixed_release():
    """Recorded patched on the affected releases and unpatched on 1.16.0; the matrix compares the files."""
    outcomes = record_corpus(patch, lambda: {"forward-only kernel first": forward_only_first_gradient("gpushim_fa")})
    assert outcomes == {"forward-only kernel first": 6.0}
