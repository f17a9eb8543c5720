"""What the GPU tests share: whether a CUDA GPU is here, and a rendered CUDA file built into a
shared library with nvcc (which compiles on machines without a GPU too)."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from targets import cuda as cuda_target
from targets.base import Rendered


def has_gpu() -> bool:
    smi = shutil.which("nvidia-smi")
    return bool(smi) and subprocess.run([smi, "-L"], capture_output=True).returncode == 0


def cuda_library(rendered: Rendered, folder: Path) -> Path:
    """``rendered`` written under ``folder`` and built into a shared library beside its entry."""
    rendered.write(folder)
    src = folder / rendered.entry
    lib = src.with_suffix(".so")
    res = subprocess.run(cuda_target.compile_command(src, lib), capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return lib


def gpu_function(rendered: Rendered, folder: Path, symbol: str) -> Any:
    """``symbol`` of ``rendered`` built with nvcc (the test skipped without nvcc, and after the
    build, without a GPU)."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not found")
    lib = cuda_library(rendered, folder)
    if not has_gpu():
        pytest.skip("no CUDA GPU")
    return getattr(ctypes.CDLL(str(lib)), symbol)
