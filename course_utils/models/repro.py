"""Reproducibility: seeding, thread count and device choice.

The one home of ``seed_everything`` and ``get_device``; every notebook's set-up cell imports them
from ``course_utils`` itself (``from course_utils import get_device, seed_everything``)."""

from __future__ import annotations

import os
import random

import numpy as np
import torch

from ..core.validation import require_nonnegative_int, require_positive_int


def seed_everything(seed: int = 0, threads: int | None = 1) -> None:
    """Seed Python's ``random``, NumPy and PyTorch (CPU and all GPUs) with ``seed``.

    ``threads`` pins PyTorch's CPU thread count (default 1): results of training
    on the CPU can differ in the last digits between thread counts, so a fixed
    count makes a notebook print the same numbers on a 2-core CI machine and on
    an 8-core laptop. Pass ``None`` to leave the thread count alone.
    """
    require_nonnegative_int(seed=seed)
    if threads is not None:
        require_positive_int(threads=threads)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device
    if threads is not None:
        torch.set_num_threads(threads)


DEVICE_VARIABLE = "COURSE_DEVICE"
DEVICE_CHOICES = ("auto", "cpu", "cuda", "mps")


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return mps is not None and mps.is_available()


def get_device() -> torch.device:
    """The device the notebooks train on, chosen by the environment variable ``COURSE_DEVICE``.

    - ``auto`` (the default, also when the variable is unset or empty): CUDA if a GPU is
      present, else Apple's MPS if present, else the CPU;
    - ``cpu``, ``cuda`` or ``mps``: that device; ValueError if it is not available here.

    Any other value raises ValueError. The test suite sets ``COURSE_DEVICE=cpu`` (conftest.py),
    so stored notebook outputs are compared with a CPU run on every machine; run the notebooks
    with ``COURSE_DEVICE=cuda`` to train on a GPU. Case and surrounding spaces are ignored.
    """
    choice = os.environ.get(DEVICE_VARIABLE, "").strip().lower() or "auto"
    if choice not in DEVICE_CHOICES:
        raise ValueError(f"{DEVICE_VARIABLE}={os.environ[DEVICE_VARIABLE]!r} is not one of {', '.join(DEVICE_CHOICES)}")
    available = {"cpu": True, "cuda": torch.cuda.is_available(), "mps": _mps_available()}
    if choice == "auto":
        return torch.device(next(d for d in ("cuda", "mps", "cpu") if available[d]))
    if not available[choice]:
        raise ValueError(
            f"{DEVICE_VARIABLE}={choice} but no {choice.upper()} device is available on this machine; "
            f"use {DEVICE_VARIABLE}=auto or cpu"
        )
    return torch.device(choice)
