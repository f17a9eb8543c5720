"""The PyTorch side of the pipeline (``language: pytorch``), called by
graph.pipeline.WorkflowRun: load and lower every file (one region per file,
named after its stem), emit ``ModelNew`` beside the Triton launcher, validate
against ``Model``, and list which ops run as generated kernels and which as
library calls.

Sizes: the workflow's ``sizes`` merged with the region's (``regions: {stem:
{sizes: ...}}``), restricted per file to its module-level constants (a
workflow's sizes span files; a name a file lacks is not an error for it).
``values`` the same way: pinned constants, loaded like sizes but never changed
by the different-size trial. ``shapes`` / ``module`` / ``init`` describe a plain
module (parsers.torch docstring) and travel with every load of the file.

ModelNew records the constructor arguments it was generated for and refuses
others (targets.torch_module), except integer arguments shown to only set sizes
(``parsers.torch_load.size_init_args``).
"""

from __future__ import annotations

import ast
import os
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from graph.config import Workflow
from graph.pytorch_load import init_value, load_in_worker
from targets.torch_module import ModelNewError, classify_ops, write_model_new
from translate import ir, ir_json


@dataclass(frozen=True)
class TorchRegion:
    kernel: ir.Kernel | ir.Opaque
    path: Path
    sizes: dict[str, Any]
    options: dict[str, Any] = field(default_factory=dict)  # load_program's other keyword arguments
    init_inputs: list[Any] | None = None  # the constructor arguments the kernel was captured with
    size_args: tuple[int, ...] = ()  # positions of those that only set sizes (ModelNew's guard skips them)
    model_name: str = "Model"  # the nn.Module class translated
    input_shapes: list[tuple[int, ...]] | None = None  # a plain module's forward inputs (from shapes)


def _known(path: Path) -> set[str] | None:
    # deferred: imports torch, which a Fortran run never loads
    from parsers.torch import module_constants

    try:
        return set(module_constants(ast.parse(path.read_text())))
    except (OSError, SyntaxError):
        return None


def file_sizes(workflow: Workflow, path: Path) -> dict[str, Any]:
    """The sizes that apply to one file (module docstring)."""
    sizes = dict(workflow.region(path.stem).sizes)
    known = _known(path)
    return sizes if known is None else {k: v for k, v in sizes.items() if k in known}


def file_options(workflow: Workflow, path: Path) -> dict[str, Any]:
    """load_program's keyword arguments besides the sizes for one file: pinned ``values``
    (restricted to its constants like the sizes), ``shapes``, ``module``, ``init``."""
    cfg = workflow.region(path.stem)
    known = _known(path)
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in cfg.values.items()
              if known is None or k in known}
    opts: dict[str, Any] = {}
    if values:
        opts["values"] = values
    if cfg.shapes:
        opts["shapes"] = {k: list(v) for k, v in cfg.shapes.items()}
    if cfg.module is not None:
        opts["module"] = cfg.module
    if cfg.init is not None:
        opts["init"] = list(cfg.init)
    return opts


def load_regions(workflow: Workflow, files: Sequence[Path], workdir: Path | None = None,
                 progress: Callable[[str], None] | None = None) -> tuple[dict[str, TorchRegion], list[str]]:
    """Every file lowered at its sizes, each loaded in a worker process (the user's Python runs
    there, sandboxed: ``graph.pytorch_load``): (regions by kernel name, error messages).
    ``progress`` hears of each file as it is loaded (a deep model takes minutes)."""

    regions: dict[str, TorchRegion] = {}
    errors: list[str] = []
    with tempfile.TemporaryDirectory(prefix="kt-torch-") as tmp:
        def load(n: int, path: Path) -> dict[str, Any]:
            if progress is not None:
                progress(f"loading {_rel(path, workflow.root)} ({n}/{len(files)})")
            return load_in_worker(path, file_sizes(workflow, path), file_options(workflow, path), workflow.root,
                                  _rel(path, workflow.root), "triton" in workflow.targets, Path(workdir or tmp),
                                  cpu_limit=workflow.load_cpu_s)

        # each file in its own worker process of one thread: as many at once as there are cores, so
        # that one that loops forever holds one of them, not the run
        with ThreadPoolExecutor(max_workers=max(1, min(len(files), os.cpu_count() or 1))) as pool:
            loaded = list(pool.map(load, range(1, len(files) + 1), files))
        for path, got in zip(files, loaded, strict=True):
            sizes = file_sizes(workflow, path)
            options = file_options(workflow, path)
            if "error" in got:
                errors.append(str(got["error"]))
                continue
            try:
                kernel = ir_json.loads(got["kernel"])
                if not isinstance(kernel, (ir.Kernel, ir.Opaque)):
                    raise ir_json.IRDecodeError("not a kernel")
            except (ir_json.IRDecodeError, KeyError, TypeError) as exc:
                errors.append(f"{_rel(path, workflow.root)}: the loader's answer is not a kernel ({exc}); file skipped")
                continue
            if kernel.name in regions:
                errors.append(f"{path}: region {kernel.name} is defined twice; keeping {regions[kernel.name].path}")
                continue
            shapes = [tuple(s) for s in got["input_shapes"]] if got.get("input_shapes") is not None else None
            held = dict(got.get("held") or {})
            if held:  # sizes the kernel is built for (parsers.torch_load.held_sizes): pinned from here on
                sizes = {k: v for k, v in sizes.items() if k not in held}
                options = {**options, "values": {**options.get("values", {}), **held}}
                kernel = replace(kernel, notes=(*kernel.notes, "held sizes: " + ", ".join(
                    f"{k}={v}" for k, v in held.items()) + " (the kernel is built for them; every trial keeps them)"))
            regions[kernel.name] = TorchRegion(kernel, path, sizes, options,
                                               [init_value(t) for t in got.get("init_inputs", [])],
                                               tuple(int(i) for i in got.get("size_args", [])),
                                               str(got.get("model_name", "Model")), shapes)
    return regions, errors


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def ops_entry(kernel: ir.Kernel, rendered_notes: dict[str, Sequence[str]]) -> list[dict[str, Any]]:
    """The report's per-region ``ops``: Kernel.notes, then each target's Rendered.notes
    (tagged with the target)."""

    ops: list[dict[str, Any]] = classify_ops(kernel.notes, kernel)
    for target, notes in sorted(rendered_notes.items()):
        for entry in classify_ops(notes):
            ops.append({**entry, "target": target})
    return ops


def emit_model_new(kernel: ir.Kernel, source: Path, out_dir: Path, notes: Sequence[str],
                   symbol: str | None, region: TorchRegion | None = None) -> tuple[str | None, str | None]:
    """Write ``pytorch/<stem>_model.py``: (relative path, None) or (None, why not). With
    ``region`` ModelNew guards its constructor arguments and knows a plain module's class."""

    try:
        if region is None:
            path = write_model_new(kernel, source, out_dir, notes, symbol)
        else:
            path = write_model_new(kernel, source, out_dir, notes, symbol, init_inputs=region.init_inputs,
                                   size_args=region.size_args, model_name=region.model_name,
                                   input_shapes=region.input_shapes)
    except ModelNewError as err:
        return None, f"ModelNew not emitted: {err}"
    return str(path.relative_to(out_dir)), None


def validate(workflow: Workflow, region: TorchRegion, target_dirs: dict[str, Path], out_dir: Path,
             cache_dir: Path, timeout: float, level: int) -> Any:
    """validation.torch_reference.validate_torch_region with the workflow's settings."""
    # deferred: imports torch, which a Fortran run never loads
    from validation.torch_reference import KERNELBENCH_ALLCLOSE, validate_torch_region

    vcfg = workflow.validate
    allclose = (vcfg.atol if vcfg.atol is not None else KERNELBENCH_ALLCLOSE[0],
                vcfg.rtol if vcfg.rtol is not None else KERNELBENCH_ALLCLOSE[1])
    assert isinstance(region.kernel, ir.Kernel)
    return validate_torch_region(
        region.kernel, region.path, target_dirs, region.sizes, vcfg.trials, region=region.kernel.name,
        workdir=out_dir / ".build" / region.kernel.name, cache_dir=cache_dir, golden_root=out_dir / "golden",
        timeout=timeout, allclose=allclose, schedule_level=level, options=region.options)
