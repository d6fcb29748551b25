"""warp.launch_errors: up to 1.14.x, a CUDA launch the driver rejects returns as if it ran.

The release's own replay, ``Launch.launch``, runs on the CPU against a
pretend CUDA device: a recorded launch whose device, stream and hooks are
stand-ins, and a pretend native launcher bound on the real runtime's native
library, returning the ``CUresult`` a test gives it (1, invalid argument, as
for a block of too many threads; 701, too many resources requested) and
recording its calls.  ``wp.launch`` calls the launcher the same way, which
only a device shows: the GPU tests launch a block of 2048 threads.

The corpus: a forward and an adjoint replay, accepted and rejected.
"""

from __future__ import annotations

import types

import pytest

from gpushim.patches.warp.launch_errors import LAUNCHERS, patch
from tests.support import answer_in_fresh_python, applied, gate, record_corpus

GATE = gate(patch)
REJECTED = "Error launching kernel: scale on device cuda:0: Warp CUDA error 1: invalid argument"


class PretendLauncher:
    """Warp's native CUDA launcher, as a driver that answers ``result`` to every launch, and its last error."""

    ERRORS = {1: "invalid argument", 701: "too many resources requested for launch"}

    def __init__(self) -> None:
        self.result = 0
        self.calls = 0
        self.error = ""

    def __call__(self, *args) -> int:
        self.calls += 1
        if self.result:
            self.error = f"Warp CUDA error {self.result}: {self.ERRORS[self.result]}"
        return self.result


class PretendDevice:
    is_cpu = False
    context = 0x7E0000001000
    stream = types.SimpleNamespace(cuda_stream=0x7E0000003000)

    def __str__(self) -> str:
        return "cuda:0"


def context():
    import warp

    return warp._src.context if hasattr(warp, "_src") else warp.context


@pytest.fixture
def launcher(monkeypatch) -> PretendLauncher:
    """The runtime's native library with a pretend launcher, its error string and no stream capturing."""
    import warp

    warp.config.quiet = True
    warp.init()
    runtime = context().runtime
    pretend = PretendLauncher()
    name = next(name for name in LAUNCHERS if name in vars(runtime.core))
    monkeypatch.setattr(runtime.core, name, pretend)
    for capturing in ("wp_cuda_stream_is_capturing", "cuda_stream_is_capturing"):
        monkeypatch.setattr(runtime.core, capturing, lambda stream: 0, raising=False)
    monkeypatch.setattr(runtime, "get_error_string", lambda: pretend.error)
    return pretend


def replay(adjoint: bool = False):
    """The release's ``Launch.launch`` of a recorded launch of kernel ``scale`` on the pretend ``cuda:0``.

    The launch holds what any release's replay reads of it, 1.2.0's to 1.15.0's.
    """
    recorded = object.__new__(context().Launch)
    hooks = types.SimpleNamespace(forward=0x10, backward=0x20, forward_smem_bytes=0, backward_smem_bytes=0)
    vars(recorded).update(
        kernel=types.SimpleNamespace(key="scale"),
        device=PretendDevice(),
        hooks=hooks,
        params=[],
        params_addr=None,
        bounds=types.SimpleNamespace(size=1),
        max_blocks=0,
        block_dim=2048,
        adjoint=adjoint,
        module_exec=None,
        grid_stride=True,  # from here on, what 1.15.0 reads too
        cluster_dim=None,
        fwd_args=None,
        adj_args=None,
    )
    return recorded.launch()


def run_corpus(launcher: PretendLauncher) -> dict:
    outcomes = {}
    for adjoint in (False, True):
        for result in (0, 1, 701):
            launcher.result = result
            try:
                outcomes[f"adjoint={adjoint}, CUresult {result}"] = repr(replay(adjoint))
            except RuntimeError as error:
                outcomes[f"adjoint={adjoint}, CUresult {result}"] = f"RuntimeError: {error}"
    return outcomes


@GATE.affected_only
def test_needed_a_rejected_launch_returns(launcher):
    launcher.result = 1
    assert replay() is None
    assert launcher.calls == 1


@GATE.affected_only
@pytest.mark.parametrize("adjoint", [False, True])
def test_effective_a_rejected_launch_raises_naming_kernel_device_and_error(launcher, adjoint):
    launcher.result = 1
    with applied(patch), pytest.raises(RuntimeError) as raised:
        replay(adjoint)
    assert str(raised.value) == REJECTED


@GATE.affected_only
def test_an_accepted_launch_returns_as_released(launcher):
    with applied(patch):
        assert replay() is None
    assert launcher.calls == 1


@GATE.affected_only
def test_unpatch_gives_the_library_its_launcher_back(launcher):
    with applied(patch):
        pass
    name = next(name for name in LAUNCHERS if name in vars(context().runtime.core))
    assert vars(context().runtime.core)[name] is launcher


@GATE.ends_only
@pytest.mark.parametrize("prelude", ["import gpushim.auto\nimport warp", "import warp\nimport gpushim.auto"])
def test_effective_the_launcher_is_checked_whether_warp_initialises_before_or_after(prelude):
    code = (
        f"{prelude}\nwarp.config.quiet = True\nwarp.init()\n"
        "from tests.warp.test_launch_errors import LAUNCHERS, context\n"
        "core = context().runtime.core\n"
        "checked = [hasattr(vars(core)[name], '__wrapped__') for name in LAUNCHERS if name in vars(core)]"
    )
    assert answer_in_fresh_python(code, "checked") == [True]


@GATE.recorded_only
def test_faithful_corpus_matches_the_fixed_release(launcher):
    """Recorded patched on the affected releases and as released on 1.15.0; the matrix compares the files."""
    outcomes = record_corpus(patch, lambda: run_corpus(launcher))
    assert outcomes["adjoint=False, CUresult 0"] == "None"
    assert outcomes["adjoint=True, CUresult 1"] == f"RuntimeError: {REJECTED}"


@GATE.unaffected_only
def test_harmless_the_runtime_and_its_launcher_are_warps_own(launcher):
    runtime = context().runtime
    init = vars(type(runtime))["__init__"]
    with applied(patch):
        assert vars(type(runtime))["__init__"] is init
        assert all(vars(runtime.core).get(name) in (None, launcher) for name in LAUNCHERS)
