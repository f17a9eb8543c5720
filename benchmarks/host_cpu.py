"""Pinning a GPU benchmark's process to one CPU that the GPU is local to (``region_bench.py gpu
--pin``). The host's part of a timed call (a launch, the wait for a result) varied between
processes on a GPU machine, and far less between processes pinned with taskset
(docs/measurements/tuning-evidence.md); pinning takes the process's CPU out of that comparison."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SYSFS = Path("/sys/bus/pci/devices")


def cpu_list(text: str) -> list[int]:
    """The CPUs of a Linux cpulist ("0-3,8,10-11")."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        if part:
            first, _, last = part.partition("-")
            cpus += range(int(first), int(last or first) + 1)
    return cpus


def sysfs_bus_id(bus_id: str) -> str:
    """nvidia-smi's PCI bus id ("00000000:19:00.0") as sysfs names the device ("0000:19:00.0")."""
    domain, _, rest = bus_id.strip().lower().partition(":")
    return f"{int(domain, 16):04x}:{rest}"


def gpu_bus_id() -> str | None:
    """The first GPU's PCI bus id from nvidia-smi, or None."""
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=pci.bus_id", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = done.stdout.split()
    return lines[0] if done.returncode == 0 and lines else None


def choose_cpu(local: list[int], allowed: set[int]) -> int:
    """The first CPU local to the GPU that this process may run on, else its first allowed one."""
    return next((c for c in local if c in allowed), min(allowed))


def pin_near_gpu(sysfs: Path = SYSFS) -> str:
    """Pins this process to one CPU local to the first GPU; says which, and why that one."""
    allowed = os.sched_getaffinity(0)
    bus = gpu_bus_id()
    path = sysfs / sysfs_bus_id(bus) / "local_cpulist" if bus else None
    text = path.read_text().strip() if path is not None and path.exists() else ""
    local = cpu_list(text)
    cpu = choose_cpu(local, allowed)
    os.sched_setaffinity(0, {cpu})
    where = f"local to the GPU at {bus} ({text})" if local else "no GPU-local list found"
    return f"host process pinned to CPU {cpu}: {where}"
