"""Site.replace_item: an item of a dispatch table replaced in place and put back exactly."""

from __future__ import annotations

import pytest

from gpushim import ShapeError
from gpushim.site import Site


def handler(node):
    return "original"


def other(node):
    return "other"


def test_item_is_replaced_in_place_and_undo_restores_identity_and_order():
    table = {int: other, str: handler, float: other}
    before = list(table.items())
    holder = table
    site = Site()
    site.replace_item(table, str, lambda node: "patched")
    assert holder[str]("x") == "patched"
    assert site.owners == []
    site.undo()
    assert holder is table
    assert list(table.items()) == before
    assert table[str] is handler


def test_items_and_attributes_undo_latest_first():
    class Owner:
        table = {str: handler}
        method = handler

    site = Site()
    site.replace(Owner, "method", other)
    site.replace_item(Owner.table, str, other)
    site.replace_item(Owner.table, str, lambda node: "twice")
    assert site.owners == [(Owner, "method")]
    site.undo()
    assert Owner.table[str] is handler
    assert vars(Owner)["method"] is handler


def test_a_missing_key_is_a_shape_error_and_changes_nothing():
    table = {int: handler}
    site = Site()
    with pytest.raises(ShapeError, match="no item <class 'str'>"):
        site.replace_item(table, str, other)
    assert table == {int: handler}
    site.undo()
    assert table == {int: handler}
