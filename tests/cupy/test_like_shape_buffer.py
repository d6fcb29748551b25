"""cupy.like_shape_buffer: the buffer ``*_like(a, shape=...)`` lays the new shape out over (cupy/cupy#8525).

Before 13.4.0, with ``order='K'`` and a prototype neither C- nor
F-contiguous, the buffer holds ``a.size`` elements whatever the shape, and
the result's strides span past its end; with gpushim the buffer holds the
result, as in 13.4.0.  The allocations are observed as they are asked for,
on memory nobody touches (see ``like_corpus``); that the memory past the end
belongs to another array, which the release overwrites, is the business of
``test_gpu_like_shape_buffer.py``.
"""

import pytest

cupy = pytest.importorskip("cupy")

import wrapt

from gpushim.patches.cupy.like_shape_buffer import patch
from tests.cupy import like_corpus
from tests.cupy.host_copies import recorded_allocations
from tests.support import gate, record_faithful

GATE = gate(patch)
# Without a driver, the fills' first CUDA call asks for the current stream in a function that cannot raise,
# and CuPy reports the failure as unraisable before the call raises it.
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")

NEITHER = [name for name in like_corpus.PROTOTYPES if "stepped" in name or "transposed" in name or "last" in name]
NEITHER.remove("stepped slice of no rows 0x6[:, ::2]")  # no elements: contiguous both ways
FILLS = like_corpus.FUNCTIONS[1:]


def one(case):
    return like_corpus.run([case])[case]


def nbytes(prototype):
    with recorded_allocations():
        return like_corpus.PROTOTYPES[prototype]().nbytes


def new_like():
    from cupy._creation import basic

    return basic._new_like_order_and_strides


@GATE.affected_only
@pytest.mark.parametrize("prototype", NEITHER)
def test_needed_a_larger_shape_spans_past_its_buffer_without_gpushim(prototype):
    outcome = one(f"empty_like {prototype} shape=larger order=K dtype=None")
    assert outcome["allocated"] == [nbytes(prototype)]
    assert outcome["outcome"]["extent"] > nbytes(prototype)


@GATE.affected_only
@pytest.mark.parametrize("function", FILLS)
@pytest.mark.parametrize("prototype", NEITHER)
def test_needed_the_fills_get_the_prototype_s_size_without_gpushim(function, prototype):
    assert one(f"{function} {prototype} shape=larger")["allocated"] == [nbytes(prototype)]


@GATE.affected_only
def test_effective_every_result_of_the_corpus_fits_its_one_buffer(this_patch):
    results = {case: o for case, o in like_corpus.run().items() if isinstance(o["outcome"], dict)}
    assert len(results) >= 450
    assert all(len(o["allocated"]) == 1 for o in results.values())
    spilling = {case: o for case, o in results.items() if o["outcome"]["extent"] > o["allocated"][0]}
    assert not spilling


@GATE.affected_only
@pytest.mark.parametrize("function", FILLS)
@pytest.mark.parametrize("prototype", NEITHER)
def test_effective_the_fills_get_the_buffer_of_their_layout(function, prototype, this_patch):
    layout = one(f"empty_like {prototype} shape=larger order=K dtype=None")
    assert one(f"{function} {prototype} shape=larger")["allocated"] == layout["allocated"]
    assert layout["allocated"] == [layout["outcome"]["extent"]]


@GATE.recorded_only
def test_a_scalar_zero_shape_is_no_shape_and_keeps_the_prototype_s_size(gpushim_patched):
    """``shape=0``: the result has ``a.shape``; 13.3.0 and the patch give it ``a.size`` elements, 13.4.0 none."""
    with recorded_allocations() as sizes:
        result = cupy.empty_like(cupy.empty(10)[::2], shape=0)
    assert (result.shape, result.strides) == ((5,), (8,))
    assert sizes[-1] == (0 if GATE.reference else 40)


@GATE.affected_only
def test_effective_pinned_arrays_ask_no_buffer_and_get_the_release_s_answer(this_patch):
    """``cupyx.empty_like_pinned`` allocates host memory by the shape itself, through a name of its own."""
    from cupyx import _pinned_array

    with recorded_allocations() as sizes:
        a = cupy.empty((4, 6))[:, ::2]
        sizes.clear()
        answer = _pinned_array._new_like_order_and_strides(a, a.dtype, "K", (5, 7), get_memptr=False)
    assert _pinned_array._new_like_order_and_strides is new_like()
    assert answer == new_like().__wrapped__(a, a.dtype, "K", (5, 7), get_memptr=False) == ("C", [56, 8], None)
    assert sizes == []


@GATE.affected_only
@pytest.mark.parametrize(
    "args, kwargs", [((), {}), (("a", "d", "K", None, True), {}), (("a", "d"), {"order": "K", "shape_": 1})]
)
def test_effective_a_call_that_does_not_bind_is_refused_by_the_release(args, kwargs, this_patch):
    with pytest.raises(TypeError) as patched:
        new_like()(*args, **kwargs)
    with pytest.raises(TypeError) as released:
        new_like().__wrapped__(*args, **kwargs)
    assert str(patched.value) == str(released.value)


@GATE.unaffected_only
def test_harmless_not_affected_and_the_function_is_cupys_own(gpushim_patched):
    state = next(r for r in gpushim_patched.status() if r["id"] == patch.id)["state"]
    assert state == "not-affected"
    assert not isinstance(new_like(), wrapt.ObjectProxy)
    assert new_like().__module__ == "cupy._creation.basic"


@GATE.recorded_only
def test_faithful_allocations_and_layouts_of_the_corpus(gpushim_patched):
    """Patched old releases record what unpatched 13.4.0 records; the matrix compares the files.

    Every patch is applied: ``full_like`` fills through ``cupy.copyto``, which has its own under NumPy 2.
    """
    outcomes = like_corpus.run()
    assert len(outcomes) == len(like_corpus.cases()) == 1200
    record_faithful(patch, outcomes)
