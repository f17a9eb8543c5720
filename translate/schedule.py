"""Schedules: how much of the analysed parallelism a translation uses (``Schedule``, its
levels and the knobs the targets and the schedule search read) and ``apply_schedule``. The
host/device partition of a routine that every target renders from is ``translate.partition``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from translate import contraction, interchange, ir, scan
from translate.distribute import distribute
from translate.recompute import recompute


@dataclass(frozen=True)
class Schedule:
    """``level`` 0 uses the analysis as is; 1 keeps only the outermost parallel
    loop of each nest (no collapse); 2 runs everything serially on the device.
    The retry edge of the workflow walks these levels."""

    level: int = 0
    block: int = 256
    # a nest whose body loops over the contiguous dim of a row (softmax, norms, row sums, a
    # dot product down each matrix column) runs one program (Triton), warp (CUDA) or team
    # (Kokkos) per row, its lanes along the row
    row_programs: bool = True
    # CUDA: threads of a block along the second loop of a 2-D or 3-D nest (blockDim.y); the
    # block is block // block_rows wide, so a stencil's neighbouring rows share a block.
    # Triton: rows of a program's tile in a 3-D nest walked by planes. Kokkos: the MDRange tile
    # of a 2-D or 3-D nest, (block // block_rows) x block_rows (x 1). 0: the target's default
    # (targets.planes: 3-D nests walked by planes; 1 otherwise; Kokkos: targets.defaults' GPU tile
    # where it runs on a GPU, its own tiles on the host)
    block_rows: int = 0
    # a 3-D nest without reductions: each CUDA thread or Triton program walks runs of this
    # many consecutive iterations of the loop slowest in memory (targets.planes; neighbouring
    # planes from registers or L1); 1: a thread or lane per point; 0: the target's default.
    # CUDA 2-D nests: runs of this many rows per thread; CUDA 1-D nests without reductions:
    # this many iterations per thread, a block apart (targets.cuda_points)
    run_length: int = 0
    # CUDA: a 2-D nest without reductions that walks no rows runs two neighbouring iterations of its
    # outer loop per thread, the loads of both first (targets.cuda_points.paired_rows): faster than a
    # point per thread on rank1_concurrent and ideal_gas_like, side by side in the region table
    # (docs/measurements/tuning-evidence.md)
    row_pairs: bool = True
    # reads of neighbouring planes (rows) of a read-only array in a walked nest kept in a register
    # queue (targets.planes.queues): True in every walk, False in none, None the target's default: CUDA 2-D row walks
    # keep one, CUDA 3-D plane walks load every plane (the queue made jacobi2d and lap3d a little
    # faster, jacobi3d much slower: docs/measurements/tuning-evidence.md);
    # Triton plane walks keep one, in runs of 4 planes unless `run_length` says otherwise (faster than or
    # as fast as loading every plane in runs of 8; the queue in runs of 8 made lap3d slower:
    # docs/measurements/tuning-evidence.md)
    register_queues: bool | None = None
    # CUDA: a 1-D nest at two iterations per thread whose arrays (fp64) are each read and written at
    # one subscript runs the two as one 16-byte access per array (targets.cuda_points.vector_pairs)
    vectors: bool = True
    # CUDA: the grid's x axis capped at 65535 blocks, each thread looping over the rest
    # (grid-stride); off: a thread per element along x (nests without reductions)
    grid_stride: bool = False
    # Triton: warps of a nest's programs (num_warps); 0: Triton's default (4)
    warps: int = 0
    # Triton walks (rows or planes): scalars assigned in every lane without `tl.where` guards, the last
    # run of planes walking only the planes there are, and the lanes past the fast loops leaving the
    # sums once, after the walk. The field_summary_like walk kernel with no guards at all ran faster
    # than guarded (benchmarks/probes/field_summary_guards.py), but this general form was slower in
    # every walk it was timed on, side by side in the region table (field_summary_like, jacobi3d,
    # lap3d: docs/measurements/tuning-evidence.md); so it is off, and not among the
    # search's variants (--variants still takes it)
    masks_after_walk: bool = False
    # Triton: a 1-D array's subscript split into the part every lane shares and the lanes' part, the
    # shared part added to the array's pointer first (``(dx + (ix - 1)) + (i - 1) * incx``). ivamax's
    # pair kernel ran faster reading DX(IX - 1 + I) than with the subscript whole
    # (benchmarks/probes/pair_kernel_forms.py), but generated it lost side by side on ivamax, vamax
    # and vnrm2 (docs/measurements/tuning-evidence.md), so off: a search variant
    shared_subscript_first: bool = False
    # a short parallel loop around a serial loop that accumulates into one element per thread
    # (DGEMV 'N' after the interchange) splits the serial loop over blocks, adding atomically
    split_serial: bool = True
    # the elementwise nest right after a matmul becomes the matmul kernel's epilogue
    fuse_epilogues: bool = True
    # a serial loop around one parallel loop that the analysis marked swappable runs as the
    # parallel loop outside, the serial one inside each thread (translate.interchange)
    interchange: bool = True
    # Triton: a matmul runs as cuBLAS through torch (its tail a kernel after it) instead of
    # the generated tiled kernel, where the operands allow (same dtype)
    matmul_library: bool = False
    # a matrix product written as loops runs as the tiled matmul (translate.contraction)
    contraction: bool = True
    # a linear recurrence x(i) = a(i) * x(i - 1) + b(i) runs as a parallel scan where the target
    # has one (translate.scan; Triton, CUDA), not on one thread
    scan: bool = True
    # an outermost parallel loop whose body is parallel loops runs as one nest per inner loop
    # (translate.distribute; NPB MG's boundary exchange: a thread per point, not per plane)
    distribute: bool = True
    # scratch rows filled in one inner loop and read at neighbouring elements in the next (NPB MG's
    # resid, psinv, rprj3) recomputed where they are read: one plain stencil nest, no scratch
    # (translate.recompute)
    recompute: bool = False

    def describe(self) -> str:
        return ["as analysed", "outermost loop parallel only", "serial on the device"][self.level]

    def variant(self) -> str:
        """The knobs the optimize step searches, in words (the report's ``variant``)."""
        return (f"{self.describe()}, block {self.block}" + ("" if self.interchange else ", no interchange")
                + ("" if self.row_programs else ", a thread per row")
                + ("" if self.split_serial else ", serial loops whole")
                + ("" if self.block_rows == 0 else f" as {self.block // self.block_rows}x{self.block_rows}")
                + ("" if self.run_length == 0 else ", a point per thread" if self.run_length == 1
                   else f", {self.run_length} planes (rows, points) per thread")
                + (f", {self.warps} warps" if self.warps else "")
                + (", lane masks after the walk" if self.masks_after_walk else "")
                + (", shared subscripts first" if self.shared_subscript_first else "")
                + (", grid-stride" if self.grid_stride else "")
                + ("" if self.vectors else ", scalar accesses")
                + ("" if self.row_pairs else ", one row per thread")
                + ("" if self.register_queues is None
                   else ", register queues" if self.register_queues else ", no register queues")
                + ("" if self.contraction else ", products as loops")
                + ("" if self.scan else ", recurrences on one thread")
                + ("" if self.distribute else ", inner loops in one nest")
                + (", scratch rows recomputed" if self.recompute else ""))


MAX_LEVEL = 2


# ----------------------------------------------------------------- schedules


def apply_schedule(kernel: ir.Kernel, schedule: Schedule) -> ir.Kernel:
    """Matrix products as matmuls (``Schedule.contraction``), swappable loops
    interchanged (``Schedule.interchange``), then level 0: scratch rows recomputed where they are
    read (``Schedule.recompute``), parallel loops over parallel loops distributed
    (``Schedule.distribute``); level 1: in each parallel nest only the outermost
    parallel loop stays parallel; level 2: every loop serial."""
    if schedule.level > MAX_LEVEL:
        raise ValueError(f"schedule level {schedule.level} > {MAX_LEVEL}")
    if schedule.contraction:
        kernel = contraction.recognise(kernel)
    if schedule.scan and schedule.level < MAX_LEVEL:
        body = scan.recognise(kernel.body, kernel)
        kernel = kernel if body is kernel.body else replace(kernel, body=body)
    if schedule.interchange and any(isinstance(n, ir.Loop) and n.swappable for s in kernel.body for n in ir.walk(s)):
        kernel = replace(kernel, body=interchange.apply(kernel.body))
    if schedule.level <= 0:
        kernel = recompute(kernel) if schedule.recompute else kernel
        return distribute(kernel) if schedule.distribute else kernel
    body = tuple(_reschedule(s, schedule.level, inside=False) for s in kernel.body)
    return replace(kernel, body=body)


def _serial(loop: ir.Loop, body: tuple[ir.Stmt, ...], why: str) -> ir.Loop:
    return replace(loop, kind=ir.LoopKind.SERIAL, reductions=(), body=body, reason=why)


def _reschedule(stmt: ir.Stmt, level: int, inside: bool) -> ir.Stmt:
    if isinstance(stmt, ir.If):
        return replace(
            stmt,
            then=tuple(_reschedule(s, level, inside) for s in stmt.then),
            orelse=tuple(_reschedule(s, level, inside) for s in stmt.orelse),
        )
    if not isinstance(stmt, ir.Loop):
        return stmt
    parallel = stmt.kind is ir.LoopKind.PARALLEL
    inner_inside = inside or parallel
    body = tuple(_reschedule(s, level, inner_inside) for s in stmt.body)
    if parallel and (level >= 2 or inside):
        why = "serial by schedule level 2" if level >= 2 else "serial by schedule level 1 (inner loop of a nest)"
        return _serial(stmt, body, why)
    return replace(stmt, body=body)


