"""The first index of a maximum (or minimum), as BLAS's IDAMAX finds it, in two parallel
reductions.

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
arithmetic a compiler could contract differently in two kernels). The max reduction's
partials join the starting value with the IF's own test (``translate.condreduce``). A scan
inside a loop that is parallel with the scan whole (a first max per column) stays whole:
split, each thread would read its data twice (``translate.analysis``).
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


def split(loop: ir.Loop, scan: ArgScan, temps: tuple[str, str]) -> list[ir.Stmt]:
    """``loop`` (a constant, nonzero step) as the two loops of the module's docstring;
    ``temps``: free names for M and K. The caller classifies the two loops."""
    assert isinstance(loop.step, Const) and loop.step.value != 0
    m = Var(temps[0], scan.best.dtype)
    itype = index_type(loop)
    k = Var(temps[1], itype)
    first = "min" if loop.step.value > 0 else "max"
    start = Const(BIG if first == "min" else -BIG, itype)
    scan_loop = replace(loop, body=(ir.Assign(m, Call("max" if scan.better == "gt" else "min", (m, scan.value),
                                                      m.dtype)),))
    find_loop = replace(loop, body=(ir.If(BinOp("eq", scan.value, m, DType.BOOL),
                                          (ir.Assign(k, Call(first, (k, Var(loop.var, itype)), itype)),)),))
    found: ir.Expr = ir.substitute(scan.index, {loop.var: k})  # type: ignore[assignment]
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
