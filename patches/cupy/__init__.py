"""Patches for CuPy: every distribution that installs the ``cupy`` module."""

TARGET = "cupy"
DISTRIBUTIONS = (
    "cupy-cuda12x",
    "cupy-cuda11x",
    "cupy-cuda13x",
    "cupy",
    "cupy-rocm-5-0",
    "cupy-rocm-4-3",
    "cupy-rocm-6-0",
)
