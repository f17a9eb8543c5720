"""Each GPU target's defaults, one table per target: the numbers its mapping takes where the
schedule leaves a knob at its default (0 or None). Each says what it is and why it was chosen;
the timings behind them are in docs/measurements/tuning-evidence.md and the files it cites. The
schedule search (``graph.optimize_steps``) tries other values of the knobs these stand for."""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class CudaDefaults:
    # iterations per thread of a 1-D nest without reductions (``Schedule.run_length`` 0): of 1, 2,
    # 4 and 8 timed side by side on copy, scale, stencil and swap loops, 2 was fastest or close
    points_per_thread: int = 2
    # outer iterations each thread of a 2-D nest without reductions runs (neither a row walk nor
    # a plane walk; ``Schedule.row_pairs``): two neighbouring rows with their loads first beat one
    # point per thread and four rows on a rank-1 update
    row_pairs: int = 2
    # iterations of a 1-D reduction's grid-stride loop per step: their loads overlap
    reduce_unroll: int = 4
    # blocks of a pair reduction (``kt_pair_finish``): two waves of 256 threads on 132 SMs, so the
    # last block's join over every block's pair stays short
    pair_blocks: int = 2048
    # (rows of a block, planes per thread) of a 3-D nest walked by planes: best or near it on the
    # examples' 3-D stencils; runs of 4 planes a little faster than 8 without grid-stride loops
    plane_tile: tuple[int, int] = (4, 4)
    # rows each thread walks in a 2-D nest whose reads form a register queue (a 2-D stencil):
    # faster walked than at a point per thread; nests without a queue keep a point
    walk_rows: int = 8
    # a 2-D or 3-D nest of fewer iterations than the device's resident threads divided by this
    # runs blocks of one row (row pairs: of one warp), spread over more SMs (``kt_small_nest``)
    small_nest_share: int = 8


@dataclass(frozen=True)
class TritonDefaults:
    # num_warps where a launch does not say (Triton's own default)
    warps: int = 4
    # lanes of a reduction over two or more loops, in blocks: wider programs leave fewer partials
    # and keep more loads in flight
    wide_reduction: int = 4
    # lanes of an elementwise nest of two or more loops addressed at its flat offsets
    # (translate.flat), in blocks: 1024 lanes at 4 warps reached the copy rate on sigmoid and ELU,
    # 256 lanes 91-97% of it (benchmarks/probes/elementwise_tile.py); 1-D nests keep one block
    flat_width: int = 4
    # lanes of a program walking rows of a 2-D nest, in blocks: strips of 512 lanes (4 warps) were
    # fastest, 256 a little slower, 1024 (8 warps) far slower
    walk_width: int = 2
    # BLOCK-wide tiles one program of a reduction sums before it leaves its partial
    reduce_tiles: int = 8
    # tiles of a pair reduction's programs (``translate.argreduce``): each ends in a join across its
    # lanes, so fewer, longer programs; 32 tiles of 256 lanes beat 8 or 16 and wider programs
    pair_tiles: int = 32
    # (rows of a tile, planes per run) of a 3-D nest walked by planes
    plane_tile: tuple[int, int] = (2, 8)
    # planes per run of a 3-D walk that keeps a register queue: no slower than loading every
    # plane, and much faster on lap3d than runs of 8 with the queue
    queued_planes: int = 4
    # rows a program walks in a 2-D nest with reductions (one partial per program); without
    # reductions a walk of rows was slower than the flat form in every variant timed
    walk_rows: int = 16
    # inner loops of at most this many iterations (constant) are written out in a walk, so their
    # reads join the register queues (field_summary_like's 2x2 corners of a cell)
    short_loop: int = 4


@dataclass(frozen=True)
class KokkosDefaults:
    # the MDRange tile of a 2-D or 3-D nest where Kokkos runs on a GPU (fastest loop, next loop;
    # 1 for the rest): Kokkos 4 chooses 16 x 2 there, blocks of 32 threads of which an SM holds
    # at most 32, so half its threads at best; a warp along contiguous memory by 8 rows fills
    # blocks of 256. On the host the tile stays Kokkos' own (whole rows of the fastest loop).
    gpu_tile: tuple[int, int] = (32, 8)
    # a nest of fewer iterations than the device's resident threads divided by this runs tiles of
    # one row (blocks of one warp): blocks of 8 rows would leave most SMs idle (NPB BT's (j, k)
    # solver nests: 62 x 62 iterations of a long serial body, 16 blocks of 256 against 124 of 32)
    small_nest_share: int = 8


CUDA = CudaDefaults()
TRITON = TritonDefaults()
KOKKOS = KokkosDefaults()
# the targets whose nests may walk planes or rows (targets.planes), by name
WALKING = MappingProxyType({"cuda": CUDA, "triton": TRITON})
