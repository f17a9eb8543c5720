"""The profile and optimize steps of a Fortran region (docs/ARCHITECTURE.md, "Profiling
and optimization"), called by :class:`graph.pipeline.WorkflowRun`.

Profile: one case at the profiling sizes (``optimize.sizes`` over the region's
sizes; the first of every listed value), its work (:mod:`validation.costs`), the
f2py reference and every validated target that can run on this machine timed
(Kokkos on the CPU; CUDA and Triton only where a GPU is), and the rates against
the machine's ceilings (:mod:`validation.ceilings`, measured once and cached).

Optimize: a target below ``optimize.fraction`` of its roofline gets up to
``optimize.budget`` schedule variants (loop levels and block sizes the renderer
takes); each is rendered into a scratch folder, validated like the original, and
timed only if it validated. Results are cached per (variant source, device,
sizes), so a rerun times nothing twice. The fastest validated variant is then timed
again in turns with the current schedule (a time measured minutes earlier, under
another load, is no yardstick) and replaces the files in the output folder only
if it still wins by 5%; the report keeps the whole search.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graph.config import OptimizeConfig, RegionConfig
from targets.base import TARGETS, Unsupported, get_renderer
from translate import contraction, ir
from translate.schedule import Schedule
from validation import timed, toolchains
from validation.builds import build_candidate
from validation.ceilings import load_or_measure
from validation.compare import compare
from validation.costs import case_env, work
from validation.inputs import Case, make_case
from validation.profile import ProfileCase, gpu_call, precision, rates, time_on_gpu
from validation.runners import candidate_job, run_candidate_cases, run_reference_cases
from validation.signature import reduces, signature

if TYPE_CHECKING:
    from targets.base import Rendered

PROFILE_SEED = 4242
MIN_GAIN = 0.95  # a variant replaces the current schedule only when at least 5% faster (timing noise)
TURNS = 2  # rounds of timing in turns (a winner against the current version): best of each
GPU_TARGETS = tuple(name for name, t in TARGETS.items() if t.gpu)
BLOCKS = {"cuda": (128, 256, 512, 1024), "triton": (128, 256, 512, 1024, 2048), "kokkos": (256,)}
LEVELS = {"cuda": (0, 1), "triton": (0, 1), "kokkos": (0, 1, 2)}
# (block rows, planes) tried for 3-D nests walked by planes (targets.planes); (0, 1): a point per thread.
# CUDA 2-D nests: runs of 8 (a stencil's default), 4 or 16 rows per thread, or a point; CUDA 1-D
# nests: 1, 8, 4 or 16 iterations per thread (targets.cuda_points)
PLANES = {"cuda": ((0, 1), (0, 8), (8, 4), (2, 16)), "triton": ((0, 1), (0, 8), (4, 4), (4, 8), (8, 4))}


def profile_case(kernel: ir.Kernel, cfg: RegionConfig, opt: OptimizeConfig, root: Path) -> ProfileCase:
    sizes = {k: int(v) for k, v in {**cfg.sizes, **opt.sizes}.items() if isinstance(v, int)}
    values = {k: (v[0] if isinstance(v, list) else v) for k, v in cfg.values.items()}
    case = make_case(kernel, sizes, values, cfg.inputs, PROFILE_SEED, root)
    sig = signature(kernel, case.env | {k: v for k, v in sizes.items() if k not in case.scalars})
    return ProfileCase(case, sig, work(kernel, case_env(case)), sizes)


TIMED_CALLS = 5  # timed calls of untrusted code, each on inputs of its own (plus a warm-up)
TIMING_MEMORY = 1 << 30  # bytes of inputs the timed calls may hold together


class TimingMismatch(RuntimeError):
    """A timed call of untrusted code gave results that differ from the reference's."""


def timing_cases(kernel: ir.Kernel, cfg: RegionConfig, opt: OptimizeConfig, root: Path, pc: ProfileCase) -> list[Case]:
    """Fresh inputs for the timed calls of untrusted code: secret seeds at the profiling sizes,
    a warm-up and up to TIMED_CALLS more (fewer where the inputs are large)."""

    per_case = max(1, sum(int(a.nbytes) for a in pc.case.arrays.values()))
    calls = max(3, min(TIMED_CALLS, TIMING_MEMORY // per_case - 1))
    values = {k: (v[0] if isinstance(v, list) else v) for k, v in cfg.values.items()}
    return [make_case(kernel, pc.sizes, values, cfg.inputs, 1 + secrets.randbelow(2**30), root)
            for _ in range(calls + 1)]


def time_untrusted(target: str, files_dir: Path, kernel: ir.Kernel, cases: list[Case], reference: Any,
                   cache_dir: Path, workdir: Path, tolerance: tuple[float, float] | None = None) -> float:
    """Median seconds of a call of code nobody has read (an LLM's): run in the sandbox, timed by
    this process's clock (:mod:`validation.timed`) on fresh inputs per call, and every timed
    call's outputs compared with the reference's on the same inputs (:class:`TimingMismatch`)."""

    if reference is None or reference.lib_dir is None:
        raise RuntimeError("no reference to check the timed calls against")
    b = build_candidate(target, files_dir, kernel, cache_dir, check_symbols=True)
    if not b.ok or b.artifact is None:
        raise RuntimeError(f"{target} does not build: {b.reason}")
    gpu = target in GPU_TARGETS and toolchains.has_gpu()
    job = candidate_job(target, b.artifact, kernel, gpu)
    entry = kernel.name.lower()
    ref_job = {"mode": "reference", "lib_dir": str(reference.lib_dir), "module": reference.module,
               "entry": f"kt_ref_{entry}"}
    expected = timed.time_calls(ref_job, kernel, cases, workdir, sandboxed=False)
    got = timed.time_calls(job, kernel, cases, workdir, sandboxed=True, gpu=gpu)
    for k, (case, ref, out) in enumerate(zip(cases, expected.outputs, got.outputs, strict=True)):
        cmp = compare(kernel, ref, out, reduces(kernel), case.env, tolerance)
        if not cmp.ok:
            raise TimingMismatch(f"timed call {k} on fresh inputs gave other results than the reference: "
                                 f"{cmp.reason}")
    return got.median_s


def runs_here(target: str) -> bool:
    """Whether ``target``'s kernels run here as they would for a user (a GPU target's on a GPU)."""
    return not TARGETS[target].gpu or toolchains.has_gpu()


CPU_TIMING = {"reps": 5, "min_time_s": 0.1}


def time_target(target: str, files_dir: Path, kernel: ir.Kernel, pc: ProfileCase, cache_dir: Path,
                workdir: Path) -> float:
    """Median seconds of one call of the target's code in ``files_dir`` on the profiling case:
    Kokkos in a worker subprocess (a crash at the profiling sizes fails this target only),
    CUDA and Triton on the GPU on device-resident arrays."""

    if target == "kokkos":
        (r,) = run_candidate_cases("kokkos", files_dir, kernel, [pc.case], workdir, cache_dir, timeout=600,
                                   gpu=False, timing=CPU_TIMING)
        if not r.ok:
            raise RuntimeError(f"kokkos at the profiling sizes: {r.reason}")
        return r.seconds

    return time_on_gpu(gpu_call(target, files_dir, kernel, pc, cache_dir)).median_s


def time_reference(build: Any, kernel: ir.Kernel, pc: ProfileCase, workdir: Path) -> float | None:
    """Median seconds of the f2py reference on the profiling case, in a worker subprocess."""

    if build is None or build.lib_dir is None:
        return None
    (r,) = run_reference_cases(build, kernel, [pc.case], workdir, timeout=600, timing=CPU_TIMING)
    if not r.ok:
        raise RuntimeError(f"the reference at the profiling sizes: {r.reason}")
    return r.seconds


def ceilings_for(target: str) -> Any:

    return load_or_measure(device="gpu" if target in GPU_TARGETS else "cpu")


def measured(target: str, kernel: ir.Kernel, pc: ProfileCase, seconds: float, ref_s: float | None,
             variant: str) -> dict[str, Any]:
    """The report's profile fields of one target."""

    ceil = ceilings_for(target)
    prec = precision(kernel)
    r = rates(pc.work, seconds, ceil, prec)
    roof = {"device": ceil.device, "copy_gbps": ceil.copy_gbps,
            "peak_gflops": ceil.fp64_gflops if prec == "fp64" else ceil.fp32_gflops, "precision": prec}
    return {"time_s": seconds, "ref_time_s": ref_s, "speedup": (ref_s / seconds) if ref_s else None,
            "gbps": r.gbps, "gflops": r.gflops, "fraction_of_peak": r.fraction_of_peak, "bound": r.bound,
            "variant": variant, "profile_sizes": pc.sizes, "work_bytes": pc.work.bytes, "work_flops": pc.work.flops,
            "roof": roof}


def variants(target: str, current: Schedule, budget: int | None = None, kernel: ir.Kernel | None = None,
             loops_for_products: bool = True) -> list[Schedule]:
    """Schedules to try, the current one excluded, at most ``budget`` (None: all): matrix products as
    loops where a product was recognised, the source loop order where the analysis found
    an interchange, rows the other way (a program, warp or team per row, or a thread per
    row), whole serial loops (GPU targets), other tiles of 3-D nests walked by planes or a
    point per thread (GPU targets), 8 or 4 warps and shared subscripts first (Triton), grid-stride
    loops, double2 pairs, row pairs and 2-D blocks (CUDA), then loop levels and block sizes.
    ``loops_for_products=False`` leaves out the loop form of a product (hours at sizes that fill a
    GPU)."""
    out = []
    if kernel is not None and loops_for_products and contraction.has_product(kernel):
        out.append(replace(current, contraction=not current.contraction))
    if kernel is not None and any(isinstance(n, ir.Loop) and n.swappable for s in kernel.body for n in ir.walk(s)):
        out.append(replace(current, interchange=not current.interchange))
    # the same code as the current when the kernel has no row nest or no 2-D nest: skipped unmeasured
    out.append(replace(current, row_programs=not current.row_programs))
    if target in ("cuda", "triton"):
        out.append(replace(current, split_serial=not current.split_serial))
    if target in PLANES:  # 3-D nests only (elsewhere the same code): a point per thread, other tiles
        out += [replace(current, block_rows=r, run_length=m) for r, m in PLANES[target]]
    if target == "triton":  # 8 warps where the default is 4, 4 where it is 8 (targets.triton.default_warps)
        out += [replace(current, warps=w) for w in (8, 4) if w != current.warps]
        # no shared 1-D subscripts: the same code
        out.append(replace(current, shared_subscript_first=not current.shared_subscript_first))
    if target == "cuda":
        out.append(replace(current, grid_stride=not current.grid_stride))
        out.append(replace(current, vectors=not current.vectors))  # 1-D fp64 nests: double2 pairs or not
        out.append(replace(current, row_pairs=not current.row_pairs))  # 2-D nests: two rows per thread
    if target in ("cuda", "triton"):  # walks: register queues or loads
        out += [replace(current, register_queues=q) for q in (True, False) if q != current.register_queues]
    if target in ("cuda", "kokkos"):  # 2-D and 3-D nests: CUDA thread blocks, Kokkos MDRange tiles of 32x8, 64x4
        out += [replace(current, block_rows=r) for r in (8, 4) if r != current.block_rows]
    out += [replace(current, level=lv, block=b) for lv in LEVELS.get(target, (0,)) for b in BLOCKS.get(target, (256,))]
    return [s for s in out if s != current][:budget]  # [:None] keeps all


class ResultCache:
    """Variant results on disk: ``<dir>/<sha>.json`` keyed by the variant's source,
    the device and the profiling sizes."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @staticmethod
    def key(source: str, device: str, sizes: dict[str, int]) -> str:
        text = json.dumps([source, device, sorted(sizes.items())])
        return hashlib.sha256(text.encode()).hexdigest()[:24]

    def get(self, key: str) -> dict[str, Any] | None:
        path = self.folder / f"{key}.json"
        try:
            return json.loads(path.read_text()) if path.is_file() else None
        except (OSError, ValueError):
            return None

    def put(self, key: str, value: dict[str, Any]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.folder / f".{key}.tmp"
        tmp.write_text(json.dumps(value))
        tmp.replace(self.folder / f"{key}.json")


@dataclass(frozen=True)
class SearchResult:
    best: Schedule
    best_s: float
    before_s: float  # the current schedule's time the best one is compared with
    history: list[dict[str, Any]]


def search(target: str, kernel: ir.Kernel, pc: ProfileCase, current: Schedule, current_s: float, budget: int,
           scratch: Path, cache: ResultCache, device: str,
           validate: Callable[[Path, Schedule], tuple[str, str | None]],
           timer: Callable[[Path], float], loops_for_products: bool = True, tries: list[Schedule] | None = None,
           ) -> SearchResult:
    """Try the variants of one target (``tries``, else :func:`variants`): render, validate
    (``validate(dir, schedule)`` -> (status, reason)), time the validated ones (``timer(dir)``);
    the fastest is then timed in turns with the current schedule (:func:`confirm`). The
    history has the current schedule first and the confirmation last."""

    # the current schedule's time is cached like the variants': a rerun compares the same numbers
    current_rendered = get_renderer(target, current).render(kernel, current)
    current_source = current_rendered.source
    mine = cache.key(current_source, device, pc.sizes)
    seen = cache.get(mine)
    if seen is not None and seen.get("time_s") is not None:
        current_s = float(seen["time_s"])
    else:
        cache.put(mine, {"status": "validated", "reason": None, "time_s": current_s})
    history = [{"variant": current.variant(), "status": "validated", "time_s": current_s, "current": True,
                **({"cached": True} if seen is not None else {})}]
    best, best_s = current, current_s
    best_rendered: Rendered | None = None  # the fastest variant's files, if one beat the current
    tried = 0
    sources = {current_source: "the current"}  # a variant rendering the same code as an earlier one is skipped
    for sch in tries if tries is not None else variants(target, current, None, kernel, loops_for_products):
        if tried == budget:
            break
        folder = scratch / f"{target}-{len(history)}-level{sch.level}-block{sch.block}"
        try:
            rendered = get_renderer(target, sch).render(kernel, sch)
        except Unsupported as err:
            history.append({"variant": sch.variant(), "status": "unsupported", "reason": str(err)})
            continue
        if rendered.source in sources:
            history.append({"variant": sch.variant(), "status": "skipped",
                            "reason": f"the same code as {sources[rendered.source]}"})
            continue
        sources[rendered.source] = f"'{sch.variant()}'"
        tried += 1  # the budget counts variants with code of their own
        key = cache.key(rendered.source, device, pc.sizes)
        got = cache.get(key)
        if got is None:
            rendered.write(folder)
            status, reason = validate(folder / target, sch)
            got = {"status": status, "reason": reason, "time_s": None}
            if status == "validated":
                try:
                    got["time_s"] = timer(folder / target)
                except Exception as exc:  # a variant that cannot be timed is not chosen
                    got = {"status": "failed", "reason": f"timing: {type(exc).__name__}: {exc}", "time_s": None}
            cache.put(key, got)
        else:
            got = {**got, "cached": True}
        history.append({"variant": sch.variant(), **got})
        if got.get("time_s") is not None and got["time_s"] < min(best_s, current_s * MIN_GAIN):
            best, best_s, best_rendered = sch, float(got["time_s"]), rendered
    if best_rendered is None:
        return SearchResult(current, current_s, current_s, history)
    key = cache.key(current_source + "\0" + best_rendered.source, device, pc.sizes)
    got = cache.get(key)
    if got is None:
        got = confirm(target, {"best": (best, best_rendered), "current": (current, current_rendered)}, scratch,
                      timer)
        cache.put(key, got)
    else:
        got = {**got, "cached": True}
    history.append({"variant": f"{best.variant()} against the current, timed in turns", **got})
    if got["status"] != "confirmed":
        return SearchResult(current, current_s, current_s, history)
    return SearchResult(best, got["time_s"], got["current_time_s"], history)


def confirm(target: str, pair: dict[str, tuple[Schedule, Rendered]], scratch: Path,
            timer: Callable[[Path], float]) -> dict[str, Any]:
    """The search's winner (``pair["best"]``, its schedule and rendered files) and the current
    schedule timed in turns, the winner first: "confirmed" when the best of the winner's times beats the best of
    the current's by 5%."""
    folders = {}
    for role, (sch, rendered) in pair.items():
        folder = scratch / f"{target}-{role}-level{sch.level}-block{sch.block}"
        rendered.write(folder)
        folders[role] = folder / target
    try:
        times = time_in_turns({role: lambda f=folder: timer(f) for role, folder in folders.items()})
    except Exception as exc:
        return {"status": "failed", "reason": f"timing: {type(exc).__name__}: {exc}", "time_s": None}
    best_s, current_s = min(times["best"]), min(times["current"])
    won = best_s < current_s * MIN_GAIN
    return {"status": "confirmed" if won else "not confirmed", "time_s": best_s, "current_time_s": current_s,
            "reason": None if won else f"{best_s * 1e3:.3f} ms against the current's {current_s * 1e3:.3f} ms: "
                                       "not 5% faster side by side"}


def time_in_turns(calls: dict[str, Callable[[], float]], rounds: int = TURNS) -> dict[str, list[float]]:
    """Each call's seconds, ``rounds`` times, the calls taking turns so that all of them see the
    same machine load (a time measured earlier, under another load, is no yardstick)."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            times[name].append(call())
    return times
