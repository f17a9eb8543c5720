"""Building rendered C++ targets for a test as users build them: the target's emitted
CMakeLists, configured and built with cmake into a shared library (called through
tests/kt_apart.py, in a process of its own)."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from targets.base import TARGETS, Rendered, get_renderer
from validation.builds import configure_args


def project_library(target: str, rendered: Sequence[Rendered], folder: Path, workflow: str = "kt_test") -> Path:
    """Every file of ``rendered`` written under ``folder``, with the target's CMakeLists, built
    into one shared library (``lib<workflow>_<target>.so``): the path to it."""
    for r in rendered:
        r.write(folder)
    for rel, text in get_renderer(target).build_files(workflow, rendered).items():
        (folder / rel).write_text(text)
    source, build = folder / target, folder / f"build-{target}"
    extra = configure_args(TARGETS[target])
    for cmd in (["cmake", "-S", str(source), "-B", str(build), *extra], ["cmake", "--build", str(build), "-j", "2"]):
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
        assert res.returncode == 0, f"{' '.join(cmd)}\n{(res.stdout + res.stderr)[-4000:]}"
    return build / f"lib{workflow}_{target}.so"


def kokkos_library(rendered: Rendered, tmp_path: Path) -> Path:
    """``rendered`` (the Kokkos target's files) written under ``tmp_path`` and built: the library."""
    return project_library("kokkos", [rendered], tmp_path)
