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

from dataclasses import dataclass, replace

from translate import argreduce, array_reduce, condreduce, interchange, ir, privatize
from translate.bounds import hoist_bound_loads
from translate.ir import BinOp, Const, DType, Expr, Load, LoopKind, Var
from translate.irquery import arrays_written, fresh_name
from translate.loopfacts import (
    access_count,
    access_text,
    affine_in,
    assigned_names,
    constant_of,
    directive_clauses,
    dtype_of,
    exposed_reads,
    first_access,
    index_temps,
    loop_trip,
    loop_vars_in,
    names_read,
    reduction_op,
    scratch_arrays,
    with_temps,
)
from translate.reroll import reroll
from translate.simplify import add, linearize, mul, simplify, sub

_RED_WORDS = {"add": "sum", "mul": "product", "max": "max", "min": "min"}


def analyze(kernel: ir.Kernel) -> ir.Kernel:
    """The kernel with every Loop annotated (kind, reductions, private, reason)."""
    kernel = reroll(kernel)  # manually unrolled loops back to unit steps (translate.reroll)
    kernel = hoist_bound_loads(kernel)  # bounds read from arrays made scalars (translate.bounds)
    ctx = _Ctx(kernel)
    body = ctx.block(kernel.body, [])
    locals_ = tuple(replace(d, shape=d.shape + tuple(ctx.copies[d.name])) if d.name in ctx.copies else d
                    for d in kernel.locals + tuple(ctx.new_arrays))
    return replace(kernel, body=body, locals=locals_ + tuple(ctx.temps))


def loop_report(kernel: ir.Kernel) -> list[dict[str, object]]:
    """One row per loop: line, var, kind, reason, directive."""
    return [{"line": n.line, "var": n.var, "kind": n.kind.value, "reason": n.reason, "directive": n.directive}
            for s in kernel.body for n in ir.walk(s) if isinstance(n, ir.Loop)]


def entry_scalars(kernel: ir.Kernel) -> set[str]:
    """Integer scalars the routine's first statements set once from its integer parameters and
    constant elements of arrays it never writes (translate.bounds: ``grid_points(3)`` read at
    entry), and nothing else sets: known before any loop runs, so the targets can size local
    arrays by them (``targets`` allocate such arrays after those statements)."""
    params = {p.name for p in kernel.params if isinstance(p, ir.Scalar) and p.dtype.is_int}
    nodes = [n for s in kernel.body for n in ir.walk(s)]
    written_arrays = arrays_written(kernel.body) | {w for n in nodes if isinstance(n, ir.HostCall) for w in n.writes}
    counts: dict[str, int] = {}
    for n in nodes:
        if isinstance(n, ir.Assign) and isinstance(n.target, Var):
            counts[n.target.name] = counts.get(n.target.name, 0) + 1
    known: set[str] = set()
    for s in kernel.body:
        if not (isinstance(s, ir.Assign) and isinstance(s.target, Var) and s.target.dtype.is_int):
            break
        reads = list(ir.walk(s.value))
        steady = all(not isinstance(x, Var) or x.name in params | known for x in reads) and all(
            not isinstance(x, ir.Load) or (x.array not in written_arrays and all(isinstance(i, Const) for i in x.index))
            for x in reads)
        if not steady or counts.get(s.target.name) != 1 or s.target.name in params:
            break
        known.add(s.target.name)
    return known


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
        self.entry_scalars = entry_scalars(k)
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
        # the program's arrays kept per thread (per_thread): their local stand-ins,
        # the parameter each stands for, and the copy statements placed around loops for them
        self.new_arrays: list[ir.Array] = []
        self.private_of: dict[str, str] = {}
        self.copy_stmts: list[tuple[ir.Stmt, tuple[str, ...]]] = []
        # per-thread locals taken on the source's word (privatize.candidates' trusted): the
        # program's array goes into every copy of them, not the last one only
        self.unproven: set[str] = set()
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
            first = first_access(name, seq)
            if first == "read":
                return True
            if first == "write":
                return False
            if first == "end":
                break
        return name in self.live_at_end

    # ---------------------------------------------------------------- loops

    def loop(self, loop: ir.Loop, cont: list[tuple[ir.Stmt, ...]]) -> list[ir.Stmt]:
        made = self.array_reduction(loop)
        if made is not None:  # the directive's array reduction made scalar ones (translate.array_reduce)
            before, loop, after, scalars = made
            self.temps += scalars
            return [*before, *self.loop(loop, [tuple(after), *cont]), *after]
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
        stmts = self.privatized(loop, self.classify(loop, cont), cont)
        at = next(i for i, s in enumerate(stmts) if isinstance(s, ir.Loop))  # the copies around it are Ifs
        classified = self.swappable(stmts[at], cont)  # type: ignore[arg-type]
        if classified.kind is LoopKind.SERIAL and self.pair_scans:
            return [*(self.scan_as_pair(classified, cont) or [classified]), *after]
        return [*stmts[:at], classified, *stmts[at + 1:], *after]

    def privatized(self, loop: ir.Loop, classified: ir.Loop, cont: list[tuple[ir.Stmt, ...]]) -> list[ir.Stmt]:
        """A serial loop whose scratch arrays, one copy per iteration, make it parallel
        (translate.privatize), with the copies in and out of the program's arrays it keeps
        per thread (below); else ``[classified]``."""
        if classified.kind is not LoopKind.SERIAL:
            return [classified]
        bound = {v.name for e in (loop.start, loop.stop, loop.step) for v in ir.walk(e) if isinstance(v, Var)}
        if not bound <= self.stride_params | self.entry_scalars:  # the copies' count must be known when
            # they are allocated: on entry, or after the statements at the start that set entry_scalars
            return [classified]
        mark = len(self.new_arrays)
        stripped, inner = self.inner_copies(loop)
        loop, kept = self.per_thread(stripped)
        arrays = {d.name: d for d in self.kernel.locals + tuple(self.new_arrays) if isinstance(d, ir.Array)}
        outside = {a for a in arrays if a not in self.private_of
                   and access_count(self.kernel.body, a) != access_count(loop.body, a)}
        # per-thread locals were taken on the source's word already (here or in an inner loop)
        trusted = set(kept) | inner if loop.directive else set()
        names, on_word = privatize.candidates(loop, arrays, set(self.enclosing), outside, trusted)
        again = None
        if names and not (set(kept) | inner) - set(names):
            again = self.classify(privatize.expand(loop, names), cont)
        if again is None or again.kind is not LoopKind.PARALLEL:
            for q in kept:
                del self.private_of[q]
                self.unproven.discard(q)
            del self.new_arrays[mark:]
            return [classified]
        trip = privatize.trip_count(loop)
        assert trip is not None
        for n in names:
            self.copies.setdefault(n, []).append(trip)
        unproven = on_word | (set(names) & self.unproven)
        shown = sorted(self.private_of.get(n, n) for n in names if n not in unproven)
        taken = sorted(self.private_of.get(n, n) for n in unproven)
        why = [f"{', '.join(shown)}: one copy per iteration (filled before it is read in each)"] if shown else []
        if taken:
            why.append(f"{', '.join(taken)}: one copy per iteration, as the source's "
                       f"{self.spelt(loop.directive or '')} keeps them per thread")
        done = replace(again, reason=f"{again.reason}; {'; '.join(why)}")
        return self.copied_around(done, [n for n in names if n in self.private_of], trip)

    def array_reduction(self, loop: ir.Loop) -> tuple[list[ir.Stmt], ir.Loop, list[ir.Stmt], list[ir.Scalar]] | None:
        """``array_reduce.scalarized`` where the loop's directive reduces anything."""
        if not self.reduced(loop):
            return None
        arrays = {d.name: d for d in self.kernel.params + self.kernel.locals if isinstance(d, ir.Array)}
        taken = {d.name for d in self.kernel.params + self.kernel.locals + tuple(self.temps + self.new_arrays)}
        return array_reduce.scalarized(loop, arrays, taken)

    def reduced(self, loop: ir.Loop) -> set[str]:
        """The names the loop's directive reduces (never per-thread copies)."""
        return {n for n, _ in directive_clauses(loop.directive)[0]} if loop.directive else set()

    def per_thread(self, loop: ir.Loop) -> tuple[ir.Loop, list[str]]:
        """``loop`` with the program's arrays its source keeps per thread renamed to new local
        arrays (``fjac`` -> ``fjac_private``): arrays of the kernel's parameters (module arrays
        THREADPRIVATE in the source, say) that its directive loop writes at the same elements in
        every iteration and fills before it reads them. Returns the loop and those locals."""
        if not loop.directive:
            return loop, []
        scratch = set(scratch_arrays(loop, assigned_names(loop.body))) - self.reduced(loop)
        # the routine's own arrays too where the plain copies (privatized) cannot take them: read
        # elsewhere in the routine (dtemp of NPB BT's exact_rhs, PRIVATE in its !$omp parallel),
        # or read where the proof does not reach (their values from before the loop go in)
        own = tuple(d for d in self.kernel.locals if isinstance(d, ir.Array) and d.name in scratch
                    and d.name not in self.copies
                    and (access_count(self.kernel.body, d.name) != access_count(loop.body, d.name)
                         or not privatize.filled_before_read(loop.body, d.name)))
        params = {d.name: d for d in self.kernel.params + own if isinstance(d, ir.Array)
                  and d.name in scratch and all(not isinstance(e, Const) or e.value != "*" for e in d.shape)
                  and privatize.same_writes(loop, d.name)}
        kept = []
        names, on_word = privatize.candidates(loop, params, set(self.enclosing), set(), set(params))
        for name in names:
            taken = {d.name for d in self.kernel.params + self.kernel.locals + tuple(self.new_arrays)}
            local = privatize.fresh_name(f"{name}_private", taken)
            self.new_arrays.append(ir.Array(local, params[name].dtype, params[name].shape))
            self.private_of[local] = name
            if name in on_word:
                self.unproven.add(local)
            loop = ir.rename_array(loop, name, local)  # type: ignore[assignment]
            kept.append(local)
        return loop, kept

    def copied_around(self, loop: ir.Loop, locals_: list[str], trip: Expr) -> list[ir.Stmt]:
        """``loop`` between the copies of each per-thread local's last slot: in from the
        program's array before it (the elements the last iteration leaves alone keep their
        values), out to it after (the values the last iteration left, as the source's serial
        run leaves them)."""
        if not locals_:
            return [loop]
        taken = {d.name for d in self.kernel.params + self.kernel.locals + tuple(self.new_arrays)}
        before: list[ir.Stmt] = []
        after: list[ir.Stmt] = []
        for q in locals_:
            p = self.private_of[q]
            last = tuple(simplify(sub(t, Const(1, DType.I32))) for t in self.copies[q])
            array = next(d for d in self.new_arrays if d.name == q)
            why = f"the last iteration's copy of {p}"
            if q in self.unproven:  # an element an iteration reads before it writes it: the program's
                every = replace(array, shape=array.shape + tuple(self.copies[q]))
                before.append(privatize.copy_nest(q, (), p, (), every, taken, f"every copy of {p}, from {p}",
                                                  loop.line, src_rank=len(array.shape)))
            else:
                before.append(privatize.copy_nest(q, last, p, (), array, taken, f"{why}, from {p}", loop.line))
            after.append(privatize.copy_nest(p, (), q, last, array, taken, f"{why}, to {p}", loop.line))
        some = BinOp("gt", trip, Const(0, DType.I32), DType.BOOL)
        first, final = ir.If(some, tuple(before)), ir.If(some, tuple(after))
        self.copy_stmts += [(first, tuple(locals_)), (final, tuple(locals_))]
        return [first, loop, final]

    def inner_copies(self, loop: ir.Loop) -> tuple[ir.Loop, set[str]]:
        """``loop`` without the copies in and out that inner loops' per-thread locals got around
        them, and those locals: the loop is judged without the copies, which move around it if it
        takes the locals whole."""
        found = [(s, qs) for s in loop.body for c, qs in self.copy_stmts if c is s]
        body = tuple(s for s in loop.body if not any(s is c for c, _ in found))
        return replace(loop, body=body), {q for _, qs in found for q in qs}

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
        assigned = assigned_names(loop.body)
        counts: dict[str, int] = {}
        for s in loop.body:
            for a in ir.walk(s):
                if isinstance(a, ir.Assign) and isinstance(a.target, Var):
                    counts[a.target.name] = counts.get(a.target.name, 0) + 1
        step = loop.step
        steps = constant_of(step)
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
            if names_read(inc) & (assigned | {loop.var} | loop_vars_in(loop.body)):
                continue
            before = {x.name: add(x, mul(k, inc))}
            later = {x.name: add(x, mul(add(k, Const(1, DType.I32)), inc))}
            body = tuple(ir.substitute(t, before if i < pos else later)  # type: ignore[misc]
                         for i, t in enumerate(loop.body) if i != pos)
            after: list[ir.Stmt] = []
            if self.live(x.name, cont):
                after.append(ir.Assign(x, add(x, mul(loop_trip(loop, steps), inc))))
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
            red = reduction_op(loop.body, name)
            if red is not None:
                reductions.append(ir.Reduction(name, red, dtype_of(loop.body, name)))
                notes.append(f"{name} is a {_RED_WORDS[red]} reduction")
            elif name not in rbw:
                if self.live(name, cont):
                    reasons.append(f"{name} is assigned in the loop and used after it")
                else:
                    private.append(name)
            else:
                reasons.append(f"{name} is carried across iterations")
        variant = set(scalars) | loop_vars_in(loop.body) | {v}
        dep, assumed = self.arrays_independent(loop, variant)
        reasons += dep
        notes += assumed
        if loop.reason.startswith("re-rolled"):
            notes.append(loop.reason)
        directive = loop.directive
        scratch = scratch_arrays(loop, set(scalars))
        if directive and scratch:
            # the source's parallel loop relies on per-thread copies of these arrays (PRIVATE or
            # THREADPRIVATE): every iteration writes the same elements of them
            return replace(loop, kind=LoopKind.SERIAL, reductions=(), private=(),
                           reason=f"loop {v} is not parallel: every iteration writes the same elements of "
                                  f"{', '.join(scratch)} (private per thread in the source's "
                                  f"{self.spelt(directive)}, which the translation does not do for arrays)")
        if directive:
            dred, dpriv = directive_clauses(directive)
            known = {r.var for r in reductions}
            reductions += [ir.Reduction(n, op, dtype_of(loop.body, n)) for n, op in dred
                           if n not in known and n in scalars]
            private = sorted(set(private) | (set(dpriv) & set(scalars)))
            reductions = [r for r in reductions if r.var not in private]
            why = f"as asserted by the source ({self.spelt(directive)})" if directive != "do concurrent" else \
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

    def spelt(self, directive: str) -> str:
        """A loop's directive as its source writes it: a C pragma or a Fortran sentinel."""
        return f"#pragma {directive}" if self.kernel.origin.path.endswith(".c") else f"!${directive}"

    def arrays_independent(self, loop: ir.Loop, variant: set[str]) -> tuple[list[str], list[str]]:
        # each distinct access once, in the order first met (a block's element is read many times)
        reads: dict[str, dict[tuple[Expr, ...], None]] = {}
        writes: dict[str, dict[tuple[Expr, ...], None]] = {}
        # a scalar set once from the loop variable stands in the indices for its value (i1 = 2*j1 - d1)
        for s in with_temps(loop.body, index_temps(loop.body, loop.var)):
            for n in ir.walk(s):
                if isinstance(n, ir.Assign):
                    # every read counts, also into a scalar (t = x(i) feeds x(j) = t): a loop that
                    # writes x(j) and reads x(i), i < j, carries a dependence whatever the target
                    index = n.target.index if isinstance(n.target, Load) else ()
                    if isinstance(n.target, Load):
                        writes.setdefault(n.target.array, {})[n.target.index] = None
                    for e in (n.value, *index):
                        for m in ir.walk(e):
                            if isinstance(m, Load):
                                reads.setdefault(m.array, {})[m.index] = None
                elif isinstance(n, (ir.If, ir.While, ir.Loop, ir.ErrorCall)):
                    exprs = [n.cond] if isinstance(n, (ir.If, ir.While)) else list(n.args) \
                        if isinstance(n, ir.ErrorCall) else [n.start, n.stop, n.step]
                    for e in exprs:
                        for m in ir.walk(e):
                            if isinstance(m, Load):
                                reads.setdefault(m.array, {})[m.index] = None
        problems: list[str] = []
        assumed: set[str] = set()
        for arr, ws in writes.items():
            others = [("written", w) for w in ws] + [("read", r) for r in reads.get(arr, {})]
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
                    problems.append(f"{access_text(arr, w)} is written and different iterations may write the "
                                    "same element")
                else:
                    problems.append(f"{access_text(arr, o)} is {kind} and {access_text(arr, w)} written")
        notes = []
        for s in sorted(assumed):
            how = "checked by the routine" if s in self.checked else "BLAS requires nonzero increments"
            notes.append(f"assuming {s} != 0 ({how})")
        if writes and not problems:
            notes.insert(0, "iterations write distinct elements of " + ", ".join(sorted(writes)))
        return problems, notes

    def distinct(self, a: tuple[Expr, ...], b: tuple[Expr, ...], loop: ir.Loop,
                 variant: set[str]) -> tuple[bool, set[str]]:
        step = constant_of(loop.step)
        for ea, eb in zip(a, b, strict=False):
            if not (loop.var in names_read(ea) and loop.var in names_read(eb)):
                continue  # a coefficient of 0 (or none) on one side: this dimension proves nothing
            fa, fb = affine_in(ea, loop.var, variant), affine_in(eb, loop.var, variant)
            if fa is None or fb is None or fa[0] != fb[0]:
                continue
            coef = fa[0]
            cval = constant_of(coef)
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
            dval = constant_of(diff)
            if dval == 0:
                return True, assumed
            if dval is not None and cval is not None and step is not None and dval % (cval * step) != 0:
                return True, assumed
        return False, set()
