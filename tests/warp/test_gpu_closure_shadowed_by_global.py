"""warp.closure_shadowed_by_global on a CUDA device: the fix's regression test, in kernels built for ``cuda``.

NVIDIA/warp@fed821d01 (1.3.2) adds ``test_closure_precedence`` to
``warp/tests/test_compile_consts.py``, run on every device: beside a global
``SHADOWED_GLOBAL = wp.constant(17)``, a kernel defined in the test closes over
``SHADOWED_GLOBAL = wp.constant(42)`` and expects 42.  Names are resolved by
the code generator before any device is chosen, so the CPU corpus covers the
same code; these tests show it in a CUDA build, where the script writes the
value the kernel read instead of ``wp.expect_eq``'s printout.  Without a
device they are skipped with "no CUDA device" (tests/gpu.py), and none of
them has run yet.
"""

from __future__ import annotations

from gpushim.patches.warp.closure_shadowed_by_global import patch
from tests.gpu import on_gpu
from tests.support import gate
from tests.warp.gpu_scripts import run_script

GATE = gate(patch)

REGRESSION_TEST = """
import warp as wp

wp.config.quiet = True
SHADOWED_GLOBAL = wp.constant(17)


def closure_kernel():
    SHADOWED_GLOBAL = wp.constant(42)

    @wp.kernel
    def closure_kernel(out: wp.array(dtype=int)):
        out[0] = SHADOWED_GLOBAL

    return closure_kernel


out = wp.zeros(1, dtype=int, device="cuda")
wp.launch(closure_kernel(), dim=1, inputs=[out], device="cuda")
result = {"value": int(out.numpy()[0]), "device": str(out.device)}
"""


@on_gpu
@GATE.affected_only
def test_needed_the_kernel_reads_the_global_without_gpushim(tmp_path):
    result = run_script(REGRESSION_TEST, tmp_path, gpushim=False)
    assert result["device"].startswith("cuda")
    assert result["value"] == 17


@on_gpu
@GATE.recorded_only
def test_the_kernel_reads_its_closure_with_gpushim(tmp_path):
    result = run_script(REGRESSION_TEST, tmp_path, gpushim=True)
    assert result["device"].startswith("cuda")
    assert result["value"] == 42
