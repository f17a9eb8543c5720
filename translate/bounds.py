"""Loop bounds read from an array made scalars (``do k = 1, grid_points(3)`` as NPB's BT and SP
write them): each such element becomes a local read once at the start of the routine, so the
loops have scalar bounds, their trip counts are known on the host and they can be launched as
parallel kernels instead of running inside a single-thread device kernel.

Only elements that cannot change or fault are read early: constant subscripts inside the
array's constant extents, of an array the routine never writes (nor passes to a call).
"""

from __future__ import annotations

from dataclasses import replace

from translate import ir
from translate.irquery import arrays_written, fresh_name


def hoist_bound_loads(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with the array elements its loop bounds read made locals read at its start."""
    # arrays stored to, a library operation's outputs, and what host calls may change
    nodes = [n for s in kernel.body for n in ir.walk(s)]
    written = arrays_written(kernel.body) | {w for n in nodes if isinstance(n, ir.HostCall) for w in n.writes}
    arrays = {d.name: d for d in kernel.params + kernel.locals if isinstance(d, ir.Array)}
    found = {x for n in nodes if isinstance(n, ir.Loop) for e in (n.start, n.stop, n.step)
             for x in ir.walk(e) if isinstance(x, ir.Load) and _steady(x, arrays.get(x.array), written)}
    if not found:
        return kernel
    taken = {d.name for d in kernel.params + kernel.locals} | {kernel.name}
    mapping: dict[ir.Expr, ir.Expr] = {}
    reads: list[ir.Stmt] = []
    temps: list[ir.Scalar] = []
    for load in sorted(found, key=lambda e: (e.array, [int(i.value) for i in e.index])):  # type: ignore[call-overload]
        var = ir.Var(fresh_name(f"{load.array}_{'_'.join(str(int(i.value) + 1) for i in load.index)}", taken),
                     load.dtype)
        taken.add(var.name)
        mapping[load] = var
        reads.append(ir.Assign(var, load))
        temps.append(ir.Scalar(var.name, load.dtype, ir.Intent.IN))
    body = tuple(ir.replace_exprs(s, mapping) for s in kernel.body)
    return replace(kernel, body=(*reads, *body), locals=kernel.locals + tuple(temps))  # type: ignore[arg-type]


def _steady(load: ir.Load, decl: ir.Array | None, written: set[str]) -> bool:
    """Whether ``load`` reads an element that is the same all through the routine and in bounds."""
    if decl is None or load.array in written or len(load.index) != decl.rank:
        return False
    for i, extent in zip(load.index, decl.shape, strict=True):
        if not (isinstance(i, ir.Const) and isinstance(extent, ir.Const)):
            return False
        if not 0 <= int(i.value) < int(extent.value):  # type: ignore[call-overload]
            return False
    return True
