"""``pytorch/<stem>_model.py``: a drop-in ``ModelNew`` for a PyTorch file.

The generated file stands on its own: it carries the user's model file and the generated
Triton launcher (``triton/<stem>_triton.py``) as text and makes modules of them when it is
loaded (registered with ``linecache``, so ``triton.jit`` and ``inspect`` find their source), so
it works wherever it is copied and when exec'd from a string, as KernelBench's harness loads
code. It subclasses the file's ``Model``, overriding only ``forward``: the constructor
signature and the parameters/buffers are Model's own, so ``ModelNew(*get_init_inputs())``
takes ``load_state_dict(model.state_dict())``. ``forward(*inputs)`` allocates the
outputs (``torch.empty``), reads the dims from the input (or parameter) shapes,
and calls the launcher with the kernel's parameters in order: inputs, parameters/buffers by
state_dict key, outputs, dims (docs/CONVENTIONS.md). It never calls the original
forward nor torch compute ops on the data (``.contiguous()`` and allocation only). It is
inference-only: the kernels have no backward pass.

``model_new_class(base)`` builds the same subclass over any ``Model`` class (the
validation and tests use it with a program loaded at small sizes).

Constructor guard: the kernels were captured for one set of constructor
arguments (``get_init_inputs()`` at the workflow's sizes), and a hyperparameter
among them (GroupNorm's num_groups, an axis, an eps) is baked into the code.
Given ``init_inputs``, the file records them (``_INIT_INPUTS``) and
``ModelNew.__init__`` raises ``ValueError`` naming the argument when built with
another value of one, except the positions in ``size_args`` (integer arguments
shown to only set sizes, which the kernels read from the tensors:
parsers.torch_load.size_init_args). An argument that is not a Python
literal is not checked (the header says so).

A plain module (no ``Model`` / ``get_inputs`` / ``get_init_inputs`` in the file)
takes ``model_name`` as its class; the module's ``get_inputs()`` then makes
float32 ``torch.randn`` inputs of ``input_shapes`` and ``get_init_inputs()``
returns the recorded arguments.

The generated file needs only torch and triton: it runs on a GPU machine
without the frontend. This module also classifies ``Kernel.notes`` /
``Rendered.notes`` into the report's per-region ``ops`` list.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from targets.triton_expr import TORCH_DTYPE, py_name
from translate import ir

_LIBRARY = re.compile(r"\b(library|cublas|cudnn|vendor|torch\.|aten\.|extern)\b", re.IGNORECASE)
# note prefixes of the frontend and the renderers ("generated kernel: fused relu -> out (nest 1)")
NOTE_PREFIXES = {"generated kernel": "generated kernel", "library call": "library call", "library": "library call",
             "library/template": "library op (per target: vendor call or generated template)",
             "template": "generated kernel", "capture": "note", "held sizes": "note", "state": "note",
             "recurrent": "host loop"}
_KERNEL = re.compile(r"\b(kernel|fused|generated|template|triton)\b", re.IGNORECASE)


class ModelNewError(Exception):
    """The kernel's signature cannot be driven from a forward call (the reason says why)."""


def model_path(kernel: ir.Kernel) -> str:
    return f"pytorch/{kernel.name.lower()}_model.py"


def launcher_path(kernel: ir.Kernel) -> str:
    return f"triton/{kernel.name.lower()}_triton.py"


def classify_ops(notes: Sequence[str], kernel: ir.Kernel | None = None) -> list[dict[str, str]]:
    """The report's ``ops``: one entry per note, ``runs_as`` "library call" or
    "generated kernel" (or "note" where a note says neither), plus every
    ``Extern`` op of the kernel that no note mentions."""
    ops: list[dict[str, str]] = []
    seen: set[str] = set()
    for note in notes:
        if note in seen:
            continue
        seen.add(note)
        prefix = note.split(":", 1)[0].strip().lower() if ":" in note else ""
        if prefix in NOTE_PREFIXES:
            kind = NOTE_PREFIXES[prefix]
        else:
            kind = "library call" if _LIBRARY.search(note) else "generated kernel" if _KERNEL.search(note) else "note"
        ops.append({"op": note, "runs_as": kind})
    if kernel is not None:
        for stmt in kernel.body:
            for node in ir.walk(stmt):
                if isinstance(node, ir.Extern) and not any(node.op in n for n in notes):
                    ops.append({"op": f"{node.op} ({', '.join(node.inputs)} -> {', '.join(node.outputs)})",
                                "runs_as": "library op (target decides: vendor call or generated template)"})
    return ops


def _py(e: ir.Expr, names: dict[str, str]) -> str:
    """A shape expression over the dims as Python (extents are non-negative)."""
    if isinstance(e, ir.Const):
        return repr(int(e.value)) if not isinstance(e.value, str) else repr(e.value)
    if isinstance(e, ir.Var):
        if e.name not in names:
            raise ModelNewError(f"extent names '{e.name}', which is not a dim of the forward call")
        return names[e.name]
    if isinstance(e, ir.Cast):
        return _py(e.expr, names)
    if isinstance(e, ir.UnOp) and e.op == "neg":
        return f"(-{_py(e.operand, names)})"
    if isinstance(e, ir.BinOp) and e.op in ("add", "sub", "mul", "div", "mod"):
        sym = {"add": "+", "sub": "-", "mul": "*", "div": "//", "mod": "%"}[e.op]
        return f"({_py(e.lhs, names)} {sym} {_py(e.rhs, names)})"
    if isinstance(e, ir.Call) and e.fn in ("min", "max", "abs"):
        return f"{e.fn}({', '.join(_py(a, names) for a in e.args)})"
    raise ModelNewError(f"cannot express extent {ir.expr_str(e)} in Python")


def _new(p: ir.Array, names: dict[str, str]) -> str:
    """The arguments of a factory call making a tensor of ``p``'s shape and dtype."""
    shape = ", ".join(_py(s, names) for s in p.shape)
    shape = f"({shape},)" if len(p.shape) == 1 else f"({shape})"
    return f"{shape}, dtype={TORCH_DTYPE[p.dtype]}, device=DEVICE"


def _forward_body(kernel: ir.Kernel, symbol: str) -> list[str]:
    """Lines of ``forward`` (indented by 8 spaces in the template)."""
    lines: list[str] = []
    names: dict[str, str] = {}
    args: list[str] = []
    outputs: list[tuple[int, str]] = []
    states: list[tuple[str, str]] = []
    outs_at: list[int] = []  # positions of the arguments the kernels write
    kept_at: list[int] = []  # the model's tensors: a CUDA graph reads them where they are
    device = None
    for p in kernel.params:
        binding = p.binding or ""
        kind, _, rest = binding.partition(":")
        if kind == "dim":
            local = f"d_{p.name}"
            names[p.name] = local
            if rest.startswith("param:"):
                key, _, axis = rest[len("param:"):].rpartition(":")
                lines.append(f"{local} = int(_tensor(self, {key!r}).shape[{int(axis)}])")
            else:
                i, _, axis = rest.partition(":")
                lines.append(f"{local} = int(inputs[{int(i)}].shape[{int(axis)}])")
    lines += _extent_checks(kernel)
    for p in kernel.params:
        binding = p.binding or ""
        kind, _, rest = binding.partition(":")
        if kind == "input":
            i = int(rest)
            if isinstance(p, ir.Array):
                args.append(f"inputs[{i}].contiguous().reshape(-1)")
                device = device or f"inputs[{i}].device"
            else:
                cast = "int" if p.dtype.is_int else "bool" if p.dtype == ir.DType.BOOL else "float"
                args.append(f"{cast}(inputs[{i}])")
        elif kind == "param":
            kept_at.append(len(args))
            args.append(f"_tensor(self, {rest!r}).detach().to(DEVICE).contiguous().reshape(-1)")
            device = device or f"_tensor(self, {rest!r}).device"
        elif kind == "random":  # drawn here, in the model's order, from torch's generator
            fn = rest.rsplit(":", 1)[-1]
            assert isinstance(p, ir.Array)
            lines.append(f"{p.name} = torch.{fn}({_new(p, names)})")
            args.append(f"{p.name}.reshape(-1)")
        elif kind == "state":  # the tensor's value after the call, stored back below
            assert isinstance(p, ir.Array)
            local = f"next_{len(states)}"
            lines.append(f"{local} = torch.empty({_new(p, names)})")
            outs_at.append(len(args))
            args.append(f"{local}.reshape(-1)")
            states.append((rest, local))
        elif kind == "output":
            if not isinstance(p, ir.Array):
                raise ModelNewError(f"output '{p.name}' is a scalar; ModelNew needs tensor outputs")
            local = f"out{int(rest)}"
            outputs.append((int(rest), local))
            lines.append(f"{local} = torch.empty({_new(p, names)})")
            outs_at.append(len(args))
            args.append(f"{local}.reshape(-1)")
        elif kind == "dim":
            args.append(names[p.name])
        else:
            raise ModelNewError(f"parameter '{p.name}' has no PyTorch binding ({binding or 'none'})")
    if not outputs:
        raise ModelNewError("the kernel has no output bound to the forward's result")
    lines.append(f"_kernels(self, ({', '.join(args)},), outputs={tuple(outs_at)}, kept={tuple(kept_at)})")
    lines = [ln.replace("DEVICE", device or "torch.device('cpu')") for ln in lines]
    lines += [f"_store(self, {key!r}, {local})" for key, local in states]
    outs = [local for _, local in sorted(outputs)]
    lines.append(f"return {outs[0]}" if len(outs) == 1 else f"return ({', '.join(outs)})")
    return lines


def _extent_checks(kernel: ir.Kernel) -> list[str]:
    """Lines that refuse an input whose rank, or whose extent where the kernels were built for one
    (a pooled length, a channel count the frontend saw as a number), differs: the kernels would
    compute the wrong shape without a word."""
    lines = []
    for p in kernel.params:
        kind, _, rest = (p.binding or "").partition(":")
        if kind != "input" or not isinstance(p, ir.Array):
            continue
        fixed = {axis: int(e.value) for axis, e in enumerate(p.shape) if isinstance(e, ir.Const)}
        if not fixed:
            continue
        x = f"inputs[{int(rest)}]"
        test = " or ".join([f"{x}.dim() != {len(p.shape)}"] + [f"int({x}.shape[{a}]) != {n}" for a, n in fixed.items()])
        want = ", ".join(f"dimension {a} = {n}" for a, n in fixed.items())
        lines.append(f"if {test}:")
        lines.append(f"    raise ValueError(f'ModelNew was generated for input {rest} of rank {len(p.shape)} with "
                     f"{want} (its kernels are built for them); got shape {{tuple({x}.shape)}}: translate the "
                     "model at this size')")
    return lines


def _recorded(init_inputs: Sequence[Any] | None) -> tuple[str, list[int]]:
    """(``_INIT_INPUTS`` as Python source, positions that are not literals and go unchecked)."""
    if init_inputs is None:
        return "None", []
    items, unchecked = [], []
    for i, v in enumerate(init_inputs):
        text = repr(v)
        try:
            same = ast.literal_eval(text) == v and type(ast.literal_eval(text)) is type(v)
        except (ValueError, SyntaxError, TypeError):
            same = False
        if same:
            items.append(text)
        else:
            items.append("_UNCHECKED")
            unchecked.append(i)
    return "[" + ", ".join(items) + "]", unchecked


_GUARD = '''
_UNCHECKED = object()
_INIT_INPUTS: list[Any] | None = {init}  # the constructor arguments the kernels were generated for
_SIZE_ARGS = {size_args}  # positions that only set sizes (read from the tensors): any value works


def _check_init(base: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """ValueError when the arguments differ from the ones the kernels were generated for."""
    if _INIT_INPUTS is None:
        return
    try:
        sig = inspect.signature(base.__init__)
        got = sig.bind(None, *args, **kwargs)
        want = sig.bind(None, *_INIT_INPUTS)
    except (TypeError, ValueError):
        return  # Model's own constructor reports wrong arguments
    got.apply_defaults()
    want.apply_defaults()
    for pos, (n, p) in enumerate(list(sig.parameters.items())[1:]):
        a, b = got.arguments.get(n), want.arguments.get(n)
        if p.kind is p.VAR_POSITIONAL:
            a, b = list(a or ()), list(b or ())
            for k, (x, y) in enumerate(zip(a, b)):
                if pos + k not in _SIZE_ARGS and y is not _UNCHECKED and not _equal(x, y):
                    _refuse(f"{{n}}[{{k}}]", x, y)
            if len(a) != len(b):
                _refuse(n, a, b)
        elif pos not in _SIZE_ARGS and b is not _UNCHECKED and not _equal(a, b):
            _refuse(n, a, b)


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False


def _refuse(name: str, got: Any, want: Any) -> None:
    raise ValueError(
        f"ModelNew was generated for {source_name} with constructor arguments {{_INIT_INPUTS!r}}; "
        f"'{{name}}' = {{got!r}} differs from {{want!r}}, and the generated kernels were captured with {{want!r}} "
        "(a hyperparameter such as a group count or an axis is built into them), so they would compute wrong "
        "results. Translate the file again with these arguments (sizes:/values: in workflows.yaml)."
    )
'''


def render_model_new(kernel: ir.Kernel, source: Path, out_dir: Path, notes: Sequence[str] = (),
                     symbol: str | None = None, *, init_inputs: Sequence[Any] | None = None,
                     size_args: Sequence[int] = (), model_name: str = "Model",
                     input_shapes: Sequence[Sequence[int]] | None = None) -> str:
    """The text of ``<out_dir>/pytorch/<stem>_model.py`` (module docstring)."""

    symbol = symbol or py_name(kernel.name.lower())
    body = _forward_body(kernel, symbol)
    ops = classify_ops(notes, kernel)
    if any("extern" in o["op"] and o["runs_as"] in ("generated kernel", "library call") for o in ops):
        # the Triton renderer said how each library op runs: drop the frontend's "target decides"
        ops = [o for o in ops if not o["runs_as"].startswith("library op")]
    gen = [o["op"] for o in ops if o["runs_as"] == "generated kernel"]
    lib = [o["op"] for o in ops if o["runs_as"] not in ("generated kernel", "note", "host loop")]
    other = [o["op"] for o in ops if o["runs_as"] in ("note", "host loop")]
    stem = kernel.name.lower()
    head = [f"# Generated by kernel-translate from {kernel.origin}: ModelNew, a drop-in replacement for Model.",
            f"# forward() runs the Triton launcher {symbol}() of ../{launcher_path(kernel)}; it never calls",
            "# Model.forward or torch compute ops on the data (only allocation, .contiguous() and the",
            "# random draws a forward makes, with torch's own calls).",
            "# Ops run as generated kernels:" + ("" if gen else " (none listed)")]
    head += [f"#   - {g}" for g in gen]
    head.append("# Ops run as library calls:" + ("" if lib else " none"))
    head += [f"#   - {x}" for x in lib]
    if other:
        head.append("# Notes:")
        head += [f"#   - {x}" for x in other]
    init_text, unchecked = _recorded(init_inputs)
    if init_inputs is not None:
        head.append(f"# Generated for constructor arguments {init_text.replace('_UNCHECKED', '...')}; "
                    "ModelNew refuses others" + (f" except those at positions {sorted(size_args)} (sizes only)"
                                                 if size_args else "") + ".")
        if unchecked:
            head.append(f"# Not checked (not Python literals): arguments at positions {unchecked}.")
    guard = _GUARD.format(init=init_text, size_args=repr(tuple(sorted(size_args))),
                          source_name=source.name)
    if input_shapes is not None:
        shapes_text = repr([list(map(int, s)) for s in input_shapes])
        get_inputs = (f'getattr(source, "get_inputs", None) or (lambda: [torch.randn(*s) for s in {shapes_text}])')
    else:
        get_inputs = "source.get_inputs"
    get_init = ('getattr(source, "get_init_inputs", None) or (lambda: list(_INIT_INPUTS or []))'
                if model_name != "Model" or input_shapes is not None else "source.get_init_inputs")
    head.append("# Inference only: the kernels have no backward pass (use Model to train).")
    launcher = Path(out_dir) / launcher_path(kernel)
    source_text = Path(source).read_text() if Path(source).is_file() else ""
    launcher_text = launcher.read_text() if launcher.is_file() else ""
    graphs_why = _graphs_off(launcher_text)
    head += ["# " + line for line in textwrap.wrap("Host plan: " + host_plan(kernel, launcher_text), 100)]
    text = "\n".join(head) + f'''
"""ModelNew for {source.name}: Model's constructor and parameters, forward by generated Triton code."""

from __future__ import annotations

import inspect
import linecache
import sys
import types
import warnings
from typing import Any

import torch

# {source.name} as it was translated, and the generated launcher ({launcher_path(kernel)}): carried
# here so that this file works wherever it is copied and when exec'd from a string
_SOURCE_TEXT = {_literal(source_text)}
_LAUNCHER_TEXT = {_literal(launcher_text)}


def _module(name: str, filename: str, text: str) -> Any:
    """A module made from ``text``, its lines registered as ``filename`` (triton.jit reads its source)."""
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    module = types.ModuleType(name)
    module.__file__ = filename
    sys.modules[name] = module
    exec(compile(text, filename, "exec"), module.__dict__)
    return module


source = _module("kt_source_{stem}", "<kernel-translate: {source.name}>", _SOURCE_TEXT)
_launch = getattr(_module("kt_triton_{stem}", "<kernel-translate: {Path(launcher_path(kernel)).name}>", _LAUNCHER_TEXT),
                  {symbol!r})
{guard}


'''
    text += _TAIL.format(body=chr(10).join("            " + ln for ln in body), model_name=model_name,
                         get_inputs=get_inputs, get_init=get_init, graphs=not graphs_why,
                         graphs_why=graphs_why or "on where the inputs are on a GPU",
                         graph_output_bytes=GRAPH_OUTPUT_MIB << 20)
    return text


# ModelNew launches a shape whose outputs pass this kernel by kernel (its GRAPH_OUTPUT_BYTES)
GRAPH_OUTPUT_MIB = 64


def host_plan(kernel: ir.Kernel, launcher_text: str) -> str:
    """What ModelNew does on the host around the kernels, in words (its header and the report)."""
    why = _graphs_off(launcher_text)
    graphs = (f"CUDA graphs off ({why}); kernels launch one by one, torch's caching allocator reuses "
              "intermediates." if why else
              "on a GPU the kernels' launch is one CUDA graph per input shape, captured on the first call and "
              "replayed after (ModelNew.cuda_graphs = False turns it off), its inputs read where the caller "
              "keeps them; intermediates are allocated once per shape in the graph's memory pool; a shape whose "
              f"outputs pass {GRAPH_OUTPUT_MIB} MiB launches kernel by kernel (copying them out would cost more).")
    if any((p.binding or "").startswith(("random:", "state:")) for p in kernel.params):
        graphs += " Random draws and the model's state are made and stored around the launch, on every call."
    return graphs + " Weights are read where they are: no copies or transposes per call."


def _graphs_off(launcher_text: str) -> str:
    """Why the launch cannot be replayed as a CUDA graph ("" when it can). Random draws and the
    model's state are made and stored outside the graph, so they do not prevent it."""
    if re.search(r"\.item\(\)|\.cpu\(\)|\.tolist\(\)|synchronize\(", launcher_text):
        return "the launcher reads values back on the host during the call"
    return ""


def _literal(text: str) -> str:
    """``text`` as a Python literal: a raw triple-quoted string where that says it exactly."""
    if "\'\'\'" not in text and not text.endswith("\\") and "\r" not in text:
        return "r\'\'\'" + text + "\'\'\'"
    return repr(text)


_TAIL = '''\
def _tensor(module: torch.nn.Module, key: str) -> torch.Tensor:
    """The parameter, buffer or tensor attribute with this key (``cell.hidden``)."""
    obj: Any = module
    for part in key.split("."):
        obj = getattr(obj, part)
    return obj


def _store(module: torch.nn.Module, key: str, value: torch.Tensor) -> None:
    """Set the tensor with this key to its value after the call (the model's state)."""
    owner: Any = module
    *path, name = key.split(".")
    for part in path:
        owner = getattr(owner, part)
    current = getattr(owner, name)
    if isinstance(current, torch.nn.Parameter):
        with torch.no_grad():
            current.copy_(value)
    else:
        setattr(owner, name, value)


# a shape whose outputs are larger launches kernel by kernel: copying them out of the graph's
# buffers on every call would cost more than the launches a graph saves
GRAPH_OUTPUT_BYTES = {graph_output_bytes}


def _kernels(module: Any, args: tuple[Any, ...], outputs: tuple[int, ...], kept: tuple[int, ...]) -> None:
    """Launch the kernels on ``args`` (``outputs``: the positions the kernels write; ``kept``:
    the model's own tensors, which a graph reads where they are at capture). On a GPU
    with ``module.cuda_graphs`` the launch is a CUDA graph per shape of the arguments: captured
    on the first call (after a warm-up launch that compiles the kernels) reading the inputs
    where they are, then replayed, an input copied in only where the caller passes another
    tensor, the outputs copied out. A shape whose outputs pass ``GRAPH_OUTPUT_BYTES`` launches
    kernel by kernel. Intermediates live in the graph's memory pool, allocated once per shape.
    Random draws and the model's state are read and stored around this call, so they behave as
    without graphs."""
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    if not (module.cuda_graphs and tensors and all(t.is_cuda for t in tensors)):
        _launch(*args)
        return
    key = tuple((tuple(a.shape), a.dtype, a.device) if isinstance(a, torch.Tensor) else a for a in args)
    graphs = module.__dict__.setdefault("_kt_graphs", {{}})
    if key not in graphs and sum(args[k].numel() * args[k].element_size() for k in outputs) > GRAPH_OUTPUT_BYTES:
        graphs[key] = None
    if graphs.get(key, False) is None:
        _launch(*args)
        return
    if key not in graphs:
        # outputs get buffers of the graph's own; inputs and the model's tensors are read where they
        # are (held here, so their memory stays theirs)
        static = tuple(a.clone() if isinstance(a, torch.Tensor) and k in outputs else a for k, a in enumerate(args))
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            _launch(*static)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):
                _launch(*static)
        except Exception as exc:  # not capturable here: launch one by one from now on
            warnings.warn(f"ModelNew: CUDA graph capture failed ({{type(exc).__name__}}: {{exc}}); "
                          "kernels launch one by one", RuntimeWarning, stacklevel=2)
            module.cuda_graphs = False
            _launch(*args)
            return
        graphs[key] = (graph, static)
    graph, static = graphs[key]
    for k, (s, a) in enumerate(zip(static, args)):
        if isinstance(a, torch.Tensor) and k not in outputs and s.data_ptr() != a.data_ptr():
            s.copy_(a)
    graph.replay()
    for k in outputs:
        args[k].copy_(static[k])


def model_new_class(base: type) -> type:
    """ModelNew over any Model class (e.g. one loaded at other sizes)."""

    class ModelNew(base):  # type: ignore[misc,valid-type]
        cuda_graphs = CUDA_GRAPHS  # set False (on the class or an instance) to launch kernel by kernel
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            _check_init(base, args, kwargs)
            super().__init__(*args, **kwargs)

        def forward(self, *inputs: Any) -> Any:
{body}

        def reset_cuda_graphs(self) -> None:
            """Forget the captured graphs (they are captured again on the next call)."""
            self.__dict__.pop("_kt_graphs", None)

    ModelNew.__qualname__ = "ModelNew"
    return ModelNew


# CUDA graphs: {graphs_why}
CUDA_GRAPHS = {graphs}
Model = source.{model_name}
ModelNew = model_new_class(Model)
get_inputs = {get_inputs}
get_init_inputs = {get_init}
'''


def write_model_new(kernel: ir.Kernel, source: Path, out_dir: Path, notes: Sequence[str] = (),
                    symbol: str | None = None, **guard: Any) -> Path:
    """Write the file; ``guard``: render_model_new's keyword arguments (init_inputs, size_args,
    model_name, input_shapes)."""
    path = Path(out_dir) / model_path(kernel)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_model_new(kernel, source, out_dir, notes, symbol, **guard))
    return path
