"""Elementwise ATen ops (arithmetic, activations, comparisons, casts, constants)
and the handler registry of the PyTorch lowering.

A handler is ``fn(lw, node, args, kwargs) -> TVal | tuple | Expr``: ``args`` are
the node's arguments with graph nodes replaced by their values (``TVal`` for
tensors, IR integer expressions for symbolic ints).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch

from parsers.base import Unsupported
from parsers.torch_dtypes import compute_dtype, ir_dtype
from parsers.torch_emit import Emitter, Index, TVal, cast
from translate.ir import BinOp, Call, Const, DType, Expr, Select, UnOp

if TYPE_CHECKING:
    from parsers.torch_lower import Lowerer

Handler = Callable[["Lowerer", torch.fx.Node, tuple, dict], object]
F32 = DType.F32
BOOL = DType.BOOL


# ----------------------------------------------------------------- helpers


def bidx(shape: tuple[Expr, ...], idx: Index) -> Index:
    """Broadcast an output index to an operand of ``shape`` (aligned right)."""
    tail = idx[len(idx) - len(shape):] if shape else ()
    return tuple(Const(0, DType.I32) if isinstance(e, Const) and e.value == 1 else i for e, i in zip(shape, tail,
                                                                                                   strict=True))


def operand(em: Emitter, a: object, idx: Index) -> Expr:
    if isinstance(a, TVal):
        return em.read(a, bidx(a.shape, idx))
    return const(a)


def const(a: object) -> Expr:
    if isinstance(a, bool):
        return Const(a, BOOL)
    if isinstance(a, int):
        return Const(a, DType.I64)
    if isinstance(a, float):
        return Const(a, F32)
    if isinstance(a, (Const, BinOp, UnOp, Call, Select)) or hasattr(a, "dtype") and hasattr(a, "__dataclass_fields__"):
        return a  # type: ignore[return-value]
    raise Unsupported(f"operand {a!r} is not a tensor or a number")


def dtype_of(a: object) -> DType:
    if isinstance(a, TVal):
        return a.cdtype
    return const(a).dtype


def promote(dts: list[DType]) -> DType:
    for d in (DType.F64, DType.F32, DType.BF16, DType.F16):
        if d in dts:
            return compute_dtype(d)
    for d in (DType.I64, DType.I32):
        if d in dts:
            return d
    return BOOL


def ew(lw: Lowerer, inputs: list[object], fn: Callable[[list[Expr]], Expr], label: str,
       operands: str = "out", dtype: DType | None = None) -> TVal:
    """An elementwise value over ``inputs`` (broadcast to the node's shape). ``operands``:
    "out" casts operands to the result's compute dtype, "promote" to their common
    dtype (comparisons), "none" leaves them."""
    node = lw.node
    assert node is not None
    shape = lw.shape(node)
    dt = dtype or lw.dtype(node)
    cdt = compute_dtype(dt)
    ins = list(inputs)
    opd = cdt if operands == "out" else promote([dtype_of(a) for a in ins if a is not None])

    def elem(em: Emitter, idx: Index) -> Expr:
        vals = [operand(em, a, idx) for a in ins]
        if operands != "none":
            vals = [cast(v, opd) for v in vals]
        return cast(fn(vals), cdt)

    return TVal(shape, dt, elem=elem, node=node.name, label=label)


def b(op: str, a: Expr, c: Expr) -> Expr:
    dt = BOOL if op in ("lt", "le", "gt", "ge", "eq", "ne", "and", "or") else a.dtype
    return BinOp(op, a, cast(c, a.dtype) if dt is not BOOL or op not in ("and", "or") else c, dt)


def k(v: float, like: Expr) -> Expr:
    return cast(Const(float(v) if like.dtype.is_float else v, like.dtype), like.dtype)


def call(fn: str, *args: Expr) -> Expr:
    return Call(fn, tuple(args), args[0].dtype)


def sigmoid(x: Expr) -> Expr:
    return b("div", k(1.0, x), b("add", k(1.0, x), call("exp", UnOp("neg", x, x.dtype))))


def softplus(x: Expr, beta: float = 1.0, threshold: float = 20.0) -> Expr:
    bx = b("mul", x, k(beta, x)) if beta != 1 else x
    soft = call("log1p", call("exp", bx))
    if beta != 1:
        soft = b("div", soft, k(beta, x))
    return Select(b("gt", bx, k(threshold, x)), x, soft, x.dtype)


def erf_gelu(x: Expr) -> Expr:
    return b("mul", b("mul", k(0.5, x), x), b("add", k(1.0, x), call("erf", b("mul", x, k(1 / math.sqrt(2), x)))))


def tanh_gelu(x: Expr) -> Expr:
    inner = b("mul", k(math.sqrt(2 / math.pi), x), b("add", x, b("mul", k(0.044715, x), b("mul", x, b("mul", x, x)))))
    return b("mul", b("mul", k(0.5, x), x), b("add", k(1.0, x), call("tanh", inner)))


def powi(x: Expr, e: float) -> Expr:
    if e == 1:
        return x
    if e == 2:
        return b("mul", x, x)
    if e == 3:
        return b("mul", x, b("mul", x, x))
    if e == 0.5:
        return call("sqrt", x)
    if e == -1:
        return b("div", k(1.0, x), x)
    if e == -0.5:
        return b("div", k(1.0, x), call("sqrt", x))
    if e == 0:
        return k(1.0, x)
    if float(e).is_integer() and 0 < e <= 8:
        out = x
        for _ in range(int(e) - 1):
            out = b("mul", out, x)
        return out
    return BinOp("pow", x, k(e, x), x.dtype)


# ------------------------------------------------------------------- ops


def _unary(fn: Callable[[Expr], Expr], label: str) -> Handler:
    def h(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
        return ew(lw, [args[0]], lambda v: fn(v[0]), label)

    return h


def _binary(op: str, label: str, alpha: bool = False, reverse: bool = False) -> Handler:
    def h(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
        a, c = args[0], args[1]
        al = kw.get("alpha", args[2] if len(args) > 2 else 1)
        if reverse:
            a, c = c, a

        def fn(v: list[Expr]) -> Expr:
            rhs = v[1] if not alpha or al == 1 else b("mul", v[1], k(al, v[1]))
            return b(op, v[0], rhs)

        return ew(lw, [a, c], fn, label)

    return h


def _compare(op: str) -> Handler:
    def h(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
        return ew(lw, [args[0], args[1]], lambda v: BinOp(op, v[0], v[1], BOOL), op, operands="promote")

    return h


def _div(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    mode = kw.get("rounding_mode", args[2] if len(args) > 2 else None)
    out_dt = lw.dtype(node)

    def fn(v: list[Expr]) -> Expr:
        if mode is None:
            return b("div", v[0], v[1])
        q = b("div", cast(v[0], F32), cast(v[1], F32))
        r = call("floor", q) if mode == "floor" else Select(b("lt", q, k(0.0, q)), call("ceil", q), call("floor", q),
                                                             F32)
        return cast(r, compute_dtype(out_dt))

    return ew(lw, [args[0], args[1]], fn, "div", operands="out" if mode is None else "none")


def _pow(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    base, e = args[0], args[1]
    if isinstance(e, (int, float)) and not isinstance(e, bool):
        return ew(lw, [base], lambda v: powi(v[0], float(e)), "pow")
    return ew(lw, [base, e], lambda v: BinOp("pow", v[0], v[1], v[0].dtype), "pow")


def _clamp(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    lo = kw.get("min", args[1] if len(args) > 1 else None)
    hi = kw.get("max", args[2] if len(args) > 2 else None)
    ins = [args[0]] + [x for x in (lo, hi) if x is not None]

    def fn(v: list[Expr]) -> Expr:
        out, rest = v[0], v[1:]
        if lo is not None:
            out = call("max", out, rest.pop(0))
        if hi is not None:
            out = call("min", out, rest.pop(0))
        return out

    return ew(lw, ins, fn, "clamp")


def _clamp_one(which: str) -> Handler:
    def h(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
        return ew(lw, [args[0], args[1]], lambda v: call(which, v[0], v[1]), f"clamp_{which}")

    return h


def _where(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    cdt = compute_dtype(lw.dtype(node))

    def fn(v: list[Expr]) -> Expr:
        return Select(cast(v[0], BOOL), cast(v[1], cdt), cast(v[2], cdt), cdt)

    return ew(lw, list(args[:3]), fn, "where", operands="none")


def _masked_fill(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    cdt = compute_dtype(lw.dtype(node))
    return ew(lw, [args[1], args[2], args[0]],
              lambda v: Select(cast(v[0], BOOL), cast(v[1], cdt), cast(v[2], cdt), cdt), "masked_fill",
              operands="none")


def _gelu(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    approx = kw.get("approximate", args[1] if len(args) > 1 else "none")
    return ew(lw, [args[0]], lambda v: tanh_gelu(v[0]) if approx == "tanh" else erf_gelu(v[0]), "gelu")


def _elu(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    alpha = float(kw.get("alpha", args[1] if len(args) > 1 else 1.0))
    scale = float(kw.get("scale", args[2] if len(args) > 2 else 1.0))
    iscale = float(kw.get("input_scale", args[3] if len(args) > 3 else 1.0))

    def fn(v: list[Expr]) -> Expr:
        x = v[0]
        neg = b("mul", k(alpha * scale, x), call("expm1", b("mul", x, k(iscale, x)) if iscale != 1 else x))
        return Select(b("gt", x, k(0.0, x)), b("mul", x, k(scale, x)) if scale != 1 else x, neg, x.dtype)

    return ew(lw, [args[0]], fn, "elu" if scale == 1 else "selu")


def _leaky(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    slope = float(kw.get("negative_slope", args[1] if len(args) > 1 else 0.01))
    return ew(lw, [args[0]], lambda v: Select(b("gt", v[0], k(0.0, v[0])), v[0], b("mul", v[0], k(slope, v[0])),
                                              v[0].dtype), "leaky_relu")


def _hardtanh(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    lo = float(kw.get("min_val", args[1] if len(args) > 1 else -1.0))
    hi = float(kw.get("max_val", args[2] if len(args) > 2 else 1.0))
    return ew(lw, [args[0]], lambda v: call("min", call("max", v[0], k(lo, v[0])), k(hi, v[0])), "hardtanh")


def _softplus(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    beta = float(kw.get("beta", args[1] if len(args) > 1 else 1.0))
    thr = float(kw.get("threshold", args[2] if len(args) > 2 else 20.0))
    return ew(lw, [args[0]], lambda v: softplus(v[0], beta, thr), "softplus")


def _sign(x: Expr) -> Expr:
    return Select(b("gt", x, k(0, x)), k(1, x), Select(b("lt", x, k(0, x)), k(-1, x), k(0, x), x.dtype), x.dtype)


def _to_copy(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    src = args[0]
    dt = lw.dtype(node)
    if isinstance(src, TVal) and src.dtype == dt:
        return src
    return ew(lw, [src], lambda v: cast(v[0], compute_dtype(dt)), f"cast to {dt.value}", operands="none")


def _copy(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    """``aten.copy(self, src)``: ``src`` broadcast to ``self``'s shape in ``self``'s dtype (an
    in-place ``copy_`` after functionalisation)."""
    return ew(lw, [args[1]], lambda v: v[0], "copy")


def _identity(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> object:
    return args[0]


def _scalar_tensor(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    dt = lw.dtype(node)
    v = args[0]
    return TVal((), dt, elem=lambda em, idx: cast(const(v), compute_dtype(dt)), node=node.name, kind="constant")


def _full(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    dt = lw.dtype(node)
    v = args[1]
    return TVal(lw.shape(node), dt, elem=lambda em, idx: cast(const(v), compute_dtype(dt)), node=node.name,
                kind="constant")


def _full_like(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    dt = lw.dtype(node)
    v = args[1]
    return TVal(lw.shape(node), dt, elem=lambda em, idx: cast(const(v), compute_dtype(dt)), node=node.name,
                kind="constant")


def _arange(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    dt = lw.dtype(node)
    if node.target is torch.ops.aten.arange.start_step:
        start, step = args[0], args[2] if len(args) > 2 else 1
    elif node.target is torch.ops.aten.arange.start:
        start, step = args[0], 1
    else:
        start, step = 0, 1
    cdt = compute_dtype(dt)

    def elem(em: Emitter, idx: Index) -> Expr:
        i = cast(idx[0], cdt)
        return b("add", cast(const(start), cdt), b("mul", i, cast(const(step), cdt)))

    return TVal(lw.shape(node), dt, elem=elem, node=node.name, label="arange")


def _logical(op: str) -> Handler:
    def h(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
        if lw.dtype(node) is not BOOL:
            raise Unsupported(f"bitwise {op} on integers at {lw.where(node)}")
        return ew(lw, [args[0], args[1]], lambda v: BinOp(op, cast(v[0], BOOL), cast(v[1], BOOL), BOOL), op,
                  operands="none")

    return h


def _not(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    if lw.dtype(node) is not BOOL:
        raise Unsupported(f"bitwise not on integers at {lw.where(node)}")
    return ew(lw, [args[0]], lambda v: UnOp("not", cast(v[0], BOOL), BOOL), "not", operands="none")


def _isnan(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    return ew(lw, [args[0]], lambda v: BinOp("ne", v[0], v[0], BOOL), "isnan", operands="none")


def _isinf(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    return ew(lw, [args[0]], lambda v: BinOp("eq", call("abs", v[0]), k(math.inf, v[0]), BOOL), "isinf",
              operands="none")


def _lerp(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    return ew(lw, list(args[:3]), lambda v: b("add", v[0], b("mul", v[2], b("sub", v[1], v[0]))), "lerp")


def _addcmul(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    val = kw.get("value", args[3] if len(args) > 3 else 1)
    op = "mul" if node.target.__name__.startswith("addcmul") else "div"  # type: ignore[union-attr]
    return ew(lw, list(args[:3]), lambda v: b("add", v[0], b("mul", k(val, v[1]), b(op, v[1], v[2]))), op)


def _ln2(x: Expr) -> Expr:
    return b("div", call("log", x), k(math.log(2.0), x))


EW_OPS: dict[str, Handler] = {
    "add": _binary("add", "add", alpha=True), "sub": _binary("sub", "sub", alpha=True),
    "rsub": _binary("sub", "rsub", alpha=True, reverse=True), "mul": _binary("mul", "mul"), "div": _div,
    "pow": _pow, "maximum": _clamp_one("max"), "minimum": _clamp_one("min"), "fmax": _clamp_one("max"),
    "fmin": _clamp_one("min"), "clamp": _clamp, "clip": _clamp, "clamp_min": _clamp_one("max"),
    "clamp_max": _clamp_one("min"), "where": _where, "masked_fill": _masked_fill,
    "eq": _compare("eq"), "ne": _compare("ne"), "lt": _compare("lt"), "le": _compare("le"),
    "gt": _compare("gt"), "ge": _compare("ge"),
    "logical_and": _logical("and"), "logical_or": _logical("or"), "bitwise_and": _logical("and"),
    "bitwise_or": _logical("or"), "logical_not": _not, "bitwise_not": _not, "isnan": _isnan, "isinf": _isinf,
    "neg": _unary(lambda x: UnOp("neg", x, x.dtype), "neg"), "abs": _unary(lambda x: call("abs", x), "abs"),
    "exp": _unary(lambda x: call("exp", x), "exp"), "log": _unary(lambda x: call("log", x), "log"),
    "log1p": _unary(lambda x: call("log1p", x), "log1p"), "expm1": _unary(lambda x: call("expm1", x), "expm1"),
    "log2": _unary(_ln2, "log2"), "log10": _unary(lambda x: call("log10", x), "log10"),
    "exp2": _unary(lambda x: call("exp", b("mul", x, k(math.log(2.0), x))), "exp2"),
    "sqrt": _unary(lambda x: call("sqrt", x), "sqrt"),
    "rsqrt": _unary(lambda x: b("div", k(1.0, x), call("sqrt", x)), "rsqrt"),
    "reciprocal": _unary(lambda x: b("div", k(1.0, x), x), "reciprocal"),
    "sin": _unary(lambda x: call("sin", x), "sin"), "cos": _unary(lambda x: call("cos", x), "cos"),
    "tan": _unary(lambda x: call("tan", x), "tan"), "tanh": _unary(lambda x: call("tanh", x), "tanh"),
    "asin": _unary(lambda x: call("asin", x), "asin"), "acos": _unary(lambda x: call("acos", x), "acos"),
    "atan": _unary(lambda x: call("atan", x), "atan"), "sinh": _unary(lambda x: call("sinh", x), "sinh"),
    "cosh": _unary(lambda x: call("cosh", x), "cosh"), "floor": _unary(lambda x: call("floor", x), "floor"),
    "ceil": _unary(lambda x: call("ceil", x), "ceil"), "erf": _unary(lambda x: call("erf", x), "erf"),
    "trunc": _unary(lambda x: Select(b("lt", x, k(0.0, x)), call("ceil", x), call("floor", x), x.dtype), "trunc"),
    "sigmoid": _unary(sigmoid, "sigmoid"), "relu": _unary(lambda x: call("max", x, k(0.0, x)), "relu"),
    "sign": _unary(_sign, "sign"), "silu": _unary(lambda x: b("mul", x, sigmoid(x)), "silu"),
    "mish": _unary(lambda x: b("mul", x, call("tanh", softplus(x))), "mish"),
    "hardsigmoid": _unary(lambda x: call("min", call("max", b("add", b("div", x, k(6.0, x)), k(0.5, x)),
                                                          k(0.0, x)), k(1.0, x)), "hardsigmoid"),
    "hardswish": _unary(lambda x: b("div", b("mul", x, call("min", call("max", b("add", x, k(3.0, x)), k(0.0, x)),
                                                            k(6.0, x))), k(6.0, x)), "hardswish"),
    "gelu": _gelu, "elu": _elu, "leaky_relu": _leaky, "hardtanh": _hardtanh, "softplus": _softplus,
    "lerp": _lerp, "addcmul": _addcmul, "addcdiv": _addcmul,
    "_to_copy": _to_copy, "copy": _copy, "to": _to_copy, "convert_element_type": _to_copy, "clone": _identity,
    "alias": _identity, "detach": _identity, "lift_fresh_copy": _identity, "contiguous": _identity,
    "dropout": _identity, "scalar_tensor": _scalar_tensor, "full": _full, "full_like": _full_like,
    "zeros_like": lambda lw, n, a, kw: _full_like(lw, n, (a[0], 0), kw),
    "ones_like": lambda lw, n, a, kw: _full_like(lw, n, (a[0], 1), kw), "arange": _arange,
}

__all__ = ["EW_OPS", "ew", "bidx", "operand", "const", "ir_dtype", "sigmoid", "powi", "b", "k", "call"]
