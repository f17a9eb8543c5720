"""GO TO, EXIT, CYCLE and RETURN from inside loops, lowered to flags.

A jump sets a flag (``kt_to_<label>``, ``kt_exit_<var>``, ``kt_cycle_<var>``, ``kt_return``)
and the statements it skips are guarded by the flag being clear; where it lands the guard
ends. A DO loop left by a jump runs its remaining iterations doing nothing; a WHILE loop
stops. A backward GO TO makes the statements from its label to the last jump back a WHILE
loop that runs again while the flag is set (the F77 form of a loop). Each flag is cleared
at the start of the statement list it lands in, so a flag that lands inside a loop body
(CYCLE, a jump to the loop's last statement) is private to each iteration and the loop
keeps its parallelism; one that leaves a loop is carried between iterations and the loop
runs serial, as it must.

Refused: a jump into a construct or back to a label outside any loop it could form,
computed and assigned GO TO, and a label both jumped forward and back to.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fparser.two import Fortran2003 as F
from fparser.two.utils import walk

from parsers.base import Unsupported
from translate import ir
from translate.ir import BinOp, Const, DType, Var

if TYPE_CHECKING:
    from parsers.fortran_stmts import StmtLowerer

RETURN = "return"
STOP = "kt_stop"


@dataclass
class Flag:
    name: str
    open: bool = True  # a jump to it may still be lowered: it has not landed


@dataclass
class LoopFrame:
    """An enclosing DO or DO WHILE loop: its construct name and the flags of EXIT and CYCLE."""

    name: str | None
    var: str
    exit: str | None = None
    cycle: str | None = None


@dataclass
class Jumps:
    flags: dict[str, Flag] = field(default_factory=dict)  # by label ("40") or RETURN
    stops: list[ir.HostCall] = field(default_factory=list)  # STOPs inside loops, made at the routine's end
    loops: list[LoopFrame] = field(default_factory=list)
    depth: int = 0  # loops (DO, DO WHILE, formed by GO TO) around the statement being lowered

    def open(self, sl: StmtLowerer, key: str, name: str) -> Flag:
        taken = self.open_names()
        base, k = name, 1
        while name in taken:
            k += 1
            name = f"{base}_{k}"
        flag = Flag(name)
        self.flags[key] = flag
        sl.extra_locals[name] = ir.Scalar(name, DType.I32)
        return flag

    def open_names(self) -> set[str]:
        return {f.name for f in self.flags.values() if f.open}

    @contextmanager
    def loop(self, frame: LoopFrame | None = None) -> Iterator[None]:
        self.depth += 1
        if frame is not None:
            self.loops.append(frame)
        try:
            yield
        finally:
            self.depth -= 1
            if frame is not None:
                self.loops.pop()


def label_of(node: object) -> str | None:
    """The statement label of a statement or of a construct's first statement."""
    item = getattr(node, "item", None)
    if item is not None and getattr(item, "label", None) is not None:
        return str(item.label)
    first = next((c for c in getattr(node, "content", None) or () if not isinstance(c, F.Comment)), None)
    return label_of(first) if first is not None else None


def _targets(node: object) -> set[str]:
    return {str(g.items[0]) for g in walk(node, F.Goto_Stmt)}


def _plan(sl: StmtLowerer, nodes: list[object], skip: set[str]) -> tuple[dict[str, int], dict[str, int]]:
    """The labels of this statement list that jumps reach: forward targets (label -> index)
    and backward ones (label -> index of the last statement that jumps back to it)."""
    stop = next((k for k, n in enumerate(nodes) if isinstance(n, F.Label_Do_Stmt)), len(nodes) - 1)
    own = nodes[: stop + 1]
    targets = [_targets(n) for n in own]
    forward: dict[str, int] = {}
    backward: dict[str, int] = {}
    for a, node in enumerate(own):
        label = label_of(node)
        if label is None or label in skip:
            continue
        before = any(label in t for t in targets[:a])
        after = [j for j in range(a, len(own)) if label in targets[j]]
        if before and after:
            raise Unsupported(f"label {label} at {sl.ex.where(node)} is jumped to both forward and back: cannot be"
                              " lowered")
        if before:
            forward[label] = a
        elif after:
            backward[label] = after[-1]
    return forward, backward


def clear(names: list[str]) -> ir.Expr:
    """No flag in ``names`` is set."""
    conds = [BinOp("eq", Var(n, DType.I32), Const(0, DType.I32), DType.BOOL) for n in names]
    out = conds[0]
    for c in conds[1:]:
        out = BinOp("and", out, c, DType.BOOL)
    return out


def set_flags(stmts: tuple[ir.Stmt, ...] | list[ir.Stmt], names: set[str]) -> list[str]:
    """The flags among ``names`` that ``stmts`` may set, in order of first appearance."""
    found: list[str] = []
    for s in stmts:
        for n in ir.walk(s):
            if isinstance(n, ir.Assign) and isinstance(n.target, Var) and n.target.name in names \
                    and n.value == Const(1, DType.I32) and n.target.name not in found:
                found.append(n.target.name)
    return found


def lower_block(sl: StmtLowerer, nodes: list[object], skip: frozenset[str] = frozenset()) -> tuple[ir.Stmt, ...]:
    """A statement list, with the jumps that land in it resolved."""
    jumps = sl.jumps
    forward, backward = _plan(sl, nodes, set(skip))
    landing = {a: label for label, a in forward.items()}
    init = [ir.Assign(Var(jumps.open(sl, label, f"kt_to_{label}").name, DType.I32), Const(0, DType.I32))
            for label in forward]
    out: list[ir.Stmt] = []
    group: list[ir.Stmt] = []
    pending: list[str] = []

    def close() -> None:
        out.extend([ir.If(clear(pending), tuple(group))] if pending and group else group)
        group.clear()

    i = 0
    while i < len(nodes):
        node = nodes[i]
        if i in landing:
            close()
            flag = jumps.flags[landing[i]]
            flag.open = False
            if flag.name in pending:
                pending.remove(flag.name)
        label = label_of(node)
        if label in backward:
            stmts = _backward_loop(sl, nodes[i: backward[label] + 1], label, skip)
            i = backward[label] + 1
        elif isinstance(node, F.Label_Do_Stmt):  # DO loops sharing one terminal label
            stmts = sl.flush(sl.do_loop(node, nodes[i + 1:]))
            i = len(nodes)
        else:
            stmts = sl.flush(sl.stmt(node))
            i += 1
        group.extend(stmts)
        setting = set_flags(stmts, jumps.open_names())
        if setting:  # what follows is skipped once one of these is set: test them again
            close()
            pending.extend(n for n in setting if n not in pending)
    close()
    return tuple(init + out)


def _backward_loop(sl: StmtLowerer, nodes: list[object], label: str, skip: frozenset[str]) -> tuple[ir.Stmt, ...]:
    """``label`` ... ``GO TO label``: a WHILE loop that runs again while a jump back was taken."""
    jumps = sl.jumps
    flag = jumps.open(sl, label, f"kt_to_{label}")
    var = Var(flag.name, DType.I32)
    line = sl.orig_line(getattr(getattr(nodes[0], "item", None), "span", (sl.ex.line,))[0])
    with jumps.loop():
        body = lower_block(sl, nodes, skip | {label})
    flag.open = False
    return (ir.Assign(var, Const(1, DType.I32)),
            ir.While(BinOp("ne", var, Const(0, DType.I32), DType.BOOL),
                     (ir.Assign(var, Const(0, DType.I32)), *body), line))


def goto(sl: StmtLowerer, node: object) -> tuple[ir.Stmt, ...]:
    label = str(node.items[0])  # type: ignore[attr-defined]
    flag = sl.jumps.flags.get(label)
    if flag is None or not flag.open:
        raise Unsupported(f"GO TO {label} at {sl.ex.where(node)} jumps into a construct or back to a statement"
                          " outside the loop it would form: cannot be lowered")
    return (ir.Assign(Var(flag.name, DType.I32), Const(1, DType.I32)),)


def ret(sl: StmtLowerer, node: object) -> tuple[ir.Stmt, ...]:
    """RETURN: the routine's early return outside loops; inside a loop, a jump to its end."""
    flag = sl.jumps.flags.get(RETURN)
    if sl.jumps.depth == 0 or flag is None:
        return (ir.Return(),)
    return (ir.Assign(Var(flag.name, DType.I32), Const(1, DType.I32)),)


def routine_body(sl: StmtLowerer, nodes: list[object]) -> tuple[ir.Stmt, ...]:
    """A routine's executable statements; a RETURN inside a loop skips the rest, a STOP inside
    a loop too, and the routine then stops on the host."""
    flag = sl.jumps.open(sl, RETURN, "kt_return")
    body = lower_block(sl, nodes)
    if sl.room_checks:  # a call in a loop made some other way (array syntax): no place to check first
        raise Unsupported(sl.room_checks[0].refusal)
    flag.open = False
    if not set_flags(body, {flag.name}):
        del sl.extra_locals[flag.name]
        return body
    code = Var(STOP, DType.I32)
    stops: list[ir.Stmt] = [ir.If(BinOp("eq", code, Const(k, DType.I32), DType.BOOL), (stmt,))
                            for k, stmt in enumerate(sl.jumps.stops, start=1)]
    first: list[ir.Stmt] = [ir.Assign(code, Const(0, DType.I32))] if stops else []
    return (*first, ir.Assign(Var(flag.name, DType.I32), Const(0, DType.I32)), *body, *stops)


def stop_in_loop(sl: StmtLowerer, stmt: ir.HostCall) -> tuple[ir.Stmt, ...]:
    """A STOP inside a loop, where device code runs and cannot end the program: it records
    which STOP it is in ``kt_stop`` and leaves like a RETURN; the routine makes the STOP on the
    host at its end. A STOP whose code is not a constant stays (the routine is refused)."""
    flag = sl.jumps.flags.get(RETURN)
    if sl.jumps.depth == 0 or flag is None or not all(isinstance(a, Const) for a in stmt.args):
        return (stmt,)
    sl.jumps.stops.append(stmt)
    sl.extra_locals[STOP] = ir.Scalar(STOP, DType.I32)
    return (ir.Assign(Var(STOP, DType.I32), Const(len(sl.jumps.stops), DType.I32)),
            ir.Assign(Var(flag.name, DType.I32), Const(1, DType.I32)))


def stops_in_inlined(sl: StmtLowerer, body: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
    """An inlined callee's STOPs, where the call is inside a loop: each becomes the caller's
    STOP inside a loop, then a RETURN from the callee (which skips the callee's rest)."""
    if sl.jumps.depth == 0:
        return body

    def rewrite(stmts: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
        out: list[ir.Stmt] = []
        for s in stmts:
            if isinstance(s, ir.HostCall) and s.kind == "stop":
                made = stop_in_loop(sl, s)
                out.extend(made if made == (s,) else (*made, ir.Return()))
            elif isinstance(s, ir.If):
                out.append(ir.If(s.cond, rewrite(s.then), rewrite(s.orelse)))
            else:
                out.append(s)
        return tuple(out)

    return rewrite(body)


def exit_cycle(sl: StmtLowerer, node: object) -> tuple[ir.Stmt, ...]:
    kind, name = node.items  # type: ignore[attr-defined]
    wanted = str(name).lower() if name is not None else None
    frame = next((f for f in reversed(sl.jumps.loops) if wanted is None or f.name == wanted), None)
    if frame is None:
        raise Unsupported(f"{kind} at {sl.ex.where(node)} names no enclosing DO loop")
    key = f"{kind.lower()}:{id(frame)}"
    flag = sl.jumps.flags.get(key)
    if flag is None:
        flag = sl.jumps.open(sl, key, f"kt_{kind.lower()}_{frame.var}")
        if kind.upper() == "EXIT":
            frame.exit = key
        else:
            frame.cycle = key
    return (ir.Assign(Var(flag.name, DType.I32), Const(1, DType.I32)),)


def finish_loop(sl: StmtLowerer, frame: LoopFrame,
                body: tuple[ir.Stmt, ...]) -> tuple[tuple[ir.Stmt, ...], tuple[ir.Stmt, ...], list[str]]:
    """A loop body with its CYCLE landed, and the flags that leave the loop: (statements before
    the loop, the body, the flags to stop on)."""
    jumps = sl.jumps
    before: list[ir.Stmt] = []
    if frame.cycle is not None:
        cyc = jumps.flags[frame.cycle]
        cyc.open = False
        body = (ir.Assign(Var(cyc.name, DType.I32), Const(0, DType.I32)), *body)
    if frame.exit is not None:
        ext = jumps.flags[frame.exit]
        before.append(ir.Assign(Var(ext.name, DType.I32), Const(0, DType.I32)))
    leaving = set_flags(body, jumps.open_names())
    if frame.exit is not None:
        jumps.flags[frame.exit].open = False
    return tuple(before), body, leaving


def returns_to_flag(body: tuple[ir.Stmt, ...], name: str) -> tuple[ir.Stmt, ...]:
    """An inlined callee's RETURNs (outside loops: those inside are flags already) as the flag
    ``name``: what follows one is skipped. The flag is cleared first."""
    flag = Var(name, DType.I32)

    def strip(stmts: tuple[ir.Stmt, ...]) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        for k, s in enumerate(stmts):
            if isinstance(s, ir.Return):
                out.append(ir.Assign(flag, Const(1, DType.I32)))
                return out  # the rest cannot run
            if isinstance(s, ir.If) and any(isinstance(n, ir.Return) for n in ir.walk(s)):
                out.append(ir.If(s.cond, tuple(strip(s.then)), tuple(strip(s.orelse))))
                rest = strip(stmts[k + 1:])
                if rest:
                    out.append(ir.If(clear([name]), tuple(rest)))
                return out
            if any(isinstance(n, ir.Return) for n in ir.walk(s)):
                raise Unsupported("a RETURN inside a loop of an inlined callee")
            out.append(s)
        return out

    return (ir.Assign(flag, Const(0, DType.I32)), *strip(body))
