"""benchmarks/host_cpu.py: reading which CPUs a GPU is local to, and which one to pin to."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from host_cpu import choose_cpu, cpu_list, sysfs_bus_id  # noqa: E402


def test_cpu_lists_and_bus_ids() -> None:
    assert cpu_list("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert cpu_list("5") == [5]
    assert sysfs_bus_id("00000000:19:00.0") == "0000:19:00.0"
    assert sysfs_bus_id("00000001:AB:00.0\n") == "0001:ab:00.0"


def test_the_first_local_cpu_the_process_may_use() -> None:
    assert choose_cpu([16, 17, 18], {0, 1, 17, 18}) == 17
    assert choose_cpu([], {3, 2}) == 2  # no local list: the first allowed CPU
    assert choose_cpu([16], {0, 1}) == 0  # none of the local ones allowed
