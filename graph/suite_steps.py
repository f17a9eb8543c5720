"""The portable regression suite written with each output (``<output>/tests/``): the golden
cases in a form C++ reads (validation.golden_export), a driver per region
(targets.check_driver) and a CTest project that builds each driver with the region's Kokkos
or CUDA translation, and ``test_triton.py`` (targets.check_triton) for the Triton code, which
needs torch, triton and pytest. ``cmake -S tests -B build && cmake --build build && ctest --test-dir build``
needs a C++ compiler and Kokkos (any backend, ``-DKokkos_ROOT=...``) or CUDA (``-DKT_CUDA=ON``),
not Python or this tool.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from targets.base import C_ABI_TARGETS, TARGETS
from targets.check_driver import check_driver, suite_cmake
from targets.check_triton import triton_suite
from validation.golden import load_case
from validation.golden_export import export_region, exportable


def write_suite(workflow: str, out_dir: Path, entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The suite for every region with golden data that a target validated (or built, where it
    needs a GPU to run); what it holds and what it left out, with why."""
    suite = out_dir / "tests"
    shutil.rmtree(suite, ignore_errors=True)
    regions: dict[str, list[str]] = {t: [] for t in TARGETS}
    left_out: dict[str, str] = {}
    for e in sorted(entries, key=lambda e: e["name"]):
        name = e["name"].lower()
        targets = [t for t, info in TARGETS.items() if e["targets"].get(t, {}).get("status") in info.usable]
        golden = out_dir / "golden" / name
        if not targets or not (golden / "region.json").is_file():
            continue
        kernel = load_case(golden, "case0")[0]
        why = exportable(kernel)
        if why:
            left_out[name] = why
            continue
        reduces = bool(json.loads((golden / "region.json").read_text()).get("reduces"))
        export_region(golden, suite / "cases" / name, reduces)
        if set(C_ABI_TARGETS) & set(targets):  # the C++ drivers call kt_NAME
            (suite / f"check_{name}.cpp").write_text(check_driver(kernel))
        for t in targets:
            regions[t].append(name)
    if not any(regions.values()):
        return {"regions": regions, "left_out": left_out}
    if any(regions[t] for t in C_ABI_TARGETS):
        (suite / "CMakeLists.txt").write_text(suite_cmake(workflow, regions))
    if regions.get("triton"):
        (suite / "test_triton.py").write_text(triton_suite(workflow, regions["triton"]))
    return {"folder": str(suite), "regions": regions, "left_out": left_out}
