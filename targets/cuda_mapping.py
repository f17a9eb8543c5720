"""How each device segment of a CUDA translation runs on the GPU, decided once before any text
is printed. :func:`map_segments` gives every segment a :class:`CudaMapping`; the kernel and
its launch (``targets.cuda``) both read it, so they cannot disagree about a nest's shape.

The shapes, in the order they are tried for a parallel nest: one warp per row
(``targets.cuda_rows``), a split serial loop (``targets.splits``), a walk over planes
(``targets.planes``), a 1-D reduction, two iterations per thread as one 16-byte access per
array, several iterations per thread a block apart, two neighbouring rows per thread
(``targets.cuda_points``), else a thread per point. Serial device code runs as a CUB scan where
it is a linear recurrence (``targets.cuda_scan``), else on one thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from targets.cuda_points import row_pairs, vector_pairs
from targets.cuda_rows import warp_row_nest
from targets.cuda_scan import runs_as_scan
from targets.defaults import CUDA
from targets.planes import plane_walk
from targets.splits import Split, split_nest
from translate import ir
from translate.partition import DeviceNest, DeviceSerial
from translate.schedule import Schedule

if TYPE_CHECKING:
    from targets.cuda import CudaRenderer


class Shape(Enum):
    ROWS = "rows"  # one warp per row
    SPLIT = "split"  # the serial loop cut into chunks over blockIdx.y
    PLANES = "planes"  # a 2-D thread block, each thread walking a run of planes
    REDUCTION = "reduction"  # a 1-D nest with reductions, unrolled by the thread
    VECTOR_PAIRS = "vector_pairs"  # two iterations per thread as one 16-byte access per array
    POINTS = "points"  # several iterations per thread, a block apart
    ROW_PAIRS = "row_pairs"  # two neighbouring rows per thread
    GRID = "grid"  # a thread per point (in grid-stride loops where the grid is capped)
    SCAN = "scan"  # a linear recurrence as one CUB scan
    SERIAL = "serial"  # serial device code on one thread


@dataclass(frozen=True)
class CudaMapping:
    """One segment's shape and the numbers its kernel and launch share."""

    shape: Shape
    points: int = 1  # iterations each thread runs along the only loop (POINTS, VECTOR_PAIRS)
    block_rows: int = 0  # PLANES: rows of the thread block
    planes: int = 0  # PLANES: planes each thread walks
    split: Split | None = None  # SPLIT: the chunks of the serial loop
    accesses: Mapping[str, ir.Load] | None = None  # VECTOR_PAIRS: the one access of each array
    scan: ir.Loop | None = None  # SCAN: the recurrence

    @property
    def walk(self) -> tuple[int, int] | None:
        """(block rows, planes per thread) of a walk over planes, else None."""
        return (self.block_rows, self.planes) if self.shape is Shape.PLANES else None


def points_per_thread(seg: DeviceNest, schedule: Schedule) -> int:
    """Iterations each thread of a 1-D nest without reductions runs, a block apart
    (``Schedule.run_length``; 0: ``CudaDefaults.points_per_thread``, or one where the body holds
    loops: each point is then a long serial run, and two per thread halve the threads of a short
    nest: matmul_nn's epilogue, a column per thread, made the region faster with one column per
    thread than with two, timed in turns in the region search; docs/measurements/tuning-evidence.md)."""
    if len(seg.loops) != 1 or seg.reductions:
        return 1
    if schedule.run_length == 0 and any(isinstance(n, ir.Loop) for s in seg.body for n in ir.walk(s)):
        return 1
    return schedule.run_length or CUDA.points_per_thread


def map_nest(r: CudaRenderer, seg: DeviceNest) -> CudaMapping:
    if warp_row_nest(r, seg):
        return CudaMapping(Shape.ROWS)
    if (split := split_nest(seg, r.kernel, r.schedule)) is not None:
        return CudaMapping(Shape.SPLIT, split=split)
    points = points_per_thread(seg, r.schedule)
    if (walk := plane_walk(seg, r.kernel, r.schedule, "cuda")) is not None:
        return CudaMapping(Shape.PLANES, points, block_rows=walk[0], planes=walk[1])
    if len(seg.loops) == 1 and seg.reductions:
        return CudaMapping(Shape.REDUCTION, points)
    if (accesses := vector_pairs(r, seg, points)) is not None:
        return CudaMapping(Shape.VECTOR_PAIRS, points, accesses=accesses)
    if points > 1:
        return CudaMapping(Shape.POINTS, points)
    if row_pairs(r, seg):
        return CudaMapping(Shape.ROW_PAIRS)
    return CudaMapping(Shape.GRID)


def map_segments(r: CudaRenderer, segments: tuple[DeviceNest | DeviceSerial, ...]) -> dict[str, CudaMapping]:
    """Every device segment's mapping, by segment name."""
    out: dict[str, CudaMapping] = {}
    for seg in segments:
        if isinstance(seg, DeviceNest):
            out[seg.name] = map_nest(r, seg)
        elif (loop := runs_as_scan(r, seg)) is not None:
            out[seg.name] = CudaMapping(Shape.SCAN, scan=loop)
        else:
            out[seg.name] = CudaMapping(Shape.SERIAL)
    return out
