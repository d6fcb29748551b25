"""warp.and_or_short_circuit on a CUDA device: ``and``/``or`` in kernels built for ``cuda``.

NVIDIA/warp#1329 reports ``if arr and arr[idx] == 0`` reading through a null
pointer when ``arr`` is None; the fix (NVIDIA/warp@a72c39d4c, in 1.13.0) adds
regression tests that launch such guards with None and with an array on every
device.  Without the fix the read is an illegal address, which leaves the
CUDA context unusable for the rest of the process, so the bug is asserted
here by what cannot crash: a call on the right of an ``and`` or ``or`` that
the left side decides runs anyway (an atomic counter), on ``device="cuda"``.
With gpushim and ``GPUSHIM_ENABLE`` naming the patch, the counter stays at 0
and the regression tests' guards give 1.13.0's values.  Without a device they
are skipped with "no CUDA device" (tests/gpu.py), and none of them has run yet.
"""

from __future__ import annotations

from gpushim.patches.warp.and_or_short_circuit import patch
from tests.gpu import on_gpu
from tests.support import gate
from tests.warp.gpu_scripts import run_script

GATE = gate(patch)
ENABLE = {"GPUSHIM_ENABLE": patch.id}

DECIDED = """
import warp as wp

wp.config.quiet = True


@wp.func
def counted(calls: wp.array(dtype=wp.int32)):
    wp.atomic_add(calls, 0, 1)
    return 1


@wp.kernel
def decided(calls: wp.array(dtype=wp.int32)):
    i = wp.tid()
    if i > 0 and counted(calls) > 0:
        calls[1] = 1
    if i < 1 or counted(calls) > 0:
        calls[2] = 1


calls = wp.zeros(3, dtype=wp.int32, device="cuda")
wp.launch(decided, dim=1, inputs=[calls], device="cuda")
result = {"calls": calls.numpy().tolist(), "device": str(calls.device)}
"""

# The fix's regression tests, kernels and launches as upstream wrote them.
REGRESSION_TESTS = """
import warp as wp

wp.config.quiet = True


@wp.kernel
def short_circuit_and(arr: wp.array(dtype=int), result: wp.array(dtype=int)):
    tid = wp.tid()
    if arr and tid >= 0 and arr[tid] == 0:
        result[tid] = -1
        return
    result[tid] = 1


@wp.kernel
def short_circuit_or(arr: wp.array(dtype=int), result: wp.array(dtype=int)):
    tid = wp.tid()
    if not arr or tid < 0 or arr[tid] == 0:
        result[tid] = -1
        return
    result[tid] = 1


result = {}
values = wp.zeros(3, dtype=int, device="cuda")
for name, kernel, array in (
    ("and None", short_circuit_and, None),
    ("and an array", short_circuit_and, wp.array([0, 1, 0], dtype=int, device="cuda")),
    ("or None", short_circuit_or, None),
    ("or an array", short_circuit_or, wp.array([5, 6, 7], dtype=int, device="cuda")),
):
    wp.launch(kernel, dim=3, inputs=[array, values], device="cuda")
    result[name] = values.numpy().tolist()
"""


@on_gpu
@GATE.affected_only
def test_needed_the_call_the_left_side_decides_runs_without_gpushim(tmp_path):
    result = run_script(DECIDED, tmp_path, gpushim=False)
    assert result["device"].startswith("cuda")
    assert result["calls"] == [2, 0, 1]


@on_gpu
@GATE.affected_only
def test_opt_in_with_gpushim_but_no_gpushim_enable_the_call_still_runs(tmp_path):
    assert run_script(DECIDED, tmp_path, gpushim=True)["calls"] == [2, 0, 1]


@on_gpu
@GATE.recorded_only
def test_effective_enabled_the_call_the_left_side_decides_does_not_run(tmp_path):
    assert run_script(DECIDED, tmp_path, gpushim=True, env=ENABLE)["calls"] == [0, 0, 1]


@on_gpu
@GATE.recorded_only
def test_the_regression_tests_guards_never_read_through_none_with_gpushim_enabled(tmp_path):
    assert run_script(REGRESSION_TESTS, tmp_path, gpushim=True, env=ENABLE) == {
        "and None": [1, 1, 1],
        "and an array": [-1, 1, -1],
        "or None": [-1, -1, -1],
        "or an array": [1, 1, 1],
    }
