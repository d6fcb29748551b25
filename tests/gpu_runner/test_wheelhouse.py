"""A wheelhouse for hosts that take files only in limited sizes: wheels cut into pieces, joined again whole."""

from __future__ import annotations

import os

from matrix.wheelhouse import join, split


def test_a_wheel_larger_than_the_size_is_replaced_by_its_pieces_and_joined_whole(tmp_path):
    house, joined = tmp_path / "house", tmp_path / "joined"
    house.mkdir()
    joined.mkdir()
    large, small = os.urandom(2500), os.urandom(1000)
    (house / "large-1.0-py3-none-any.whl").write_bytes(large)
    (house / "small-1.0-py3-none-any.whl").write_bytes(small)

    split(house, 1000)
    assert {path.name: path.stat().st_size for path in house.iterdir()} == {
        "large-1.0-py3-none-any.whl.part000": 1000,
        "large-1.0-py3-none-any.whl.part001": 1000,
        "large-1.0-py3-none-any.whl.part002": 500,
        "small-1.0-py3-none-any.whl": 1000,
    }
    join(house, joined)
    assert [path.name for path in joined.iterdir()] == ["large-1.0-py3-none-any.whl"]
    assert (joined / "large-1.0-py3-none-any.whl").read_bytes() == large
