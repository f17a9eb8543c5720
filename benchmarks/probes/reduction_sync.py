"""Probe: where the generated Triton field_summary_like launcher spends the time around its kernel, and which part
of it varies between processes. At the region table's size (8132 x 6776 cells), timed as the region table times
(CUDA events around each call, L2 flushed between calls, 3 rounds of 30 calls in turns): the kernel alone; the
kernel and the partials' device sum; that and ``.tolist()`` (the results brought to the host: a sync and a copy);
the kernel and a bare ``torch.cuda.synchronize()``; the whole launcher. An end event recorded after a sync is queued
only once the host has woken up from it, so the host's wake-up is in every time that syncs.

``python benchmarks/probes/reduction_sync.py FILE`` from the repository root (FILE: a generated
field_summary_like_triton.py; run it in several processes)."""

import importlib.util
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from validation.timing import time_gpu  # noqa: E402


def main() -> None:
    spec = importlib.util.spec_from_file_location("fs", sys.argv[1])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    nx, ny = 8132, 6776
    g = torch.Generator(device="cuda").manual_seed(0)
    cells = [torch.rand((nx + 4) * (ny + 4), dtype=torch.float64, device="cuda", generator=g) for _ in range(4)]
    vels = [torch.rand((nx + 5) * (ny + 5), dtype=torch.float64, device="cuda", generator=g) for _ in range(2)]
    grid = (triton.cdiv(nx, 512) * triton.cdiv(ny, 16),)  # the launcher's walk: 512 lanes walking runs of 16 rows
    part = torch.empty((5, grid[0]), dtype=torch.float64, device="cuda")

    def kernel() -> None:
        mod.field_summary_like_loop1[grid](*cells, *vels, 1, nx, 1, ny, ny, nx, *part, BLOCK=512, PLANES=16)

    def summed() -> None:
        kernel()
        part.sum(dim=1)

    def fetched() -> None:
        kernel()
        part.sum(dim=1).tolist()

    def synced() -> None:
        kernel()
        torch.cuda.synchronize()

    def launcher() -> None:
        mod.field_summary_like(1, nx, 1, ny, *cells, *vels, 0.0, 0.0, 0.0, 0.0, 0.0)

    calls: dict[str, Callable[[], None]] = {"kernel": kernel, "kernel+sum": summed, "kernel+sum+tolist": fetched,
                                            "kernel+synchronize": synced, "launcher": launcher}
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(3):
        for name, fn in calls.items():
            times[name].append(time_gpu(fn, reps=30).median_s)
    for name, ts in times.items():
        print(f"{name:22s} {statistics.median(ts) * 1e3:.3f} ms rounds " + " / ".join(f"{t * 1e3:.3f}" for t in ts),
              flush=True)


if __name__ == "__main__":
    main()
