"""warp.sgd_argument_order: SGD's momentum, dampening and weight decay reach the wrong kernel parameters.

The corpus runs ``warp.optim.SGD`` on Warp's CPU device over every combination
of momentum, dampening, weight decay and Nesterov, for several steps and for
scalar and vector parameters, and records the parameters and momentum buffers
after each step.
"""

from __future__ import annotations

import importlib.util
import itertools

import pytest

from gpushim.patches.warp.sgd_argument_order import patch
from tests.support import answer_in_fresh_python, applied, gate, record_corpus, run_python

GATE = gate(patch)


STEPS = 3
SETTINGS = [
    {"momentum": momentum, "dampening": dampening, "weight_decay": weight_decay, "nesterov": nesterov}
    for momentum, dampening, weight_decay, nesterov in itertools.product((0.0, 0.9), (0.0, 0.25), (0.0, 0.1), (0, 1))
]


def _warp():
    import warp
    import warp.optim

    warp.config.quiet = True
    warp.init()
    return warp


def run_setting(setting: dict, lr: float = 0.1) -> list:
    """Parameters and momentum buffers after each of STEPS steps, for a float32 and a vec3 parameter."""
    warp = _warp()
    params = [
        warp.array([1.0, -2.0, 0.5], dtype=warp.float32, device="cpu"),
        warp.array([[1.0, 2.0, 3.0], [-1.0, 0.0, 4.0]], dtype=warp.vec3, device="cpu"),
    ]
    grads = [
        warp.array([0.1, 0.2, -0.3], dtype=warp.float32, device="cpu"),
        warp.array([[0.5, -0.5, 0.25], [0.0, 1.0, -2.0]], dtype=warp.vec3, device="cpu"),
    ]
    optimizer = warp.optim.SGD(params, lr=lr, **setting)
    history = []
    for _ in range(STEPS):
        optimizer.step(grads)
        history.append({"params": [p.numpy().tolist() for p in params], "b": [b.numpy().tolist() for b in optimizer.b]})
    return history


def run_corpus() -> dict:
    outcomes = {
        ", ".join(f"{key}={value}" for key, value in setting.items()): run_setting(setting) for setting in SETTINGS
    }
    warp = _warp()
    params = warp.array([1.0, 2.0], dtype=warp.float32, device="cpu")
    grad = warp.array([0.1, 0.2], dtype=warp.float32, device="cpu")
    warp.optim.SGD.step_detail(grad, warp.zeros_like(params), 0.1, 0.9, 0.0, 0.0, False, 1, params)
    outcomes["step_detail called directly"] = params.numpy().tolist()
    try:
        warp.optim.SGD.step_detail(grad, params)
    except TypeError as error:
        outcomes["step_detail missing arguments"] = {"raises": [type(error).__name__, str(error)]}
    return outcomes


def issue_example() -> list:
    """SGD(lr=0.1, momentum=0.9) on [1, 2] with gradient [0.1, 0.2], two steps."""
    warp = _warp()
    params = warp.array([1.0, 2.0], dtype=warp.float32, device="cpu")
    grad = warp.array([0.1, 0.2], dtype=warp.float32, device="cpu")
    optimizer = warp.optim.SGD([params], lr=0.1, momentum=0.9)
    steps = []
    for _ in range(2):
        optimizer.step([grad])
        steps.append([round(value, 6) for value in params.numpy().tolist()])
    return steps


@GATE.ends_only
def test_needed_momentum_acts_as_weight_decay_without_gpushim():
    assert issue_example() == [[0.9, 1.8], [0.809, 1.618]]


@GATE.ends_only
def test_effective_torch_semantics_with_gpushim():
    with applied(patch):
        assert issue_example() == [[0.99, 1.98], [0.971, 1.942]]


@GATE.ends_only
@pytest.mark.parametrize(
    "prelude", ["import gpushim.auto\nimport warp.optim", "import warp.optim\nimport gpushim.auto"]
)
def test_effective_with_gpushim_auto_before_or_after_warp_optim(prelude):
    code = f"{prelude}\nfrom gpushim.patches.warp.sgd_argument_order import patch"
    assert answer_in_fresh_python(code, "patch.probe()") is None


@GATE.ends_only
def test_effective_for_code_that_imports_only_the_module_defining_sgd():
    """From 1.10 that is the private ``warp._src.optim.sgd``, which ``warp.optim`` re-exports."""
    defining = "warp._src.optim.sgd" if importlib.util.find_spec("warp._src") else "warp.optim.sgd"
    finished = run_python(f"import gpushim.auto, gpushim, {defining}\nprint(gpushim.record({patch.id!r}).state)")
    assert finished.stdout.split() == ["applied"], finished.stderr[-3000:]


@GATE.ends_only
def test_optimizer_made_before_the_patch_is_fixed_too():
    warp = _warp()
    params = warp.array([1.0, 2.0], dtype=warp.float32, device="cpu")
    optimizer = warp.optim.SGD([params], lr=0.1, momentum=0.9)
    with applied(patch):
        optimizer.step([warp.array([0.1, 0.2], dtype=warp.float32, device="cpu")])
    assert [round(value, 6) for value in params.numpy().tolist()] == [0.99, 1.98]


@GATE.recorded_only
def test_faithful_corpus_matches_the_fixed_release():
    """Recorded patched on the affected releases and unpatched on 1.11.0; the matrix compares the files."""
    outcomes = record_corpus(patch, run_corpus)
    first = outcomes["momentum=0.9, dampening=0.0, weight_decay=0.0, nesterov=0"][0]["params"][0]
    assert [round(value, 6) for value in first] == [0.99, -2.02, 0.53]


@GATE.unaffected_only
def test_harmless_step_detail_is_warps_own():
    warp = _warp()
    before = vars(warp.optim.SGD)["step_detail"]
    with applied(patch):
        assert vars(warp.optim.SGD)["step_detail"] is before
    assert type(before) is staticmethod and not hasattr(before.__func__, "__wrapped__")
