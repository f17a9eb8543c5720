"""Triton jacobi3d and lap3d at the region table's sizes: the generated launchers (every plane
loaded), the same with the streamed arrays evict_first or runs of 4 planes, and hand-written plane
walks that carry the centre column's planes in registers (pointers advanced a plane per step),
called in turns (CUDA events around each call, L2 flushed between calls); every form's output is
compared with the generated one's. Run from the repository root after `scripts/run-examples`:
`python benchmarks/probes/triton_plane_forms.py` (with TRITON_INTERPRET=1 on a CPU: small sizes,
the comparison only)."""

import importlib.util
import re
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch
import triton
import triton.language as tl

SRC = Path("examples/fortran_numerics/out/numerics_stencils/triton")
ROOF = 4284.0  # GB/s: the copy roof the percentages are of (docs/measurements/tuning-evidence.md)


def load(text: str, name: str):
    path = Path(tempfile.mkdtemp()) / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def evict(src: str, streams: list[str], outs: list[str]) -> str:
    """The loads of ``streams`` and the stores to ``outs`` marked evict_first."""
    for a in streams:
        src = re.sub(rf"tl\.load\(({a} \+ [^,]*), mask=in_plane, other=0\.0\)",
                     r'tl.load(\1, mask=in_plane, other=0.0, eviction_policy="evict_first")', src)
    for a in outs:
        src = re.sub(rf"(tl\.store\({a} \+ .*), mask=in_plane\)\n",
                     r'\1, mask=in_plane, eviction_policy="evict_first")\n', src)
    return src


def planes(src: str, n: int) -> str:
    return src.replace("PLANES=8)", f"PLANES={n})").replace("triton.cdiv(k_trip, 8)", f"triton.cdiv(k_trip, {n})")


@triton.jit
def _walk_start(u, nx, ny, k_trip, j_trip, i_trip, BLOCK: tl.constexpr, ROWS: tl.constexpr, PLANES: tl.constexpr):
    """The program's lanes at its first plane: u's centre pointers, the output offsets, the
    first plane, the tile's mask, and the queue's two planes below and at the centre."""
    pid = tl.program_id(0).to(tl.int64)
    lane = tl.arange(0, BLOCK)
    width = BLOCK // ROWS
    across = tl.cdiv(i_trip, width)
    down = tl.cdiv(j_trip, ROWS)
    i = (pid % across) * width + lane % width
    j = (pid // across % down) * ROWS + lane // width
    first = pid // across // down * PLANES
    mask = (i < i_trip) & (j < j_trip)
    c = u + (i + 1) + (nx + 2) * ((j + 1) + (ny + 2) * (first + 1))
    live = mask & (tl.zeros([BLOCK], tl.int64) + first < k_trip)
    below = tl.load(c - (nx + 2) * (ny + 2), mask=live, other=0.0)
    mid = tl.load(c, mask=live, other=0.0)
    return c, i + nx * (j + ny * first), first, mask, below, mid


@triton.jit
def _around(c, nx, in_plane):
    """The four in-plane neighbours of the centre pointer ``c``."""
    west = tl.load(c - 1, mask=in_plane, other=0.0)
    east = tl.load(c + 1, mask=in_plane, other=0.0)
    south = tl.load(c - (nx + 2), mask=in_plane, other=0.0)
    north = tl.load(c + (nx + 2), mask=in_plane, other=0.0)
    return ((west + east) + south) + north


@triton.jit
def jacobi3d_queue(f, u, unew, nx, ny, h: tl.float64, diag: tl.float64, k_trip, j_trip, i_trip,
                   BLOCK: tl.constexpr, ROWS: tl.constexpr, PLANES: tl.constexpr):
    nx = tl.cast(nx, tl.int64)
    ny = tl.cast(ny, tl.int64)
    c, o, first, mask, below, mid = _walk_start(u, nx, ny, k_trip, j_trip, i_trip, BLOCK, ROWS, PLANES)
    zero_lanes = tl.zeros([BLOCK], tl.int64)
    plane = (nx + 2) * (ny + 2)
    for run in range(PLANES):
        in_plane = mask & (zero_lanes + first + run < k_trip)
        above = tl.load(c + plane, mask=in_plane, other=0.0)
        nb = 1.0 * ((_around(c, nx, in_plane) + below) + above)
        rhs = (h * h) * tl.load(f + o, mask=in_plane, other=0.0) + nb
        tl.store(unew + o, (0.33333333333333337 * mid) + ((0.6666666666666666 * rhs) / diag), mask=in_plane)
        below = mid
        mid = above
        c += plane
        o += nx * ny


@triton.jit
def lap3d_queue(u, lu, nx, ny, r: tl.float64, k_trip, j_trip, i_trip,
                BLOCK: tl.constexpr, ROWS: tl.constexpr, PLANES: tl.constexpr):
    nx = tl.cast(nx, tl.int64)
    ny = tl.cast(ny, tl.int64)
    c, o, first, mask, below, mid = _walk_start(u, nx, ny, k_trip, j_trip, i_trip, BLOCK, ROWS, PLANES)
    zero_lanes = tl.zeros([BLOCK], tl.int64)
    plane = (nx + 2) * (ny + 2)
    for run in range(PLANES):
        in_plane = mask & (zero_lanes + first + run < k_trip)
        above = tl.load(c + plane, mask=in_plane, other=0.0)
        tl.store(lu + o, r * (((-6.0) * mid) + (1.0 * ((_around(c, nx, in_plane) + below) + above))), mask=in_plane)
        below = mid
        mid = above
        c += plane
        o += nx * ny


def queued(region: str, block: int = 256, rows: int = 2, n_planes: int = 8) -> Callable[..., dict]:
    """A launcher of the hand-written walk with the generated launcher's arguments."""
    def jacobi3d(nx, ny, nz, h, f, u, unew):
        grid = (triton.cdiv(nx, block // rows) * triton.cdiv(ny, rows) * triton.cdiv(nz, n_planes),)
        jacobi3d_queue[grid](f, u, unew, int(nx), int(ny), float(h), 6.0, nz, ny, nx,
                             BLOCK=block, ROWS=rows, PLANES=n_planes)
        return {}

    def lap3d(nx, ny, nz, h, u, lu):
        grid = (triton.cdiv(nx, block // rows) * triton.cdiv(ny, rows) * triton.cdiv(nz, n_planes),)
        lap3d_queue[grid](u, lu, int(nx), int(ny), 1.0 / (h * h), nz, ny, nx, BLOCK=block, ROWS=rows, PLANES=n_planes)
        return {}

    return jacobi3d if region == "jacobi3d" else lap3d


def main() -> None:
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    small = dev == "cpu"
    g = torch.Generator(device=dev).manual_seed(5)
    flush = torch.empty((256 << 20) if not small else 1, dtype=torch.uint8, device=dev)
    for region, (nx, ny, nz), streams, outs in [("jacobi3d", (559, 466, 373), ["f"], ["unew"]),
                                                ("lap3d", (698, 582, 466), [], ["lu"])]:
        if small:
            nx, ny, nz = 13, 7, 5
        src = (SRC / f"{region}_triton.py").read_text()
        texts = {"generated": src, "generated, streams evict_first": evict(src, streams, outs),
                 "generated, 4 planes": planes(src, 4)}
        fns = {k: getattr(load(v, f"{region}_{i}"), region) for i, (k, v) in enumerate(texts.items())}
        fns["plane queue, 8 planes"] = queued(region)
        fns["plane queue, 4 planes"] = queued(region, n_planes=4)
        fns["plane queue, 8 planes, 64x4"] = queued(region, rows=4)
        u = torch.rand((nx + 2) * (ny + 2) * (nz + 2), dtype=torch.float64, device=dev, generator=g)
        f = torch.rand(nx * ny * nz, dtype=torch.float64, device=dev, generator=g)
        outs_t = {k: torch.zeros(nx * ny * nz, dtype=torch.float64, device=dev) for k in fns}
        inputs = (f, u) if region == "jacobi3d" else (u,)
        calls = {k: (lambda fn=fn, o=outs_t[k], dims=(nx, ny, nz), ins=inputs: fn(*dims, 0.37, *ins, o))
                 for k, fn in fns.items()}
        for call in calls.values():
            call()
        ref = outs_t["generated"]
        for k, o in outs_t.items():
            print(f"{region} {k}: sum {float(o.abs().sum()):.6g}, differs from generated at "
                  f"{int((o != ref).sum())} of {o.numel()}", flush=True)
        if small:
            continue
        nbytes = 8.0 * (u.numel() + nx * ny * nz * (2 if region == "jacobi3d" else 1))
        times: dict[str, list[float]] = {k: [] for k in calls}
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for _ in range(30):
            for k, call in calls.items():
                flush.zero_()
                start.record()
                call()
                end.record()
                end.synchronize()
                times[k].append(start.elapsed_time(end))
        for k, t in times.items():
            ms = statistics.median(t)
            gbs = nbytes / ms / 1e6
            print(f"{region} {k:44s} {ms:7.3f} ms  {gbs:6.0f} GB/s  {100 * gbs / ROOF:3.0f}%", flush=True)


main()
