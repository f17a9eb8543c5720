"""Compiling a rendered C++ target for a test: the shared library loaded with ctypes."""

from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

from targets import kokkos as kokkos_target
from targets.base import Rendered


def kokkos_library(rendered: Rendered, tmp_path: Path) -> ctypes.CDLL:
    """``rendered`` (the Kokkos target's files) written under ``tmp_path``, compiled and loaded."""
    rendered.write(tmp_path)
    src = tmp_path / rendered.entry
    lib = src.with_suffix(".so")
    res = subprocess.run(kokkos_target.compile_command(src, lib), capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-4000:]
    return ctypes.CDLL(str(lib))
