"""The PyTorch side of the pipeline (``language: pytorch``), called by
translate.pipeline.WorkflowRun: load and lower every file (one region per file,
named after its stem), emit ``ModelNew`` beside the Triton launcher, validate
against ``Model``, and list which ops run as generated kernels and which as
library calls.

Sizes: the workflow's ``sizes`` merged with the region's (``regions: {stem:
{sizes: ...}}``), restricted per file to its module-level constants (a
workflow's sizes span files; a name a file lacks is not an error for it).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from translate import ir
from translate.config import Workflow


@dataclass(frozen=True)
class TorchRegion:
    kernel: ir.Kernel | ir.Opaque
    path: Path
    sizes: dict[str, int]


def file_sizes(workflow: Workflow, path: Path) -> dict[str, int]:
    """The sizes that apply to one file (module docstring)."""
    from parsers.torch import module_constants

    sizes = dict(workflow.region(path.stem).sizes)
    try:
        known = set(module_constants(ast.parse(path.read_text())))
    except (OSError, SyntaxError):
        return sizes
    return {k: v for k, v in sizes.items() if k in known}


def load_regions(workflow: Workflow, files: Sequence[Path]) -> tuple[dict[str, TorchRegion], list[str]]:
    """Every file lowered at its sizes: (regions by kernel name, error messages)."""
    from parsers.base import ParseError
    from parsers.torch import kernel_name, load_program, lower_program

    regions: dict[str, TorchRegion] = {}
    errors: list[str] = []
    for path in files:
        sizes = file_sizes(workflow, path)
        try:
            program = load_program(path, sizes, workflow.root)
        except ParseError as err:
            errors.append(f"{err} (file skipped)")
            continue
        try:
            kernel: ir.Kernel | ir.Opaque = lower_program(program, root=workflow.root)
        except Exception as exc:  # a frontend bug makes this region unsupported, with the reason
            kernel = ir.Opaque(kernel_name(path), path.read_text(errors="replace"),
                               f"the PyTorch frontend failed: {type(exc).__name__}: {exc}",
                               ir.Origin(_rel(path, workflow.root), program.forward_line))
        if kernel.name in regions:
            errors.append(f"{path}: region {kernel.name} is defined twice; keeping {regions[kernel.name].path}")
            continue
        regions[kernel.name] = TorchRegion(kernel, path, sizes)
    return regions, errors


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def ops_entry(kernel: ir.Kernel, rendered_notes: dict[str, Sequence[str]]) -> list[dict[str, Any]]:
    """The report's per-region ``ops``: Kernel.notes, then each target's Rendered.notes
    (tagged with the target)."""
    from targets.torch_module import classify_ops

    ops: list[dict[str, Any]] = classify_ops(kernel.notes, kernel)
    for target, notes in sorted(rendered_notes.items()):
        for entry in classify_ops(notes):
            ops.append({**entry, "target": target})
    return ops


def emit_model_new(kernel: ir.Kernel, source: Path, out_dir: Path, notes: Sequence[str],
                   symbol: str | None) -> tuple[str | None, str | None]:
    """Write ``pytorch/<stem>_model.py``: (relative path, None) or (None, why not)."""
    from targets.torch_module import ModelNewError, write_model_new

    try:
        path = write_model_new(kernel, source, out_dir, notes, symbol)
    except ModelNewError as err:
        return None, f"ModelNew not emitted: {err}"
    return str(path.relative_to(out_dir)), None


def validate(workflow: Workflow, region: TorchRegion, target_dirs: dict[str, Path], out_dir: Path,
             cache_dir: Path, timeout: float, level: int) -> Any:
    """validation.torch_reference.validate_torch_region with the workflow's settings."""
    from validation.torch_reference import KERNELBENCH_ALLCLOSE, validate_torch_region

    vcfg = workflow.validate
    allclose = (vcfg.atol if vcfg.atol is not None else KERNELBENCH_ALLCLOSE[0],
                vcfg.rtol if vcfg.rtol is not None else KERNELBENCH_ALLCLOSE[1])
    assert isinstance(region.kernel, ir.Kernel)
    return validate_torch_region(
        region.kernel, region.path, target_dirs, region.sizes, vcfg.trials, region=region.kernel.name,
        workdir=out_dir / ".build" / region.kernel.name, cache_dir=cache_dir, golden_root=out_dir / "golden",
        timeout=timeout, allclose=allclose, schedule_level=level)
