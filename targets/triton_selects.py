"""Host IFs and assignments on results that are still on the device, rendered as device operations.

``IF (DMAX_BEST .GT. DMAX) THEN; IVAMAX = I_FIRST + 1; DMAX = DMAX_BEST; END IF`` after a reduction
would bring DMAX_BEST and DMAX back to the host (a wait for the GPU) only to decide two
assignments. When an IF's condition reads a pending scalar and its branches only assign scalars
(nested IFs included) from arithmetic, comparisons and logic, each assignment becomes
``X_out = torch.where(mask, value, X_out)`` over 0-d tensors, the mask being the conditions on the
path to it, and the assigned scalars become pending. Each assignment under a mask sees the values
the branch gave the scalars before it: where the mask holds they are the branch's, and elsewhere
the select keeps the old value."""

from __future__ import annotations

from collections.abc import Iterator

from targets.triton_expr import ARITH, CMP, literal, py_name
from targets.triton_pending import PendingScalars
from targets.triton_results import pushed
from translate import ir
from translate.irquery import scalar_reads

_CALLS = ("sqrt", "abs", "exp", "log")  # intrinsics of one tensor argument: torch.NAME


class _NotSelectable(Exception):
    """The IF holds something a select cannot express."""


class _Selects:
    def __init__(self, pending: PendingScalars) -> None:
        self.pending = pending
        self.lines: list[str] = []
        self.masks = 0

    def expr(self, e: ir.Expr) -> tuple[str, bool]:
        """``e`` over host numbers and pending tensors: its text and whether it is a tensor."""
        if isinstance(e, ir.Var):
            if e.name in self.pending.dtypes:
                return f"{py_name(e.name)}_out", True
            return py_name(e.name), False
        if isinstance(e, ir.Const) and e.dtype is not ir.DType.CHAR and not isinstance(e.value, str):
            return literal(e.value, e.dtype, False), False
        if isinstance(e, ir.BinOp):
            (a, ta), (b, tb) = self.expr(e.lhs), self.expr(e.rhs)
            op = ARITH.get(e.op) or CMP.get(e.op) or ("/" if e.op == "div" and e.dtype.is_float else None)
            if op is not None:
                return f"({a} {op} {b})", ta or tb
            if e.op in ("and", "or"):
                if ta or tb:
                    return f"({a} {'&' if e.op == 'and' else '|'} {b})", True
                return f"({a} {e.op} {b})", False
        if isinstance(e, ir.Call) and e.fn in _CALLS and len(e.args) == 1:
            a, ta = self.expr(e.args[0])
            if ta:
                return f"torch.{e.fn}({a})", True
        if isinstance(e, ir.UnOp) and e.op in ("neg", "not"):
            a, ta = self.expr(e.operand)
            if e.op == "neg":
                return f"(-{a})", ta
            return (f"(~{a})", True) if ta else (f"(not {a})", False)
        raise _NotSelectable

    def mask(self, text: str) -> str:
        self.masks += 1
        name = f"kt_mask{self.masks}"
        self.lines.append(f"{name} = {text}")
        return name

    def stmts(self, stmts: tuple[ir.Stmt, ...], mask: str) -> None:
        for s in stmts:
            if isinstance(s, ir.Assign) and isinstance(s.target, ir.Var):
                value, _ = self.expr(s.value)
                name = py_name(s.target.name)
                self.lines.append(f"{name}_out = torch.where({mask}, {value}, {name}_out)")
            elif isinstance(s, ir.If):
                cond, tensor = self.expr(s.cond)
                c = self.mask(cond)  # decided before either branch assigns anything
                self.stmts(s.then, self.mask(f"{mask} & {c}"))
                if s.orelse:
                    self.stmts(s.orelse, self.mask(f"{mask} & ~{c}" if tensor else f"{mask} & (not {c})"))
            else:
                raise _NotSelectable


def assigned(stmts: tuple[ir.Stmt, ...]) -> Iterator[ir.Var]:
    for s in stmts:
        if isinstance(s, ir.Assign) and isinstance(s.target, ir.Var):
            yield s.target
        elif isinstance(s, ir.If):
            yield from assigned(s.then)
            yield from assigned(s.orelse)


def select_lines(s: ir.If, pending: PendingScalars) -> list[str] | None:
    """``s`` as selects on the device (module docstring), the scalars it assigns then pending; None
    (nothing changed) when its condition reads no pending scalar or it holds anything else."""
    if not scalar_reads(s.cond) & set(pending.dtypes):
        return None
    state = pending.snapshot()
    sel = _Selects(pending)
    try:
        cond, tensor = sel.expr(s.cond)
        if not tensor:
            return None
        targets = {t.name: t.dtype for t in assigned(s.then + s.orelse)}
        for name, dtype in targets.items():  # every assigned scalar in its tensor: the selects keep its old value
            if name not in pending.dtypes:
                if dtype is ir.DType.CHAR:
                    raise _NotSelectable
                sel.lines.append(pushed(name, dtype))
                pending.add(name, dtype)
        c = sel.mask(cond)
        sel.stmts(s.then, c)
        if s.orelse:
            sel.stmts(s.orelse, sel.mask(f"~{c}"))
    except _NotSelectable:
        pending.restore(state)
        return None
    return [f"# IF at the device's results: selects on the device ({len(targets)} scalars)", *sel.lines]


def device_assign(s: ir.Assign, pending: PendingScalars) -> list[str] | None:
    """A host assignment of a scalar computed from pending scalars (``VNRM2 = SQRT(SSQ)``) as a device
    operation whose result is pending; None where its value reads none or holds what a tensor
    expression cannot (the host then fetches what it reads)."""
    if not isinstance(s.target, ir.Var) or s.target.dtype is ir.DType.CHAR:
        return None
    if not scalar_reads(s.value) & set(pending.dtypes):
        return None
    try:
        value, tensor = _Selects(pending).expr(s.value)
    except _NotSelectable:
        return None
    if not tensor:
        return None
    pending.add(s.target.name, s.target.dtype)
    return [f"{py_name(s.target.name)}_out = {value}"]
