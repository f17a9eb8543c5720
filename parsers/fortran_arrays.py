"""Fortran array syntax lowered to loop nests.

* Array assignment (``a = b + c``, ``a(2:n-1) = b(1:n-2)``, ``a(:, j) = 0``): one loop per
  section dimension of the left-hand side (the first dimension innermost), every array
  reference on the right mapped to the same loops in the order of its own section
  dimensions. Fortran evaluates the whole right-hand side before it assigns: where the
  right-hand side reads the assigned array at another element than the one assigned, the
  values go through a temporary array first.
* WHERE / ELSEWHERE: the masks and assignments of one construct over one index space, as
  one nest of IFs (each element's masks are read before any of its assignments, which is
  Fortran's order as long as every array the construct assigns is read at the element
  assigned; otherwise the construct is not lowered).
* Array intrinsics in scalar expressions (SUM, PRODUCT, MAXVAL, MINVAL, COUNT, ANY, ALL,
  DOT_PRODUCT, MAXLOC/MINLOC along a rank-1 array, with MASK=): a reduction loop before
  the statement, into a new local. ``c = MATMUL(a, b)``: a nest with the sum inside.
* Inquiry and numeric constants: SIZE, LBOUND, UBOUND, HUGE, TINY, EPSILON.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fparser.two import Fortran2003 as F

from parsers.base import Unsupported
from parsers.fortran_expr import coerce
from parsers.fortran_scope import Sym
from translate import ir
from translate.ir import BinOp, Call, Const, DType, Expr, Load, Var
from translate.simplify import add, mul, simplify, sub

if TYPE_CHECKING:
    from parsers.fortran_stmts import StmtLowerer

REDUCTIONS = ("sum", "product", "maxval", "minval", "count", "any", "all", "dot_product", "maxloc", "minloc")
INQUIRIES = ("size", "lbound", "ubound", "huge", "tiny", "epsilon")
_LIMITS = {
    "huge": {DType.F64: 1.7976931348623157e308, DType.F32: 3.4028234663852886e38, DType.I32: 2**31 - 1,
             DType.I64: 2**63 - 1},
    "tiny": {DType.F64: 2.2250738585072014e-308, DType.F32: 1.1754943508222875e-38},
    "epsilon": {DType.F64: 2.220446049250313e-16, DType.F32: 1.1920928955078125e-07},
}
_ONE = Const(1, DType.I32)


@dataclass(frozen=True)
class Dim:
    """One section dimension of an array reference: its first element (source index),
    step and element count."""

    first: Expr
    step: Expr
    trip: Expr


# ---------------------------------------------------------------- sections


def upper(name: str, sym: Sym, k: int) -> Expr:
    """The upper bound of dimension ``k`` (0-based) of an array."""
    assert sym.dims is not None
    lo, hi = sym.dims[k]
    if hi is not None:
        return hi
    if sym.deferred:
        return simplify(sub(add(lo, Var(f"{name}_size{k + 1}", DType.I32)), _ONE))
    raise Unsupported(f"the whole of assumed-size array {name} has no extent")


def ref_dims(sl: StmtLowerer, name: str, sym: Sym, subs: list[object] | None) -> list[Dim]:
    """The section dimensions of ``name`` (whole when ``subs`` is None)."""
    assert sym.dims is not None
    ex = sl.ex
    out: list[Dim] = []
    for k, (lo, _) in enumerate(sym.dims):
        s = subs[k] if subs is not None else None
        if subs is not None and not isinstance(s, F.Subscript_Triplet):
            continue
        first = lo if s is None or s.items[0] is None else coerce(ex.expr(s.items[0]), DType.I32)
        last = upper(name, sym, k) if s is None or s.items[1] is None else coerce(ex.expr(s.items[1]), DType.I32)
        step = _ONE if s is None or s.items[2] is None else coerce(ex.expr(s.items[2]), DType.I32)
        if step == _ONE:
            trip = simplify(add(sub(last, first), _ONE))
        else:
            trip = simplify(BinOp("div", add(sub(last, first), step), step, DType.I32))
        out.append(Dim(simplify(first), simplify(step), trip))
    return out


def first_array_ref(sl: StmtLowerer, node: object) -> tuple[str, Sym, list[object] | None] | None:
    """The first array-valued reference in an expression tree (a whole array or a section),
    not counting arguments of reductions inside it."""
    if isinstance(node, F.Intrinsic_Function_Reference) and str(node.items[0]).lower() in REDUCTIONS + INQUIRIES:
        return None
    if isinstance(node, F.Name):
        sym = sl.ex.scope.lookup(str(node).lower())
        if sym is not None and sym.dims is not None:
            return str(node).lower(), sym, None
        return None
    if isinstance(node, F.Part_Ref):
        name = str(node.items[0]).lower()
        sym = sl.ex.scope.lookup(name)
        subs = list(node.items[1].items) if node.items[1] is not None else []
        if sym is not None and sym.dims is not None:
            return (name, sym, subs) if any(isinstance(s, F.Subscript_Triplet) for s in subs) else None
        return first_array_ref(sl, node.items[1]) if node.items[1] is not None else None
    for child in getattr(node, "items", ()) or ():
        if child is None or isinstance(child, str):
            continue
        found = first_array_ref(sl, child)
        if found is not None:
            return found
    return None


def is_array_valued(sl: StmtLowerer, node: object) -> bool:
    return first_array_ref(sl, node) is not None


@contextmanager
def elements(sl: StmtLowerer, loop_vars: list[Var]) -> Iterator[None]:
    """Lower expressions element by element: the k-th section dimension of every array
    reference walks ``loop_vars[k]`` (0-based positions)."""
    saved = sl.ex.sections
    sl.ex.sections = loop_vars
    try:
        yield
    finally:
        sl.ex.sections = saved


def fresh_vars(sl: StmtLowerer, base: str, n: int) -> list[Var]:
    out = []
    for k in range(1, n + 1):
        name = f"{base}_i{k}"
        j = 1
        while sl.ex.scope.lookup(name) is not None or name in sl.extra_locals or name in sl.loop_names:
            j += 1
            name = f"{base}_i{k}_{j}"
        sl.loop_names.add(name)
        out.append(Var(name, DType.I32))
    return out


def nest(loop_vars: list[Var], trips: list[Expr], body: tuple[ir.Stmt, ...], line: int) -> tuple[ir.Stmt, ...]:
    """Loops over the positions of a section, the first dimension innermost (Fortran's order)."""
    stmts = body
    for v, trip in zip(loop_vars, trips, strict=True):
        stmts = (ir.Loop(v.name, Const(0, DType.I32), trip, _ONE, stmts, line=line),)
    return stmts


# -------------------------------------------------------------- assignment


def assignment(sl: StmtLowerer, lhs: object, rhs: object) -> tuple[ir.Stmt, ...]:
    """``lhs = rhs`` where ``lhs`` is a whole array or a section."""
    ex = sl.ex
    if isinstance(lhs, F.Name):
        name, subs = str(lhs).lower(), None
    else:
        name, subs = str(lhs.items[0]).lower(), list(lhs.items[1].items)  # type: ignore[attr-defined]
    sym = ex.scope.lookup(name)
    assert sym is not None and sym.dims is not None
    if isinstance(rhs, F.Intrinsic_Function_Reference) and str(rhs.items[0]).lower() == "matmul":
        return matmul(sl, lhs, name, sym, subs, rhs)
    dims = ref_dims(sl, name, sym, subs)
    loop_vars = fresh_vars(sl, name, len(dims))
    with elements(sl, loop_vars):
        target = ex.load(name, sym, subs) if subs is not None else ex.whole(name, sym)
        value = coerce(ex.expr(rhs), target.dtype)
    line = sl.orig_line(ex.line)
    if not _overlaps(target, value, loop_vars):
        return nest(loop_vars, [d.trip for d in dims], (ir.Assign(target, value),), line)
    # the right-hand side reads the assigned array elsewhere: all of it first, into a temporary
    tmp = _temporary(sl, name, target.dtype, [d.trip for d in dims])
    at = Load(tmp, tuple(loop_vars), target.dtype)
    trips = [d.trip for d in dims]
    return (nest(loop_vars, trips, (ir.Assign(at, value),), line)
            + nest(loop_vars, trips, (ir.Assign(target, at),), line))


def _overlaps(target: Load, value: Expr, loop_vars: list[Var]) -> bool:
    """Whether ``value`` reads the assigned array at an element another iteration may assign: not
    where, in a dimension the section does not walk, the two indices differ by a constant
    (``a(0, :) = a(1, :)``, ``a(i, :) = a(i - 1, :)``: other rows)."""
    walked = {v.name for v in loop_vars}
    for n in ir.walk(value):
        if isinstance(n, Load) and n.array == target.array and n.index != target.index:
            apart = False
            for a, b in zip(n.index, target.index, strict=True):
                names = {v.name for e in (a, b) for v in ir.walk(e) if isinstance(v, Var)}
                d = simplify(sub(a, b))
                if not names & walked and isinstance(d, Const) and d.value != 0:
                    apart = True
            if not apart:
                return True
    return False


def _temporary(sl: StmtLowerer, base: str, dtype: DType, trips: list[Expr]) -> str:
    k = 1
    while (name := f"{base}_tmp{k}") in sl.extra_locals or sl.ex.scope.lookup(name) is not None:
        k += 1
    sl.extra_locals[name] = ir.Array(name, dtype, tuple(trips), ir.Layout.LEFT, ir.Intent.IN)
    return name


def matmul(sl: StmtLowerer, lhs: object, name: str, sym: Sym, subs: list[object] | None,
           rhs: object) -> tuple[ir.Stmt, ...]:
    """``c = MATMUL(a, b)`` (matrix times matrix or vector) as loops with the sum inside."""
    ex = sl.ex
    args = [a for a in rhs.items[1].items]  # type: ignore[attr-defined]
    if len(args) != 2:
        raise Unsupported(f"MATMUL with {len(args)} arguments at {ex.where()}")
    refs = [first_array_ref(sl, a) for a in args]
    if any(r is None for r in refs):
        raise Unsupported(f"MATMUL of a non-array at {ex.where()}")
    (an, asym, asubs), (bn, bsym, bsubs) = refs  # type: ignore[misc]
    adims, bdims = ref_dims(sl, an, asym, asubs), ref_dims(sl, bn, bsym, bsubs)
    cdims = ref_dims(sl, name, sym, subs)
    if len(adims) != 2 or len(bdims) not in (1, 2) or len(cdims) != len(bdims):
        raise Unsupported(f"MATMUL of ranks {len(adims)} and {len(bdims)} at {ex.where()} cannot be lowered")
    i, k = fresh_vars(sl, name, 1)[0], fresh_vars(sl, f"{name}_k", 1)[0]
    j = fresh_vars(sl, f"{name}_j", 1)[0] if len(bdims) == 2 else None
    out_vars = [i] + ([j] if j is not None else [])
    with elements(sl, [i, k]):
        a = ex.expr(args[0])
    with elements(sl, [k] + ([j] if j is not None else [])):
        b = ex.expr(args[1])
    with elements(sl, out_vars):
        target = ex.load(name, sym, subs) if subs is not None else ex.whole(name, sym)
    dtype = target.dtype
    acc = _scalar(sl, f"{name}_sum", dtype)
    line = sl.orig_line(ex.line)
    product = coerce(BinOp("mul", coerce(a, dtype), coerce(b, dtype), dtype), dtype)
    inner = ir.Loop(k.name, Const(0, DType.I32), adims[1].trip, _ONE,
                    (ir.Assign(acc, BinOp("add", acc, product, dtype)),), line=line)
    body: tuple[ir.Stmt, ...] = (ir.Assign(acc, Const(0.0 if dtype.is_float else 0, dtype)), inner,
                                 ir.Assign(target, acc))
    trips = [cdims[0].trip] + ([cdims[1].trip] if j is not None else [])
    if target.array not in (an, bn):
        return nest(out_vars, trips, body, line)
    # c = MATMUL(c, b): the product first, into a temporary
    tmp = Load(_temporary(sl, name, dtype, trips), tuple(out_vars), dtype)
    body = body[:-1] + (ir.Assign(tmp, acc),)
    return nest(out_vars, trips, body, line) + nest(out_vars, trips, (ir.Assign(target, tmp),), line)


# ------------------------------------------------------------------- WHERE


def where(sl: StmtLowerer, arms: list[tuple[object | None, list[object]]]) -> tuple[ir.Stmt, ...]:
    """A WHERE construct (or statement) as one nest: ``arms`` are (mask or None, assignments)."""
    ex = sl.ex
    first = next((m for m, _ in arms if m is not None), None)
    ref = first_array_ref(sl, first) if first is not None else None
    if ref is None:
        raise Unsupported(f"WHERE without an array mask at {ex.where()}")
    dims = ref_dims(sl, *ref)
    loop_vars = fresh_vars(sl, ref[0], len(dims))
    line = sl.orig_line(ex.line)
    conds: list[Expr] = []
    bodies: list[tuple[ir.Stmt, ...]] = []
    written: set[str] = set()
    targets: dict[str, tuple[Expr, ...]] = {}
    with elements(sl, loop_vars):
        for mask, stmts in arms:
            cond = sl.cond(mask) if mask is not None else Const(True, DType.BOOL)
            body: list[ir.Stmt] = []
            for s in stmts:
                if isinstance(s, F.Comment):
                    continue
                if not isinstance(s, F.Assignment_Stmt):
                    raise Unsupported(f"{type(s).__name__} inside WHERE at {ex.where(s)} cannot be lowered")
                lhs, _, rhs = s.items
                name = str(lhs.items[0] if isinstance(lhs, F.Part_Ref) else lhs).lower()
                sym = ex.scope.lookup(name)
                if sym is None or sym.dims is None:
                    raise Unsupported(f"WHERE assigns the scalar {name} at {ex.where(s)}")
                subs = list(lhs.items[1].items) if isinstance(lhs, F.Part_Ref) else None
                target = ex.load(name, sym, subs) if subs is not None else ex.whole(name, sym)
                body.append(ir.Assign(target, coerce(ex.expr(rhs), target.dtype)))
                written.add(name)
                if targets.setdefault(name, target.index) != target.index:
                    raise Unsupported(f"WHERE assigns {name} at different elements ({ex.where(s)})")
            conds.append(cond)
            bodies.append(tuple(sl.flush(tuple(body))))
    for n in (x for c in conds for x in ir.walk(c)):
        if isinstance(n, Load) and n.array in written and n.index != targets[n.array]:
            raise Unsupported(f"WHERE at {ex.where()} reads {n.array}, which it assigns, at another element")
    for b in bodies:
        for n in (x for s in b for x in ir.walk(s)):
            if isinstance(n, Load) and n.array in written and n.index != targets[n.array]:
                raise Unsupported(f"WHERE at {ex.where()} reads {n.array}, which it assigns, at another element")
    stmt: tuple[ir.Stmt, ...] = ()
    for cond, body in reversed(list(zip(conds, bodies, strict=True))):
        stmt = (ir.If(cond, body, stmt),) if cond != Const(True, DType.BOOL) else body
    return nest(loop_vars, [d.trip for d in dims], stmt, line)


# -------------------------------------------------------------- intrinsics


def _scalar(sl: StmtLowerer, base: str, dtype: DType) -> Var:
    k = 1
    while (name := f"{base}{k}") in sl.extra_locals or sl.ex.scope.lookup(name) is not None:
        k += 1
    sl.extra_locals[name] = ir.Scalar(name, dtype)
    return Var(name, dtype)


def _args(sl: StmtLowerer, fn: str, subs: list[object], names: tuple[str, ...]) -> dict[str, object]:
    """Positional and keyword arguments by name."""
    out: dict[str, object] = {}
    for k, a in enumerate(subs):
        if isinstance(a, F.Actual_Arg_Spec):
            out[str(a.items[0]).lower()] = a.items[1]
        elif k < len(names):
            out[names[k]] = a
        else:
            raise Unsupported(f"{fn.upper()} with {len(subs)} arguments at {sl.ex.where()}")
    return out


def reduction(sl: StmtLowerer, fn: str, subs: list[object]) -> Expr:
    """A reduction intrinsic in a scalar expression: its loop goes before the statement."""
    ex = sl.ex
    names = ("vector_a", "vector_b") if fn == "dot_product" else ("mask", "dim") if fn in ("count", "any", "all") \
        else ("array", "dim", "mask")
    args = _args(sl, fn, subs, names)
    main = args.get("vector_a", args.get("array", args.get("mask")))
    if main is None:
        raise Unsupported(f"{fn.upper()} without an array at {ex.where()}")
    ref = first_array_ref(sl, main)
    if ref is None:
        raise Unsupported(f"{fn.upper()} of '{main}' at {ex.where()}: not an array")
    dims = ref_dims(sl, *ref)
    if "dim" in args:
        d = simplify(ex.expr(args["dim"]))
        if not (len(dims) == 1 and d == Const(1, d.dtype)):
            raise Unsupported(f"{fn.upper()} with DIM= over a rank-{len(dims)} array at {ex.where()} cannot be"
                              " lowered in a scalar expression")
    loop_vars = fresh_vars(sl, ref[0], len(dims))
    line = sl.orig_line(ex.line)
    with elements(sl, loop_vars):
        elem = ex.expr(main)
        if fn == "dot_product":
            other = ex.expr(args["vector_b"])
            t = elem.dtype if elem.dtype == other.dtype else DType.F64
            elem = BinOp("mul", coerce(elem, t), coerce(other, t), t)
        mask = sl.cond(args["mask"]) if "mask" in args and fn not in ("count", "any", "all") else None
    trips = [d.trip for d in dims]
    if fn in ("maxloc", "minloc"):
        if len(dims) != 1:
            raise Unsupported(f"{fn.upper()} of a rank-{len(dims)} array at {ex.where()} (an array result)")
        return _location(sl, fn, elem, mask, loop_vars[0], trips[0], line)
    if fn in ("count", "any", "all"):
        acc = _scalar(sl, f"{fn}_", DType.I32)
        update: ir.Stmt = ir.If(elem, (ir.Assign(acc, BinOp("add", acc, _ONE, DType.I32)),))
        init: Expr = Const(0, DType.I32)
    else:
        dtype = elem.dtype
        acc = _scalar(sl, f"{fn}_", dtype)
        op = {"sum": "add", "dot_product": "add", "product": "mul"}.get(fn)
        if op is not None:
            init = Const(1 if op == "mul" else 0, dtype) if dtype.is_int else Const(1.0 if op == "mul" else 0.0, dtype)
            update = ir.Assign(acc, BinOp(op, acc, elem, dtype))
        else:
            big = _LIMITS["huge"][dtype] if dtype in _LIMITS["huge"] else None
            if big is None:
                raise Unsupported(f"{fn.upper()} of {dtype.value} at {ex.where()}")
            init = Const(-big if fn == "maxval" else big, dtype)
            update = ir.Assign(acc, Call("max" if fn == "maxval" else "min", (acc, elem), dtype))
    body = (ir.If(mask, (update,)),) if mask is not None else (update,)
    sl.prelude.extend((ir.Assign(acc, init), *nest(loop_vars, trips, body, line)))
    if fn == "any":
        return BinOp("gt", acc, Const(0, DType.I32), DType.BOOL)
    if fn == "all":
        total = trips[0]
        for t in trips[1:]:
            total = mul(total, t)
        return BinOp("eq", acc, simplify(total), DType.BOOL)
    return acc


def _location(sl: StmtLowerer, fn: str, elem: Expr, mask: Expr | None, v: Var, trip: Expr,
              line: int) -> Expr:
    """MAXLOC/MINLOC along a rank-1 array: the first position (1-based) of the extreme."""
    if mask is not None:
        raise Unsupported(f"{fn.upper()} with MASK= at {sl.ex.where()} cannot be lowered")
    best = _scalar(sl, f"{fn}_value", elem.dtype)
    loc = _scalar(sl, f"{fn}_", DType.I32)
    first = ir.substitute(elem, {v.name: Const(0, DType.I32)})
    better = BinOp("gt" if fn == "maxloc" else "lt", elem, best, DType.BOOL)
    loop = ir.Loop(v.name, _ONE, trip, _ONE,
                   (ir.If(better, (ir.Assign(loc, add(v, _ONE)), ir.Assign(best, elem))),), line=line)
    sl.prelude.extend((ir.Assign(loc, Const(0, DType.I32)), ir.If(BinOp("gt", trip, Const(0, DType.I32), DType.BOOL),
                       (ir.Assign(loc, _ONE), ir.Assign(best, first), loop))))  # type: ignore[arg-type]
    return loc


def inquiry(sl: StmtLowerer, fn: str, subs: list[object]) -> Expr:
    """SIZE, LBOUND, UBOUND of an array; HUGE, TINY, EPSILON of a type."""
    ex = sl.ex
    if fn in _LIMITS:
        if len(subs) != 1:
            raise Unsupported(f"{fn.upper()} with {len(subs)} arguments at {ex.where()}")
        t = ex.expr(subs[0]).dtype
        if t not in _LIMITS[fn]:
            raise Unsupported(f"{fn.upper()} of {t.value} at {ex.where()}")
        return Const(_LIMITS[fn][t], t)
    args = _args(sl, fn, subs, ("array", "dim", "kind"))
    target = args.get("array")
    if not isinstance(target, F.Name):
        raise Unsupported(f"{fn.upper()} of '{target}' at {ex.where()}: not a whole array")
    name = str(target).lower()
    sym = ex.scope.lookup(name)
    if sym is None or sym.dims is None:
        raise Unsupported(f"{fn.upper()} of '{name}' at {ex.where()}: not an array")
    ex.used.add(name)
    if "dim" not in args:
        if fn != "size":
            raise Unsupported(f"{fn.upper()} without DIM= at {ex.where()} (an array result)")
        total: Expr = _ONE
        for k in range(len(sym.dims)):
            total = mul(total, simplify(add(sub(upper(name, sym, k), sym.dims[k][0]), _ONE)))
        return simplify(total)
    d = simplify(ex.expr(args["dim"]))
    if not (isinstance(d, Const) and isinstance(d.value, int) and 1 <= d.value <= len(sym.dims)):
        raise Unsupported(f"{fn.upper()} with DIM={ir.expr_str(d)} at {ex.where()}: not a constant dimension")
    k = d.value - 1
    lo = sym.dims[k][0]
    if fn == "lbound":
        return lo
    hi = upper(name, sym, k)
    return hi if fn == "ubound" else simplify(add(sub(hi, lo), _ONE))


__all__ = ["INQUIRIES", "REDUCTIONS", "assignment", "inquiry", "is_array_valued", "reduction", "where"]
