"""Calls into built libraries, each in a Python process of its own.

The Kokkos libraries the tests build all link one Kokkos runtime: loaded into the pytest process
side by side, the first initializes it and the others run in it, and a scenario that initializes
and finalizes it itself leaves it finalized under the rest. Full test runs that loaded them so
failed at random places (a corrupted heap, a kernel leaving its output unchanged). The tool's own
validation runs every library in a worker process of its own (validation/worker.py); these
helpers do the same for the tests.

- ``call_apart(lib, symbol, *args)``: one C function called with numpy arrays (passed as
  pointers and written back into the caller's arrays), ints (``int``), floats (``double``) and
  one-byte ``bytes`` (``char``).
- ``run_apart(fn, *args)``: a module-level test function (it loads the library itself) run there.

Arguments travel pickled; a failure in the child (an assertion, a crash) fails the caller with
the child's output."""

from __future__ import annotations

import ctypes
import importlib
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
# a guard against a hung child only: every call here finishes in seconds
LIMIT_S = 900


@dataclass(frozen=True)
class Called:
    value: Any  # what the function returned (its C return value for call_apart)
    stderr: str


def _child(payload: Path) -> int:
    kind, where, name, args = pickle.loads(payload.read_bytes())
    if kind == "call":
        conv: list[Any] = []
        for a in args:
            if isinstance(a, np.ndarray):
                conv.append(ctypes.c_void_p(a.ctypes.data))
            elif isinstance(a, bytes):
                conv.append(ctypes.c_char(a))
            elif isinstance(a, float):
                conv.append(ctypes.c_double(a))
            else:
                conv.append(ctypes.c_int(int(a)))
        value = getattr(ctypes.CDLL(where), name)(*conv)
    else:
        value = getattr(importlib.import_module(where), name)(*args)
    payload.write_bytes(pickle.dumps((value, args)))
    return 0


def _apart(kind: str, where: str, name: str, args: tuple[Any, ...]) -> Called:
    with tempfile.TemporaryDirectory(prefix="kt-apart-") as tmp:
        payload = Path(tmp) / "payload.pickle"
        payload.write_bytes(pickle.dumps((kind, where, name, args)))
        done = subprocess.run([sys.executable, "-m", "tests.kt_apart", str(payload)], cwd=ROOT,
                              capture_output=True, text=True, timeout=LIMIT_S)
        assert done.returncode == 0, (f"{name} in a process of its own: exit {done.returncode}\n"
                                      f"{done.stdout[-3000:]}{done.stderr[-6000:]}")
        value, back = pickle.loads(payload.read_bytes())
    for mine, theirs in zip(args, back, strict=True):
        if isinstance(mine, np.ndarray):
            np.copyto(mine, theirs)
    return Called(value, done.stderr)


def call_apart(lib: Path | str, symbol: str, *args: np.ndarray | int | float | bytes) -> Called:
    """``symbol(*args)`` of the shared library ``lib`` called in a fresh process; the arrays
    among ``args`` hold what the call left in them afterwards."""
    return _apart("call", str(lib), symbol, args)


def run_apart(fn: Callable[..., Any], *args: Any) -> Called:
    """``fn(*args)`` run in a fresh process (``fn`` defined at a module's top level)."""
    return _apart("run", fn.__module__, fn.__qualname__, args)


if __name__ == "__main__":
    sys.exit(_child(Path(sys.argv[1])))
