"""Sum recurrences: serial loops whose one statement is ``X(f(i)) = X(f(i - step)) + E(i)``.

Each iteration adds a term that does not depend on the recurrence to the previous element, so
the loop is an inclusive prefix sum of the terms started from the element before the first, and a
target may run it as a parallel scan (``targets.triton_scan``) instead of on one thread. The
result differs from the loop's only in the order of the additions. Recognised: a loop counting by
1 or -1 with no reductions, whose body is that one assignment to a 1-D subscript that moves with
the loop variable by the step (``f(i) = i + c``, ``c`` loop-invariant), and whose term reads
neither the array nor anything the loop writes; ``X = X(prev) - E`` and ``X = E + X(prev)`` too.
The loop is marked (``ir.Loop.scan``); everything else about it is unchanged, so a target without
a scan runs it in order."""

from __future__ import annotations

from dataclasses import replace

from translate import ir
from translate.irquery import arrays_touched, scalar_reads, scalar_writes
from translate.simplify import const_int, linearize, simplify


def recognise(body: tuple[ir.Stmt, ...], kernel: ir.Kernel) -> tuple[ir.Stmt, ...]:
    """``body`` with its sum recurrences marked, at any depth of IFs (not inside other loops:
    those run their recurrence once per outer iteration and stay serial)."""
    out: list[ir.Stmt] = []
    for s in body:
        if isinstance(s, ir.If):
            then, orelse = recognise(s.then, kernel), recognise(s.orelse, kernel)
            if then is not s.then or orelse is not s.orelse:
                s = replace(s, then=then, orelse=orelse)
        elif isinstance(s, ir.Loop) and not s.scan and term(s, kernel) is not None:
            s = replace(s, scan=True, reason="a sum recurrence: a parallel prefix sum where the target has one")
        out.append(s)
    return body if all(a is b for a, b in zip(out, body, strict=True)) else tuple(out)  # unchanged: the same


def parts(loop: ir.Loop) -> tuple[ir.Load, ir.Load, ir.Expr]:
    """A marked loop's store ``X(f(i))``, its read ``X(f(i - step))`` and its term ``E(i)``."""
    found = _match(loop)
    assert found is not None, "not a sum recurrence"
    return found


def term(loop: ir.Loop, kernel: ir.Kernel) -> ir.Expr | None:
    """The term ``E(i)`` of a sum recurrence, or None when ``loop`` is not one."""
    step = const_int(loop.step)
    if loop.kind is not ir.LoopKind.SERIAL or loop.reductions or step not in (1, -1):
        return None
    found = _match(loop)
    if found is None:
        return None
    store, _, e = found
    try:
        decl = kernel.param(store.array)
    except KeyError:
        return None
    if not isinstance(decl, ir.Array) or len(decl.shape) != 1 or decl.dtype in (ir.DType.BOOL, ir.DType.CHAR):
        return None
    if store.array in arrays_touched(e) or scalar_reads(e) & (scalar_writes(loop) - {loop.var}):
        return None
    if (scalar_reads(store.index[0]) - {loop.var}) & scalar_writes(loop):
        return None
    return e


def _match(loop: ir.Loop) -> tuple[ir.Load, ir.Load, ir.Expr] | None:
    if len(loop.body) != 1 or not isinstance(loop.body[0], ir.Assign):
        return None
    s = loop.body[0]
    if not isinstance(s.target, ir.Load) or len(s.target.index) != 1:
        return None
    store, value = s.target, s.value
    if not isinstance(value, ir.BinOp) or value.op not in ("add", "sub"):
        return None
    pairs = [(value.lhs, value.rhs)] + ([(value.rhs, value.lhs)] if value.op == "add" else [])
    for prev, e in pairs:
        if isinstance(prev, ir.Load) and prev.array == store.array and _moves_by_step(loop, store, prev):
            return store, prev, (ir.UnOp("neg", e, e.dtype) if value.op == "sub" else e)
    return None


def _moves_by_step(loop: ir.Loop, store: ir.Load, prev: ir.Load) -> bool:
    """Whether the store's subscript is ``i + c`` and the read's is the store's minus the step."""
    step = const_int(loop.step)
    here, there = linearize(store.index[0]), linearize(simplify(prev.index[0]))
    if here is None or there is None or step is None or len(prev.index) != 1:
        return False
    (terms, const), (prev_terms, prev_const) = here, there
    own = [k for k in terms if isinstance(k, ir.Var) and k.name == loop.var]
    if len(own) != 1 or terms[own[0]] != 1:
        return False
    return terms == prev_terms and prev_const == const - step
