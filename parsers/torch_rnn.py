"""Recurrent layers (``aten.lstm`` / ``aten.gru`` / ``aten.rnn_tanh`` / ``aten.rnn_relu``).

Capture keeps these ops whole (``RECURRENT_OPS`` are left out of the decompositions);
each becomes, per layer and direction:

* one library matmul for the input projection of every time step at once
  (``xg = x @ W_ih^T`` over the whole sequence);
* a host loop over the time steps, each step a library matmul of the hidden state
  (``gh = h @ W_hh^T``) followed by one fused kernel: both biases, the gate
  activations, the cell and hidden updates and the store into the output sequence.

The hidden (and cell) state lives in ``[batch, hidden]`` arrays updated in place; the
reverse direction walks the steps backwards and writes the upper half of each output
row. Gate order and formulas are torch's (``nn.LSTM``, ``nn.GRU``, ``nn.RNN``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from parsers.base import Unsupported
from parsers.torch_dtypes import compute_dtype
from parsers.torch_emit import ONE, ZERO, TVal, c_int, cast
from parsers.torch_ops import b, call, k, sigmoid
from translate import ir
from translate.ir import BinOp, DType, Expr, Var
from translate.simplify import simplify

if TYPE_CHECKING:
    from parsers.torch_lower import Lowerer

I32 = DType.I32
GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
RECURRENT_OPS = ("lstm.input", "gru.input", "rnn_tanh.input", "rnn_relu.input")


@dataclass(frozen=True)
class _Layout:
    """Where the time and batch axes are in the sequence arrays."""

    batch_first: bool
    steps: Expr
    batch: Expr

    def index(self, t: Expr, bi: Expr, j: Expr) -> tuple[Expr, ...]:
        return (bi, t, j) if self.batch_first else (t, bi, j)

    def shape(self, width: Expr) -> tuple[Expr, ...]:
        return (self.batch, self.steps, width) if self.batch_first else (self.steps, self.batch, width)


def _add(a: Expr, c: Expr) -> Expr:
    return simplify(BinOp("add", a, c, I32))


def _mul(a: Expr, c: Expr) -> Expr:
    return simplify(BinOp("mul", a, c, I32))


def _array(lw: Lowerer, v: object, what: str) -> str:
    if not isinstance(v, TVal):
        raise Unsupported(f"the {what} of a recurrent layer at {lw.where()} is not a tensor")
    arr = lw.as_array(v, "rnn_in")
    assert arr.array is not None
    return arr.array


def _parallel2(lw: Lowerer, rows: Expr, cols: Expr, body: Callable[[Var, Var], list[ir.Stmt]],
               reason: str) -> ir.Loop:
    bi, j = lw.names.fresh("b"), lw.names.fresh("j")
    inner = ir.Loop(j, ZERO, cols, ONE, tuple(body(Var(bi, I32), Var(j, I32))), ir.LoopKind.PARALLEL,
                    reason=reason)
    return ir.Loop(bi, ZERO, rows, ONE, (inner,), ir.LoopKind.PARALLEL, reason=reason)


def _recurrent(cell: str) -> object:
    def h(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> tuple[TVal, ...]:
        return _Recurrent(lw, node, cell, args).run()

    return h


class _Recurrent:
    def __init__(self, lw: Lowerer, node: torch.fx.Node, cell: str, args: tuple) -> None:
        self.lw, self.node, self.cell = lw, node, cell
        x, hx, params = args[0], args[1], args[2]
        has_biases, layers, dropout, train, bidirectional, batch_first = args[3:9]
        if train and dropout:
            raise Unsupported(f"a {cell} layer with dropout in training mode at {lw.where()} (random)")
        if not isinstance(x, TVal) or x.rank != 3:
            raise Unsupported(f"a {cell} layer at {lw.where()} needs a 3-d (batched) input")
        self.states = list(hx) if isinstance(hx, (list, tuple)) else [hx]
        self.params = list(params)
        self.biases = bool(has_biases)
        self.layers = int(layers)
        self.dirs = 2 if bidirectional else 1
        per = 4 if self.biases else 2
        if len(self.params) != self.layers * self.dirs * per:
            raise Unsupported(f"a {cell} layer at {lw.where()} has {len(self.params)} weights for {self.layers} "
                              f"layers x {self.dirs} directions (projections are not supported)")
        out_shape = lw.item_shape(node, 0)
        hn_shape = lw.item_shape(node, 1)
        self.seq = _Layout(bool(batch_first), out_shape[1 if batch_first else 0], out_shape[0 if batch_first else 1])
        w_hh = self.params[1]
        self.hidden = w_hh.shape[1] if isinstance(w_hh, TVal) and w_hh.rank == 2 else hn_shape[2]
        self.dtype = lw.dtype(node, 0)
        self.x = x
        self.gates = GATES[cell]

    # ------------------------------------------------------------------

    def run(self) -> tuple[TVal, ...]:
        lw, H, D = self.lw, self.hidden, self.dirs
        seq = self.seq
        h0 = [_array(lw, s, "initial state") for s in self.states]
        finals = [lw.new_local((c_int(self.layers * D), seq.batch, H), self.dtype, f"{self.cell}_hn")
                  for _ in self.states]
        inp = _array(lw, self.x, "input")
        out: ir.Array | None = None
        per = 4 if self.biases else 2
        for layer in range(self.layers):
            out = lw.new_local(seq.shape(_mul(c_int(D), H)), self.dtype, f"{self.cell}_out")
            for d in range(D):
                w = [self._weight(self.params[(layer * D + d) * per + i]) for i in range(per)]
                self._direction(layer, d, inp, out.name, w, h0, [f.name for f in finals])
            inp = out.name
        assert out is not None
        vals = [TVal(out.shape, self.dtype, array=out.name, node=self.node.name, kind="array")]
        vals += [TVal(f.shape, self.dtype, array=f.name, node=self.node.name, kind="array") for f in finals]
        lw.notes.append(f"recurrent: {self.cell} at {lw.where()}, {self.layers} layer(s) x {D} direction(s): one "
                        "library matmul per layer for the input projection, then a host loop over the time steps "
                        "(a library matmul of the state and one fused kernel for gates and state update per step)")
        return tuple(vals)

    def _weight(self, v: object) -> str:
        return _array(self.lw, v, "weight")

    def _direction(self, layer: int, d: int, inp: str, out: str, w: list[str], h0: list[str],
                   finals: list[str]) -> None:
        lw, H, seq, dt = self.lw, self.hidden, self.seq, self.dtype
        line = lw.cap.line_of(self.node)
        width = _mul(c_int(self.gates), H)
        xg = lw.new_local(seq.shape(width), dt, "xg")
        tag = f"{self.cell} layer {layer}" + (" reverse" if d else "")
        lw.body.append(ir.Extern("matmul", (inp, w[0]), (xg.name,), (("trans_b", True),), line))
        lw.notes.append(f"library/template: {tag} input projection (Extern matmul) -> {xg.name}")
        slot = c_int(layer * self.dirs + d)
        states = [lw.new_local((seq.batch, H), dt, "h" if i == 0 else "c") for i in range(len(h0))]
        lw.body.append(_parallel2(lw, seq.batch, H, lambda bi, j: [
            ir.Assign(ir.Load(s.name, (bi, j), dt), ir.Load(src, (slot, bi, j), dt))
            for s, src in zip(states, h0, strict=True)], "initial state: elements are independent"))
        gh = lw.new_local((seq.batch, width), dt, "gh")
        s = lw.names.fresh("step")
        t: Expr = Var(s, I32)
        if d:
            t = simplify(BinOp("sub", BinOp("sub", seq.steps, ONE, I32), t, I32))
        step = _parallel2(lw, seq.batch, H, lambda bi, j: self._step(bi, j, t, xg.name, gh.name, states, w, out, d),
                          f"{self.cell} step: hidden units are independent")
        hh = ir.Extern("matmul", (states[0].name, w[1]), (gh.name,), (("trans_b", True),), line)
        lw.body.append(ir.Loop(s, ZERO, seq.steps, ONE, (hh, step), ir.LoopKind.SERIAL,
                               reason=f"{tag} time steps: each reads the state the last one wrote", line=line))
        lw.notes.append(f"library/template: {tag} state projection per step (Extern matmul) -> {gh.name}")
        lw.body.append(_parallel2(lw, seq.batch, H, lambda bi, j: [
            ir.Assign(ir.Load(f, (slot, bi, j), dt), ir.Load(st.name, (bi, j), dt))
            for f, st in zip(finals, states, strict=True)], "final state: elements are independent"))

    def _step(self, bi: Var, j: Var, t: Expr, xg: str, gh: str, states: list[ir.Array], w: list[str],
              out: str, d: int) -> list[ir.Stmt]:
        lw, H, dt, seq = self.lw, self.hidden, self.dtype, self.seq
        cdt = compute_dtype(dt)
        stmts: list[ir.Stmt] = []

        def tmp(prefix: str, value: Expr) -> Var:
            v = lw.names.scalar(prefix, cdt)
            stmts.append(ir.Assign(v, value))
            return v

        def ld(arr: str, idx: tuple[Expr, ...]) -> Expr:
            return cast(ir.Load(arr, tuple(simplify(i) for i in idx), dt), cdt)

        def gate_x(g: int) -> Expr:
            col = _add(_mul(c_int(g), H), j)
            e = ld(xg, seq.index(t, bi, col))
            return b("add", e, ld(w[2], (col,))) if self.biases else e

        def gate_h(g: int) -> Expr:
            col = _add(_mul(c_int(g), H), j)
            e = ld(gh, (bi, col))
            return b("add", e, ld(w[3], (col,))) if self.biases else e

        h_old = ld(states[0].name, (bi, j))
        if self.cell == "lstm":
            i_g = tmp("ig", sigmoid(b("add", gate_x(0), gate_h(0))))
            f_g = tmp("fg", sigmoid(b("add", gate_x(1), gate_h(1))))
            g_g = tmp("gg", call("tanh", b("add", gate_x(2), gate_h(2))))
            o_g = tmp("og", sigmoid(b("add", gate_x(3), gate_h(3))))
            c_new = tmp("cn", b("add", b("mul", f_g, ld(states[1].name, (bi, j))), b("mul", i_g, g_g)))
            stmts.append(ir.Assign(ir.Load(states[1].name, (bi, j), dt), cast(c_new, dt)))
            h_new = tmp("hn", b("mul", o_g, call("tanh", c_new)))
        elif self.cell == "gru":
            r = tmp("rg", sigmoid(b("add", gate_x(0), gate_h(0))))
            z = tmp("zg", sigmoid(b("add", gate_x(1), gate_h(1))))
            n = tmp("ng", call("tanh", b("add", gate_x(2), b("mul", r, gate_h(2)))))
            h_new = tmp("hn", b("add", b("mul", b("sub", k(1.0, z), z), n), b("mul", z, h_old)))
        else:
            pre = b("add", gate_x(0), gate_h(0))
            act = call("tanh", pre) if self.cell == "rnn_tanh" else call("max", pre, k(0.0, pre))
            h_new = tmp("hn", act)
        stmts.append(ir.Assign(ir.Load(states[0].name, (bi, j), dt), cast(h_new, dt)))
        col = _add(_mul(c_int(d), H), j) if self.dirs > 1 else j
        stmts.append(ir.Assign(ir.Load(out, tuple(simplify(i) for i in seq.index(t, bi, col)), dt), cast(h_new, dt)))
        return stmts


RNN_OPS = {name.split(".")[0]: _recurrent(name.split(".")[0]) for name in RECURRENT_OPS}
