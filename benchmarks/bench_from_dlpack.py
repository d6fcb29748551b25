"""What cupy.from_dlpack_unsupported_dtype adds to each ``cupy.from_dlpack`` call, in microseconds.

Run it with the Python of an environment that has an affected CuPy (13.3.0, say) and gpushim:

    python benchmarks/bench_from_dlpack.py

Inputs are float32 tensors, which CuPy accepts: the price every good call pays.  Each figure is
the fastest of several batches, the arms interleaved.  Printed, never asserted; the target is
1 microsecond or less, wrapper included.

- A capsule: CuPy's own ``from_dlpack``, the same function under a wrapt wrapper that does
  nothing (what any gpushim wrapper costs), and the patched one.  The patch's own share is
  patched minus do-nothing wrapper.
- An object with ``__dlpack__``: end to end as above when a GPU is present.  Without one,
  CuPy's stream lookup fails and reports it on every call, which drowns a microsecond, so
  what the patch adds is timed in two parts: CuPy's export call on the object
  (``__dlpack__(stream=...)``) on the producer itself, against the same call through gpushim's
  wrapper function, which hands it the stand-in that keeps the capsule; plus wrapt's share as
  measured on the capsule path.

The capsules are hand-made (tests/cupy/dlpack_capsules.py) and point at memory nobody touches.
"""

from __future__ import annotations

import operator
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cupy  # noqa: E402
import wrapt  # noqa: E402
from timing import applied_here, fastest_per_call_us, print_wrapped, ready, title  # noqa: E402

from gpushim.device import cuda_present  # noqa: E402
from gpushim.patches.cupy.from_dlpack_unsupported_dtype import patch  # noqa: E402
from tests.cupy.dlpack_capsules import Producer, make_capsule  # noqa: E402

BATCH = 200
ROUNDS = 60


def main() -> None:
    print(title(__file__, __doc__))
    record = applied_here(patch)
    if record is None:
        return
    patched = cupy.from_dlpack
    original = patched.__wrapped__
    arms = {
        "library": original,
        "do-nothing wrapper": wrapt.FunctionWrapper(original, lambda wrapped, instance, args, kwargs: wrapped(*args)),
        "patched": patched,
    }
    gpu = cuda_present()
    print(f"{record['distribution']} {record['installed_version']}, Python {sys.version.split()[0]}, GPU: {gpu}")

    capsule_times = fastest_per_call_us(ready(arms), lambda: (make_capsule(bits=32)[0],), BATCH, ROUNDS)
    print_wrapped("from_dlpack(capsule)", capsule_times)
    wrapt_us = capsule_times["do-nothing wrapper"] - capsule_times["library"]

    if gpu:
        times = fastest_per_call_us(ready(arms), lambda: (Producer(bits=32),), BATCH, ROUNDS)
        print_wrapped("from_dlpack(__dlpack__ object)", times)
    else:
        # CuPy's call of the producer's __dlpack__, as a C-level callable like CuPy's function,
        # bare and through gpushim's wrapper function called directly, which hands it the
        # stand-in that keeps the capsule; wrapt's own share is the one measured on CuPy's
        # compiled function above (wrapt costs several times more around other callables).
        export = operator.methodcaller("__dlpack__", stream=1)
        wrapper = patched._self_wrapper
        arms = {"producer": export, "patched": lambda producer: wrapper(export, None, (producer,), {})}
        times = fastest_per_call_us(ready(arms), lambda: (Producer(),), BATCH, ROUNDS)
        own = times["patched"] - times["producer"]
        print(
            f"__dlpack__ object, CuPy's export call on it (no GPU): producer {times['producer']:.2f} us, "
            f"through gpushim's wrapper function and stand-in {times['patched']:.2f} us"
        )
        print(
            f"  added per call: {own + wrapt_us:.2f} us in all, of which wrapt {wrapt_us:.2f} us "
            f"and the patch's own code {own:.2f} us"
        )


if __name__ == "__main__":
    main()
