"""Patches for NVIDIA DALI: the ``nvidia.dali`` module and its CUDA-specific distributions."""

TARGET = "nvidia.dali"
DISTRIBUTIONS = (
    "nvidia-dali-cuda120",
    "nvidia-dali-cuda110",
    "nvidia-dali-cuda130",
    "nvidia-dali-nightly-cuda120",
    "nvidia-dali-nightly-cuda110",
    "nvidia-dali-nightly-cuda130",
    "nvidia-dali-weekly-cuda120",
    "nvidia-dali-weekly-cuda110",
    "nvidia-dali-weekly-cuda130",
)
