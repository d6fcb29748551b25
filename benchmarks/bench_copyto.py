"""What cupy.copyto_python_scalar adds to each ``cupy.copyto`` call the bug does not touch, in microseconds.

Run it with the Python of an environment that has CuPy 13.2.0, NumPy 2 and gpushim:

    python benchmarks/bench_copyto.py

Three arms, interleaved, each the fastest of many short batches (benchmarks/timing.py): CuPy's own ``copyto``, the same
function under a wrapt wrapper that does nothing (what any gpushim wrapper costs), and the
patched one.  The patch's own share is patched minus do-nothing wrapper; the target is 0.25
microsecond or less.  Printed, never asserted.

Inputs take paths the bug does not touch and that end in the copy kernel, which is replaced by
a recorder that does nothing, so the figures are CuPy's Python work and the wrapper's: an array
into an array under a ``where`` mask (without a mask CuPy's array path asks the CUDA runtime for
the device, which needs a GPU), and a NumPy scalar.  Without a CUDA device the arrays get memory
nobody touches; with one they get real memory, which the recorder never writes.  The patched
Python-scalar path is timed too, for information: it is the path that raises without the patch.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cupy  # noqa: E402
import numpy  # noqa: E402
import wrapt  # noqa: E402
from timing import applied_here, fastest_per_call_us, print_wrapped, ready, title  # noqa: E402

from gpushim.device import cuda_present  # noqa: E402
from gpushim.patches.cupy.copyto_python_scalar import patch  # noqa: E402
from tests.cupy.copyto_corpus import dry_device  # noqa: E402

BATCH = 300
ROUNDS = 200


def main() -> None:
    print(title(__file__, __doc__))
    record = applied_here(patch)
    if record is None:
        return
    patched = cupy.copyto
    original = patched.__wrapped__
    arms = {
        "library": original,
        "do-nothing wrapper": wrapt.FunctionWrapper(
            original, lambda wrapped, instance, args, kwargs: wrapped(*args, **kwargs)
        ),
        "patched": patched,
    }
    print(
        f"{record['distribution']} {record['installed_version']}, NumPy {numpy.__version__}, "
        f"Python {sys.version.split()[0]}, CUDA device: {cuda_present()}"
    )
    with dry_device():
        dst, src, mask = cupy.empty((4, 3), "float32"), cupy.empty((3,), "float32"), cupy.empty((4, 3), "bool")
        under_mask = ready({name: (lambda d, s, f=f: f(d, s, where=mask)) for name, f in arms.items()})
        times = fastest_per_call_us(under_mask, lambda: (dst, src), BATCH, ROUNDS)
        print_wrapped("copyto(array, array, where=mask)", times)
        times = fastest_per_call_us(ready(arms), lambda: (dst, numpy.float32(2.5)), BATCH, ROUNDS)
        print_wrapped("copyto(array, numpy.float32)", times)
        alone = fastest_per_call_us(ready({"patched": patched}), lambda: (dst, 2.5), BATCH, ROUNDS)["patched"]
        print(f"copyto(array, 2.5), patched only (raises without the patch): {alone:.2f} us per call")


if __name__ == "__main__":
    main()
