"""Unusable gpushim patches, each in the way its entry point or module says."""
