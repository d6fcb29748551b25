"""cupy.random_seed_numpy2 on a CUDA device: the reproducers of cupy/cupy#8392 and #8648 seeding cuRAND.

cupy/cupy#8392, "cupy.random.seed return conversion error", reported on CuPy
13.2.0 with NumPy 2.0.0:

    cp.random.seed(1234)

and cupy/cupy#8648, "Bug when using cupy.random.seed" (its duplicate, on
13.2.0):

    import cupy as cp
    print("cupy version: ",cp.__version__):
    cp.random.seed(0)

both answered by ``TypeError: Cannot cast scalar from dtype('int64') to
dtype('uint64') according to the rule 'safe'``.  The tests marked ``gpu`` run
them with the real cuRAND in fresh interpreters: without gpushim on affected
installs they must raise; with gpushim the seed must reach cuRAND as 13.3.0
hands it over, which the draws show.  The release's ``CUPY_SEED`` variable
seeds through a path the bug does not touch (``numpy.uint64(int(value))``, on
every release), so the draws after ``cp.random.seed(s)`` with gpushim must be
those of ``CUPY_SEED=s`` without it, for the seeds of both reports, the
largest seed, and NumPy 2's integer scalars.  Without a device they are
skipped with "no CUDA device" (tests/gpu.py), and none of them has run yet.
The probe has no device branch: its cuRAND is a recorder everywhere.
"""

from __future__ import annotations

import pytest

from gpushim.patches.cupy.random_seed_numpy2 import patch
from tests.gpu import on_gpu
from tests.support import answer_in_fresh_python, gate

GATE = gate(patch)
NUMPY2_REFUSAL = "TypeError: Cannot cast scalar from dtype('int64') to dtype('uint64') according to the rule 'safe'"
SEEDS = (1234, 0, 2**64 - 1)  # cupy/cupy#8392's, cupy/cupy#8648's, and the largest

DRAW = "[cp.random.random(4).get().tolist(), cp.random.randint(0, 2**31, 4).get().tolist()]"


def in_fresh_python(code: str, gpushim: bool, env: dict[str, str] | None = None):
    """``result``, a JSON-able value set by ``code``, run in a fresh interpreter after ``import cupy as cp``.

    ``gpushim``: whether ``import gpushim.auto`` comes first.
    """
    prelude = "import gpushim.auto\n" if gpushim else ""
    return answer_in_fresh_python(f"{prelude}import cupy as cp\n{code}", "result", env)


@on_gpu
@GATE.affected_only
@pytest.mark.parametrize("seed", SEEDS[:2])
def test_needed_the_reproducers_raise_without_gpushim(seed):
    code = f"""
try:
    cp.random.seed({seed})
    result = "seeded"
except TypeError as error:
    result = f"TypeError: {{error}}"
"""
    assert in_fresh_python(code, gpushim=False) == NUMPY2_REFUSAL


@on_gpu
@GATE.recorded_only
@pytest.mark.parametrize("seed", SEEDS)
def test_reproducers_seed_curand_as_cupy_seed_does(seed):
    """``cp.random.seed(s)`` with gpushim draws what ``CUPY_SEED=s`` draws without it."""
    seeded = in_fresh_python(f"cp.random.seed({seed})\nresult = {DRAW}", gpushim=True)
    from_variable = in_fresh_python(f"result = {DRAW}", gpushim=False, env={"CUPY_SEED": str(seed)})
    assert seeded == from_variable
    again = in_fresh_python(f"cp.random.seed({seed})\nresult = {DRAW}", gpushim=True)
    assert again == seeded


@on_gpu
@GATE.recorded_only
def test_numpy_integer_seeds_draw_as_the_python_int():
    """NumPy 2's integer scalars and ``True`` seed as the int they hold, globally and through ``RandomState``."""
    code = f"""
import numpy
seeds = {{"int": 1234, "int64": numpy.int64(1234), "uint64": numpy.uint64(1234), "int32": numpy.int32(1234),
         "uint16": numpy.uint16(1234), "True": True, "int 1": 1}}
result = {{}}
for name, seed in seeds.items():
    cp.random.seed(seed)
    result[name] = {DRAW}
    result["RandomState " + name] = cp.random.RandomState(seed).random_sample(4).get().tolist()
"""
    result = in_fresh_python(code, gpushim=True)
    for name in ("int64", "uint64", "int32", "uint16"):
        assert result[name] == result["int"], name
        assert result[f"RandomState {name}"] == result["RandomState int"], name
    assert result["True"] == result["int 1"]
    assert result["RandomState int"] == result["int"][0]
