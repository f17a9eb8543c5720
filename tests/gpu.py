"""What the GPU tests share: whether a CUDA GPU is here, and a rendered CUDA file built into a
shared library with its CMakeLists (nvcc compiles on machines without a GPU too)."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from targets.base import Rendered
from tests.kt_builds import project_library


def has_gpu() -> bool:
    smi = shutil.which("nvidia-smi")
    return bool(smi) and subprocess.run([smi, "-L"], capture_output=True).returncode == 0


def cuda_library(rendered: Rendered, folder: Path) -> Path:
    """``rendered`` written under ``folder`` and built into a shared library with the CUDA
    target's CMakeLists."""
    return project_library("cuda", [rendered], folder)


def gpu_function(rendered: Rendered, folder: Path, symbol: str) -> Any:
    """``symbol`` of ``rendered`` built with nvcc (the test skipped without nvcc, and after the
    build, without a GPU)."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not found")
    lib = cuda_library(rendered, folder)
    if not has_gpu():
        pytest.skip("no CUDA GPU")
    return getattr(ctypes.CDLL(str(lib)), symbol)
