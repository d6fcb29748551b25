"""Patches for a library gpushim does not know: its import name and the distributions that install it."""

TARGET = "gpushim_example_target"
DISTRIBUTIONS = ("gpushim-example-target",)
