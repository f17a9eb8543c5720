"""The validation protocol for a PyTorch region (one KernelBench-style file).

A case is made from the program, not from random generators:
``program.make_model(seed)`` gives the weights and ``program.make_inputs(seed)``
the forward inputs, so reference and candidate see identical weights. The
kernel's arrays come from the parameters' bindings (``input:i``,
``param:<state_dict key>``; flattened in C order, RIGHT layout), its dim
scalars from the tensors' shapes (``dim:<i>:<axis>``, ``dim:param:<key>:<axis>``)
and its outputs (``output:i``) are poisoned with NaN. The reference output is
``model(*inputs)``, run in a subprocess with a time limit
(``validation.torch_worker``, which writes the case and the reference outputs).

Trials: ``trials`` fresh seeds at the workflow's sizes, plus one at a different
size. The different size re-loads the program with every size of the
workflow's ``sizes`` plus 3 (the rule of the Fortran regions: odd shifts make
the extents non-multiples of any block size, so a missing mask shows). If the
module does not load or run at +3 (a shape constraint such as divisibility),
the next rule is tried: every size times 2, then every size plus 1; the case
log says which rule ran and why the earlier ones were dropped. Without
``sizes`` the rules apply to the file's module-level integer constants (and
tuples of them). A tuple size (``input_shape: [512]``) changes element-wise.
Pinned constants (the workflow's ``values``, passed in ``options``) never change:
every trial loads the file with them, and the no-``sizes`` fallback skips them.

Comparison: KernelBench's fp32 tolerance, elementwise ``|a-b| <= atol +
rtol*|b|`` with atol = rtol = 1e-4 (``validate: {atol, rtol}`` overrides),
AND the relative-L2 test of validation.compare (by dtype; the reduction
tolerance when the kernel reduces or calls a library op), plus its NaN,
unwritten-element and zero/constant-output rules. Golden data is recorded
exactly as for Fortran regions (``allclose`` added to each case's metadata),
so ``python -m validation.golden OUT --targets cuda,triton`` re-validates
without the reference.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from parsers.torch_load import SIZE_RULES, apply_rule
from translate import ir
from translate.schedule import Schedule, apply_schedule
from validation import golden, sandbox
from validation.inputs import Case
from validation.order_audit import audit_order
from validation.processes import WALL_CAP_FACTOR, one_thread, py_env, run_process
from validation.region import RegionValidation, TargetValidation, judge, other_deltas
from validation.runners import run_candidate_cases
from validation.signature import ValidationError, signature
from validation.signature import reduces as loop_reduces

KERNELBENCH_ALLCLOSE = (1e-4, 1e-4)  # (atol, rtol) for fp32 outputs
DEFAULT_LOADER = "parsers.torch:load_program"
@dataclass
class TorchCases:
    """The cases of one region with their reference outputs (or why there are none)."""

    cases: list[Case] = field(default_factory=list)
    refs: list[dict[str, np.ndarray]] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    log: list[dict[str, Any]] = field(default_factory=list)
    reason: str = ""

    @property
    def ok(self) -> bool:
        return not self.reason


def module_constants(path: Path) -> dict[str, int | tuple[int, ...]]:
    """Module-level integer constants of a Python file (``batch_size = 16``,
    ``M, N = 64, 32``, ``a = b = 8``) and tuples of integers (``input_shape =
    (4096,)``), read with ``ast`` (nothing is run)."""
    try:
        tree = ast.parse(Path(path).read_text(), str(path))
    except (OSError, SyntaxError):
        return {}
    found: dict[str, int | tuple[int, ...]] = {}

    def take(target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, ast.Name) and isinstance(value, ast.Constant) and type(value.value) is int:
            found[target.id] = value.value
        elif (isinstance(target, ast.Name) and isinstance(value, ast.Tuple) and value.elts
              and all(isinstance(e, ast.Constant) and type(e.value) is int for e in value.elts)):
            found[target.id] = tuple(int(e.value) for e in value.elts)  # type: ignore[union-attr]
        elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts, strict=True):
                take(t, v)

    for node in tree.body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                take(target, node.value)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            take(node.target, node.value)
    return found


def _size_like(v: Any) -> bool:
    return max(v, default=0) > 1 if isinstance(v, (list, tuple)) else v > 1


def alternate_attempts(sizes: Mapping[str, Any], source: Path, pinned: Sequence[str] = (),
                       seed: int | None = None) -> list[tuple[str, dict[str, Any]]]:
    """The different-size trial's candidate sizes, in order of preference (module docstring);
    with ``seed``, the first adds a delta drawn from it (``region.other_deltas``) instead of 3."""
    base = dict(sizes) or {k: v for k, v in module_constants(source).items() if k not in pinned and _size_like(v)}
    rules = list(SIZE_RULES)
    if seed is not None:
        d = other_deltas(seed)[0]
        rules[0] = (f"+{d}", f"each size + {d}")
    return [(f"different size ({words})", apply_rule(rule, base)) for rule, words in rules]


def plan_cases(sizes: Mapping[str, Any], trials: int, seed: int, source: Path,
               pinned: Sequence[str] = ()) -> list[tuple[list[tuple[str, dict[str, Any]]], int]]:
    """(size attempts, seed) of every trial: ``trials`` at ``sizes``, one at a different size."""
    plan = [([("workflow size", dict(sizes))], seed + k) for k in range(max(1, trials))]
    plan.append((alternate_attempts(sizes, source, pinned, seed), seed + len(plan)))
    return plan


def kernel_reduces(kernel: ir.Kernel) -> bool:
    """Reordered sums: a loop reduction or a library op (matmul, convolution)."""
    return loop_reduces(kernel) or any(isinstance(n, ir.Extern) for s in kernel.body for n in ir.walk(s))


def _fit(kernel: ir.Kernel, scalars: dict[str, Any], arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Arrays reshaped to the kernel's extents at these dims; a mismatch in
    element count means the kernel hard-codes a shape the module does not have."""
    sig = signature(kernel, dict(scalars))
    fitted = {}
    for p in sig["params"]:
        if p["kind"] != "array":
            continue
        a = arrays[p["name"]]
        shape = tuple(p["shape"])
        if int(np.prod(shape)) != a.size:
            raise ValidationError(f"'{p['name']}' ({p['binding']}) has shape {list(a.shape)} in the module "
                                  f"but the kernel's extents give {list(shape)}")
        fitted[p["name"]] = np.ascontiguousarray(a.reshape(shape))
    return fitted


def _package_dirs(loader: str) -> list[Path]:
    """The folders of the package a ``module:function`` loader lives in (the sandbox shows them)."""

    try:
        spec = importlib.util.find_spec(loader.split(":")[0].split(".")[0])
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    if spec.submodule_search_locations:
        return [Path(p) for p in spec.submodule_search_locations]
    return [Path(spec.origin)] if spec.origin else []


def run_reference(source: Path, kernel: ir.Kernel, sizes: Mapping[str, Any], trials: int, seed: int,
                  workdir: Path, timeout: float = 120, loader: str = DEFAULT_LOADER,
                  options: Mapping[str, Any] | None = None) -> TorchCases:
    """Every case of the region with the reference outputs, from one worker process.
    ``loader`` (``module:function``) loads the program in the worker; ``options`` are
    its keyword arguments besides the sizes (``values``: pinned constants, ``shapes``,
    ``module``, ``init``: a plain module), the same for every trial."""
    options = dict(options or {})
    pinned = dict(options.get("values") or {})
    plan = plan_cases(sizes, trials, seed, source, list(pinned))
    workdir.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix=f"{kernel.name}-torchref-", dir=workdir))
    try:
        items = [{"attempts": attempts, "seed": s, "case": str(base / f"in{k}.npz"), "out": str(base / f"ref{k}.npz")}
                 for k, (attempts, s) in enumerate(plan)]
        progress = base / "progress"
        job = {"source": str(Path(source).resolve()), "params": signature(kernel)["params"], "cases": items,
               "progress": str(progress), "loader": loader, "options": options}
        (base / "job.json").write_text(json.dumps(job, indent=1))
        # ``timeout``: CPU seconds per case, as for every validation worker (validation.runners)
        cmd = [sys.executable, "-P", "-m", "validation.torch_worker", str(base / "job.json")]
        cwd, env = workdir, py_env(one_thread())
        if sandbox.probe().available:  # the model file is the user's Python: run where it can harm nothing
            readable = [Path(source).resolve().parent, *sandbox.TOOL_PACKAGES,
                        *_package_dirs(loader)]
            cmd = sandbox.command(cmd, sandbox.Jail(read_only=readable, writable=[base], env=one_thread()), cwd=base)
            cwd, env = base, None
        r = run_process(cmd, "PyTorch reference", WALL_CAP_FACTOR * timeout, cwd=cwd, env=env, progress=progress,
                        cpu_limit=timeout, exit_signals=env is None)
        done = [json.loads(line) for line in progress.read_text().splitlines()] if progress.exists() else []
        out = TorchCases()
        outputs = tuple(p.name for p in kernel.params if p.intent.writes)
        for k, item in enumerate(items):
            if k >= len(done):
                what = "the different-size trial" if k == len(items) - 1 else f"trial {k + 1}"
                out.reason = f"reference failed in {what} (seed {item['seed']}): {r.reason or 'no result'}"
                return out
            scalars, arrays = Case.load_data(Path(item["case"]))
            with np.load(item["out"], allow_pickle=False) as z:
                refs = {n: z[n] for n in z.files}
            info = done[k]
            try:
                arrays = _fit(kernel, scalars, arrays)
                refs = {n: a.reshape(arrays[n].shape) for n, a in refs.items()}
            except ValidationError as exc:
                out.reason = f"{info['label']}: {exc}"
                return out
            sizes_used = {str(n): (list(map(int, v)) if isinstance(v, list) else int(v))
                          for n, v in info["sizes"].items()}
            out.cases.append(Case(kernel.name, scalars, arrays, int(item["seed"]), outputs, sizes_used,  # type: ignore[arg-type]
                                  dict(pinned)))
            out.refs.append(refs)
            given = ", ".join(f"{n}={v}" for n, v in [*sizes_used.items(), *pinned.items()])
            out.labels.append(f"trial {k + 1} ({info['label']}, seed {item['seed']}{', ' + given if given else ''})")
            entry: dict[str, Any] = {"seed": item["seed"], "sizes": sizes_used, "values": dict(pinned),
                                     "label": info["label"]}
            if info.get("failures"):
                entry["dropped"] = info["failures"]
            out.log.append(entry)
        return out
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _audit(kernel: ir.Kernel, level: int, case: Case, reduces: bool) -> str:
    """The order audit (validation.order_audit) on the first trial; a kernel the
    audit's interpreter cannot run is not audited."""

    try:
        scheduled = apply_schedule(kernel, Schedule(level=level))
        reason = audit_order(scheduled, case.scalars, {k: v.copy() for k, v in case.arrays.items()}, reduces)
    except Exception:  # the audit is a safety net, not a requirement
        return ""
    return f"order audit, {reason}" if reason else ""


def validate_torch_region(kernel: ir.Kernel, source: Path, target_dirs: Mapping[str, Path],
                          sizes: Mapping[str, int] | None = None, trials: int = 3, *, region: str | None = None,
                          workdir: Path | None = None, cache_dir: Path | None = None,
                          golden_root: Path | None = None, seed: int = 1234, timeout: float = 120,
                          gpu: bool | None = None, allclose: tuple[float, float] | None = None,
                          schedule_level: int | None = 0, loader: str = DEFAULT_LOADER,
                          options: Mapping[str, Any] | None = None) -> RegionValidation:
    """Validate every target of one PyTorch region against ``Model`` (module docstring).
    ``target_dirs`` maps a target to the folder holding ``<stem>_<target>.*``; ``options``
    as for :func:`run_reference`.
    Never raises for a failing reference, build, crash or hang."""
    region = region or kernel.name
    targets = list(target_dirs)
    allclose = allclose or KERNELBENCH_ALLCLOSE
    reduces = kernel_reduces(kernel)
    with tempfile.TemporaryDirectory(prefix=f"kt-{region}-") as tmp:
        work = Path(workdir) if workdir else Path(tmp)
        tc = run_reference(Path(source), kernel, dict(sizes or {}), trials, seed, work, timeout, loader, options)
        if not tc.ok:
            fail = {t: TargetValidation(t, "failed", tc.reason) for t in targets}
            return RegionValidation(region, kernel.name, fail, False, tc.reason, tc.log)
        gdir = Path(golden_root) / region if golden_root else None
        if gdir is not None:
            golden.record_all(gdir, kernel, list(zip(tc.cases, tc.refs, strict=True)), reduces, None, allclose)
        if schedule_level is not None and tc.cases:
            reason = _audit(kernel, schedule_level, tc.cases[0], reduces)
            if reason:
                fail = {t: TargetValidation(t, "failed", reason) for t in targets}
                return RegionValidation(region, kernel.name, fail, True, "", tc.log, gdir)
        results = {}
        for t in targets:
            runs = run_candidate_cases(t, Path(target_dirs[t]), kernel, tc.cases, work, cache_dir, timeout, gpu)
            results[t] = judge(t, kernel, tc.cases, tc.refs, runs, tc.labels, reduces, None, allclose)
        return RegionValidation(region, kernel.name, results, True, "", tc.log, gdir)
