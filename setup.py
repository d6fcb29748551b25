"""The package list, derived from the tree: every library folder under patches/ is a package."""

from pathlib import Path

from setuptools import setup

LIBRARIES = sorted(path.parent.name for path in Path(__file__).parent.glob("patches/*/__init__.py"))

setup(packages=["gpushim", "gpushim.bootstrap", "gpushim.patches", *[f"gpushim.patches.{name}" for name in LIBRARIES]])
