"""The first index of a maximum (or minimum), as BLAS's IDAMAX finds it, as one parallel
reduction of a (value, iteration) pair, proved by splitting it into two parallel reductions.

A loop whose body is only ::

    IF (E .GT. BEST) THEN        ! or BEST .LT. E; .LT. for a minimum
       BEST = E
       AT = I(i)                 ! in either order
    END IF

leaves in ``BEST`` the largest ``E`` if it exceeds the starting ``BEST`` (a NaN ``E`` never
does; a NaN starting value stays), and in ``AT`` the index expression at the first
iteration where ``E`` took that value. The same, written as two loops the analysis proves
parallel::

    M = BEST
    loop: M = MAX(M, E)                      ! a max reduction
    IF (M .GT. BEST) THEN                    ! false when nothing exceeded BEST, or BEST is NaN
       K = HUGE
       loop: IF (E .EQ. M) K = MIN(K, i)     ! the first iteration reaching M: a min reduction
       IF (K .NE. HUGE) THEN
          AT = I(K)
          BEST = M
       END IF
    END IF

(MAX for a loop counting down, whose first iteration is its largest.) The second loop
finds the maximum again by comparing ``E`` with ``M`` exactly, so ``E`` must evaluate
the same in both: only loads, negation, ABS and conversions are allowed in it (no
arithmetic a compiler could contract differently in two kernels). A scan inside a loop
that is parallel with the scan whole (a first max per column) stays whole: each thread then
scans its column in order (``translate.analysis``).

Both loops parallel prove the scan a reduction of the pair (M, K), which the targets run in
one pass over the data (:func:`fused`)::

    M = BEST
    K = HUGE
    loop (a maxloc reduction of M with K; T private):
       T = E
       IF (T .GT. M .OR. (T .EQ. M .AND. i .LT. K)) THEN
          M = T
          K = i
       END IF
    IF (M .GT. BEST) THEN
       IF (K .NE. HUGE) THEN
          AT = I(K)
          BEST = M
       END IF
    END IF

(``i .GT. K`` for a loop counting down, whose first iteration is its largest.) Two threads'
pairs join the same way, to the larger M and between equal M to the first K, so no thread
needs to visit its iterations in order. A thread starts from M = -inf, so a NaN ``E`` never
enters a pair and every K a pair holds is an iteration where ``E`` equals its M. Read in
order, as one thread, the fused loop ends where the scan ends: an ``E`` equal to M with an
earlier ``i`` only occurs while K is still HUGE, when M is the start, which the IF after
the loop then leaves alone.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from translate import ir
from translate.ir import BinOp, Call, Const, DType, Var
from translate.irquery import scalar_reads

BIG = 2**31 - 1  # the min reduction's start: no iteration index reaches it
_BETTER = {"gt": ("gt", "lt"), "lt": ("lt", "gt")}  # op -> (E op BEST, BEST op' E)


@dataclass(frozen=True)
class ArgScan:
    best: Var
    at: Var
    value: ir.Expr
    index: ir.Expr
    better: str  # "gt": first maximum, "lt": first minimum


def _exact(e: ir.Expr) -> bool:
    """Whether ``e`` evaluates bit for bit the same wherever it is compiled."""
    if isinstance(e, (Var, Const)):
        return True
    if isinstance(e, ir.Load):
        return all(not n.dtype.is_float for n in e.index)  # subscripts are integers
    if isinstance(e, ir.UnOp) and e.op == "neg":
        return _exact(e.operand)
    if isinstance(e, Call) and e.fn == "abs":
        return _exact(e.args[0])
    if isinstance(e, ir.Cast):
        return _exact(e.expr)
    return False


def arg_scan(loop: ir.Loop) -> ArgScan | None:
    """The first-max/min scan ``loop`` is, if it is one (see the module's docstring)."""
    if len(loop.body) != 1 or not isinstance(loop.body[0], ir.If):
        return None
    s = loop.body[0]
    if s.orelse or len(s.then) != 2 or not isinstance(s.cond, BinOp):
        return None
    a, b = s.then
    if not (isinstance(a, ir.Assign) and isinstance(b, ir.Assign) and isinstance(a.target, Var)
            and isinstance(b.target, Var) and a.target.name != b.target.name):
        return None
    for best, at in ((a, b), (b, a)):
        value = best.value
        for better, (fwd, rev) in _BETTER.items():
            c = s.cond
            if not ((c.op == fwd and c.lhs == value and c.rhs == best.target)
                    or (c.op == rev and c.lhs == best.target and c.rhs == value)):
                continue
            taken = {best.target.name, at.target.name}
            if scalar_reads(value) & taken or scalar_reads(at.value) & taken or not _exact(value):
                return None
            if value.dtype != best.target.dtype or not (value.dtype.is_float or value.dtype.is_int):
                return None
            return ArgScan(best.target, at.target, value, at.value, better)
    return None


def index_type(loop: ir.Loop) -> DType:
    """The integer type of ``loop``'s variable."""
    return loop.start.dtype if loop.start.dtype.is_int else DType.I32


def _pieces(loop: ir.Loop, scan: ArgScan, temps: tuple[str, str]) -> tuple[Var, Var, str, Const, ir.Expr]:
    """M, K, which K is first among equals ("min" or "max"), K's start (HUGE or -HUGE) and
    the scan's index expression at iteration K."""
    assert isinstance(loop.step, Const) and loop.step.value != 0
    itype = index_type(loop)
    k = Var(temps[1], itype)
    first = "min" if loop.step.value > 0 else "max"
    found: ir.Expr = ir.substitute(scan.index, {loop.var: k})  # type: ignore[assignment]
    return Var(temps[0], scan.best.dtype), k, first, Const(BIG if first == "min" else -BIG, itype), found


def split(loop: ir.Loop, scan: ArgScan, temps: tuple[str, str]) -> list[ir.Stmt]:
    """``loop`` (a constant, nonzero step) as the two loops of the module's docstring;
    ``temps``: free names for M and K. The caller classifies the two loops."""
    m, k, first, start, found = _pieces(loop, scan, temps)
    itype = k.dtype
    scan_loop = replace(loop, body=(ir.Assign(m, Call("max" if scan.better == "gt" else "min", (m, scan.value),
                                                      m.dtype)),))
    find_loop = replace(loop, body=(ir.If(BinOp("eq", scan.value, m, DType.BOOL),
                                          (ir.Assign(k, Call(first, (k, Var(loop.var, itype)), itype)),)),))
    return [
        ir.Assign(m, scan.best),
        scan_loop,
        ir.If(BinOp(scan.better, m, scan.best, DType.BOOL), (
            ir.Assign(k, start),
            find_loop,
            # never false where both loops see the same values; it keeps a reduction whose
            # identity is not +-inf (Kokkos 3.4: -DBL_MAX) from storing the index of nothing
            ir.If(BinOp("ne", k, start, DType.BOOL), (ir.Assign(scan.at, found), ir.Assign(scan.best, m))),
        )),
    ]


def fused(loop: ir.Loop, scan: ArgScan, temps: tuple[str, str, str], private: tuple[str, ...],
          reason: str) -> list[ir.Stmt]:
    """``loop`` as the one-pass pair reduction of the module's docstring, parallel: the caller
    has proved the two loops of :func:`split` parallel with the same first two ``temps``; the
    third names a private temporary holding ``E``, read once per iteration."""
    m, k, first, start, found = _pieces(loop, scan, temps[:2])
    pair = ir.Reduction(m.name, "maxloc" if scan.better == "gt" else "minloc", m.dtype, loc=k.name,
                        loc_dtype=k.dtype, loc_first=first)
    i, e = Var(loop.var, k.dtype), Var(temps[2], m.dtype)
    body = (ir.Assign(e, scan.value), _update(e, m, i, k, scan.better, first))
    return [
        ir.Assign(m, scan.best),
        ir.Assign(k, start),
        replace(loop, body=body, kind=ir.LoopKind.PARALLEL, reductions=(pair,),
                private=tuple(sorted({*private, e.name})), reason=reason),
        ir.If(BinOp(scan.better, m, scan.best, DType.BOOL), (
            # K is never HUGE here where the targets start a pair from -inf; kept for a target whose
            # reduction identity is not +-inf (Kokkos 3.4's built-in max: -DBL_MAX)
            ir.If(BinOp("ne", k, start, DType.BOOL), (ir.Assign(scan.at, found), ir.Assign(scan.best, m))),
        )),
    ]


def in_order(body: tuple[ir.Stmt, ...], pairs: list[ir.Reduction]) -> tuple[ir.Stmt, ...]:
    """:func:`fused`'s loop body for a visitor that sees its iterations in the loop's order (a
    Triton lane over its tiles): the update tests only ``T .GT. M`` (``.LT.``). Within one such
    visitor an ``E`` equal to M with an earlier ``i`` only occurs while K is still HUGE and M the
    pair's start, -inf (+inf): a pair the IF after the loop, which asks for M better than the
    scan's start, never uses. Other statements are returned as they are."""
    def plain(s: ir.Stmt) -> ir.Stmt:
        c = s.cond if isinstance(s, ir.If) else None
        if not (isinstance(c, BinOp) and isinstance(c.lhs, BinOp) and isinstance(c.rhs, BinOp)
                and isinstance(c.rhs.rhs, BinOp)):
            return s
        e, i = c.lhs.lhs, c.rhs.rhs.lhs
        for r in pairs:
            m, k = Var(r.var, r.dtype), Var(r.loc, r.loc_dtype)
            update = _update(e, m, i, k, "gt" if r.op == "maxloc" else "lt", r.loc_first)
            if c == update.cond and s.then == update.then and not s.orelse:
                return replace(s, cond=c.lhs)
        return s

    return tuple(plain(s) for s in body)


def _update(e: ir.Expr, m: Var, i: ir.Expr, k: Var, better: str, first: str) -> ir.If:
    """The pair update of :func:`fused`: ``IF (E better M .OR. (E .EQ. M .AND. i before K)) M = E; K = i``."""
    earlier = BinOp("and", BinOp("eq", e, m, DType.BOOL), BinOp("lt" if first == "min" else "gt", i, k, DType.BOOL),
                    DType.BOOL)
    return ir.If(BinOp("or", BinOp(better, e, m, DType.BOOL), earlier, DType.BOOL), (ir.Assign(m, e), ir.Assign(k, i)))
