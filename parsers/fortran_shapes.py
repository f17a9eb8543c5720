"""Facts the Fortran frontend infers after lowering a routine: argument intents
(where the source gives none) and the extent of assumed-size dimensions."""

from __future__ import annotations

from dataclasses import replace

from parsers.fortran_expr import Access
from translate import ir
from translate.ir import Call, Const, DType, Expr, Intent, Var
from translate.loopfacts import exposed_reads
from translate.simplify import add, largest, linearize, mul, simplify, sub


def expr_names(e: object) -> set[str]:
    """Scalar variables and arrays an expression reads."""
    out: set[str] = set()
    for n in ir.walk(e):
        if isinstance(n, Var):
            out.add(n.name)
        elif isinstance(n, ir.Load):
            out.add(n.array)
    return out


def infer_intents(body: tuple[ir.Stmt, ...], params: list[ir.Decl]) -> list[ir.Decl]:
    """Intent of every parameter without a declared one: written and read before
    written -> inout, else in. A scalar only written -> out. An array only
    written is inout too: a routine may write part of it (the interior of a
    halo'd grid) and the caller's values of the rest flow through."""
    arrays = {p.name for p in params if isinstance(p, ir.Array)}
    rbw, written = exposed_reads(body, set(), arrays)
    out: list[ir.Decl] = []
    for p in params:
        if p.name not in written:
            intent = Intent.IN
        elif p.name in rbw or isinstance(p, ir.Array):
            intent = Intent.INOUT
        else:
            intent = Intent.OUT
        out.append(replace(p, intent=intent))
    return out


def local_definitions(body: tuple[ir.Stmt, ...]) -> dict[str, Expr]:
    """Values of locals assigned exactly once outside loops (or once in each arm
    of one IF), for expressing shapes over parameters."""
    found: dict[str, list[Expr]] = {}
    in_loops: set[str] = set()

    def visit(stmts: tuple[ir.Stmt, ...]) -> None:
        for s in stmts:
            if isinstance(s, ir.Assign) and isinstance(s.target, Var):
                found.setdefault(s.target.name, []).append(s.value)
            elif isinstance(s, ir.If):
                t = {a.target.name: a.value for a in s.then if isinstance(a, ir.Assign) and isinstance(a.target, Var)}
                f = {a.target.name: a.value for a in s.orelse
                     if isinstance(a, ir.Assign) and isinstance(a.target, Var)}
                both = t.keys() & f.keys()
                for name in both:
                    found.setdefault(name, []).append(ir.Select(s.cond, t[name], f[name], t[name].dtype))
                visit(tuple(a for a in s.then if not (isinstance(a, ir.Assign) and isinstance(a.target, Var)
                                                       and a.target.name in both)))
                visit(tuple(a for a in s.orelse if not (isinstance(a, ir.Assign) and isinstance(a.target, Var)
                                                         and a.target.name in both)))
            elif isinstance(s, (ir.Loop, ir.While)):
                in_loops.update(a.target.name for a in ir.walk(s) if isinstance(a, ir.Assign)
                                and isinstance(a.target, Var))

    visit(body)
    return {k: v[0] for k, v in found.items() if len(v) == 1 and k not in in_loops}


def _resolve(e: Expr, defs: dict[str, Expr], params: set[str]) -> Expr | None:
    for _ in range(4):
        free = {n.name for n in ir.walk(e) if isinstance(n, Var)} - params
        if not free:
            return simplify(e)
        if not free <= defs.keys():
            return None
        e = ir.substitute(e, {k: defs[k] for k in free})  # type: ignore[assignment]
    return None


def _abs(e: Expr) -> Expr:
    return Call("abs", (e,), e.dtype)


def _coef(index: Expr, var: str) -> tuple[Expr, Expr] | None:
    """index == coef * var + rest with var not in coef/rest, integer affine."""
    lin = linearize(index)
    if lin is None:
        return None
    terms, c = lin
    coef: Expr | None = None
    rest: Expr = Const(c, DType.I32)
    for atom, k in terms.items():
        if atom == Var(var, atom.dtype):
            coef = Const(k, DType.I32)
            continue
        if isinstance(atom, ir.BinOp) and atom.op == "mul" and var in expr_names(atom):
            a, b = atom.lhs, atom.rhs
            other = b if a == Var(var, a.dtype) else a if b == Var(var, b.dtype) else None
            if other is None or coef is not None:
                return None
            coef = mul(Const(k, DType.I32), other)
            continue
        if var in expr_names(atom):
            return None
        rest = add(rest, mul(Const(k, DType.I32), atom))
    return (coef, rest) if coef is not None else None


def assumed_extent(array: str, accesses: list[Access], body: tuple[ir.Stmt, ...], params: set[str],
                   lower: Expr) -> Expr | None:
    """The extent of an assumed-size last dimension from the accesses seen.

    Candidates per access: a loop variable with coefficient 1 reaches the loop's
    last value; a symbolic stride ``s`` (``X(1+(I-1)*INCX)``, an induction variable
    ``IX = IX + INCX``, or a loop with step ``INCX``) gives ``1 + (n-1)*|s|`` with n
    the loop's last value. Accesses guarded by ``s == 1`` are covered by the
    strided candidate. The extent is the max over candidates (over-allocating is
    safe; a workflow's ``shapes:`` overrides it)."""
    defs = local_definitions(body)
    inductions = _inductions(body)
    strided: list[tuple[Expr, str]] = []
    plain: list[tuple[Expr, tuple[Expr, ...]]] = []
    one = Const(1, DType.I32)
    for acc in (a for a in accesses if a.array == array):
        idx = acc.index
        cand: Expr | None = None
        for loop in reversed(acc.loops):
            stride_var = _stride_name(loop.step)
            if isinstance(idx, Var) and idx.name in inductions and stride_var is None:
                inc = inductions[idx.name]
                if inc in params:
                    strided.append((add(one, mul(sub(loop.last, one), _abs(Var(inc, DType.I32)))), inc))
                    cand = None
                    break
            fit = _coef(idx, loop.var)
            if fit is None or fit[0] == Const(0, DType.I32):
                continue  # the index does not move with this loop: an outer one, or none
            coef, _rest = fit
            if stride_var is not None and coef in (one, Var(stride_var, DType.I32)):
                strided.append((loop.last, stride_var))
                break
            if isinstance(coef, Const):
                cand = loop.last if coef.value == 1 else None
            elif isinstance(coef, Var) and coef.name in params:
                strided.append((add(one, mul(sub(loop.last, one), _abs(coef))), coef.name))
            break
        else:  # no loop moves the index: it reaches its own value (``lhs(m, ni)``)
            cand = idx
        if cand is not None:
            plain.append((cand, acc.guards))
    stride_names = {s for _, s in strided}
    cands: list[Expr] = [e for e, _ in strided]
    for e, guards in plain:
        if any(_is_unit_guard(g, stride_names) for g in guards):
            continue
        cands.append(e)
    resolved: list[Expr] = []
    for c in cands:
        r = _resolve(c, defs, params)
        if r is not None and r not in resolved:
            resolved.append(r)
    if len(resolved) > 1:
        resolved = [r for r in resolved if not (isinstance(r, Const) and r.value <= 1)]
    if not resolved:
        return None
    out = resolved[0]
    for r in resolved[1:]:
        out = Call("max", (out, r), DType.I32)
    return simplify(sub(add(out, one), lower))


def _stride_name(step: Expr) -> str | None:
    return step.name if isinstance(step, Var) else None


def _is_unit_guard(g: Expr, strides: set[str]) -> bool:
    for n in ir.walk(g):
        if (isinstance(n, ir.BinOp) and n.op == "eq" and isinstance(n.lhs, Var) and n.lhs.name in strides
                and n.rhs == Const(1, DType.I32)):
            return True
    return False


def _inductions(body: tuple[ir.Stmt, ...]) -> dict[str, str]:
    """Scalars updated as ``x = x + s`` inside some loop (s a variable)."""
    out: dict[str, str] = {}
    for n in (m for s in body for m in ir.walk(s)):
        if isinstance(n, ir.Loop):
            for st in n.body:
                if (isinstance(st, ir.Assign) and isinstance(st.target, Var) and isinstance(st.value, ir.BinOp)
                        and st.value.op == "add" and st.value.lhs == st.target and isinstance(st.value.rhs, Var)):
                    out[st.target.name] = st.value.rhs.name
    return out


def access_extents(body: tuple[ir.Stmt, ...], array: str, rank: int, params: set[str]) -> list[Expr | None]:
    """Per dimension, an extent that covers every element ``body`` accesses of ``array`` (0-based
    IR indices), over ``params``: the largest index + 1, each loop variable at the end of its
    range it makes the index largest (an over-estimate is safe: the array only has to be big
    enough). Scalars assigned before an access inside the same loops are substituted; None
    where an index is not affine in loop variables and parameters."""
    found: list[list[Expr] | None] = [[] for _ in range(rank)]

    def visit(stmts: tuple[ir.Stmt, ...], loops: dict[str, ir.Loop], env: dict[str, Expr]) -> None:
        env = dict(env)
        for s in stmts:
            here: tuple[object, ...] = (s.start, s.stop, s.step) if isinstance(s, ir.Loop) else \
                (s.cond,) if isinstance(s, ir.If) else (s,)
            for n in (m for e in here for m in ir.walk(e)):
                if isinstance(n, ir.Load) and n.array == array and len(n.index) == rank:
                    for k, idx in enumerate(n.index):
                        if found[k] is not None:
                            top = _top(ir.substitute(idx, env), loops, params)  # type: ignore[arg-type]
                            if top is None:
                                found[k] = None
                            else:
                                found[k].append(top)  # type: ignore[union-attr]
            if isinstance(s, ir.Assign) and isinstance(s.target, Var):
                if s.target.dtype.is_int:
                    env[s.target.name] = ir.substitute(s.value, env)  # type: ignore[assignment]
                else:
                    env.pop(s.target.name, None)
            elif isinstance(s, ir.Loop):
                visit(s.body, {**loops, s.var: s}, env)
                for name in _assigned(s):
                    env.pop(name, None)
            elif isinstance(s, ir.If):
                visit(s.then, loops, env)
                visit(s.orelse, loops, env)
                for name in _assigned(s):
                    env.pop(name, None)

    visit(body, {}, {})
    out: list[Expr | None] = []
    for tops in found:
        out.append(largest(tops) if tops else None)
    return out


def _assigned(s: ir.Stmt) -> set[str]:
    return {n.target.name for n in ir.walk(s) if isinstance(n, ir.Assign) and isinstance(n.target, Var)}


def _top(index: Expr, loops: dict[str, ir.Loop], params: set[str]) -> Expr | None:
    """The largest value of ``index`` + 1 over the loops' ranges, or None."""
    lin = linearize(simplify(index))
    if lin is None:
        return None
    terms, c = lin
    out: Expr = Const(c + 1, DType.I32)
    for atom, k in terms.items():
        if isinstance(atom, Var) and atom.name in loops:
            lp = loops[atom.name]
            step = lp.step
            up = isinstance(step, Const) and isinstance(step.value, int) and step.value > 0
            down = isinstance(step, Const) and isinstance(step.value, int) and step.value < 0
            if not (up or down):
                return None
            # a loop counting up reaches at most stop - 1; one counting down starts highest
            high = sub(lp.stop, Const(1, DType.I32)) if up else lp.start
            low = lp.start if up else add(lp.stop, Const(1, DType.I32))
            bound = high if k > 0 else low
            if expr_names(bound) - params - set(loops):
                return None
            out = add(out, mul(Const(k, DType.I32), bound))
        elif expr_names(atom) <= params:
            out = add(out, mul(Const(k, DType.I32), atom))
        else:
            return None
    if expr_names(out) - params:
        return _top(out, loops, params) if expr_names(out) & set(loops) else None
    return simplify(out)
