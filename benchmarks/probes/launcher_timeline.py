"""Probe: where a generated Triton reduction launcher's time goes on the GPU's own clock.

The region table times a launcher between two CUDA events with the L2 flushed before each call
(``validation.timing.time_gpu``). This runs that loop under ``torch.profiler`` (CUPTI) and prints, per
call and as medians over the calls, the GPU's activities after the flush ends: when each kernel and
copy starts and how long it runs, relative to the end of the flush, against the event-timed call. A
gap before the first kernel is the host still launching it; the event-timed call's end past the last
copy is the host waking up from the wait and returning.

``python benchmarks/probes/launcher_timeline.py`` from the repository root after ``scripts/run-examples``
(field_summary_like, vdot and ivamax at the region table's sizes)."""

import statistics
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_common import field_summary_arrays, first_max_data, load  # noqa: E402

OUT = Path("examples/fortran_numerics/out")
FLUSH = 256 * 1024 * 1024 // 4  # validation.timing's L2 flush, int32 elements


def short(name: str) -> str:
    if "Memcpy" in name or "Memset" in name:
        return name.split("(")[0].strip()
    if "FillFunctor" in name:
        return "fill"
    if "reduce_kernel" in name:
        return "torch reduce"
    return name.split("<")[0].split("(")[0].replace("void ", "").strip()[:34]


def timeline(label: str, fn: Callable[[], object], calls: int = 12) -> None:
    """Run ``fn`` as ``time_gpu`` does under the profiler and print its GPU activities per call."""
    flush = torch.empty(FLUSH, dtype=torch.int32, device="cuda")
    for _ in range(3):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for s, e in zip(starts, ends, strict=True):
            flush.zero_()
            s.record()
            fn()
            e.record()
        torch.cuda.synchronize()
    timed = [s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends, strict=True)]
    events = sorted(prof.events(), key=lambda ev: ev.time_range.start)
    gpu = [ev for ev in events if ev.device_type == torch.autograd.DeviceType.CUDA]
    fills = [ev for ev in gpu if short(ev.name) == "fill" and ev.time_range.elapsed_us() > 20]
    rows: dict[str, list[tuple[float, float]]] = defaultdict(list)
    print(f"## {label}: event-timed {statistics.median(timed):.1f} us median over {calls} calls", flush=True)
    for k, fill in enumerate(fills):
        t0 = fill.time_range.end
        t1 = fills[k + 1].time_range.start if k + 1 < len(fills) else float("inf")
        acts = [ev for ev in gpu if t0 <= ev.time_range.start < t1]
        seen: dict[str, int] = defaultdict(int)
        line = []
        for ev in acts:
            name = short(ev.name)
            seen[name] += 1
            key = name if seen[name] == 1 else f"{name}#{seen[name]}"
            rows[key].append((ev.time_range.start - t0, ev.time_range.elapsed_us()))
            line.append(f"{key} @{ev.time_range.start - t0:.1f}+{ev.time_range.elapsed_us():.1f}")
        if k < 3:
            print(f"  call {k}: " + "; ".join(line), flush=True)
    for key, vals in rows.items():
        print(f"  median {key:36s} starts {statistics.median(v[0] for v in vals):8.1f} us after the flush, "
              f"runs {statistics.median(v[1] for v in vals):8.1f} us", flush=True)


def field_summary() -> None:
    fs = load(OUT / "numerics_stencils/triton/field_summary_like_triton.py", "fs_timeline")
    nx, ny = 8132, 6776
    cells, vels = field_summary_arrays(nx, ny)
    timeline("field_summary_like", lambda: fs.field_summary_like(1, nx, 1, ny, *cells, *vels, 0.0, 0.0, 0.0, 0.0, 0.0))


def vdot() -> None:
    vd = load(OUT / "numerics_blas1/triton/vdot_triton.py", "vdot_timeline")
    n = 143_750_000
    x = torch.rand(n, dtype=torch.float64, device="cuda")
    y = torch.rand(n, dtype=torch.float64, device="cuda")
    timeline("vdot", lambda: vd.vdot(n - 3, x, 1, y, 1))


def ivamax() -> None:
    iv = load(OUT / "numerics_blas1/triton/ivamax_triton.py", "ivamax_timeline")
    n, x, _ = first_max_data()
    timeline("ivamax", lambda: iv.ivamax(n, x, 1))


def main() -> None:
    for probe in (field_summary, vdot, ivamax):
        probe()
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
