"""Lowering of Fortran expressions (fparser2 nodes) to IR expressions.

Handlers are keyed by fparser2 node class; operators go through tables. Mixed
arithmetic gets explicit ``Cast`` nodes following Fortran's promotion rules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import MappingProxyType

from fparser.two import Fortran2003 as F
from fparser.two.utils import BinaryOpBase, UnaryOpBase, walk

from parsers import fortran_complex
from parsers.base import Unsupported
from parsers.fortran_scope import Scope, Sym
from translate import ir
from translate.ir import BinOp, Call, Cast, Const, DType, Expr, Load, UnOp, Var
from translate.simplify import simplify, sub

_BINOPS = MappingProxyType({
    "+": "add", "-": "sub", "*": "mul", "/": "div", "**": "pow",
    ".LT.": "lt", "<": "lt", ".LE.": "le", "<=": "le", ".GT.": "gt", ">": "gt", ".GE.": "ge", ">=": "ge",
    ".EQ.": "eq", "==": "eq", ".NE.": "ne", "/=": "ne", ".AND.": "and", ".OR.": "or",
    ".EQV.": "eq", ".NEQV.": "ne",
})
_COMPARE = ("lt", "le", "gt", "ge", "eq", "ne")
_RANK = (DType.BOOL, DType.I32, DType.I64, DType.F16, DType.BF16, DType.F32, DType.F64)

# generic or specific intrinsic name -> (IR function, forced result/argument type or None)
_MATH = MappingProxyType({
    "abs": ("abs", None), "dabs": ("abs", DType.F64), "iabs": ("abs", DType.I32),
    "sqrt": ("sqrt", None), "dsqrt": ("sqrt", DType.F64), "exp": ("exp", None), "dexp": ("exp", DType.F64),
    "log": ("log", None), "alog": ("log", DType.F32), "dlog": ("log", DType.F64),
    "log10": ("log10", None), "alog10": ("log10", DType.F32), "dlog10": ("log10", DType.F64),
    "sin": ("sin", None), "dsin": ("sin", DType.F64), "cos": ("cos", None), "dcos": ("cos", DType.F64),
    "tan": ("tan", None), "dtan": ("tan", DType.F64), "asin": ("asin", None), "dasin": ("asin", DType.F64),
    "acos": ("acos", None), "dacos": ("acos", DType.F64), "atan": ("atan", None), "datan": ("atan", DType.F64),
    "atan2": ("atan2", None), "datan2": ("atan2", DType.F64), "sinh": ("sinh", None), "cosh": ("cosh", None),
    "tanh": ("tanh", None), "dsinh": ("sinh", DType.F64), "dcosh": ("cosh", DType.F64),
    "dtanh": ("tanh", DType.F64),
    "max": ("max", None), "min": ("min", None), "dmax1": ("max", DType.F64), "dmin1": ("min", DType.F64),
    "amax1": ("max", DType.F32), "amin1": ("min", DType.F32), "max0": ("max", DType.I32),
    "min0": ("min", DType.I32), "sign": ("sign", None), "dsign": ("sign", DType.F64), "isign": ("sign", DType.I32),
})
_CASTS = MappingProxyType({
    "dble": DType.F64, "dfloat": DType.F64, "float": DType.F32, "sngl": DType.F32, "real": DType.F32,
    "int": DType.I32, "ifix": DType.I32, "idint": DType.I32,
})


ARRAY_INTRINSICS = ("sum", "product", "maxval", "minval", "count", "any", "all", "dot_product", "maxloc", "minloc",
                    "size", "lbound", "ubound", "huge", "tiny", "epsilon")


def promote(a: DType, b: DType) -> DType:
    if a in _RANK and b in _RANK:
        return a if _RANK.index(a) >= _RANK.index(b) else b
    if a == b:
        return a
    raise Unsupported(f"operation mixing {a.value} and {b.value}")


def coerce(e: Expr, dtype: DType) -> Expr:
    """Convert ``e`` to ``dtype`` with an explicit Cast (folded for constants)."""
    if e.dtype == dtype:
        return e
    return simplify(Cast(dtype, e))


@dataclass(frozen=True)
class SrcLoop:
    """A source DO loop around the statement being lowered (for shape inference)."""

    var: str
    first: Expr
    last: Expr
    step: Expr


@dataclass(frozen=True)
class Access:
    """An element access of an array with an assumed-size dimension."""

    array: str
    index: Expr  # 1-based source index in the last dimension (loop variables as source values)
    loops: tuple[SrcLoop, ...]
    guards: tuple[Expr, ...]


@dataclass
class ExprLowerer:
    scope: Scope
    where_fn: Callable[[int], str]
    line: int = 0
    loop_env: dict[str, Expr] = field(default_factory=dict)  # source loop var -> IR expression
    finished: dict[str, str] = field(default_factory=dict)  # DO variable -> where its ended loop is
    src_loops: list[SrcLoop] = field(default_factory=list)
    guards: list[Expr] = field(default_factory=list)
    accesses: list[Access] = field(default_factory=list)
    used: set[str] = field(default_factory=set)
    call_function: Callable[[str, list[object], object], Expr] | None = None
    # array intrinsics (SUM, SIZE, ...): lowered by the statement lowerer, which can add statements
    array_intrinsic: Callable[[str, list[object]], Expr] | None = None
    # while lowering array syntax element by element: the loop variable of each section dimension
    sections: list[Var] | None = None

    # ------------------------------------------------------------- helpers

    def where(self, node: object = None) -> str:
        item = getattr(node, "item", None)
        span = getattr(item, "span", None)
        return self.where_fn(span[0] if span else self.line)

    def kind_expr(self, node: object) -> int:
        """An integer kind/length: literal, PARAMETER, KIND(x), SELECTED_REAL_KIND(p)."""
        if isinstance(node, F.Intrinsic_Function_Reference):
            fname = str(node.items[0]).lower()
            args = list(node.items[1].items) if node.items[1] is not None else []
            if fname == "kind":
                return 8 if self.expr(args[0]).dtype in (DType.F64, DType.I64) else 4
            if fname == "selected_real_kind":
                p = self.kind_expr(args[0])
                return 4 if p <= 6 else 8 if p <= 15 else 16
            if fname == "selected_int_kind":
                return 4 if self.kind_expr(args[0]) <= 9 else 8
        if isinstance(node, F.Name) and str(node).lower() in ("real64", "int64", "c_double", "c_long"):
            return 8
        if isinstance(node, F.Name) and str(node).lower() in ("real32", "int32", "c_float", "c_int"):
            return 4
        e = simplify(self.expr(node))
        if isinstance(e, Const) and isinstance(e.value, int):
            return e.value
        raise Unsupported(f"kind '{node}' at {self.where()} is not a constant")

    def spec_expr(self, node: object) -> Expr:
        return simplify(self.expr(node))

    # ---------------------------------------------------------- expressions

    def expr(self, node: object) -> Expr:
        if isinstance(node, F.Parenthesis):
            return self.expr(node.items[1])
        if isinstance(node, BinaryOpBase):
            lhs, op, rhs = node.items
            return self.binop(str(op).upper(), self.expr(lhs), self.expr(rhs))
        if isinstance(node, UnaryOpBase):
            op, operand = node.items
            e = self.expr(operand)
            if str(op).upper() == ".NOT.":
                return UnOp("not", e, DType.BOOL)
            return e if str(op) == "+" else simplify(UnOp("neg", e, e.dtype))
        handler = next((h for c in type(node).__mro__ if (h := _HANDLERS.get(c)) is not None), None)
        if handler is None:
            if isinstance(node, F.Array_Constructor):
                raise Unsupported(f"array constructor at {self.where(node)} cannot be lowered")
            raise Unsupported(f"expression '{node}' ({type(node).__name__}) at {self.where(node)} cannot be lowered")
        return handler(self, node)

    def binop(self, op_text: str, a: Expr, b: Expr) -> Expr:
        op = _BINOPS.get(op_text)
        if op is None:
            raise Unsupported(f"operator {op_text} at {self.where()} cannot be lowered")
        if op in ("and", "or"):
            return BinOp(op, a, b, DType.BOOL)
        if DType.CHAR in (a.dtype, b.dtype):
            if a.dtype != b.dtype or op not in ("eq", "ne"):
                raise Unsupported(f"character operation at {self.where()} cannot be lowered")
            return BinOp(op, a, b, DType.BOOL)
        if op == "pow":
            if b.dtype.is_int:
                return BinOp("pow", a, b, a.dtype)
            t = promote(a.dtype, b.dtype)
            return BinOp("pow", coerce(a, t), coerce(b, t), t)
        t = promote(a.dtype, b.dtype)
        if t == DType.BOOL:
            t = DType.I32
        res = DType.BOOL if op in _COMPARE else t
        return BinOp(op, coerce(a, t), coerce(b, t), res)

    def name(self, node: F.Name) -> Expr:
        n = str(node).lower()
        if n in self.loop_env:
            return self.loop_env[n]
        if n in self.finished:
            raise Unsupported(f"DO variable {n} read at {self.where()} after its loop (line {self.finished[n]}) ended:"
                              " its final value is not lowered")
        sym = self.scope.lookup(n)
        if sym is not None and sym.complex:
            raise Unsupported(f"COMPLEX {n} at {self.where()} where a real value is needed cannot be lowered")
        if sym is not None and sym.const is not None:
            return sym.const
        if sym is not None and sym.dims is not None:
            if self.sections is not None:
                return self.whole(n, sym)
            raise Unsupported(f"whole-array expression '{n}' at {self.where()} outside an array assignment cannot be"
                              " lowered")
        self.used.add(n)
        return Var(n, self.scope.type_of(n))

    def whole(self, name: str, sym: Sym) -> Load:
        """The current element of a whole array in array syntax."""
        assert sym.dims is not None and self.sections is not None
        if len(sym.dims) != len(self.sections):
            raise Unsupported(f"'{name}' (rank {len(sym.dims)}) at {self.where()} does not conform to rank"
                              f" {len(self.sections)}")
        self.used.add(name)
        return Load(name, tuple(self.sections), sym.dtype or self.scope.type_of(name))

    def part_ref(self, node: object) -> Expr:
        name = str(node.items[0]).lower()  # type: ignore[attr-defined]
        sym = self.scope.lookup(name)
        subs = list(node.items[1].items) if node.items[1] is not None else []  # type: ignore[attr-defined]
        if (sym is None or sym.dims is None) and (part := self.complex_part(name, subs)) is not None:
            return part
        if sym is None and name == "ieee_is_nan" and len(subs) == 1:  # ieee_arithmetic: NaN is unequal to itself
            x = self.expr(subs[0])
            return BinOp("ne", x, x, DType.BOOL)
        if sym is not None and sym.dims is not None:
            return self.load(name, sym, subs)
        if name in ("lsame",):
            args = [self.expr(a) for a in subs]
            return Call("lsame", tuple(args), DType.BOOL)
        if name in _MATH or name in _CASTS or name in ("mod", "dmod", "amod", "nint", "idnint", "floor", "ceiling"):
            return self.intrinsic(name, subs)
        if name in ARRAY_INTRINSICS and sym is None and self.array_intrinsic is not None:
            return self.array_intrinsic(name, subs)
        if self.call_function is None:
            raise Unsupported(f"call to function {name} at {self.where()} cannot be lowered")
        return self.call_function(name, subs, node)

    def load(self, name: str, sym: Sym, subs: list[object], complex_ok: bool = False) -> Load:
        """An element (or, in array syntax, the current element of a section); a COMPLEX array's
        element only for parsers/fortran_complex.py, which adds the part's index."""
        assert sym.dims is not None
        if sym.complex and not complex_ok:
            raise Unsupported(f"COMPLEX {name}(...) at {self.where()} where a real value is needed cannot be lowered")
        if len(subs) != len(sym.dims):
            raise Unsupported(f"'{name}' indexed with {len(subs)} subscripts but declared with {len(sym.dims)}"
                              f" at {self.where()} (sequence association) cannot be lowered")
        index: list[Expr] = []
        src: Expr = Const(1, DType.I32)
        triplets = sum(isinstance(s, F.Subscript_Triplet) for s in subs)
        if triplets and (self.sections is None or triplets != len(self.sections)):
            what = "outside an array assignment" if self.sections is None else \
                f"of rank {triplets} where rank {len(self.sections)} is assigned"
            raise Unsupported(f"array section '{name}(...)' {what} at {self.where()} cannot be lowered")
        position = 0
        for s, (lo, _hi) in zip(subs, sym.dims, strict=True):
            if isinstance(s, F.Subscript_Triplet):
                assert self.sections is not None
                first = lo if s.items[0] is None else coerce(self.expr(s.items[0]), DType.I32)
                step = Const(1, DType.I32) if s.items[2] is None else coerce(self.expr(s.items[2]), DType.I32)
                v = self.sections[position]
                position += 1
                index.append(simplify(BinOp("add", sub(first, lo), BinOp("mul", v, step, DType.I32), DType.I32)))
                continue
            src = self.expr(s)
            if not src.dtype.is_int:
                src = coerce(src, DType.I32)
            index.append(sub(src, lo))
        if sym.dims[-1][1] is None:
            self.accesses.append(Access(name, simplify(src), tuple(self.src_loops), tuple(self.guards)))
        self.used.add(name)
        return Load(name, tuple(index), sym.dtype or self.scope.type_of(name))

    def intrinsic(self, name: str, subs: list[object]) -> Expr:
        args = [self.expr(a) for a in subs if not isinstance(a, F.Actual_Arg_Spec)]
        kinds = [a for a in subs if isinstance(a, F.Actual_Arg_Spec)]
        if name in _CASTS:
            target = _CASTS[name]
            if name in ("real", "float"):
                target = self.scope.defaults.real
            if name == "real" and (len(args) > 1 or kinds):
                k = self.kind_expr(kinds[0].items[1] if kinds else subs[1])
                target = DType.F64 if k == 8 else DType.F32
                args = args[:1]
            elif name == "int" and (len(args) > 1 or kinds):
                k = self.kind_expr(kinds[0].items[1] if kinds else subs[1])
                target = DType.I64 if k == 8 else DType.I32
                args = args[:1]
            return coerce(args[0], target)
        if kinds:
            raise Unsupported(f"keyword arguments to {name.upper()} at {self.where()} cannot be lowered")
        if name in ("mod", "dmod", "amod"):
            t = promote(args[0].dtype, args[1].dtype)
            return BinOp("mod", coerce(args[0], t), coerce(args[1], t), t)
        if name in ("nint", "idnint"):
            return Call("nint", (args[0],), DType.I32)
        if name in ("floor", "ceiling"):
            fn = "floor" if name == "floor" else "ceil"
            return Cast(DType.I32, Call(fn, (args[0],), args[0].dtype))
        fn, forced = _MATH[name]
        t = args[0].dtype
        for a in args[1:]:
            t = promote(t, a.dtype)
        if forced is not None:
            t = forced
        if fn in ("sqrt", "exp", "log", "log10", "sin", "cos", "tan", "asin", "acos", "atan", "atan2",
                  "sinh", "cosh", "tanh") and not t.is_float:
            t = DType.F32
        args = [coerce(a, t) for a in args]
        if fn in ("max", "min"):
            out = args[0]
            for a in args[1:]:
                out = Call(fn, (out, a), t)
            return out
        return Call(fn, tuple(args), t)

    # -------------------------------------------------------------- literals

    def int_lit(self, node: object) -> Expr:
        text, kind = node.items  # type: ignore[attr-defined]
        dtype = DType.I64 if kind is not None and self._kind_of(kind) == 8 else DType.I32
        return Const(int(text), dtype)

    def real_lit(self, node: object) -> Expr:
        text, kind = node.items  # type: ignore[attr-defined]
        t = str(text).lower()
        dtype = DType.F64 if "d" in t else self.scope.defaults.real
        if kind is not None:
            dtype = DType.F64 if self._kind_of(kind) == 8 else DType.F32
        return Const(float(t.replace("d", "e")), dtype)

    def _kind_of(self, kind: object) -> int:
        text = str(kind)
        if text.isdigit():
            return int(text)
        return self.kind_expr(F.Name(text))

    def logical_lit(self, node: object) -> Expr:
        return Const(str(node.items[0]).upper().startswith(".T"), DType.BOOL)  # type: ignore[attr-defined]

    def char_lit(self, node: object) -> Expr:
        text = str(node.items[0])  # type: ignore[attr-defined]
        return Const(text[1:-1].replace(text[0] * 2, text[0]), DType.CHAR)

    def complex_part(self, name: str, subs: list[object]) -> Expr | None:
        """REAL/DBLE, AIMAG/DIMAG or ABS of a COMPLEX argument (parsers/fortran_complex.py)."""
        return fortran_complex.real_valued(self, name, subs)

    def complex_dtype(self, node: object) -> DType:
        """The type of the parts of a COMPLEX expression: single precision only when every
        COMPLEX variable in it is."""
        kinds = {s.dtype for n in walk(node, F.Name) if (s := self.scope.lookup(str(n).lower())) is not None
                 and s.complex}
        return DType.F32 if kinds == {DType.F32} else DType.F64

    def intrinsic_ref(self, node: object) -> Expr:
        name = str(node.items[0]).lower()  # type: ignore[attr-defined]
        subs = list(node.items[1].items) if node.items[1] is not None else []  # type: ignore[attr-defined]
        if (part := self.complex_part(name, subs)) is not None:
            return part
        if name in _MATH or name in _CASTS or name in ("mod", "dmod", "amod", "nint", "idnint", "floor", "ceiling"):
            return self.intrinsic(name, subs)
        if name in ARRAY_INTRINSICS and self.array_intrinsic is not None:
            return self.array_intrinsic(name, subs)
        raise Unsupported(f"intrinsic {name.upper()} at {self.where()} cannot be lowered")


_HANDLERS: MappingProxyType[type, Callable[[ExprLowerer, object], Expr]] = MappingProxyType({
    F.Name: ExprLowerer.name,  # type: ignore[dict-item]
    F.Part_Ref: ExprLowerer.part_ref,
    F.Function_Reference: ExprLowerer.part_ref,
    F.Structure_Constructor: ExprLowerer.part_ref,
    F.Int_Literal_Constant: ExprLowerer.int_lit,
    F.Real_Literal_Constant: ExprLowerer.real_lit,
    F.Logical_Literal_Constant: ExprLowerer.logical_lit,
    F.Char_Literal_Constant: ExprLowerer.char_lit,
    F.Intrinsic_Function_Reference: ExprLowerer.intrinsic_ref,
})


def is_lvalue(e: Expr) -> bool:
    return isinstance(e, (Var, Load))


__all__ = ["Access", "ExprLowerer", "SrcLoop", "coerce", "is_lvalue", "promote", "ir"]
