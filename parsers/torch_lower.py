"""Lower a captured core-ATen graph to one ``ir.Kernel``.

Every graph node becomes a ``TVal`` (see ``torch_emit``). Values are fused by
default; a value is materialised into an array only when it must be: a graph
output, the input or result of a library op (``Extern`` matmul / convolution),
a cumulative op, or a reduction whose consumers would otherwise recompute it
(the nest builder finds those and the lowering restarts with them materialised).

A materialised value becomes one loop nest: parallel loops over the output's
dims (at most three; leading dims are merged beyond that), and, when the value
reads reductions that do not depend on some dims (a softmax row's max and sum),
those dims become serial loops inside, after the reductions, which are computed
once per parallel iteration.
"""

from __future__ import annotations

import operator
from dataclasses import replace

import torch

from parsers.base import Unsupported
from parsers.torch_capture import Captured
from parsers.torch_dtypes import ir_dtype
from parsers.torch_emit import ONE, ZERO, Emitter, Names, TVal, c_int, cast, is_one, prod
from parsers.torch_nn import NN_OPS
from parsers.torch_ops import EW_OPS, Handler
from parsers.torch_random import RANDOM_OPS
from parsers.torch_reduce import REDUCE_OPS
from parsers.torch_rnn import RNN_OPS
from translate import ir
from translate.ir import BinOp, Const, DType, Expr, Var
from translate.simplify import simplify, simplify_body

PARALLEL_REASON = "output elements are independent"


class Rematerialise(Exception):  # noqa: N818 - a control-flow signal, not an error
    def __init__(self, nodes: set[str]) -> None:
        self.nodes = nodes
        super().__init__(", ".join(sorted(nodes)))


def lower_graph(cap: Captured, name: str, origin: ir.Origin) -> ir.Kernel:
    forced: set[str] = set()
    for _ in range(64):
        try:
            return Lowerer(cap, name, origin, forced).run()
        except Rematerialise as r:
            if r.nodes <= forced:
                break
            forced |= r.nodes
    raise Unsupported("fusion did not converge (materialisation loop)")


def handlers() -> dict[str, Handler]:
    """The lowering of every ATen op the frontend knows, by op name."""
    return {**EW_OPS, **REDUCE_OPS, **NN_OPS, **RNN_OPS, **RANDOM_OPS}


class Lowerer:
    def __init__(self, cap: Captured, name: str, origin: ir.Origin, forced: set[str]) -> None:
        self.cap = cap
        self.name = name
        self.origin = origin
        self.forced = forced
        self.handlers = handlers()
        taken = {p.decl.name for p in cap.placeholders.values()} | {d.name for d in cap.dims} | {name}
        self.names = Names(taken)
        self.values: dict[str, object] = {}
        self.body: list[ir.Stmt] = []
        self.arrays: list[ir.Array] = []  # locals
        self.outputs: list[ir.Array] = []
        self.draws: list[ir.Array] = []  # random tensors the caller draws (parsers.torch_random)
        self.notes: list[str] = [f"capture: {cap.method}", *cap.notes]
        self.nests = 0
        self.node: torch.fx.Node | None = None

    # ---------------------------------------------------------------- driver

    def run(self) -> ir.Kernel:
        for node in self.cap.graph.nodes:
            self.node = node
            if node.op == "placeholder":
                self._placeholder(node)
            elif node.op == "call_function":
                self._call(node)
            elif node.op == "output":
                self._outputs(node)
            else:
                raise Unsupported(f"graph node {node.op} {node.target} at {self.where(node)} is not supported")
        return self._kernel()

    def where(self, node: torch.fx.Node | None = None) -> str:
        node = node or self.node
        line = self.cap.line_of(node) if node is not None else 0
        return f"{self.origin.path}:{line or self.origin.line}"

    def _placeholder(self, node: torch.fx.Node) -> None:
        p = self.cap.placeholders.get(node.name)
        if p is None:
            if node.users:
                raise Unsupported(f"graph input {node.name} has no binding")
            return
        if isinstance(p.decl, ir.Array):
            self.values[node.name] = TVal(p.decl.shape, p.decl.dtype, array=p.decl.name, node=node.name, kind="input")
        else:
            self.values[node.name] = TVal((), p.decl.dtype, scalar=p.decl.name, node=node.name, kind="input")

    def _call(self, node: torch.fx.Node) -> None:
        val = node.meta.get("val")
        if isinstance(val, (torch.SymInt, torch.SymFloat, torch.SymBool, int, float)) and not isinstance(val, bool) \
                and not (isinstance(val, (int, float)) and node.target is torch.ops.aten.item.default):
            if isinstance(val, (torch.SymFloat, float)):
                raise Unsupported(f"a float computed from sizes at {self.where(node)}")
            self.values[node.name] = self.cap.scalars.get(node.name) or self.cap.to_ir(val)
            return
        if node.target is operator.getitem:
            src = self.values[node.args[0].name]  # type: ignore[union-attr]
            if not isinstance(src, (tuple, list)):
                raise Unsupported(f"getitem on a non-tuple at {self.where(node)}")
            item = src[node.args[1]]  # type: ignore[index]
            if item is None:
                raise Unsupported(f"an unsupported secondary output (#{node.args[1]}) of "
                                  f"{node.args[0].target} is used at {self.where(node)}")  # type: ignore[union-attr]
            self.values[node.name] = self._finish(node, item)
            return
        key = _op_key(node.target)
        if key in _CHECKS:
            self.values[node.name] = None
            return
        handler = self.handlers.get(key)
        if handler is None:
            raise Unsupported(f"op {_op_name(node.target)} at {self.where(node)} is not supported by the PyTorch "
                              "frontend")
        args = tuple(self.arg(a) for a in node.args)
        kwargs = {k: self.arg(v) for k, v in node.kwargs.items()}
        out = handler(self, node, args, kwargs)
        if isinstance(out, (tuple, list)):
            self.values[node.name] = tuple(out)
        else:
            self.values[node.name] = self._finish(node, out)

    def _finish(self, node: torch.fx.Node, v: object) -> object:
        if not isinstance(v, TVal):
            return v
        if node.name != v.node and v.elem is not None and v.array is None:
            v = replace(v, node=node.name)
        users = [u for u in node.users if u.op != "output"]
        if len(users) > 1 and v.elem is not None and v.kind not in ("view", "input"):
            v = replace(v, cse=True)
        if node.name in self.forced and v.array is None and v.scalar is None:
            v = self.materialise(v, prefix="buf")
        return v

    def arg(self, a: object) -> object:
        if isinstance(a, torch.fx.Node):
            if a.name not in self.values:
                raise Unsupported(f"value {a.name} used before it is defined")
            return self.values[a.name]
        if isinstance(a, (list, tuple)):
            return type(a)(self.arg(x) for x in a)
        return a

    def shape(self, node: torch.fx.Node | None = None) -> tuple[Expr, ...]:
        node = node or self.node
        assert node is not None
        if node.name not in self.cap.shapes:
            raise Unsupported(f"no shape for {node.name} at {self.where(node)}")
        return self.cap.shapes[node.name]

    def dtype(self, node: torch.fx.Node | None = None, item: int | None = None) -> DType:
        node = node or self.node
        assert node is not None
        val = node.meta.get("val")
        if item is not None and isinstance(val, (tuple, list)):
            val = val[item]
        if not isinstance(val, torch.Tensor):
            raise Unsupported(f"{node.name} at {self.where(node)} is not a tensor")
        return ir_dtype(val.dtype)

    def item_shape(self, node: torch.fx.Node, item: int) -> tuple[Expr, ...]:
        key = f"{node.name}#{item}"
        if key not in self.cap.shapes:
            raise Unsupported(f"no shape for output {item} of {node.name} at {self.where(node)}")
        return self.cap.shapes[key]

    # ------------------------------------------------------------- outputs

    def _outputs(self, node: torch.fx.Node) -> None:
        outs = node.args[0]
        flat = list(outs) if isinstance(outs, (tuple, list)) else [outs]
        roles = self.cap.outputs or [("output", i) for i in range(len(flat))]
        results = sum(1 for role, _ in roles if role == "output")
        for (role, key), o in zip(roles, flat, strict=True):
            if role == "mutation":
                continue
            what = f"output {key}" if role == "output" else f"the state {key}"
            if not isinstance(o, torch.fx.Node):
                raise Unsupported(f"{what} is not a tensor ({o!r})")
            v = self.values.get(o.name)
            if not isinstance(v, TVal):
                raise Unsupported(f"{what} ({o.name}) is not a tensor")
            if role == "output":
                name, binding = ("out" if results == 1 else f"out{key}"), f"output:{key}"
            else:
                name, binding = self.names.fresh(f"{str(key).replace('.', '_')}_next"), f"state:{key}"
            arr = ir.Array(name, v.dtype, v.shape, ir.Layout.RIGHT, ir.Intent.OUT, binding=binding)
            self.outputs.append(arr)
            self.materialise(v, target=arr)

    # ------------------------------------------------------- materialising

    def new_local(self, shape: tuple[Expr, ...], dtype: DType, prefix: str) -> ir.Array:
        arr = ir.Array(self.names.fresh(prefix), dtype, shape, ir.Layout.RIGHT, ir.Intent.INOUT)
        self.arrays.append(arr)
        return arr

    def materialise(self, v: TVal, prefix: str = "buf", target: ir.Array | None = None) -> TVal:
        """Compute ``v`` into an array (a new local unless ``target``) and return the
        array-backed value."""
        arr = target or self.new_local(v.shape, v.dtype, prefix)
        self.nests += 1
        stmts, labels, kind = self._nest(v, arr)
        self.body.extend(stmts)
        what = "+".join(labels) if labels else ("copy of " + (v.array or v.scalar or v.node))
        self.notes.append(f"generated kernel: fused {what} -> {arr.name} (nest {self.nests}{kind})")
        return TVal(v.shape, v.dtype, array=arr.name, node=v.node, kind="array")

    def _nest(self, v: TVal, arr: ir.Array) -> tuple[list[ir.Stmt], list[str], str]:
        shape = v.shape
        dims = [k for k, e in enumerate(shape) if not is_one(e)]
        scan_dim = v.scan[1] if v.scan is not None else None
        if scan_dim is not None:
            dims = [k for k in dims if k != scan_dim]
        snap = self.names.snapshot()
        # A probe with one loop per dim (no merging), so the loop variables a reduction's
        # key uses name exactly the dims it depends on: with merged leading dims an RMSNorm's
        # statistic keyed by (b, h, w) used the merged b*C+c variable and looked dependent on c.
        stmts, em, pvars, var_dim = self._try(v, arr, dims, [], merge=False)
        inside = [e for e in em.events if e.depth > 0]
        used: set[int] = set()
        for e in inside:
            if e.deps <= set(var_dim):
                used |= {d for x in e.deps for d in var_dim[x]}
        kind = ""
        if used and set(dims) - used and scan_dim is None:
            par = [k for k in dims if k in used]
            # a dim used only through ``em.divmod`` (group norm's channels): tried split, its
            # quotient (the group) parallel, the remainder the outermost row loop
            split = _splits(em, var_dim, used, shape)
            ser = sorted({k for k in dims if k not in used} | set(split))
            if split:
                self.names.restore(snap)
                stmts, em, pvars, var_dim = self._try(v, arr, par, ser, split=split)
                if not _split_pays(em, var_dim):
                    split, ser = {}, [k for k in dims if k not in used]
            if not split:
                self.names.restore(snap)
                stmts, em, pvars, var_dim = self._try(v, arr, par, ser)
            kind = f", parallel over dims {par}, serial inner loops over dims {ser}"
            if split:
                kind += f" (dims {sorted(split)} split: the quotient by a divisor parallel, the remainder serial)"
        elif len(dims) > 3:  # the probe's nest is deeper than a nest may be: rebuild it merged
            self.names.restore(snap)
            stmts, em, pvars, var_dim = self._try(v, arr, dims, [])
        bad = {e.node for e in em.events if e.depth > 0 and e.deps != pvars and e.node != v.node}
        if bad - self.forced:
            raise Rematerialise(bad)
        return stmts, em.labels, kind

    def _try(self, v: TVal, arr: ir.Array, par: list[int], ser: list[int], merge: bool = True,
             split: dict[int, tuple[Expr, Expr]] | None = None
             ) -> tuple[list[ir.Stmt], Emitter, frozenset[str], dict[str, list[int]]]:
        """The nest storing ``v`` into ``arr``: parallel loops over the dims ``par`` (merged
        into at most three unless ``merge`` is off), serial loops over ``ser`` inside. A dim
        in ``split`` (divisor q, count) is in both: a parallel loop over its count and a
        serial one over q, the index o*q + s (``Emitter.divmod`` gives back (o, s))."""
        em = Emitter(self.names)
        split = split or {}
        shape = v.shape
        extents = [split[d][1] if d in split else e for d, e in enumerate(shape)]  # of the parallel loops
        idx: list[Expr] = [ZERO] * len(shape)
        var_dim: dict[str, list[int]] = {}
        groups: list[list[int]] = [[k] for k in par]
        if merge and len(groups) > 3:
            groups = [par[: len(par) - 2]] + [[k] for k in par[len(par) - 2:]]
        pvars: list[str] = []

        def store() -> None:
            if v.scan is not None:
                self._scan_body(em, v, arr, idx)
                return
            val = em.read(v, tuple(idx))
            em.emit(ir.Assign(ir.Load(arr.name, tuple(simplify(i) for i in idx), arr.dtype), cast(val, arr.dtype)))

        def serial(k: int) -> None:
            if k == len(ser):
                store()
                return
            d = ser[k]
            q = split[d][0] if d in split else None
            with em.loop(self.names.fresh("j"), ZERO, shape[d] if q is None else q,
                         reason="row loop: reads values computed once per parallel iteration") as lv:
                if q is not None:
                    whole = simplify(BinOp("add", BinOp("mul", idx[d], q, DType.I32), lv, DType.I32))
                    em.splits[(whole, simplify(q))] = (idx[d], lv)
                    idx[d] = whole
                else:
                    idx[d] = lv
                var_dim[lv.name] = [d]
                serial(k + 1)

        def parallel(g: int) -> None:
            if g == len(groups):
                serial(0)
                return
            group = groups[g]
            extent = prod([extents[d] for d in group])
            with em.loop(self.names.fresh("i"), ZERO, extent, ir.LoopKind.PARALLEL, reason=PARALLEL_REASON) as lv:
                pvars.append(lv.name)
                rest = lv if len(group) == 1 else None
                var_dim[lv.name] = list(group)
                for pos, d in enumerate(group):
                    if rest is not None:
                        idx[d] = lv
                    else:
                        inner = prod([extents[e] for e in group[pos + 1:]])
                        q = BinOp("div", lv, inner, DType.I32) if not is_one(inner) else lv
                        idx[d] = BinOp("mod", q, extents[d], DType.I32) if pos else q
                parallel(g + 1)

        parallel(0)
        assert len(em.scopes) == 1
        return list(em.scopes[0].stmts), em, frozenset(pvars), var_dim

    def _scan_body(self, em: Emitter, v: TVal, arr: ir.Array, idx: list[Expr]) -> None:
        assert v.scan is not None
        src, dim, op = v.scan
        acc = self.names.scalar("acc", v.cdtype)
        em.emit(ir.Assign(acc, Const(0.0 if op == "add" else 1.0, v.cdtype) if v.cdtype.is_float
                          else Const(0 if op == "add" else 1, v.cdtype)))
        with em.loop(self.names.fresh("j"), ZERO, v.shape[dim], reason=f"cumulative {op}: carried along dim "
                                                                          f"{dim}") as lv:
            idx[dim] = lv
            val = cast(em.read(src, tuple(idx)), acc.dtype)
            em.emit(ir.Assign(acc, BinOp(op, acc, val, acc.dtype)))
            em.emit(ir.Assign(ir.Load(arr.name, tuple(simplify(i) for i in idx), arr.dtype), cast(acc, arr.dtype)))

    def as_array(self, v: TVal, prefix: str = "buf") -> TVal:
        """``v`` itself when it lives in an array, else materialised."""
        if v.array is not None:
            return v
        return self.materialise(v, prefix)

    def extern(self, op: str, inputs: tuple[str, ...], out: ir.Array, attrs: dict[str, object], label: str) -> None:
        line = self.cap.line_of(self.node) if self.node is not None else 0
        self.body.append(ir.Extern(op, inputs, (out.name,), tuple(sorted(attrs.items())), line))
        self.notes.append(f"library/template: {label} (Extern {op}) -> {out.name}")

    # -------------------------------------------------------------- kernel

    def _kernel(self) -> ir.Kernel:
        body = simplify_body(tuple(self.body))
        arrays = list(self.arrays)
        body, arrays, outputs = _forward_locals(body, arrays, self.outputs)
        body = tuple(_fix_kinds(s) for s in body)
        unique = list({id(p): p for p in self.cap.placeholders.values()}.values())
        inputs = sorted((p for p in unique if p.role == "input"), key=lambda p: p.key)
        params = [p for p in unique if p.role == "param"]
        decls: list[ir.Decl] = [p.decl for p in inputs] + [p.decl for p in params] + self.draws + list(outputs)
        used = {n.name for d in [*decls, *arrays] if isinstance(d, ir.Array) for s in d.shape for n in ir.walk(s)
                if isinstance(n, Var)}
        used |= {n.name for s in body for n in ir.walk(s) if isinstance(n, Var)}
        used |= {n.var for s in body for n in ir.walk(s) if isinstance(n, ir.Loop)}
        dims = [d for d in self.cap.dims if d.name in used]
        scalars = [s for s in self.names.scalars if s.name in used]
        return ir.Kernel(self.name, tuple(decls + dims), tuple(arrays + scalars), body, self.origin,
                         notes=tuple(self.notes))


_CHECKS = ("_assert_tensor_metadata", "_assert_scalar", "_assert_async", "sym_constrain_range",
           "sym_constrain_range_for_size", "_functional_assert_async", "_functional_sym_constrain_range")


def _op_key(target: object) -> str:
    packet = getattr(target, "overloadpacket", None)
    if packet is not None:
        return str(getattr(packet, "__name__", packet)).split(".")[-1]
    return getattr(target, "__name__", str(target))


def _op_name(target: object) -> str:
    return str(target)


# ------------------------------------------------------------- nest plans


def _splits(em: Emitter, var_dim: dict[str, list[int]], used: set[int], shape: tuple[Expr, ...]
            ) -> dict[int, tuple[Expr, Expr]]:
    """Dims of a probe nest (one loop per dim) that a statistic is keyed by only through
    ``em.divmod`` of the bare loop variable over the whole dim: dim -> (divisor, count). A
    dim asked with two divisors is left whole."""
    asked: dict[int, set[tuple[Expr, Expr]]] = {}
    for e, q, extent, count in em.divisions:
        if isinstance(e, Var) and len(var_dim.get(e.name, [])) == 1:
            d = var_dim[e.name][0]
            if d in used and extent == simplify(shape[d]):
                asked.setdefault(d, set()).add((q, count))
    return {d: next(iter(qs)) for d, qs in asked.items() if len(qs) == 1}


def _split_pays(em: Emitter, var_dim: dict[str, list[int]]) -> bool:
    """A split nest is kept when nothing short of a per-element value (a pooling window)
    is computed inside the serial loop over a divisor: else its statistics would still be
    keyed by the whole index and computed once per channel, now serially."""
    inner = {s.name for _, s in em.splits.values() if isinstance(s, Var)}
    every = set(var_dim)
    return all(not (e.deps & inner) or e.deps >= every for e in em.events if e.depth > 0)


# ------------------------------------------------------------- peepholes


def _refs(stmt: object, name: str) -> bool:
    for n in ir.walk(stmt):
        if isinstance(n, ir.Load) and n.array == name:
            return True
        if isinstance(n, ir.Extern) and (name in n.inputs or name in n.outputs):
            return True
    return False


def _stores(stmt: object) -> list[ir.Load]:
    return [n.target for n in ir.walk(stmt) if isinstance(n, ir.Assign) and isinstance(n.target, ir.Load)]


def _forward_locals(body: tuple[ir.Stmt, ...], arrays: list[ir.Array], outputs: list[ir.Array]
                    ) -> tuple[tuple[ir.Stmt, ...], list[ir.Array], list[ir.Array]]:
    """A local that exactly one later nest reads, element by element at the index it
    stores an output to, is that output: the producer writes the output directly and
    the nest updates it in place (a pure copy nest disappears)."""
    changed = True
    while changed:
        changed = False
        for arr in list(arrays):
            users = [k for k, s in enumerate(body) if _refs(s, arr.name)]
            if len(users) != 2:
                continue
            w, r = users
            stores = _stores(body[r])
            if len(stores) != 1:
                continue
            dst = stores[0]
            out = next((o for o in outputs if o.name == dst.array), None)
            if out is None or out.shape != arr.shape or out.dtype != arr.dtype or _stores(body[w]) and \
                    any(s.array != arr.name for s in _stores(body[w])):
                continue
            loads = [n for n in ir.walk(body[r]) if isinstance(n, ir.Load) and n.array == arr.name]
            if any(ld.index != dst.index for ld in loads) or any(_refs(s, out.name) for s in body[:r] + body[r + 1:]):
                continue
            new_w = _rename(body[w], arr.name, out.name)
            new_r = _rename(body[r], arr.name, out.name)
            copy = isinstance(new_r, ir.Loop) and _is_copy(new_r)
            body = body[:w] + (new_w,) + body[w + 1:r] + (() if copy else (new_r,)) + body[r + 1:]
            arrays.remove(arr)
            changed = True
            break
    return body, arrays, outputs


def _is_copy(loop: ir.Stmt) -> bool:
    while isinstance(loop, ir.Loop) and len(loop.body) == 1:
        loop = loop.body[0]
    return isinstance(loop, ir.Assign) and isinstance(loop.target, ir.Load) and loop.value == loop.target


def _rename(stmt: ir.Stmt, old: str, new: str) -> ir.Stmt:
    out = ir.rename_array(stmt, old, new)
    assert isinstance(out, (ir.Assign, ir.If, ir.Loop, ir.Extern, ir.Return, ir.ErrorCall))
    return out


def _fix_kinds(stmt: ir.Stmt, inside: bool = False) -> ir.Stmt:
    """Parallel loops only as a perfect nest of at most three from the top; every loop
    inside a nest's body is serial (and its reductions are the nest's business)."""
    if not isinstance(stmt, ir.Loop):
        return stmt
    if inside or stmt.kind is not ir.LoopKind.PARALLEL:
        host = not inside and any(isinstance(s, ir.Extern) for s in stmt.body)  # a host loop launching work
        body = tuple(_fix_kinds(s, not host) for s in stmt.body)
        if stmt.kind is ir.LoopKind.PARALLEL:
            return replace(stmt, body=body, kind=ir.LoopKind.SERIAL, reductions=(), reason="inner loop of a nest")
        return replace(stmt, body=body)
    chain = [stmt]
    while len(chain) < 3 and len(chain[-1].body) == 1 and isinstance(chain[-1].body[0], ir.Loop) \
            and chain[-1].body[0].kind is ir.LoopKind.PARALLEL:
        chain.append(chain[-1].body[0])
    inner = chain[-1]
    new_inner = replace(inner, body=tuple(_fix_kinds(s, True) for s in inner.body))
    for lp in reversed(chain[:-1]):
        new_inner = replace(lp, body=(new_inner,))
    return new_inner


__all__ = ["Lowerer", "lower_graph", "prod", "c_int", "ONE", "ZERO", "Rematerialise", "PARALLEL_REASON", "Var"]
