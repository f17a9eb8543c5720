"""Reductions, softmax, normalizations and cumulative ops of the PyTorch lowering.

Each is a ``TVal`` whose element asks the emitter for the reduction(s) it
needs (keyed by the kept index, so a row's statistics are computed once per
row), with its elementwise producers inlined into the reduction's loads.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch

from parsers.base import Unsupported
from parsers.torch_dtypes import compute_dtype
from parsers.torch_emit import Emitter, Index, TVal, c_int, cast, prod
from parsers.torch_ops import Handler, b, call, k
from translate.ir import BinOp, Const, DType, Expr, Select, Var

if TYPE_CHECKING:
    from parsers.torch_lower import Lowerer

F32 = DType.F32
I32 = DType.I32


def norm_dims(dims: object, rank: int) -> list[int]:
    if dims is None or dims == [] or dims == ():
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    out = sorted({(d + rank) % rank if rank else 0 for d in dims})  # type: ignore[union-attr]
    return out


def _acc_dtype(dt: DType, op: str) -> DType:
    if dt.is_float:
        return compute_dtype(dt)
    if op in ("max", "min"):
        return dt if dt is not DType.BOOL else I32
    return DType.I64


def _init(op: str, dt: DType) -> Const:
    if op == "add":
        return Const(0.0 if dt.is_float else 0, dt)
    if op == "mul":
        return Const(1.0 if dt.is_float else 1, dt)
    big = 2**63 - 1 if dt is DType.I64 else 2**31 - 1
    if op == "max":
        return Const(-math.inf, dt) if dt.is_float else Const(-big - 1, dt)
    return Const(math.inf, dt) if dt.is_float else Const(big, dt)


class Rows:
    """Maps an output index of a reduction-shaped result to the source index with
    the reduced dims filled in by loop variables."""

    def __init__(self, x: TVal, dims: list[int], keepdim: bool) -> None:
        self.x, self.dims, self.keepdim = x, dims, keepdim

    def kept(self, idx: Index) -> tuple[Expr, ...]:
        if self.keepdim:
            return tuple(i for d, i in enumerate(idx) if d not in self.dims)
        return tuple(idx)

    def source(self, idx: Index, loop: list[Var] | list[Expr]) -> Index:
        kept = iter(self.kept(idx))
        red = iter(loop)
        return tuple(next(red) if d in self.dims else next(kept) for d in range(self.x.rank))

    def ranges(self) -> list[tuple[Expr, Expr]]:
        return [(c_int(0), self.x.shape[d]) for d in self.dims]

    def count(self, dt: DType) -> Expr:
        return cast(prod([self.x.shape[d] for d in self.dims]), dt)


def reduction(lw: Lowerer, x: TVal, dims: list[int], keepdim: bool, op: str, label: str,
              fn: Callable[[Expr], Expr] = lambda e: e, post: Callable[[Expr, Rows], Expr] | None = None,
              acc: DType | None = None, item: int | None = None) -> TVal:
    node = lw.node
    assert node is not None
    rows = Rows(x, dims, keepdim)
    dt = lw.dtype(node, item)
    shape = lw.item_shape(node, item) if item is not None else lw.shape(node)
    adt = acc or _acc_dtype(x.cdtype if op in ("max", "min") else compute_dtype(dt) if dt.is_float else x.cdtype, op)
    name = node.name

    def elem(em: Emitter, idx: Index) -> Expr:
        kept = rows.kept(idx)
        r = em.reduce(name, (name, kept), kept, rows.ranges(), lambda vs: cast(fn(em.read(x, rows.source(idx, vs))),
                                                                             adt), op, adt, _init(op, adt))
        out = post(r, rows) if post is not None else r
        return cast(out, compute_dtype(dt))

    return TVal(shape, dt, elem=elem, node=name, kind="reduction", label=label)


def _dims_keep(args: tuple, kw: dict, rank: int, pos: int = 1) -> tuple[list[int], bool]:
    dims = kw.get("dim", args[pos] if len(args) > pos else None)
    keep = bool(kw.get("keepdim", args[pos + 1] if len(args) > pos + 1 else False))
    return norm_dims(dims, rank), keep


def _simple(op: str, label: str) -> Handler:
    def h(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
        x = args[0]
        dims, keep = _dims_keep(args, kw, x.rank)
        post = (lambda r, rows: b("div", r, rows.count(r.dtype))) if label == "mean" else None
        return reduction(lw, x, dims, keep, op, label, post=post)

    return h


def _max_dim(op: str) -> Handler:
    def h(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> object:
        x = args[0]
        if node.target in (torch.ops.aten.max.default, torch.ops.aten.min.default):
            return reduction(lw, x, list(range(x.rank)), False, op, f"a{op}")
        dims, keep = _dims_keep(args, kw, x.rank)
        vals = reduction(lw, x, dims, keep, op, f"{op}(dim)", item=0)
        return (vals, _arg(lw, node, x, dims, keep, op, item=1))

    return h


def _arg(lw: Lowerer, node: torch.fx.Node, x: TVal, dims: list[int], keep: bool, op: str,
         item: int | None = None) -> TVal:
    rows = Rows(x, dims, keep)
    name = node.name
    shape = lw.item_shape(node, item) if item is not None else lw.shape(node)
    better = "gt" if op == "max" else "lt"

    def elem(em: Emitter, idx: Index) -> Expr:
        kept = rows.kept(idx)
        flat_ext = [x.shape[d] for d in dims]

        def flat(vs: list[Var]) -> Expr:
            out: Expr = c_int(0)
            for v, e in zip(vs, flat_ext, strict=True):
                out = BinOp("add", BinOp("mul", out, e, I32), v, I32)
            return out

        _, where = em.arg_reduce(name, (name, "arg", kept), kept, rows.ranges(),
                                 lambda vs: em.read(x, rows.source(idx, vs)), flat, better, x.cdtype)
        return where

    return TVal(shape, DType.I64, elem=elem, node=name + f"_{item}" if item else name, kind="reduction",
                label=f"arg{op}")


def _argmax(op: str) -> Handler:
    def h(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
        x = args[0]
        dim = kw.get("dim", args[1] if len(args) > 1 else None)
        keep = bool(kw.get("keepdim", args[2] if len(args) > 2 else False))
        return _arg(lw, node, x, norm_dims(dim, x.rank), keep and dim is not None, op)

    return h


def _prod(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    x = args[0]
    dims, keep = _dims_keep(args, kw, x.rank)
    return reduction(lw, x, dims, keep, "mul", "prod")


def _var(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict, std: bool = False) -> TVal:
    x = args[0]
    dims, keep = _dims_keep(args, kw, x.rank)
    corr = kw.get("correction", 1)
    if corr is None:
        corr = 1
    return _variance(lw, x, dims, keep, float(corr), std)


def _variance(lw: Lowerer, x: TVal, dims: list[int], keep: bool, corr: float, std: bool,
              mean_only: bool = False) -> TVal:
    node = lw.node
    assert node is not None
    rows = Rows(x, dims, keep)
    name = node.name
    dt = lw.dtype(node)
    cdt = compute_dtype(dt)

    def elem(em: Emitter, idx: Index) -> Expr:
        kept = rows.kept(idx)
        mean = _mean(em, name, x, rows, idx, cdt)
        if mean_only:
            return mean
        ss = em.reduce(name, (name, "m2", kept), kept, rows.ranges(),
                       lambda vs: _sq(b("sub", cast(em.read(x, rows.source(idx, vs)), cdt), mean)), "add", cdt,
                       Const(0.0, cdt))
        n = rows.count(cdt)
        var = b("div", ss, b("sub", n, k(corr, n)) if corr else n)
        return call("sqrt", var) if std else var

    return TVal(lw.shape(node), dt, elem=elem, node=name, kind="reduction", label="std" if std else "var")


def _sq(e: Expr) -> Expr:
    return b("mul", e, e)


def _mean(em: Emitter, name: str, x: TVal, rows: Rows, idx: Index, cdt: DType) -> Expr:
    kept = rows.kept(idx)
    s = em.reduce(name, (name, "sum", kept), kept, rows.ranges(),
                  lambda vs: cast(em.read(x, rows.source(idx, vs)), cdt), "add", cdt, Const(0.0, cdt))
    return em.bind((name, "mean", kept), kept, lambda: b("div", s, rows.count(cdt)), cdt)


def _var_mean(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> tuple[TVal, TVal]:
    x = args[0]
    dims, keep = _dims_keep(args, kw, x.rank)
    corr = kw.get("correction", 1)
    var = _variance(lw, x, dims, keep, float(1 if corr is None else corr), False)
    return var, _variance(lw, x, dims, keep, 0.0, False, mean_only=True)


def _vector_norm(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    x = args[0]
    p = kw.get("ord", args[1] if len(args) > 1 else 2)
    dims, keep = _dims_keep(args, kw, x.rank, pos=2)
    p = float(p)
    if p == 2:
        return reduction(lw, x, dims, keep, "add", "norm2", fn=_sq, post=lambda r, rows: call("sqrt", r))
    if p == 1:
        return reduction(lw, x, dims, keep, "add", "norm1", fn=lambda e: call("abs", e))
    if p == math.inf:
        return reduction(lw, x, dims, keep, "max", "norm_inf", fn=lambda e: call("abs", e))
    if p == -math.inf:
        return reduction(lw, x, dims, keep, "min", "norm_-inf", fn=lambda e: call("abs", e))
    if p == 0:
        return reduction(lw, x, dims, keep, "add", "norm0", fn=lambda e: cast(b("ne", e, k(0.0, e)), e.dtype))
    return reduction(lw, x, dims, keep, "add", f"norm{p:g}",
                     fn=lambda e: BinOp("pow", call("abs", e), k(p, e), e.dtype),
                     post=lambda r, rows: BinOp("pow", r, k(1.0 / p, r), r.dtype))


def _logsumexp(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
    x = args[0]
    dims, keep = _dims_keep(args, kw, x.rank)
    rows = Rows(x, dims, keep)
    name = node.name
    cdt = compute_dtype(lw.dtype(node))

    def elem(em: Emitter, idx: Index) -> Expr:
        m, s = _max_sumexp(em, name, x, rows, idx, cdt)
        return b("add", m, call("log", s))

    return TVal(lw.shape(node), lw.dtype(node), elem=elem, node=name, kind="reduction", label="logsumexp")


def _max_sumexp(em: Emitter, name: str, x: TVal, rows: Rows, idx: Index, cdt: DType) -> tuple[Expr, Expr]:
    kept = rows.kept(idx)
    m = em.reduce(name, (name, "max", kept), kept, rows.ranges(),
                  lambda vs: cast(em.read(x, rows.source(idx, vs)), cdt), "max", cdt, Const(-math.inf, cdt))
    # a row of -inf: use 0 as the shift so exp gives 0, not NaN (torch's convention)
    shift = em.bind((name, "shift", kept), kept, lambda: _finite_or_zero(m), cdt)
    s = em.reduce(name, (name, "sumexp", kept), kept, rows.ranges(),
                  lambda vs: call("exp", b("sub", cast(em.read(x, rows.source(idx, vs)), cdt), shift)), "add", cdt,
                  Const(0.0, cdt))
    return shift, s


def _finite_or_zero(m: Expr) -> Expr:
    return Select(b("eq", call("abs", m), k(math.inf, m)), k(0.0, m), m, m.dtype)


def _softmax(log: bool) -> Handler:
    def h(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
        x = args[0]
        dim = norm_dims(args[1], x.rank)
        rows = Rows(x, dim, True)
        name = node.name
        cdt = compute_dtype(lw.dtype(node))

        def elem(em: Emitter, idx: Index) -> Expr:
            m, s = _max_sumexp(em, name, x, rows, idx, cdt)
            xv = cast(em.read(x, idx), cdt)
            if log:
                return b("sub", b("sub", xv, m), call("log", s))
            return b("div", call("exp", b("sub", xv, m)), s)

        return TVal(lw.shape(node), lw.dtype(node), elem=elem, node=name, kind="reduction",
                    label="log_softmax" if log else "softmax")

    return h


def normalize(lw: Lowerer, x: TVal, rows_of: Callable[[Emitter, Index], tuple[Rows, Index]], eps: float,
              affine: Callable[[Emitter, Index, Expr], Expr], label: str) -> TVal:
    """(x - mean) / sqrt(var + eps) with biased statistics over the rows that
    ``rows_of(em, idx)`` gives (a ``Rows`` over a view of x and the index in that view),
    then ``affine``."""
    node = lw.node
    assert node is not None
    name = node.name
    dt = lw.dtype(node, 0) if isinstance(node.meta.get("val"), (tuple, list)) else lw.dtype(node)
    cdt = compute_dtype(dt)

    def elem(em: Emitter, idx: Index) -> Expr:
        rows, vidx = rows_of(em, idx)
        kept = rows.kept(vidx)
        mean = _mean(em, name, rows.x, rows, vidx, cdt)
        ss = em.reduce(name, (name, "m2", kept), kept, rows.ranges(),
                       lambda vs: _sq(b("sub", cast(em.read(rows.x, rows.source(vidx, vs)), cdt), mean)), "add",
                       cdt, Const(0.0, cdt))
        rstd = em.bind((name, "rstd", kept), kept,
                       lambda: b("div", k(1.0, ss), call("sqrt", b("add", b("div", ss, rows.count(cdt)),
                                                                    k(eps, ss)))), cdt)
        xv = cast(em.read(x, idx), cdt)
        return affine(em, idx, b("mul", b("sub", xv, mean), rstd))

    shape = lw.item_shape(node, 0) if isinstance(node.meta.get("val"), (tuple, list)) else lw.shape(node)
    return TVal(shape, dt, elem=elem, node=name, kind="normalization", label=label)


def _channel_affine(w: object, bias: object, axis: int) -> Callable[[Emitter, Index, Expr], Expr]:
    def affine(em: Emitter, idx: Index, y: Expr) -> Expr:
        if isinstance(w, TVal):
            y = b("mul", y, cast(em.read(w, (idx[axis],) if w.rank == 1 else idx[axis:]), y.dtype))
        if isinstance(bias, TVal):
            y = b("add", y, cast(em.read(bias, (idx[axis],) if bias.rank == 1 else idx[axis:]), y.dtype))
        return y

    return affine


def _layer_norm(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> tuple[TVal, None, None]:
    x, shape, w, bias, eps = args[0], args[1], args[2], args[3], float(args[4])
    nd = len(shape)
    dims = list(range(x.rank - nd, x.rank))
    rows = Rows(x, dims, True)

    def affine(em: Emitter, idx: Index, y: Expr) -> Expr:
        tail = idx[x.rank - nd:]
        if isinstance(w, TVal):
            y = b("mul", y, cast(em.read(w, tail), y.dtype))
        if isinstance(bias, TVal):
            y = b("add", y, cast(em.read(bias, tail), y.dtype))
        return y

    return (normalize(lw, x, lambda em, idx: (rows, idx), eps, affine, "layer_norm"), None, None)


def _group_norm(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> tuple[TVal, None, None]:
    x, w, bias, groups, eps = args[0], args[1], args[2], int(args[6]), float(args[7])
    c = x.shape[1]
    cpg = BinOp("div", c, c_int(groups), I32)
    spatial = list(x.shape[2:])
    # a view of x as (N, G, C/G, *spatial): the statistics run over its dims 2..
    view_shape = (x.shape[0], c_int(groups), cpg, *spatial)

    def vread(em: Emitter, vidx: Index) -> Expr:
        n, g, cc, *rest = vidx
        return em.read(x, (n, BinOp("add", BinOp("mul", g, cpg, I32), cc, I32), *rest))

    view = TVal(view_shape, x.dtype, elem=vread, node=x.node, kind="view")
    rows = Rows(view, list(range(2, len(view_shape))), True)

    def rows_of(em: Emitter, idx: Index) -> tuple[Rows, Index]:
        n, ch, *rest = idx
        # through the emitter: a nest over the channels gets split into groups x channels
        # in the group, and the statistics are computed once per group, not per channel
        g, cc = em.divmod(ch, cpg, c, c_int(groups))
        return rows, (n, g, cc, *rest)

    return (normalize(lw, x, rows_of, eps, _channel_affine(w, bias, 1), "group_norm"), None, None)


def _batch_norm_eval(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> tuple[TVal, None, None]:
    x, w, bias, rmean, rvar, eps = args[0], args[1], args[2], args[3], args[4], float(args[6])
    name = node.name
    dt = lw.dtype(node, 0)
    cdt = compute_dtype(dt)

    def elem(em: Emitter, idx: Index) -> Expr:
        c = (idx[1],)
        y = b("div", b("sub", cast(em.read(x, idx), cdt), cast(em.read(rmean, c), cdt)),
              call("sqrt", b("add", cast(em.read(rvar, c), cdt), k(eps, Const(0.0, cdt)))))
        return _channel_affine(w, bias, 1)(em, idx, y)

    return (TVal(lw.item_shape(node, 0), dt, elem=elem, node=name, label="batch_norm(eval)"), None, None)


def _batch_norm_stats(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> tuple[TVal, None, None]:
    """Batch statistics (instance norm is this over a (1, N*C, ...) view)."""
    x, w, bias = args[0], args[1], args[2]
    eps = float(args[5]) if len(args) > 5 else float(kw.get("eps", 1e-5))
    if node.target is not torch.ops.aten._native_batch_norm_legit.no_stats or len(args) > 3 and args[3] is False:
        if node.target is not torch.ops.aten._native_batch_norm_legit.no_stats:
            raise Unsupported(f"batch norm with batch statistics that updates running stats at {lw.where(node)}")
    rows = Rows(x, [d for d in range(x.rank) if d != 1], True)
    return (normalize(lw, x, lambda em, idx: (rows, idx), eps, _channel_affine(w, bias, 1), "batch_norm(stats)"),
            None, None)


def _cumulative(op: str) -> Handler:
    def h(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
        x = args[0]
        dim = norm_dims(args[1], x.rank)[0] if x.rank else 0
        if x.rank == 0:
            return x
        out = TVal(lw.shape(node), lw.dtype(node), node=node.name, kind="scan", label=f"cum{op}",
                   scan=(x, dim, "add" if op == "sum" else "mul"))
        return lw.materialise(out, prefix="buf")

    return h


def _any_all(op: str) -> Handler:
    def h(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
        x = args[0]
        dims, keep = _dims_keep(args, kw, x.rank)
        return reduction(lw, x, dims, keep, op, "any" if op == "max" else "all",
                         fn=lambda e: cast(cast(e, DType.BOOL), I32), acc=I32)

    return h


REDUCE_OPS: dict[str, Handler] = {
    "sum": _simple("add", "sum"), "mean": _simple("add", "mean"), "amax": _simple("max", "amax"),
    "amin": _simple("min", "amin"), "max": _max_dim("max"), "min": _max_dim("min"), "prod": _prod,
    "argmax": _argmax("max"), "argmin": _argmax("min"), "var": _var,
    "std": lambda lw, n, a, kw: _var(lw, n, a, kw, std=True), "var_mean": _var_mean,
    "linalg_vector_norm": _vector_norm, "logsumexp": _logsumexp,
    "_softmax": _softmax(False), "_log_softmax": _softmax(True), "softmax": _softmax(False),
    "log_softmax": _softmax(True), "native_layer_norm": _layer_norm, "native_group_norm": _group_norm,
    "_native_batch_norm_legit_no_training": _batch_norm_eval, "_native_batch_norm_legit": _batch_norm_stats,
    "cumsum": _cumulative("sum"), "cumprod": _cumulative("prod"), "any": _any_all("max"), "all": _any_all("min"),
}
