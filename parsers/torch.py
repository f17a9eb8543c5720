"""PyTorch frontend: KernelBench-style files -> ``ir.Module`` (one Kernel per file).

Input convention: a Python file defining ``class Model(nn.Module)``,
``get_inputs()`` (the forward inputs) and ``get_init_inputs()`` (the constructor
arguments), with module-level integer size constants. ``sizes`` overrides those
constants by name before the file runs (plain, tuple-unpacked and chained
assignments; constants computed from them recompute because their source
expression is kept); a tuple constant (``input_shape = (4096,)``) takes a tuple.
``values`` pins other module-level constants (``dim = 1``, a scan axis) the same
way; the difference is the validation's: its different-size trial changes sizes,
never values.

A plain module (no ``get_inputs`` / ``get_init_inputs``) works too: ``shapes``
gives the forward's tensor inputs by parameter name (float32, ``torch.randn``;
extents are ints or Python expressions over the file's constants), ``init`` the
constructor arguments (strings are expressions over the constants), ``module``
the class (default ``Model``, else the file's only ``nn.Module`` subclass).

The forward is captured with ``torch.export`` (dynamic dims, then core-ATen
decompositions; ``torch.fx`` + ``make_fx`` where export fails) and lowered by
``parsers.torch_lower`` to one ``ir.Kernel`` whose parameters are, in order:

* tensor forward inputs: ``Array`` (RIGHT layout, intent in, binding ``input:<i>``);
  Python scalars among them: ``Scalar`` with binding ``input:<i>``;
* parameters and buffers the graph uses: ``Array`` named after the state_dict key
  (``.`` -> ``_``), binding ``param:<key>``;
* outputs: ``Array`` ``out`` (or ``out0``, ``out1``, ...), intent out, binding ``output:<i>``;
* the dimension scalars the shapes use: ``Scalar`` i32, binding ``dim:<i>:<axis>``
  (forward input i) or ``dim:param:<key>:<axis>``.

An op the lowering does not know makes the whole file an ``ir.Opaque`` naming the
op and the source line; the frontend never falls back to calling torch.
"""

from __future__ import annotations

import ast
import traceback
from collections.abc import Mapping
from pathlib import Path

from parsers.base import ParseError, Unsupported
from parsers.torch_capture import capture
from parsers.torch_lower import lower_graph
from parsers.torch_program import TorchProgram, _rel, kernel_name, load_program, module_constants, override_sizes
from translate import ir

__all__ = ["TorchProgram", "kernel_name", "load_program", "lower_program", "module_constants", "override_sizes",
           "parse_files"]


# ----------------------------------------------------------------- lowering


def lower_program(program: TorchProgram, name: str | None = None, root: Path | None = None) -> ir.Kernel | ir.Opaque:
    """Capture ``program``'s forward and lower it to one Kernel (or an Opaque with
    the reason). ``root`` makes ``origin.path`` relative."""
    kname = name or kernel_name(program.path)
    rel = _rel(program.path, root)
    origin = ir.Origin(rel, program.forward_line)
    try:
        captured = capture(program)
        kernel = lower_graph(captured, kname, origin)
    except Unsupported as err:
        return ir.Opaque(kname, _source(program.path), err.reason, origin)
    except Exception as err:  # a lowering bug must not stop the other files: report it as such
        where = traceback.extract_tb(err.__traceback__)[-1]
        reason = (f"internal error of the PyTorch frontend ({type(err).__name__}: {err} at "
                  f"{Path(where.filename).name}:{where.lineno}); please report it")
        return ir.Opaque(kname, _source(program.path), reason, origin)
    return kernel


def _source(path: Path) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def parse_files(paths: list[Path], root: Path, sizes: Mapping[str, int] | None = None,
                errors: list[ParseError] | None = None) -> list[ir.Module]:
    """One ``ir.Module`` per file holding one Kernel (or Opaque) named after the
    file stem. A workflow's ``sizes`` span its files: each file takes the names it
    defines; a name no file defines is a ``ParseError``. A file that fails to load
    raises ``ParseError``; pass ``errors`` to collect those instead and go on."""
    wanted = dict(sizes or {})
    defined: dict[Path, set[str]] = {}
    for path in paths:
        try:
            defined[Path(path)] = set(module_constants(ast.parse(Path(path).read_text())))
        except (OSError, SyntaxError, ValueError):
            defined[Path(path)] = set()
    nowhere = sorted(set(wanted) - set().union(*defined.values())) if paths else []
    modules: list[ir.Module] = []
    for k, path in enumerate(paths):
        path = Path(path)
        try:
            if nowhere and k == 0:
                raise ParseError(_rel(path, root), 1, f"unknown size name(s) {', '.join(nowhere)}: no file of "
                                 "this workflow defines them as module-level constants")
            program = load_program(path, {n: v for n, v in wanted.items() if n in defined[path]}, root)
            kernel = lower_program(program, root=root)
        except ParseError as err:
            if errors is None:
                raise
            errors.append(err)
            continue
        modules.append(ir.Module((kernel,), "pytorch", _rel(path, root)))
    return modules
