"""Symbolic shapes of a captured graph: export's sympy symbols mapped to the
kernel's dimension scalars, plus the extents export specialised, recovered by
comparing with a second capture at other sizes (see ``torch_capture``)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import sympy
import torch
from torch.utils._sympy import functions as tf
from torch.utils._sympy.functions import FloorDiv

from parsers.base import Unsupported
from translate import ir
from translate.ir import Const, DType, Var

if TYPE_CHECKING:
    from parsers.torch_program import TorchProgram

_RESERVED = {"out", "int", "float", "double", "char", "long", "short", "const", "void", "auto", "tl", "triton",
             "torch", "Kokkos", "i", "j", "k", "idx"}


@dataclass
class Placeholder:
    role: str  # "input" | "param"
    key: int | str  # forward-input index or state_dict key
    decl: ir.Array | ir.Scalar
    value: object  # the concrete example (tensor or Python scalar)


@dataclass
class Captured:
    graph: torch.fx.Graph
    method: str
    placeholders: dict[str, Placeholder]  # placeholder node name -> role
    dims: list[ir.Scalar]  # every dimension scalar, in binding order
    shapes: dict[str, tuple[ir.Expr, ...]]  # tensor-valued node name -> symbolic shape
    to_ir: Callable[[object], ir.Expr]  # int / SymInt -> IR integer expression
    path: str  # the source file, to find lines in stack traces
    notes: list[str] = field(default_factory=list)
    dim_values: dict[str, int] = field(default_factory=dict)  # each dim scalar's value in the capture
    scalars: dict[str, ir.Expr] = field(default_factory=dict)  # symbolic-int node name -> expression
    outputs: list[tuple[str, int | str]] = field(default_factory=list)  # Shot.outputs


    def line_of(self, node: torch.fx.Node) -> int:
        trace = str(node.meta.get("stack_trace") or "")
        line = 0
        for m in re.finditer(r'File "([^"]+)", line (\d+)', trace):
            if m.group(1) == self.path:
                line = int(m.group(2))
        return line


@dataclass
class Shot:
    graph: torch.fx.Graph
    method: str
    order: list[tuple[str, int | str]]  # roles of the user-input placeholders, in order
    names: list[str]  # their node names
    values: list[object]
    aliases: dict[str, str] = field(default_factory=dict)  # the model's own lifted params -> our input
    # the role of each value of the graph's output node: ("output", i) for the forward's i-th
    # result, ("state", key) for the value of a state tensor after the call, ("mutation", "")
    # for export's copy of an input it updated in place (covered by the state's value)
    outputs: list[tuple[str, int | str]] = field(default_factory=list)

# ---------------------------------------------------------------- symbols


def sym_to_ir(expr: object, symbols: dict[sympy.Symbol, ir.Expr]) -> ir.Expr:
    """A sympy integer expression (torch's symbolic shapes) as IR."""

    e = expr
    if isinstance(e, (int, sympy.Integer)):
        return Const(int(e), DType.I32)
    if isinstance(e, sympy.Symbol):
        if e not in symbols:
            raise Unsupported(f"symbolic size {e} is not an axis of an input or parameter")
        return symbols[e]
    args = [sym_to_ir(a, symbols) for a in getattr(e, "args", ())]

    def fold(op: str) -> ir.Expr:
        out = args[0]
        for a in args[1:]:
            out = ir.BinOp(op, out, a, DType.I32)
        return out

    if isinstance(e, sympy.Add):
        return fold("add")
    if isinstance(e, sympy.Mul):
        return fold("mul")
    if isinstance(e, tf.FloorDiv) or isinstance(e, tf.CleanDiv):
        return ir.BinOp("div", args[0], args[1], DType.I32)
    if isinstance(e, tf.CeilDiv):
        num = ir.BinOp("sub", ir.BinOp("add", args[0], args[1], DType.I32), Const(1, DType.I32), DType.I32)
        return ir.BinOp("div", num, args[1], DType.I32)
    if isinstance(e, (tf.Mod, tf.PythonMod)):
        return ir.BinOp("mod", args[0], args[1], DType.I32)
    if isinstance(e, (tf.Max, sympy.Max)):
        return _fold_call("max", args)
    if isinstance(e, (tf.Min, sympy.Min)):
        return _fold_call("min", args)
    if isinstance(e, (sympy.Pow, tf.PowByNatural)) and isinstance(e.args[1], sympy.Integer) and int(e.args[1]) >= 1:
        out = args[0]
        for _ in range(int(e.args[1]) - 1):
            out = ir.BinOp("mul", out, args[0], DType.I32)
        return out
    raise Unsupported(f"symbolic size expression {e} ({type(e).__name__}) not supported")


def _fold_call(fn: str, args: list[ir.Expr]) -> ir.Expr:
    out = args[0]
    for a in args[1:]:
        out = ir.Call(fn, (out, a), DType.I32)
    return out


def sym_expr(v: object) -> sympy.Expr:
    if isinstance(v, torch.SymInt):
        return sympy.sympify(v.node.expr)
    return sympy.Integer(int(v))  # type: ignore[call-overload]


def ident(name: str, taken: set[str]) -> str:
    base = re.sub(r"\W", "_", name) or "v"
    if base[0].isdigit():
        base = "v" + base
    if base in _RESERVED or re.fullmatch(r"(out\d*|t\d+|acc\d+|buf\d+|mm\d+|conv\d+|r\d+_\d+|i\d+|q\d+)", base):
        base += "_"
    name = base
    k = 1
    while name in taken:
        k += 1
        name = f"{base}{k}"
    taken.add(name)
    return name


class Symbolizer:
    """Map export's symbols (and the specialised axes) to dimension scalars."""

    def __init__(self, program: TorchProgram, shot: Shot, placeholders: dict[str, Placeholder],
                 taken: set[str], other: Shot | None, notes: list[str]) -> None:
        self.program = program
        self.shot = shot
        self.ph = placeholders
        self.taken = taken
        self.other = other
        self.notes = notes
        self.symbols: dict[sympy.Symbol, ir.Expr] = {}
        self.dims: list[ir.Scalar] = []
        self.pairs: list[tuple[int, int | None, sympy.Symbol]] = []  # (value here, value at other sizes, symbol)
        self.vals_a: dict[sympy.Symbol, int] = {}
        self.vals_b: dict[sympy.Symbol, int] = {}  # A's symbols -> their value at the other sizes
        self.special: list[sympy.Symbol] = []  # dims export had specialised (found by the second capture)

    def run(self) -> Captured:
        nodes = {n.name: n for n in self.shot.graph.nodes}
        other_nodes = {n.name: n for n in self.other.graph.nodes} if self.other else {}
        other_vals = self._other_values() if self.other else {}
        self._other_syms: dict[sympy.Symbol, int] = {}
        if self.other:
            for n in self.other.graph.nodes:
                if n.op == "placeholder" and isinstance(n.meta.get("val"), torch.Tensor):
                    for d, v in zip(n.meta["val"].shape, other_vals.get(n.name, ()), strict=False):
                        if isinstance(d, torch.SymInt) and isinstance(d.node.expr, sympy.Symbol):
                            self._other_syms[d.node.expr] = v
        seen: set[int] = set()
        for ph_name, p in self.ph.items():
            if not isinstance(p.decl, ir.Array) or id(p) in seen:
                continue
            seen.add(id(p))
            node = nodes.get(ph_name)
            val = node.meta.get("val") if node is not None else None
            conc = p.value if isinstance(p.value, torch.Tensor) else None
            if conc is None:
                continue
            shape: list[ir.Expr] = []
            for axis, vconc in enumerate(conc.shape):
                e = sym_expr(val.shape[axis]) if isinstance(val, torch.Tensor) else sympy.Integer(int(vconc))
                vb = other_vals.get(ph_name, [None] * conc.dim())[axis] if ph_name in other_vals else None
                shape.append(self._axis(p, axis, e, int(vconc), vb))
            p.decl = ir.Array(p.decl.name, p.decl.dtype, tuple(shape), ir.Layout.RIGHT, ir.Intent.IN,
                              binding=p.decl.binding)
        shapes: dict[str, tuple[ir.Expr, ...]] = {}
        scalars: dict[str, ir.Expr] = {}
        for n in self.shot.graph.nodes:
            val = n.meta.get("val")
            if n.op == "placeholder":
                p = self.ph.get(n.name)
                if p is not None and isinstance(p.decl, ir.Array):
                    shapes[n.name] = p.decl.shape
                continue
            ob = other_nodes.get(n.name)
            bval = ob.meta.get("val") if ob is not None else None
            if isinstance(val, torch.Tensor):
                shapes[n.name] = self._shape(val, bval, n.name)
            elif isinstance(val, (tuple, list)):
                for i, v in enumerate(val):
                    if isinstance(v, torch.Tensor):
                        bv = bval[i] if isinstance(bval, (tuple, list)) and len(bval) == len(val) else None
                        shapes[f"{n.name}#{i}"] = self._shape(v, bv, n.name)
            elif isinstance(val, torch.SymInt):
                scalars[n.name] = self._extent(sym_expr(val), bval if isinstance(bval, (int, torch.SymInt)) else None,
                                               n.name)
        return Captured(self.shot.graph, self.shot.method, self.ph, self.dims, shapes,
                        lambda v: self._extent(sym_expr(v), None, "argument"), str(self.program.path), self.notes,
                        {str(s): v for s, v in self.vals_a.items() if str(s) in {d.name for d in self.dims}},
                        scalars, list(self.shot.outputs))

    def _shape(self, val: torch.Tensor, bval: object, where: str) -> tuple[ir.Expr, ...]:
        same = isinstance(bval, torch.Tensor) and bval.dim() == val.dim()
        return tuple(self._extent(sym_expr(d), bval.shape[k] if same else None, where)  # type: ignore[union-attr]
                     for k, d in enumerate(val.shape))

    def _other_values(self) -> dict[str, list[int]]:
        assert self.other is not None
        out: dict[str, list[int]] = {}
        for name, v in zip(self.other.names, self.other.values, strict=True):
            if isinstance(v, torch.Tensor):
                out[name] = [int(d) for d in v.shape]
        return out

    def _new_dim(self, p: Placeholder, axis: int, va: int, vb: int | None, unify: bool) -> sympy.Symbol:
        for a, b, s in self.pairs:
            if unify and a == va and b == vb and vb is not None and s in self.special:
                return s
        assert isinstance(p.decl, ir.Array)
        name = ident(f"{p.decl.name}_d{axis}", self.taken)
        binding = f"dim:{p.key}:{axis}" if p.role == "input" else f"dim:param:{p.key}:{axis}"
        self.dims.append(ir.Scalar(name, DType.I32, ir.Intent.IN, binding))
        sym = sympy.Symbol(name, integer=True, positive=True)
        self.symbols[sym] = Var(name, DType.I32)
        self.pairs.append((va, vb, sym))
        if unify:
            self.special.append(sym)
        self.vals_a[sym] = va
        if vb is not None:
            self.vals_b[sym] = vb
        return sym

    def _axis(self, p: Placeholder, axis: int, e: sympy.Expr, va: int, vb: int | None) -> ir.Expr:
        if isinstance(e, sympy.Symbol):
            if e not in self.symbols:
                sym = self._new_dim(p, axis, va, vb, unify=False)
                self.symbols[e] = self.symbols[sym]
                self.vals_a[e] = va
                if vb is not None:
                    self.vals_b[e] = vb
            return self.symbols[e]
        if isinstance(e, sympy.Integer):
            if vb is not None and vb != int(e):
                return self.symbols[self._new_dim(p, axis, va, vb, unify=True)]
            return Const(int(e), DType.I32)
        # an axis export derived from others (``s27 + 13``): the tensor's own axis is
        # the dimension scalar; extents computed from it are matched like constants
        return self.symbols[self._new_dim(p, axis, va, vb, unify=True)]

    def _extent(self, e: sympy.Expr, b: object, where: str) -> ir.Expr:
        if b is None or not self.vals_b:
            return sym_to_ir(e, self.symbols)
        eb = sym_expr(b)
        vb = int(eb.subs(self._other_syms)) if eb.free_symbols <= set(self._other_syms) else None
        if vb is None:
            return sym_to_ir(e, self.symbols)
        if e.free_symbols and e.free_symbols <= set(self.vals_b):
            if int(e.subs(self.vals_b)) == vb:
                return sym_to_ir(e, self.symbols)
            fixed = self._repair(e, vb)
            if fixed is not None:
                return sym_to_ir(fixed, self.symbols)
        elif isinstance(e, sympy.Integer):
            if int(e) == vb:
                return Const(int(e), DType.I32)
            found = self._match(int(e), vb)
            if found is not None:
                return sym_to_ir(found, self.symbols)
        self.notes.append(f"shapes: extent {e} of {where} does not follow the size constants; kept as captured")
        return sym_to_ir(e, self.symbols)

    def _dim_syms(self) -> list[sympy.Symbol]:
        syms = [s for _, _, s in self.pairs if s in self.vals_b]
        return [s for s in syms if s in self.special] + [s for s in syms if s not in self.special]

    def _match(self, va: int, vb: int) -> sympy.Expr | None:
        syms = self._dim_syms()
        for s in syms:
            if (self.vals_a[s], self.vals_b[s]) == (va, vb):
                return s
        for s in syms:
            a, b = self.vals_a[s], self.vals_b[s]
            if a and va % a == 0 and vb == (va // a) * b:
                return (va // a) * s
            if va and a % va == 0 and b % (a // va) == 0 and vb == b // (a // va):
                return _floordiv(s, a // va)
        for s in syms:
            for t in syms:
                if self.vals_a[s] * self.vals_a[t] == va and self.vals_b[s] * self.vals_b[t] == vb:
                    return s * t
                if self.vals_a[t] and self.vals_a[s] == va * self.vals_a[t] and \
                        self.vals_b[s] == vb * self.vals_b[t]:
                    return _floordiv(s, t)
        # affine in one dim, then (d + c) // q: output sizes of convolutions and pools
        # whose extents export specialised
        for s in syms:
            a, b = self.vals_a[s], self.vals_b[s]
            if a != b and (va - vb) % (a - b) == 0 and (va - vb) // (a - b) in (1, 2, 3, 4):
                m = (va - vb) // (a - b)
                return m * s + (va - m * a)
            for q in (2, 3, 4):
                for c in range(va * q - a, va * q - a + q):
                    if (a + c) // q == va and (b + c) // q == vb and a + c >= 0 and b + c >= 0:
                        return _floordiv(s + c, q)
        return None

    def _repair(self, e: sympy.Expr, vb: int) -> sympy.Expr | None:
        ints = sorted({int(a) for a in e.atoms(sympy.Integer) if abs(int(a)) >= 2})
        for n in ints:
            for s in self._dim_syms():
                if self.vals_a[s] == n:
                    cand = e.subs(sympy.Integer(n), s)
                    if cand.free_symbols <= set(self.vals_b) and int(cand.subs(self.vals_b)) == vb:
                        return cand
        return None


def _floordiv(a: sympy.Expr, b: sympy.Expr | int) -> sympy.Expr:

    return FloorDiv(a, sympy.sympify(b))
