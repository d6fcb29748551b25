"""cupy.copyto_python_scalar: Python scalars into CuPy arrays under NumPy 2 (cupy/cupy#8391).

On CuPy 13.2.0 with NumPy 2, ``cupy.copyto(x, 1.5)``, ``cupy.full``,
``cupy.full_like``, ``cupy.select`` and ``cupy.unwrap`` raise NumPy's TypeError
from ``numpy.can_cast``; with gpushim they decide the cast as 13.3.0 does and
hand the copy kernel what 13.3.0 hands it.  Everything runs on the CPU up to
the copy kernel (see ``copyto_corpus``).
"""

import pytest

cupy = pytest.importorskip("cupy")

import numpy

from gpushim import device
from gpushim.patches.cupy import copyto_python_scalar
from gpushim.patches.cupy.copyto_python_scalar import patch
from tests.cupy import copyto_corpus
from tests.support import gate, record_faithful

NUMPY2 = int(numpy.__version__.split(".")[0]) >= 2
GATE = gate(patch)
CAN_CAST_REFUSAL = "TypeError: can_cast() does not support Python ints"


# Each call of copyto that receives a Python scalar in 13.2.0's source, by a case of the corpus.
CALL_SITES = {
    "cupy/_creation/basic.py:325 full": "full float 1.5 dtype=float32",
    "cupy/_creation/basic.py:370 full_like": "full_like int -1 -> int32",
    "cupy/_indexing/indexing.py:216 select": "select default int 0",
    "cupy/_math/trigonometric.py:153 unwrap": "unwrap float64 period=6.283185307179586",
    "cupy/_math/trigonometric.py:156 unwrap": "unwrap int64 period=7",
}


def refused(outcome):
    return outcome.get("error", "").startswith(CAN_CAST_REFUSAL)


def basic_module():
    from cupy._manipulation import basic

    return basic


@GATE.affected_only
@pytest.mark.parametrize("site", sorted(CALL_SITES))
def test_needed_each_call_site_raises_numpy2_typeerror_without_gpushim(site):
    case = CALL_SITES[site]
    outcome = copyto_corpus.run({case: copyto_corpus.call_site_cases()[case]})[case]
    assert refused(outcome), outcome


@GATE.affected_only
def test_needed_every_python_scalar_fill_is_refused_without_gpushim():
    outcomes = copyto_corpus.run(copyto_corpus.copyto_cases())
    kinds = ("copyto bool", "copyto int", "copyto float", "copyto complex")
    python = [case for case in outcomes if case.startswith(kinds)]
    assert len(python) == len(copyto_corpus.PYTHON_SCALARS) * len(copyto_corpus.DTYPES) * len(copyto_corpus.CASTINGS)
    assert all(refused(outcomes[case]) for case in python)
    numpy_scalars = [case for case in outcomes if case.startswith("copyto numpy")]
    assert not any(refused(outcomes[case]) for case in numpy_scalars)


@GATE.affected_only
@pytest.mark.parametrize("site", sorted(CALL_SITES))
def test_effective_each_call_site_reaches_the_kernel_with_the_python_scalar(site, gpushim_patched):
    case = CALL_SITES[site]
    outcome = copyto_corpus.run({case: copyto_corpus.call_site_cases()[case]})[case]
    assert any(call[0].startswith("builtins.") for call in outcome["kernel"]), outcome


@GATE.recorded_only
def test_faithful_fills_of_the_corpus(gpushim_patched):
    """Patched 13.2.0 records what unpatched 13.3.0 records; the matrix compares the files."""
    outcomes = {
        **copyto_corpus.run(copyto_corpus.copyto_cases()),
        **copyto_corpus.run(copyto_corpus.call_site_cases()),
        **copyto_corpus.trace_fusion(),
    }
    assert len(outcomes) > 3500
    assert not [case for case, outcome in outcomes.items() if refused(outcome) and "first" not in case]
    record_faithful(patch, outcomes)


@GATE.affected_only
def test_wrapper_leaves_numpy_scalars_and_arrays_to_the_release(gpushim_patched):
    """Only exact bool, int, float and complex sources take 13.3.0's scalar path."""
    wrapper = cupy.copyto
    assert wrapper.__wrapped__ is basic_module().copyto.__wrapped__
    released = wrapper.__wrapped__
    with copyto_corpus.dry_device() as calls:
        for source in (numpy.float32(2.5), numpy.array(1.5), cupy.empty((3,), "f")):
            calls.clear()
            wrapper(cupy.empty((3,), "f"), source, where=cupy.empty((3,), "?"))
            through_wrapper = list(calls)
            calls.clear()
            released(cupy.empty((3,), "f"), source, where=cupy.empty((3,), "?"))
            assert through_wrapper == calls


def test_probe_uses_real_memory_where_a_device_is_present(monkeypatch):
    """With a CUDA device the probe never hands CuPy a made-up pointer: here, without one, CUDA refuses."""
    monkeypatch.setattr(device, "cuda_present", lambda: True)
    allocator = cupy.cuda.get_allocator()
    with pytest.raises(cupy.cuda.runtime.CUDARuntimeError):
        copyto_python_scalar._probe()
    assert cupy.cuda.get_allocator() is allocator
