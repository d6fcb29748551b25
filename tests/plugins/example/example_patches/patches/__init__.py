"""This distribution's gpushim patches, one folder per library, as gpushim's own ``patches/`` is laid out."""
