"""Warp, whose patch ids gpushim already has."""
