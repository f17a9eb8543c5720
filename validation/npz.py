"""Reading case files (``.npz``) with numpy alone: what a sandboxed worker may import."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def read_npz(path: Path | str) -> dict[str, dict[str, Any]]:
    """An npz of case data by key prefix: ``s:`` scalars (unwrapped), ``a:`` input
    arrays, ``r:`` reference outputs -> ``{"s": {...}, "a": {...}, "r": {...}}``."""
    parts: dict[str, dict[str, Any]] = {}
    with np.load(path, allow_pickle=False) as z:
        for key in z.files:
            kind, _, name = key.partition(":")
            parts.setdefault(kind, {})[name] = z[key][()] if kind == "s" else z[key]
    return parts
