"""The overlay kit: a released native function checked by its text, code inserted into a module header each time the
library formats it or adds to it, layers undone in either order, and what it binds pickled and copied as text."""

from __future__ import annotations

import copy
import pickle
import types

import pytest

from gpushim import Journal, TargetMismatch
from gpushim.overlay import Inserted, NativeFunction, Renamed

HEADER = """
CUDA_CALLABLE inline range_t iter_reverse(const range_t& r)
{
    range_t rev;
    rev.start = r.end-1;
    if (r.step) { rev.step = -r.step; }
    return rev;
}
"""
RELEASED = NativeFunction("CUDA_CALLABLE inline range_t iter_reverse(const range_t& r)", "rev.start = r.end - 1;")
INCLUDE = '#include "builtin.h"\n'
TEMPLATE = '#define BLOCK {block_dim}\n#include "builtin.h"\n#define float(x) cast_float(x)\n'


def test_a_native_function_is_found_by_its_declaration_and_what_its_body_holds_whitespace_aside():
    RELEASED.check(HEADER, "range.h")
    assert RELEASED.body(HEADER) == "{range_trev;rev.start=r.end-1;if(r.step){rev.step=-r.step;}returnrev;}"


@pytest.mark.parametrize(
    ("function", "message"),
    [
        (NativeFunction("inline range_t iter_reverse(range_t r)"), "range.h has no function inline range_t"),
        (NativeFunction(RELEASED.declaration, "rev.start = 0;"), "of range.h no longer holds 'rev.start = 0;'"),
    ],
)
def test_a_native_function_not_as_expected_is_a_target_mismatch_naming_the_header(function, message):
    with pytest.raises(TargetMismatch, match=message.replace("(", r"\(")):
        function.check(HEADER, "range.h")


def test_code_is_inserted_after_the_header_is_formatted_so_its_braces_stay_as_written():
    inserted = Inserted(TEMPLATE, INCLUDE, "", "namespace wp { int f(); }\n")
    assert inserted.format(block_dim=256) == TEMPLATE.format(block_dim=256).replace(
        INCLUDE, INCLUDE + "namespace wp { int f(); }\n"
    )


def test_code_is_inserted_where_the_header_is_prefixed_to_a_source():
    inserted = Inserted(INCLUDE, INCLUDE, "// before\n", "// after\n")
    assert inserted + "kernel();\n" == "// before\n" + INCLUDE + "// after\nkernel();\n"


def test_a_header_without_the_line_is_a_target_mismatch():
    with pytest.raises(TargetMismatch, match="the header has no line"):
        Inserted("#define X 1\n", INCLUDE, "", "code\n")


@pytest.mark.parametrize("first_undone", [0, 1])
def test_two_layers_compose_and_undo_in_either_order(first_undone):
    owner = types.SimpleNamespace(header=TEMPLATE)
    journals = [Journal(), Journal()]
    for journal, code in zip(journals, ("// one\n", "// two\n")):
        journal.replace(owner, "header", Inserted(owner.header, INCLUDE, "", code))
    assert "// two\n// one\n" in owner.header.format(block_dim=1)  # the later layer inserts next to the line
    journals[first_undone].undo()
    left = "// two\n" if first_undone == 0 else "// one\n"
    assert owner.header.format(block_dim=1) == TEMPLATE.format(block_dim=1).replace(INCLUDE, INCLUDE + left)
    journals[1 - first_undone].undo()
    assert owner.header is TEMPLATE


@pytest.mark.parametrize("text", [Inserted(TEMPLATE, INCLUDE, "", "code\n"), Renamed("div", "gpushim_div")])
def test_what_an_overlay_binds_pickles_as_its_text_and_copies_as_itself(text):
    assert type(pickle.loads(pickle.dumps(text))) is str
    assert pickle.loads(pickle.dumps(text)) == str(text)
    assert copy.copy(text) is text
    assert copy.deepcopy(text) is text
