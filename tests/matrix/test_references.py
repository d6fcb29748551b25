"""Each patch's reference release is its ``fixed_in``, or the override its library's ``[references]`` states."""

from __future__ import annotations

from gpushim.catalogue import discover
from matrix.cells import load_cells, load_references, stated_references


def installed_by_cells() -> set[str]:
    """Every ``distribution-version`` some cell pins."""
    return {
        requirement.replace("==", "-")
        for spec in load_cells().values()
        for requirement in spec["install"] + spec["no-deps"] + spec["pip"]
        if "==" in requirement
    }


def test_every_patchs_reference_release_is_installed_by_some_cell():
    """A derived reference that no cell installs needs an override naming one that a cell does."""
    assert {id: release for id, release in load_references().items() if release not in installed_by_cells()} == {}


def test_an_override_names_another_release_than_the_patchs_fixed_in():
    derived = {
        id: f"{library.distributions[0]}-{library.load(id).fixed_in}"
        for library in discover("gpushim.patches")
        for id in library.ids
    }
    assert [id for id, release in stated_references().items() if release == derived[id]] == []
