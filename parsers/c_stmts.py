"""C statements -> IR statements (the C frontend; see parsers/c.py).

``for`` loops in canonical form (``for (i = a; i < b; i += s)``: one integer variable, a
constant step, a bound and a variable the body does not assign) are ``ir.Loop``s with the
source's own values (the IR's loops are 0-based only in that they are half-open: ``i <= n``
stops at ``n + 1``). Any other ``for`` and every ``while`` is an ``ir.While`` (serial, on
the host side). A ``#pragma omp parallel for`` right before a loop is its ``directive``:
the analysis takes it as the source's assertion and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from parsers import c_clang
from parsers.base import cast
from parsers.c_expr import CArray, CExpr, common_dtype, scalar_dtype, strip, truthy, type_name
from translate import ir
from translate.ir import BinOp, Const, DType, Expr, Load, Var
from translate.simplify import add, simplify, sub

Cursor = Any
_COMPOUND = {"+=": "add", "-=": "sub", "*=": "mul", "/=": "div", "%=": "mod"}
_OUTPUT = ("printf", "fprintf", "puts", "fputs", "putchar", "fputc", "fwrite", "fflush")
_OMP_LOOP = ("omp parallel for", "omp for", "omp target teams distribute parallel for")


def array_dims(cursor: Cursor, ctype: Any, ex: CExpr) -> tuple[DType, list[Expr | None]] | None:
    """Element dtype and extents of a declared array or pointer (``double a[n][m]``,
    ``double (*a)[M]``, ``double *a``: None where the declaration does not say), or None for
    a type that is neither. Variable extents are the declarator's size expressions, which
    libclang lists innermost first."""
    levels: list[tuple[str, int]] = []  # ("const", n) | ("var", 0) | ("none", 0), outermost first
    t = ctype.get_canonical()
    if t.kind.name == "POINTER":
        levels.append(("none", 0))
        t = t.get_pointee().get_canonical()
    while t.kind.name in ("CONSTANTARRAY", "VARIABLEARRAY", "INCOMPLETEARRAY", "DEPENDENTSIZEDARRAY"):
        if t.kind.name == "CONSTANTARRAY":
            levels.append(("const", int(t.element_count)))
        elif t.kind.name == "VARIABLEARRAY":
            levels.append(("var", 0))
        else:
            levels.append(("none", 0))
        t = t.element_type.get_canonical()
    if not levels:
        return None
    d = scalar_dtype(t)
    if d is None:
        raise ex.unsupported(cursor, f"an array of {type_name(t)}")
    if d == DType.BOOL:
        raise ex.unsupported(cursor, "an array of _Bool (1-byte elements have no IR dtype)")
    sizes = [k for k in cursor.get_children() if k.kind.name not in ("TYPE_REF", "INIT_LIST_EXPR")
             and k.kind.is_expression()]
    sized = [lv for lv in levels if lv[0] in ("const", "var")]
    exprs = list(reversed(sizes)) if len(sizes) == len(sized) else None
    dims: list[Expr | None] = []
    k = 0
    for kind, n in levels:
        if kind == "none":
            dims.append(None)
            continue
        if kind == "const":
            dims.append(Const(n, DType.I32))
        else:
            if exprs is None:
                raise ex.unsupported(cursor, "a variable-length array whose extents cannot be read")
            dims.append(ex.expr(exprs[k]))
        k += 1
    return d, dims


@dataclass
class CStmts:
    ex: CExpr
    pragmas: dict[int, c_clang.Pragma]
    lines: list[str]
    result: str | None = None  # the function's name when it returns a value
    depth: int = 0  # loops around the statement being lowered
    directives: list[str] = field(default_factory=list)

    @property
    def scope(self) -> Any:
        return self.ex.scope

    def function_body(self, c: Cursor) -> list[ir.Stmt]:
        kids = list(c.get_children())
        out: list[ir.Stmt] = []
        for k, s in enumerate(kids):
            last = k == len(kids) - 1
            if s.kind.name == "RETURN_STMT" and last:
                out += self.final_return(s)
            else:
                out += self.stmt(s)
        if self.result is not None and not (kids and kids[-1].kind.name == "RETURN_STMT"):
            raise self.ex.unsupported(c, f"{self.scope.function} returns a value other than by its last statement")
        return out

    def final_return(self, c: Cursor) -> list[ir.Stmt]:
        kids = list(c.get_children())
        if not kids:
            return []
        if self.result is None:
            raise self.ex.unsupported(c, "a return with a value")
        d = scalar_dtype(c.semantic_parent.result_type) if c.semantic_parent is not None else None
        value = self.ex.expr(kids[0])
        return [ir.Assign(Var(self.result, d or value.dtype), cast(value, d or value.dtype))]

    def block(self, c: Cursor) -> list[ir.Stmt]:
        if c.kind.name == "COMPOUND_STMT":
            return [s for k in c.get_children() for s in self.stmt(k)]
        return self.stmt(c)

    def stmt(self, c: Cursor) -> list[ir.Stmt]:  # noqa: C901 - one case per statement kind
        kind = c.kind.name
        if kind == "COMPOUND_STMT":
            return self.block(c)
        if kind == "NULL_STMT":
            return []
        if kind == "DECL_STMT":
            return [s for d in c.get_children() for s in self.declare(d)]
        if kind == "FOR_STMT":
            return self.for_stmt(c)
        if kind == "WHILE_STMT":
            cond, body = list(c.get_children())
            self.depth += 1
            try:
                inner = self.block(body)
            finally:
                self.depth -= 1
            return [ir.While(truthy(self.ex.expr(cond)), tuple(inner), c.location.line)]
        if kind == "IF_STMT":
            kids = list(c.get_children())
            cond = truthy(self.ex.expr(kids[0]))
            then = self.block(kids[1])
            orelse = self.block(kids[2]) if len(kids) > 2 else []
            return [ir.If(cond, tuple(then), tuple(orelse))]
        if kind == "RETURN_STMT":
            if list(c.get_children()):
                raise self.ex.unsupported(c, "a return of a value before the end of the function")
            if self.depth:
                raise self.ex.unsupported(c, "a return inside a loop")
            return [ir.Return()]
        if kind == "BINARY_OPERATOR" and c_clang.binary_op(c) == "=":
            lhs, rhs = list(c.get_children())
            inner = strip(rhs)
            if inner.kind.name == "BINARY_OPERATOR" and c_clang.binary_op(inner) == "=":  # a = b = v
                first = self.stmt(inner)
                assert isinstance(first[-1], ir.Assign)
                target = self.lvalue(lhs)
                return [*first, ir.Assign(target, cast(first[-1].target, target.dtype))]
            target = self.lvalue(lhs)
            return [ir.Assign(target, cast(self.ex.expr(rhs), target.dtype))]
        if kind == "COMPOUND_ASSIGNMENT_OPERATOR":
            op = c_clang.binary_op(c)
            if op not in _COMPOUND:
                raise self.ex.unsupported(c, f"the assignment {op}")
            lhs, rhs = list(c.get_children())
            target = self.lvalue(lhs)
            value = self.ex.expr(rhs)
            common = common_dtype(target.dtype, value.dtype)
            new = BinOp(_COMPOUND[op], cast(target, common), cast(value, common), common)
            return [ir.Assign(target, cast(new, target.dtype))]
        if kind == "UNARY_OPERATOR" and c_clang.unary_op(c) in ("++", "--", "post++", "post--"):
            (operand,) = list(c.get_children())
            target = self.lvalue(operand)
            one = Const(1.0 if target.dtype.is_float else 1, target.dtype)
            op = "add" if "++" in c_clang.unary_op(c) else "sub"
            return [ir.Assign(target, BinOp(op, target, one, target.dtype))]
        if kind == "CALL_EXPR":
            name = str(c.spelling)
            what = f"output ({name})" if name in _OUTPUT else f"the call to {name}"
            raise self.ex.unsupported(c, what)
        if kind in ("BREAK_STMT", "CONTINUE_STMT", "GOTO_STMT", "SWITCH_STMT", "DO_STMT", "LABEL_STMT"):
            raise self.ex.unsupported(c, kind.lower().replace("_stmt", "").replace("_", " ") + " statement")
        if kind.endswith("_EXPR") or kind.endswith("_OPERATOR") or kind.endswith("_LITERAL"):
            raise self.ex.unsupported(c, "an expression statement that assigns nothing")
        raise self.ex.unsupported(c, f"the statement {kind.lower().replace('_', ' ')}")

    # -------------------------------------------------------------- pieces

    def lvalue(self, c: Cursor) -> Var | Load:
        node = strip(c)
        if node.kind.name == "DECL_REF_EXPR":
            e = self.ex.name(node)
            if isinstance(e, Var):
                return e
        if node.kind.name == "ARRAY_SUBSCRIPT_EXPR":
            return self.ex.subscript(node)
        if node.kind.name == "UNARY_OPERATOR" and c_clang.unary_op(node) == "*":
            e = self.ex.deref(node, list(node.get_children())[0])
            if isinstance(e, (Var, Load)):
                return e
        raise self.ex.unsupported(c, "an assignment to something other than a variable or an array element")

    def declare(self, d: Cursor) -> list[ir.Stmt]:
        if d.kind.name != "VAR_DECL":
            raise self.ex.unsupported(d, f"the declaration {d.kind.name.lower()}")
        name = str(d.spelling)
        if d.storage_class.name in ("STATIC", "EXTERN"):
            raise self.ex.unsupported(d, f"the {d.storage_class.name.lower()} local {name}")
        known = self.scope.scalars.get(name) or (self.scope.arrays[name].dtype if name in self.scope.arrays
                                                 else None)
        dims = array_dims(d, d.type, self.ex)
        if dims is not None:
            dtype, shape = dims
            if d.type.get_canonical().kind.name == "POINTER" or any(s is None for s in shape):
                raise self.ex.unsupported(d, f"the local pointer {name}")
            if known is not None and (name not in self.scope.arrays or self.scope.arrays[name].shape != shape):
                raise self.ex.unsupported(d, f"{name} declared twice with different types")
            if any(k.kind.name == "INIT_LIST_EXPR" for k in d.get_children()):
                raise self.ex.unsupported(d, f"the initialiser of array {name}")
            self.scope.arrays[name] = CArray(name, dtype, list(shape))
            self.scope.local_arrays.add(name)
            return []
        dtype = scalar_dtype(d.type)
        if dtype is None:
            raise self.ex.unsupported(d, f"the local {name} of type {type_name(d.type)}")
        if known is not None and known != dtype:
            raise self.ex.unsupported(d, f"{name} declared twice with different types")
        if name in self.scope.params:
            raise self.ex.unsupported(d, f"the local {name} that hides an argument")
        self.scope.scalars[name] = dtype
        init = [k for k in d.get_children() if k.kind.is_expression()]
        if not init:
            return []
        return [ir.Assign(Var(name, dtype), cast(self.ex.expr(init[-1]), dtype))]

    def for_stmt(self, c: Cursor) -> list[ir.Stmt]:
        kids = list(c.get_children())
        if len(kids) != 4:
            raise self.ex.unsupported(c, "a for loop without an initialisation, a condition or an increment")
        init, cond, inc, body = kids
        start_stmts = self.stmt(init)  # first: it may declare the variable (for (int i = 0; ...))
        self.depth += 1
        try:
            inner = self.block(body)
        finally:
            self.depth -= 1
        loop = self._canonical(c, start_stmts, cond, inc, inner)
        if loop is not None:
            return [loop]
        step = self.stmt(inc)
        return [*start_stmts, ir.While(truthy(self.ex.expr(cond)), (*inner, *step), c.location.line)]

    def _canonical(self, c: Cursor, start: list[ir.Stmt], cond: Cursor, inc: Cursor,
                   inner: list[ir.Stmt]) -> ir.Loop | None:
        """The loop as an ``ir.Loop``, or None where it is not in canonical form."""
        if len(start) != 1 or not isinstance(start[0], ir.Assign) or not isinstance(start[0].target, Var):
            return None
        var = start[0].target
        if not var.dtype.is_int:
            return None
        step = self._step(inc, var.name)
        test = strip(cond)
        if step is None or test.kind.name != "BINARY_OPERATOR":
            return None
        op = c_clang.binary_op(test)
        a, b = list(test.get_children())
        flip = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
        if op not in flip:
            return None
        if _is_var(a, var.name):
            bound_c = b
        elif _is_var(b, var.name):
            bound_c, op = a, flip[op]
        else:
            return None
        bound = self.ex.expr(bound_c)
        assigned = {n.target.name for s in inner for n in ir.walk(s) if isinstance(n, ir.Assign)
                    and isinstance(n.target, Var)}
        free = {n.name for n in ir.walk(bound) if isinstance(n, Var)}
        if var.name in assigned or free & assigned or any(isinstance(n, ir.Load) for n in ir.walk(bound)):
            return None
        one = Const(1, var.dtype)
        if op in ("<", "<=") and step > 0:
            stop = bound if op == "<" else simplify(add(bound, one))
        elif op in (">", ">=") and step < 0:
            stop = bound if op == ">" else simplify(sub(bound, one))
        else:
            return None
        line = c.location.line
        directive = self._directive(line)
        return ir.Loop(var.name, start[0].value, cast(stop, var.dtype), Const(step, var.dtype), tuple(inner),
                       directive=directive, line=line)

    def _step(self, inc: Cursor, var: str) -> int | None:
        node = strip(inc)
        kind = node.kind.name
        kids = list(node.get_children())
        if kind == "UNARY_OPERATOR" and kids and _is_var(kids[0], var):
            op = c_clang.unary_op(node)
            return 1 if "++" in op else -1 if "--" in op else None
        if kind == "COMPOUND_ASSIGNMENT_OPERATOR" and _is_var(kids[0], var):
            op = c_clang.binary_op(node)
            v = c_clang.literal(kids[1])
            if isinstance(v, int) and v != 0 and op in ("+=", "-="):
                return v if op == "+=" else -v
        if kind == "BINARY_OPERATOR" and c_clang.binary_op(node) == "=" and _is_var(kids[0], var):
            rhs = strip(kids[1])
            if rhs.kind.name == "BINARY_OPERATOR" and c_clang.binary_op(rhs) in ("+", "-"):
                x, y = list(rhs.get_children())
                v = c_clang.literal(y)
                if _is_var(x, var) and isinstance(v, int) and v != 0:
                    return v if c_clang.binary_op(rhs) == "+" else -v
        return None

    def _directive(self, line: int) -> str | None:
        p = c_clang.pragma_before(self.pragmas, self.lines, line)
        if p is None or not p.text.startswith("omp"):
            return None
        if any(p.text.startswith(d) for d in _OMP_LOOP):
            self.directives.append(f"line {line}: #pragma {p.text}")
            return p.text
        return None


def _is_var(c: Cursor, name: str) -> bool:
    node = strip(c)
    return node.kind.name == "DECL_REF_EXPR" and str(node.spelling) == name
