"""CUDA: a 3-D nest walked plane by plane (``targets.planes``): a 2-D thread block over the
two fast loops, each thread walking a run of consecutive planes with its register queues
(a 2-D nest: a 1-D block over the fast loop, each thread walking a run of rows)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from targets.base import CodeBuffer
from targets.planes import plane_loop, queues
from translate import ir
from translate.schedule import DeviceNest

if TYPE_CHECKING:
    from targets.cuda import CudaRenderer


def walk_planes(r: CudaRenderer, buf: CodeBuffer, seg: DeviceNest, order: list[ir.Loop],
                k_names: Mapping[str, str], planes: int) -> None:
    """The loops and body of a plane-walking kernel: ``order`` fastest first (x, y, then
    the plane loop on blockIdx.z in runs of ``planes``; a 2-D nest: x, then the rows on
    blockIdx.y)."""
    inplane = (("y", order[1]), ("x", order[0])) if len(order) == 3 else (("x", order[0]),)
    run_axis = "z" if len(order) == 3 else "y"
    for axis, lp in inplane:
        buf.line(r.grid_loop(k_names.get(lp.var, r.var(lp.var)), f"{r.var(lp.var)}_trip", axis) + " {")
        buf.level += 1
    plane = plane_loop(seg, r.kernel)
    k, trip = k_names.get(plane.var, r.var(plane.var)), f"{r.var(plane.var)}_trip"
    what = "planes" if len(order) == 3 else "rows"
    buf.line(f"// a run of {planes} {what} per thread: neighbouring {what} stay in registers or L1")
    buf.line(f"for (int run = blockIdx.{run_axis}; run * {planes} < {trip}; run += gridDim.{run_axis}) {{")
    buf.level += 1
    buf.line(f"const int run_end = {trip} - run * {planes} < {planes} ? {trip} : (run + 1) * {planes};")
    qs = queues(seg, plane.var)
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
    for _ in range(len(inplane) + 2):
        buf.level -= 1
        buf.line("}")
