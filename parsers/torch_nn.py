"""Library ops (matmul family and convolutions as ``ir.Extern``) and pooling."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

from parsers.base import Unsupported
from parsers.torch_dtypes import compute_dtype
from parsers.torch_emit import Emitter, Index, TVal, c_int, cast
from parsers.torch_ops import Handler, b, ew, k
from parsers.torch_views import VIEW_OPS, reshape, same_shape
from translate.ir import BinOp, Call, Const, DType, Expr, Var

if TYPE_CHECKING:
    from parsers.torch_lower import Lowerer

I32 = DType.I32
BOOL = DType.BOOL


# ------------------------------------------------------------------ matmul


def _resolve(lw: Lowerer, v: TVal) -> tuple[TVal, bool, tuple[Expr, ...]] | None:
    """An array that ``v`` reads without a copy, as (array value, transposed in its last two
    dims, the batch dims of ``v``'s matrices as the array has them)."""
    if v.array is not None:
        return v, False, v.shape[:-2]
    if v.perm_of is not None:
        base, perm = v.perm_of
        n = len(perm)
        if n >= 2 and perm == tuple(range(n - 2)) + (n - 1, n - 2):
            r = _resolve(lw, base)
            if r is not None:
                return r[0], not r[1], r[2]
        return None
    if v.reshape_of is not None and v.rank >= 2:
        base = v.reshape_of
        r = _resolve(lw, base)
        if r is None or base.rank < 2:
            return None
        arr, trans, batch = r
        if same_shape(lw, v.shape[-2:], base.shape[-2:]):
            return arr, trans, batch  # only batch dims merged or split
        if v.rank == 2 and not trans and same_shape(lw, v.shape[-1:], base.shape[-1:]):
            return arr, trans, base.shape[:-2]  # rows of a batch stacked: (B, S, K) seen as (B*S, K)
    return None


def _store(lw: Lowerer, v: TVal) -> tuple[TVal, bool, tuple[Expr, ...]]:
    """Materialise a matmul operand; a batch-merging reshape of a computed value is
    materialised in the value's own shape (so its batch dims match the other operand's)."""
    base = v.reshape_of
    if base is not None and base.rank >= 3 and v.rank >= 2 and same_shape(lw, v.shape[-2:], base.shape[-2:]):
        arr = lw.as_array(base)
        return arr, False, arr.shape[:-2]
    arr = lw.as_array(v)
    return arr, False, arr.shape[:-2]


def _matmul(lw: Lowerer, node: torch.fx.Node, a: TVal, bm: TVal, label: str) -> TVal:
    ra = _resolve(lw, a) or _store(lw, a)
    rb = _resolve(lw, bm) or _store(lw, bm)
    if rb[2] and not same_shape(lw, ra[2], rb[2]):
        rb = (lw.as_array(bm), False, bm.shape[:-2])
        if not same_shape(lw, ra[2], rb[2]):
            ra = (lw.as_array(a), False, a.shape[:-2])
    A, ta, batch = ra
    B, tb, _ = rb
    rows = A.shape[-1] if ta else A.shape[-2]
    cols = B.shape[-2] if tb else B.shape[-1]
    dt = lw.dtype(node)
    shape = tuple(batch) + (rows, cols)
    out = lw.new_local(shape, dt, "mm")
    attrs: dict[str, object] = {}
    if ta:
        attrs["trans_a"] = True
    if tb:
        attrs["trans_b"] = True
    assert A.array is not None and B.array is not None
    lw.extern("matmul", (A.array, B.array), out, attrs, label)
    res = TVal(shape, dt, array=out.name, node=node.name, kind="array")
    return reshape(lw, res, lw.shape(node), node.name)


def _mm(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    return _matmul(lw, node, args[0], args[1], str(node.target).split(".")[1])


def _addmm(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    bias, a, bm = args[0], args[1], args[2]
    beta = kw.get("beta", 1)
    alpha = kw.get("alpha", 1)
    prod = _matmul(lw, node, a, bm, "linear" if bm.perm_of is not None else "addmm")

    def fn(v: list[Expr]) -> Expr:
        m = v[0] if alpha == 1 else b("mul", v[0], k(alpha, v[0]))
        c = v[1] if beta == 1 else b("mul", v[1], k(beta, v[1]))
        return b("add", m, c)

    return ew(lw, [prod, bias], fn, "bias add")


# ------------------------------------------------------------- convolution


def _ints(v: object, n: int) -> tuple[int, ...]:
    if isinstance(v, int):
        return (v,) * n
    vals = tuple(int(x) for x in v)  # type: ignore[union-attr]
    return vals * n if len(vals) == 1 else vals


def _convolution(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    x, w, bias = args[0], args[1], args[2]
    stride, padding, dilation, transposed, out_pad, groups = args[3:9]
    nsp = x.rank - 2
    if nsp not in (1, 2, 3):
        raise Unsupported(f"convolution with {nsp} spatial dims at {lw.where(node)}")
    X, W = lw.as_array(x), lw.as_array(w)
    inputs = [X.array, W.array]
    if isinstance(bias, TVal):
        inputs.append(lw.as_array(bias).array)
    op = ("conv_transpose" if transposed else "conv") + f"{nsp}d"
    attrs: dict[str, object] = {"stride": _ints(stride, nsp), "padding": _ints(padding, nsp),
                                "dilation": _ints(dilation, nsp), "groups": int(groups)}
    if transposed:
        attrs["output_padding"] = _ints(out_pad, nsp)
    shape = lw.shape(node)
    dt = lw.dtype(node)
    out = lw.new_local(shape, dt, "conv")
    lw.extern(op, tuple(str(n) for n in inputs), out, attrs, op.replace("conv_transpose", "transposed conv"))
    return TVal(shape, dt, array=out.name, node=node.name, kind="array")


# ----------------------------------------------------------------- pooling


def _and(conds: list[Expr]) -> Expr | None:
    out: Expr | None = None
    for c in conds:
        out = c if out is None else BinOp("and", out, c, BOOL)
    return out


def _pool(lw: Lowerer, node: torch.fx.Node, x: TVal, nsp: int, kernel: tuple[int, ...], stride: tuple[int, ...],
          pad: tuple[int, ...], dil: tuple[int, ...], op: str, label: str, item: int | None,
          divisor: object = None) -> TVal:
    name = node.name
    dt = lw.dtype(node, item)
    cdt = compute_dtype(dt)
    shape = lw.item_shape(node, item) if item is not None else lw.shape(node)
    sizes = x.shape[-nsp:]

    def elem(em: Emitter, idx: Index) -> Expr:
        lead, outs = idx[:-nsp], idx[-nsp:]
        starts = [BinOp("sub", BinOp("mul", o, c_int(s), I32), c_int(p), I32) for o, s, p in zip(outs, stride, pad,
                                                                                                    strict=True)]

        def pos(vs: list[Var]) -> list[Expr]:
            it = iter(vs)  # window dims of extent 1 have no loop
            return [s0 if kk == 1 else BinOp("add", s0, BinOp("mul", next(it), c_int(d), I32), I32)
                    for s0, d, kk in zip(starts, dil, kernel, strict=True)]

        def cond(vs: list[Var]) -> Expr:
            cs: list[Expr] = []
            for p, n, pd, kk in zip(pos(vs), sizes, pad, kernel, strict=True):
                if pd:
                    cs += [BinOp("ge", p, c_int(0), BOOL)]
                if pd or kk > 1:
                    cs += [BinOp("lt", p, n, BOOL)]
            if not cs:
                return Const(True, BOOL)
            out = _and(cs)
            assert out is not None
            return out

        ranges = [(c_int(0), c_int(kk)) for kk in kernel if kk > 1]
        init = Const(-math.inf if op == "max" else 0.0, cdt)
        guarded = any(pad) or any(kk > 1 for kk in kernel)
        r = em.reduce(name, (name, idx), idx, ranges, lambda vs: cast(em.read(x, lead + tuple(pos(vs))), cdt), op,
                      cdt, init, cond if guarded else None)
        if op == "max":
            return r
        return b("div", r, cast(_divisor(starts, kernel, pad, sizes, divisor), cdt))

    return TVal(shape, dt, elem=elem, node=name, kind="reduction", label=label)


def _divisor(starts: list[Expr], kernel: tuple[int, ...], pad: tuple[int, ...], sizes: tuple[Expr, ...],
             how: object) -> Expr:
    if isinstance(how, int) and not isinstance(how, bool):
        return c_int(how)
    total: Expr = c_int(1)
    for s, kk, p, n in zip(starts, kernel, pad, sizes, strict=True):
        end = Call("min", (BinOp("add", s, c_int(kk), I32), BinOp("add", n, c_int(p), I32)), I32)
        if how == "include_pad":
            size: Expr = BinOp("sub", end, s, I32)
        else:
            lo = Call("max", (s, c_int(0)), I32)
            hi = Call("min", (end, n), I32)
            size = BinOp("sub", hi, lo, I32)
        total = BinOp("mul", total, size, I32)
    return total


def _max_pool(nsp: int) -> Handler:
    def h(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> tuple[TVal, None]:
        x = args[0]
        kernel = _ints(args[1], nsp)
        stride = _ints(args[2], nsp) if len(args) > 2 and args[2] else kernel
        pad = _ints(args[3], nsp) if len(args) > 3 else (0,) * nsp
        dil = _ints(args[4], nsp) if len(args) > 4 else (1,) * nsp
        return (_pool(lw, node, x, nsp, kernel, stride, pad, dil, "max", f"max_pool{nsp}d", 0), None)

    return h


def _avg_pool(nsp: int) -> Handler:
    def h(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
        x = args[0]
        kernel = _ints(args[1], nsp)
        stride = _ints(args[2], nsp) if len(args) > 2 and args[2] else kernel
        pad = _ints(args[3], nsp) if len(args) > 3 else (0,) * nsp
        include = bool(args[5]) if len(args) > 5 else True
        override = args[6] if len(args) > 6 else None
        how = override if override is not None else ("include_pad" if include else "valid")
        return _pool(lw, node, x, nsp, kernel, stride, pad, (1,) * nsp, "add", f"avg_pool{nsp}d", None, how)

    return h


def _adaptive(nsp: int, op: str) -> Handler:
    def h(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> object:
        x = args[0]
        item = 0 if isinstance(node.meta.get("val"), (tuple, list)) else None
        shape = lw.item_shape(node, item) if item is not None else lw.shape(node)
        dt = lw.dtype(node, item)
        cdt = compute_dtype(dt)
        name = node.name
        ins, outs_n = x.shape[-nsp:], shape[-nsp:]

        def elem(em: Emitter, idx: Index) -> Expr:
            lead, outs = idx[:-nsp], idx[-nsp:]
            lo = [BinOp("div", BinOp("mul", o, n, I32), m, I32) for o, n, m in zip(outs, ins, outs_n, strict=True)]
            hi = [BinOp("div", BinOp("sub", BinOp("add", BinOp("mul", BinOp("add", o, c_int(1), I32), n, I32), m,
                                                   I32), c_int(1), I32), m, I32)
                  for o, n, m in zip(outs, ins, outs_n, strict=True)]
            r = em.reduce(name, (name, idx), idx, list(zip(lo, hi, strict=True)),
                          lambda vs: cast(em.read(x, lead + tuple(vs)), cdt), op, cdt,
                          Const(-math.inf if op == "max" else 0.0, cdt))
            if op == "max":
                return r
            count: Expr = c_int(1)
            for a, c in zip(lo, hi, strict=True):
                count = BinOp("mul", count, BinOp("sub", c, a, I32), I32)
            return b("div", r, cast(count, cdt))

        kind = "avg" if op == "add" else "max"
        v = TVal(shape, dt, elem=elem, node=name, kind="reduction", label=f"adaptive_{kind}_pool{nsp}d")
        return (v, None) if item is not None else v

    return h


NN_OPS: dict[str, Handler] = {
    **VIEW_OPS,
    "mm": _mm, "bmm": _mm, "addmm": _addmm,
    "baddbmm": lambda lw, n, a, kw: _addmm(lw, n, a, kw),
    "convolution": _convolution,
    "max_pool2d_with_indices": _max_pool(2), "max_pool3d_with_indices": _max_pool(3),
    "max_pool1d_with_indices": _max_pool(1),
    "avg_pool1d": _avg_pool(1), "avg_pool2d": _avg_pool(2), "avg_pool3d": _avg_pool(3),
    "_adaptive_avg_pool2d": _adaptive(2, "add"), "_adaptive_avg_pool3d": _adaptive(3, "add"),
    "adaptive_avg_pool1d": _adaptive(1, "add"), "adaptive_max_pool2d": _adaptive(2, "max"),
    "adaptive_max_pool1d": _adaptive(1, "max"), "adaptive_max_pool3d": _adaptive(3, "max"),
}
