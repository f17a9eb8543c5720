"""Linear recurrences: serial loops whose one statement is ``X(f(i)) = A(i) * X(f(i - step)) + B(i)``.

Each iteration applies an affine map whose coefficients do not depend on the recurrence to the
previous element, so the loop is an inclusive scan of the maps (a prefix sum where ``A`` is 1)
started from the element before the first, and a target may run it as a parallel scan
(``targets.triton_scan``) instead of on one thread. The result differs from the loop's only in
the order of the operations. Recognised: a loop counting by 1 or -1 with no reductions, whose body
is that one assignment to a 1-D subscript that moves with the loop variable by the step
(``f(i) = i + c``, ``c`` loop-invariant), whose value holds the previous element as its only read
of the array and is affine in it through ``+``, ``-``, ``*`` and negation (``X(I-1) + Y(I)``,
``D(I) - C(I)*X(I+1)``). The loop is marked
(``ir.Loop.scan``); everything else about it is unchanged, so a target without a scan runs it in
order."""

from __future__ import annotations

from dataclasses import replace

from translate import ir
from translate.simplify import const_int, linearize, simplify

Affine = tuple[ir.Expr | None, ir.Expr | None]  # (a, b) of x -> a*x + b; None: a is 1, b is 0


def recognise(body: tuple[ir.Stmt, ...], kernel: ir.Kernel) -> tuple[ir.Stmt, ...]:
    """``body`` with its linear recurrences marked, at any depth of IFs (not inside other loops:
    those run their recurrence once per outer iteration and stay serial). The same tuple when
    nothing is marked."""
    out: list[ir.Stmt] = []
    for s in body:
        if isinstance(s, ir.If):
            then, orelse = recognise(s.then, kernel), recognise(s.orelse, kernel)
            if then is not s.then or orelse is not s.orelse:
                s = replace(s, then=then, orelse=orelse)
        elif isinstance(s, ir.Loop) and not s.scan and recurrence(s, kernel) is not None:
            s = replace(s, scan=True, reason="a linear recurrence: a parallel scan where the target has one")
        out.append(s)
    return body if all(a is b for a, b in zip(out, body, strict=True)) else tuple(out)


def parts(loop: ir.Loop) -> tuple[ir.Load, ir.Load, ir.Expr | None, ir.Expr | None]:
    """A marked loop's store ``X(f(i))``, its read ``X(f(i - step))`` and its map's ``A(i)`` and
    ``B(i)`` (None: 1 and 0)."""
    found = _match(loop)
    assert found is not None, "not a linear recurrence"
    return found


def recurrence(loop: ir.Loop, kernel: ir.Kernel) -> Affine | None:
    """The map (``A(i)``, ``B(i)``) of a linear recurrence, or None when ``loop`` is not one."""
    step = const_int(loop.step)
    if loop.kind is not ir.LoopKind.SERIAL or loop.reductions or step not in (1, -1):
        return None
    found = _match(loop)
    if found is None:
        return None
    store, _, a, b = found
    try:
        decl = kernel.param(store.array)
    except KeyError:
        return None
    if not isinstance(decl, ir.Array) or len(decl.shape) != 1 or decl.dtype in (ir.DType.BOOL, ir.DType.CHAR):
        return None
    # the body is that one store, so the loop writes no scalar but its variable, and the previous
    # element is the array's only read: the coefficients read neither the array nor anything written
    return a, b


def first_read(loop: ir.Loop) -> ir.Load:
    """The element before the first iteration's, ``X(f(start - step))``: where the scan starts."""
    _, prev, _, _ = parts(loop)
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
    if len(reads) != 1 or not _moves_by_step(loop, store, reads[0]):
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
