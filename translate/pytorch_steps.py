"""The PyTorch side of the pipeline (``language: pytorch``), called by
translate.pipeline.WorkflowRun: load and lower every file (one region per file,
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
(:func:`size_init_args`).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from translate import ir
from translate.config import Workflow


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


def _same_kernel(a: ir.Kernel | ir.Opaque, b: ir.Kernel | ir.Opaque) -> bool:
    return (isinstance(a, ir.Kernel) and isinstance(b, ir.Kernel)
            and (a.params, a.locals, a.body, a.result) == (b.params, b.locals, b.body, b.result))


def size_init_args(program: Any, kernel: ir.Kernel | ir.Opaque) -> tuple[int, ...]:
    """Positions of the integer constructor arguments that provably only set sizes, so
    ModelNew may be built with other values of them. An argument qualifies when both hold:

    * changed alone (+1, else x2), the model still builds and differs only in parameter/buffer
      shapes (same keys, and at least one shape changes): it sizes parameters, not a
      hyperparameter such as GroupNorm's num_groups, an axis or an eps;
    * the program re-loaded at the different-size trial's sizes (the first of + 3, x 2,
      + 1 at which it loads and lowers; pinned values stay) has this argument changed and
      lowers to the identical kernel: whatever else it feeds enters the kernel through the
      dimension scalars only (and the validation runs the kernel at those sizes).

    Anything else (no sizes to vary, a failure, a different kernel) qualifies nothing."""
    import torch

    from parsers.torch import load_program, lower_program
    from validation.torch_reference import SIZE_RULES, apply_rule

    init = list(program.init_inputs)
    ints = [i for i, v in enumerate(init) if isinstance(v, int) and not isinstance(v, bool)]
    if not ints or not isinstance(kernel, ir.Kernel) or not program.sizes:
        return ()

    def shapes(args: list[Any]) -> dict[str, tuple[int, ...]] | None:
        try:
            torch.manual_seed(0)
            model = program.model_cls(*args)
            return {k: tuple(v.shape) for k, v in model.state_dict().items()}
        except Exception:
            return None

    base = shapes(init)
    if base is None:
        return ()
    shape_only = []
    for i in ints:
        for v in (init[i] + 1, 2 * init[i]):  # 2x where +1 breaks a divisibility (channels by groups)
            other = shapes([*init[:i], v, *init[i + 1:]])
            if other is not None:
                if set(other) == set(base) and other != base:
                    shape_only.append(i)
                break
    if not shape_only:
        return ()
    for rule, _ in SIZE_RULES:
        try:
            again = load_program(program.path, apply_rule(rule, program.sizes), **program.options)
            kernel2 = lower_program(again)
        except Exception:
            continue
        if not isinstance(kernel2, ir.Kernel):  # does not build or lower at these sizes: the next rule
            continue
        changed = [i for i in shape_only if i < len(again.init_inputs) and again.init_inputs[i] != init[i]]
        return tuple(changed) if changed and _same_kernel(kernel, kernel2) else ()
    return ()


def load_regions(workflow: Workflow, files: Sequence[Path],
                 workdir: Path | None = None) -> tuple[dict[str, TorchRegion], list[str]]:
    """Every file lowered at its sizes, each loaded in a worker process (the user's Python runs
    there, sandboxed: ``translate.pytorch_load``): (regions by kernel name, error messages)."""
    import tempfile

    from translate import ir_json
    from translate.pytorch_load import init_value, load_in_worker

    regions: dict[str, TorchRegion] = {}
    errors: list[str] = []
    with tempfile.TemporaryDirectory(prefix="kt-torch-") as tmp:
        for path in files:
            sizes = file_sizes(workflow, path)
            options = file_options(workflow, path)
            got = load_in_worker(path, sizes, options, workflow.root, _rel(path, workflow.root),
                                 "triton" in workflow.targets, Path(workdir or tmp))
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
            regions[kernel.name] = TorchRegion(kernel, path, sizes, options,
                                               [init_value(t) for t in got.get("init_inputs", [])],
                                               tuple(int(i) for i in got.get("size_args", [])),
                                               str(got.get("model_name", "Model")), shapes)
    return regions, errors


def class_name(program: Any) -> str:
    """The name the translated class has in its file (``module:``, ``Model``, or the class found)."""
    if program.module:
        return str(program.module)
    if program.namespace.get("Model") is program.model_cls:
        return "Model"
    return next((n for n, o in program.namespace.items() if o is program.model_cls), program.model_cls.__name__)


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
                   symbol: str | None, region: TorchRegion | None = None) -> tuple[str | None, str | None]:
    """Write ``pytorch/<stem>_model.py``: (relative path, None) or (None, why not). With
    ``region`` ModelNew guards its constructor arguments and knows a plain module's class."""
    from targets.torch_module import ModelNewError, write_model_new

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
    from validation.torch_reference import KERNELBENCH_ALLCLOSE, validate_torch_region

    vcfg = workflow.validate
    allclose = (vcfg.atol if vcfg.atol is not None else KERNELBENCH_ALLCLOSE[0],
                vcfg.rtol if vcfg.rtol is not None else KERNELBENCH_ALLCLOSE[1])
    assert isinstance(region.kernel, ir.Kernel)
    return validate_torch_region(
        region.kernel, region.path, target_dirs, region.sizes, vcfg.trials, region=region.kernel.name,
        workdir=out_dir / ".build" / region.kernel.name, cache_dir=cache_dir, golden_root=out_dir / "golden",
        timeout=timeout, allclose=allclose, schedule_level=level, options=region.options)
