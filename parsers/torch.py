"""PyTorch frontend: KernelBench-style files -> ``ir.Module`` (one Kernel per file).

Input convention: a Python file defining ``class Model(nn.Module)``,
``get_inputs()`` (the forward inputs) and ``get_init_inputs()`` (the constructor
arguments), with module-level integer size constants. ``sizes`` overrides those
constants by name before the file runs (plain, tuple-unpacked and chained
assignments; constants computed from them recompute because their source
expression is kept).

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
import re
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import torch

from parsers.base import ParseError, Unsupported
from translate import ir


@dataclass
class TorchProgram:
    path: Path
    namespace: dict[str, object]  # the executed module's globals (after size overrides)
    model_cls: type
    init_inputs: list[object]
    sizes: dict[str, int] = field(default_factory=dict)  # the overrides it was loaded with

    def make_model(self, seed: int) -> torch.nn.Module:
        torch.manual_seed(seed)
        model = self.model_cls(*self.init_inputs)
        assert isinstance(model, torch.nn.Module)
        return model.eval()

    def make_inputs(self, seed: int) -> list[object]:
        torch.manual_seed(seed)
        get_inputs = self.namespace["get_inputs"]
        assert callable(get_inputs)
        return list(get_inputs())

    @property
    def forward_line(self) -> int:
        fwd = getattr(self.model_cls, "forward", None)
        code = getattr(fwd, "__code__", None)
        return int(getattr(code, "co_firstlineno", 1))


# ------------------------------------------------------------------ loading


def _bound_names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for elt in target.elts for n in _bound_names(elt)]
    if isinstance(target, ast.Starred):
        return _bound_names(target.value)
    return []


def _stmt_targets(stmt: ast.stmt) -> list[str]:
    if isinstance(stmt, ast.Assign):
        return [n for t in stmt.targets for n in _bound_names(t)]
    if isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        return _bound_names(stmt.target)
    return []


def module_constants(tree: ast.Module) -> list[str]:
    """Names bound by top-level assignments, in source order."""
    out: list[str] = []
    for stmt in tree.body:
        out += [n for n in _stmt_targets(stmt) if n not in out]
    return out


def override_sizes(tree: ast.Module, sizes: Mapping[str, int], rel: str) -> ast.Module:
    """After every top-level statement that binds a name in ``sizes``, insert
    ``name = value``: plain, tuple-unpacking, chained and annotated assignments
    all work, and later constants computed from the name recompute."""
    known = set(module_constants(tree))
    unknown = sorted(set(sizes) - known)
    if unknown:
        raise ParseError(rel, 1, f"unknown size name(s) {', '.join(unknown)}: not a module-level constant "
                                 f"of this file (constants: {', '.join(sorted(known)) or 'none'})")
    body: list[ast.stmt] = []
    for stmt in tree.body:
        body.append(stmt)
        for name in _stmt_targets(stmt):
            if name in sizes:
                new = ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())],
                                 value=ast.Constant(value=int(sizes[name])))
                body.append(ast.copy_location(new, stmt))
    tree.body = body
    return ast.fix_missing_locations(tree)


def _error_line(path: Path, err: BaseException) -> int:
    if isinstance(err, SyntaxError) and err.lineno:
        return int(err.lineno)
    line = 1
    for frame in traceback.extract_tb(err.__traceback__):
        if frame.filename == str(path) and frame.lineno:
            line = frame.lineno
    return line


def load_program(path: Path, sizes: Mapping[str, int] | None = None, root: Path | None = None) -> TorchProgram:
    """Execute the file (with ``sizes`` overriding module-level constants) and
    return the program. Errors raise ``ParseError`` naming the file and line."""
    path = Path(path)
    rel = _rel(path, root)
    try:
        text = path.read_text()
    except OSError as err:
        raise ParseError(rel, 0, f"cannot read: {err}") from err
    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError as err:
        raise ParseError(rel, err.lineno or 1, f"Python syntax error: {err.msg}") from err
    tree = override_sizes(tree, dict(sizes or {}), rel)
    name = "kt_torch_" + re.sub(r"\W", "_", path.stem)
    namespace: dict[str, object] = {"__name__": name, "__file__": str(path), "__builtins__": __builtins__}
    try:
        code = compile(tree, str(path), "exec")
        exec(code, namespace)  # noqa: S102 - running the user's model file is the point
    except Exception as err:
        raise ParseError(rel, _error_line(path, err), f"executing the file failed: {type(err).__name__}: {err}") \
            from err
    for need in ("Model", "get_inputs", "get_init_inputs"):
        if need not in namespace:
            raise ParseError(rel, 1, f"defines no '{need}' (KernelBench convention: class Model, get_inputs(), "
                                     "get_init_inputs())")
    model_cls = namespace["Model"]
    if not (isinstance(model_cls, type) and issubclass(model_cls, torch.nn.Module)):
        raise ParseError(rel, 1, "'Model' is not a torch.nn.Module subclass")
    get_init = namespace["get_init_inputs"]
    try:
        init_inputs = list(get_init())  # type: ignore[operator]
    except Exception as err:
        raise ParseError(rel, _error_line(path, err), f"get_init_inputs() failed: {type(err).__name__}: {err}") \
            from err
    return TorchProgram(path, namespace, model_cls, init_inputs, dict(sizes or {}))


def _rel(path: Path, root: Path | None) -> str:
    if root is None:
        return str(path)
    try:
        return str(path.resolve().relative_to(Path(root).resolve()))
    except ValueError:
        return str(path)


def kernel_name(path: Path) -> str:
    name = re.sub(r"\W", "_", Path(path).stem.lower())
    return name if name and not name[0].isdigit() else f"k_{name}"


# ----------------------------------------------------------------- lowering


def lower_program(program: TorchProgram, name: str | None = None, root: Path | None = None) -> ir.Kernel | ir.Opaque:
    """Capture ``program``'s forward and lower it to one Kernel (or an Opaque with
    the reason). ``root`` makes ``origin.path`` relative."""
    from parsers.torch_capture import capture
    from parsers.torch_lower import lower_graph

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
