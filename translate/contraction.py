"""Matrix products written as loops, recognised and handed to the tiled matmul
(``ir.Extern`` ``matmul``) that every target renders (``Schedule.contraction``).

Two shapes of the reference DGEMM are recognised, in either loop order and with
either operand transposed; ``(r, c)`` are the two parallel loops, ``l`` the
reduction loop, all from 0 in unit steps over bounds that do not depend on each
other::

    dot form (C := alpha*A**T*B + beta*C)      accumulate form (C := alpha*A*B + beta*C)
    parallel r, c:                             parallel c:
        t = 0                                      <statements before, e.g. C(:, c) scaled>
        for l: t = t + A(r, l) * B(l, c)           for l:
        <statements that use t>                        s = alpha * B(l, c)     (scalars)
                                                       parallel r: C(r, c) = C(r, c) + s * A(r, l)

become ``P = A @ B`` (a new local m x n array, column-major, computed by the matmul before
the nest) and the nest without its ``l`` loop: ``t = P(r, c)``, or ``C(r, c) = C(r, c) +
alpha * P(r, c)``; in the accumulate form, loops over the same rows before the ``l`` loop
(C's column scaled by beta, under IFs) join that update in one loop where each iteration
touches only its own element, so the nest is elementwise over (r, c). The increment must
be a product of one element of each operand (indexed by exactly the loop variables) and
factors that ``l`` does not change; the operands must not be written in the nest; the
scalars of the ``l`` loop must be dead after it. Summing before scaling and adding to C
reassociates floating-point sums, as every parallel reduction does.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from translate import ir
from translate.irquery import arrays_written, count_refs, fresh_name, scalar_reads, scalar_writes

ZERO = ir.Const(0, ir.DType.I32)
ONE = ir.Const(1, ir.DType.I32)


@dataclass(frozen=True)
class _Product:
    a: ir.Load
    b: ir.Load
    trans_a: bool
    trans_b: bool
    scale: tuple[ir.Expr, ...]  # the factors that do not depend on l


def _from_zero(loop: ir.Loop) -> bool:
    return ir.expr_str(loop.start) == ir.expr_str(ZERO) and ir.expr_str(loop.step) == ir.expr_str(ONE)


def _factors(e: ir.Expr) -> list[ir.Expr]:
    if isinstance(e, ir.BinOp) and e.op == "mul":
        return _factors(e.lhs) + _factors(e.rhs)
    return [e]


def _vars(index: tuple[ir.Expr, ...]) -> tuple[str, ...] | None:
    names = tuple(e.name for e in index if isinstance(e, ir.Var))
    return names if len(names) == len(index) else None


def _product(increment: ir.Expr, row: str, col: str, red: str, moving: set[str]) -> _Product | None:
    """``increment`` as A(row, red) * B(red, col) * (factors free of ``moving``)."""
    a = b = None
    ta = tb = False
    scale = []
    for f in _factors(increment):
        names = _vars(f.index) if isinstance(f, ir.Load) else None
        if isinstance(f, ir.Load) and names in ((row, red), (red, row)) and a is None:
            a, ta = f, names == (red, row)
        elif isinstance(f, ir.Load) and names in ((red, col), (col, red)) and b is None:
            b, tb = f, names == (col, red)
        elif scalar_reads(f) & moving or any(isinstance(n, ir.Load) for n in ir.walk(f)):
            return None  # changes with l, or reads an array (kept simple: scalars only)
        else:
            scale.append(f)
    if a is None or b is None or a.dtype != b.dtype or not a.dtype.is_float:
        return None
    return _Product(a, b, ta, tb, tuple(scale))


def _scaled(value: ir.Expr, scale: tuple[ir.Expr, ...]) -> ir.Expr:
    for f in scale:
        value = ir.BinOp("mul", f, value, value.dtype)
    return value


class _Recogniser:
    def __init__(self, kernel: ir.Kernel) -> None:
        self.kernel = kernel
        self.taken = {d.name for d in kernel.params + kernel.locals}
        self.locals: list[ir.Array] = []

    def fresh(self, a: str, b: str) -> str:
        name = fresh_name(f"{a}_{b}_prod", self.taken)
        self.taken.add(name)
        return name

    def stmts(self, stmts: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
        out: list[ir.Stmt] = []
        for s in stmts:
            if isinstance(s, ir.Loop):
                found = self.nest(s)
                if found is not None:
                    out += found
                    continue
                s = replace(s, body=self.stmts(s.body))
            elif isinstance(s, ir.If):
                s = replace(s, then=self.stmts(s.then), orelse=self.stmts(s.orelse))
            out.append(s)
        return tuple(out)

    def bounds_ok(self, loops: list[ir.Loop], moving: set[str]) -> bool:
        return all(_from_zero(lp) and not (scalar_reads(lp.stop) & moving) for lp in loops)

    def product(self, outer: ir.Loop, inner: ir.Loop, red: ir.Loop, increment: ir.Expr, row: str, col: str,
                moving: set[str], nest: ir.Stmt) -> tuple[ir.Extern, ir.Load] | None:
        """The matmul and the element of its result at (row, col), or None."""
        loops = [outer, inner, red]
        if not self.bounds_ok(loops, moving | {lp.var for lp in loops}):
            return None
        p = _product(increment, row, col, red.var, moving | {red.var})
        if p is None or {p.a.array, p.b.array} & arrays_written(nest):
            return None
        trips = {outer.var: outer.stop, inner.var: inner.stop}
        name = self.fresh(p.a.array, p.b.array)
        self.locals.append(ir.Array(name, p.a.dtype, (trips[row], trips[col]), ir.Layout.LEFT, ir.Intent.INOUT))
        attrs = (("k", red.stop), ("trans_a", p.trans_a), ("trans_b", p.trans_b))
        ext = ir.Extern("matmul", (p.a.array, p.b.array), (name,), attrs, red.line)
        element = ir.Load(name, (ir.Var(row, ir.DType.I32), ir.Var(col, ir.DType.I32)), p.a.dtype)
        return ext, _scaled(element, p.scale)

    def nest(self, outer: ir.Loop) -> list[ir.Stmt] | None:
        if outer.kind is not ir.LoopKind.PARALLEL:
            return None
        return self.dot_form(outer) or self.accumulate_form(outer)

    def dot_form(self, outer: ir.Loop) -> list[ir.Stmt] | None:
        if len(outer.body) != 1 or not isinstance(outer.body[0], ir.Loop):
            return None
        inner = outer.body[0]
        if inner.kind is not ir.LoopKind.PARALLEL or len(inner.body) < 2:
            return None
        init, red, *rest = inner.body
        if not (isinstance(init, ir.Assign) and isinstance(init.target, ir.Var) and isinstance(init.value, ir.Const)
                and init.value.value == 0 and isinstance(red, ir.Loop) and len(red.body) == 1):
            return None
        t = init.target.name
        upd = red.body[0]
        if not (isinstance(upd, ir.Assign) and isinstance(upd.target, ir.Var) and upd.target.name == t
                and isinstance(upd.value, ir.BinOp) and upd.value.op == "add"
                and isinstance(upd.value.lhs, ir.Var) and upd.value.lhs.name == t
                and count_refs(upd.value.rhs, t) == 0):
            return None
        if t in scalar_reads(outer.stop) | scalar_reads(inner.stop) | scalar_reads(red.stop):
            return None
        found = self.product(outer, inner, red, upd.value.rhs, inner.var, outer.var, {t}, outer)
        if found is None:
            return None
        ext, element = found
        body = (ir.Assign(ir.Var(t, init.target.dtype), element), *rest)
        return [ext, replace(outer, body=(replace(inner, body=body),))]

    def accumulate_form(self, outer: ir.Loop) -> list[ir.Stmt] | None:
        if not outer.body or not isinstance(outer.body[-1], ir.Loop):
            return None
        *before, red = outer.body
        if len(red.body) < 1 or not isinstance(red.body[-1], ir.Loop):
            return None
        *scalars, inner = red.body
        if (inner.kind is not ir.LoopKind.PARALLEL or len(inner.body) != 1 or red.reductions
                or not all(isinstance(s, ir.Assign) and isinstance(s.target, ir.Var) for s in scalars)):
            return None
        upd = inner.body[0]
        if not (isinstance(upd, ir.Assign) and isinstance(upd.target, ir.Load)
                and _vars(upd.target.index) in ((inner.var, outer.var), (outer.var, inner.var))
                and isinstance(upd.value, ir.BinOp) and upd.value.op == "add" and upd.value.lhs == upd.target):
            return None
        # the scalars of the l loop: substituted into the increment, and dead after the loop
        assigned = scalar_writes(red)
        mapping: dict[str, ir.Expr] = {}
        for s in scalars:
            assert isinstance(s, ir.Assign) and isinstance(s.target, ir.Var)
            mapping[s.target.name] = ir.substitute(s.value, mapping)
        increment = ir.substitute(upd.value.rhs, mapping)
        if any(sum(count_refs(s, v) for s in self.kernel.body) != count_refs(red, v) for v in assigned):
            return None
        if count_refs(increment, upd.target.array) or upd.target.array in scalar_reads(red.stop):
            return None
        row, col = _vars(upd.target.index) or ("", "")
        found = self.product(outer, inner, red, increment, row, col, assigned, outer)
        if found is None:
            return None
        ext, element = found
        add = ir.Assign(upd.target, ir.BinOp("add", upd.target, element, upd.target.dtype))
        updated = replace(inner, body=(add,), line=inner.line)
        fused = _fused(tuple(before), updated)
        return [ext, replace(outer, body=(*before, updated) if fused is None else (fused,))]


def _loop_bodies(stmts: tuple[ir.Stmt, ...], like: ir.Loop) -> tuple[ir.Stmt, ...] | None:
    """``stmts`` with each loop over ``like``'s range (same variable, bounds and step, parallel,
    no reductions) replaced by its body, through IFs whose conditions do not read the loop
    variable; None where anything else is there."""
    out: list[ir.Stmt] = []
    for s in stmts:
        if isinstance(s, ir.Loop):
            same = (s.var, ir.expr_str(s.start), ir.expr_str(s.stop), ir.expr_str(s.step)) == (
                like.var, ir.expr_str(like.start), ir.expr_str(like.stop), ir.expr_str(like.step))
            if not same or s.kind is not ir.LoopKind.PARALLEL or s.reductions:
                return None
            out += s.body
        elif isinstance(s, ir.If):
            if like.var in scalar_reads(s.cond):
                return None
            then, orelse = _loop_bodies(s.then, like), _loop_bodies(s.orelse, like)
            if then is None or orelse is None:
                return None
            out.append(replace(s, then=then, orelse=orelse))
        else:
            return None
    return tuple(out)


def _fused(before: tuple[ir.Stmt, ...], updated: ir.Loop) -> ir.Loop | None:
    """The statements before the product's update (``C(:, c)`` scaled by beta, in loops over the same
    rows as the update, under IFs) and the update as one loop, where each of its iterations
    writes only its own element and reads no other element of an array written there: a column
    per thread would otherwise run each loop down its column, and the threads a column apart
    read C uncoalesced. None where they cannot be fused that way."""
    (add,) = updated.body
    assert isinstance(add, ir.Assign) and isinstance(add.target, ir.Load)
    bodies = _loop_bodies(before, updated) if before else None
    if not bodies:
        return None
    body = (*bodies, add)
    own = ir.expr_str(add.target)
    if any(scalar_writes(st) for st in body):
        return None
    written = arrays_written(body)
    for s in body:
        for n in ir.walk(s):
            if isinstance(n, ir.Load) and n.array in written and ir.expr_str(n) != own:
                return None
            if isinstance(n, ir.Assign) and not (isinstance(n.target, ir.Load) and ir.expr_str(n.target) == own):
                return None
    return replace(updated, body=body)


def recognise(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with every recognised matrix product as a matmul ``Extern``."""
    r = _Recogniser(kernel)
    body = r.stmts(kernel.body)
    if not r.locals:
        return kernel
    return replace(kernel, body=body, locals=kernel.locals + tuple(r.locals))


def has_product(kernel: ir.Kernel) -> bool:
    """Whether ``recognise`` would change ``kernel``."""
    return bool(_Recogniser(kernel).stmts(kernel.body) != kernel.body)


def inner_extent(op: ir.Extern, a: ir.Array) -> ir.Expr:
    """A matmul's inner extent: its ``k`` attribute where the operands are larger than the
    product (a recognised nest over leading dimensions), else the shared dimension of ``a``."""
    k = op.attr("k")
    if isinstance(k, ir.Expr):
        return k
    return a.shape[-2] if op.attr("trans_a", False) else a.shape[-1]
