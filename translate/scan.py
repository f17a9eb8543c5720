"""Linear recurrences: serial loops whose one statement is ``X(f(i)) = A(i) * X(f(i - step)) + B(i)``.

Each iteration applies an affine map whose coefficients do not depend on the recurrence to the
previous element, so the loop is an inclusive scan of the maps (a prefix sum where ``A`` is 1)
started from the element before the first, and a target may run it as a parallel scan
(``targets.triton_scan``, ``targets.cuda_scan``) instead of on one thread. The result differs from the loop's only in
the order of the operations. Recognised: a loop counting by 1 or -1 with no reductions, whose body
is that one assignment to a 1-D subscript that moves with the loop variable by the step
(``f(i) = i + c``, ``c`` loop-invariant), whose value holds the previous element as its only read
of the array and is affine in it through ``+``, ``-``, ``*`` and negation (``X(I-1) + Y(I)``,
``D(I) - C(I)*X(I+1)``, and divided by a term that does not read it). The loop is marked
(``ir.Loop.scan``); everything else about it is unchanged, so a target without a scan runs it in
order.

A ratio of two such affine terms, ``X(f(i)) = (A(i)*X(f(i-step)) + B(i)) / (C(i)*X(f(i-step)) +
D(i))`` (the Thomas algorithm's ``CP(I) = C(I)/(B(I) - A(I)*CP(I-1))``), is a linear map of the
homogeneous pair (numerator, denominator): a scan of 2x2 matrices (``ratio``), marked the same
way. ``translate.scan_fission`` splits loops that carry several such recurrences into one loop
each."""

from __future__ import annotations

from dataclasses import dataclass, replace

from translate import ir
from translate.scan_fission import moves_by_step, split
from translate.simplify import const_int, simplify

Affine = tuple[ir.Expr | None, ir.Expr | None]  # (a, b) of x -> a*x + b; None: a is 1, b is 0


@dataclass(frozen=True)
class Recurrence:
    """A recurrence loop's store ``X(f(i))``, the previous element it reads, and how the element
    follows from it: ``kind`` "sum" (coefficients ``(b,)``: x + b), "affine" (``(a, b)``: a*x + b)
    or "ratio" (``(a, b, c, d)``: (a*x + b) / (c*x + d)); a None coefficient is 0 (an affine ``a``
    and a ratio's ``c`` never are)."""

    store: ir.Load
    prev: ir.Load
    kind: str
    coefficients: tuple[ir.Expr | None, ...]


def recognise(body: tuple[ir.Stmt, ...], kernel: ir.Kernel) -> tuple[ir.Stmt, ...]:
    """``body`` with its linear recurrences marked, at any depth of IFs (not inside other loops:
    those run their recurrence once per outer iteration and stay serial). The same tuple when
    nothing is marked."""
    out: list[ir.Stmt] = []
    changed = False
    for s in body:
        new: tuple[ir.Stmt, ...] = (s,)
        if isinstance(s, ir.If):
            then, orelse = recognise(s.then, kernel), recognise(s.orelse, kernel)
            if then is not s.then or orelse is not s.orelse:
                new = (replace(s, then=then, orelse=orelse),)
        elif isinstance(s, ir.Loop) and not s.scan and scannable(s, kernel):
            new = (_marked(s),)
        elif isinstance(s, ir.Loop) and not s.scan and (loops := split(s, kernel)) is not None:
            if all(scannable(lp, kernel) for lp in loops):  # several recurrences: a loop and a scan each
                new = tuple(_marked(lp) for lp in loops)
        changed |= len(new) != 1 or new[0] is not s
        out.extend(new)
    return tuple(out) if changed else body


def _marked(loop: ir.Loop) -> ir.Loop:
    return replace(loop, scan=True, reason="a linear recurrence: a parallel scan where the target has one")


def scannable(loop: ir.Loop, kernel: ir.Kernel) -> bool:
    """Whether ``loop`` is a recurrence (``recurrence``) storing a 1-D array parameter of a number
    type. Its one statement is then the loop's only store and the previous element its array's only
    read, so the coefficients read neither the array nor anything the loop writes."""
    found = recurrence(loop)
    if found is None:
        return False
    try:
        decl = kernel.param(found.store.array)
    except KeyError:
        return False
    return isinstance(decl, ir.Array) and len(decl.shape) == 1 and decl.dtype not in (ir.DType.BOOL, ir.DType.CHAR)


def kind(loop: ir.Loop) -> str:
    """A marked loop's scan: ``"sum"`` (``A`` is 1), ``"affine"`` or ``"ratio"``."""
    return of(loop).kind


def of(loop: ir.Loop) -> Recurrence:
    """The recurrence of a marked loop."""
    found = recurrence(loop)
    assert found is not None, "not a linear recurrence"
    return found


def recurrence(loop: ir.Loop) -> Recurrence | None:
    """The recurrence ``loop`` is, or None: a serial loop counting by 1 or -1 without reductions
    whose one statement stores a 1-D subscript moving with the loop, from the element one step
    before, either affinely or as a ratio of two affine terms whose denominator reads it."""
    s = loop.body[0] if len(loop.body) == 1 else None
    if (loop.kind is not ir.LoopKind.SERIAL or loop.reductions or const_int(loop.step) not in (1, -1)
            or not isinstance(s, ir.Assign) or not isinstance(s.target, ir.Load) or len(s.target.index) != 1):
        return None
    store, value = s.target, s.value
    reads = [n for n in ir.walk(value) if isinstance(n, ir.Load) and n.array == store.array]
    if not reads or any(r != reads[0] for r in reads) or not moves_by_step(loop, store, reads[0]):
        return None
    prev = reads[0]
    if len(reads) == 1 and (found := _split(value, prev)) is not None:
        a, b = found
        return Recurrence(store, prev, "sum", (b,)) if a is None else Recurrence(store, prev, "affine", (a, b))
    if not isinstance(value, ir.BinOp) or value.op != "div" or not value.dtype.is_float:
        return None
    num, den = _ratio_terms(value.lhs, prev), _ratio_terms(value.rhs, prev)
    if num is None or den is None or den[0] is None:
        return None
    return Recurrence(store, prev, "ratio", (*num, *den))


def _ratio_terms(e: ir.Expr, prev: ir.Load) -> Affine | None:
    """``e`` as ``a*prev + b``, None standing for 0 (``_split``'s None for ``a`` is 1); None where
    ``e`` reads ``prev`` more than once or not affinely."""
    count = sum(1 for n in ir.walk(e) if n == prev)
    if count == 0:
        return None, e
    if count > 1:
        return None
    split = _split(e, prev)
    if split is None:
        return None
    a, b = split
    return (ir.Const(1.0, e.dtype) if a is None else a), b


def at_start(load: ir.Load, loop: ir.Loop) -> ir.Load:
    """``load`` with the loop variable at the loop's start: the first iteration's element."""
    return ir.Load(load.array, tuple(simplify(ir.substitute(i, {loop.var: loop.start})) for i in load.index),
                   load.dtype)


def first_read(loop: ir.Loop) -> ir.Load:
    """The element before the first iteration's, ``X(f(start - step))``: where the scan starts."""
    return at_start(of(loop).prev, loop)


def _has(e: ir.Expr, prev: ir.Load) -> bool:
    return any(n == prev for n in ir.walk(e))


def _split(e: ir.Expr, prev: ir.Load) -> Affine | None:
    """``e`` as ``a * prev + b``, or None where it is not affine in ``prev`` (``e`` holds it once)."""
    if e == prev:
        return None, None
    if isinstance(e, ir.UnOp) and e.op == "neg":
        inner = _split(e.operand, prev)
        if inner is None:
            return None
        a, b = inner
        return (_neg(a, e.dtype), None if b is None else ir.UnOp("neg", b, e.dtype))
    if isinstance(e, ir.BinOp) and e.op == "div" and e.dtype.is_float and not _has(e.rhs, prev):
        inner = _split(e.lhs, prev)  # (a*P + b) / q
        if inner is None:
            return None
        a, b = inner
        return (ir.BinOp("div", ir.Const(1.0, e.dtype) if a is None else a, e.rhs, e.dtype),
                None if b is None else ir.BinOp("div", b, e.rhs, e.dtype))
    if not isinstance(e, ir.BinOp) or e.op not in ("add", "sub", "mul"):
        return None
    if _has(e.lhs, prev):
        inner, other, left = _split(e.lhs, prev), e.rhs, True
    else:
        inner, other, left = _split(e.rhs, prev), e.lhs, False
    if inner is None:
        return None
    a, b = inner
    if e.op == "mul":
        return (other if a is None else ir.BinOp("mul", a, other, e.dtype),
                None if b is None else ir.BinOp("mul", b, other, e.dtype))
    if e.op == "add":
        return a, (other if b is None else ir.BinOp("add", b, other, e.dtype))
    if left:  # (a*P + b) - other
        return a, (_neg(other, e.dtype) if b is None else ir.BinOp("sub", b, other, e.dtype))
    # other - (a*P + b)
    return _neg(a, e.dtype), (other if b is None else ir.BinOp("sub", other, b, e.dtype))


def _neg(a: ir.Expr | None, dtype: ir.DType) -> ir.Expr:
    return ir.Const(-1.0 if dtype.is_float else -1, dtype) if a is None else ir.UnOp("neg", a, dtype)
