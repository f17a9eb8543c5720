"""Expressions of the C-style targets (a mixin of :class:`targets.cstyle.CStyleRenderer`):
literals, precedence-aware operators (minimal parentheses that keep the IR's evaluation
order), casts, f16/bf16 storage computed on in float, and intrinsics with Fortran semantics.
It reads the renderer's ``var``, ``array_ref``, ``ctype``, ``use`` and ``unsupported``."""

from __future__ import annotations

from types import MappingProxyType

from translate import ir
from translate.ir import DType

# operator -> (spelling, precedence); higher binds tighter
_BINOPS = MappingProxyType({
    "or": ("||", 4), "and": ("&&", 5), "eq": ("==", 9), "ne": ("!=", 9), "lt": ("<", 10), "le": ("<=", 10),
    "gt": (">", 10), "ge": (">=", 10), "add": ("+", 12), "sub": ("-", 12), "mul": ("*", 13), "div": ("/", 13),
    "mod": ("%", 13),
})
_UNARY, _PRIMARY, _TERNARY = 14, 16, 3

_MATH = ("sqrt", "exp", "log", "log10", "sin", "cos", "tan", "asin", "acos", "atan", "atan2",
         "sinh", "cosh", "tanh", "floor", "ceil", "erf", "log1p", "expm1")
# storage-only float types: loads widen to float, arithmetic is float, stores narrow
NARROW = (DType.F16, DType.BF16)  # stored narrow, computed on in float


class CExpressions:
    """``expr`` and the ``visit_*`` rules it dispatches to, each giving (text, precedence)."""

    def expr(self, e: ir.Expr) -> str:
        return self.visit(e)[0]

    def visit_Const(self, e: ir.Const) -> tuple[str, int]:
        text = self.literal(e.value, e.dtype)
        return text, _UNARY if text.startswith("-") else _PRIMARY

    def literal(self, value: object, dtype: DType) -> str:
        if dtype is DType.CHAR:
            s = str(value)
            if len(s) != 1:
                return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
            return "'\\''" if s == "'" else "'\\\\'" if s == "\\" else f"'{s}'"
        if dtype is DType.BOOL:
            return "true" if value else "false"
        if dtype.is_int:
            return f"{int(value)}LL" if dtype is DType.I64 else str(int(value))  # type: ignore[call-overload]
        x = float(value)  # type: ignore[arg-type]
        if x != x:
            return "NAN"
        if x in (float("inf"), float("-inf")):
            return "INFINITY" if x > 0 else "-INFINITY"
        text = repr(x)
        if "e" not in text and "." not in text:
            text += ".0"
        return f"{text}f" if dtype is DType.F32 or dtype in NARROW else text

    def visit_Var(self, e: ir.Var) -> tuple[str, int]:
        return self.var(e.name), _PRIMARY

    def visit_Load(self, e: ir.Load) -> tuple[str, int]:
        ref = self.array_ref(e.array, e.index)
        if e.dtype in NARROW:
            return self.widen(ref, e.dtype), _PRIMARY
        return ref, _PRIMARY

    def widen(self, text: str, dtype: DType) -> str:
        """A f16/bf16 value as float (the backend's conversion)."""
        return f"static_cast<float>({text})"

    def narrow(self, text: str, dtype: DType) -> str:
        """A float value rounded to f16/bf16 storage."""
        return f"static_cast<{self.ctype(dtype)}>({text})"

    def visit_BinOp(self, e: ir.BinOp) -> tuple[str, int]:
        if e.op == "pow":
            return self.power(e)
        if e.op == "mod" and e.lhs.dtype.is_float:
            return f"{self.math('fmod', e.dtype)}({self.expr(e.lhs)}, {self.expr(e.rhs)})", _PRIMARY
        if e.op not in _BINOPS:
            raise self.unsupported(e, f"operator '{e.op}'")
        sym, prec = _BINOPS[e.op]
        left, lp = self.visit(e.lhs)
        right, rp = self.visit(e.rhs)
        if lp < prec or (e.op == "or" and _is_op(e.lhs, "and")):
            left = f"({left})"
        if rp <= prec or right.startswith("-") or (e.op == "or" and _is_op(e.rhs, "and")):
            right = f"({right})"
        return f"{left} {sym} {right}", prec

    def power(self, e: ir.BinOp) -> tuple[str, int]:
        base, exp = e.lhs, e.rhs
        if isinstance(exp, ir.Const) and exp.dtype.is_int:
            k = int(exp.value)  # type: ignore[arg-type]
            simple = isinstance(base, (ir.Var, ir.Load, ir.Const))
            if k == 1:
                return self.visit(base)
            if k in (2, 3) and simple:
                prod: ir.Expr = base
                for _ in range(k - 1):
                    prod = ir.BinOp("mul", prod, base, e.dtype)
                return self.visit(prod)
        if e.dtype.is_int:
            return f"{self.use('kt_ipow')}({self.expr(base)}, {self.expr(exp)})", _PRIMARY
        ex = self.expr(exp) if exp.dtype.is_float else f"({self.ctype(e.dtype)})({self.expr(exp)})"
        if isinstance(exp, ir.Const) and exp.dtype.is_int:
            ex = self.literal(exp.value, e.dtype)
        return f"{self.math('pow', e.dtype)}({self.expr(base)}, {ex})", _PRIMARY

    def visit_UnOp(self, e: ir.UnOp) -> tuple[str, int]:
        text, prec = self.visit(e.operand)
        sym = "-" if e.op == "neg" else "!"
        if e.op not in ("neg", "not"):
            raise self.unsupported(e, f"unary '{e.op}'")
        if prec < _UNARY or text.startswith(("-", "!")):
            text = f"({text})"
        return f"{sym}{text}", _UNARY

    def visit_Select(self, e: ir.Select) -> tuple[str, int]:
        parts = []
        for sub in (e.cond, e.if_true, e.if_false):
            text, prec = self.visit(sub)
            parts.append(f"({text})" if prec <= _TERNARY else text)
        return f"{parts[0]} ? {parts[1]} : {parts[2]}", _TERNARY

    def visit_Cast(self, e: ir.Cast) -> tuple[str, int]:
        text, prec = self.visit(e.expr)
        if e.expr.dtype == e.dtype:
            return text, prec
        if e.dtype in NARROW:  # round to the narrow type, compute on in float
            return self.widen(self.narrow(text, e.dtype), e.dtype), _PRIMARY
        if prec < _UNARY:
            text = f"({text})"
        return f"({self.ctype(e.dtype)}){text}", _UNARY

    def math(self, fn: str, dtype: DType) -> str:
        return f"{fn}f" if dtype is DType.F32 or dtype in NARROW else fn

    def _args(self, e: ir.Call, typed: bool) -> list[str]:
        out = []
        for a in e.args:
            if typed and a.dtype != e.dtype and e.dtype is not DType.BOOL:
                out.append(self.expr(ir.Cast(e.dtype, a)))
            else:
                out.append(self.expr(a))
        return out

    def visit_Call(self, e: ir.Call) -> tuple[str, int]:
        fn, dt = e.fn, e.dtype
        if fn == "lsame":
            return f"{self.use('kt_lsame')}({', '.join(self._args(e, False))})", _PRIMARY
        if fn in ("min", "max"):
            args = self._args(e, True)
            name = self.math(f"f{fn}", dt) if dt.is_float else self.use(f"kt_{fn}")
            text = args[0]
            for a in args[1:]:
                text = f"{name}({text}, {a})"
            return text, _PRIMARY
        if fn == "abs":
            (a,) = self._args(e, True)
            name = self.math("fabs", dt) if dt.is_float else ("llabs" if dt is DType.I64 else "abs")
            return f"{name}({a})", _PRIMARY
        if fn == "sign":
            a, b = self._args(e, True)
            if dt.is_float:
                return f"{self.math('copysign', dt)}({self.math('fabs', dt)}({a}), {b})", _PRIMARY
            return f"{self.use('kt_sign')}({a}, {b})", _PRIMARY
        if fn == "nint":
            (a,) = self._args(e, False)
            arg_t = e.args[0].dtype
            base = "llround" if dt is DType.I64 else "lround"
            return f"({self.ctype(dt)}){self.math(base, arg_t)}({a})", _UNARY
        if fn in _MATH:
            arg_t = e.args[0].dtype if e.args else dt
            ftype = arg_t if arg_t.is_float else DType.F64
            args = [self.expr(a if a.dtype == ftype else ir.Cast(ftype, a)) for a in e.args]
            text = f"{self.math(fn, ftype)}({', '.join(args)})"
            if dt.is_int:
                return f"({self.ctype(dt)}){text}", _UNARY
            return text, _PRIMARY
        raise self.unsupported(e, f"intrinsic '{fn}'")


def _is_op(e: ir.Expr, op: str) -> bool:
    return isinstance(e, ir.BinOp) and e.op == op
