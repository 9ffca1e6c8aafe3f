"""Reproducibility: seeding, thread count and device choice."""

from __future__ import annotations

import random

import numpy as np
import torch


def seed_everything(seed: int = 0, threads: int | None = 1) -> None:
    """Seed Python's ``random``, NumPy and PyTorch (CPU and all GPUs) with ``seed``.

    ``threads`` pins PyTorch's CPU thread count (default 1): results of training
    on the CPU can differ in the last digits between thread counts, so a fixed
    count makes a notebook print the same numbers on a 2-core CI machine and on
    an 8-core laptop. Pass ``None`` to leave the thread count alone.
    """
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device
    if threads is not None:
        torch.set_num_threads(threads)


def get_device() -> torch.device:
    """CUDA if a GPU is present, else Apple's MPS if present, else the CPU."""
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")
