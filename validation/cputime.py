"""The CPU time a process group has consumed, read from Linux's /proc.

``group_seconds(pgid)`` sums user + system time over every live process of the
group (all their threads included) plus the time of the children they have
already reaped (cutime + cstime), so a worker that forks helpers is charged
for them too. Used by :func:`validation.processes.run_process` to limit what a
validation run actually computed rather than the wall-clock time it spent
waiting for a core on a busy machine.
"""

from __future__ import annotations

import os
from pathlib import Path

PROC = Path("/proc")


def available() -> bool:
    """Whether this system exposes per-process CPU times in /proc (Linux)."""
    return (PROC / "self" / "stat").exists()


def _stat_fields(stat: bytes) -> list[bytes]:
    # the command name (field 2) is in parentheses and may itself hold spaces or ')'
    return stat[stat.rindex(b")") + 2:].split()


def group_seconds(pgid: int) -> float:
    """CPU seconds used so far by process group ``pgid`` (0.0 once it is gone)."""
    return group_usage(pgid)[0]


def group_usage(pgid: int) -> tuple[float, int]:
    """CPU seconds used so far by process group ``pgid`` and how many processes it has now."""
    ticks = count = 0
    for entry in os.scandir(PROC):
        if not entry.name.isdigit():
            continue
        try:
            with open(os.path.join(entry.path, "stat"), "rb") as f:
                fields = _stat_fields(f.read())
        except (OSError, ValueError):
            continue  # exited meanwhile
        # after the name: state ppid pgrp ... utime(11) stime(12) cutime(13) cstime(14)
        if len(fields) > 14 and int(fields[2]) == pgid:
            ticks += sum(int(x) for x in fields[11:15])
            count += 1
    return ticks / os.sysconf("SC_CLK_TCK"), count
