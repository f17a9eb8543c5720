"""Expressions of the Triton target: device code (inside ``@triton.jit``) and
host code (the plain-Python launcher).

Device rules that keep the generated code exact and portable across Triton
versions (3.4 and later, interpreter and GPU):

* Var-free subexpressions are folded at render time with source semantics;
  a lone literal is "weakly typed" in Triton and takes the dtype of the tensor
  it meets, so ``x * 0.1`` stays exact in f64. Two literals would be combined in
  fp32 by Triton, hence the folding.
* An operand whose IR dtype differs from the operation's is cast explicitly
  (Triton computes ``int * 0.5`` in fp32).
* Integer ``//`` and ``%`` follow C semantics in Triton (``arith.divsi`` /
  ``remsi``; the interpreter emulates them), float ``%`` is ``fmod``; that is
  the IR's semantics, so they are used as is.
* libdevice (``tl.extra``) does not run in the interpreter, so intrinsics
  missing from ``tl`` are small ``@triton.jit`` helpers emitted into the
  module (see ``HELPERS``): one code path, validated on the CPU, run on the GPU.
"""

from __future__ import annotations

import keyword
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from translate import ir
from translate.flat import FlatIndex

TL_DTYPE = {
    ir.DType.F64: "tl.float64", ir.DType.F32: "tl.float32", ir.DType.F16: "tl.float16",
    ir.DType.BF16: "tl.bfloat16", ir.DType.I32: "tl.int32", ir.DType.I64: "tl.int64",
    ir.DType.BOOL: "tl.int1", ir.DType.CHAR: "tl.int32",
}
TORCH_DTYPE = {
    ir.DType.F64: "torch.float64", ir.DType.F32: "torch.float32", ir.DType.F16: "torch.float16",
    ir.DType.BF16: "torch.bfloat16", ir.DType.I32: "torch.int32", ir.DType.I64: "torch.int64",
    ir.DType.BOOL: "torch.int32", ir.DType.CHAR: "torch.int32",
}

def dev_dtype(dtype: ir.DType) -> str:
    """The Triton dtype of a device value: every integer is int64 on the
    device (element offsets of big arrays never overflow; loop-carried values
    keep one type), booleans are int1, characters their code."""
    if dtype.is_int or dtype is ir.DType.CHAR:
        return "tl.int64"
    if dtype in (ir.DType.F16, ir.DType.BF16):
        return "tl.float32"  # f16/bf16 are storage types: loads widen, stores narrow, arithmetic is fp32
    return TL_DTYPE[dtype]


# Names the generated code defines itself; an IR name equal to one of them gets a trailing "_".
RESERVED = frozenset({
    "tl", "triton", "torch", "math", "sys", "range", "min", "max", "abs", "int", "float", "bool", "str",
    "len", "print", "pid", "offs", "mask", "rem", "BLOCK", "block", "dict", "object", "ord",
    "dev", "grid", "rows", "chunk", "chunks", "lanes", "partials", "kt_at",  # the launchers' own locals
    "lane", "across", "down", "first", "live", "run", "in_plane", "zero_lanes", "tile", "part",  # kernels' locals
    "kt_top", "kt_k", "kt_terms", "kt_carry", "kt_totals", "kt_sums", "kt_p",
    "kt_a", "kt_ta", "kt_mul",  # targets.triton_scan
    "WIDTH", "ROWS", "PLANES", "TILES", "CHUNK",
})


def py_name(name: str) -> str:
    """The Python identifier for an IR name (host and device alike)."""
    if keyword.iskeyword(name) or name in RESERVED or re.fullmatch(r"mask\d+|_.*", name):
        return name + "_"
    return name


class UnsupportedExpr(Exception):
    """Raised with the offending node; the renderer turns it into ``Unsupported``."""

    def __init__(self, node: object, reason: str) -> None:
        super().__init__(reason)
        self.node = node
        self.reason = reason


def is_constant(e: ir.Expr) -> bool:
    return not any(isinstance(n, (ir.Var, ir.Load)) for n in ir.walk(e))


def fold(e: ir.Expr) -> ir.Expr:
    """``e`` as a single ``Const`` when it reads no variable and evaluates."""
    if isinstance(e, ir.Const) or not is_constant(e):
        return e
    try:
        value = ir.evaluate(e, {})
    except (ArithmeticError, ValueError, TypeError, KeyError):
        return e
    dtype = e.dtype
    if dtype.is_float:
        value = float(value)
    elif dtype.is_int:
        value = int(value)
    return ir.Const(value, dtype)


def py_float(v: float) -> str:
    if math.isnan(v):
        return 'float("nan")'
    if math.isinf(v):
        return 'float("inf")' if v > 0 else '-float("inf")'
    return repr(float(v))


def literal(value: object, dtype: ir.DType, device: bool) -> str:
    if dtype is ir.DType.CHAR or isinstance(value, str):
        s = str(value)
        return str(ord(s[0]) if s else 32) if device else repr(s)
    if dtype is ir.DType.BOOL or isinstance(value, bool):
        return "True" if value else "False"
    if dtype.is_float:
        return py_float(float(value))  # type: ignore[arg-type]
    return str(int(value))  # type: ignore[call-overload]


def common(a: ir.DType, b: ir.DType) -> ir.DType:
    """The dtype two comparison operands are brought to."""
    if a == b:
        return a
    order = [ir.DType.BOOL, ir.DType.CHAR, ir.DType.I32, ir.DType.I64, ir.DType.BF16, ir.DType.F16,
             ir.DType.F32, ir.DType.F64]
    return max(a, b, key=lambda d: order.index(d) if d in order else 0)


def linear_index(decl: ir.Array, index: tuple[str, ...], shape: tuple[str, ...]) -> str:
    """Element offset of ``decl[index]`` by layout (Horner form)."""
    if len(index) != decl.rank:
        raise UnsupportedExpr(decl, f"{decl.name} has rank {decl.rank}, accessed with {len(index)} indices")
    if decl.rank == 0:
        return "0"
    order = list(range(decl.rank)) if decl.layout is ir.Layout.LEFT else list(range(decl.rank - 1, -1, -1))
    text = index[order[-1]]
    for k in reversed(order[:-1]):
        text = f"{index[k]} + {shape[k]} * ({text})" if text != "0" else index[k]
    return text


def split_terms(e: ir.Expr, varies: Callable[[ir.Expr], bool]) -> tuple[ir.Expr | None, ir.Expr | None]:
    """``e`` as the sum of the terms of its outermost additions and subtractions for which ``varies``
    is false and the sum of those for which it is true (None: no such term)."""
    def terms(x: ir.Expr, sign: int) -> list[tuple[int, ir.Expr]]:
        if isinstance(x, ir.BinOp) and x.op in ("add", "sub") and x.dtype == e.dtype:
            return terms(x.lhs, sign) + terms(x.rhs, sign if x.op == "add" else -sign)
        return [(sign, x)]

    def total(group: list[tuple[int, ir.Expr]]) -> ir.Expr | None:
        if not group:
            return None
        group = sorted(group, key=lambda t: -t[0])  # a positive term first, when there is one
        sign, out = group[0]
        if sign < 0:
            out = ir.UnOp("neg", out, e.dtype)
        for sign, x in group[1:]:
            out = ir.BinOp("add" if sign > 0 else "sub", out, x, e.dtype)
        return out

    parts = terms(e, 1)
    return total([t for t in parts if not varies(t[1])]), total([t for t in parts if varies(t[1])])


def atomic(text: str) -> bool:
    """True when ``text`` needs no parentheses as an operand: a name, a number,
    a call or an expression already in parentheses."""
    if re.fullmatch(r"[\w.]+", text):
        return True
    m = re.match(r"[\w.]*\(", text)
    if not m:
        return False
    depth = 0
    for k, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return k == len(text) - 1
    return False


ARITH = {"add": "+", "sub": "-", "mul": "*"}
CMP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}


@dataclass
class DeviceExpr:
    """Renders IR expressions as Triton device code.

    ``mask`` is the current predicate of the lanes (None in single-program
    kernels); loads are masked with it. ``helpers`` collects the names of the
    jit helpers the code calls (emitted once into the module).
    """

    kernel: ir.Kernel
    mask: str | None = None
    helpers: set[str] = field(default_factory=set)
    vector: set[str] = field(default_factory=set)  # names whose value differs between lanes
    # Schedule.shared_subscript_first: a 1-D subscript's shared part added to the pointer first
    shared_subscript_first: bool = False
    # translate.flat: the accesses at the lane's flat index ``offs`` (a flat tile's nest), else None
    flat: FlatIndex | None = None

    def __call__(self, e: ir.Expr) -> str:
        return self.expr(fold(e))

    def typed(self, e: ir.Expr, dtype: ir.DType) -> str:
        """``e`` converted to ``dtype``; literals stay weakly typed."""
        e = fold(e)
        if isinstance(e, ir.Const):
            return literal(e.value, dtype, True)
        text = self.expr(e)
        if dev_dtype(e.dtype) == dev_dtype(dtype):
            return text
        return f"tl.cast({text}, {dev_dtype(dtype)})"

    def tensor(self, e: ir.Expr, dtype: ir.DType) -> str:
        """Like ``typed`` but a literal becomes a tensor of ``dtype`` (for helper
        arguments, where it would otherwise turn into an fp32 constant)."""
        e = fold(e)
        if isinstance(e, ir.Const):
            return f"tl.full([], {literal(e.value, dtype, True)}, {dev_dtype(dtype)})"
        return self.typed(e, dtype)

    def expr(self, e: ir.Expr) -> str:
        method = getattr(self, f"visit_{type(e).__name__}", None)
        if method is None:
            raise UnsupportedExpr(e, f"no Triton rendering for {type(e).__name__}")
        return method(e)

    def visit_Const(self, e: ir.Const) -> str:
        return literal(e.value, e.dtype, True)

    def visit_Var(self, e: ir.Var) -> str:
        return py_name(e.name)

    def offset(self, array: str, index: tuple[ir.Expr, ...]) -> str:
        decl = self.kernel.param(array)
        if not isinstance(decl, ir.Array):
            raise UnsupportedExpr(decl, f"{array} is indexed but is not an array")
        idx = tuple(self(i) for i in index)  # device integers are int64: no overflow
        shape = tuple(self._wrap(self(s)) for s in decl.shape)
        return linear_index(decl, idx, shape)

    def is_vector(self, e: ir.Expr) -> bool:
        """Whether ``e`` differs between lanes (reads a lane variable or an array)."""
        return any(isinstance(n, ir.Load) or (isinstance(n, ir.Var) and n.name in self.vector) for n in ir.walk(e))

    def pointer(self, array: str, index: tuple[ir.Expr, ...]) -> str:
        if self.shared_subscript_first and len(index) == 1 and isinstance(self.kernel.param(array), ir.Array):
            shared, lanes = split_terms(fold(index[0]), self.is_vector)
            if shared is not None and lanes is not None and not isinstance(fold(shared), ir.Const):
                return f"({py_name(array)} + {self._wrap(self(shared))}) + {self._wrap(self(lanes))}"
        if self.flat is not None and self.flat.covers(self.kernel.param(array), index):
            return f"{py_name(array)} + offs"
        ptr = f"{py_name(array)} + {self.offset(array, index)}"
        if self.mask is not None and not any(self.is_vector(i) for i in index):
            ptr += " + zero_lanes"  # a lane-invariant address, broadcast to the tile for the mask
        return ptr

    def visit_Load(self, e: ir.Load) -> str:
        ptr = self.pointer(e.array, e.index)
        if self.mask is None:
            text = f"tl.load({ptr})"
        else:
            text = f"tl.load({ptr}, mask={self.mask}, other={'0.0' if e.dtype.is_float else '0'})"
        if e.dtype in (ir.DType.F16, ir.DType.BF16):
            return f"{text}.to(tl.float32)"
        return f"({text} != 0)" if e.dtype is ir.DType.BOOL else text

    @staticmethod
    def _wrap(text: str) -> str:
        return text if atomic(text) else f"({text})"

    def operand(self, e: ir.Expr, dtype: ir.DType) -> str:
        return self._wrap(self.typed(e, dtype))

    def visit_BinOp(self, e: ir.BinOp) -> str:
        op = e.op
        rhs = fold(e.rhs)
        if op in ("add", "sub") and isinstance(rhs, ir.Const) and not isinstance(rhs.value, (bool, str)):
            if rhs.value == 0:
                return self.typed(e.lhs, e.dtype)
            if rhs.value < 0 and e.dtype == rhs.dtype:
                flipped = "sub" if op == "add" else "add"
                return f"({self.operand(e.lhs, e.dtype)} {ARITH[flipped]} {literal(-rhs.value, rhs.dtype, True)})"
        if op == "mul" and rhs == ir.Const(1, e.dtype):
            return self.typed(e.lhs, e.dtype)
        if op in ARITH:
            return f"({self.operand(e.lhs, e.dtype)} {ARITH[op]} {self.operand(e.rhs, e.dtype)})"
        if op == "div":
            sym = "//" if e.dtype.is_int else "/"
            return f"({self.operand(e.lhs, e.dtype)} {sym} {self.operand(e.rhs, e.dtype)})"
        if op == "mod":  # C semantics for ints, fmod for floats: the IR's
            return f"({self.operand(e.lhs, e.dtype)} % {self.operand(e.rhs, e.dtype)})"
        if op == "pow":
            return self.power(e)
        if op in CMP:
            dt = common(e.lhs.dtype, e.rhs.dtype)
            return f"({self.operand(e.lhs, dt)} {CMP[op]} {self.operand(e.rhs, dt)})"
        if op in ("and", "or"):
            sym = "&" if op == "and" else "|"
            return f"({self.operand(e.lhs, ir.DType.BOOL)} {sym} {self.operand(e.rhs, ir.DType.BOOL)})"
        raise UnsupportedExpr(e, f"binary operator '{op}'")

    def power(self, e: ir.BinOp) -> str:
        rhs = fold(e.rhs)
        base = self.operand(e.lhs, e.dtype)
        if isinstance(rhs, ir.Const) and float(rhs.value) == int(float(rhs.value)) and abs(int(rhs.value)) <= 8:
            n = int(rhs.value)
            if n == 0:
                return literal(1, e.dtype, True)
            chain = "(" + " * ".join([base] * abs(n)) + ")"
            return chain if n > 0 else f"(1.0 / {chain})"
        if e.dtype.is_int:
            raise UnsupportedExpr(e, "integer power with a non-constant exponent")
        self.helpers.add("_kt_pow")
        return f"_kt_pow({self.tensor(e.lhs, e.dtype)}, {self.tensor(rhs, e.dtype)})"

    def visit_UnOp(self, e: ir.UnOp) -> str:
        if e.op == "neg":
            return f"(-{self.operand(e.operand, e.dtype)})"
        if e.op == "not":
            return f"({self.operand(e.operand, ir.DType.BOOL)} == 0)"
        raise UnsupportedExpr(e, f"unary operator '{e.op}'")

    def visit_Select(self, e: ir.Select) -> str:
        return f"tl.where({self.typed(e.cond, ir.DType.BOOL)}, {self.typed(e.if_true, e.dtype)}, " \
               f"{self.typed(e.if_false, e.dtype)})"

    def visit_Cast(self, e: ir.Cast) -> str:
        inner = fold(e.expr)
        if isinstance(inner, ir.Const):
            return literal(inner.value, e.dtype, True)
        if e.dtype is ir.DType.BOOL:
            return f"({self.expr(inner)} != 0)"
        if e.dtype in (ir.DType.F16, ir.DType.BF16):  # an explicit narrowing rounds, then computes on in fp32
            return f"tl.cast(tl.cast({self.expr(inner)}, {TL_DTYPE[e.dtype]}), tl.float32)"
        return f"tl.cast({self.expr(inner)}, {dev_dtype(e.dtype)})"

    _SIMPLE = {"abs": "tl.abs", "sqrt": "tl.sqrt", "exp": "tl.exp", "log": "tl.log", "sin": "tl.sin",
               "cos": "tl.cos", "erf": "tl.erf"}
    _HELPER = {"tan": "_kt_tan", "asin": "_kt_asin", "acos": "_kt_acos", "atan": "_kt_atan",
               "atan2": "_kt_atan2", "sinh": "_kt_sinh", "cosh": "_kt_cosh", "tanh": "_kt_tanh",
               "log1p": "_kt_log1p", "expm1": "_kt_expm1"}

    def visit_Call(self, e: ir.Call) -> str:
        fn, dt = e.fn, e.dtype
        if fn == "lsame":
            return f"({self.upper(e.args[0])} == {self.upper(e.args[1])})"
        if fn in ("min", "max"):
            args = [self.typed(a, dt) for a in e.args]
            text = args[0]
            for a in args[1:]:
                text = f"tl.{'minimum' if fn == 'min' else 'maximum'}({text}, {a})"
            return text
        if fn == "abs" and dt.is_int:
            return f"tl.abs({self.typed(e.args[0], dt)})"
        argdt = dt if dt.is_float else (e.args[0].dtype if e.args[0].dtype.is_float else ir.DType.F64)
        args = [self.typed(a, argdt) for a in e.args]
        if fn in self._SIMPLE:
            return f"{self._SIMPLE[fn]}({args[0]})"
        if fn in self._HELPER:
            self.helpers.add(self._HELPER[fn])
            return f"{self._HELPER[fn]}({', '.join(self.tensor(a, argdt) for a in e.args)})"
        if fn == "log10":
            return f"(tl.log({args[0]}) * 0.4342944819032518)"
        if fn == "sign":
            a, b = self.typed(e.args[0], dt), self.typed(e.args[1], dt)
            return f"tl.where({self._wrap(b)} >= 0, tl.abs({a}), -tl.abs({a}))"
        if fn in ("floor", "ceil"):
            text = f"tl.{fn}({args[0]})"
            return f"tl.cast({text}, {dev_dtype(dt)})" if dt.is_int else text
        if fn == "nint":  # round half away from zero
            x = self._wrap(args[0])
            text = f"tl.where({x} >= 0, tl.floor({x} + 0.5), tl.ceil({x} - 0.5))"
            return f"tl.cast({text}, {dev_dtype(dt)})" if dt.is_int else text
        raise UnsupportedExpr(e, f"intrinsic '{fn}' has no Triton rendering")

    def upper(self, e: ir.Expr) -> str:
        e = fold(e)
        if isinstance(e, ir.Const):
            return str(ord(str(e.value).upper()[:1] or " "))
        text = self._wrap(self.expr(e))
        return f"tl.where(({text} >= 97) & ({text} <= 122), {text} - 32, {text})"


# ------------------------------------------------------------------------ host


@dataclass
class HostExpr:
    """Renders IR expressions as plain Python (the launcher). ``helpers``
    collects the host helper functions used (``_c_div`` ...)."""

    kernel: ir.Kernel
    helpers: set[str] = field(default_factory=set)

    def __call__(self, e: ir.Expr) -> str:
        method = getattr(self, f"visit_{type(e).__name__}", None)
        if method is None:
            raise UnsupportedExpr(e, f"no Python rendering for {type(e).__name__}")
        return method(e)

    def visit_Const(self, e: ir.Const) -> str:
        return literal(e.value, e.dtype, False)

    def visit_Var(self, e: ir.Var) -> str:
        return py_name(e.name)

    def offset(self, array: str, index: tuple[ir.Expr, ...]) -> str:
        decl = self.kernel.param(array)
        if not isinstance(decl, ir.Array):
            raise UnsupportedExpr(decl, f"{array} is indexed but is not an array")
        idx = tuple(self(i) for i in index)
        shape = tuple(f"({self(s)})" for s in decl.shape)
        return linear_index(decl, idx, shape)

    def visit_Load(self, e: ir.Load) -> str:
        return f"{py_name(e.array)}[{self.offset(e.array, e.index)}].item()"

    def visit_BinOp(self, e: ir.BinOp) -> str:
        a, b = self(e.lhs), self(e.rhs)
        if e.op in ARITH:
            return f"({a} {ARITH[e.op]} {b})"
        if e.op == "div":
            if e.dtype.is_int:
                self.helpers.add("_c_div")
                return f"_c_div({a}, {b})"
            return f"({a} / {b})"
        if e.op == "mod":
            if e.dtype.is_int:
                self.helpers.add("_c_mod")
                return f"_c_mod({a}, {b})"
            return f"math.fmod({a}, {b})"
        if e.op == "pow":
            return f"({a} ** {b})"
        if e.op in CMP:
            return f"({a} {CMP[e.op]} {b})"
        if e.op in ("and", "or"):
            return f"({a} {e.op} {b})"
        raise UnsupportedExpr(e, f"binary operator '{e.op}'")

    def visit_UnOp(self, e: ir.UnOp) -> str:
        if e.op == "neg":
            return f"(-{self(e.operand)})"
        if e.op == "not":
            return f"(not {self(e.operand)})"
        raise UnsupportedExpr(e, f"unary operator '{e.op}'")

    def visit_Select(self, e: ir.Select) -> str:
        return f"({self(e.if_true)} if {self(e.cond)} else {self(e.if_false)})"

    def visit_Cast(self, e: ir.Cast) -> str:
        inner = self(e.expr)
        if e.dtype.is_int:
            return f"int({inner})"  # truncates toward zero, like Fortran INT
        if e.dtype.is_float:
            return f"float({inner})"
        if e.dtype is ir.DType.BOOL:
            return f"bool({inner})"
        return inner

    def visit_Call(self, e: ir.Call) -> str:
        args = [self(a) for a in e.args]
        fn = e.fn
        if fn == "lsame":
            up = [repr(str(a.value).upper()) if isinstance(a, ir.Const) else f"{t}.upper()"
                  for a, t in zip(e.args, args, strict=True)]
            return f"({up[0]} == {up[1]})"
        if fn in ("min", "max", "abs"):
            return f"{fn}({', '.join(args)})"
        if fn == "sign":
            self.helpers.add("_sign")
            return f"_sign({args[0]}, {args[1]})"
        if fn == "nint":
            self.helpers.add("_nint")
            return f"_nint({args[0]})"
        if fn in ("floor", "ceil"):
            text = f"math.{fn}({args[0]})"
            return text if e.dtype.is_int else f"float({text})"
        if fn in ir.INTRINSICS or fn == "erf":
            return f"math.{fn}({', '.join(args)})"
        raise UnsupportedExpr(e, f"intrinsic '{fn}'")
