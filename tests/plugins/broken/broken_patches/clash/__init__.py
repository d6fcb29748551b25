"""Library folders, some of them unusable."""
