"""``pytorch/<stem>_model.py``: a drop-in ``ModelNew`` for a PyTorch file.

The generated module imports the user's file by path and subclasses its
``Model``, overriding only ``forward``: the constructor signature and the
parameters/buffers are Model's own, so ``ModelNew(*get_init_inputs())`` takes
``load_state_dict(model.state_dict())``. ``forward(*inputs)`` allocates the
outputs (``torch.empty``), reads the dims from the input (or parameter) shapes,
and calls the generated Triton launcher (``triton/<stem>_triton.py``, imported
by path) with the kernel's parameters in order: inputs, parameters/buffers by
state_dict key, outputs, dims (docs/CONVENTIONS.md). It never calls the original
forward nor torch compute ops on the data (``.contiguous()`` and allocation only).

``model_new_class(base)`` builds the same subclass over any ``Model`` class (the
validation and tests use it with a program loaded at small sizes).

The generated file needs only torch and triton: it runs on a GPU machine
without the frontend. This module also classifies ``Kernel.notes`` /
``Rendered.notes`` into the report's per-region ``ops`` list.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from targets.triton_expr import TORCH_DTYPE
from translate import ir

_LIBRARY = re.compile(r"\b(library|cublas|cudnn|vendor|torch\.|aten\.|extern)\b", re.IGNORECASE)
# note prefixes of the frontend and the renderers ("generated kernel: fused relu -> out (nest 1)")
_PREFIXES = {"generated kernel": "generated kernel", "library call": "library call", "library": "library call",
             "library/template": "library op (per target: vendor call or generated template)",
             "template": "generated kernel", "capture": "note"}
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
        if prefix in _PREFIXES:
            kind = _PREFIXES[prefix]
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


def _rel(target: Path, start: Path) -> str:
    try:
        return Path(os.path.relpath(target.resolve(), start.resolve())).as_posix()
    except ValueError:  # another drive
        return target.resolve().as_posix()


def _forward_body(kernel: ir.Kernel, symbol: str) -> list[str]:
    """Lines of ``forward`` (indented by 8 spaces in the template)."""
    lines: list[str] = []
    names: dict[str, str] = {}
    args: list[str] = []
    outputs: list[tuple[int, str]] = []
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
            args.append(f"_tensor(self, {rest!r}).detach().contiguous().reshape(-1)")
            device = device or f"_tensor(self, {rest!r}).device"
        elif kind == "output":
            if not isinstance(p, ir.Array):
                raise ModelNewError(f"output '{p.name}' is a scalar; ModelNew needs tensor outputs")
            shape = ", ".join(_py(s, names) for s in p.shape)
            shape = f"({shape},)" if len(p.shape) == 1 else f"({shape})"
            local = f"out{int(rest)}"
            outputs.append((int(rest), local))
            lines.append(f"{local} = torch.empty({shape}, dtype={TORCH_DTYPE[p.dtype]}, device=DEVICE)")
            args.append(f"{local}.reshape(-1)")
        elif kind == "dim":
            args.append(names[p.name])
        else:
            raise ModelNewError(f"parameter '{p.name}' has no PyTorch binding ({binding or 'none'})")
    if not outputs:
        raise ModelNewError("the kernel has no output bound to the forward's result")
    lines = [ln.replace("DEVICE", device or "torch.device('cpu')") for ln in lines]
    lines.append(f"_launch({', '.join(args)})")
    outs = [local for _, local in sorted(outputs)]
    lines.append(f"return {outs[0]}" if len(outs) == 1 else f"return ({', '.join(outs)})")
    return lines


def render_model_new(kernel: ir.Kernel, source: Path, out_dir: Path, notes: Sequence[str] = (),
                     symbol: str | None = None) -> str:
    """The text of ``<out_dir>/pytorch/<stem>_model.py`` (module docstring)."""
    from targets.triton_expr import py_name

    symbol = symbol or py_name(kernel.name.lower())
    here = Path(out_dir) / "pytorch"
    body = _forward_body(kernel, symbol)
    ops = classify_ops(notes, kernel)
    if any("extern" in o["op"] and o["runs_as"] in ("generated kernel", "library call") for o in ops):
        # the Triton renderer said how each library op runs: drop the frontend's "target decides"
        ops = [o for o in ops if not o["runs_as"].startswith("library op")]
    gen = [o["op"] for o in ops if o["runs_as"] == "generated kernel"]
    lib = [o["op"] for o in ops if o["runs_as"] != "generated kernel" and o["runs_as"] != "note"]
    other = [o["op"] for o in ops if o["runs_as"] == "note"]
    stem = kernel.name.lower()
    head = [f"# Generated by kernel-translate from {kernel.origin}: ModelNew, a drop-in replacement for Model.",
            f"# forward() runs the Triton launcher {symbol}() of ../{launcher_path(kernel)}; it never calls",
            "# Model.forward or torch compute ops on the data (only allocation and .contiguous()).",
            "# Ops run as generated kernels:" + ("" if gen else " (none listed)")]
    head += [f"#   - {g}" for g in gen]
    head.append("# Ops run as library calls:" + ("" if lib else " none"))
    head += [f"#   - {x}" for x in lib]
    if other:
        head.append("# Notes:")
        head += [f"#   - {x}" for x in other]
    text = "\n".join(head) + f'''
"""ModelNew for {source.name}: Model's constructor and parameters, forward by generated Triton code."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch

_HERE = Path(__file__).resolve().parent
_SOURCE = [_HERE / {_rel(source, here)!r}, Path({str(Path(source).resolve())!r})]
_LAUNCHER = [_HERE / {_rel(Path(out_dir) / launcher_path(kernel), here)!r}]


def _load(name: str, candidates: list[Path]) -> Any:
    for path in candidates:
        if path.is_file():
            spec = importlib.util.spec_from_file_location(name, path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
            return module
    raise ImportError(f"none of {{', '.join(map(str, candidates))}} exists")


source = _load("kt_source_{stem}", _SOURCE)
_launch = getattr(_load("kt_triton_{stem}", _LAUNCHER), {symbol!r})


def _tensor(module: torch.nn.Module, key: str) -> torch.Tensor:
    """The parameter or buffer with this state_dict key."""
    obj: Any = module
    for part in key.split("."):
        obj = getattr(obj, part)
    return obj


def model_new_class(base: type) -> type:
    """ModelNew over any Model class (e.g. one loaded at other sizes)."""

    class ModelNew(base):  # type: ignore[misc,valid-type]
        def forward(self, *inputs: Any) -> Any:
{chr(10).join("            " + ln for ln in body)}

    ModelNew.__qualname__ = "ModelNew"
    return ModelNew


ModelNew = model_new_class(source.Model)
Model = source.Model
get_inputs = source.get_inputs
get_init_inputs = source.get_init_inputs
'''
    return text


def write_model_new(kernel: ir.Kernel, source: Path, out_dir: Path, notes: Sequence[str] = (),
                    symbol: str | None = None) -> Path:
    path = Path(out_dir) / model_path(kernel)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_model_new(kernel, source, out_dir, notes, symbol))
    return path
