"""A rendered Triton translation written to disk and imported, as the tests that run it share."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from targets.base import Rendered


def triton_module(rendered: Rendered, folder: Path, name: str) -> ModuleType:
    """``rendered``'s Triton file written under ``folder`` and imported as module ``name``,
    registered in ``sys.modules`` (Triton's JIT reads a kernel's source through its module)."""
    (path,) = [p for p in rendered.write(folder) if p.name.endswith("_triton.py")]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod
