"""Constant folding and light algebra so generated index code stays readable.

Integer ``add``/``sub``/``neg`` and multiplication by a constant are put into a
canonical linear form (terms in order of first appearance, the constant last), so
``(i + 1) - 1`` becomes ``i`` and ``(a + 2) + 3`` becomes ``a + 5``. Floating-point
arithmetic is never reassociated: only casts of constants are folded there.
"""

from __future__ import annotations

import struct
from dataclasses import replace

from translate import ir
from translate.ir import BinOp, Call, Cast, Const, DType, Expr, Load, Select, UnOp, Var

Linear = tuple[dict[Expr, int], int]


def simplify(expr: Expr) -> Expr:
    """Fold constants and normalise integer index arithmetic."""
    if isinstance(expr, (Const, Var)):
        return expr
    if isinstance(expr, Load):
        return replace(expr, index=tuple(simplify(i) for i in expr.index))
    if isinstance(expr, Cast):
        return _cast(expr.dtype, simplify(expr.expr))
    if isinstance(expr, UnOp):
        return _unop(expr.op, simplify(expr.operand), expr.dtype)
    if isinstance(expr, BinOp):
        return _binop(expr.op, simplify(expr.lhs), simplify(expr.rhs), expr.dtype)
    if isinstance(expr, Call):
        return _call(expr.fn, tuple(simplify(a) for a in expr.args), expr.dtype)
    if isinstance(expr, Select):
        cond = simplify(expr.cond)
        t, f = simplify(expr.if_true), simplify(expr.if_false)
        if isinstance(cond, Const):
            return t if cond.value else f
        if t == f:
            return t
        return Select(cond, t, f, expr.dtype)
    return expr


def simplify_stmt(stmt: ir.Stmt) -> ir.Stmt:
    """Apply :func:`simplify` to every expression of a statement, recursively."""
    if isinstance(stmt, ir.Assign):
        target = simplify(stmt.target)
        assert isinstance(target, (Var, Load))
        return ir.Assign(target, simplify(stmt.value))
    if isinstance(stmt, ir.If):
        return ir.If(simplify(stmt.cond), simplify_body(stmt.then), simplify_body(stmt.orelse))
    if isinstance(stmt, ir.Loop):
        return replace(stmt, start=simplify(stmt.start), stop=simplify(stmt.stop), step=simplify(stmt.step),
                       body=simplify_body(stmt.body))
    if isinstance(stmt, ir.While):
        return replace(stmt, cond=simplify(stmt.cond), body=simplify_body(stmt.body))
    if isinstance(stmt, ir.ErrorCall):
        return ir.ErrorCall(stmt.routine, tuple(simplify(a) for a in stmt.args))
    if isinstance(stmt, ir.HostCall):
        return replace(stmt, args=tuple(simplify(a) for a in stmt.args))
    return stmt


def simplify_body(stmts: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
    """:func:`simplify_stmt` of each statement; an IF with nothing in either arm (its output gone,
    NPB MG's ``if (debug_vec(0) >= 1) call showall(...)``) is dropped: conditions have no effects."""
    out = (simplify_stmt(s) for s in stmts)
    return tuple(s for s in out if not (isinstance(s, ir.If) and not s.then and not s.orelse))


def add(a: Expr, b: Expr) -> Expr:
    return simplify(BinOp("add", a, b, _arith_type(a, b)))


def sub(a: Expr, b: Expr) -> Expr:
    return simplify(BinOp("sub", a, b, _arith_type(a, b)))


def mul(a: Expr, b: Expr) -> Expr:
    return simplify(BinOp("mul", a, b, _arith_type(a, b)))


def largest(exprs: list[Expr]) -> Expr:
    """The integer MAX of ``exprs`` (each distinct one once, in order), simplified."""
    unique: list[Expr] = []
    for e in exprs:
        if e not in unique:
            unique.append(e)
    best = unique[0]
    for e in unique[1:]:
        best = Call("max", (best, e), DType.I32)
    return simplify(best)


def const_int(expr: Expr) -> int | None:
    """The value of an integer constant expression, or None."""
    e = simplify(expr)
    if isinstance(e, Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value
    return None


def linearize(expr: Expr) -> Linear | None:
    """``expr`` as {atom: coefficient} + constant when it is an integer expression."""
    if not _is_int(expr):
        return None
    return _lin(expr)


# ------------------------------------------------------------------ internals


def _is_int(e: Expr) -> bool:
    return e.dtype.is_int


def _arith_type(a: Expr, b: Expr) -> DType:
    order = (DType.BOOL, DType.I32, DType.I64, DType.F16, DType.BF16, DType.F32, DType.F64)
    da, db = a.dtype, b.dtype
    if da in order and db in order:
        return da if order.index(da) >= order.index(db) else db
    return da


def _lin(e: Expr) -> Linear:
    if isinstance(e, Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return {}, e.value
    if isinstance(e, BinOp) and e.op in ("add", "sub") and _is_int(e.lhs) and _is_int(e.rhs):
        (ta, ca), (tb, cb) = _lin(e.lhs), _lin(e.rhs)
        sign = 1 if e.op == "add" else -1
        terms = dict(ta)
        for k, v in tb.items():
            terms[k] = terms.get(k, 0) + sign * v
        return {k: v for k, v in terms.items() if v != 0}, ca + sign * cb
    if isinstance(e, UnOp) and e.op == "neg" and _is_int(e.operand):
        t, c = _lin(e.operand)
        return {k: -v for k, v in t.items()}, -c
    if isinstance(e, BinOp) and e.op == "mul" and _is_int(e.lhs) and _is_int(e.rhs):
        (ta, ca), (tb, cb) = _lin(e.lhs), _lin(e.rhs)
        if not ta:
            return {k: v * ca for k, v in tb.items() if v * ca != 0}, ca * cb
        if not tb:
            return {k: v * cb for k, v in ta.items() if v * cb != 0}, ca * cb
    return {e: 1}, 0


def _rebuild(terms: dict[Expr, int], const: int, dtype: DType) -> Expr:
    out: Expr | None = None
    if terms and const > 0 and next(iter(terms.values())) < 0:
        out, const = Const(const, dtype), 0
    for atom, coef in terms.items():
        mag = abs(coef)
        term = atom if mag == 1 else BinOp("mul", Const(mag, dtype), atom, dtype)
        if out is None:
            out = term if coef > 0 else (UnOp("neg", atom, dtype) if mag == 1 else
                                         BinOp("mul", Const(coef, dtype), atom, dtype))
        else:
            out = BinOp("add" if coef > 0 else "sub", out, term, dtype)
    if out is None:
        return Const(const, dtype)
    if const > 0:
        return BinOp("add", out, Const(const, dtype), dtype)
    if const < 0:
        return BinOp("sub", out, Const(-const, dtype), dtype)
    return out


def _cast(dtype: DType, e: Expr) -> Expr:
    if e.dtype == dtype:
        return e
    if isinstance(e, Const) and not isinstance(e.value, str):
        if dtype.is_float and isinstance(e.value, float) and e.dtype is DType.F32:
            # a single-precision constant widened keeps its single-precision value:
            # Fortran's real(0.7, kind=8) is 0.699999988..., not 0.7
            return Const(struct.unpack("f", struct.pack("f", e.value))[0], dtype)
        if dtype.is_float and isinstance(e.value, (int, float)) and not isinstance(e.value, bool):
            return Const(float(e.value), dtype)
        if dtype.is_int and isinstance(e.value, int) and not isinstance(e.value, bool):
            return Const(int(e.value), dtype)
    return Cast(dtype, e)


def _unop(op: str, a: Expr, dtype: DType) -> Expr:
    if op == "not":
        if isinstance(a, Const):
            return Const(not a.value, DType.BOOL)
        if isinstance(a, UnOp) and a.op == "not":
            return a.operand
        return UnOp(op, a, dtype)
    if isinstance(a, UnOp) and a.op == "neg":
        return a.operand
    if dtype.is_int and _is_int(a):
        t, c = _lin(a)
        return _rebuild({k: -v for k, v in t.items()}, -c, dtype)
    if isinstance(a, Const) and isinstance(a.value, (int, float)) and not isinstance(a.value, bool):
        return Const(-a.value, dtype)
    return UnOp(op, a, dtype)


def _binop(op: str, a: Expr, b: Expr, dtype: DType) -> Expr:
    ca, cb = isinstance(a, Const), isinstance(b, Const)
    if dtype.is_int and _is_int(a) and _is_int(b):
        if op in ("add", "sub", "mul"):
            terms, c = _lin(BinOp(op, a, b, dtype))
            return _rebuild(terms, c, dtype)
        if op in ("div", "mod") and ca and cb and b.value != 0:  # type: ignore[union-attr]
            fn = ir.c_div if op == "div" else ir.c_mod
            return Const(fn(int(a.value), int(b.value)), dtype)  # type: ignore[union-attr,arg-type]
        if op == "div" and cb and b.value == 1:  # type: ignore[union-attr]
            return a
    if op in ("lt", "le", "gt", "ge", "eq", "ne") and ca and cb:
        return Const(bool(ir.evaluate(BinOp(op, a, b, dtype), {})), DType.BOOL)
    if op == "and":
        if ca:
            return b if a.value else Const(False, DType.BOOL)  # type: ignore[union-attr]
        if cb:
            return a if b.value else Const(False, DType.BOOL)  # type: ignore[union-attr]
    if op == "or":
        if ca:
            return Const(True, DType.BOOL) if a.value else b  # type: ignore[union-attr]
        if cb:
            return Const(True, DType.BOOL) if b.value else a  # type: ignore[union-attr]
    if op == "pow" and dtype.is_int and ca and cb and int(b.value) >= 0:  # type: ignore[union-attr]
        return Const(int(a.value) ** int(b.value), dtype)  # type: ignore[union-attr]
    return BinOp(op, a, b, dtype)


def _call(fn: str, args: tuple[Expr, ...], dtype: DType) -> Expr:
    if all(isinstance(a, Const) for a in args) and fn in ("max", "min", "abs") and dtype.is_int:
        return Const(int(ir.evaluate(Call(fn, args, dtype), {})), dtype)
    if fn in ("max", "min") and len(args) == 2 and args[0] == args[1]:
        return args[0]
    return Call(fn, args, dtype)
