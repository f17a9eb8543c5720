"""Loop analysis: which loops are parallel, which scalars are reductions or
private, and why not, in words.

Conservative: a loop is PARALLEL only when every pair of accesses to an array it
writes provably touches distinct elements in distinct iterations and every
scalar it writes is a reduction or private. Before that, induction variables
(``ix = ix + incx`` once per iteration) are replaced by their closed form
``ix + k*incx``; the final value is assigned after the loop when it is used later.

Assumption (stated in the reason when used): an integer argument that is never
written and is used as a symbolic stride is nonzero; BLAS requires this and its
routines check it (``INCX.EQ.0`` -> XERBLA).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from translate import argreduce, condreduce, interchange, ir, privatize
from translate.ir import BinOp, Call, Const, DType, Expr, Load, LoopKind, Var
from translate.irquery import fresh_name
from translate.reroll import reroll
from translate.simplify import add, linearize, mul, simplify, sub

_RED_WORDS = {"add": "sum", "mul": "product", "max": "max", "min": "min"}
_RED_OPS = {"+": "add", "*": "mul", "max": "max", "min": "min", "-": "add"}


def analyze(kernel: ir.Kernel) -> ir.Kernel:
    """The kernel with every Loop annotated (kind, reductions, private, reason)."""
    kernel = reroll(kernel)  # manually unrolled loops back to unit steps (translate.reroll)
    ctx = _Ctx(kernel)
    body = ctx.block(kernel.body, [])
    locals_ = tuple(replace(d, shape=d.shape + tuple(ctx.copies[d.name])) if d.name in ctx.copies else d
                    for d in kernel.locals)
    return replace(kernel, body=body, locals=locals_ + tuple(ctx.temps))


def loop_report(kernel: ir.Kernel) -> list[dict[str, object]]:
    """One row per loop: line, var, kind, reason, directive."""
    return [{"line": n.line, "var": n.var, "kind": n.kind.value, "reason": n.reason, "directive": n.directive}
            for s in kernel.body for n in ir.walk(s) if isinstance(n, ir.Loop)]


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
    _flow(stmts, set(defined), rbw, written, set(arrays))
    return rbw, written


def _flow(stmts: tuple[ir.Stmt, ...], defined: set[str] | None, rbw: set[str], written: set[str],
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
            d1 = _flow(s.then, set(defined), rbw, written, arrays)
            d2 = _flow(s.orelse, set(defined), rbw, written, arrays)
            defined = d2 if d1 is None else d1 if d2 is None else d1 & d2
        elif isinstance(s, ir.Loop):
            for e in (s.start, s.stop, s.step):
                use(e, defined)
            _flow(s.body, defined | {s.var}, rbw, written, arrays)
        elif isinstance(s, ir.While):  # may not run: what it assigns is not definitely assigned
            use(s.cond, defined)
            _flow(s.body, set(defined), rbw, written, arrays)
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


# ------------------------------------------------------------------ context


@dataclass
class _Ctx:
    kernel: ir.Kernel

    def __post_init__(self) -> None:
        k = self.kernel
        written = {a.target.name for s in k.body for a in ir.walk(s) if isinstance(a, ir.Assign)
                   and isinstance(a.target, Var)}
        self.stride_params = {p.name for p in k.params if isinstance(p, ir.Scalar) and p.dtype.is_int
                              and p.name not in written}
        zero, one = Const(0, DType.I32), Const(1, DType.I32)
        self.checked = {n.lhs.name for s in k.body for n in ir.walk(s) if isinstance(n, BinOp)
                        and isinstance(n.lhs, Var) and ((n.op in ("eq", "ne", "le") and n.rhs == zero)
                                                        or (n.op == "lt" and n.rhs == one))}
        self.live_at_end = {p.name for p in k.params} | ({k.name} if k.result is not None else set())
        self.arrays = {p.name for p in k.params + k.locals if isinstance(p, ir.Array)}
        self.temps: list[ir.Scalar] = []  # scalars the analysis introduces (translate.argreduce)
        self.pair_scans = True  # off while a loop is analysed with the scans inside it whole
        # local arrays given one copy per iteration of a loop (translate.privatize): the extents added
        self.copies: dict[str, list[Expr]] = {}
        self.enclosing: list[str] = []  # the variables of the loops around the one analysed

    # statements, with the continuation (what runs afterwards) for liveness

    def block(self, stmts: tuple[ir.Stmt, ...], cont: list[tuple[ir.Stmt, ...]]) -> tuple[ir.Stmt, ...]:
        out: list[ir.Stmt] = []
        for i, s in enumerate(stmts):
            rest = [stmts[i + 1:], *cont]
            if isinstance(s, ir.If):
                out.append(ir.If(s.cond, self.block(s.then, rest), self.block(s.orelse, rest)))
            elif isinstance(s, ir.While):  # the next iteration runs the body again
                out.append(replace(s, body=self.block(s.body, [s.body, *rest])))
            elif isinstance(s, ir.Loop):
                out.extend(self.loop(s, rest))
            else:
                out.append(s)
        return tuple(out)

    def live(self, name: str, cont: list[tuple[ir.Stmt, ...]]) -> bool:
        """Whether ``name`` may be read before being reassigned in ``cont``."""
        for seq in cont:
            first = _first_access(name, seq)
            if first == "read":
                return True
            if first == "write":
                return False
            if first == "end":
                break
        return name in self.live_at_end

    # ---------------------------------------------------------------- loops

    def loop(self, loop: ir.Loop, cont: list[tuple[ir.Stmt, ...]]) -> list[ir.Stmt]:
        inner_cont = [loop.body, *cont]
        mark = len(self.temps)
        self.enclosing.append(loop.var)
        try:
            body = self.block(loop.body, inner_cont)
        finally:
            self.enclosing.pop()
        if len(self.temps) > mark:  # a scan inside became a pair reduction (scan_as_pair)
            whole = self.analysed_whole(loop, cont)
            if whole is not None:  # this loop is parallel with its scans whole: each thread reads once
                del self.temps[mark:]
                return whole
        loop = replace(loop, body=body)
        loop, after = self.inductions(loop, cont)
        classified = self.swappable(self.privatized(loop, self.classify(loop, cont), cont), cont)
        if classified.kind is LoopKind.SERIAL and self.pair_scans:
            return [*(self.scan_as_pair(classified, cont) or [classified]), *after]
        return [classified, *after]

    def privatized(self, loop: ir.Loop, classified: ir.Loop, cont: list[tuple[ir.Stmt, ...]]) -> ir.Loop:
        """A serial loop whose scratch arrays, one copy per iteration, make it parallel
        (translate.privatize); else ``classified`` as it is."""
        if classified.kind is not LoopKind.SERIAL:
            return classified
        arrays = {d.name: d for d in self.kernel.locals if isinstance(d, ir.Array)}
        outside = {a for a in arrays if _accesses(self.kernel.body, a) != _accesses(loop.body, a)}
        names = privatize.candidates(loop, arrays, set(self.enclosing), outside)
        if not names:
            return classified
        again = self.classify(privatize.expand(loop, names), cont)
        if again.kind is not LoopKind.PARALLEL:
            return classified
        trip = privatize.trip_count(loop)
        assert trip is not None
        for n in names:
            self.copies.setdefault(n, []).append(trip)
        return replace(again, reason=f"{again.reason}; {', '.join(names)}: one copy per iteration (filled before"
                                     " it is read in each)")

    def analysed_whole(self, loop: ir.Loop, cont: list[tuple[ir.Stmt, ...]]) -> list[ir.Stmt] | None:
        """``loop`` analysed with the scans inside it kept whole, if it is then parallel (each of
        its threads scans in order; a pair reduction inside a parallel loop is a nest the targets
        do not run), else None."""
        before, self.pair_scans = self.pair_scans, False
        try:
            body = self.block(loop.body, [loop.body, *cont])
            whole, after = self.inductions(replace(loop, body=body), cont)
            classified = self.classify(whole, cont)
        finally:
            self.pair_scans = before
        if classified.kind is not LoopKind.PARALLEL:
            return None
        return [self.swappable(classified, cont), *after]

    def scan_as_pair(self, loop: ir.Loop, cont: list[tuple[ir.Stmt, ...]]) -> list[ir.Stmt] | None:
        """A serial first-max/min scan (IDAMAX) as one parallel pair reduction (translate.argreduce),
        or None when it is not one or the two loops it splits into are not both parallel."""
        scan = argreduce.arg_scan(loop)
        if scan is None or not isinstance(loop.step, Const) or loop.step.value == 0:
            return None
        taken = {d.name for d in self.kernel.params + self.kernel.locals} | {t.name for t in self.temps} | \
            {n.name for s in loop.body for n in ir.walk(s) if isinstance(n, Var)} | {self.kernel.name}
        temps = (fresh_name(f"{scan.best.name}_best", taken), fresh_name(f"{loop.var}_first", taken))
        value = fresh_name(f"{scan.best.name}_at_{loop.var}", taken | set(temps))
        out = list(self.block(tuple(argreduce.split(loop, scan, temps)), cont))
        scan_loop, then = out[1], out[2].then  # type: ignore[attr-defined]
        find_loop = then[1]
        for lp, var in ((scan_loop, temps[0]), (find_loop, temps[1])):
            if lp.kind is not LoopKind.PARALLEL or [r.var for r in lp.reductions] != [var]:
                return None
        what = f"the first {'maximum' if scan.better == 'gt' else 'minimum'} of {scan.best.name}"
        reason = (f"loop {loop.var} is parallel: {what} and its first iteration (for {scan.at.name}) are one "
                  f"reduction of the pair ({temps[0]}, {temps[1]}); split in two, a {scan_loop.reductions[0].op} "
                  "reduction and a search for its first iteration, both loops are parallel")
        private = tuple(sorted(set(scan_loop.private) | set(find_loop.private)))
        self.temps += [ir.Scalar(temps[0], scan.best.dtype), ir.Scalar(temps[1], argreduce.index_type(loop)),
                       ir.Scalar(value, scan.best.dtype)]
        return argreduce.fused(loop, scan, (*temps, value), private, reason)

    def swappable(self, loop: ir.Loop, cont: list[tuple[ir.Stmt, ...]]) -> ir.Loop:
        """``loop`` marked ``swappable`` when interchanging it with the parallel loop inside
        is legal (translate.interchange): its scalars are dead after it and the
        interchanged outer loop classifies as parallel."""
        if not interchange.candidate(loop):
            return loop
        scalars = {s.target.name for s in loop.body[:-1] if isinstance(s, ir.Assign) and isinstance(s.target, Var)}
        if any(self.live(name, cont) for name in scalars):
            return loop
        outer = interchange.interchanged(loop)
        checked = self.classify(outer, cont)
        if checked.kind is not LoopKind.PARALLEL or checked.reductions:
            return loop
        return replace(loop, swappable=True, reason=f"{loop.reason}; the parallel loop {outer.var} inside it can run "
                       "outside it, each thread running this loop (interchanged by the schedule)")

    def inductions(self, loop: ir.Loop, cont: list[tuple[ir.Stmt, ...]]) -> tuple[ir.Loop, list[ir.Stmt]]:
        assigned = _assigned(loop.body)
        counts: dict[str, int] = {}
        for s in loop.body:
            for a in ir.walk(s):
                if isinstance(a, ir.Assign) and isinstance(a.target, Var):
                    counts[a.target.name] = counts.get(a.target.name, 0) + 1
        step = loop.step
        steps = _const(step)
        if steps is None:
            return loop, []
        k = sub(Var(loop.var, DType.I32), loop.start)
        if steps == -1:  # exact and still affine: k = start - v
            k = sub(loop.start, Var(loop.var, DType.I32))
        elif steps != 1:
            k = simplify(BinOp("div", k, Const(steps, DType.I32), DType.I32))
        for pos, s in enumerate(loop.body):
            if not (isinstance(s, ir.Assign) and isinstance(s.target, Var) and s.target.dtype.is_int
                    and counts.get(s.target.name) == 1 and isinstance(s.value, BinOp)
                    and s.value.op in ("add", "sub") and s.value.lhs == s.target):
                continue
            x = s.target
            # ix = ix + inc, or ix = ix - inc (descending BLAS loops): the increment is -inc
            inc = s.value.rhs if s.value.op == "add" else sub(Const(0, s.value.rhs.dtype), s.value.rhs)
            if names_read(inc) & (assigned | {loop.var} | _loop_vars(loop.body)):
                continue
            before = {x.name: add(x, mul(k, inc))}
            later = {x.name: add(x, mul(add(k, Const(1, DType.I32)), inc))}
            body = tuple(ir.substitute(t, before if i < pos else later)  # type: ignore[misc]
                         for i, t in enumerate(loop.body) if i != pos)
            after: list[ir.Stmt] = []
            if self.live(x.name, cont):
                after.append(ir.Assign(x, add(x, mul(_trip(loop, steps), inc))))
            loop, more = self.inductions(replace(loop, body=body), cont)
            return loop, after + more
        return loop, []

    def classify(self, loop: ir.Loop, cont: list[tuple[ir.Stmt, ...]]) -> ir.Loop:
        """``loop`` with its kind, reductions, private scalars and the reason; a max or min
        written as ``IF (E .GT. V) V = E`` is rewritten as one (translate.condreduce) when the
        loop is then a parallel reduction of it, and left as written when not."""
        body, names = condreduce.rewrite(loop.body)
        if names:
            rewritten = self.classify_as_written(replace(loop, body=body), cont)
            if rewritten.kind is LoopKind.PARALLEL and set(names) <= {r.var for r in rewritten.reductions}:
                read = "; ".join(f"the IF updating {n} is read as {n} = {op.upper()}({n}, ...)"
                                 for n, op in sorted(names.items()))
                return replace(rewritten, reason=f"{rewritten.reason}; {read}")
        return self.classify_as_written(loop, cont)

    def classify_as_written(self, loop: ir.Loop, cont: list[tuple[ir.Stmt, ...]]) -> ir.Loop:
        v = loop.var
        reasons: list[str] = []
        notes: list[str] = []
        reductions: list[ir.Reduction] = []
        private: list[str] = []
        if any(isinstance(n, (ir.Return, ir.ErrorCall)) for s in loop.body for n in ir.walk(s)):
            reasons.append("it contains a return or an error call")
        if any(isinstance(n, ir.While) for s in loop.body for n in ir.walk(s)):
            reasons.append("it contains a DO WHILE (a trip count known only at run time)")
        host = sorted({n.routine.upper() for s in loop.body for n in ir.walk(s) if isinstance(n, ir.HostCall)})
        if host:
            reasons.append(f"it runs host code ({', '.join(host)})")
        scalars = sorted({a.target.name for s in loop.body for a in ir.walk(s)
                          if isinstance(a, ir.Assign) and isinstance(a.target, Var)})
        rbw, _ = exposed_reads(loop.body, {v})
        for name in scalars:
            red = _reduction(loop.body, name)
            if red is not None:
                reductions.append(ir.Reduction(name, red, _dtype_of(loop.body, name)))
                notes.append(f"{name} is a {_RED_WORDS[red]} reduction")
            elif name not in rbw:
                if self.live(name, cont):
                    reasons.append(f"{name} is assigned in the loop and used after it")
                else:
                    private.append(name)
            else:
                reasons.append(f"{name} is carried across iterations")
        variant = set(scalars) | _loop_vars(loop.body) | {v}
        dep, assumed = self.arrays_independent(loop, variant)
        reasons += dep
        notes += assumed
        if loop.reason.startswith("re-rolled"):
            notes.append(loop.reason)
        directive = loop.directive
        scratch = _scratch_arrays(loop, set(scalars))
        if directive and scratch:
            # the source's parallel loop relies on per-thread copies of these arrays (PRIVATE or
            # THREADPRIVATE): every iteration writes the same elements of them
            return replace(loop, kind=LoopKind.SERIAL, reductions=(), private=(),
                           reason=f"loop {v} is not parallel: every iteration writes the same elements of "
                                  f"{', '.join(scratch)} (private per thread in the source's !${directive}, which "
                                  "the translation does not do for arrays)")
        if directive:
            dred, dpriv = _directive_clauses(directive)
            known = {r.var for r in reductions}
            reductions += [ir.Reduction(n, op, _dtype_of(loop.body, n)) for n, op in dred if n not in known]
            private = sorted(set(private) | (set(dpriv) & set(scalars)))
            reductions = [r for r in reductions if r.var not in private]
            why = f"as asserted by the source (!${directive})" if directive != "do concurrent" else \
                "as asserted by the source (do concurrent)"
            if reasons:
                why += f"; unproven: {'; '.join(reasons)}"
            return replace(loop, kind=LoopKind.PARALLEL, reductions=tuple(reductions), private=tuple(private),
                           reason=f"loop {v} is parallel {why}")
        if reasons:
            return replace(loop, kind=LoopKind.SERIAL, reductions=(), private=(),
                           reason=f"loop {v} is not parallel: {'; '.join(reasons)}")
        detail = f": {'; '.join(notes)}" if notes else ""
        return replace(loop, kind=LoopKind.PARALLEL, reductions=tuple(reductions), private=tuple(private),
                       reason=f"loop {v} is parallel{detail}")

    def arrays_independent(self, loop: ir.Loop, variant: set[str]) -> tuple[list[str], list[str]]:
        reads: dict[str, list[tuple[Expr, ...]]] = {}
        writes: dict[str, list[tuple[Expr, ...]]] = {}
        for s in loop.body:
            for n in ir.walk(s):
                if isinstance(n, ir.Assign):
                    # every read counts, also into a scalar (t = x(i) feeds x(j) = t): a loop that
                    # writes x(j) and reads x(i), i < j, carries a dependence whatever the target
                    index = n.target.index if isinstance(n.target, Load) else ()
                    if isinstance(n.target, Load):
                        writes.setdefault(n.target.array, []).append(n.target.index)
                    for e in (n.value, *index):
                        for m in ir.walk(e):
                            if isinstance(m, Load):
                                reads.setdefault(m.array, []).append(m.index)
                elif isinstance(n, (ir.If, ir.While, ir.Loop, ir.ErrorCall)):
                    exprs = [n.cond] if isinstance(n, (ir.If, ir.While)) else list(n.args) \
                        if isinstance(n, ir.ErrorCall) else [n.start, n.stop, n.step]
                    for e in exprs:
                        for m in ir.walk(e):
                            if isinstance(m, Load):
                                reads.setdefault(m.array, []).append(m.index)
        problems: list[str] = []
        assumed: set[str] = set()
        for arr, ws in writes.items():
            others = [("written", w) for w in ws] + [("read", r) for r in reads.get(arr, [])]
            bad = None
            for w in ws:
                for kind, o in others:
                    ok, why = self.distinct(w, o, loop, variant)
                    assumed |= why
                    if not ok:
                        bad = (w, kind, o)
                        break
                if bad:
                    break
            if bad:
                w, kind, o = bad
                if kind == "written" and w == o:
                    problems.append(f"{_acc(arr, w)} is written and different iterations may write the same element")
                else:
                    problems.append(f"{_acc(arr, o)} is {kind} and {_acc(arr, w)} written")
        notes = []
        for s in sorted(assumed):
            how = "checked by the routine" if s in self.checked else "BLAS requires nonzero increments"
            notes.append(f"assuming {s} != 0 ({how})")
        if writes and not problems:
            notes.insert(0, "iterations write distinct elements of " + ", ".join(sorted(writes)))
        return problems, notes

    def distinct(self, a: tuple[Expr, ...], b: tuple[Expr, ...], loop: ir.Loop,
                 variant: set[str]) -> tuple[bool, set[str]]:
        step = _const(loop.step)
        for ea, eb in zip(a, b, strict=False):
            fa, fb = _affine(ea, loop.var, variant), _affine(eb, loop.var, variant)
            if fa is None or fb is None or fa[0] != fb[0]:
                continue
            coef = fa[0]
            cval = _const(coef)
            assumed: set[str] = set()
            if cval == 0:
                continue
            if cval is None:
                names = names_read(coef)
                lin = linearize(coef)
                # a stride argument, or its negation (from a descending induction ix = ix - incx)
                unit = lin is not None and lin[1] == 0 and len(lin[0]) == 1 and \
                    isinstance(next(iter(lin[0])), Var) and abs(next(iter(lin[0].values()))) == 1
                if not names <= self.stride_params or not unit:
                    continue
                assumed = names
            diff = simplify(sub(fb[1], fa[1]))
            dval = _const(diff)
            if dval == 0:
                return True, assumed
            if dval is not None and cval is not None and step is not None and dval % (cval * step) != 0:
                return True, assumed
        return False, set()


# ------------------------------------------------------------------ helpers


def _acc(arr: str, idx: tuple[Expr, ...]) -> str:
    parts = [ir.expr_str(i) for i in idx]
    return f"{arr}[{', '.join(p[1:-1] if p.startswith('(') and p.endswith(')') else p for p in parts)}]"


def _first_access(name: str, seq: tuple[ir.Stmt, ...]) -> str | None:
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
            t, e = _first_access(name, s.then), _first_access(name, s.orelse)
            if "read" in (t, e):
                return "read"
            if t in ("write", "end") and e in ("write", "end"):
                return "write" if "write" in (t, e) else "end"
        elif isinstance(s, ir.Loop):
            if any(name in names_read(x) for x in (s.start, s.stop, s.step)) or \
                    _first_access(name, s.body) == "read":
                return "read"
        elif isinstance(s, ir.While):
            if name in names_read(s.cond) or _first_access(name, s.body) == "read":
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


def _const(e: Expr) -> int | None:
    e = simplify(e)
    return e.value if isinstance(e, Const) and isinstance(e.value, int) and not isinstance(e.value, bool) else None


def _assigned(stmts: tuple[ir.Stmt, ...]) -> set[str]:
    return {a.target.name for s in stmts for a in ir.walk(s) if isinstance(a, ir.Assign) and isinstance(a.target, Var)}


def _loop_vars(stmts: tuple[ir.Stmt, ...]) -> set[str]:
    return {n.var for s in stmts for n in ir.walk(s) if isinstance(n, ir.Loop)}


def _trip(loop: ir.Loop, step: int) -> Expr:
    zero = Const(0, DType.I32)
    if step == 1:
        n = sub(loop.stop, loop.start)
    elif step > 0:
        n = BinOp("div", add(sub(loop.stop, loop.start), Const(step - 1, DType.I32)), Const(step, DType.I32), DType.I32)
    else:
        n = BinOp("div", add(sub(loop.start, loop.stop), Const(-step - 1, DType.I32)), Const(-step, DType.I32),
                  DType.I32)
    return simplify(Call("max", (zero, simplify(n)), DType.I32))


def _affine(e: Expr, v: str, variant: set[str]) -> tuple[Expr, Expr] | None:
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
                inner = _affine(x, v, variant) if v in names_read(x) else None
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


def _dtype_of(stmts: tuple[ir.Stmt, ...], name: str) -> DType:
    for s in stmts:
        for n in ir.walk(s):
            if isinstance(n, Var) and n.name == name:
                return n.dtype
    return DType.F64


def _reduction(stmts: tuple[ir.Stmt, ...], name: str) -> str | None:
    """The op if every use of ``name`` in the loop is ``name = name op expr``."""
    op: str | None = None
    for s in stmts:
        for n in ir.walk(s):
            if isinstance(n, ir.Assign) and isinstance(n.target, Var) and n.target.name == name:
                this = _update_op(n.value, name)
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


def _update_op(value: Expr, name: str) -> str | None:
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


def _accesses(stmts: tuple[ir.Stmt, ...], array: str) -> int:
    return sum(1 for s in stmts for n in ir.walk(s) if isinstance(n, Load) and n.array == array)


def _scratch_arrays(loop: ir.Loop, assigned: set[str]) -> list[str]:
    """Arrays the loop writes only at elements that do not depend on its variable (nor on a
    scalar it assigns): each iteration overwrites the same ones (a scratch array)."""
    found: dict[str, bool] = {}
    varying = _varying(loop, assigned)
    for s in loop.body:
        for n in ir.walk(s):
            if isinstance(n, ir.Assign) and isinstance(n.target, Load):
                moves = any(names_read(i) & varying for i in n.target.index)
                found[n.target.array] = found.get(n.target.array, False) or moves
    return sorted(a for a, moves in found.items() if not moves)


def _varying(loop: ir.Loop, assigned: set[str]) -> set[str]:
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


def _directive_clauses(directive: str) -> tuple[list[tuple[str, str]], list[str]]:
    reds: list[tuple[str, str]] = []
    for op, names in re.findall(r"reduction\s*\(\s*([+*\-]|max|min)\s*:\s*([^)]*)\)", directive):
        reds += [(n.strip(), _RED_OPS[op]) for n in names.split(",") if n.strip()]
    priv: list[str] = []
    for names in re.findall(r"\b(?:private|lastprivate|firstprivate)\s*\(([^)]*)\)", directive):
        priv += [n.strip() for n in names.split(",") if n.strip()]
    return reds, priv
