"""Views and indexing ops as index remapping (no copies): view/reshape, permute,
unsqueeze/squeeze, expand, slice/select, cat, pad, gather, index_select,
embedding, flip, repeat, triu/tril."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from parsers.base import Unsupported
from parsers.torch_dtypes import compute_dtype
from parsers.torch_emit import Emitter, Index, TVal, c_int, cast
from parsers.torch_ops import Handler, b, bidx, const
from translate import ir
from translate.ir import BinOp, Call, Const, DType, Expr, Select

if TYPE_CHECKING:
    from parsers.torch_lower import Lowerer

I32 = DType.I32


def value_of(lw: Lowerer, e: Expr) -> int:
    try:
        return int(ir.evaluate(e, lw.cap.dim_values))  # type: ignore[arg-type]
    except (KeyError, TypeError, ZeroDivisionError) as err:
        raise Unsupported(f"cannot evaluate extent {ir.expr_str(e)}: {err}") from err


def same_extent(lw: Lowerer, a: Expr, c: Expr) -> bool:
    return a == c or value_of(lw, a) == value_of(lw, c)


def same_shape(lw: Lowerer, a: tuple[Expr, ...], c: tuple[Expr, ...]) -> bool:
    return len(a) == len(c) and all(same_extent(lw, x, y) for x, y in zip(a, c, strict=True))


def _mul(a: Expr, c: Expr) -> Expr:
    if isinstance(a, Const) and a.value == 1:
        return c
    if isinstance(c, Const) and c.value == 1:
        return a
    return BinOp("mul", a, c, I32)


def reshape_index(lw: Lowerer, src: tuple[Expr, ...], dst: tuple[Expr, ...], idx: Index) -> Index:
    """The index into a contiguous tensor of shape ``src`` of element ``idx`` of its
    reshape to ``dst``: dims are grouped where their products agree, each group
    linearised and split again."""
    sv = [value_of(lw, e) for e in src]
    dv = [value_of(lw, e) for e in dst]
    out: list[Expr] = [c_int(0)] * len(src)
    i = j = 0
    while i < len(src) or j < len(dst):
        if i < len(src) and sv[i] == 1:
            i += 1
            continue
        if j < len(dst) and dv[j] == 1:
            j += 1
            continue
        if i >= len(src) or j >= len(dst):
            raise Unsupported("reshape with mismatched element counts")
        gi, gj, ps, pd = [i], [j], sv[i], dv[j]
        i, j = i + 1, j + 1
        while ps != pd:
            if ps < pd and i < len(src):
                gi.append(i)
                ps *= sv[i]
                i += 1
            elif j < len(dst):
                gj.append(j)
                pd *= dv[j]
                j += 1
            else:
                raise Unsupported("reshape with mismatched element counts")
        if len(gi) == 1 and len(gj) == 1:
            out[gi[0]] = idx[gj[0]]
            continue
        flat: Expr = c_int(0)
        for t in gj:
            flat = BinOp("add", _mul(flat, dst[t]), idx[t], I32) if t != gj[0] else idx[t]
        for u, d in enumerate(gi):
            stride: Expr = c_int(1)
            for e in gi[u + 1:]:
                stride = _mul(stride, src[e])
            q = flat if isinstance(stride, Const) and stride.value == 1 else BinOp("div", flat, stride, I32)
            out[d] = BinOp("mod", q, src[d], I32) if u > 0 else q
    return tuple(out)


def reshape(lw: Lowerer, x: TVal, shape: tuple[Expr, ...], name: str) -> TVal:
    if same_shape(lw, x.shape, shape):
        return x
    base = x.reshape_of or x
    if same_shape(lw, base.shape, shape):
        return base

    def elem(em: Emitter, idx: Index) -> Expr:
        return em.read(base, reshape_index(lw, base.shape, shape, idx))

    return TVal(shape, x.dtype, elem=elem, node=name, kind="view", reshape_of=base)


def _view(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    return reshape(lw, args[0], lw.shape(node), node.name)


def permute(x: TVal, perm: tuple[int, ...], shape: tuple[Expr, ...], name: str) -> TVal:
    if perm == tuple(range(len(perm))):
        return x

    def elem(em: Emitter, idx: Index) -> Expr:
        src: list[Expr] = [c_int(0)] * len(perm)
        for k, p in enumerate(perm):
            src[p] = idx[k]
        return em.read(x, tuple(src))

    return TVal(shape, x.dtype, elem=elem, node=name, kind="view", perm_of=(x, perm))


def _permute(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    x = args[0]
    perm = tuple(int(p) % max(x.rank, 1) for p in args[1])
    return permute(x, perm, lw.shape(node), node.name)


def _transpose(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    x = args[0]
    if node.target is torch.ops.aten.t.default:
        d0, d1 = 0, max(x.rank - 1, 0)
    else:
        d0, d1 = int(args[1]) % x.rank, int(args[2]) % x.rank
    perm = list(range(x.rank))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return permute(x, tuple(perm), lw.shape(node), node.name)


def _remap(lw: Lowerer, node: torch.fx.Node, x: TVal, fn: object, label: str = "view") -> TVal:
    def elem(em: Emitter, idx: Index) -> Expr:
        return em.read(x, fn(em, idx))  # type: ignore[operator]

    return TVal(lw.shape(node), x.dtype, elem=elem, node=node.name, kind="view", label="" if label == "view"
                else label)


def _unsqueeze(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    x = args[0]
    d = int(args[1]) % (x.rank + 1)
    return _remap(lw, node, x, lambda em, idx: idx[:d] + idx[d + 1:])


def _squeeze(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    x = args[0]
    dims = args[1] if len(args) > 1 else None
    if isinstance(dims, int):
        dims = [dims]
    cand = range(x.rank) if dims is None else [int(d) % max(x.rank, 1) for d in dims]
    drop = {d for d in cand if isinstance(x.shape[d], Const) and x.shape[d].value == 1}

    def fn(em: Emitter, idx: Index) -> Index:
        it = iter(idx)
        return tuple(c_int(0) if d in drop else next(it) for d in range(x.rank))

    return _remap(lw, node, x, fn)


def _expand(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:

    x = args[0]
    shape = lw.shape(node)
    if same_shape(lw, x.shape, shape):
        return x
    return _remap(lw, node, x, lambda em, idx: bidx(x.shape, idx))


def _norm_index(v: object, size: Expr, clamp: bool = True) -> Expr:
    big = 2**62
    if isinstance(v, int):
        if v >= big:
            return size
        if v < 0:
            return BinOp("add", size, c_int(v), I32) if v > -big else c_int(0)
        return c_int(v)
    if v is None:
        return c_int(0)
    return const(v)


def _slice(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    x = args[0]
    dim = int(args[1] if len(args) > 1 else 0) % x.rank
    start = _norm_index(args[2] if len(args) > 2 else 0, x.shape[dim])
    step = int(args[4]) if len(args) > 4 else 1

    def fn(em: Emitter, idx: Index) -> Index:
        e = BinOp("add", start, BinOp("mul", idx[dim], c_int(step), I32), I32)
        return idx[:dim] + (e,) + idx[dim + 1:]

    return _remap(lw, node, x, fn)


def _select(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    x = args[0]
    dim = int(args[1]) % x.rank
    at = _norm_index(args[2], x.shape[dim])
    return _remap(lw, node, x, lambda em, idx: idx[:dim] + (at,) + idx[dim:])


def _clampi(e: Expr, size: Expr) -> Expr:
    return Call("min", (Call("max", (e, c_int(0)), I32), BinOp("sub", size, c_int(1), I32)), I32)


def _cat(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    parts = [t for t in args[0] if isinstance(t, TVal)]
    rank = len(lw.shape(node))
    dim = int(kw.get("dim", args[1] if len(args) > 1 else 0)) % rank
    parts = [t for t in parts if t.rank == rank]
    dt = lw.dtype(node)

    cdt = compute_dtype(dt)

    def elem(em: Emitter, idx: Index) -> Expr:
        offsets: list[Expr] = []
        off: Expr = c_int(0)
        for t in parts:
            offsets.append(off)
            off = BinOp("add", off, t.shape[dim], I32)
        out: Expr | None = None
        for t, o in reversed(list(zip(parts, offsets, strict=True))):
            local = BinOp("sub", idx[dim], o, I32)
            v = cast(em.read(t, idx[:dim] + (_clampi(local, t.shape[dim]),) + idx[dim + 1:]), cdt)
            end = BinOp("add", o, t.shape[dim], I32)
            out = v if out is None else Select(BinOp("lt", idx[dim], end, DType.BOOL), v, out, cdt)
        assert out is not None
        return out

    return TVal(lw.shape(node), dt, elem=elem, node=node.name, label="cat")


def _pad(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    x, pad = args[0], list(args[1])
    value = args[2] if len(args) > 2 else 0.0

    cdt = compute_dtype(x.dtype)

    def elem(em: Emitter, idx: Index) -> Expr:
        src = list(idx)
        conds: list[Expr] = []
        for k in range(len(pad) // 2):
            d = x.rank - 1 - k
            left = const(pad[2 * k]) if not isinstance(pad[2 * k], int) else c_int(pad[2 * k])
            s = BinOp("sub", idx[d], cast(left, I32), I32)
            conds += [BinOp("ge", s, c_int(0), DType.BOOL), BinOp("lt", s, x.shape[d], DType.BOOL)]
            src[d] = _clampi(s, x.shape[d])
        ok: Expr = conds[0]
        for c in conds[1:]:
            ok = BinOp("and", ok, c, DType.BOOL)
        return Select(ok, cast(em.read(x, tuple(src)), cdt), cast(const(value), cdt), cdt)

    return TVal(lw.shape(node), x.dtype, elem=elem, node=node.name, label="pad")


def _gather(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    x, index = args[0], args[2]
    dim = int(args[1]) % x.rank

    def fn(em: Emitter, idx: Index) -> Index:
        at = cast(em.read(index, idx), I32)
        return idx[:dim] + (at,) + idx[dim + 1:]

    return _remap(lw, node, x, fn, "gather")


def _index_select(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    x, index = args[0], args[2]
    dim = int(args[1]) % x.rank
    return _remap(lw, node, x, lambda em, idx: idx[:dim] + (cast(em.read(index, (idx[dim],)), I32),) + idx[dim + 1:],
                  "index_select")


def _embedding(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    w, ind = args[0], args[1]
    return _remap(lw, node, w, lambda em, idx: (cast(em.read(ind, idx[:-1]), I32), idx[-1]), "embedding")


def _flip(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    x = args[0]
    dims = {int(d) % x.rank for d in args[1]}
    return _remap(lw, node, x, lambda em, idx: tuple(
        BinOp("sub", BinOp("sub", x.shape[d], c_int(1), I32), i, I32) if d in dims else i
        for d, i in enumerate(idx)))


def _repeat(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    x = args[0]
    return _remap(lw, node, x, lambda em, idx: tuple(
        BinOp("mod", i, e, I32) if not (isinstance(e, Const) and e.value == 1) else c_int(0)
        for i, e in zip(idx[len(idx) - x.rank:], x.shape, strict=True)))


def _tri(upper: bool) -> Handler:
    def h(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
        x = args[0]
        diag = int(args[1]) if len(args) > 1 else 0

        cdt = compute_dtype(x.dtype)

        def elem(em: Emitter, idx: Index) -> Expr:
            dif = BinOp("sub", idx[-1], idx[-2], I32)
            keep = BinOp("ge" if upper else "le", dif, c_int(diag), DType.BOOL)
            return Select(keep, cast(em.read(x, idx), cdt), cast(Const(0, DType.I64), cdt), cdt)

        return TVal(lw.shape(node), x.dtype, elem=elem, node=node.name, label="triu" if upper else "tril")

    return h


def _split(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> tuple[TVal, ...]:
    x = args[0]
    dim = int(kw.get("dim", args[2] if len(args) > 2 else 0)) % x.rank
    vals = node.meta["val"]
    out: list[TVal] = []
    off: Expr = c_int(0)
    for k in range(len(vals)):
        shape = lw.item_shape(node, k)
        start = off

        def elem(em: Emitter, idx: Index, start: Expr = start) -> Expr:
            return em.read(x, idx[:dim] + (BinOp("add", idx[dim], start, I32),) + idx[dim + 1:])

        out.append(TVal(shape, x.dtype, elem=elem, node=f"{node.name}_{k}", kind="view"))
        off = BinOp("add", off, shape[dim], I32)
    return tuple(out)


def _unbind(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> tuple[TVal, ...]:
    x = args[0]
    dim = int(args[1] if len(args) > 1 else 0) % x.rank
    vals = node.meta["val"]
    out: list[TVal] = []
    for k in range(len(vals)):
        shape = lw.item_shape(node, k)

        def elem(em: Emitter, idx: Index, k: int = k) -> Expr:
            return em.read(x, idx[:dim] + (c_int(k),) + idx[dim:])

        out.append(TVal(shape, x.dtype, elem=elem, node=f"{node.name}_{k}", kind="view"))
    return tuple(out)


VIEW_OPS: dict[str, Handler] = {
    "view": _view, "_unsafe_view": _view, "reshape": _view, "permute": _permute, "transpose": _transpose,
    "t": _transpose, "unsqueeze": _unsqueeze, "squeeze": _squeeze, "expand": _expand, "slice": _slice,
    "select": _select, "cat": _cat, "constant_pad_nd": _pad, "gather": _gather, "index_select": _index_select,
    "embedding": _embedding, "flip": _flip, "repeat": _repeat, "triu": _tri(True), "tril": _tri(False),
    "split_with_sizes": _split, "split": _split, "unbind": _unbind, "flatten": _view,
}

__all__ = ["VIEW_OPS", "reshape", "permute", "same_shape", "same_extent", "value_of", "b"]
