"""Probe: where the generated Triton field_summary_like launcher spends the time around its kernel, and which part
of it varies between processes. At the region table's size (8132 x 6776 cells), timed as the region table times
(CUDA events around each call, L2 flushed between calls, 3 rounds of 30 calls in turns): the kernel alone; the
kernel and the partials' device sum; that and ``.tolist()`` (the results brought to the host: a sync and a copy);
the kernel and a bare ``torch.cuda.synchronize()``; the whole launcher. An end event recorded after a sync is queued
only once the host has woken up from it, so the host's wake-up is in every time that syncs.

``python benchmarks/probes/reduction_sync.py FILE`` from the repository root (FILE: a generated
field_summary_like_triton.py; run it in several processes)."""

import sys
from collections.abc import Callable
from pathlib import Path

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_common import field_summary_arrays, in_turns, load, rounds_text  # noqa: E402


def main() -> None:
    mod = load(sys.argv[1], "fs")
    nx, ny = 8132, 6776
    cells, vels = field_summary_arrays(nx, ny)
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
    for name, ts in in_turns(calls).items():
        print(f"{name:22s} {rounds_text(ts)}", flush=True)


if __name__ == "__main__":
    main()
