"""Loop interchange of a serial loop around one parallel loop (reference DGEMV 'N')::

    DO J = 1, N                    (serial: Y(I) is updated for every J)
       TEMP = ALPHA*X(JX(J))       (scalar work, inductions already in closed form)
       DO I = 1, M                 (parallel)
          Y(I) = Y(I) + TEMP*A(I, J)

becomes a parallel loop over I whose threads run the J loop, each recomputing the
scalar work: one launch instead of N, and neighbouring threads still read
neighbouring elements of A's columns.

Legal when (``candidate``): the serial loop's body is scalar assignments followed
by the parallel loop; that loop holds only element assignments; every array it
writes is accessed at one index, which reads the inner loop variable and nothing
the outer loop changes (so a thread owns its elements for every J); the scalar work
reads no array the inner loop writes; the inner loop's bounds do not change with J;
and the assigned scalars are dead after the serial loop (the analysis checks that,
and that the interchanged outer loop is parallel, before marking the serial loop
``swappable``). The schedule applies it (``Schedule.interchange``).
"""

from __future__ import annotations

from dataclasses import replace

from translate import ir
from translate.irquery import arrays_written, scalar_reads


def _accesses(stmts: tuple[ir.Stmt, ...], array: str) -> list[tuple[ir.Expr, ...]]:
    return [n.index for s in stmts for n in ir.walk(s) if isinstance(n, ir.Load) and n.array == array]


def _loads(node: object) -> set[str]:
    return {n.array for n in ir.walk(node) if isinstance(n, ir.Load)}


def candidate(loop: ir.Loop) -> bool:
    """The shape and array conditions of the module docstring (not liveness)."""
    if loop.kind is not ir.LoopKind.SERIAL or loop.reductions or not loop.body:
        return False
    *pre, inner = loop.body
    if not isinstance(inner, ir.Loop) or inner.kind is not ir.LoopKind.PARALLEL or inner.reductions:
        return False
    if not all(isinstance(s, ir.Assign) and isinstance(s.target, ir.Var) for s in pre):
        return False
    if not inner.body or not all(isinstance(s, ir.Assign) and isinstance(s.target, ir.Load) for s in inner.body):
        return False
    assigned = {s.target.name for s in pre if isinstance(s, ir.Assign) and isinstance(s.target, ir.Var)}
    moving = assigned | {loop.var}
    written = arrays_written(inner.body)
    for array in written:
        indices = _accesses(inner.body, array)
        if len({tuple(ir.expr_str(e) for e in idx) for idx in indices}) != 1:
            return False
        reads = set().union(*(scalar_reads(e) for e in indices[0])) if indices[0] else set()
        if inner.var not in reads or reads & moving:
            return False
    if any(_loads(s) & written for s in pre):
        return False
    for e in (inner.start, inner.stop, inner.step):
        if scalar_reads(e) & moving or _loads(e):
            return False
    return True


def interchanged(loop: ir.Loop) -> ir.Loop:
    """The parallel loop outside, the serial loop (with the scalar work) inside."""
    *pre, inner = loop.body
    assert isinstance(inner, ir.Loop)
    private = tuple(sorted({s.target.name for s in pre if isinstance(s, ir.Assign) and isinstance(s.target, ir.Var)}
                           | set(inner.private)))
    serial = replace(loop, body=(*pre, *inner.body), swappable=False,
                     reason=f"loop {loop.var} is serial inside each thread (interchanged with loop {inner.var})")
    return replace(inner, body=(serial,), private=private,
                   reason=f"{inner.reason}; interchanged with the serial loop {loop.var} around it (one launch "
                          f"instead of one per {loop.var})")


def apply(stmts: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
    """Every loop the analysis marked ``swappable``, interchanged."""
    out: list[ir.Stmt] = []
    for s in stmts:
        if isinstance(s, ir.If):
            s = replace(s, then=apply(s.then), orelse=apply(s.orelse))
        elif isinstance(s, ir.Loop):
            s = interchanged(s) if s.swappable and candidate(s) else replace(s, body=apply(s.body))
        out.append(s)
    return tuple(out)
