"""warp.vec_slice_from_torch: a vector slice assigned from a sized iterable that is no sequence (NVIDIA/warp GH-1121).

``ctypes`` refuses torch tensors, dict views and any such iterable; Warp
before 1.11.0 then checks the items and assigns none of them.  Everything
runs in this process: the corpus needs no torch; the torch cases run where
the cell installs it (the pinned CPU build).
"""

from __future__ import annotations

import pytest

from gpushim.patches.warp.vec_slice_from_torch import patch
from tests.support import applied, gate, record_corpus

GATE = gate(patch)

import warp  # noqa: E402

warp.config.quiet = True


class Sized:
    """A sized iterable that is not a sequence: no indexing, as a torch tensor has none for ``ctypes``."""

    def __init__(self, items):
        self.items = list(items)

    def __len__(self):
        return len(self.items)

    def __iter__(self):
        return iter(self.items)


VALUES = {
    "dict keys": lambda items: dict.fromkeys(items).keys(),
    "dict values": lambda items: {str(index): item for index, item in enumerate(items)}.values(),
    "sized iterable": Sized,
    "list": list,
    "tuple": tuple,
    "sized iterable, one too many": lambda items: Sized([*items, 9]),
    "sized iterable, one too few": lambda items: Sized(items[1:]),
    "sized iterable with a str": lambda items: Sized(["x", *items[1:]]),
    "sized iterable of ints": lambda items: Sized(int(item) for item in items),
}
SLICES = {"[1:]": slice(1, None), "[:2]": slice(None, 2), "[::2]": slice(None, None, 2), "[-2:]": slice(-2, None)}


def vector_types() -> dict:
    return {
        "vec3f": warp.vec3f,
        "vec2d": warp.vec2d,
        "vec4i": warp.vec4i,
        "quatf": warp.quatf,
        "vec(5, float32)": warp.vec(length=5, dtype=warp.float32),
    }


def assigned(vector_type, key, value) -> object:
    vector = vector_type()
    try:
        vector[key] = value
    except Exception as error:
        return f"{type(error).__name__}: {error}"
    return list(vector)


def run_corpus() -> dict:
    outcomes = {}
    for type_name, vector_type in vector_types().items():
        for slice_name, key in SLICES.items():
            items = [float(index + 1) for index in range(len(range(*key.indices(vector_type._length_))))]
            for value_name, make in VALUES.items():
                outcomes[f"{type_name}{slice_name} = {value_name}"] = assigned(vector_type, key, make(items))
    return outcomes


TELLING = {
    "vec3f[1:] = dict keys": ([0.0, 0.0, 0.0], [0.0, 1.0, 2.0]),
    "quatf[::2] = sized iterable": ([0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 2.0, 0.0]),
    "vec4i[-2:] = sized iterable of ints": ([0, 0, 0, 0], [0, 0, 1, 2]),
    "vec(5, float32)[:2] = dict values": ([0.0] * 5, [1.0, 2.0, 0.0, 0.0, 0.0]),
}


@GATE.affected_only
def test_needed_the_slice_keeps_its_old_values_without_gpushim():
    outcomes = run_corpus()
    assert {case: outcomes[case] for case in TELLING} == {case: kept for case, (kept, _) in TELLING.items()}


@GATE.affected_only
def test_effective_each_item_is_assigned_with_gpushim():
    with applied(patch):
        outcomes = run_corpus()
    assert {case: outcomes[case] for case in TELLING} == {case: fixed for case, (_, fixed) in TELLING.items()}


@GATE.affected_only
def test_a_vector_type_made_after_the_patch_is_fixed_and_restored_by_unpatch():
    with applied(patch):
        vector_type = warp.vec(length=6, dtype=warp.float64)
        assert assigned(vector_type, slice(4, None), Sized([1.0, 2.0]))[4:] == [1.0, 2.0]
    assert assigned(vector_type, slice(4, None), Sized([1.0, 2.0]))[4:] == [0.0, 0.0]


@GATE.affected_only
def test_needed_and_effective_with_a_torch_tensor():
    torch = pytest.importorskip("torch")
    assert assigned(warp.vec3, slice(1, None), torch.tensor([1.0, 2.0])) == [0.0, 0.0, 0.0]
    with applied(patch):
        assert assigned(warp.vec3, slice(1, None), torch.tensor([1.0, 2.0])) == [0.0, 1.0, 2.0]
        assert assigned(warp.vec3d, slice(None, 2), torch.tensor([1, 2])) == [1.0, 2.0, 0.0]


@GATE.recorded_only
def test_faithful_the_corpus_matches_the_fixed_release():
    """Patched releases before 1.11.0 record what unpatched 1.11.0 records; the matrix compares the files."""
    outcomes = record_corpus(patch, run_corpus)
    assert {case: outcomes[case] for case in TELLING} == {case: fixed for case, (_, fixed) in TELLING.items()}
