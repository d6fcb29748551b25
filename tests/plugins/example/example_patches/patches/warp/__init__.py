"""Patches for NVIDIA Warp, a library gpushim knows: its target and distributions are gpushim's."""
