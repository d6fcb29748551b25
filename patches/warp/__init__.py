"""Patches for NVIDIA Warp: ``warp`` as installed by ``warp-lang`` (PyPI's ``warp`` is another project)."""

TARGET = "warp"
DISTRIBUTIONS = ("warp-lang",)
