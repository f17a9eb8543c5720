"""field_summary_like's Triton launcher, the previous file (five partial arrays, 256 lanes) against
the current (one array of partials, 1024 lanes), called in turns at the region table's size."""

import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_common import load  # noqa: E402


def main() -> None:
    new = load(sys.argv[1], "fs_new")
    old = load(sys.argv[2], "fs_old")
    x0, x1, y0, y1 = (
        1,
        int(sys.argv[3]) if len(sys.argv) > 3 else 8132,
        1,
        int(sys.argv[4]) if len(sys.argv) > 4 else 6776,
    )
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    g = torch.Generator(device=dev).manual_seed(3)
    cells = (x1 - x0 + 5) * (y1 - y0 + 5)
    nodes = (x1 - x0 + 6) * (y1 - y0 + 6)
    arrs = [torch.rand(cells, dtype=torch.float64, device=dev, generator=g) for _ in range(4)]
    arrs += [torch.rand(nodes, dtype=torch.float64, device=dev, generator=g) for _ in range(2)]
    nbytes = 8.0 * (4 * (x1 - x0 + 1) * (y1 - y0 + 1) + 2 * (x1 - x0 + 2) * (y1 - y0 + 2))
    flush = torch.empty(256 << 20 if dev == "cuda" else 1, dtype=torch.uint8, device=dev)
    calls = {
        "previous (5 partial arrays, 256 lanes)": old.field_summary_like,
        "current (one partials array, 1024 lanes)": new.field_summary_like,
    }
    got = {}
    for name, fn in calls.items():
        for _ in range(3):
            got[name] = fn(x0, x1, y0, y1, *arrs, 0.0, 0.0, 0.0, 0.0, 0.0)
    a, b = got.values()
    print("results agree:", all(abs(a[k] - b[k]) <= 1e-12 * abs(a[k]) for k in a), a)
    if dev == "cpu":
        return
    times = {n: [] for n in calls}
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(40):
        for name, fn in calls.items():
            flush.zero_()
            start.record()
            fn(x0, x1, y0, y1, *arrs, 0.0, 0.0, 0.0, 0.0, 0.0)
            end.record()
            end.synchronize()
            times[name].append(start.elapsed_time(end))
    for name, t in times.items():
        ms = statistics.median(t)
        print(f"{name:44s} {ms:7.3f} ms  {nbytes / ms / 1e6:6.0f} GB/s  {100 * nbytes / ms / 1e6 / 4284:3.0f}%")


if __name__ == "__main__":
    main()
