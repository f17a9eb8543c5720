"""The work one region must do for one case, for roofline reporting.

``work(kernel, env)`` takes one call's argument values (scalars and numpy arrays by
name; :func:`case_env` builds them from a ``validation.inputs.Case``) and counts

* ``bytes``, compulsory traffic: each array parameter once if the body reads it, once
  more if it writes it (stores and ``Extern`` outputs write; other loads and ``Extern``
  inputs read, but not an ``intent(out)`` array, whose reads see the kernel's own
  writes, nor a read of the element the same statements just stored). Locals are not
  counted. Sizes come from the symbolic shapes, else from the array in ``env``; bf16
  counts 2 bytes (the host holds it as float32).
* ``flops``: floating add, sub, mul, div, mod, pow and intrinsic calls count 1, other
  operations 0, loops multiply by their trip counts. Scalars assigned known values are
  followed, so conditions on arguments (``if (n <= 0) return``, ``lsame(trans, 'N')``)
  take this case's branch; a condition on array data counts its costlier arm (the
  then-branch of a guard) and ignores exits in it: an upper bound. A loop whose body
  cost depends on the iteration (a triangular nest) is summed exactly while that level
  costs at most ``EXACT_ITERATIONS`` bodies in all, else costed at its first, middle and
  last value, ``trip * (f0 + 4 fm + fl) / 6`` (Simpson): an estimate. Matmul: 2 * batch
  * M * N * K; convolution: 2 * output elements * (in_channels / groups) * kernel
  elements (input elements * (out_channels / groups) * kernel elements transposed), plus
  an add per output element for a bias.

``Work.estimate`` is set when a Simpson estimate, or a data-dependent branch whose arms
cost differently or that holds an exit, entered the count.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from translate import ir
from translate.irquery import arrays_written, has_exit, loop_vars, many, scalar_reads, scalar_writes

if TYPE_CHECKING:
    from validation.inputs import Case

EXACT_ITERATIONS = 4096
_FLOP_OPS = frozenset({"add", "sub", "mul", "div", "mod", "pow"})
_EXPR = (ir.Const, ir.Var, ir.Load, ir.BinOp, ir.UnOp, ir.Call, ir.Select, ir.Cast)
_EVAL_ERRORS = (KeyError, TypeError, ValueError, ArithmeticError, IndexError)


@dataclass(frozen=True)
class Work:
    """Compulsory bytes moved and flops executed by one call; ``estimate``: not an exact count."""

    bytes: int
    flops: int
    estimate: bool = False


def intensity(w: Work) -> float:
    """Arithmetic intensity in flops per byte (inf for flops without traffic)."""
    if w.bytes == 0:
        return math.inf if w.flops else 0.0
    return w.flops / w.bytes


def case_env(case: Case) -> dict[str, Any]:
    """``work``'s environment for a validation case: sizes (symbolic dimensions), scalars, arrays."""
    sizes = {k.lower(): int(v) for k, v in case.sizes.items()} | {k: int(v) for k, v in case.sizes.items()}
    return {**sizes, **case.env, **case.arrays}


def work(kernel: ir.Kernel, env: Mapping[str, object]) -> Work:
    """Bytes and flops of one call of ``kernel`` with the argument values ``env``."""
    arrays = {k: v for k, v in env.items() if isinstance(v, np.ndarray) and v.ndim > 0}
    scalars = {k: _plain(v) for k, v in env.items() if k not in arrays}
    counter = _Counter(kernel, arrays)
    flops, _ = counter.block(kernel.body, dict(scalars), 1)
    return Work(_traffic(kernel, scalars, arrays), flops, counter.estimate)


def _plain(v: object) -> object:
    if isinstance(v, np.ndarray | np.generic):
        v = v.item()
    return v.decode() if isinstance(v, bytes) else v


def _extents(decl: ir.Decl, scalars: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> tuple[int, ...]:
    if not isinstance(decl, ir.Array):
        raise ValueError(f"'{decl.name}' is not an array")
    try:
        return tuple(max(0, int(ir.evaluate(e, scalars))) for e in decl.shape)
    except _EVAL_ERRORS as exc:
        if decl.name in arrays:
            return tuple(arrays[decl.name].shape)
        raise ValueError(f"cannot size array '{decl.name}' ({exc}); give its extents or its value") from None


def _reads(node: object, out: set[str]) -> set[str]:
    """Arrays ``node`` reads (a stored-to element is not read; its indices are)."""
    if isinstance(node, ir.Load):
        out.add(node.array)
    elif isinstance(node, ir.Extern):
        out.update(node.inputs)
    store = isinstance(node, ir.Assign) and isinstance(node.target, ir.Load)
    for child in (*node.target.index, node.value) if store else ir.children(node):  # type: ignore[union-attr]
        _reads(child, out)
    return out


def _first_reads(stmts: tuple[ir.Stmt, ...], out: set[str],
                 written: frozenset[tuple[str, str, frozenset[str]]] = frozenset()) -> set[str]:
    """Arrays read at an element the same statement sequence has not just stored (so
    ``p(j) = ...; q = p(j)`` does not read ``p`` from memory). A stored element stays
    known until a scalar its index reads is assigned; loops and branches forget them."""
    known = set(written)
    for s in stmts:
        if isinstance(s, ir.Assign):
            store = isinstance(s.target, ir.Load)
            exprs = (*s.target.index, s.value) if isinstance(s.target, ir.Load) else (s.value,)
            for n in (n for e in exprs for n in ir.walk(e)):
                if isinstance(n, ir.Load) and not any(
                        k[0] == n.array and k[1] == _key(n.index) for k in known):
                    out.add(n.array)
            if store:
                assert isinstance(s.target, ir.Load)
                known.add((s.target.array, _key(s.target.index),
                           frozenset(v.name for e in s.target.index for v in ir.walk(e) if isinstance(v, ir.Var))))
            else:
                assert isinstance(s.target, ir.Var)
                known = {k for k in known if s.target.name not in k[2]}
        elif isinstance(s, ir.Loop):
            for e in (s.start, s.stop, s.step):
                _reads(e, out)
            _first_reads(s.body, out)
            known = set()
        elif isinstance(s, ir.If):
            _reads(s.cond, out)
            _first_reads(s.then, out, frozenset(known))
            _first_reads(s.orelse, out, frozenset(known))
            known = set()
        else:
            _reads(s, out)
            known = set()
    return out


def _key(index: tuple[ir.Expr, ...]) -> str:
    return ",".join(ir.expr_str(e) for e in index)


def _traffic(kernel: ir.Kernel, scalars: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> int:
    read = _first_reads(kernel.body, set())
    written = many(kernel.body, arrays_written)
    total = 0
    for a in kernel.arrays:
        times = int(a.name in read and a.intent is not ir.Intent.OUT) + int(a.name in written)
        if times:
            total += times * math.prod(_extents(a, scalars, arrays)) * a.dtype.itemsize
    return total


def _flops(e: object) -> int:
    return sum(1 for n in ir.walk(e)
               if ((isinstance(n, ir.BinOp) and n.op in _FLOP_OPS) or isinstance(n, ir.Call)) and n.dtype.is_float)


def _has_load(e: object) -> bool:
    return any(isinstance(n, ir.Load) for n in ir.walk(e))


def _data_scalars(nodes: list[object]) -> set[str]:
    """Scalars assigned from array elements, directly or through other such scalars."""
    assigns = [(n.target.name, n.value) for n in nodes if isinstance(n, ir.Assign) and isinstance(n.target, ir.Var)]
    data: set[str] = set()
    while new := {name for name, v in assigns if _has_load(v) or scalar_reads(v) & data} - data:
        data |= new
    return data


class _Counter:
    """Flops of statements in an environment of known scalars (mutated as the code runs).
    Facts about the kernel's nodes are worked out once, keyed by node id."""

    def __init__(self, kernel: ir.Kernel, arrays: Mapping[str, np.ndarray]) -> None:
        self.kernel, self.arrays, self.estimate = kernel, arrays, False
        nodes = [n for s in kernel.body for n in ir.walk(s)]
        data = _data_scalars(nodes)
        self.flops = {id(n): _flops(n.value) + sum(_flops(i) for i in getattr(n.target, "index", ()))
                      for n in nodes if isinstance(n, ir.Assign)}
        self.flops.update({id(n): _flops(n.cond) for n in nodes if isinstance(n, ir.If)})
        # a condition on array data is not followed: both arms are costed
        self.data = {id(n) for n in nodes
                     if isinstance(n, ir.If) and (_has_load(n.cond) or scalar_reads(n.cond) & data)}
        self.assigned = {id(n): scalar_writes(n) | loop_vars(n) for n in nodes
                         if isinstance(n, ir.If | ir.Loop | ir.While)}
        self.varies = {id(n) for n in nodes if isinstance(n, ir.Loop) and self._varies(n)}

    def _varies(self, lp: ir.Loop) -> bool:
        """Whether the body's cost may depend on the iteration: a nested loop's bounds or
        an argument-dependent condition read the loop variable or a scalar the body assigns."""
        names = {lp.var} | scalar_writes(lp)
        for n in ir.walk(lp):
            if isinstance(n, ir.Loop) and n is not lp:
                deps = scalar_reads(n.start) | scalar_reads(n.stop) | scalar_reads(n.step)
            elif isinstance(n, ir.If) and id(n) not in self.data:
                deps = scalar_reads(n.cond)
            else:
                continue
            if deps & names:
                return True
        return False

    def forget(self, env: dict[str, Any], node: ir.If | ir.Loop | ir.While) -> None:
        """Drop the scalars ``node`` assigns: their values after it are not followed."""
        for name in self.assigned[id(node)]:
            env.pop(name, None)

    def block(self, stmts: tuple[ir.Stmt, ...], env: dict[str, Any], mult: int) -> tuple[int, bool]:
        """(flops, whether the routine returned); ``mult``: how often this block is costed."""
        total = 0
        for s in stmts:
            f, stop = self.stmt(s, env, mult)
            total += f
            if stop:
                return total, True
        return total, False

    def stmt(self, s: ir.Stmt, env: dict[str, Any], mult: int) -> tuple[int, bool]:
        if isinstance(s, ir.Return | ir.ErrorCall):
            return 0, True
        if isinstance(s, ir.HostCall):
            return 0, s.kind == "stop"
        if isinstance(s, ir.Assign):
            if isinstance(s.target, ir.Var):
                try:
                    env[s.target.name] = self.value(s.value, env)
                except _EVAL_ERRORS:
                    env.pop(s.target.name, None)
            return self.flops[id(s)], False
        if isinstance(s, ir.Extern):
            return self.extern(s, env), False
        if isinstance(s, ir.If):
            return self.branch(s, env, mult)
        if isinstance(s, ir.While):  # its trip count is known only when it runs: one iteration counted
            f, _ = self.block(s.body, dict(env), mult)
            self.estimate = True
            self.forget(env, s)
            return f, False
        return self.loop(s, env, mult)

    def value(self, e: ir.Expr, env: Mapping[str, Any]) -> Any:
        return ir.evaluate(self.fold(e, env) if _has_load(e) else e, env)

    def fold(self, e: ir.Expr, env: Mapping[str, Any]) -> ir.Expr:
        """``e`` with every array element read from the case's arrays."""
        if isinstance(e, ir.Load):
            idx = tuple(int(self.value(i, env)) for i in e.index)
            if min(idx, default=0) < 0:
                raise IndexError(f"{e.array}{list(idx)}")
            return ir.Const(self.arrays[e.array][idx].item(), e.dtype)
        new: dict[str, object] = {}
        for f in fields(e):
            v = getattr(e, f.name)
            if isinstance(v, tuple):
                new[f.name] = tuple(self.fold(x, env) if isinstance(x, _EXPR) else x for x in v)
            elif isinstance(v, _EXPR):
                new[f.name] = self.fold(v, env)
        return replace(e, **new)  # type: ignore[arg-type]

    def branch(self, s: ir.If, env: dict[str, Any], mult: int) -> tuple[int, bool]:
        f = self.flops[id(s)]
        if id(s) not in self.data:
            try:
                taken = bool(ir.evaluate(s.cond, env))
            except _EVAL_ERRORS:
                pass
            else:
                g, stop = self.block(s.then if taken else s.orelse, env, mult)
                return f + g, stop
        then, _ = self.block(s.then, dict(env), mult)
        other, _ = self.block(s.orelse, dict(env), mult)
        if then != other or has_exit(s):
            self.estimate = True
        self.forget(env, s)
        return f + max(then, other), False

    def loop(self, lp: ir.Loop, env: dict[str, Any], mult: int) -> tuple[int, bool]:
        try:
            start, stop, step = (int(self.value(e, env)) for e in (lp.start, lp.stop, lp.step))
            trip = max(0, -((start - stop) // step))  # ceil((stop - start) / step), either sign
        except _EVAL_ERRORS as exc:
            raise ValueError(f"{self.kernel.name}: cannot evaluate the bounds of loop '{lp.var}' "
                             f"(line {lp.line}): {exc}") from None
        if trip == 0:
            return 0, False
        if id(lp) not in self.varies:
            f, ret = self.block(lp.body, {**env, lp.var: start}, mult)
            self.forget(env, lp)
            return (f, True) if ret else (f * trip, False)
        if mult * trip <= EXACT_ITERATIONS:
            total = 0
            for k in range(trip):
                env[lp.var] = start + k * step
                f, ret = self.block(lp.body, env, mult * trip)
                total += f
                if ret:
                    return total, True
            env.pop(lp.var, None)
            return total, False
        self.estimate = True
        f0, fm, fl = (self.block(lp.body, {**env, lp.var: start + k * step}, mult * 3)[0]
                      for k in (0, (trip - 1) // 2, trip - 1))
        self.forget(env, lp)
        return round(trip * (f0 + 4 * fm + fl) / 6), False

    def extern(self, op: ir.Extern, env: Mapping[str, Any]) -> int:
        dims = [_extents(self.kernel.param(n), env, self.arrays) for n in (*op.inputs, *op.outputs)]
        if op.op == "matmul":
            if len(dims) != 3:
                raise ValueError(f"{self.kernel.name}: matmul takes two inputs and one output")
            a, _, c = dims
            k = op.attr("k")
            return 2 * math.prod(c) * (int(ir.evaluate(k, env)) if k is not None
                                       else a[-2] if op.attr("trans_a") else a[-1])
        if op.op.startswith("conv"):
            x, w, y = dims[0], dims[1], dims[-1]
            macs = math.prod(x if "transpose" in op.op else y) * math.prod(w[1:])
            return 2 * macs + (math.prod(y) if len(op.inputs) == 3 else 0)
        raise ValueError(f"{self.kernel.name}: no flop count for library operation '{op.op}'")
