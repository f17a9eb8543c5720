"""The tables ``benchmarks/region_bench.py`` prints: the planning machine's (reference and
Kokkos on the CPU) and the GPU's (CUDA, Triton and a GPU-built Kokkos against the roofline, the searches, the
schedules timed side by side, the rounds that disagreed, cuBLAS next to the matrix products)."""

from __future__ import annotations

import math
from typing import Any

# the targets timed on the GPU, in the table's column order (Kokkos: built for a GPU backend)
GPU_TIMED = ("cuda", "triton", "kokkos")


def ms(v: float | None, approx: bool = False) -> str:
    return "-" if v is None else f"{'~' if approx else ''}{v * 1e3:.3f}"


def cpu_table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'region':<38} {'GB':>7} {'GFLOP':>8} {'ref CPU ms':>12} {'kokkos CPU ms':>14}", "-" * 80]
    for r in rows:
        lines.append(f"{r['workflow'] + '/' + r['region']:<38} {r['bytes'] / 1e9:>7.2f} {r['flops'] / 1e9:>8.2f} "
                     f"{ms(r.get('ref_time_s'), r.get('ref_estimated', False)):>12} "
                     f"{ms(r.get('kokkos_cpu_time_s'), r.get('ref_estimated', False)):>14}")
    return "\n".join(lines)


# ---------------------------------------------------------------- gpu


def gpu_table(results: list[dict[str, Any]]) -> str:
    shown = [t for t in GPU_TIMED if any(r.get(t) for r in results)] or ["cuda", "triton"]
    head = f"{'region':<38} {'GB':>6} {'GFLOP':>8} {'ref CPU ms':>11}" + "".join(
        f" | {t + ' ms':>9} {'GB/s':>6} {'roof':>5} {'vs ref':>7}" for t in shown)
    lines = [head, "-" * len(head)]
    fracs: dict[str, list[float]] = {t: [] for t in shown}
    for r in results:
        cells = []
        for t in shown:
            d = r.get(t)
            if not d:
                cells.append(f"{'-':>9} {'':>6} {'':>5} {'':>7}")
            elif "error" in d:
                cells.append(f"{'failed':>9} {'':>6} {'':>5} {'':>7}")
            else:
                ref = r.get("ref_time_s")
                vs = f"{ref / d['time_s']:.0f}x" if ref else "-"
                frac = d["fraction_of_peak"]
                fracs[t].append(frac)
                cells.append(f"{d['time_s'] * 1e3:>9.3f} {d['gbps']:>6.0f} {frac * 100:>4.0f}% {vs:>7}")
        lines.append(f"{r['workflow'] + '/' + r['region']:<38} {r['bytes'] / 1e9:>6.2f} {r['flops'] / 1e9:>8.2f} "
                     f"{ms(r.get('ref_time_s'), r.get('ref_estimated', False)):>11}"
                     + "".join(f" | {c}" for c in cells))
    lines.append("-" * len(head))
    for t, fs in fracs.items():
        if fs:
            g = math.exp(sum(math.log(max(f, 1e-9)) for f in fs) / len(fs))
            lines.append(f"{t}: {len(fs)} regions timed; roofline fraction geometric mean {g * 100:.0f}%, "
                         f"at least 80%: {sum(f >= 0.8 for f in fs)}")
    lines.append("roof: the time the ceilings allow (bytes at the copy bandwidth or flops at the FMA rate) / "
                 "the time measured; vs ref: speedup over the f2py reference on the planning CPU "
                 "(~: timed smaller, scaled by the work)")
    found = [(r, t) for r in results for t in ("cuda", "triton") if isinstance(r.get(t), dict) and r[t].get("search")]
    if found:
        lines.append("schedule search (variants validated against the golden data, then timed):")
    for r, t in found:
        sr = r[t]["search"]
        tried = sum(1 for h in sr["history"][1:] if h.get("status") == "validated")
        frac = sr.get("best_rates", {}).get("fraction_of_peak")
        lines.append(f"  {r['workflow']}/{r['region']} {t}: {sr['before_s'] * 1e3:.3f} -> {sr['best_s'] * 1e3:.3f} ms "
                     f"({sr['before_s'] / sr['best_s']:.2f}x) with {sr['variant']}"
                     f"{f', {frac * 100:.0f}% of the roof' if frac is not None else ''}; "
                     f"{tried} of {len(sr['history']) - 1} variants validated")
    for r in results:
        for t in GPU_TIMED:
            got = r.get(t, {}).get("rounds_s") if isinstance(r.get(t), dict) else None
            if got and max(got) > 1.05 * min(got):
                lines.append(f"  {r['region']} {t}: rounds {' / '.join(f'{x * 1e3:.3f}' for x in got)} ms "
                             f"(the median is in the table)")
    tried = [(r, t) for r in results for t in ("cuda", "triton") if isinstance(r.get(t), dict) and r[t].get("variants")]
    if tried:
        lines.append("schedules side by side (--variants; validated against the golden data, then timed):")
    for r, t in tried:
        now = r[t]
        for h in now["variants"]["history"]:
            cell = (f"{h['time_s'] * 1e3:.3f} ms {now['fraction_of_peak'] * now['time_s'] / h['time_s'] * 100:.0f}%"
                    if h.get("time_s") else f"{h['status']}: {h.get('reason') or ''}"[:90])
            lines.append(f"  {r['region']:<22} {t:<6} {h['variant']:<60} {cell}")
    for r in results:
        if r.get("cublas"):
            cb = r["cublas"]
            mine = [f"{t} {cb['time_s'] / r[t]['time_s']:.2f}x" for t in GPU_TIMED
                    if isinstance(r.get(t), dict) and "time_s" in r[t]]
            lines.append(f"  {r['region']}: cuBLAS (torch.matmul, same m, n, k) {cb['time_s'] * 1e3:.3f} ms, "
                         f"{cb['gflops'] / 1e3:.1f} TFLOP/s; generated as a fraction of cuBLAS: {', '.join(mine)}")
    for r in results:
        errs = [f"{t}: {r[t]['error']}" for t in GPU_TIMED if isinstance(r.get(t), dict) and "error" in r[t]]
        if r.get("error") or errs:
            lines.append(f"  {r['region']}: {r.get('error') or '; '.join(errs)}")
    return "\n".join(lines)
