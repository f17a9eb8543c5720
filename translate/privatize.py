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
from translate.irquery import fresh_name, scalar_reads
from translate.loopfacts import assigned_names
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
               read_after: set[str], trusted: set[str] | frozenset[str] = frozenset()) -> tuple[list[str], set[str]]:
    """The local arrays ``loop`` may give one copy per iteration (module docstring), and those of
    them taken on the source's word: of ``trusted`` (the source's directive keeps them per
    thread), where the proof that every read is covered fails but each iteration writes them
    before it reads them at all."""
    bound_names = {v.name for e in (loop.start, loop.stop, loop.step) for v in ir.walk(e) if isinstance(v, Var)}
    if bound_names & outer_vars or trip_count(loop) is None:
        return [], set()
    written = {n.target.array for s in loop.body for n in ir.walk(s)
               if isinstance(n, ir.Assign) and isinstance(n.target, Load)}
    out: list[str] = []
    unproven: set[str] = set()
    for name in sorted(written & locals_.keys()):
        if name in read_after:
            continue
        if _moves_with(loop, name):
            continue  # already a different element per iteration: nothing to copy
        if filled_before_read(loop.body, name):
            out.append(name)
        elif name in trusted and written_first(loop.body, name):
            out.append(name)
            unproven.add(name)
    return out, unproven


def written_first(body: tuple[ir.Stmt, ...], name: str) -> bool:
    """Whether the first statement of ``body`` (in order, into loops) that touches ``name``
    writes it, unconditionally, reading nothing of it (``rms(m) = rms(m) + x`` does not)."""
    for s in body:
        if isinstance(s, ir.Loop):
            if any(isinstance(n, Load) and n.array == name for e in (s.start, s.stop, s.step) for n in ir.walk(e)):
                return False
            inner = written_first(s.body, name)
            if inner or _touches(s.body, name):
                return inner
        elif _touches((s,), name):
            return (isinstance(s, ir.Assign) and isinstance(s.target, Load) and s.target.array == name
                    and not any(isinstance(n, Load) and n.array == name
                                for e in (s.value, *s.target.index) for n in ir.walk(e)))
    return False


def _touches(body: tuple[ir.Stmt, ...], name: str) -> bool:
    return any(isinstance(n, Load) and n.array == name for s in body for n in ir.walk(s))


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
    """The indices an access covers: per dimension ``lo, lo + stride, ..., hi`` (stride 0: the
    one index ``lo``)."""

    lo: tuple[Expr, ...]
    hi: tuple[Expr, ...]
    stride: tuple[int, ...]


def filled_before_read(body: tuple[ir.Stmt, ...], name: str) -> bool:
    """Whether every read of ``name`` in ``body`` reads elements an earlier unconditional write
    in ``body`` wrote. A scalar the body assigns (``i1 = 2*j1 - d1``) stands in an index for the
    value it was last given unconditionally in the same iteration; one with no such value makes
    the access unknown."""
    writes: list[_Range] = []
    assigned = assigned_names(body)
    ok = True

    def visit(stmts: tuple[ir.Stmt, ...], loops: dict[str, ir.Loop], guarded: bool, defs: dict[str, Expr]) -> None:
        nonlocal ok
        for s in stmts:
            if not ok:
                return
            if isinstance(s, ir.Loop):
                visit(s.body, {**loops, s.var: s}, guarded, {k: v for k, v in defs.items()
                                                            if s.var not in scalar_reads(v)})
                for v in assigned_names(s.body):  # after the loop: their last value is not known here
                    defs.pop(v, None)
                continue
            if isinstance(s, (ir.If, ir.While)):
                for e in ((s.cond,)):
                    _check_reads(e, loops, defs)
                inner = (s.then + s.orelse) if isinstance(s, ir.If) else s.body
                visit(inner, loops, True, dict(defs))
                for v in assigned_names(inner):
                    defs.pop(v, None)
                continue
            for e in _read_exprs(s):
                _check_reads(e, loops, defs)
            if isinstance(s, ir.Assign) and isinstance(s.target, Var):
                value = _substituted(s.value, defs)
                defs.pop(s.target.name, None)
                if value is not None and not guarded and s.target.name not in scalar_reads(value):
                    defs[s.target.name] = value
            if isinstance(s, ir.Assign) and isinstance(s.target, Load) and s.target.array == name and not guarded:
                r = _range(s.target.index, loops, defs, assigned)
                if r is not None and r not in writes:
                    writes.append(r)

    def _check_reads(e: object, loops: dict[str, ir.Loop], defs: dict[str, Expr]) -> None:
        nonlocal ok
        for n in ir.walk(e):
            if isinstance(n, Load) and n.array == name:
                r = _range(n.index, loops, defs, assigned)
                if r is None or not _covered(r, writes):
                    ok = False

    visit(body, {}, False, {})
    return ok and bool(writes)


def _substituted(e: Expr, defs: dict[str, Expr]) -> Expr | None:
    """``e`` with the scalars of ``defs`` replaced by their values (None: ``e`` reads an array)."""
    if any(isinstance(n, Load) for n in ir.walk(e)):
        return None
    return simplify(ir.substitute(e, defs))  # type: ignore[arg-type]


def _read_exprs(s: ir.Stmt) -> list[object]:
    if isinstance(s, ir.Assign):
        return [s.value, *(s.target.index if isinstance(s.target, Load) else ())]
    if isinstance(s, (ir.ErrorCall, ir.HostCall)):
        return list(s.args)
    return [s]


def _range(index: tuple[Expr, ...], loops: dict[str, ir.Loop], defs: dict[str, Expr] | None = None,
           assigned: set[str] | frozenset[str] = frozenset()) -> _Range | None:
    """The indices an access covers over the inner loops it is in (loop steps of 1 or -1; a loop
    variable times a positive constant per dimension, each loop in one dimension at most)."""
    defs = defs or {}
    lo: list[Expr] = []
    hi: list[Expr] = []
    stride: list[int] = []
    used: set[str] = set()
    for e in index:
        e = _substituted(e, defs)
        if e is None or scalar_reads(e) & (assigned - loops.keys()):
            return None  # an index read from an array, or from a scalar of unknown value here
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
        if len(inner) > 1 or (inner and (not isinstance(inner[0][1], int) or inner[0][1] <= 0)):
            return None
        if not inner:
            lo.append(simplify(base))
            hi.append(simplify(base))
            stride.append(0)
            continue
        var, k = inner[0]
        lp = loops[var.name]  # type: ignore[union-attr]
        if lp.step not in (_ONE, Const(-1, DType.I32)) or var.name in used:  # type: ignore[union-attr]
            return None
        used.add(var.name)  # type: ignore[union-attr]
        first, last = (lp.start, sub(lp.stop, _ONE)) if lp.step == _ONE else (add(lp.stop, _ONE), lp.start)
        lo.append(simplify(add(base, simplify(BinOp("mul", Const(k, DType.I32), first, DType.I32)))))
        hi.append(simplify(add(base, simplify(BinOp("mul", Const(k, DType.I32), last, DType.I32)))))
        stride.append(k)
    return _Range(tuple(lo), tuple(hi), tuple(stride))


def _inside(r: _Range, w: _Range) -> bool:
    """Every index of ``r`` an index of ``w``, where the differences of the bounds are constants:
    per dimension inside ``w``'s bounds, on ``w``'s stride."""
    for rl, rh, wl, wh in zip(r.lo, r.hi, w.lo, w.hi, strict=True):  # constant bounds first: cheap
        if isinstance(rl, Const) and isinstance(wl, Const) and rl.value < wl.value:
            return False
        if isinstance(rh, Const) and isinstance(wh, Const) and rh.value > wh.value:
            return False
    for rl, rh, rs, wl, wh, ws in zip(r.lo, r.hi, r.stride, w.lo, w.hi, w.stride, strict=True):
        d_lo, d_hi = simplify(sub(rl, wl)), simplify(sub(wh, rh))
        if not (isinstance(d_lo, Const) and isinstance(d_hi, Const) and d_lo.value >= 0 and d_hi.value >= 0):
            return False
        if ws == 0:
            if d_lo.value != 0 or d_hi.value != 0:
                return False
        elif ws > 1 and (d_lo.value % ws or rs % ws):
            return False
    return True


def _covered(r: _Range, writes: list[_Range]) -> bool:
    """Every index of ``r`` written by one of ``writes``: inside one of them, or along one
    dimension (the one ``r`` moves along at unit stride, or any where it is one index) inside the
    union of those that hold its other indices: ``lhs(.., 0)`` set before a loop writes
    ``lhs(.., 1 : n - 1)``, read over ``0 : n - 2`` or at ``n - 1``. The union may be taken from
    index 0: an index below the array's first (0 in the IR) is not a valid read."""
    if any(_inside(r, w) for w in writes):
        return True
    moving = [d for d, s in enumerate(r.stride) if s]
    small = [d for d in moving if isinstance(r.lo[d], Const) and isinstance(r.hi[d], Const)
             and 0 <= r.hi[d].value - r.lo[d].value < 64]
    if len(moving) > 1 and small:  # a block's rows (lhs(m, n, ...), m and n 1..5): each row alone
        d = small[0]
        return all(_covered(_with_point(r, d, Const(v, DType.I32)), writes)
                   for v in range(r.lo[d].value, r.hi[d].value + 1, r.stride[d]))  # type: ignore[union-attr]
    for d in moving:
        # a dimension the read sweeps as some writes do (the same loop's copies, lhs(.., i, j) over
        # j): each index of it on its own, in the writes that sweep it alike
        alike = [w for w in writes if (w.lo[d], w.hi[d], w.stride[d]) == (r.lo[d], r.hi[d], r.stride[d])]
        at = Var(f"kt_at{d}", DType.I32)
        if alike and _covered(_with_point(r, d, at), [_with_point(w, d, at) for w in alike]):
            return True
    if len(moving) > 1 or (moving and r.stride[moving[0]] != 1):
        return False
    dims = moving or list(range(len(r.lo)))
    return any(_swept(r, writes, d, start) for d in dims for start in (r.lo[d], Const(0, DType.I32)))


def _with_point(r: _Range, d: int, at: Expr) -> _Range:
    """``r`` with dimension ``d`` fixed at one index."""
    return _Range(r.lo[:d] + (at,) + r.lo[d + 1:], r.hi[:d] + (at,) + r.hi[d + 1:],
                  r.stride[:d] + (0,) + r.stride[d + 1:])


def _swept(r: _Range, writes: list[_Range], d: int, start: Expr) -> bool:
    """Whether the writes that hold ``r``'s indices in the other dimensions cover ``start`` to
    ``r.hi[d]`` along ``d``. [start, cur - 1] is covered; a span starting at or before cur extends
    that to its end (an empty span, or one ending before cur, only claims what was covered)."""
    keep = [k for k in range(len(r.lo)) if k != d]

    def pick(x: tuple) -> tuple:  # type: ignore[type-arg]
        return tuple(x[k] for k in keep)

    rest = _Range(pick(r.lo), pick(r.hi), pick(r.stride))
    spans = [(w.lo[d], w.hi[d]) for w in writes
             if w.stride[d] in (0, 1) and _inside(rest, _Range(pick(w.lo), pick(w.hi), pick(w.stride)))]
    cur = start
    for _ in range(len(spans)):
        if _beyond(cur, r.hi[d]):
            return True
        reach = [hi for lo, hi in spans if _at_most(lo, cur) and not _at_most(hi, simplify(sub(cur, _ONE)))]
        if not reach:
            return False
        best = next((hi for hi in reach if _beyond(simplify(add(hi, _ONE)), r.hi[d])), reach[-1])
        for hi in reach:
            if _at_most(best, hi):
                best = hi
        spans = [(lo, hi) for lo, hi in spans if hi is not best]
        cur = simplify(add(best, _ONE))
    return _beyond(cur, r.hi[d])


def _beyond(a: Expr, b: Expr) -> bool:
    """``a > b`` where their difference is a constant."""
    diff = simplify(sub(a, b))
    return isinstance(diff, Const) and diff.value > 0


def _at_most(a: Expr, b: Expr) -> bool:
    """``a <= b`` where their difference is a constant."""
    diff = simplify(sub(b, a))
    return isinstance(diff, Const) and diff.value >= 0



# ------------------------------------------------------------ arrays of the program kept per thread


def same_writes(loop: ir.Loop, name: str) -> bool:
    """Whether every iteration of ``loop`` writes the same elements of ``name``: every write
    unconditional, in inner loops whose bounds use neither ``loop``'s variable nor a scalar
    the body assigns (so the last iteration writes all of them)."""
    assigned = assigned_names(loop.body) | {loop.var}

    def visit(stmts: tuple[ir.Stmt, ...], guarded: bool) -> bool:
        for s in stmts:
            if isinstance(s, ir.Loop):
                bounds = scalar_reads(s.start) | scalar_reads(s.stop) | scalar_reads(s.step)
                writes = any(isinstance(n, ir.Assign) and isinstance(n.target, Load) and n.target.array == name
                             for n in ir.walk(s))
                if writes and bounds & assigned:
                    return False
                if not visit(s.body, guarded):
                    return False
            elif isinstance(s, (ir.If, ir.While)):
                inner = (s.then + s.orelse) if isinstance(s, ir.If) else s.body
                if not visit(inner, True):
                    return False
            elif isinstance(s, ir.Assign) and isinstance(s.target, Load) and s.target.array == name and guarded:
                return False
        return True

    return visit(loop.body, False)


def copy_nest(dst: str, dst_tail: tuple[Expr, ...], src: str, src_tail: tuple[Expr, ...], array: ir.Array,
              taken: set[str], why: str, line: int, src_rank: int | None = None) -> ir.Stmt:
    """A parallel nest ``dst(i1, ..., in, *dst_tail) = src(i1, ..., in, *src_tail)`` over
    ``array``'s shape (the first index fastest); ``src_rank``: ``src`` takes the first that many
    of ``i1, ..., in`` only (one array copied into every copy of it)."""
    names = [fresh_name(f"{array.name}_c{d + 1}", taken) for d in range(len(array.shape))]
    taken.update(names)
    idx = tuple(Var(n, DType.I32) for n in names)
    body: ir.Stmt = ir.Assign(Load(dst, idx + dst_tail, array.dtype),
                              Load(src, idx[:src_rank] + src_tail, array.dtype))
    for d in range(len(array.shape)):  # innermost (first index) built first
        body = ir.Loop(names[d], Const(0, DType.I32), array.shape[d], _ONE, (body,), kind=ir.LoopKind.PARALLEL,
                       reason=f"loop {names[d]} is parallel: {why}", line=line)
    return body

