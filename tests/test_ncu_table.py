"""benchmarks/ncu_table.py reads Nsight Compute's CSV (units as ncu writes them: ns, bytes with
thousands separators) and reports the largest launch's share of the ceiling."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.ncu_table import launches, table

HEAD = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
        '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')


def _row(launch: int, kernel: str, metric: str, unit: str, value: str) -> str:
    return (f'"{launch}","1","mg","h","kt_d::{kernel}(int, double *)","1","7","(160, 1, 1)","(100, 1, 1)","0","9.0",'
            f'"Command line profiler metrics","{metric}","{unit}","{value}"')


def test_the_largest_launch_of_each_kernel_against_the_ceiling(tmp_path: Path) -> None:
    rows = ["==PROF== Connected to process 1", HEAD]
    for launch, ns, read in ((0, "1,000", "1,500,000"), (1, "2,000,000", "3,000,000,000")):
        rows += [_row(launch, "resid_loop1", "gpu__time_duration.sum", "ns", ns),
                 _row(launch, "resid_loop1", "dram__bytes_read.sum", "byte", read),
                 _row(launch, "resid_loop1", "dram__bytes_write.sum", "byte", "1,000,000,000")]
    log = tmp_path / "ncu.csv"
    log.write_text("\n".join(rows) + "\n")
    got = sorted(launches(log))
    assert [g[0] for g in got] == ["resid_loop1"] * 2
    assert [g[1:] for g in got] == [pytest.approx((1e-6, 1.0015e9)), pytest.approx((2e-3, 4e9))]
    (line,) = [r for r in table(log, 4000e9) if r.startswith("resid_loop1")]
    # 4 GB in 2 ms = 2000 GB/s, half the 4000 GB/s ceiling; the 1 us launch is not the largest
    assert line.split()[1] == "2" and line.split()[-2:] == ["2000", "50%"]
