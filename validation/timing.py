"""Timing with the right clock (docs/ARCHITECTURE.md, "Profiling and optimization").

:func:`time_gpu` times each run with its own pair of CUDA events, after warm-up,
with the L2 cache flushed between runs (a 256 MB buffer is zeroed before each
run, outside the timed interval). :func:`time_cpu` times with
:func:`time.perf_counter` and repeats until it has both ``reps`` runs and
``min_time_s`` seconds of them. Both report the median and the minimum.

Nothing here is kept between calls; torch is imported only by :func:`time_gpu`.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

L2_FLUSH_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class Timing:
    median_s: float
    min_s: float
    runs: int

    @classmethod
    def of(cls, seconds: list[float]) -> Timing:
        if not seconds:
            raise ValueError("no runs were timed")
        return cls(statistics.median(seconds), min(seconds), len(seconds))


def time_gpu(fn: Callable[[], object], *, warmup: int = 5, reps: int = 50, flush_l2: bool = True) -> Timing:
    """Median and minimum of ``reps`` runs of ``fn`` on the current CUDA device.

    Every run is bracketed by its own CUDA events on the current stream; the
    events are read once all runs are queued, so the host does not stall the
    device between runs. ``fn`` must launch its work on the current stream.
    """
    import torch  # deferred: torch takes seconds to import; only the paths that use it pay

    if reps < 1:
        raise ValueError("reps must be at least 1")
    for _ in range(warmup):
        fn()
    flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda") if flush_l2 else None
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    torch.cuda.synchronize()
    for start, end in zip(starts, ends, strict=True):
        if flush is not None:
            flush.zero_()
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return Timing.of([s.elapsed_time(e) / 1e3 for s, e in zip(starts, ends, strict=True)])


def time_cpu(
    fn: Callable[[], object],
    *,
    warmup: int = 1,
    reps: int = 7,
    min_time_s: float = 0.2,
    max_reps: int = 10_000,
    clock: Callable[[], float] = time.perf_counter,
) -> Timing:
    """Median and minimum of at least ``reps`` runs of ``fn`` that together take at
    least ``min_time_s`` (but never more than ``max_reps`` runs)."""
    if reps < 1 or max_reps < reps:
        raise ValueError("need 1 <= reps <= max_reps")
    for _ in range(warmup):
        fn()
    seconds: list[float] = []
    while len(seconds) < reps or (sum(seconds) < min_time_s and len(seconds) < max_reps):
        t0 = clock()
        fn()
        seconds.append(clock() - t0)
    return Timing.of(seconds)
