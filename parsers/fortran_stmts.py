"""Lowering of Fortran executable statements (fparser2 nodes) to IR statements.

A handler table keyed by fparser2 node class; anything else raises
``Unsupported`` naming the construct and file:line, which turns the routine into
an ``ir.Opaque``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from fparser.two import Fortran2003 as F
from fparser.two import Fortran2008 as F2008
from fparser.two.utils import walk

from parsers import fortran_arrays as arrays
from parsers import fortran_complex as cplx
from parsers import fortran_jumps as jumps
from parsers.base import Unsupported
from parsers.fortran_expr import ExprLowerer, SrcLoop, coerce
from parsers.fortran_inline import Inliner, RoomCheck
from parsers.fortran_scope import construct_name
from translate import ir
from translate.ir import BinOp, Call, Const, DType, Expr, Load, UnOp, Var
from translate.simplify import add, const_int, mul, simplify, sub

_ERROR_HANDLERS = ("xerbla",)
_DIRECTIVE = re.compile(r"^\s*[!*cC]\$(omp|acc)\b\s*&?\s*(.*)$", re.I)
_LOOP_DIRECTIVE = re.compile(
    r"^(omp\s+(parallel\s+do|do|target\s+teams\s+distribute(\s+parallel\s+do)?|simd|parallel\s+do\s+simd)"
    r"|acc\s+(parallel\s+loop|kernels\s+loop|loop|serial\s+loop))\b", re.I)

Resolver = Callable[[str], "ir.Kernel | ir.Opaque | None"]


def collapsed(loop: ir.Loop) -> ir.Loop:
    """A loop whose directive collapses n > 1 loops: the loop nested right inside it (its whole
    body) carries the source's assertion too, as ``collapse(n - 1)``."""
    m = re.search(r"\bcollapse\s*\(\s*(\d+)\s*\)", loop.directive or "")
    if m is None or int(m.group(1)) < 2 or len(loop.body) != 1 or not isinstance(loop.body[0], ir.Loop) \
            or loop.body[0].directive:
        return loop
    assert loop.directive is not None
    inner = f"{loop.directive[:m.start()]}collapse({int(m.group(1)) - 1}){loop.directive[m.end():]}"
    return replace(loop, body=(collapsed(replace(loop.body[0], directive=inner)),))


@dataclass
class StmtLowerer(Inliner):
    ex: ExprLowerer
    lines: list[str]  # the (preprocessed) source text the parser saw
    orig_line: Callable[[int], int]
    resolve: Resolver
    module_of: Callable[[str], str] = lambda name: ""  # the module a routine lives in ("" external)
    output_only: Callable[[str], bool] = lambda name: False  # a routine whose only effect is output
    notes: list[str] = field(default_factory=list)
    prelude: list[ir.Stmt] = field(default_factory=list)
    host_globals: dict[str, str] = field(default_factory=dict)  # globals changed by host calls -> the callee
    extra_locals: dict[str, ir.Decl] = field(default_factory=dict)
    loop_names: set[str] = field(default_factory=set)  # loop variables made for array syntax
    jumps: jumps.Jumps = field(default_factory=jumps.Jumps)
    room_checks: list[RoomCheck] = field(default_factory=list)  # of calls inside the loop being lowered
    inlined: int = 0

    def __post_init__(self) -> None:
        self.ex.call_function = self.call_function
        self.ex.array_intrinsic = self.array_intrinsic

    def array_intrinsic(self, name: str, subs: list[object]) -> Expr:
        if name in arrays.REDUCTIONS:
            return arrays.reduction(self, name, subs)
        return arrays.inquiry(self, name, subs)

    # --------------------------------------------------------------- blocks

    def block(self, nodes: list[object]) -> tuple[ir.Stmt, ...]:
        return jumps.lower_block(self, list(nodes))

    def flush(self, stmts: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
        pre, self.prelude = tuple(self.prelude), []
        return pre + stmts

    def stmt(self, node: object) -> tuple[ir.Stmt, ...]:
        span = getattr(getattr(node, "item", None), "span", None)
        if span:
            self.ex.line = span[0]
        handler = next((h for c in type(node).__mro__ if (h := _STMT_HANDLERS.get(c)) is not None), None)
        if handler is None:
            raise Unsupported(f"{construct_name(node)} at {self.ex.where(node)} cannot be lowered")
        return handler(self, node)

    # ----------------------------------------------------------- statements

    def nothing(self, node: object) -> tuple[ir.Stmt, ...]:
        return ()

    def assign(self, node: object) -> tuple[ir.Stmt, ...]:
        lhs, _, rhs = node.items  # type: ignore[attr-defined]
        base = lhs if isinstance(lhs, F.Name) else lhs.items[0] if isinstance(lhs, F.Part_Ref) else None
        if base is not None and (sym := self.ex.scope.lookup(str(base).lower())) is not None and sym.complex:
            return self.complex_assign(lhs, rhs, sym)
        if isinstance(lhs, F.Part_Ref) and lhs.items[1] is not None and \
                any(isinstance(s, F.Subscript_Triplet) for s in lhs.items[1].items):
            return arrays.assignment(self, lhs, rhs)
        if isinstance(lhs, F.Name):
            name = str(lhs).lower()
            sym = self.ex.scope.lookup(name)
            if name in self.ex.loop_env:
                raise Unsupported(f"assignment to DO variable {name} at {self.ex.where()}")
            if sym is not None and sym.dims is not None:
                if sym.dtype is DType.CHAR:
                    raise Unsupported(f"character array assignment at {self.ex.where()} cannot be lowered")
                return arrays.assignment(self, lhs, rhs)
            if arrays.is_array_valued(self, rhs):
                raise Unsupported(f"array value assigned to the scalar {name} at {self.ex.where()}")
            if sym is not None and sym.saved is not None:
                raise Unsupported(f"assignment at {self.ex.where()} to '{name}', initialised at {sym.saved}"
                                  " (implicit SAVE: its value persists between calls)")
            if sym is not None and sym.const is not None:
                raise Unsupported(f"assignment to PARAMETER {name} at {self.ex.where()}")
            self.ex.used.add(name)
            target: Var | Load = Var(name, self.ex.scope.type_of(name))
        elif isinstance(lhs, F.Part_Ref):
            name = str(lhs.items[0]).lower()
            sym = self.ex.scope.lookup(name)
            if sym is None or sym.dims is None:
                raise Unsupported(f"statement function or substring '{lhs}' at {self.ex.where()} cannot be lowered")
            target = self.ex.load(name, sym, list(lhs.items[1].items))
        else:
            raise Unsupported(f"assignment to '{lhs}' at {self.ex.where()} cannot be lowered")
        if cplx.is_complex(self.ex, rhs):  # a COMPLEX value assigned to a real or integer: its real part
            value = cplx.cexpr(self.ex, rhs, self.ex.complex_dtype(rhs))[0]
        else:
            value = self.ex.expr(rhs)
        if isinstance(target, Var):
            self.ex.finished.pop(target.name, None)  # a DO variable given a new value
        if target.dtype == DType.CHAR and value.dtype != DType.CHAR:
            raise Unsupported(f"character assignment at {self.ex.where()} cannot be lowered")
        return (ir.Assign(target, coerce(value, target.dtype)),)

    def complex_assign(self, lhs: object, rhs: object, sym: object) -> tuple[ir.Stmt, ...]:
        """A COMPLEX variable or element assigned its two parts; the real part through a
        temporary where the imaginary part reads it (``z = z * w``)."""
        name = str(lhs if isinstance(lhs, F.Name) else lhs.items[0]).lower()  # type: ignore[attr-defined]
        if isinstance(lhs, F.Name):
            if sym.dims is not None:  # type: ignore[attr-defined]
                raise Unsupported(f"COMPLEX array assignment to {name} at {self.ex.where()} cannot be lowered")
            re_t, im_t = cplx.parts_of(self.ex, name, sym)  # type: ignore[arg-type]
        else:
            re_t, im_t = cplx.element(self.ex, name, sym, list(lhs.items[1].items))  # type: ignore[arg-type,attr-defined]
        re_v, im_v = cplx.cexpr(self.ex, rhs, re_t.dtype)
        if re_t not in list(ir.walk(im_v)):
            return (ir.Assign(re_t, re_v), ir.Assign(im_t, im_v))
        self.inlined += 1
        tmp = Var(f"kt_re{self.inlined}", re_t.dtype)
        self.extra_locals[tmp.name] = ir.Scalar(tmp.name, tmp.dtype)
        return (ir.Assign(tmp, re_v), ir.Assign(im_t, im_v), ir.Assign(re_t, tmp))

    def if_stmt(self, node: object) -> tuple[ir.Stmt, ...]:
        cond_node, action = node.items  # type: ignore[attr-defined]
        cond = self.cond(cond_node)
        pre = tuple(self.prelude)  # what the condition needs computed (a reduction) comes first
        self.prelude = []
        self.ex.guards.append(cond)
        try:
            body = self.flush(self.stmt(action))
        finally:
            self.ex.guards.pop()
        return pre + (ir.If(cond, body),)

    def cond(self, node: object) -> Expr:
        c = self.ex.expr(node)
        if c.dtype != DType.BOOL:
            raise Unsupported(f"non-logical IF condition at {self.ex.where()}")
        return simplify(c)

    def construct_arms(self, node: object, openers: tuple[type, ...], plain: type,
                       end: type) -> list[tuple[object | None, list[object]]]:
        """The arms of an IF or WHERE construct: (the condition node, None for the plain ELSE or
        ELSEWHERE; the statements of the arm)."""
        arms: list[tuple[object | None, list[object]]] = []
        for child in node.children:  # type: ignore[attr-defined]
            if isinstance(child, openers):
                arms.append((child, []))
            elif isinstance(child, plain):
                arms.append((None, []))
            elif isinstance(child, end) or not arms:
                continue
            else:
                arms[-1][1].append(child)
        return arms

    def if_construct(self, node: object) -> tuple[ir.Stmt, ...]:
        arms: list[tuple[Expr | None, list[object]]] = []
        for head, nodes in self.construct_arms(node, (F.If_Then_Stmt, F.Else_If_Stmt), F.Else_Stmt, F.End_If_Stmt):
            if head is not None:
                self.ex.line = head.item.span[0]  # type: ignore[attr-defined]
            arms.append((self.cond(head.items[0]) if head is not None else None, nodes))  # type: ignore[attr-defined]
        pre = tuple(self.prelude)
        self.prelude = []
        return pre + (self._arms(arms, 0),)

    def _arms(self, arms: list[tuple[Expr | None, list[object]]], k: int) -> ir.If:
        cond, nodes = arms[k]
        assert cond is not None
        negs = [UnOp("not", c, DType.BOOL) for c, _ in arms[:k] if c is not None]
        self.ex.guards.extend([*negs, cond])
        then = self.block(nodes)
        del self.ex.guards[len(self.ex.guards) - len(negs) - 1:]
        orelse: tuple[ir.Stmt, ...] = ()
        if k + 1 < len(arms):
            nxt_cond, nxt_nodes = arms[k + 1]
            if nxt_cond is None:
                negs = [UnOp("not", c, DType.BOOL) for c, _ in arms[: k + 1] if c is not None]
                self.ex.guards.extend(negs)
                orelse = self.block(nxt_nodes)
                del self.ex.guards[len(self.ex.guards) - len(negs):]
            else:
                orelse = (self._arms(arms, k + 1),)
        return ir.If(cond, then, orelse)

    # ---------------------------------------------------------------- loops

    def do_construct(self, node: object) -> tuple[ir.Stmt, ...]:
        children = list(node.children)  # type: ignore[attr-defined]
        k = next(i for i, c in enumerate(children) if isinstance(c, (F.Label_Do_Stmt, F.Nonlabel_Do_Stmt)))
        return self.do_loop(children[k], children[k + 1:])

    def do_loop(self, header: object, body_nodes: list[object]) -> tuple[ir.Stmt, ...]:
        if self.jumps.depth > 0:
            return self._do_loop(header, body_nodes)
        return self.checked(self._do_loop(header, body_nodes))

    def _do_loop(self, header: object, body_nodes: list[object]) -> tuple[ir.Stmt, ...]:
        self.ex.line = header.item.span[0]  # type: ignore[attr-defined]
        src_line = self.ex.line
        ctrl = next((i for i in header.items if isinstance(i, F.Loop_Control)), None)  # type: ignore[attr-defined]
        if ctrl is None:
            raise Unsupported(f"DO without loop control at {self.ex.where()} cannot be lowered")
        body_nodes = [b for b in body_nodes if not isinstance(b, F.End_Do_Stmt)]
        directive = self.directive(src_line)
        name = getattr(header.item, "name", None)  # type: ignore[attr-defined]
        if isinstance(ctrl.items[3], F.Forall_Header):
            specs = list(ctrl.items[3].items[0].items)
            if ctrl.items[3].items[1] is not None:
                raise Unsupported(f"DO CONCURRENT with a mask at {self.ex.where()} cannot be lowered")
            controls = [(str(s.items[0]).lower(), s.items[1], s.items[2], s.items[3]) for s in specs]
            directive = "do concurrent"
        elif ctrl.items[1] is None:
            return self.do_while(ctrl, body_nodes, src_line, name)
        else:
            var, bounds = ctrl.items[1]
            controls = [(str(var).lower(), bounds[0], bounds[1], bounds[2] if len(bounds) > 2 else None)]
        frame = jumps.LoopFrame(name.lower() if name else None, controls[-1][0])
        return (collapsed(self._nest(controls, body_nodes, directive, src_line, frame)),)

    def do_while(self, ctrl: object, body_nodes: list[object], src_line: int,
                 name: str | None = None) -> tuple[ir.Stmt, ...]:
        """``DO WHILE (cond)``; the condition is evaluated before each iteration, so whatever
        it needs computed (a reduction) is computed before the loop and again at the end of
        each iteration."""
        cond_node = ctrl.items[0]  # type: ignore[attr-defined]
        if cond_node is None:
            raise Unsupported(f"DO WHILE without a condition at {self.ex.where()} cannot be lowered")
        cond = self.cond(cond_node)
        pre = tuple(self.prelude)
        self.prelude = []
        frame = jumps.LoopFrame(name.lower() if name else None, "while")
        with self.jumps.loop(frame):
            body = self.block(body_nodes)
        before, body, leaving = jumps.finish_loop(self, frame, body)
        if leaving:
            cond = BinOp("and", cond, jumps.clear(leaving), DType.BOOL)
        return before + pre + (ir.While(cond, body + pre, self.orig_line(src_line)),)

    def _nest(self, controls: list[tuple[str, object, object, object]], body_nodes: list[object],
              directive: str | None, src_line: int, frame: jumps.LoopFrame) -> ir.Loop:
        var, first_n, last_n, step_n = controls[0]
        if not self.ex.scope.type_of(var).is_int:
            raise Unsupported(f"DO loop with non-integer variable {var} at {self.ex.where()} cannot be lowered")
        first = self._int(self.ex.expr(first_n))
        last = self._int(self.ex.expr(last_n))
        step = self._int(self.ex.expr(step_n)) if step_n is not None else Const(1, DType.I32)
        stepc = const_int(step)
        one = Const(1, DType.I32)
        if stepc == 0:
            raise Unsupported(f"DO loop with zero step at {self.ex.where()}")
        saved = self.ex.loop_env.get(var)
        self.ex.finished.pop(var, None)
        if stepc is not None:
            start, stop = sub(first, one), (last if stepc > 0 else sub(last, Const(2, DType.I32)))
            ir_step: Expr = Const(stepc, DType.I32)
            self.ex.loop_env[var] = add(Var(var, DType.I32), one)
        else:
            trip = BinOp("div", add(sub(last, first), step), step, DType.I32)
            start, ir_step = Const(0, DType.I32), one
            stop = Call("max", (Const(0, DType.I32), simplify(trip)), DType.I32)
            self.ex.loop_env[var] = add(first, mul(Var(var, DType.I32), step))
        self.ex.src_loops.append(SrcLoop(var, first, last, step))
        try:
            if len(controls) > 1:
                body: tuple[ir.Stmt, ...] = (self._nest(controls[1:], body_nodes, directive, src_line, frame),)
            else:
                with self.jumps.loop(frame):
                    body = self.block(body_nodes)
                before, body, leaving = jumps.finish_loop(self, frame, body)
                self.prelude.extend(before)
                if leaving:
                    body = (ir.If(jumps.clear(leaving), body),)
        finally:
            self.ex.src_loops.pop()
            if saved is None:
                self.ex.loop_env.pop(var, None)
                self.ex.finished[var] = str(self.orig_line(src_line))
            else:
                self.ex.loop_env[var] = saved
        return ir.Loop(var, simplify(start), simplify(stop), ir_step, body, directive=directive,
                       line=self.orig_line(src_line))

    def _int(self, e: Expr) -> Expr:
        if not e.dtype.is_int:
            raise Unsupported(f"non-integer loop bound at {self.ex.where()} cannot be lowered")
        return simplify(e)

    def directive(self, line: int) -> str | None:
        """An ``!$omp``/``!$acc`` loop directive on the lines just above ``line``."""
        found: list[re.Match[str]] = []
        k = line - 2
        while k >= 0 and k < len(self.lines):
            text = self.lines[k].strip()
            m = _DIRECTIVE.match(text)
            if m and m.group(2).lower().startswith("end"):
                break
            if m:
                found.insert(0, m)
            elif text and not text.startswith("!") and not self._fixed_comment(k):
                break
            elif found:
                break
            k -= 1
        if not found:
            return None
        body = " ".join(m.group(2).strip().strip("&").strip() for m in found)
        text = re.sub(r"\s+", " ", f"{found[0].group(1)} {body}").strip().lower()
        return text if _LOOP_DIRECTIVE.match(text) else None

    def _fixed_comment(self, k: int) -> bool:
        raw = self.lines[k]
        return bool(raw) and raw[0] in "cC*"

    # ---------------------------------------------------------------- calls

    def call(self, node: object) -> tuple[ir.Stmt, ...]:
        name = str(node.items[0]).lower()  # type: ignore[attr-defined]
        args = list(node.items[1].items) if node.items[1] is not None else []  # type: ignore[attr-defined]
        if name in _ERROR_HANDLERS:
            return (ir.ErrorCall(name, tuple(self.ex.expr(a) for a in args)),)
        try:
            stmts, _ = self.inline(name, args, node, function=False)
            return stmts
        except Unsupported as why:
            try:
                return (self.host_call(name, args, node, why.reason),)
            except Unsupported:
                if not self.output_only(name):
                    raise
        # a debug report passed device arrays: leaving it out changes no result
        self.notes.append(f"CALL {name.upper()} at {self.ex.where(node)} only writes output and cannot stay on the"
                          " host: the translation does not make it")
        return ()

    def host_call(self, name: str, args: list[object], node: object, why_not_inlined: str) -> ir.HostCall:
        """A call that is not inlined stays a call on the host side when it passes scalars only
        (a timer, an I/O helper); its variable arguments count as written unless the callee's
        signature says otherwise. One that passes arrays, or that changes globals the caller
        uses (a lowered callee's COMMON or module variables), cannot stay outside the translation."""
        callee = self.resolve(name)
        signature = callee if isinstance(callee, ir.Kernel) else getattr(callee, "signature", None)
        dummies = [p for p in signature.params if p.binding is None] if signature is not None else None
        values: list[Expr] = []
        writes: list[str] = []
        for k, a in enumerate(args):
            if isinstance(a, F.Actual_Arg_Spec):
                raise Unsupported(f"{why_not_inlined}; a call with keyword arguments cannot stay on the host")
            if isinstance(a, F.Name) and (sym := self.ex.scope.lookup(str(a).lower())) is not None \
                    and sym.dims is not None:
                raise Unsupported(f"{why_not_inlined}; it is passed the array {str(a).lower()}, so it cannot"
                                  " stay on the host")
            value = self.ex.expr(a)
            if any(isinstance(n, Load) for n in ir.walk(value)):
                raise Unsupported(f"{why_not_inlined}; it is passed an array element, so it cannot stay on the host")
            values.append(value)
            param = dummies[k] if dummies is not None and k < len(dummies) else None
            if isinstance(value, Var) and (param is None or param.intent.writes):
                writes.append(value.name)
        if isinstance(callee, ir.Kernel):
            self.host_globals.update({p.name: name for p in callee.params if p.binding is not None})
        self.ex.line = getattr(getattr(node, "item", None), "span", (self.ex.line,))[0]
        return ir.HostCall("call", name, tuple(values), tuple(writes), self.module_of(name),
                           self.orig_line(self.ex.line))

    def allocate(self, node: object) -> tuple[ir.Stmt, ...]:
        """ALLOCATE of a local array: its bounds from here on (the translation allocates it at
        entry). Allocating a global changes the program's state: not lowered."""
        for alloc in node.items[1].items:  # type: ignore[attr-defined]
            name = str(alloc.items[0]).lower()
            sym = self.ex.scope.lookup(name)
            if sym is None or sym.dims is None or not isinstance(alloc.items[0], F.Name):
                raise Unsupported(f"ALLOCATE of '{alloc.items[0]}' at {self.ex.where(node)} cannot be lowered")
            if sym.binding is not None or sym.is_arg:
                raise Unsupported(f"ALLOCATE of {name} at {self.ex.where(node)}: it allocates an array the caller"
                                  " sees")
            bounds = getattr(alloc.items[1], "items", ())
            if len(bounds) != len(sym.dims):
                raise Unsupported(f"ALLOCATE of {name} at {self.ex.where(node)} with {len(bounds)} bounds")
            sym.dims = [(self.ex.spec_expr(lo) if lo is not None else Const(1, DType.I32), self.ex.spec_expr(hi))
                        for lo, hi in (b.items for b in bounds)]
            sym.deferred = False
        return ()

    def deallocate(self, node: object) -> tuple[ir.Stmt, ...]:
        for n in walk(node.items[0], F.Name):  # type: ignore[attr-defined]
            sym = self.ex.scope.lookup(str(n).lower())
            if sym is not None and (sym.binding is not None or sym.is_arg):
                raise Unsupported(f"DEALLOCATE of {n} at {self.ex.where(node)}: it frees an array the caller sees")
        return ()

    def where_stmt(self, node: object) -> tuple[ir.Stmt, ...]:
        mask, stmt = node.items  # type: ignore[attr-defined]
        return arrays.where(self, [(mask, [stmt])])

    def where_construct(self, node: object) -> tuple[ir.Stmt, ...]:
        arms = self.construct_arms(node, (F.Where_Construct_Stmt, F.Masked_Elsewhere_Stmt), F.Elsewhere_Stmt,
                                   F.End_Where_Stmt)
        if arms and arms[0][0] is not None:
            self.ex.line = arms[0][0].item.span[0]  # type: ignore[attr-defined]
        return arrays.where(self, [(head.items[0] if head is not None else None, nodes)  # type: ignore[attr-defined]
                                   for head, nodes in arms])

    def output(self, node: object) -> tuple[ir.Stmt, ...]:
        """WRITE/PRINT of text and values: printed where the code runs (list-directed)."""
        if isinstance(node, F.Print_Stmt):
            stream, items = "stdout", node.items[1]  # type: ignore[attr-defined]
        else:
            control, items = node.items  # type: ignore[attr-defined]
            specs = list(getattr(control, "items", ()))
            unit = next((str(s.items[1]) for s in specs if s.items[0] is None or str(s.items[0]).upper() == "UNIT"),
                        "*")
            if unit not in ("*", "6", "0"):
                raise Unsupported(f"WRITE to unit {unit} (a file) at {self.ex.where(node)} cannot be lowered")
            stream = "stderr" if unit == "0" else "stdout"
        values: list[Expr] = []
        for item in (getattr(items, "items", ()) if items is not None else ()):
            if isinstance(item, F.Io_Implied_Do):
                raise Unsupported(f"output of an implied-DO list at {self.ex.where(node)} cannot be lowered")
            if cplx.is_complex(self.ex, item):
                values.extend(cplx.cexpr(self.ex, item, self.ex.complex_dtype(item)))
                continue
            values.append(self.ex.expr(item))
        return (ir.HostCall("print", stream, tuple(values), line=self.orig_line(self.ex.line)),)

    def stop(self, node: object) -> tuple[ir.Stmt, ...]:
        code = node.items[1]  # type: ignore[attr-defined]
        args: tuple[Expr, ...] = ()
        if isinstance(code, F.Stop_Code):
            args = (Const(int(str(code)), DType.I32),)
        elif code is not None:
            args = (self.ex.expr(code),)
        if isinstance(node, F2008.Error_Stop_Stmt) and not any(a.dtype.is_int for a in args):
            args = (*args, Const(1, DType.I32))
        return jumps.stop_in_loop(self, ir.HostCall("stop", "stop", args, line=self.orig_line(self.ex.line)))


_STMT_HANDLERS: MappingProxyType[type, Callable[[StmtLowerer, object], tuple[ir.Stmt, ...]]] = MappingProxyType({
    F.Comment: StmtLowerer.nothing,
    F.Continue_Stmt: StmtLowerer.nothing,
    F.Return_Stmt: jumps.ret,
    F.Goto_Stmt: jumps.goto,
    F.Exit_Stmt: jumps.exit_cycle,
    F.Cycle_Stmt: jumps.exit_cycle,
    F.Assignment_Stmt: StmtLowerer.assign,
    F.If_Stmt: StmtLowerer.if_stmt,
    F.If_Construct: StmtLowerer.if_construct,
    F.Block_Label_Do_Construct: StmtLowerer.do_construct,
    F.Block_Nonlabel_Do_Construct: StmtLowerer.do_construct,
    F.Call_Stmt: StmtLowerer.call,
    F.Write_Stmt: StmtLowerer.output,
    F.Print_Stmt: StmtLowerer.output,
    F.Stop_Stmt: StmtLowerer.stop,
    F2008.Error_Stop_Stmt: StmtLowerer.stop,
    F.Format_Stmt: StmtLowerer.nothing,
    F.Allocate_Stmt: StmtLowerer.allocate,
    F.Where_Stmt: StmtLowerer.where_stmt,
    F.Where_Construct: StmtLowerer.where_construct,
    F.Deallocate_Stmt: StmtLowerer.deallocate,
})

