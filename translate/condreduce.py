"""Max and min reductions written as a conditional update.

``IF (E .GT. V) V = E`` (and ``.GE.``; ``.LT.``/``.LE.`` for a minimum, either side of the
comparison) updates ``V`` to ``MAX(V, E)``, the form the loop analysis and every target
know as a reduction. Rewritten only in a loop that then runs as a parallel reduction
(``translate.analysis``), where the result is the source's for every input, NaNs included:
each thread's partial starts at the identity and skips a NaN element as the IF does (a
comparison with NaN is false), and the partial joins the starting value with the IF's own
test (``kt_max``, the Kokkos join, Python's ``max``), so a NaN starting value stays.
"""

from __future__ import annotations

from dataclasses import replace

from translate import ir
from translate.ir import BinOp, Call, Var
from translate.irquery import scalar_reads

# comparison op -> (reduction when the candidate is on the left, when it is on the right)
_SIDES = {"gt": ("max", "min"), "ge": ("max", "min"), "lt": ("min", "max"), "le": ("min", "max")}


def conditional_update(s: ir.Stmt) -> tuple[str, str, ir.Expr] | None:
    """(variable, "max" | "min", candidate) when ``s`` is ``IF (E cmp V) V = E`` with ``E``
    free of ``V``."""
    if not (isinstance(s, ir.If) and not s.orelse and len(s.then) == 1):
        return None
    (a,) = s.then
    if not (isinstance(a, ir.Assign) and isinstance(a.target, Var)) or not isinstance(s.cond, BinOp):
        return None
    sides = _SIDES.get(s.cond.op)
    if sides is None:
        return None
    v, e = a.target, a.value
    if e.dtype != v.dtype or v.name in scalar_reads(e):
        return None
    if s.cond.lhs == e and s.cond.rhs == v:
        return v.name, sides[0], e
    if s.cond.rhs == e and s.cond.lhs == v:
        return v.name, sides[1], e
    return None


def rewrite(stmts: tuple[ir.Stmt, ...]) -> tuple[tuple[ir.Stmt, ...], dict[str, str]]:
    """``stmts`` with every conditional update (in the statements and the IFs among them,
    not inside inner loops) written as ``V = max(V, E)`` / ``V = min(V, E)``, and the
    variables so updated with their op."""
    out: list[ir.Stmt] = []
    names: dict[str, str] = {}
    for s in stmts:
        found = conditional_update(s)
        if found is not None:
            name, op, e = found
            v = s.then[0].target  # type: ignore[attr-defined]
            out.append(ir.Assign(v, Call(op, (v, e), v.dtype)))
            names[name] = op
        elif isinstance(s, ir.If):
            then, a = rewrite(s.then)
            orelse, b = rewrite(s.orelse)
            out.append(replace(s, then=then, orelse=orelse))
            names |= a | b
        else:
            out.append(s)
    return tuple(out), names
