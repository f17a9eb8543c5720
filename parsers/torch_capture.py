"""Capture a program's forward as a core-ATen FX graph with symbolic shapes.

The model is wrapped so that its parameters and buffers are graph inputs too
(``torch.func.functional_call``), and every axis of every input and parameter is
exported as ``Dim.AUTO``: extents become sympy expressions over symbols that we
map to dimension scalars (``dim:<i>:<axis>`` / ``dim:param:<key>:<axis>``).

Export specialises an axis to a constant when a Python int in the module
(``nn.LayerNorm(dim)``'s normalized_shape, a ``view(-1, self.dim)``) pins it. To
keep such extents symbolic the program is captured a second time with its size
constants of 8 and more halved (odd ones less 2): an extent that changes between the two captures is matched
to the dimension scalars (a dim, a product, a multiple) with the same two values.
"""

from __future__ import annotations

import ast
import inspect
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import sympy
import torch
from torch._decomp import core_aten_decompositions
from torch.export import Dim
from torch.fx.experimental.proxy_tensor import make_fx

from parsers.base import ParseError, Unsupported
from parsers.torch_dtypes import ir_dtype
from parsers.torch_program import load_program, module_constants
from parsers.torch_rnn import RECURRENT_OPS
from parsers.torch_shapes import Captured, Placeholder, Shot, Symbolizer, ident, sym_expr, sym_to_ir
from parsers.torch_state import StateReader, model_tensors, updated_keys
from translate import ir
from translate.ir import DType

if TYPE_CHECKING:
    from parsers.torch_program import TorchProgram


class _Wrapper(torch.nn.Module):
    """The model as a function of its tensors and the forward inputs; with ``state`` keys,
    it returns ``(result, [value of each state tensor after the call])``."""

    def __init__(self, model: torch.nn.Module, state: Sequence[str] = ()) -> None:
        super().__init__()
        self.m = model
        self.state = list(state)

    def forward(self, params: dict[str, torch.Tensor], args: tuple[object, ...]) -> object:
        if not self.state:
            return torch.func.functional_call(self.m, params, args)
        reader = StateReader(self.state)
        handle = self.m.register_forward_hook(reader)
        try:
            out = torch.func.functional_call(self.m, params, args)
        finally:
            handle.remove()
        return out, list(reader.values)


def _export_args(inputs: list[object]) -> tuple[object, ...]:
    out: list[object] = []
    for v in inputs:
        if isinstance(v, float) and not isinstance(v, bool):
            out.append(torch.tensor(v, dtype=torch.float32))
        else:
            out.append(v)
    return tuple(out)


def _shot(model: torch.nn.Module, inputs: list[object], notes: list[str]) -> Shot:
    params = model_tensors(model)
    args = _export_args(inputs)
    order: list[tuple[str, int | str]] = [("param", k) for k in params] + [("input", i) for i in range(len(args))]
    values: list[object] = list(params.values()) + list(args)
    state = updated_keys(model, inputs)
    if state:
        notes.append("state: forward updates " + ", ".join(state) + "; their values after the call are outputs")
    wrapper = _Wrapper(model, state).eval()

    def dyn(v: object) -> object:
        return {a: Dim.AUTO for a in range(v.dim())} if isinstance(v, torch.Tensor) else None

    errors: list[str] = []
    attempts = (("torch.export (dynamic shapes)", True), ("torch.export (static shapes)", False))
    for method, dynamic in attempts:
        try:
            kwargs: dict[str, object] = {}
            if dynamic:
                kwargs["dynamic_shapes"] = ({k: dyn(v) for k, v in params.items()}, tuple(dyn(v) for v in args))
            with warnings.catch_warnings():  # torch's notes on its own recurrent modules' internals
                warnings.filterwarnings("ignore", message=r"The tensor attributes .* were assigned during export")
                warnings.filterwarnings("ignore", message=r".*isinstance\(treespec, LeafSpec\)", category=FutureWarning)
                ep = torch.export.export(wrapper, (params, args), strict=False, **kwargs)  # type: ignore[arg-type]
                ep = ep.run_decompositions(_decompositions())
        except Exception as err:  # export raises many kinds of errors
            errors.append(f"{method}: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}")
            continue
        sig = ep.graph_signature
        mutated = {order[sig.user_inputs.index(n)] for n in sig.user_inputs_to_mutate.values()
                   if n in sig.user_inputs}
        if sig.buffers_to_mutate or any(role != "param" or key not in state for role, key in mutated):
            raise Unsupported("the forward updates one of its inputs in place")
        for spec in sig.input_specs:
            if spec.kind.name in ("CONSTANT_TENSOR", "CUSTOMOBJ", "TOKEN") and spec.arg.name in _users(ep.graph):
                raise Unsupported(f"the forward creates a tensor constant ({spec.target}); not lowered")
        names = list(sig.user_inputs)
        if len(names) != len(order):
            raise Unsupported(f"export gave {len(names)} inputs for {len(order)} parameters and forward inputs")
        notes.extend(f"capture: {e}" for e in errors)
        aliases: dict[str, str] = {}
        for spec in sig.input_specs:
            target = str(spec.target or "")
            if spec.kind.name in ("PARAMETER", "BUFFER") and target.startswith("m.") and \
                    ("param", target[2:]) in order:
                aliases[spec.arg.name] = names[order.index(("param", target[2:]))]
        return Shot(ep.graph, method + " + core ATen decompositions", order, names, values, aliases,
                    _output_roles(ep, state))
    try:
        return _fx_shot(wrapper, params, args, order, values, errors, notes)
    except Unsupported:
        raise
    except Exception as err:
        errors.append(f"torch.fx: {type(err).__name__}: {err}")
    raise Unsupported("capture failed: " + "; ".join(errors))


def _output_roles(ep: torch.export.ExportedProgram, state: Sequence[str]) -> list[tuple[str, int | str]]:
    """``Shot.outputs`` of an exported wrapper (the user outputs are the forward's results,
    then the state values)."""
    specs = ep.graph_signature.output_specs
    user = sum(1 for sp in specs if sp.kind.name == "USER_OUTPUT")
    results = user - len(state)
    roles: list[tuple[str, int | str]] = []
    k = 0
    for sp in specs:
        if sp.kind.name != "USER_OUTPUT":
            roles.append(("mutation", ""))
            continue
        roles.append(("output", k) if k < results else ("state", state[k - results]))
        k += 1
    return roles


def _decompositions() -> Mapping[object, object]:
    """Core ATen's decompositions, less the recurrent layers (lowered whole, ``parsers.torch_rnn``)."""
    table = core_aten_decompositions()
    for name in RECURRENT_OPS:
        op, overload = name.split(".")
        table.pop(getattr(getattr(torch.ops.aten, op), overload), None)
    return table


def _users(graph: torch.fx.Graph) -> set[str]:
    return {n.name for n in graph.nodes if n.op == "placeholder" and n.users}


def _fx_shot(wrapper: torch.nn.Module, params: dict[str, torch.Tensor], args: tuple[object, ...],
             order: list[tuple[str, int | str]], values: list[object], errors: list[str],
             notes: list[str]) -> Shot:

    torch.fx.symbolic_trace(wrapper.m)  # the fx capture proper: fails on data-dependent control flow

    def flat(*vals: object) -> object:
        return wrapper(dict(zip(params, vals[:len(params)], strict=True)), tuple(vals[len(params):]))

    gm = make_fx(flat, decomposition_table=dict(_decompositions()), tracing_mode="symbolic")(*values)
    names = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    notes.extend(f"capture: {e}" for e in errors)
    return Shot(gm.graph, "torch.fx symbolic_trace + make_fx (symbolic shapes) + core ATen decompositions",
                 order, names, values)


# ------------------------------------------------------------------ capture


def capture(program: TorchProgram) -> Captured:
    notes: list[str] = []
    model = program.make_model(0)
    inputs = program.make_inputs(0)
    with torch.no_grad():
        shot = _shot(model, inputs, notes)
    arg_names = _forward_arg_names(model, len(inputs))
    taken: set[str] = set()
    placeholders: dict[str, Placeholder] = {}
    roles = list(zip(shot.names, shot.order, shot.values, strict=True))
    # inputs first, then parameters (the parameter order of the kernel)
    roles.sort(key=lambda r: (0, r[1][1]) if r[1][0] == "input" else (1, 0))
    used = {n.name for n in shot.graph.nodes if n.op == "placeholder" and n.users}
    used |= {shot.aliases[n] for n in used if n in shot.aliases}
    for node_name, (role, key), value in roles:
        if role == "param" and node_name not in used:
            continue
        if role == "input":
            assert isinstance(key, int)
            name = ident(arg_names[key], taken)
            binding = f"input:{key}"
        else:
            name = ident(str(key).replace(".", "_"), taken)
            binding = f"param:{key}"
        decl: ir.Array | ir.Scalar
        if isinstance(value, torch.Tensor) and not (role == "input" and not isinstance(inputs[key], torch.Tensor)):
            decl = ir.Array(name, ir_dtype(value.dtype), (), ir.Layout.RIGHT, ir.Intent.IN, binding=binding)
        else:
            decl = ir.Scalar(name, _py_dtype(inputs[key] if role == "input" else value), ir.Intent.IN, binding)
        placeholders[node_name] = Placeholder(role, key, decl, value)
    for alias, target in shot.aliases.items():
        if target in placeholders:
            placeholders[alias] = placeholders[target]
    # the forward inputs that are not graph placeholders (unused, or constants export baked in)
    for i, v in enumerate(inputs):
        if not any(p.role == "input" and p.key == i for p in placeholders.values()):
            name = ident(arg_names[i], taken)
            decl = (ir.Array(name, ir_dtype(v.dtype), (), ir.Layout.RIGHT, ir.Intent.IN, binding=f"input:{i}")
                    if isinstance(v, torch.Tensor) else ir.Scalar(name, _py_dtype(v), ir.Intent.IN, f"input:{i}"))
            placeholders[f"__unused_input_{i}"] = Placeholder("input", i, decl, v)
    other = _second_shot(program, shot, notes)
    return Symbolizer(program, shot, placeholders, taken, other, notes).run()


def _forward_arg_names(model: torch.nn.Module, n: int) -> list[str]:
    try:
        params = [p for p in inspect.signature(model.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params[:n]]
    return names + [f"in{i}" for i in range(len(names), n)]


def _py_dtype(v: object) -> DType:
    if isinstance(v, bool):
        return DType.BOOL
    if isinstance(v, int):
        return DType.I64
    if isinstance(v, torch.Tensor):
        return ir_dtype(v.dtype)
    return DType.F32


def _perturbed_sizes(program: TorchProgram) -> dict[str, object] | None:
    try:
        tree = ast.parse(program.path.read_text())
    except (OSError, SyntaxError):
        return None

    def smaller(v: int) -> int:
        return v if v < 8 else v // 2 if v % 2 == 0 else v - 2

    out: dict[str, object] = {}
    for name in module_constants(tree):
        if name in program.values:  # pinned: never varied
            continue
        v = program.namespace.get(name)
        if isinstance(v, int) and not isinstance(v, bool) and v >= 8:
            out[name] = smaller(v)
        elif (name in program.sizes and isinstance(v, tuple) and v
              and all(isinstance(e, int) and not isinstance(e, bool) for e in v) and max(v) >= 8):
            out[name] = tuple(smaller(e) for e in v)
    return dict(program.sizes) | out if out else None


def _second_shot(program: TorchProgram, shot: Shot, notes: list[str]) -> Shot | None:
    """A capture at halved sizes, only when the first one specialised an axis."""
    special = False
    for v in shot.values:
        if isinstance(v, torch.Tensor):
            special = special or any(d >= 2 for d in v.shape)
    if not special or "static" in shot.method:
        if "dynamic" not in shot.method:
            notes.append("shapes: static capture, extents are constants of the captured sizes")
        return None
    if not _has_specialised(shot):
        return None
    sizes = _perturbed_sizes(program)
    if sizes is None:
        notes.append("shapes: some extents were specialised by export and no size constant can vary them")
        return None

    try:
        other = load_program(program.path, sizes, **program.options)
        with torch.no_grad():
            shot2 = _shot(other.make_model(0), other.make_inputs(0), [])
    except (ParseError, Unsupported, Exception) as err:  # noqa: BLE001 - any failure: keep constants
        notes.append(f"shapes: second capture at other sizes failed ({type(err).__name__}); specialised extents"
                     " stay constants")
        return None
    a = [(n.name, str(n.target)) for n in shot.graph.nodes]
    b = [(n.name, str(n.target)) for n in shot2.graph.nodes]
    if a != b or shot2.order != shot.order:
        notes.append("shapes: the graph changes with the sizes; specialised extents stay constants")
        return None
    return shot2


def _has_specialised(shot: Shot) -> bool:
    nodes = {n.name: n for n in shot.graph.nodes}
    for name in shot.names:
        val = nodes[name].meta.get("val")
        if isinstance(val, torch.Tensor) and nodes[name].users:
            for d in val.shape:
                e = sym_expr(d)
                if not isinstance(e, sympy.Symbol) and not (isinstance(e, sympy.Integer) and int(e) < 2):
                    return True
    return False



__all__ = ["Captured", "Placeholder", "capture", "sym_to_ir"]
