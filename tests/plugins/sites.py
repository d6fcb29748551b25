"""Distributions written by hand as pip writes them, for the tests of how other distributions' patches are found."""

from __future__ import annotations

from gpushim import catalogue

OWN = catalogue.discover("gpushim.patches")
ACME = "[gpushim.patches]\nacme = fixes.patches\n"
NEW_LIBRARY = {
    "fixes/__init__.py": "raise RuntimeError('executed')\n",
    "fixes/patches/__init__.py": "raise RuntimeError('executed')\n",
    "fixes/patches/lib/__init__.py": 'TARGET = "lib"  # the module\nDISTRIBUTIONS = ("lib-dist",)\n',
    "fixes/patches/lib/one.py": "",
    "fixes/patches/lib/_helpers.py": "",
}


def distribution(site, name, entry_points, files):
    dist_info = site / f"{name.replace('-', '_')}-1.0.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (dist_info / "entry_points.txt").write_text(entry_points)
    for path, text in files.items():
        (site / path).parent.mkdir(parents=True, exist_ok=True)
        (site / path).write_text(text)
