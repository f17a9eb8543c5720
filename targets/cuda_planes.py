"""CUDA: a 3-D nest walked plane by plane (``targets.planes``): a 2-D thread block over the
two fast loops, each thread walking a run of consecutive planes (a 2-D nest: a 1-D block over
the fast loop, each thread walking a run of rows with its register queues; ``Schedule.register_queues``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from targets.base import CodeBuffer
from targets.planes import plane_loop, queued, queues
from translate import ir
from translate.partition import DeviceNest

if TYPE_CHECKING:
    from targets.cuda import CudaRenderer


def walk_planes(r: CudaRenderer, buf: CodeBuffer, seg: DeviceNest, order: list[ir.Loop],
                k_names: Mapping[str, str], planes: int) -> None:
    """The indices and body of a plane-walking kernel: ``order`` fastest first (x, then y and
    the plane loop's runs of ``planes`` together over blockIdx.y and blockIdx.z; a 2-D nest:
    x, then the runs of rows over blockIdx.y and blockIdx.z). The launch covers every
    iteration (``kt_tile_grid``): no grid-stride loops."""
    plane = plane_loop(seg, r.kernel)
    k, trip = k_names.get(plane.var, r.var(plane.var)), f"{r.var(plane.var)}_trip"
    what = "planes" if len(order) == 3 else "rows"
    # indices straight from the block and thread: measurably faster than the same walk inside
    # grid-stride loops on a 7-point Laplacian (the plane probes under docs/measurements)
    fast = order[0]
    i = k_names.get(fast.var, r.var(fast.var))
    buf.line(f"const int {i} = blockIdx.x * blockDim.x + threadIdx.x;")
    outside = [f"{i} >= {r.var(fast.var)}_trip"]
    if len(order) == 3:
        mid = order[1]
        j, j_trip = k_names.get(mid.var, r.var(mid.var)), f"{r.var(mid.var)}_trip"
        buf.line(f"// the block's tile along y and z: its rows of {j} and its run of {planes} planes, rows fastest")
        buf.line("const unsigned kt_tile = blockIdx.y + gridDim.y * blockIdx.z;")
        buf.line(f"const unsigned kt_rows = ({j_trip} + blockDim.y - 1) / blockDim.y;")
        buf.line(f"const int {j} = (int)(kt_tile % kt_rows) * blockDim.y + threadIdx.y;")
        buf.line("const int run = (int)(kt_tile / kt_rows);")
        outside.append(f"{j} >= {j_trip}")
    else:
        buf.line(f"const int run = blockIdx.y + gridDim.y * blockIdx.z;  // the block's run of {planes} rows")
    outside.append(f"run * {planes} >= {trip}")
    buf.line(f"if ({' || '.join(outside)}) return;")
    buf.line(f"// a run of {planes} {what} per thread: neighbouring {what} stay in registers or L1")
    buf.line(f"const int run_end = {trip} - run * {planes} < {planes} ? {trip} : (run + 1) * {planes};")
    qs = queues(seg, plane.var) if queued(r.schedule, seg, "cuda") else []
    regs: dict[ir.Load, ir.Expr] = {}
    if qs:
        buf.line(f"// register queue along {plane.var}: one new load per plane, the others move down")
        for g, q in enumerate(qs):
            t = r.ctype(r.array(q.array).dtype)
            names = q.names(g)
            buf.line(f"{t} {', '.join(names[:-1])};")
            regs |= {load: ir.Var(n, r.array(q.array).dtype) for load, n in zip(q.slots, names, strict=True)}
        with buf.block("", opener="{"):
            buf.line(f"const int {k} = run * {planes};")
            buf.lines(r.loop_var_lines(seg, k_names))
            for g, q in enumerate(qs):
                for load, n in zip(q.slots[:-1], q.names(g)[:-1], strict=True):
                    buf.line(f"{n} = {r.expr(load)};")
    buf.line(f"for (int {k} = run * {planes}; {k} < run_end; ++{k}) {{")
    buf.level += 1
    buf.lines(r.loop_var_lines(seg, k_names))
    for g, q in enumerate(qs):
        buf.line(f"const {r.ctype(r.array(q.array).dtype)} {q.names(g)[-1]} = {r.expr(q.slots[-1])};")
    body = tuple(ir.replace_exprs(s, regs) for s in seg.body)
    r.body_with_privates(buf, body, seg.private)  # type: ignore[arg-type]
    for g, q in enumerate(qs):
        names = q.names(g)
        buf.line(" ".join(f"{a} = {b};" for a, b in zip(names[:-1], names[1:], strict=True)))
    buf.level -= 1
    buf.line("}")
