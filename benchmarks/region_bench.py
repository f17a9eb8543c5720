"""Fortran regions at GPU size: the reference on the CPU, the targets on the GPU, and
the fraction of the machine's roofline each reaches.

Two steps, because the GPU machine has no gfortran and no Fortran frontend::

    # here (gfortran, f2py, Kokkos): scale each validated region's sizes until it moves
    # --bytes (default 2 GB, many times a GPU's L2 cache), time the f2py reference and
    # Kokkos (Serial) on this CPU, and write one plan file per region
    python benchmarks/region_bench.py plan PLAN_DIR [--project .] [--workflow W ...] [--region R ...]
                                          [--value NAME=V ...] [--bytes 2e9]

    # on the GPU (torch, triton, nvcc): the same cases, CUDA and Triton timed with CUDA
    # events (L2 flushed, median) in --rounds turns (cuda, triton, cuda, ...; the median of
    # the rounds), rates against `translate doctor --measure`'s ceilings
    python benchmarks/region_bench.py gpu PLAN_DIR [--regions a,b] [--rounds 3]

``plan`` reads each workflow's ``report.json`` and keeps the regions validated for
CUDA or Triton; the generated files are the ones in the workflow's output folder
(what was validated). Sizes no larger than 2 (lower bounds, strides) are not scaled;
pinned ``values`` take their first listed value. A reference that would take more
than ``--max-ref-s`` is timed at a smaller size and scaled by the work (marked ``~``).
Both steps print a table; ``gpu`` also writes ``PLAN_DIR/results.json``.
"""

from __future__ import annotations

import argparse
import json
import pickle
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from region_table import GPU_TIMED, cpu_table, gpu_table  # noqa: E402

from translate import ir  # noqa: E402
from validation.costs import Work, work  # noqa: E402
from validation.inputs import make_case  # noqa: E402
from validation.signature import signature  # noqa: E402

SEED = 20261202
LEVEL_OF = {"as analysed": 0, "outermost loop parallel only": 1, "serial on the device": 2}


def _env(kernel: ir.Kernel, sizes: dict[str, int], scalars: dict[str, Any]) -> dict[str, Any]:
    env = dict(scalars)
    for k, v in sizes.items():
        for p in kernel.params:
            if p.name.lower() == k.lower():
                env[p.name] = v
        env[k] = v
        env[k.lower()] = v
    return env


def _scaled(sizes: dict[str, int], f: float) -> dict[str, int]:
    return {k: (max(int(v), round(int(v) * f)) if int(v) > 2 else int(v)) for k, v in sizes.items()}


def scale_to(kernel: ir.Kernel, sizes: dict[str, int], values: dict[str, Any], inputs: dict[str, str],
             target_bytes: float, project: Path) -> tuple[dict[str, int], Work]:
    """The smallest common growth of ``sizes`` (steps of 1.25x) whose work moves
    ``target_bytes``; the sizes as given when the work does not grow with them
    (arrays of fixed extent, e.g. in COMMON blocks)."""
    base = make_case(kernel, sizes, values, inputs, SEED, project)
    first = work(kernel, _env(kernel, sizes, base.scalars))
    f, best = 1.0, (dict(sizes), first)
    for step in range(1, 120):
        if best[1].bytes >= target_bytes:
            break
        if step == 8 and best[1].bytes <= first.bytes:
            return dict(sizes), first
        f *= 1.25
        trial = _scaled(sizes, f)
        best = (trial, work(kernel, _env(kernel, trial, base.scalars)))
    return best


def _guess_cpu_s(w: Work) -> float:
    return max(w.bytes / 10e9, w.flops / 2e9)  # a generous CPU: 10 GB/s, 2 GFLOP/s


def reference_sizes(kernel: ir.Kernel, sizes: dict[str, int], values: dict[str, Any], inputs: dict[str, str],
                    w: Work, max_s: float, project: Path) -> tuple[dict[str, int], float]:
    """Sizes to time the CPU reference at, and the factor that scales its time to
    ``sizes``: the sizes themselves (factor 1) unless the reference would take longer
    than ``max_s``; then shrunk in steps of 1.25x and scaled back by the flops
    (compute-heavy regions) or the bytes."""
    f, small, smaller = 1.0, sizes, w
    while _guess_cpu_s(smaller) > max_s and f > 1e-3:
        f /= 1.25
        small = {k: (max(3, round(v * f)) if v > 2 else v) for k, v in sizes.items()}
        smaller = work(kernel, _env(kernel, small, make_case(kernel, small, values, inputs, SEED,
                                                                 project).scalars))
    if small is sizes:
        return sizes, 1.0
    heavy = w.flops >= w.bytes
    return small, (w.flops / max(smaller.flops, 1)) if heavy else (w.bytes / max(smaller.bytes, 1))


# ---------------------------------------------------------------- plan (CPU)


def plan(args: argparse.Namespace) -> int:
    from graph.config import load
    from graph.pipeline import WorkflowRun
    from validation.builds import build_candidate
    from validation.profile import time_reference, time_shim

    cfg = load(args.project)
    out = Path(args.plan_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    pinned = dict(v.split("=", 1) for v in args.value)
    for wname, wf in cfg.workflows.items():
        if wf.language != "fortran" or (args.workflow and wname not in args.workflow):
            continue
        report = wf.output_dir / "report.json"
        if not report.is_file():
            print(f"{wname}: no report.json (run `translate run` first); skipped", file=sys.stderr)
            continue
        doc = json.loads(report.read_text())
        run = WorkflowRun(wf, Path(args.project), printer=lambda _m: None)
        ref_build = run.reference_build()
        for region in doc.get("regions", []):
            name = region["name"]
            if args.region and name not in args.region:
                continue
            ok = [t for t in GPU_TIMED if region.get("targets", {}).get(t, {}).get("status")
                  in ("validated", "compiled")]
            if not set(ok) - {"kokkos"}:  # none, or Kokkos alone (timed on this CPU already)
                continue
            kernel = run.analysed(name)  # as the renderers see it (a GPU-side search re-renders)
            rc = wf.region(name)
            values = {k: (v[0] if isinstance(v, list) else v) for k, v in rc.values.items()}
            override = {k: type(values[k])(v) for k, v in pinned.items() if k in values}
            values.update(override)
            label = name + "".join(f"[{k}={v}]" for k, v in override.items())
            sizes, w = scale_to(kernel, dict(rc.sizes), values, dict(rc.inputs), args.bytes, wf.root)
            print(f"{wname}/{label}: sizes {sizes}: {w.bytes / 1e9:.2f} GB, {w.flops / 1e9:.2f} GFLOP",
                  file=sys.stderr, flush=True)
            if w.bytes == 0:
                continue
            entry: dict[str, Any] = {"workflow": wname, "region": label, "sizes": sizes, "values": values,
                                     "inputs": dict(rc.inputs), "root": str(wf.root), "bytes": w.bytes,
                                     "flops": w.flops, "estimate": w.estimate, "targets": ok,
                                     "files": {t: str(wf.output_dir / t) for t in ok},
                                     "golden": str(wf.output_dir / "golden" / name),
                                     "levels": {t: LEVEL_OF.get(region["targets"][t].get("schedule"), 0) for t in ok},
                                     "matmul_library": wf.optimize.matmul == "library"}
            # the reference (and Kokkos) on this CPU, at a smaller size when it would take too long
            ref_sizes, factor = reference_sizes(kernel, sizes, values, dict(rc.inputs), w, args.max_ref_s, wf.root)
            case = make_case(kernel, ref_sizes, values, rc.inputs, SEED, wf.root)
            sig = signature(kernel, case.env | {k: v for k, v in ref_sizes.items() if k not in case.scalars})
            if ref_build is not None and ref_build.lib_dir is not None:
                t = time_reference(ref_build.lib_dir, ref_build.module, kernel, sig, case.scalars,
                                   {k: v.copy() for k, v in case.arrays.items()})
                entry["ref_time_s"] = t.median_s * factor
                entry["ref_estimated"] = factor != 1.0
            kb = build_candidate("kokkos", wf.output_dir / "kokkos", kernel)
            if kb.ok and kb.artifact is not None:
                t = time_shim(kb.artifact, kernel, sig, case.scalars, {k: v.copy() for k, v in case.arrays.items()})
                entry["kokkos_cpu_time_s"] = t.median_s * factor
            del case
            suffix = "".join(f"__{k}-{v}" for k, v in override.items())
            (out / f"{wname}__{name}{suffix}.pkl").write_bytes(pickle.dumps({"kernel": kernel, **entry}))
            rows.append(entry)
    print(cpu_table(rows))
    return 0


def gpu(args: argparse.Namespace) -> int:
    import torch

    from validation.ceilings import load_or_measure
    from validation.profile import gpu_call, precision, rates, time_on_gpu
    from validation.toolchains import find_kokkos

    if not torch.cuda.is_available():
        print("region_bench gpu: no CUDA GPU", file=sys.stderr)
        return 2
    if args.pin:
        from host_cpu import pin_near_gpu

        print(pin_near_gpu(), file=sys.stderr)
    ceilings = load_or_measure(device="gpu")
    plan_dir = Path(args.plan_dir)
    order = [r for r in args.regions.split(",") if r]
    plans = [pickle.loads(p.read_bytes()) for p in sorted(plan_dir.glob("*.pkl"))]
    plans = sorted((d for d in plans if not order or d["region"] in order),
                   key=lambda d: order.index(d["region"]) if d["region"] in order else 0)  # in the order given
    kokkos = find_kokkos()
    if kokkos is None or not kokkos.device:  # the plan's Kokkos was validated on the CPU: time it only on a GPU
        print("region_bench gpu: no Kokkos built for a GPU (set Kokkos_ROOT to one): Kokkos not timed",
              file=sys.stderr)
        for d in plans:
            d["targets"] = [t for t in d["targets"] if t != "kokkos"]
    else:
        print(f"region_bench gpu: Kokkos {kokkos.version} ({', '.join(kokkos.backends)}) from {kokkos.include}",
              file=sys.stderr)
    _prebuild(plans, plan_dir / ".cache")
    results: list[dict[str, Any]] = []
    kernels: dict[str, ir.Kernel] = {}
    for doc in plans:
        kernel: ir.Kernel = doc.pop("kernel")
        row = dict(doc)
        try:
            pc = _profile_case(doc, kernel)
            calls: dict[str, Callable[[], object]] = {}  # each target's call, made once for all rounds

            def timer(target: str, doc: dict[str, Any] = doc, kernel: ir.Kernel = kernel, pc: Any = pc,
                      calls: dict[str, Callable[[], object]] = calls) -> float:
                if target not in calls:
                    files = _local(Path(doc["files"][target]))
                    calls[target] = gpu_call(target, files, kernel, pc, plan_dir / ".cache")
                return time_on_gpu(calls[target]).median_s

            timed = time_rounds(doc["targets"], timer, args.rounds)
            calls.clear()
            torch.cuda.empty_cache()
            for target, got in timed.items():
                if isinstance(got, str):  # one target's failure does not stop the table
                    row[target] = {"error": got}
                    continue
                row[target] = rates(pc.work, statistics.median(got), ceilings, precision(kernel)).as_dict()
                if len(got) > 1:
                    row[target]["rounds_s"] = got
            if "matmul" in doc["region"] and {"m", "n", "k"} <= set(doc["sizes"]):
                row["cublas"] = _cublas(doc["sizes"], kernel, ceilings)
            del pc
        except Exception as exc:
            row["error"] = f"{type(exc).__name__}: {exc}"[:200]
        results.append(row)
        kernels[doc["region"]] = kernel
        print(f"  {doc['workflow']}/{doc['region']}: " + ", ".join(
            f"{t} {row[t]['time_s'] * 1e3:.3f} ms" if "time_s" in row.get(t, {}) else f"{t} {row.get(t)}"
            for t in doc["targets"]), file=sys.stderr, flush=True)
        _save_results(plan_dir, ceilings, results)
    if args.search:
        _search_slowest(results, kernels, args, plan_dir, ceilings)
        _save_results(plan_dir, ceilings, results)
    if args.variants:
        _try_variants(results, kernels, args.variants, plan_dir, ceilings)
        _save_results(plan_dir, ceilings, results)
    print(f"{ceilings.device}: copy {ceilings.copy_gbps:.0f} GB/s, fp64 {ceilings.fp64_gflops / 1e3:.1f} TFLOP/s, "
          f"fp32 {ceilings.fp32_gflops / 1e3:.1f} TFLOP/s (FMA); cuBLAS fp64 {ceilings.gemm_fp64_gflops / 1e3:.1f}, "
          f"fp32 {ceilings.gemm_fp32_gflops / 1e3:.1f} TFLOP/s")
    print(gpu_table(results))
    _charts(results, ceilings, plan_dir)
    return 0


def time_rounds(targets: list[str], timer: Callable[[str], float], rounds: int) -> dict[str, list[float] | str]:
    """Each target timed ``rounds`` times, the targets taking turns (cuda, triton, cuda,
    triton, ...) so that a slow spell of the machine falls on both; a target that fails is
    not timed again (its entry is the error)."""
    out: dict[str, list[float] | str] = {t: [] for t in targets}
    for _ in range(max(1, rounds)):
        for t in targets:
            got = out[t]
            if isinstance(got, str):
                continue
            try:
                got.append(timer(t))
            except Exception as exc:
                out[t] = f"{type(exc).__name__}: {exc}"[:200]
    return out


def _charts(results: list[dict[str, Any]], ceilings: Any, plan_dir: Path) -> None:
    """``roofline.svg`` (fp64 roof: the examples' regions are double precision) and
    ``speedup.svg`` (over the CPU reference) in the plan folder."""
    from graph.charts import Point, roofline_svg, speedup_svg

    points, bars = [], []
    for r in results:
        for t in GPU_TIMED:
            d = r.get(t)
            if isinstance(d, dict) and "time_s" in d and r["bytes"]:
                points.append(Point(r["region"], t, r["flops"] / r["bytes"], d["gflops"]))
                if r.get("ref_time_s"):
                    bars.append((f"{r['region']} ({t})", r["ref_time_s"] / d["time_s"]))
    if points:
        (plan_dir / "roofline.svg").write_text(roofline_svg(points, ceilings.copy_gbps, ceilings.fp64_gflops,
                                                            f"Fortran examples on {ceilings.device} (fp64 roof)"))
    if bars:
        (plan_dir / "speedup.svg").write_text(speedup_svg(bars, f"{ceilings.device} over the CPU reference"))


def _save_results(plan_dir: Path, ceilings: Any, results: list[dict[str, Any]]) -> None:
    """``results.json``, rewritten after every region (a run cut short keeps what it timed)."""
    (plan_dir / "results.json").write_text(json.dumps({"ceilings": ceilings.__dict__, "regions": results}, indent=1))


def _profile_case(doc: dict[str, Any], kernel: ir.Kernel) -> Any:
    """The planned case of one region (``validation.profile.ProfileCase``), made again
    from its seed at the planned sizes."""
    from validation.profile import ProfileCase

    case = make_case(kernel, doc["sizes"], doc["values"], doc["inputs"], SEED, _local(Path(doc["root"])))
    sig = signature(kernel, case.env | {k: v for k, v in doc["sizes"].items() if k not in case.scalars})
    return ProfileCase(case, sig, Work(doc["bytes"], doc["flops"], doc["estimate"]), doc["sizes"])


def _search_slowest(results: list[dict[str, Any]], kernels: dict[str, ir.Kernel], args: argparse.Namespace,
                    plan_dir: Path, ceilings: Any) -> None:
    """The variant search for the ``--search-top`` slowest targets below ``--search`` of the roof."""
    slow = sorted(((r[t]["fraction_of_peak"], r, t) for r in results for t in ("cuda", "triton")
                   if isinstance(r.get(t), dict) and r[t].get("fraction_of_peak") is not None
                   and r[t]["fraction_of_peak"] < args.search), key=lambda x: x[0])[: args.search_top]
    for _, r, t in slow:
        _search_target(r, t, kernels[r["region"]], "search", args.budget, plan_dir, ceilings)
        print(f"  search {r['region']} {t}: {r[t].get('search', {}).get('variant') or r[t].get('search_error')}",
              file=sys.stderr, flush=True)


def _search_target(r: dict[str, Any], t: str, kernel: ir.Kernel, key: str, budget: int, plan_dir: Path,
                   ceilings: Any, tries: list[Any] | None = None) -> None:
    """``_search`` of one region's target, its result (with the best variant's rates) in
    ``r[t][key]``, or the error in ``r[t][key + "_error"]``."""
    import torch

    from validation.profile import precision, rates

    try:
        pc = _profile_case(r, kernel)
        found = _search(t, kernel, r, pc, r[t]["time_s"], budget, plan_dir, ceilings.device, tries)
        found["best_rates"] = rates(pc.work, found["best_s"], ceilings, precision(kernel)).as_dict()
        r[t][key] = found
    except Exception as exc:
        r[t][f"{key}_error"] = f"{type(exc).__name__}: {exc}"[:200]
    torch.cuda.empty_cache()


def parse_variants(spec: str) -> dict[str, list[dict[str, Any]]]:
    """``cuda:run_length=4;triton:warps=8,block=512`` -> schedule fields per target (ints, booleans
    as true/false); the same target may come several times."""
    from dataclasses import fields

    from translate.schedule import Schedule

    kinds = {f.name: f.type for f in fields(Schedule)}
    out: dict[str, list[dict[str, Any]]] = {}
    for part in filter(None, (p.strip() for p in spec.split(";"))):
        target, _, knobs = part.partition(":")
        kw: dict[str, Any] = {}
        for item in filter(None, knobs.split(",")):
            name, _, value = item.partition("=")
            if name not in kinds:
                raise SystemExit(f"--variants: '{name}' is not a Schedule field ({', '.join(kinds)})")
            if kinds[name] in (bool, "bool", "bool | None") and value.lower() in ("none", "default"):
                kw[name] = None
            elif kinds[name] in (bool, "bool", "bool | None"):
                kw[name] = value.lower() in ("1", "true", "yes")
            else:
                kw[name] = int(value)
        out.setdefault(target.strip(), []).append(kw)
    return out


def _try_variants(results: list[dict[str, Any]], kernels: dict[str, ir.Kernel], spec: str, plan_dir: Path,
                  ceilings: Any) -> None:
    """Every timed region and target against the schedules of ``--variants``, side by side
    in the same run (each validated against the golden data first); the CUDA builds in parallel."""
    from dataclasses import replace

    wanted = parse_variants(spec)
    jobs = []
    for r in results:
        for t, kws in wanted.items():
            if isinstance(r.get(t), dict) and "time_s" in r[t]:
                jobs.append((r, t, [replace(_planned_schedule(r, t), **kw) for kw in kws]))
    _prebuild_variants(jobs, kernels, plan_dir)
    for r, t, tries in jobs:
        _search_target(r, t, kernels[r["region"]], "variants", len(tries), plan_dir, ceilings, tries)
        for h in r[t].get("variants", {}).get("history", []):
            print(f"  variants {r['region']} {t}: {h['variant']}: {h['status']} "
                  + (f"{h['time_s'] * 1e3:.3f} ms" if h.get("time_s") else str(h.get("reason"))[:100]),
                  file=sys.stderr, flush=True)
        if "variants_error" in r[t]:
            print(f"  variants {r['region']} {t}: {r[t]['variants_error']}", file=sys.stderr, flush=True)
        _save_results(plan_dir, ceilings, results)  # a run cut short keeps what it timed


def _prebuild_variants(jobs: list[tuple[dict[str, Any], str, list[Any]]], kernels: dict[str, ir.Kernel],
                       plan_dir: Path) -> None:
    """Compile the CUDA variants (validation and profiling builds) at once; the runs then hit the cache."""
    from targets.base import get_renderer

    folders = []
    for r, t, tries in jobs:
        if t != "cuda":
            continue
        kernel = kernels[r["region"]]
        for n, sch in enumerate(tries):
            folder = plan_dir / ".variants" / r["region"] / f"prebuild-{n}"
            try:
                get_renderer(t, sch).render(kernel, sch).write(folder)
            except Exception:  # reported when the variant is tried
                continue
            folders.append((folder / t, kernel))
    _build_cuda(folders, plan_dir / ".cache", validation=True)


def _planned_schedule(doc: dict[str, Any], target: str) -> Any:
    """The schedule the planned files of ``target`` were rendered with (its level, the library matmul)."""
    from translate.schedule import Schedule

    return Schedule(level=doc["levels"].get(target, 0), matmul_library=doc.get("matmul_library", True))


def _search(target: str, kernel: ir.Kernel, doc: dict[str, Any], pc: Any, current_s: float, budget: int,
            plan_dir: Path, device: str, tries: list[Any] | None = None) -> dict[str, Any]:
    """The optimize step's variant search on the GPU: each variant re-rendered, validated
    against the region's golden data (recorded on the planning machine), then timed."""
    from graph.optimize_steps import ResultCache, search, time_target
    from translate.schedule import Schedule
    from validation.golden import validate_against_golden

    golden = _local(Path(doc["golden"]))
    current = _planned_schedule(doc, target)

    def check(folder: Path, sch: Schedule) -> tuple[str, str | None]:
        comps = validate_against_golden(target, folder, golden, cache_dir=plan_dir / ".cache")
        bad = [c.reason for c in comps if not c.ok]
        return ("validated", None) if comps and not bad else ("failed", (bad or ["no golden cases"])[0])

    def timer(folder: Path) -> float:
        return time_target(target, folder, kernel, pc, plan_dir / ".cache", plan_dir)

    found = search(target, kernel, pc, current, current_s, budget,
                   plan_dir / ".variants" / doc["region"], ResultCache(plan_dir / ".cache" / "search"),
                   device, check, timer, loops_for_products=False, tries=tries)
    return {"before_s": found.before_s, "best_s": found.best_s, "variant": found.best.variant(),
            "history": found.history}


def _prebuild(plans: list[dict[str, Any]], cache: Path) -> None:
    """Compile every CUDA profiling entry and Kokkos build at once (nvcc is slow; the GPU host
    has many cores)."""
    _build_cuda([(_local(Path(d["files"]["cuda"])), d["kernel"]) for d in plans if "cuda" in d["targets"]], cache)
    _build_kokkos([(_local(Path(d["files"]["kokkos"])), d["kernel"]) for d in plans if "kokkos" in d["targets"]],
                  cache)


def _build_kokkos(folders: list[tuple[Path, ir.Kernel]], cache: Path) -> None:
    """The Kokkos build of each folder's region, 16 at a time (the cache then serves the golden
    check and the timing); a failure is reported again where the region is run."""
    from validation.builds import build_candidate

    _each(folders, "kokkos", lambda folder, kernel: build_candidate("kokkos", folder, kernel, cache))


def _each(jobs: list[tuple[Path, ir.Kernel]], what: str, build: Callable[[Path, ir.Kernel], object]) -> None:
    """``build`` on every (folder, kernel), 16 at a time; a failure is printed and left for the run."""
    from concurrent.futures import ThreadPoolExecutor

    def one(job: tuple[Path, ir.Kernel]) -> None:
        try:
            build(*job)
        except Exception as exc:
            print(f"  {job[0]}: {what} build: {exc}", file=sys.stderr)

    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(one, jobs))


def _build_cuda(folders: list[tuple[Path, ir.Kernel]], cache: Path, validation: bool = False) -> None:
    """The CUDA profiling entry (and with ``validation`` the validation build) of each folder's
    file, 16 at a time; a failure is printed here and reported again where the file is run."""
    from validation.builds import build_candidate, candidate_file
    from validation.profile import build_cuda_entry

    def build(folder: Path, kernel: ir.Kernel) -> None:
        if validation:
            build_candidate("cuda", folder, kernel, cache)
        src = candidate_file("cuda", folder, kernel.name)
        if src is not None:
            build_cuda_entry(src, kernel, signature(kernel), cache)

    _each(folders, "cuda", build)


def _cublas(sizes: dict[str, int], kernel: ir.Kernel, ceilings: Any) -> dict[str, Any]:
    """torch.matmul (cuBLAS, no TF32) at the region's m, n, k and precision, for the
    matrix-product regions: the rate a generated product is judged against."""
    import torch

    from validation.profile import precision, rates, time_on_gpu

    torch.backends.cuda.matmul.allow_tf32 = False
    dt = torch.float64 if precision(kernel) == "fp64" else torch.float32
    m, n, k = sizes["m"], sizes["n"], sizes["k"]
    a = torch.randn(m, k, dtype=dt, device="cuda")
    b = torch.randn(k, n, dtype=dt, device="cuda")
    c = torch.empty(m, n, dtype=dt, device="cuda")
    t = time_on_gpu(lambda: torch.matmul(a, b, out=c))
    w = Work((m * k + k * n + m * n) * a.element_size(), 2 * m * n * k, False)
    return rates(w, t.median_s, ceilings, precision(kernel)).as_dict()


def _local(path: Path) -> Path:
    """A plan written on another machine names its files there: find them under this checkout."""
    if path.exists():
        return path
    parts = path.parts
    for k in range(len(parts)):
        cand = REPO.joinpath(*parts[k:])
        if cand.exists():
            return cand
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="region_bench", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="step", required=True)
    p = sub.add_parser("plan", help="on the CPU machine: scale, time the reference, write plan files")
    p.add_argument("plan_dir")
    p.add_argument("--project", default=".")
    p.add_argument("--workflow", action="append", default=[])
    p.add_argument("--region", action="append", default=[], help="only these regions (repeatable)")
    p.add_argument("--value", action="append", default=[],
                   help="NAME=V: this value instead of the first one the workflow lists; the region is "
                        "labelled REGION[NAME=V] (repeatable), e.g. --value trans=T")
    p.add_argument("--bytes", type=float, default=2e9, help="compulsory bytes each region should move")
    p.add_argument("--max-ref-s", type=float, default=2.0, help="time the reference smaller when slower")
    g = sub.add_parser("gpu", help="on the GPU: time CUDA and Triton on the planned cases")
    g.add_argument("plan_dir")
    g.add_argument("--regions", default="")
    g.add_argument("--search", type=float, default=0.0,
                   help="search schedule variants for targets below this roofline fraction (0: no search)")
    g.add_argument("--budget", type=int, default=8, help="variants per searched target")
    g.add_argument("--search-top", type=int, default=3, help="search only the N slowest targets")
    g.add_argument("--rounds", type=int, default=3,
                   help="times each target is timed, the targets taking turns; the table shows the median")
    g.add_argument("--variants", default="",
                   help="time these schedules of every region side by side, e.g. 'cuda:run_length=4;triton:warps=8'")
    g.add_argument("--pin", action="store_true", help="run on one CPU local to the GPU (benchmarks/host_cpu.py)")
    t = sub.add_parser("table", help="print the table of a (possibly partial) gpu run's results.json")
    t.add_argument("plan_dir")
    args = ap.parse_args(argv)
    if args.step == "table":
        print(gpu_table(json.loads((Path(args.plan_dir) / "results.json").read_text())["regions"]))
        return 0
    return plan(args) if args.step == "plan" else gpu(args)


if __name__ == "__main__":
    sys.exit(main())
