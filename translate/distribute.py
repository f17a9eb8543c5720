"""A parallel loop whose body is two or more parallel loops, distributed over them.

NPB MG's periodic boundary exchange (comm3, inlined into resid and psinv) is one parallel loop
over planes whose body is two parallel loops, one along each edge of the plane::

    do i3 = 2, n3 - 1                      ! parallel
       do i2 = 2, n2 - 1                   ! parallel
          u(1, i2, i3) = u(n1 - 1, i2, i3) ...
       end do
       do i1 = 1, n1                       ! parallel
          u(i1, 1, i3) = u(i1, n2 - 1, i3) ...
       end do
    end do

As one nest it runs a thread per plane, each walking both edges alone (514 threads at MG class
C). Written as two loops over i3, one around each inner loop, each is a 2-D parallel nest with a
thread per point. The rewrite keeps the result: the outer loop is parallel, so no iteration
depends on another, and within an iteration the first inner loop still runs (for every i3)
before the second.

Applied to an outermost parallel loop (one inside another parallel loop already gives its nest
two dimensions) without reductions whose body is only parallel loops, where no scalar set in
one of them is read in another and no local array of the routine is touched by two of them (a
scratch row one inner loop fills and the next reads stays in one row kernel: ``targets/rows.py``,
``targets/row_scratch.py``).
"""

from __future__ import annotations

from dataclasses import replace

from translate import ir
from translate.irquery import scalar_reads, scalar_writes


def distribute(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with every loop that qualifies (module docstring) distributed over its body."""
    local = {d.name for d in kernel.locals if isinstance(d, ir.Array)}
    body = _stmts(kernel.body, local)
    return kernel if body == kernel.body else replace(kernel, body=body)


def _stmts(stmts: tuple[ir.Stmt, ...], local: set[str]) -> tuple[ir.Stmt, ...]:
    out: list[ir.Stmt] = []
    for s in stmts:
        if isinstance(s, ir.Loop) and s.kind is ir.LoopKind.PARALLEL:
            out.extend(_split(s, local))
        elif isinstance(s, ir.Loop):
            out.append(replace(s, body=_stmts(s.body, local)))
        elif isinstance(s, ir.If):
            out.append(replace(s, then=_stmts(s.then, local), orelse=_stmts(s.orelse, local)))
        else:
            out.append(s)
    return tuple(out)


def _split(loop: ir.Loop, local: set[str]) -> list[ir.Loop]:
    parts = loop.body
    if loop.reductions or len(parts) < 2:
        return [loop]
    if not all(isinstance(p, ir.Loop) and p.kind is ir.LoopKind.PARALLEL for p in parts):
        return [loop]
    for k, p in enumerate(parts):
        others = parts[:k] + parts[k + 1:]
        if scalar_writes(p) & set().union(*(scalar_reads(o) | scalar_writes(o) for o in others)):
            return [loop]
        if _locals(p, local) & set().union(*(_locals(o, local) for o in others)):
            return [loop]
    return [replace(loop, body=(p,)) for p in parts]


def _locals(node: ir.Stmt, local: set[str]) -> set[str]:
    return {n.array for n in ir.walk(node) if isinstance(n, ir.Load) and n.array in local}
