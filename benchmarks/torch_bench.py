"""PyTorch eager vs torch.compile vs ours (ModelNew over the generated Triton kernels).

    python benchmarks/torch_bench.py OUT [--modules relu,softmax] [--quick] [--dry-run] [--tf32]
                                         [--compare OUT2 [--compare-label NAME]]
                                         [--max-autotune] [--busy] [--jsonl FILE]

``OUT`` is the output folder of a previous ``translate run`` of a ``language:
pytorch`` workflow (e.g. ``examples/pytorch_ops/out/ops``): for every
``OUT/pytorch/<stem>_model.py`` it builds ``Model`` at the file's own (full)
sizes on the GPU, seeds its weights, builds ``ModelNew`` with the same
constructor arguments and ``load_state_dict(model.state_dict())``, checks
ModelNew's and torch.compile's outputs against eager (KernelBench fp32
tolerance, atol = rtol = 1e-4; a module whose output mismatches is not timed,
and the table says so), then times all three side by side in one run with
``triton.testing.do_bench`` (median; warm-up; do_bench flushes the L2 between
runs). It prints a table with the speedups over eager and their geometric means.
``--compare OUT2`` adds a column: the ModelNew of the same file from another run
(e.g. ``out/matmul_generated``, the generated tiled matmul instead of cuBLAS),
checked and timed in the same run. A ModelNew that runs as a CUDA graph
(``ModelNew.cuda_graphs``, whole models without draws or state) is also timed with
the graphs off, in the "no-graph ms" column.
``--max-autotune`` adds torch.compile(mode="max-autotune") (GEMM and convolution templates
autotuned, CUDA graphs) as a column. ``--busy`` measures, for ModelNew, the fraction of a
forward's wall time the GPU spends in kernels (torch.profiler's kernel records against the
wall time of the same calls), with the host plan on and off. ``--jsonl FILE`` appends each
module's row as a JSON line as soon as it is measured (a run cut short keeps what it did).

``--dry-run`` runs on a CPU: the Triton interpreter, the sizes the workflow
validated at (read from ``OUT/golden/<stem>/case0.json``), ``torch.compile``
with the ``aot_eager`` backend and a ``perf_counter`` median instead of do_bench;
the times mean nothing, the run checks the whole path. ``--tf32`` leaves cuBLAS /
cuDNN TF32 as PyTorch's defaults (matmul off, cuDNN on); without it both are off so
that every column computes in fp32, like the generated kernels.

Needs only torch, triton and numpy (the GPU machine has no fparser or langgraph);
``--dry-run`` also imports the PyTorch frontend's loader (torch only) to apply sizes.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

ATOL = RTOL = 1e-4
CHUNK = 1 << 26  # elements compared at once
REPO = Path(__file__).resolve().parent.parent


@dataclass
class Row:
    module: str
    eager_ms: float | None = None
    compile_ms: float | None = None
    ours_ms: float | None = None
    alt_ms: float | None = None
    plain_ms: float | None = None  # ours with ModelNew.cuda_graphs off (kernels launched one by one)
    autotune_ms: float | None = None  # torch.compile(mode="max-autotune")
    busy: float | None = None  # share of ModelNew's forward wall time the GPU runs kernels (host plan on)
    busy_plain: float | None = None  # the same with ModelNew.cuda_graphs off
    status: str = "ok"

    def speedup(self, other: float | None) -> float | None:
        return self.eager_ms / other if self.eager_ms and other else None


def _import(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _timer(dry_run: bool, quick: bool) -> Callable[[Callable[[], Any]], float]:
    """Median milliseconds of one call."""
    if dry_run:
        def cpu(fn: Callable[[], Any]) -> float:
            fn()
            times = []
            for _ in range(2 if quick else 5):
                t0 = time.perf_counter()
                fn()
                times.append((time.perf_counter() - t0) * 1e3)
            return statistics.median(times)
        return cpu
    from triton.testing import do_bench

    warmup, rep = (5, 20) if quick else (25, 100)
    return lambda fn: float(do_bench(fn, warmup=warmup, rep=rep, return_mode="median"))


def _first(out: Any) -> Any:
    return out[0] if isinstance(out, (tuple, list)) else out


def _mismatch(got: Any, want: Any) -> str:
    """'' when ``got`` matches ``want`` within KernelBench's tolerance, else why not."""
    import torch

    got, want = _first(got), _first(want)
    if not isinstance(got, torch.Tensor) or got.shape != want.shape:
        return f"shape {getattr(got, 'shape', type(got).__name__)} vs eager {tuple(want.shape)}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} vs eager {want.dtype}"
    if not want.is_floating_point():
        bad = int((got != want).sum())
        return f"{bad} of {want.numel()} elements differ" if bad else ""
    bad = over = 0
    err = 0.0
    flat_g, flat_w = got.reshape(-1), want.reshape(-1)
    for start in range(0, flat_w.numel(), CHUNK):  # in float64, a chunk at a time (published sizes fill the GPU)
        g, w = flat_g[start:start + CHUNK].double(), flat_w[start:start + CHUNK].double()
        bad += int((~torch.isfinite(g)).sum())
        beyond = (g - w).abs() > ATOL + RTOL * w.abs()
        over += int(beyond.sum())
        if beyond.any():
            err = max(err, float((g - w).abs().max()))
    if bad:
        return f"{bad} non-finite elements"
    if over:
        return f"{over} of {want.numel()} elements beyond atol=rtol={ATOL:g} (max abs err {err:.3g})"
    return ""


def _sizes(out_dir: Path, stem: str) -> dict[str, Any]:
    """The validated sizes and pinned values of a region (a dry run loads the file at them)."""
    meta = out_dir / "golden" / stem / "case0.json"
    if not meta.is_file():
        return {}
    doc = json.loads(meta.read_text())
    given = {**(doc.get("sizes") or {}), **(doc.get("values") or {})}
    return {k: tuple(v) if isinstance(v, list) else v for k, v in given.items()}


def _program(out_dir: Path, stem: str, mod: ModuleType) -> Any:
    """The source file loaded at the sizes it was validated at (dry runs)."""
    sys.path.insert(0, str(REPO))
    from parsers.torch import load_program

    # the model file as ModelNew carries it, loaded from a file of its own
    with tempfile.TemporaryDirectory(prefix="kt-bench-") as tmp:
        path = Path(tmp) / f"{stem}.py"
        path.write_text(mod._SOURCE_TEXT)
        return load_program(path, _sizes(out_dir, stem))


def _build(out_dir: Path, stem: str, mod: ModuleType, dry_run: bool, device: Any,
           alt_mod: ModuleType | None = None) -> tuple[Any, Any, list[Any], Any]:
    """(model, model_new, inputs, the compared ModelNew or None) at full size, or at the
    validated sizes for a dry run; both ModelNew hold the model's weights."""
    import torch

    if dry_run:
        program = _program(out_dir, stem, mod)
        base, init = program.model_cls, program.init_inputs
        get_inputs: Callable[[], list[Any]] = lambda: program.make_inputs(1)  # noqa: E731
    else:
        base, init, get_inputs = mod.Model, list(mod.get_init_inputs()), lambda: list(mod.get_inputs())
    torch.manual_seed(0)
    model = base(*init).eval().to(device)
    news = []
    for m in (mod, alt_mod):
        new = m.model_new_class(base)(*init).eval().to(device) if m is not None else None
        if new is not None:
            new.load_state_dict(model.state_dict())
        news.append(new)
    torch.manual_seed(1)
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in get_inputs()]
    return model, news[0], inputs, news[1]


def _call(fn: Callable[..., Any], module: Any, saved: dict[str, Any], inputs: list[Any]) -> Any:
    """One call from the same start as the reference call: the module's state as saved and the
    generator seeded (stateful models and models that draw random numbers in forward)."""
    import torch

    sys.path.insert(0, str(REPO))
    from parsers.torch_state import restore  # deferred: torch only, and only for this check

    restore(module, saved)
    torch.manual_seed(1234)
    return fn(*inputs)


def _check(fn: Callable[..., Any], module: Any, saved: dict[str, Any], inputs: list[Any], want: Any) -> str:
    """Why ``fn``'s output does not match ``want`` ("" when it does)."""
    try:
        return _mismatch(_call(fn, module, saved, inputs), want)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


def busy_fraction(fn: Callable[[], Any], calls: int = 5) -> float:
    """The share of ``calls`` calls' wall time the GPU spends in kernels: the kernel records of
    torch.profiler (CUDA graph replays included) summed, over the wall time of the same calls."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        wall_us = (time.perf_counter() - t0) * 1e6
    kernel_us = sum(e.device_time for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
    return kernel_us / wall_us if wall_us else 0.0


def _measure(row: Row, model: Any, new: Any, inputs: list[Any], dry_run: bool,
             timer: Callable[[Callable[[], Any]], float], alt: Any = None,
             autotune: bool = False, busy: bool = False) -> None:
    """Check ModelNew (and the compared one) and torch.compile against eager, then time
    what matched."""
    import torch

    with torch.no_grad():
        sys.path.insert(0, str(REPO))
        from parsers.torch_state import model_tensors  # deferred: torch only, and only for this check

        saved = {k: v.detach().clone() for k, v in model_tensors(model).items()  # what a forward may update
                 if not isinstance(v, torch.nn.Parameter)}
        want = _call(model, model, saved, inputs)
        if alt is not None:
            awhy = _check(alt, alt, saved, inputs, want)
            if awhy:
                row.status = f"compared not timed, output mismatch: {awhy}"[:160]
            else:
                row.alt_ms = timer(lambda: alt(*inputs))
        why = _check(new, new, saved, inputs, want)
        if why:
            row.status = (row.status + "; " if row.status != "ok" else "") + \
                f"ours not timed, output mismatch: {why}"[:160]
        compiled = torch.compile(model, backend="aot_eager" if dry_run else "inductor")
        cwhy = _check(compiled, model, saved, inputs, want)
        if cwhy:
            row.status = (row.status + "; " if row.status != "ok" else "") + f"torch.compile: {cwhy}"[:120]
        row.eager_ms = timer(lambda: model(*inputs))
        if not cwhy:
            row.compile_ms = timer(lambda: compiled(*inputs))
        if autotune and not dry_run:
            tuned = torch.compile(model, mode="max-autotune")
            twhy = _check(tuned, model, saved, inputs, want)
            if twhy:
                row.status = (row.status + "; " if row.status != "ok" else "") + f"max-autotune: {twhy}"[:120]
            else:
                row.autotune_ms = timer(lambda: tuned(*inputs))
        if not why:
            row.ours_ms = timer(lambda: new(*inputs))
            if busy and not dry_run:
                row.busy = busy_fraction(lambda: new(*inputs))
            if getattr(new, "cuda_graphs", False) and not dry_run:
                new.cuda_graphs = False
                row.plain_ms = timer(lambda: new(*inputs))
                if busy:
                    row.busy_plain = busy_fraction(lambda: new(*inputs))
                new.cuda_graphs = True


def bench_module(out_dir: Path, path: Path, dry_run: bool, timer: Callable[[Callable[[], Any]], float],
                 alt_path: Path | None = None, autotune: bool = False, busy: bool = False) -> Row:
    import torch

    stem = path.name[: -len("_model.py")]
    row = Row(stem)
    device = torch.device("cpu" if dry_run else "cuda")
    try:
        mod = _import(path, f"kt_bench_{stem}")
        alt_mod = _import(alt_path, f"kt_bench_alt_{stem}") if alt_path is not None and alt_path.is_file() else None
        model, new, inputs, alt = _build(out_dir, stem, mod, dry_run, device, alt_mod)
    except Exception as exc:
        row.status = f"not run: {type(exc).__name__}: {exc}"[:160]
        return row
    try:
        _measure(row, model, new, inputs, dry_run, timer, alt, autotune, busy)
    except Exception as exc:  # e.g. out of memory at full size: this module only
        row.status = f"failed: {type(exc).__name__}: {exc}"[:160]
    finally:
        del model, new, inputs, alt
        torch._dynamo.reset()  # the compiled graphs of this module hold its tensors
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return row


def geomean(values: Sequence[float]) -> float | None:
    vals = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None


def table(rows: Sequence[Row], note: str, alt_label: str | None = None) -> str:
    def ms(v: float | None) -> str:
        return f"{v:.3f}" if v is not None else "-"

    def x(v: float | None) -> str:
        return f"{v:.2f}x" if v is not None else "-"

    lines = [note, "", f"{'module':<22} {'eager ms':>10} {'compile ms':>11} {'ours ms':>10} "
             f"{'compile/eager':>14} {'ours/eager':>11}  status", "-" * 100]
    if alt_label:
        lines[2] = lines[2].replace("  status", f" {alt_label + ' ms':>14} {alt_label[:9] + '/eager':>16}  status")
    plain = any(r.plain_ms for r in rows)
    if plain:
        lines[2] = lines[2].replace("  status", f" {'no-graph ms':>12}  status")
    tuned = any(r.autotune_ms for r in rows)
    if tuned:
        lines[2] = lines[2].replace("  status", f" {'autotune ms':>12} {'autotune/eager':>15}  status")
    busy = any(r.busy is not None for r in rows)
    if busy:
        lines[2] = lines[2].replace("  status", f" {'GPU busy':>9} {'no-graph':>9}  status")

    def pct(v: float | None) -> str:
        return f"{100 * v:.0f}%" if v is not None else "-"

    for r in rows:
        extra = f" {ms(r.alt_ms):>14} {x(r.speedup(r.alt_ms)):>16}" if alt_label else ""
        extra += f" {ms(r.plain_ms):>12}" if plain else ""
        extra += f" {ms(r.autotune_ms):>12} {x(r.speedup(r.autotune_ms)):>15}" if tuned else ""
        extra += f" {pct(r.busy):>9} {pct(r.busy_plain):>9}" if busy else ""
        lines.append(f"{r.module:<22} {ms(r.eager_ms):>10} {ms(r.compile_ms):>11} {ms(r.ours_ms):>10} "
                     f"{x(r.speedup(r.compile_ms)):>14} {x(r.speedup(r.ours_ms)):>11}{extra}  {r.status}")
    gc = geomean([r.speedup(r.compile_ms) or 0 for r in rows])
    go = geomean([r.speedup(r.ours_ms) or 0 for r in rows])
    both = [r for r in rows if r.compile_ms and r.ours_ms]
    lines.append("-" * 100)
    lines.append(f"{'geometric mean':<22} {'':>10} {'':>11} {'':>10} {x(gc):>14} {x(go):>11}  "
                 f"(speedup over eager; modules timed: compile {sum(1 for r in rows if r.compile_ms)}, "
                 f"ours {sum(1 for r in rows if r.ours_ms)} of {len(rows)})")
    if both:
        rel = geomean([r.compile_ms / r.ours_ms for r in both if r.compile_ms and r.ours_ms])
        lines.append(f"ours vs torch.compile, geometric mean over {len(both)} modules: {x(rel)}")
    pairs = [r for r in rows if r.autotune_ms and r.ours_ms]
    if pairs:
        rel = geomean([r.autotune_ms / r.ours_ms for r in pairs if r.autotune_ms and r.ours_ms])
        lines.append(f"ours vs torch.compile max-autotune, geometric mean over {len(pairs)} modules: {x(rel)}")
    pairs = [r for r in rows if r.alt_ms and r.ours_ms]
    if alt_label and pairs:
        rel = geomean([r.alt_ms / r.ours_ms for r in pairs if r.alt_ms and r.ours_ms])
        lines.append(f"ours vs {alt_label} (time ratio {alt_label}/ours), geometric mean over {len(pairs)} modules: "
                     f"{x(rel)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="torch_bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir", type=Path, help="output folder of a translate run (holds pytorch/ and triton/)")
    ap.add_argument("--modules", default="", help="comma-separated file stems (default: all)")
    ap.add_argument("--quick", action="store_true", help="fewer timing repetitions")
    ap.add_argument("--dry-run", action="store_true", help="CPU, Triton interpreter, validated (tiny) sizes")
    ap.add_argument("--compare", type=Path, default=None,
                    help="another run's output folder: its ModelNew of the same files is timed alongside")
    ap.add_argument("--compare-label", default="compared", help="the column name of --compare")
    ap.add_argument("--tf32", action="store_true", help="leave PyTorch's TF32 defaults (cuDNN convolutions in TF32)")
    ap.add_argument("--max-autotune", action="store_true", help="also time torch.compile(mode='max-autotune')")
    ap.add_argument("--busy", action="store_true", help="the GPU's busy share of ModelNew's forward (torch.profiler)")
    ap.add_argument("--jsonl", type=Path, default=None, help="append each module's row to this file as it is measured")
    args = ap.parse_args(argv)
    if args.dry_run:
        os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported
    import torch

    if not args.dry_run and not torch.cuda.is_available():
        print("torch_bench: no CUDA GPU; use --dry-run on a CPU", file=sys.stderr)
        return 2
    if not args.tf32:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    folder = args.out_dir.resolve() / "pytorch"
    wanted = {m for m in args.modules.split(",") if m}
    paths = sorted(p for p in folder.glob("*_model.py") if not wanted or p.name[: -len("_model.py")] in wanted)
    if not paths:
        print(f"torch_bench: no ModelNew files{' for ' + args.modules if wanted else ''} under {folder}",
              file=sys.stderr)
        return 2
    timer = _timer(args.dry_run, args.quick)
    rows = []
    for p in paths:
        alt = args.compare.resolve() / "pytorch" / p.name if args.compare else None
        t0 = time.perf_counter()
        rows.append(bench_module(args.out_dir.resolve(), p, args.dry_run, timer, alt, args.max_autotune, args.busy))
        print(f"  {rows[-1].module}: {rows[-1].status} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
        if args.jsonl is not None:
            with args.jsonl.open("a") as fh:
                fh.write(json.dumps(dataclasses.asdict(rows[-1])) + "\n")
    where = ("DRY RUN (CPU, Triton interpreter, validated sizes, perf_counter; times are not measurements)"
             if args.dry_run else f"{torch.cuda.get_device_name()} | torch {torch.__version__} | triton "
             f"{__import__('triton').__version__} | do_bench median ms{' (quick)' if args.quick else ''} | "
             f"TF32 {'PyTorch defaults' if args.tf32 else 'off'}")
    print(table(rows, where, args.compare_label if args.compare else None))
    return 0 if all(r.status == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
