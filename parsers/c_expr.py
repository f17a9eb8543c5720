"""C expressions -> IR expressions (the C frontend; see parsers/c.py).

A function's names live in a :class:`CScope`: scalars (parameters by value and locals),
arrays (multidimensional arrays, VLAs, pointers indexed as arrays, row-major) and scalars a
pointer parameter carries out of the function (``*sum = ...``). Implicit conversions
become ``Cast`` where the dtype changes; comparisons and logical operators are ``bool``.
A construct the IR cannot hold raises ``Unsupported`` naming it and its file:line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from parsers import c_clang
from parsers.base import Unsupported, cast
from translate.ir import BinOp, Call, Const, DType, Expr, Load, Select, UnOp, Var

Cursor = Any  # clang.cindex.Cursor

# the math library (and the float/long double spellings of each function)
_MATH = {
    "sqrt": "sqrt", "exp": "exp", "log": "log", "log10": "log10", "sin": "sin", "cos": "cos", "tan": "tan",
    "asin": "asin", "acos": "acos", "atan": "atan", "atan2": "atan2", "sinh": "sinh", "cosh": "cosh",
    "tanh": "tanh", "fabs": "abs", "fmax": "max", "fmin": "min", "floor": "floor", "ceil": "ceil", "erf": "erf",
    "log1p": "log1p", "expm1": "expm1",
}
_INT_MATH = {"abs": "abs", "labs": "abs", "llabs": "abs"}
_BINOPS = {"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "mod"}
_COMPARE = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne"}
_LOGIC = {"&&": "and", "||": "or"}
_SCALAR_KINDS = {"FLOAT": DType.F32, "DOUBLE": DType.F64, "INT": DType.I32, "LONG": DType.I64,
                 "LONGLONG": DType.I64, "BOOL": DType.BOOL}
_TRANSPARENT = ("UNEXPOSED_EXPR", "PAREN_EXPR")


def scalar_dtype(ctype: Any) -> DType | None:
    """The IR dtype of a C arithmetic type (typedefs resolved), or None."""
    return _SCALAR_KINDS.get(ctype.get_canonical().kind.name)


def type_name(ctype: Any) -> str:
    return str(ctype.spelling) or str(ctype.kind.name).lower()


@dataclass
class CArray:
    """An array the function indexes: its element dtype and extents (None where the source does
    not say: a pointer, ``double (*a)[m]``'s first dimension), row-major."""

    name: str
    dtype: DType
    shape: list[Expr | None]


@dataclass
class CScope:
    path: str  # the file as messages name it
    function: str
    scalars: dict[str, DType] = field(default_factory=dict)  # by-value parameters and locals
    arrays: dict[str, CArray] = field(default_factory=dict)
    pointed: dict[str, DType] = field(default_factory=dict)  # pointer parameters used as *p
    params: list[str] = field(default_factory=list)
    local_arrays: set[str] = field(default_factory=set)
    used: set[str] = field(default_factory=set)

    def where(self, cursor: Cursor) -> str:
        return f"{self.path}:{cursor.location.line}"


def strip(c: Cursor) -> Cursor:
    """The cursor under implicit conversions and parentheses."""
    while c.kind.name in _TRANSPARENT:
        kids = list(c.get_children())
        if len(kids) != 1:
            return c
        c = kids[0]
    return c


def decl_name(c: Cursor) -> str | None:
    """The variable a DECL_REF_EXPR (under conversions) names, or None."""
    c = strip(c)
    if c.kind.name == "DECL_REF_EXPR" and c.referenced is not None and c.referenced.kind.name in (
            "VAR_DECL", "PARM_DECL"):
        return str(c.spelling)
    return None


def truthy(e: Expr) -> Expr:
    """A C condition as a bool expression (``if (x)`` is ``x != 0``)."""
    if e.dtype == DType.BOOL:
        return e
    return BinOp("ne", e, Const(0.0 if e.dtype.is_float else 0, e.dtype), DType.BOOL)


@dataclass
class CExpr:
    """Lowers one function's expressions; ``unsupported(cursor, what)`` raises."""

    scope: CScope
    notes: list[str] = field(default_factory=list)

    def unsupported(self, c: Cursor, what: str) -> Unsupported:
        return Unsupported(f"{what} at {self.scope.where(c)} cannot be lowered")

    def dtype(self, c: Cursor) -> DType:
        d = scalar_dtype(c.type)
        if d is None:
            raise self.unsupported(c, f"a value of type {type_name(c.type)}")
        return d

    def __call__(self, c: Cursor) -> Expr:
        return self.expr(c)

    def expr(self, c: Cursor) -> Expr:  # noqa: C901 - one case per cursor kind
        kind = c.kind.name
        if kind == "PAREN_EXPR":
            return self.expr(_only(c))
        if kind == "UNEXPOSED_EXPR":  # an implicit conversion (or a decay, which a subscript handles)
            inner = _only(c)
            e = self.expr(inner)
            d = scalar_dtype(c.type)
            return e if d is None else cast(e, d)
        if kind in ("INTEGER_LITERAL", "FLOATING_LITERAL", "CHARACTER_LITERAL"):
            v = c_clang.literal(c)
            if v is None:
                raise self.unsupported(c, "a literal")
            d = self.dtype(c)
            return Const(float(v) if d.is_float else int(v), d)
        if kind == "DECL_REF_EXPR":
            return self.name(c)
        if kind == "ARRAY_SUBSCRIPT_EXPR":
            return self.subscript(c)
        if kind == "UNARY_OPERATOR":
            return self.unary(c)
        if kind == "BINARY_OPERATOR":
            return self.binary(c)
        if kind == "CONDITIONAL_OPERATOR":
            cond, a, b = list(c.get_children())
            d = self.dtype(c)
            return Select(truthy(self.expr(cond)), cast(self.expr(a), d), cast(self.expr(b), d), d)
        if kind == "CSTYLE_CAST_EXPR":
            inner = [k for k in c.get_children() if k.kind.name != "TYPE_REF"]
            return cast(self.expr(inner[-1]), self.dtype(c))
        if kind == "CALL_EXPR":
            return self.call(c)
        if kind == "COMPOUND_ASSIGNMENT_OPERATOR":
            raise self.unsupported(c, "an assignment inside an expression")
        if kind == "STRING_LITERAL":
            raise self.unsupported(c, "a string")
        if kind == "MEMBER_REF_EXPR":
            raise self.unsupported(c, "a struct member")
        raise self.unsupported(c, f"the expression {kind.lower().replace('_', ' ')}")

    # ---------------------------------------------------------------- names

    def name(self, c: Cursor) -> Expr:
        ref = c.referenced
        if ref is not None and ref.kind.name == "ENUM_CONSTANT_DECL":
            return Const(int(ref.enum_value), DType.I32)
        n = str(c.spelling)
        if ref is not None and ref.kind.name == "VAR_DECL" and ref.semantic_parent is not None \
                and ref.semantic_parent.kind.name == "TRANSLATION_UNIT":
            raise self.unsupported(c, f"the global variable {n}")
        if n in self.scope.scalars:
            self.scope.used.add(n)
            return Var(n, self.scope.scalars[n])
        if n in self.scope.arrays:
            raise self.unsupported(c, f"array {n} used whole (passed on or as a pointer)")
        if n in self.scope.pointed:
            raise self.unsupported(c, f"pointer {n} used as a value")
        if ref is not None and ref.kind.name == "FUNCTION_DECL":
            raise self.unsupported(c, f"function {n} used as a value")
        raise self.unsupported(c, f"{n}")

    def subscript(self, c: Cursor) -> Load:
        """``a[i][j]`` (nested subscripts down to the array's name) as a Load of every index."""
        indices: list[Cursor] = []
        node = c
        while node.kind.name == "ARRAY_SUBSCRIPT_EXPR":
            base, idx = list(node.get_children())
            indices.append(idx)
            node = strip(base)
        name = str(node.spelling) if node.kind.name == "DECL_REF_EXPR" else None
        if name is None or name not in self.scope.arrays:
            if name is not None and name in self.scope.pointed:
                arr = self._pointed_as_array(name)
            else:
                raise self.unsupported(c, "a subscript of something other than an array argument or local")
        else:
            arr = self.scope.arrays[name]
        indices.reverse()
        if len(indices) != len(arr.shape):
            raise self.unsupported(c, f"{name} indexed with {len(indices)} of its {len(arr.shape)} dimensions")
        index = tuple(self.expr(i) for i in indices)
        for k, i in enumerate(index):
            if not i.dtype.is_int:
                raise self.unsupported(indices[k], f"a non-integer subscript of {name}")
        self.scope.used.add(arr.name)
        return Load(arr.name, index, arr.dtype)

    def _pointed_as_array(self, name: str) -> CArray:
        """A pointer parameter first seen as ``*p`` and now indexed: an array after all."""
        arr = CArray(name, self.scope.pointed.pop(name), [None])
        self.scope.arrays[name] = arr
        return arr

    def deref(self, c: Cursor, operand: Cursor) -> Expr:
        """``*p``: the scalar a pointer parameter carries, or ``p[0]`` of an array."""
        node = strip(operand)
        n = str(node.spelling) if node.kind.name == "DECL_REF_EXPR" else None
        if n is not None and n in self.scope.pointed:
            self.scope.used.add(n)
            return Var(n, self.scope.pointed[n])
        if n is not None and n in self.scope.arrays and len(self.scope.arrays[n].shape) == 1:
            self.scope.used.add(n)
            return Load(n, (Const(0, DType.I32),), self.scope.arrays[n].dtype)
        raise self.unsupported(c, "pointer arithmetic or a dereference of an expression")

    # ------------------------------------------------------------- operators

    def unary(self, c: Cursor) -> Expr:
        op = c_clang.unary_op(c)
        (operand,) = list(c.get_children())
        if op == "*":
            return self.deref(c, operand)
        if op in ("++", "--", "post++", "post--"):
            raise self.unsupported(c, f"{op.replace('post', '')} inside an expression")
        if op == "&":
            raise self.unsupported(c, "taking an address (&)")
        e = self.expr(operand)
        if op == "-":
            return UnOp("neg", cast(e, self.dtype(c)), self.dtype(c))
        if op == "+":
            return cast(e, self.dtype(c))
        if op == "!":
            return UnOp("not", truthy(e), DType.BOOL)
        raise self.unsupported(c, f"the operator {op or '?'}")

    def binary(self, c: Cursor) -> Expr:
        op = c_clang.binary_op(c)
        lhs, rhs = list(c.get_children())
        if op in _LOGIC:
            return BinOp(_LOGIC[op], truthy(self.expr(lhs)), truthy(self.expr(rhs)), DType.BOOL)
        if op in _COMPARE:
            a, b = self.expr(lhs), self.expr(rhs)
            common = common_dtype(a.dtype, b.dtype)
            return BinOp(_COMPARE[op], cast(a, common), cast(b, common), DType.BOOL)
        if op in _BINOPS:
            if c.type.get_canonical().kind.name == "POINTER":
                raise self.unsupported(c, "pointer arithmetic")
            d = self.dtype(c)
            a, b = cast(self.expr(lhs), d), cast(self.expr(rhs), d)
            return BinOp(_BINOPS[op], a, b, d)
        if op == "=" or op.endswith("="):
            raise self.unsupported(c, "an assignment inside an expression")
        if op == ",":
            raise self.unsupported(c, "the comma operator")
        raise self.unsupported(c, f"the operator {op or '?'}")

    def call(self, c: Cursor) -> Expr:
        fn = str(c.spelling)
        args = [a for a in c.get_children()][1:]  # the first child is the callee
        base = fn[:-1] if fn.endswith(("f", "l")) and fn[:-1] in _MATH else fn
        d = self.dtype(c)
        if base == "pow" or base == "powf":
            a, b = (self.expr(x) for x in args)
            return BinOp("pow", cast(a, d), cast(b, d) if b.dtype.is_float else b, d)
        if base in _MATH:
            vals = tuple(cast(self.expr(a), d) for a in args)
            return Call(_MATH[base], vals, d)
        if fn in _INT_MATH:
            return Call("abs", (cast(self.expr(args[0]), d),), d)
        raise self.unsupported(c, f"the call to {fn}")


def _only(c: Cursor) -> Cursor:
    kids = list(c.get_children())
    if len(kids) != 1:
        raise Unsupported(f"an expression of {len(kids)} parts at line {c.location.line} cannot be lowered")
    return kids[0]


_RANK = (DType.BOOL, DType.I32, DType.I64, DType.F32, DType.F64)


def common_dtype(a: DType, b: DType) -> DType:
    """The usual arithmetic conversions of two operands (bool counts as int)."""
    ra = _RANK.index(a) if a in _RANK else len(_RANK)
    rb = _RANK.index(b) if b in _RANK else len(_RANK)
    out = a if ra >= rb else b
    return DType.I32 if out == DType.BOOL else out

