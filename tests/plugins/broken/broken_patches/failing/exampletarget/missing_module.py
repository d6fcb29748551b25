import gpushim_broken_dependency  # noqa: F401
