"""Linear recurrences: serial loops whose one statement is ``X(f(i)) = A(i) * X(f(i - step)) + B(i)``.

Each iteration applies an affine map whose coefficients do not depend on the recurrence to the
previous element, so the loop is an inclusive scan of the maps (a prefix sum where ``A`` is 1)
started from the element before the first, and a target may run it as a parallel scan
(``targets.triton_scan``) instead of on one thread. The result differs from the loop's only in
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

from dataclasses import replace

from translate import ir
from translate.scan_fission import moves_by_step, split
from translate.simplify import const_int, simplify

Affine = tuple[ir.Expr | None, ir.Expr | None]  # (a, b) of x -> a*x + b; None: a is 1, b is 0
Ratio = tuple[ir.Expr | None, ir.Expr | None, ir.Expr | None, ir.Expr | None]  # x -> (a*x + b) / (c*x + d)


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
    """Whether ``loop`` is a linear recurrence or a ratio of two (``ratio``)."""
    return recurrence(loop, kernel) is not None or (ratio(loop) is not None and _target_ok(loop, kernel))


def kind(loop: ir.Loop) -> str:
    """A marked loop's scan: ``"sum"`` (``A`` is 1), ``"affine"`` or ``"ratio"``."""
    if ratio(loop) is not None:
        return "ratio"
    return "sum" if parts(loop)[2] is None else "affine"


def parts(loop: ir.Loop) -> tuple[ir.Load, ir.Load, ir.Expr | None, ir.Expr | None]:
    """A marked loop's store ``X(f(i))``, its read ``X(f(i - step))`` and its map's ``A(i)`` and
    ``B(i)`` (None: 1 and 0). Not for a ratio (``ratio``)."""
    found = _match(loop)
    assert found is not None, "not a linear recurrence"
    return found


def ratio(loop: ir.Loop) -> tuple[ir.Load, ir.Load, Ratio] | None:
    """A serial loop's store, previous element and map ``(a*x + b) / (c*x + d)`` where its one
    statement is a ratio of two affine terms in the previous element whose denominator reads it
    (None: ``a``, ``b`` or ``d`` is 0; ``c`` is never None)."""
    if const_int(loop.step) not in (1, -1) or loop.kind is not ir.LoopKind.SERIAL or loop.reductions:
        return None
    if len(loop.body) != 1 or not isinstance(loop.body[0], ir.Assign):
        return None
    s = loop.body[0]
    value = s.value
    if not isinstance(s.target, ir.Load) or len(s.target.index) != 1 or not isinstance(value, ir.BinOp):
        return None
    if value.op != "div" or not value.dtype.is_float:
        return None
    reads = [n for n in ir.walk(value) if isinstance(n, ir.Load) and n.array == s.target.array]
    if not reads or any(r != reads[0] for r in reads) or not moves_by_step(loop, s.target, reads[0]):
        return None
    prev = reads[0]
    terms = _ratio_terms(value.lhs, prev), _ratio_terms(value.rhs, prev)
    if terms[0] is None or terms[1] is None or terms[1][0] is None:
        return None
    (a, b), (c, d) = terms
    return s.target, prev, (a, b, c, d)


def recurrence(loop: ir.Loop, kernel: ir.Kernel) -> Affine | None:
    """The map (``A(i)``, ``B(i)``) of a linear recurrence, or None when ``loop`` is not one."""
    step = const_int(loop.step)
    if loop.kind is not ir.LoopKind.SERIAL or loop.reductions or step not in (1, -1):
        return None
    found = _match(loop)
    if found is None or not _target_ok(loop, kernel):
        return None
    # the body is that one store, so the loop writes no scalar but its variable, and the previous
    # element is the array's only read: the coefficients read neither the array nor anything written
    return found[2], found[3]


def _target_ok(loop: ir.Loop, kernel: ir.Kernel) -> bool:
    """Whether the one statement stores a 1-D array parameter of a number type."""
    s = loop.body[0]
    assert isinstance(s, ir.Assign) and isinstance(s.target, ir.Load)
    try:
        decl = kernel.param(s.target.array)
    except KeyError:
        return False
    return isinstance(decl, ir.Array) and len(decl.shape) == 1 and decl.dtype not in (ir.DType.BOOL, ir.DType.CHAR)


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


def first_read(loop: ir.Loop) -> ir.Load:
    """The element before the first iteration's, ``X(f(start - step))``: where the scan starts."""
    found = ratio(loop)
    prev = found[1] if found is not None else parts(loop)[1]
    return ir.Load(prev.array, tuple(simplify(ir.substitute(i, {loop.var: loop.start})) for i in prev.index),
                   prev.dtype)


def _match(loop: ir.Loop) -> tuple[ir.Load, ir.Load, ir.Expr | None, ir.Expr | None] | None:
    if len(loop.body) != 1 or not isinstance(loop.body[0], ir.Assign):
        return None
    s = loop.body[0]
    if not isinstance(s.target, ir.Load) or len(s.target.index) != 1:
        return None
    store = s.target
    reads = [n for n in ir.walk(s.value) if isinstance(n, ir.Load) and n.array == store.array]
    if len(reads) != 1 or not moves_by_step(loop, store, reads[0]):
        return None
    split = _split(s.value, reads[0])
    if split is None:
        return None
    return store, reads[0], *split


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
