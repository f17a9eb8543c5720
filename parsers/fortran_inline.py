"""Calls of other routines inlined into the caller (a mixin of
:class:`parsers.fortran_stmts.StmtLowerer`): the callee's body in place of the call, its
locals and loop variables renamed, the arrays passed mapped onto the caller's, the globals it
reads made the caller's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from fparser.two import Fortran2003 as F

from parsers import fortran_jumps as jumps
from parsers.base import Unsupported
from parsers.fortran_expr import coerce
from translate import ir, irquery
from translate.ir import Const, DType, Expr, Load, Var
from translate.simplify import add, simplify, sub

_INLINE_MAX_STMTS = 60  # a callee without loops or arrays (a random-number step, twice)
_INLINE_MAX_LOOP_STMTS = 100  # a callee with loops, passed whole arrays: inlined up to this many statements
_INLINE_MAX_ARRAY_STMTS = 300  # a callee without loops passed arrays (an unrolled 5x5 block solve)


@dataclass(frozen=True)
class RoomCheck:
    """What an element argument's room in its dimension must be (``room >= 0``) for the callee
    to stay inside it, where that is not known when translating: the translation checks it
    before the outermost loop around the call and stops with ``message`` where it fails
    (``refusal``: why the call is not inlined where the check cannot come first)."""

    room: Expr
    refusal: str
    message: str


class Inliner:
    """Inlining for the statement lowerer; it reads the lowerer's state (``ex``, ``resolve``,
    ``notes``, ``prelude``, ...)."""

    def call_function(self, name: str, args: list[object], node: object) -> Expr:
        stmts, value = self.inline(name, args, node, function=True)
        self.prelude.extend(stmts)
        assert value is not None
        return value

    def inline(self, name: str, args: list[object], node: object,
               function: bool) -> tuple[tuple[ir.Stmt, ...], Expr | None]:
        """The callee's body in place of the call: small routines without loops, and routines with
        loops up to a size where the caller passes whole arrays laid out as the callee declares
        them (so every element keeps its position). Its locals (arrays too) and loop variables
        are renamed ``<callee><k>_<name>``."""
        where = self.ex.where(node)
        callee = self.resolve(name)
        if callee is None:
            raise Unsupported(f"call to external routine {name.upper()} at {where} cannot be lowered"
                              " (not in the project)")
        if isinstance(callee, ir.Opaque):
            raise Unsupported(f"call to {name.upper()} not inlined ({where}): {callee.reason}")
        body = list(callee.body)
        if body and isinstance(body[-1], ir.Return):
            body.pop()
        nodes = [n for s in body for n in ir.walk(s) if isinstance(n, (ir.Assign, ir.If, ir.Loop, ir.While, ir.Return,
                                                                         ir.ErrorCall, ir.HostCall))]
        has_loops = any(isinstance(n, ir.Loop) for n in nodes)
        takes_arrays = any(isinstance(p, ir.Array) and p.binding is None for p in callee.params)
        limit = _INLINE_MAX_LOOP_STMTS if has_loops else _INLINE_MAX_ARRAY_STMTS if takes_arrays \
            else _INLINE_MAX_STMTS
        if any(isinstance(n, ir.ErrorCall) for n in nodes):
            raise Unsupported(f"call to {name.upper()} not inlined ({where}): it reports errors")
        if len(nodes) > limit:
            raise Unsupported(f"call to {name.upper()} not inlined ({where}): {len(nodes)} statements, more than"
                              f" {limit}")
        if function and callee.result is None:
            raise Unsupported(f"subroutine {name.upper()} used as a function at {where}")
        dummies = [p for p in callee.params if p.binding is None]
        if len(args) != len(dummies):
            raise Unsupported(f"call to {name.upper()} at {where} has {len(args)} arguments,"
                              f" {len(dummies)} expected")
        self._share_globals(callee, name, where)
        self.inlined += 1
        tag = f"{name}{self.inlined}_"
        mapping: dict[str, Expr] = {}
        arrays: dict[str, tuple[str, tuple[Expr, ...]]] = {}
        pre: list[ir.Stmt] = []
        pairs = list(zip(dummies, args, strict=True))
        for p, a in pairs:
            if isinstance(p, ir.Array):
                continue
            value = self.ex.expr(a)
            if p.intent.writes:
                if not isinstance(value, (Var, Load)):
                    raise Unsupported(f"argument {p.name} of {name.upper()} at {where} is written but not a variable")
                mapping[p.name] = value
            elif isinstance(value, (Var, Const, Load)):
                mapping[p.name] = coerce(value, p.dtype)
            else:
                tmp = Var(tag + p.name, p.dtype)
                self.extra_locals[tmp.name] = ir.Scalar(tmp.name, p.dtype)
                pre.append(ir.Assign(tmp, coerce(value, p.dtype)))
                mapping[p.name] = tmp
        for p, a in pairs:
            if isinstance(p, ir.Array):
                arrays[p.name] = self._array_arg(p, a, name, where, mapping, callee)
        if self.jumps.depth == 0:
            pre[:0] = self.checked(())
        for d in callee.locals:
            mapping[d.name] = Var(tag + d.name, d.dtype)
            if isinstance(d, ir.Array):
                shape = tuple(simplify(ir.substitute(e, mapping)) for e in d.shape)  # type: ignore[misc]
                self.extra_locals[tag + d.name] = ir.replace(d, name=tag + d.name, shape=shape)
                arrays[d.name] = (tag + d.name, tuple(Const(0, DType.I32) for _ in d.shape))
            else:
                self.extra_locals[tag + d.name] = ir.Scalar(tag + d.name, d.dtype)
        loop_vars = {n.var for s in body for n in ir.walk(s) if isinstance(n, ir.Loop)}
        for v in loop_vars - mapping.keys():
            mapping[v] = Var(tag + v, DType.I32)
        renamed = [_rename_loops(ir.substitute(s, mapping), tag, loop_vars) for s in body]  # type: ignore[arg-type]
        new_body = jumps.stops_in_inlined(self, tuple(_rename_arrays(s, arrays) for s in renamed))  # type: ignore[arg-type]
        if any(isinstance(n, ir.Return) for s in new_body for n in ir.walk(s)):
            try:
                new_body = jumps.returns_to_flag(new_body, tag + "kt_return")
            except Unsupported as why:
                raise Unsupported(f"call to {name.upper()} not inlined ({where}): {why.reason}") from None
            self.extra_locals[tag + "kt_return"] = ir.Scalar(tag + "kt_return", DType.I32)
        if function:
            result = mapping[name]
            if (len(new_body) == 1 and isinstance(new_body[0], ir.Assign) and new_body[0].target == result
                    and not pre):
                self.extra_locals.pop(tag + name, None)
                return (), new_body[0].value
            return tuple(pre) + new_body, result
        return tuple(pre) + new_body, None

    def _share_globals(self, callee: ir.Kernel, name: str, where: str) -> None:
        """The COMMON and module variables an inlined callee uses become the caller's too (the
        caller then passes them like its own globals); a caller name that means something else
        keeps the callee out."""
        scope = self.ex.scope
        for p in callee.params:
            if p.binding is None:
                continue
            if p.binding.startswith("extent:"):
                raise Unsupported(f"call to {name.upper()} not inlined ({where}): it takes assumed-shape arrays")
            here = scope.lookup(p.name)
            if here is not None and here.binding == p.binding:
                self.ex.used.add(p.name)
                continue
            if here is not None or p.name in scope.syms:
                raise Unsupported(f"call to {name.upper()} not inlined ({where}): its global {p.name} is another"
                                  " variable here")
            sym = scope.get(p.name)
            sym.dtype, sym.binding = p.dtype, p.binding
            if isinstance(p, ir.Array):
                lower = p.lower or tuple(Const(1, DType.I32) for _ in p.shape)
                sym.dims = [(lo, simplify(sub(add(lo, ext), Const(1, DType.I32)))) for lo, ext in
                            zip(lower, p.shape, strict=True)]
            if p.binding.startswith("common:"):
                block = p.binding.split("/")[1]
                members = [q.name for q in callee.params if q.binding == p.binding]
                if scope.commons.setdefault(block, members) != members:
                    raise Unsupported(f"call to {name.upper()} not inlined ({where}): COMMON /{block}/ is laid out"
                                      " differently here")
            self.ex.used.add(p.name)

    def _array_arg(self, p: ir.Array, a: object, name: str, where: str, mapping: dict[str, Expr],
                   callee: ir.Kernel) -> tuple[str, tuple[Expr, ...]]:
        """The caller's array for a dummy array, and the offset of each dimension (0-based) plus the
        fixed indices of the caller's further dimensions. Arguments are associated by storage
        position: a whole array, or an element (``lhs(1, 1, bb, i)``: the callee's array starts
        there), whose leading extents are the callee's, so that every element keeps its place
        (the last dimension may be shorter: ``x(*)``)."""
        if isinstance(a, F.Name):
            arg, subs = str(a).lower(), None
        elif isinstance(a, F.Part_Ref) and a.items[1] is not None and \
                not any(isinstance(x, F.Subscript_Triplet) for x in a.items[1].items):
            arg, subs = str(a.items[0]).lower(), list(a.items[1].items)
        else:
            raise Unsupported(f"call to {name.upper()} not inlined ({where}): array argument '{a}'"
                              " is not a whole array or an element")
        sym = self.ex.scope.lookup(arg)
        if sym is not None and sym.complex != p.complex:
            kinds = ("COMPLEX" if sym.complex else "real", "COMPLEX" if p.complex else "real")
            raise Unsupported(f"call to {name.upper()} not inlined ({where}): array argument '{arg}' is {kinds[0]},"
                              f" {p.name} is {kinds[1]} (storage association across types)")
        zero = Const(0, DType.I32)
        # a COMPLEX array's parts are its leading dimension (parsers/fortran_complex.py)
        dims = ([(zero, Const(1, DType.I32))] if sym is not None and sym.complex else []) + \
            (sym.dims if sym is not None and sym.dims is not None else [])
        if sym is None or sym.dims is None or (subs is None and len(dims) != p.rank) or \
                (subs is not None and (len(subs) != len(sym.dims) or p.rank > len(dims))):
            raise Unsupported(f"call to {name.upper()} not inlined ({where}): array argument '{arg}' has another rank")
        self.ex.used.add(arg)
        starts = [zero] * len(dims) if subs is None else [zero] * (len(dims) - len(sym.dims)) + \
            [simplify(sub(coerce(self.ex.expr(x), DType.I32), lo)) for x, (lo, _) in zip(subs, sym.dims, strict=True)]
        for k in range(p.rank):
            lo, hi = dims[k]
            mine = simplify(ir.substitute(p.shape[k], mapping))  # type: ignore[arg-type]
            if hi is None:
                continue  # an assumed-size last dimension: any length
            theirs = simplify(add(sub(hi, lo), Const(1, DType.I32)))
            if k < p.rank - 1:
                if starts[k] != zero or simplify(sub(mine, theirs)) != zero:
                    raise Unsupported(f"call to {name.upper()} not inlined ({where}): '{arg}' is laid out with other"
                                      f" extents than {name.upper()} declares for {p.name}")
            elif subs is not None:
                room = simplify(sub(sub(theirs, starts[k]), mine))
                refusal = (f"call to {name.upper()} not inlined ({where}): {p.name} may run past"
                           f" dimension {k + 1} of '{arg}'")
                known = room.value if isinstance(room, Const) and isinstance(room.value, int) else None
                if (known is not None and known < 0) or \
                        (known is None and any(isinstance(n, Load) for n in ir.walk(room))):
                    raise Unsupported(refusal)
                if known is None:
                    self.room_checks.append(RoomCheck(room, refusal, f"{name.upper()} at {where}: {p.name} runs past"
                                                      f" dimension {k + 1} of {arg}, which the translation assumes"
                                                      " it does not"))
        return arg, tuple(starts)

    def checked(self, made: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
        """The room checks of the calls inlined into ``made`` (outside every loop): each a STOP
        before it, where what the check reads keeps its value through ``made``."""
        checks, self.room_checks = self.room_checks, []
        changed = irquery.many(made, irquery.scalar_writes) | irquery.many(made, irquery.loop_vars)
        out: list[ir.Stmt] = []
        for c in checks:
            if irquery.scalar_reads(c.room) & changed:
                raise Unsupported(c.refusal)
            stop = ir.HostCall("stop", "stop", (Const(c.message, DType.CHAR), Const(1, DType.I32)))
            out.append(ir.If(ir.BinOp("lt", c.room, Const(0, DType.I32), DType.BOOL), (stop,)))
        return (*out, *made)


def _rename_loops(node: object, tag: str, names: set[str]) -> object:
    """Loop variables of an inlined body renamed like its locals."""
    if isinstance(node, ir.Loop):
        body = tuple(_rename_loops(s, tag, names) for s in node.body)
        return replace(node, var=tag + node.var if node.var in names else node.var, body=body)  # type: ignore[arg-type]
    if isinstance(node, ir.If):
        return replace(node, then=tuple(_rename_loops(s, tag, names) for s in node.then),  # type: ignore[misc]
                       orelse=tuple(_rename_loops(s, tag, names) for s in node.orelse))
    return node


def _rename_arrays(node: object, arrays: dict[str, tuple[str, tuple[Expr, ...]]]) -> object:
    if isinstance(node, Load) and node.array in arrays:
        # the callee's 0-based index plus the offset where the argument starts; the caller's further
        # dimensions (an element argument) at the element's indices
        new, shift = arrays[node.array]
        rank = len(node.index)
        index = tuple(simplify(add(_rename_arrays(i, arrays), s)) for i, s in zip(node.index, shift[:rank],
                                                                                strict=True)) + shift[rank:]
        return Load(new, index, node.dtype)  # type: ignore[arg-type]
    if not hasattr(node, "__dataclass_fields__") or isinstance(node, (ir.Origin, ir.Reduction)):
        return node
    changes: dict[str, object] = {}
    for fname in node.__dataclass_fields__:  # type: ignore[attr-defined]
        v = getattr(node, fname)
        if isinstance(v, tuple):
            nv: object = tuple(_rename_arrays(x, arrays) for x in v)
        elif hasattr(v, "__dataclass_fields__"):
            nv = _rename_arrays(v, arrays)
        else:
            continue
        if nv != v:
            changes[fname] = nv
    return replace(node, **changes) if changes else node  # type: ignore[type-var]
