"""Facts about statements and loops that the loop analysis reads: the names an expression
reads, the reads a block exposes before writing, the first access of a name along a block,
affine forms, trip counts, reduction operators, scratch arrays, what varies with a loop and
the clauses of a loop directive.
"""

from __future__ import annotations

import re

from translate import ir
from translate.ir import BinOp, Call, Const, DType, Expr, Load, Var
from translate.simplify import add, linearize, mul, simplify, sub

# a reduction clause's operator -> the analysis' name for it
RED_OPS = {"+": "add", "*": "mul", "max": "max", "min": "min", "-": "add"}


def names_read(e: object) -> set[str]:
    out: set[str] = set()
    for n in ir.walk(e):
        if isinstance(n, Var):
            out.add(n.name)
        elif isinstance(n, Load):
            out.add(n.array)
    return out


def exposed_reads(stmts: tuple[ir.Stmt, ...], defined: set[str],
                  arrays: set[str] | frozenset[str] = frozenset()) -> tuple[set[str], set[str]]:
    """(names possibly read before being definitely assigned, names written) for a
    statement sequence entered with ``defined`` assigned. Arrays always count as read
    when read."""
    rbw: set[str] = set()
    written: set[str] = set()
    flow_reads(stmts, set(defined), rbw, written, set(arrays))
    return rbw, written


def flow_reads(stmts: tuple[ir.Stmt, ...], defined: set[str] | None, rbw: set[str], written: set[str],
          arrays: set[str]) -> set[str] | None:
    def use(e: object, d: set[str]) -> None:
        rbw.update(r for r in names_read(e) if r in arrays or r not in d)

    for s in stmts:
        if defined is None:
            return None
        if isinstance(s, ir.Assign):
            use(s.value, defined)
            if isinstance(s.target, Load):
                for i in s.target.index:
                    use(i, defined)
                written.add(s.target.array)
            else:
                defined = defined | {s.target.name}
                written.add(s.target.name)
        elif isinstance(s, ir.If):
            use(s.cond, defined)
            d1 = flow_reads(s.then, set(defined), rbw, written, arrays)
            d2 = flow_reads(s.orelse, set(defined), rbw, written, arrays)
            defined = d2 if d1 is None else d1 if d2 is None else d1 & d2
        elif isinstance(s, ir.Loop):
            for e in (s.start, s.stop, s.step):
                use(e, defined)
            flow_reads(s.body, defined | {s.var}, rbw, written, arrays)
        elif isinstance(s, ir.While):  # may not run: what it assigns is not definitely assigned
            use(s.cond, defined)
            flow_reads(s.body, set(defined), rbw, written, arrays)
        elif isinstance(s, ir.ErrorCall):
            for a in s.args:
                use(a, defined)
            return None
        elif isinstance(s, ir.HostCall):
            for a in s.args:
                use(a, defined)
            written.update(s.writes)
            if s.kind == "stop":
                return None
        elif isinstance(s, ir.Return):
            return None
    return defined


def access_text(arr: str, idx: tuple[Expr, ...]) -> str:
    parts = [ir.expr_str(i) for i in idx]
    return f"{arr}[{', '.join(p[1:-1] if p.startswith('(') and p.endswith(')') else p for p in parts)}]"


def first_access(name: str, seq: tuple[ir.Stmt, ...]) -> str | None:
    """"read", "write" (definitely reassigned first), "end" (the routine returns
    first) or None (neither) along ``seq``."""
    for s in seq:
        if isinstance(s, ir.Assign):
            if name in names_read(s.value) or (isinstance(s.target, Load) and name in names_read(s.target)):
                return "read"
            if isinstance(s.target, Var) and s.target.name == name:
                return "write"
        elif isinstance(s, ir.If):
            if name in names_read(s.cond):
                return "read"
            t, e = first_access(name, s.then), first_access(name, s.orelse)
            if "read" in (t, e):
                return "read"
            if t in ("write", "end") and e in ("write", "end"):
                return "write" if "write" in (t, e) else "end"
        elif isinstance(s, ir.Loop):
            if any(name in names_read(x) for x in (s.start, s.stop, s.step)) or \
                    first_access(name, s.body) == "read":
                return "read"
        elif isinstance(s, ir.While):
            if name in names_read(s.cond) or first_access(name, s.body) == "read":
                return "read"
        elif isinstance(s, ir.ErrorCall):
            return "read" if any(name in names_read(a) for a in s.args) else "end"
        elif isinstance(s, ir.HostCall):
            if any(name in names_read(a) for a in s.args) or name in s.writes:
                return "read"
            if s.kind == "stop":
                return "end"
        elif isinstance(s, ir.Return):
            return "end"
    return None


def constant_of(e: Expr) -> int | None:
    e = simplify(e)
    return e.value if isinstance(e, Const) and isinstance(e.value, int) and not isinstance(e.value, bool) else None


def assigned_names(stmts: tuple[ir.Stmt, ...]) -> set[str]:
    return {a.target.name for s in stmts for a in ir.walk(s) if isinstance(a, ir.Assign) and isinstance(a.target, Var)}


def loop_vars_in(stmts: tuple[ir.Stmt, ...]) -> set[str]:
    return {n.var for s in stmts for n in ir.walk(s) if isinstance(n, ir.Loop)}


def loop_trip(loop: ir.Loop, step: int) -> Expr:
    zero = Const(0, DType.I32)
    if step == 1:
        n = sub(loop.stop, loop.start)
    elif step > 0:
        n = BinOp("div", add(sub(loop.stop, loop.start), Const(step - 1, DType.I32)), Const(step, DType.I32), DType.I32)
    else:
        n = BinOp("div", add(sub(loop.start, loop.stop), Const(-step - 1, DType.I32)), Const(-step, DType.I32),
                  DType.I32)
    return simplify(Call("max", (zero, simplify(n)), DType.I32))


def affine_in(e: Expr, v: str, variant: set[str]) -> tuple[Expr, Expr] | None:
    """e == coef*v + rest with coef, rest free of every variant name."""
    lin = linearize(e)
    if lin is None:
        return None
    terms, c = lin
    coef: Expr = Const(0, DType.I32)
    rest: Expr = Const(c, DType.I32)
    for atom, k in terms.items():
        if isinstance(atom, Var) and atom.name == v:
            coef = add(coef, Const(k, DType.I32))
            continue
        if isinstance(atom, BinOp) and atom.op == "mul":
            for x, y in ((atom.lhs, atom.rhs), (atom.rhs, atom.lhs)):
                if names_read(y) & variant:
                    continue
                if isinstance(x, Var) and x.name == v:
                    coef = add(coef, mul(Const(k, DType.I32), y))
                    break
                # (c*v + r) * y with y invariant: a product the linear form keeps whole,
                # e.g. ix + (i - j)*incx after induction substitution
                inner = affine_in(x, v, variant) if v in names_read(x) else None
                if inner is not None:
                    coef = add(coef, mul(Const(k, DType.I32), mul(inner[0], y)))
                    rest = add(rest, mul(Const(k, DType.I32), mul(inner[1], y)))
                    break
            else:
                if names_read(atom) & variant:
                    return None
                rest = add(rest, mul(Const(k, DType.I32), atom))
            continue
        if names_read(atom) & variant:
            return None
        rest = add(rest, mul(Const(k, DType.I32), atom))
    return simplify(coef), simplify(rest)


def dtype_of(stmts: tuple[ir.Stmt, ...], name: str) -> DType:
    for s in stmts:
        for n in ir.walk(s):
            if isinstance(n, Var) and n.name == name:
                return n.dtype
    return DType.F64


def reduction_op(stmts: tuple[ir.Stmt, ...], name: str) -> str | None:
    """The op if every use of ``name`` in the loop is ``name = name op expr``."""
    op: str | None = None
    for s in stmts:
        for n in ir.walk(s):
            if isinstance(n, ir.Assign) and isinstance(n.target, Var) and n.target.name == name:
                this = update_op(n.value, name)
                if this is None or (op is not None and this != op):
                    return None
                op = this
            elif isinstance(n, (ir.If, ir.Loop, ir.While)):
                exprs = [n.cond] if isinstance(n, (ir.If, ir.While)) else [n.start, n.stop, n.step]
                if any(name in names_read(e) for e in exprs):
                    return None
            elif isinstance(n, ir.Assign) and name in names_read(n.value) | names_read(n.target):
                return None
            elif isinstance(n, (ir.ErrorCall, ir.HostCall)) and any(name in names_read(a) for a in n.args):
                return None
            elif isinstance(n, ir.HostCall) and name in n.writes:
                return None
    return op


def update_op(value: Expr, name: str) -> str | None:
    if isinstance(value, Call) and value.fn in ("max", "min") and len(value.args) == 2:
        a, b = value.args
        s = Var(name, value.dtype)
        if a == s and name not in names_read(b) or b == s and name not in names_read(a):
            return value.fn
        return None
    if isinstance(value, BinOp) and value.op in ("add", "sub", "mul"):
        family = "mul" if value.op == "mul" else "add"
        node: Expr = value
        while isinstance(node, BinOp) and (node.op == "mul" if family == "mul" else node.op in ("add", "sub")):
            if name in names_read(node.rhs):
                if node.op in ("add", "mul") and node.rhs == Var(name, node.rhs.dtype) and \
                        name not in names_read(node.lhs) and node is value:
                    return family
                return None
            node = node.lhs
        if isinstance(node, Var) and node.name == name:
            return family
    return None


def access_count(stmts: tuple[ir.Stmt, ...], array: str) -> int:
    return sum(1 for s in stmts for n in ir.walk(s) if isinstance(n, Load) and n.array == array)


def scratch_arrays(loop: ir.Loop, assigned: set[str]) -> list[str]:
    """Arrays the loop writes only at elements that do not depend on its variable (nor on a
    scalar it assigns): each iteration overwrites the same ones (a scratch array)."""
    found: dict[str, bool] = {}
    varying = varying_with(loop, assigned)
    for s in loop.body:
        for n in ir.walk(s):
            if isinstance(n, ir.Assign) and isinstance(n.target, Load):
                moves = any(names_read(i) & varying for i in n.target.index)
                found[n.target.array] = found.get(n.target.array, False) or moves
    return sorted(a for a, moves in found.items() if not moves)


def varying_with(loop: ir.Loop, assigned: set[str]) -> set[str]:
    """The loop's variable and the scalars of ``assigned`` whose value changes with it: those
    computed from it (``i3 = 2*j3 - d3``) or from themselves (a counter carried across
    iterations), transitively. A scalar computed from inner loop variables alone
    (``i1 = 2*j1 - d1``) takes the same values in every iteration."""
    sets = [n for s in loop.body for n in ir.walk(s) if isinstance(n, ir.Assign) and isinstance(n.target, Var)
            and n.target.name in assigned]
    varying = {loop.var} | {a.target.name for a in sets if a.target.name in names_read(a.value)}
    changed = True
    while changed:
        changed = False
        for a in sets:
            if a.target.name not in varying and names_read(a.value) & varying:
                varying.add(a.target.name)
                changed = True
    return varying


def directive_clauses(directive: str) -> tuple[list[tuple[str, str]], list[str]]:
    reds: list[tuple[str, str]] = []
    for op, names in re.findall(r"reduction\s*\(\s*([+*\-]|max|min)\s*:\s*([^)]*)\)", directive):
        reds += [(n.strip(), RED_OPS[op]) for n in names.split(",") if n.strip()]
    priv: list[str] = []
    for names in re.findall(r"\b(?:private|lastprivate|firstprivate)\s*\(([^)]*)\)", directive):
        priv += [n.strip() for n in names.split(",") if n.strip()]
    return reds, priv


def index_temps(body: tuple[ir.Stmt, ...], loop_var: str) -> dict[str, Expr]:
    """Scalars a loop body sets once, before it reads them, from the loop variable and what the
    body leaves alone, reading no array element (``i1 = 2*j1 - d1``, NPB MG's rprj3): in the
    statements after, they stand for their values."""
    counts: dict[str, int] = {}
    for s in body:
        for n in ir.walk(s):
            if isinstance(n, ir.Assign) and isinstance(n.target, Var):
                counts[n.target.name] = counts.get(n.target.name, 0) + 1
    fixed = set(counts) | loop_vars_in(body)
    out: dict[str, Expr] = {}
    read: set[str] = set()
    for s in body:
        if (isinstance(s, ir.Assign) and isinstance(s.target, Var) and counts[s.target.name] == 1
                and s.target.name not in read and not any(isinstance(n, Load) for n in ir.walk(s.value))
                and not (names_read(s.value) - {loop_var}) & fixed):
            out[s.target.name] = s.value
        if isinstance(s, ir.Assign):
            read |= names_read(s.value).union(*(names_read(i) for i in getattr(s.target, "index", ())))
        else:
            read |= names_read(s)
    return out


def with_temps(body: tuple[ir.Stmt, ...], temps: dict[str, Expr]) -> tuple[ir.Stmt, ...]:
    """``body`` with the reads of ``index_temps`` replaced by their values (their assignments kept)."""
    if not temps:
        return body
    out: list[ir.Stmt] = []
    for s in body:
        if isinstance(s, ir.Assign) and isinstance(s.target, Var) and s.target.name in temps:
            out.append(s)
        else:
            out.append(ir.substitute(s, temps))  # type: ignore[arg-type]
    return tuple(out)
