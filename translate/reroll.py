"""Re-rolling of manually unrolled loops (reference BLAS style)::

    DO I = MP1, N, 7              ->   DO I' = MP1, MP1 + 7*TRIP - 1
       DY(I) = DX(I)                      DY(I') = DX(I')
       ...                             END DO
       DY(I+6) = DX(I+6)
    END DO

A loop with a constant step k >= 2 whose body is k copies of a group of assignments,
the j-th copy being the first with the loop variable shifted by j, runs the same statements in
the same order as a unit-step loop over the k * trip values from its start. On a
GPU the unrolled form gives each thread k neighbouring elements, so neighbouring
threads are k elements apart and a warp's loads are strided; the re-rolled loop
gives neighbouring threads neighbouring elements.

A sum unrolled into one statement (reference DDOT and DASUM)::

    DO I = MP1, N, 5                     ->   DO I' = MP1, MP1 + 5*TRIP - 1
       S = S + X(I)*Y(I) + ... + X(I+4)*Y(I+4)      S = S + X(I')*Y(I')
    END DO                                     END DO

adds the same terms to ``S`` in the same order (Fortran's ``+`` groups from the left), so
it is re-rolled too: its loads become unit-stride instead of k-strided.

The loop is left alone when its variable is read outside every loop that binds it
(the value after the loop would differ) or when its body holds anything else.
"""

from __future__ import annotations

from dataclasses import replace

from translate import ir
from translate.simplify import simplify, simplify_stmt


def _plus(var: str, dtype: ir.DType, j: int) -> dict[str, ir.Expr]:
    return {var: ir.BinOp("add", ir.Var(var, dtype), ir.Const(j, dtype), dtype)}


def _shifted(stmt: ir.Stmt, var: str, dtype: ir.DType, j: int) -> ir.Stmt:
    moved = ir.substitute(stmt, _plus(var, dtype, j))
    assert isinstance(moved, ir.Assign | ir.If | ir.Loop | ir.While | ir.Return | ir.ErrorCall | ir.HostCall
                      | ir.Extern)
    return simplify_stmt(moved)


def _shift(e: ir.Expr, var: str, dtype: ir.DType, j: int) -> ir.Expr:
    moved = ir.substitute(e, _plus(var, dtype, j))
    return simplify(moved)


def _rolled_sum(stmt: ir.Stmt, var: str, dtype: ir.DType, k: int) -> ir.Stmt | None:
    """``s = s + t(i)`` when ``stmt`` is ``s = s + t(i) + t(i+1) + ... + t(i+k-1)``."""
    if not isinstance(stmt, ir.Assign) or not isinstance(stmt.target, ir.Var):
        return None
    terms: list[ir.Expr] = []
    e = stmt.value
    while isinstance(e, ir.BinOp) and e.op == "add" and len(terms) < k:
        terms.append(e.rhs)
        e = e.lhs
    if not (isinstance(e, ir.Var) and e.name == stmt.target.name) or len(terms) != k:
        return None
    first = simplify(terms[-1])
    names = _names(first)
    if var not in names or stmt.target.name in names:
        return None
    if any(simplify(t) != _shift(first, var, dtype, j) for j, t in enumerate(reversed(terms))):
        return None
    return replace(stmt, value=ir.BinOp("add", e, first, stmt.value.dtype))


def _free_reads(stmts: tuple[ir.Stmt, ...], var: str) -> bool:
    """Whether ``var`` is read (or assigned) somewhere no loop over ``var`` encloses."""
    for s in stmts:
        if isinstance(s, ir.Loop):
            if any(var in _names(e) for e in (s.start, s.stop, s.step)):
                return True
            if s.var != var and _free_reads(s.body, var):
                return True
            continue
        if isinstance(s, ir.If):
            if var in _names(s.cond) or _free_reads(s.then, var) or _free_reads(s.orelse, var):
                return True
            continue
        if var in _names(s):
            return True
    return False


def _names(node: object) -> set[str]:
    return {n.name for n in ir.walk(node) if isinstance(n, ir.Var)}


def rerolled(loop: ir.Loop) -> ir.Loop | None:
    """The unit-step form of ``loop`` when its body is its own unrolling, else None."""
    step = simplify(loop.step)
    if not isinstance(step, ir.Const) or not isinstance(step.value, int) or step.value < 2:
        return None
    k = step.value
    body = loop.body
    dtype = step.dtype
    if len(body) == 1 and (summed := _rolled_sum(body[0], loop.var, dtype, k)) is not None:
        return _unit_step(loop, k, dtype, (summed,))
    if not body or len(body) % k or not all(isinstance(s, ir.Assign) for s in body):
        return None
    g = len(body) // k  # statements per unrolled copy (a swap through a temporary has 3)
    first = tuple(simplify_stmt(s) for s in body[:g])
    if not any(loop.var in _names(s) for s in first):
        return None
    for j in range(1, k):
        for t in range(g):
            if simplify_stmt(body[j * g + t]) != _shifted(first[t], loop.var, dtype, j):
                return None
    return _unit_step(loop, k, dtype, first)


def _unit_step(loop: ir.Loop, k: int, dtype: ir.DType, body: tuple[ir.Stmt, ...]) -> ir.Loop:
    """``loop`` (step ``k``) as a unit-step loop over the same ``k * trip`` values, with ``body``."""
    trips = ir.BinOp("div", ir.BinOp("add", ir.BinOp("sub", loop.stop, loop.start, dtype), ir.Const(k - 1, dtype),
                                     dtype), ir.Const(k, dtype), dtype)
    stop = simplify(ir.BinOp("add", loop.start, ir.BinOp("mul", ir.Const(k, dtype), trips, dtype), dtype))
    return replace(loop, stop=stop, step=ir.Const(1, dtype), body=body,
                   reason=f"re-rolled from a {k}-way unrolled body")


def reroll_body(stmts: tuple[ir.Stmt, ...], kernel_body: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
    out: list[ir.Stmt] = []
    for s in stmts:
        if isinstance(s, ir.Loop):
            s = replace(s, body=reroll_body(s.body, kernel_body))
            r = rerolled(s)
            if r is not None and not _free_reads(kernel_body, s.var):
                s = r
        elif isinstance(s, ir.If):
            s = replace(s, then=reroll_body(s.then, kernel_body), orelse=reroll_body(s.orelse, kernel_body))
        out.append(s)
    return tuple(out)


def reroll(kernel: ir.Kernel) -> ir.Kernel:
    """The kernel with every manually unrolled loop re-rolled (module docstring)."""
    return replace(kernel, body=reroll_body(kernel.body, kernel.body))
