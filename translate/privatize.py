"""Scratch arrays of a loop given one copy per iteration (array expansion).

A local array that every iteration of a loop fills before it reads it (``u1(i1)`` filled and
consumed inside each ``(i2, i3)`` iteration of a stencil, the per-row work arrays of a solver)
carries no value from one iteration to the next, but as one array it makes every iteration
write the same elements. Giving it one more dimension, indexed by the loop's iteration, gives
each iteration its own copy: the loop is then as parallel as the rest of its body allows, and
every target already allocates local arrays.

An array qualifies for a loop when it is a local of the routine, the loop's bounds do not
depend on enclosing loops (the copies need a fixed count), it is not read after the loop, and
every element the body reads was written earlier in the same iteration: each read's range of
indices lies inside the range of one earlier, unconditional write (affine indices, one inner
loop variable per dimension at most, bounds compared symbolically). Anything less certain keeps
the array shared and the loop serial.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from translate import ir
from translate.ir import BinOp, Const, DType, Expr, Load, Var
from translate.simplify import add, linearize, simplify, sub

_ONE = Const(1, DType.I32)


@dataclass(frozen=True)
class Expanded:
    """An array given one copy per iteration of ``loop``: its new extent is ``trip``."""

    array: str
    trip: Expr


def trip_count(loop: ir.Loop) -> Expr | None:
    """The loop's trip count over the routine's parameters (unit or constant step)."""
    if not (isinstance(loop.step, Const) and isinstance(loop.step.value, int) and loop.step.value != 0):
        return None
    k = loop.step.value
    span = sub(loop.stop, loop.start) if k > 0 else sub(loop.start, loop.stop)
    trip = span if abs(k) == 1 else BinOp("div", add(span, Const(abs(k) - 1, DType.I32)), Const(abs(k), DType.I32),
                                            DType.I32)
    return simplify(ir.Call("max", (Const(0, DType.I32), simplify(trip)), DType.I32))


def position(loop: ir.Loop) -> Expr:
    """The 0-based iteration number of ``loop``'s variable."""
    k = loop.step.value if isinstance(loop.step, Const) else 1
    offset = sub(Var(loop.var, DType.I32), loop.start)
    if k == 1:
        return simplify(offset)
    return simplify(BinOp("div", offset, Const(k, DType.I32), DType.I32))


def candidates(loop: ir.Loop, locals_: dict[str, ir.Array], outer_vars: set[str],
               read_after: set[str]) -> list[str]:
    """The local arrays ``loop`` may give one copy per iteration (module docstring)."""
    bound_names = {v.name for e in (loop.start, loop.stop, loop.step) for v in ir.walk(e) if isinstance(v, Var)}
    if bound_names & outer_vars or trip_count(loop) is None:
        return []
    written = {n.target.array for s in loop.body for n in ir.walk(s)
               if isinstance(n, ir.Assign) and isinstance(n.target, Load)}
    out = []
    for name in sorted(written & locals_.keys()):
        if name in read_after:
            continue
        if _moves_with(loop, name):
            continue  # already a different element per iteration: nothing to copy
        if _filled_before_read(loop.body, name):
            out.append(name)
    return out


def expand(loop: ir.Loop, names: list[str]) -> ir.Loop:
    """``loop`` with each named array indexed by the loop's iteration in a new last dimension."""
    at = position(loop)

    def fix(node: object) -> object:
        if isinstance(node, Load) and node.array in names:
            return Load(node.array, tuple(fix(i) for i in node.index) + (at,), node.dtype)  # type: ignore[misc]
        if not ir._is_node(node):
            return node
        return ir._rebuilt(node, fix)

    return replace(loop, body=tuple(fix(s) for s in loop.body))  # type: ignore[misc]


def _moves_with(loop: ir.Loop, name: str) -> bool:
    for s in loop.body:
        for n in ir.walk(s):
            if isinstance(n, ir.Assign) and isinstance(n.target, Load) and n.target.array == name:
                if any(loop.var in {v.name for v in ir.walk(i) if isinstance(v, Var)} for i in n.target.index):
                    return True
    return False


# ------------------------------------------------------------ coverage


@dataclass(frozen=True)
class _Range:
    lo: tuple[Expr, ...]
    hi: tuple[Expr, ...]


def _filled_before_read(body: tuple[ir.Stmt, ...], name: str) -> bool:
    """Whether every read of ``name`` in ``body`` reads elements an earlier unconditional write
    in ``body`` wrote."""
    writes: list[_Range] = []
    ok = True

    def visit(stmts: tuple[ir.Stmt, ...], loops: dict[str, ir.Loop], guarded: bool) -> None:
        nonlocal ok
        for s in stmts:
            if not ok:
                return
            if isinstance(s, ir.Loop):
                visit(s.body, {**loops, s.var: s}, guarded)
                continue
            if isinstance(s, (ir.If, ir.While)):
                for e in ((s.cond,)):
                    _check_reads(e, loops)
                inner = (s.then + s.orelse) if isinstance(s, ir.If) else s.body
                visit(inner, loops, True)
                continue
            for e in _read_exprs(s):
                _check_reads(e, loops)
            if isinstance(s, ir.Assign) and isinstance(s.target, Load) and s.target.array == name and not guarded:
                r = _range(s.target.index, loops)
                if r is not None:
                    writes.append(r)

    def _check_reads(e: object, loops: dict[str, ir.Loop]) -> None:
        nonlocal ok
        for n in ir.walk(e):
            if isinstance(n, Load) and n.array == name:
                r = _range(n.index, loops)
                if r is None or not any(_inside(r, w) for w in writes):
                    ok = False

    visit(body, {}, False)
    return ok and bool(writes)


def _read_exprs(s: ir.Stmt) -> list[object]:
    if isinstance(s, ir.Assign):
        return [s.value, *(s.target.index if isinstance(s.target, Load) else ())]
    if isinstance(s, (ir.ErrorCall, ir.HostCall)):
        return list(s.args)
    return [s]


def _range(index: tuple[Expr, ...], loops: dict[str, ir.Loop]) -> _Range | None:
    """The box of indices an access covers over the inner loops it is in (unit steps)."""
    lo: list[Expr] = []
    hi: list[Expr] = []
    for e in index:
        lin = linearize(simplify(e))
        if lin is None:
            return None
        terms, c = lin
        inner = [(a, k) for a, k in terms.items() if isinstance(a, Var) and a.name in loops]
        rest = {a: k for a, k in terms.items() if (a, k) not in inner}
        if any({v.name for v in ir.walk(a) if isinstance(v, Var)} & loops.keys() for a in rest):
            return None
        base: Expr = Const(c, DType.I32)
        for a, k in rest.items():
            base = add(base, simplify(BinOp("mul", Const(k, DType.I32), a, DType.I32)))
        if len(inner) > 1 or (inner and inner[0][1] != 1):
            return None
        if not inner:
            lo.append(simplify(base))
            hi.append(simplify(base))
            continue
        lp = loops[inner[0][0].name]  # type: ignore[union-attr]
        if lp.step != _ONE:
            return None
        lo.append(simplify(add(base, lp.start)))
        hi.append(simplify(add(base, sub(lp.stop, _ONE))))
    return _Range(tuple(lo), tuple(hi))


def _inside(r: _Range, w: _Range) -> bool:
    """``r``'s box inside ``w``'s, where the differences of the bounds are constants."""
    for rl, rh, wl, wh in zip(r.lo, r.hi, w.lo, w.hi, strict=True):
        d_lo, d_hi = simplify(sub(rl, wl)), simplify(sub(wh, rh))
        if not (isinstance(d_lo, Const) and isinstance(d_hi, Const) and d_lo.value >= 0 and d_hi.value >= 0):
            return False
    return True
