"""How each device segment of a Triton translation runs, decided once before any text is
printed. :func:`map_segments` gives every device segment a :class:`TritonMapping`; the launcher
writer (``targets.triton``) reads it where it emits the segment and where it decides whether a
serial segment may be launched after the nest that follows it (``targets.triton_order``).

The shapes, in the order they are tried for a parallel nest: one program per row
(``targets.triton_rows``, where the schedule allows row programs), a split serial loop
(``targets.splits``), a walk over planes or rows (``targets.planes``), else a flat tile over the
collapsed trip count. Serial device code runs as a parallel scan where it is a linear recurrence
(``targets.triton_scan``), else as one program.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from targets.planes import queued, triton_walk
from targets.splits import Split, split_nest
from targets.triton_rows import row_nest
from translate import ir
from translate.flat import FlatIndex, flat_index
from translate.partition import DeviceNest, DeviceSerial, device_segments, scan_segment
from translate.schedule import Schedule


class Shape(Enum):
    ROWS = "rows"  # one program per row (tl.arange over the row)
    SPLIT = "split"  # the serial loop cut into chunks over a second grid axis
    WALK = "walk"  # each program walks a run of planes (3-D) or rows (2-D)
    TILE = "tile"  # a BLOCK-wide tile over the collapsed trip count
    SCAN = "scan"  # a linear recurrence as a parallel scan in three kernels
    SERIAL = "serial"  # serial device code as one program


@dataclass(frozen=True)
class TritonMapping:
    """One segment's shape and what its kernel is emitted from."""

    shape: Shape
    nest: DeviceNest | None = None  # WALK, TILE: the nest as emitted (short inner loops written out for a walk)
    split: Split | None = None  # SPLIT: the chunks of the serial loop
    walk: tuple[int, int] | None = None  # WALK: (rows of a tile, planes or rows per program)
    queued: bool = False  # WALK, TILE, SPLIT: whether a walk keeps register queues
    scan: ir.Loop | None = None  # SCAN: the recurrence
    flat: FlatIndex | None = None  # TILE: the accesses at the lane's flat index (translate.flat)


def map_nest(seg: DeviceNest, kernel: ir.Kernel, schedule: Schedule) -> TritonMapping:
    if schedule.row_programs and row_nest(seg, kernel):
        return TritonMapping(Shape.ROWS)
    if (split := split_nest(seg, kernel, schedule)) is not None:
        return TritonMapping(Shape.SPLIT, seg, split=split, queued=queued(schedule, seg, "triton"))
    nest, walk = triton_walk(seg, kernel, schedule)
    if walk:
        return TritonMapping(Shape.WALK, nest, walk=walk, queued=queued(schedule, nest, "triton"))
    return TritonMapping(Shape.TILE, nest, queued=queued(schedule, nest, "triton"), flat=flat_index(nest, kernel))


def map_segments(kernel: ir.Kernel, schedule: Schedule, segments: tuple) -> dict[str, TritonMapping]:
    """Every device segment's mapping (nested segments included), by segment name."""
    out: dict[str, TritonMapping] = {}
    for seg in device_segments(segments):
        if isinstance(seg, DeviceNest):
            out[seg.name] = map_nest(seg, kernel, schedule)
        elif isinstance(seg, DeviceSerial) and (loop := scan_segment(seg)) is not None:
            out[seg.name] = TritonMapping(Shape.SCAN, scan=loop)
        else:
            out[seg.name] = TritonMapping(Shape.SERIAL)
    return out
