"""Per-kernel DRAM traffic from Nsight Compute logs, as a fraction of a copy ceiling.

    python benchmarks/ncu_table.py CEILING_GB_S LOG.csv [LOG.csv ...]

Each log is what ``ncu --csv --log-file LOG.csv --metrics
gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum ...`` writes for a run of a
program (a migrated program's kernels inside it). Prints, per kernel name, the launches profiled,
their time and DRAM bytes, and for the launch that moved the most bytes (a multigrid's finest
level) its bandwidth and that bandwidth's share of the ceiling (a device-to-device copy's bytes
read + written per second, measured on the same GPU).
"""

from __future__ import annotations

import csv
import sys
from collections import defaultdict
from pathlib import Path

_METRICS = ("gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum")


def launches(path: Path) -> list[tuple[str, float, float]]:
    """(kernel name, seconds, DRAM bytes) per profiled launch."""
    lines = [line for line in path.read_text().splitlines() if not line.startswith("==")]
    per: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for row in csv.DictReader(lines):
        name = row["Kernel Name"].split("(")[0].split("::")[-1]
        per[(row["ID"], name)][row["Metric Name"]] = float(row["Metric Value"].replace(",", ""))
    out = []
    for (_, name), m in per.items():
        if all(k in m for k in _METRICS):
            out.append((name, m[_METRICS[0]] * 1e-9, m[_METRICS[1]] + m[_METRICS[2]]))
    return out


def table(path: Path, ceiling: float) -> list[str]:
    total: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0.0, 0.0])
    for name, s, b in launches(path):
        t = total[name]
        t[0] += 1
        t[1] += s
        t[2] += b
        if b > t[4]:
            t[3], t[4] = s, b
    rows = [f"== {path.name}",
            f"{'kernel':24s} {'launches':>8s} {'ms':>8s} {'DRAM GB':>8s} {'GB/s':>6s} | "
            f"largest launch: {'MB':>7s} {'us':>8s} {'GB/s':>6s} {'of copy':>7s}"]
    for name, (n, s, b, s1, b1) in sorted(total.items(), key=lambda kv: -kv[1][1]):
        rate = b1 / s1 if s1 else 0.0
        rows.append(f"{name:24s} {int(n):8d} {s * 1e3:8.3f} {b / 1e9:8.3f} {b / s / 1e9 if s else 0:6.0f} | "
                    f"{'':15s} {b1 / 1e6:7.1f} {s1 * 1e6:8.1f} {rate / 1e9:6.0f} {rate / ceiling * 100:6.0f}%")
    return rows


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    ceiling = float(argv[0]) * 1e9
    for name in argv[1:]:
        print("\n".join(table(Path(name), ceiling)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
