"""Nests walked plane by plane: a 3-D parallel nest without reductions whose slowest loop
(the outermost in memory) each CUDA thread or Triton program walks in runs of consecutive
iterations, the other two loops spread over a 2-D tile of threads or lanes. On CUDA a 2-D
nest can be walked the same way, row by row: by default when its reads form a register queue
(a 2-D stencil).

A stencil's neighbouring rows then come from the same tile and its neighbouring planes
from the previous iterations of the same thread. In a hand-written probe of a 7-point 3-D
Laplacian (``docs/measurements/tuning-evidence.md``) plane walking came much
closer to the copy bandwidth than a thread per point, on CUDA (64x4 blocks with a register
queue) and on Triton (2-row tiles walking 4 planes); a later probe
(``docs/measurements/tuning-evidence.md``) ran CUDA faster still with runs of 4
planes and the thread's indices taken straight from the grid than inside grid-stride loops.

Reads of one read-only array at the same in-plane position and planes ``k+c`` for several
constants ``c`` (``u(i,j,k-1)``, ``u(i,j,k)``, ``u(i,j,k+1)``) form a register queue
(:func:`queues`): each iteration loads only the newest plane's value and the others move
down one slot (by default in CUDA 2-D row walks and Triton plane walks, the latter then in runs
of ``TritonDefaults.queued_planes``; CUDA plane walks where ``Schedule.register_queues`` asks).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from targets.defaults import TRITON, WALKING
from translate import ir
from translate.irquery import arrays_written, scalar_reads
from translate.partition import DeviceNest, fastest_first
from translate.schedule import Schedule
from translate.simplify import const_int, linearize, simplify, simplify_stmt


def plane_walk(seg: DeviceNest, kernel: ir.Kernel, schedule: Schedule, target: str) -> tuple[int, int] | None:
    """(rows, planes) when ``seg`` is walked in runs of planes, else None: a 3-D nest without
    reductions unless the schedule's ``run_length`` is 1; a 2-D one (runs of rows, each CUDA thread
    or Triton program walking ``run_length`` rows of a 1-D tile) when the schedule asks for
    ``run_length`` > 1 or, at ``run_length`` 0, when its reads form a register queue (``walk_rows``
    rows; on Triton only a nest with reductions, one partial per program). :func:`triton_walk`
    also counts the reads of short inner loops."""
    if schedule.run_length == 1 or target not in WALKING:
        return None
    if len(seg.loops) == 2:
        if seg.reductions and target != "triton":
            return None
        if schedule.run_length > 1:
            return (1, schedule.run_length)
        # a 2-D stencil (on Triton one with reductions): its neighbouring rows from the register queue
        stencil = schedule.run_length == 0 and (target == "cuda" or seg.reductions)
        if stencil and queued(schedule, seg, target) and queues(seg, plane_loop(seg, kernel).var):
            return (1, WALKING[target].walk_rows)
        return None
    if seg.reductions or len(seg.loops) != 3:
        return None
    rows, planes = WALKING[target].plane_tile
    if target == "triton" and queued(schedule, seg, target) and queues(seg, plane_loop(seg, kernel).var):
        planes = TRITON.queued_planes
    return (schedule.block_rows or rows, schedule.run_length or planes)


def triton_walk(seg: DeviceNest, kernel: ir.Kernel, schedule: Schedule) -> tuple[DeviceNest, tuple[int, int] | None]:
    """The nest a Triton kernel emits and its walk (:func:`plane_walk`): ``seg`` with its short
    inner loops written out (:func:`unroll_short`) where their reads then join register queues
    of the walk (field_summary_like's cell corners), else ``seg`` as it is."""
    walk = plane_walk(seg, kernel, schedule, "triton")
    flat = unroll_short(seg)
    if flat is seg or len(seg.loops) < 2 or not queued(schedule, seg, "triton"):
        return seg, walk
    var = plane_loop(seg, kernel).var
    if len(queues(flat, var)) > len(queues(seg, var)) and (flat_walk := plane_walk(flat, kernel, schedule, "triton")):
        return flat, flat_walk
    return seg, walk


def queued(schedule: Schedule, seg: DeviceNest, target: str) -> bool:
    """Whether a walk of ``seg`` keeps register queues (``Schedule.register_queues``): True in
    every walk, False in none; None (the default) in CUDA walks of rows (2-D nests) and in
    every Triton walk, not in CUDA plane walks (there a queue made jacobi3d slower than loading
    every plane: docs/measurements/tuning-evidence.md)."""
    if schedule.register_queues is not None:
        return schedule.register_queues
    return target == "triton" or len(seg.loops) == 2


def plane_loop(seg: DeviceNest, kernel: ir.Kernel) -> ir.Loop:
    """The loop a thread or program walks: the slowest in memory."""
    return seg.loops[fastest_first(seg, kernel)[-1]]


@dataclass(frozen=True)
class Queue:
    """Reads of ``array`` at planes ``var + first``, ``var + first + 1``, ... (``slots``:
    the loads, the plane loop variable in place)."""

    array: str
    first: int
    slots: tuple[ir.Load, ...]
    var: str = "k"

    def names(self, group: int) -> list[str]:
        """The registers of the slots, named after the array, the plane loop and the offset (lower
        case, as the C-style targets spell the Vars that stand for them)."""
        tag = f"{self.array.lower()}{group or ''}"
        return [f"kt_{tag}_{self.var}{'m' if c < 0 else 'p' if c > 0 else ''}{abs(c)}"
                for c in range(self.first, self.first + len(self.slots))]


def queues(seg: DeviceNest, var: str) -> list[Queue]:
    """The register queues of the nest's body along the plane loop ``var``: loads of arrays
    the nest does not write, in statements that run every iteration (not under an IF or in
    an inner loop, not in a SELECT branch), indexed by loop variables and the nest's
    scalar inputs only, ``var`` in one subscript as ``var + constant``; two or more planes
    of the same in-plane position."""
    written = arrays_written(seg.body)
    loop_names = {lp.var for lp in seg.loops}
    groups: dict[tuple[object, ...], dict[int, ir.Load]] = {}
    for s in seg.body:
        if not isinstance(s, ir.Assign):
            continue
        for load in steady_loads(seg, s.value):
            if load.array in written:
                continue
            where = [d for d, e in enumerate(load.index) if var in scalar_reads(e)]
            if len(where) != 1:
                continue
            # the plane's subscript as var + (scalars) + constant: the constant tells the slot
            lin = linearize(load.index[where[0]])
            if lin is None:
                continue
            terms, off = lin
            plane = ir.Var(var, ir.DType.I32)
            rest_terms = {a: c for a, c in terms.items() if a != plane}
            if terms.get(plane) != 1 or any(scalar_reads(a) & loop_names for a in rest_terms):
                continue
            rest = tuple(e for d, e in enumerate(load.index) if d != where[0])
            key = (load.array, where[0], rest, tuple(sorted((ir.expr_str(a), c) for a, c in rest_terms.items())))
            groups.setdefault(key, {})[off] = load
    out = []
    for (array, dim, _, _), found in groups.items():
        if len(found) < 2:
            continue
        lo, hi = min(found), max(found)
        c0, any_load = next(iter(found.items()))
        slots = tuple(found.get(c) or _at(any_load, dim, c - c0) for c in range(lo, hi + 1))
        out.append(Queue(array, lo, slots, var))
    return out


def _at(load: ir.Load, dim: int, shift: int) -> ir.Load:
    """``load`` with its subscript ``dim`` moved ``shift`` planes."""
    index = list(load.index)
    index[dim] = simplify(ir.BinOp("add", index[dim], ir.Const(shift, index[dim].dtype), index[dim].dtype))
    return replace(load, index=tuple(index))


def unroll_short(seg: DeviceNest) -> DeviceNest:
    """``seg`` with its inner loops of at most ``TritonDefaults.short_loop`` iterations (a constant count)
    written out, their variable replaced by its value in each copy (the same statements in
    the same order), unless the variable is read outside its loop."""
    body = _unrolled(seg.body, seg.body)
    if body == seg.body:
        return seg
    gone = {lp.var for s in seg.body for lp in ir.walk(s) if isinstance(lp, ir.Loop)} - \
        {lp.var for s in body for lp in ir.walk(s) if isinstance(lp, ir.Loop)}
    return replace(seg, body=body, private=tuple(p for p in seg.private if p not in gone))


def _unrolled(stmts: tuple[ir.Stmt, ...], whole: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
    out: list[ir.Stmt] = []
    for s in stmts:
        trip = _short_trip(s, whole)
        if trip is None:
            out.append(s)
            continue
        assert isinstance(s, ir.Loop)
        for c in range(trip):
            at = simplify(ir.BinOp("add", s.start, ir.BinOp("mul", ir.Const(c, s.step.dtype), s.step, s.step.dtype),
                                   s.start.dtype))
            copy = tuple(simplify_stmt(ir.substitute(b, {s.var: at})) for b in s.body)  # type: ignore[misc]
            out += _unrolled(copy, whole)
    return tuple(out)


def _short_trip(s: ir.Stmt, whole: tuple[ir.Stmt, ...]) -> int | None:
    """The iteration count of loop ``s`` when it is short and its variable is read only inside it."""
    if not isinstance(s, ir.Loop):
        return None
    span, step = const_int(ir.BinOp("sub", s.stop, s.start, s.stop.dtype)), const_int(s.step)
    if span is None or step is None or step <= 0:
        return None
    trip = max(0, -(-span // step))
    if trip > TRITON.short_loop or any(_reads_outside(w, s.var) for w in whole):
        return None
    return trip


def _reads_outside(node: object, var: str) -> bool:
    """Whether ``node`` reads ``var`` other than inside a loop over ``var``."""
    if isinstance(node, ir.Loop) and node.var == var:
        return False
    if isinstance(node, ir.Var):
        return node.name == var
    return any(_reads_outside(c, var) for c in ir.children(node))


def steady_loads(seg: DeviceNest, e: object) -> list[ir.Load]:
    """The unconditional loads of ``e`` whose subscripts hold only the nest's loop variables
    and scalar inputs (no loaded subscripts, no private scalars): the same address whenever
    the iteration is the same."""
    steady = {lp.var for lp in seg.loops} | set(seg.scalars_in)
    return [load for load in unconditional_loads(e)
            if scalar_reads(load) <= steady and not any(isinstance(n, ir.Load) for x in load.index for n in ir.walk(x))]


def unconditional_loads(e: object) -> list[ir.Load]:
    """Loads evaluated whenever ``e`` is (a SELECT's branches left out), outermost first."""
    if isinstance(e, ir.Select):
        return unconditional_loads(e.cond)
    out = [e] if isinstance(e, ir.Load) else []
    for child in ir.children(e):
        out += unconditional_loads(child)
    return out
