"""Loading a PyTorch model file: ``TorchProgram`` (the file run with its sizes and pinned
values, its model class, its inputs) and the module-level constants it defines. The
conventions are ``parsers.torch``'s (its docstring); capture and lowering build on this.
"""

from __future__ import annotations

import ast
import inspect
import re
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from parsers.base import ParseError


@dataclass
class TorchProgram:
    path: Path
    namespace: dict[str, object]  # the executed module's globals (after size overrides)
    model_cls: type
    init_inputs: list[object]
    sizes: dict[str, Any] = field(default_factory=dict)  # the overrides it was loaded with
    values: dict[str, Any] = field(default_factory=dict)  # the pinned constants it was loaded with
    input_shapes: dict[str, tuple[int, ...]] | None = None  # a plain module's forward inputs (from shapes)
    module: str | None = None
    init: tuple[object, ...] | None = None

    @property
    def options(self) -> dict[str, Any]:
        """The keyword arguments of :func:`load_program` (besides sizes) that made this program."""
        opts: dict[str, Any] = {}
        if self.values:
            opts["values"] = dict(self.values)
        if self.input_shapes is not None:
            opts["shapes"] = self._shape_spec
        if self.module is not None:
            opts["module"] = self.module
        if self.init is not None:
            opts["init"] = list(self.init)
        return opts

    _shape_spec: dict[str, list[Any]] = field(default_factory=dict, repr=False)

    def make_model(self, seed: int) -> torch.nn.Module:
        torch.manual_seed(seed)
        model = self.model_cls(*self.init_inputs)
        assert isinstance(model, torch.nn.Module)
        return model.eval()

    def make_inputs(self, seed: int) -> list[object]:
        torch.manual_seed(seed)
        if self.input_shapes is not None:
            return [torch.randn(*shape, dtype=torch.float32) for shape in self.input_shapes.values()]
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


def _literal(value: object) -> ast.expr:
    """An override value as an expression: an int, a tuple of ints (given as a list
    or tuple), or any other literal scalar (pinned values)."""
    if isinstance(value, (list, tuple)):
        return ast.Tuple(elts=[_literal(v) for v in value], ctx=ast.Load())
    if isinstance(value, bool) or value is None or isinstance(value, (int, float, str)):
        return ast.Constant(value=value)
    raise ValueError(f"cannot use {value!r} as a module constant")


def _literal_kinds(tree: ast.Module) -> dict[str, str]:
    """``"tuple"`` or ``"scalar"`` for names bound by a plain ``name = <literal>`` (others unknown)."""
    kinds: dict[str, str] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            v = stmt.value
            if isinstance(v, (ast.Tuple, ast.List)):
                kinds[stmt.targets[0].id] = "tuple"
            elif isinstance(v, ast.Constant) or (isinstance(v, ast.UnaryOp) and isinstance(v.operand, ast.Constant)):
                kinds[stmt.targets[0].id] = "scalar"
    return kinds


def override_sizes(tree: ast.Module, sizes: Mapping[str, Any], rel: str, what: str = "size") -> ast.Module:
    """After every top-level statement that binds a name in ``sizes``, insert
    ``name = value``: plain, tuple-unpacking, chained and annotated assignments
    all work, and later constants computed from the name recompute. A value is an
    int, a tuple (or list) for a tuple constant, or (pinned values) another literal;
    a tuple given for a constant the file writes as a scalar literal, or the other
    way round, is an error."""
    known = set(module_constants(tree))
    unknown = sorted(set(sizes) - known)
    if unknown:
        raise ParseError(rel, 1, f"unknown {what} name(s) {', '.join(unknown)}: not a module-level constant "
                                 f"of this file (constants: {', '.join(sorted(known)) or 'none'})")
    kinds = _literal_kinds(tree)
    for name, value in sizes.items():
        given = "tuple" if isinstance(value, (list, tuple)) else "scalar"
        if kinds.get(name, given) != given:
            wrote = "a tuple" if kinds[name] == "tuple" else "a single value"
            hint = "give a list" if kinds[name] == "tuple" else "give a single value (a file is captured at one value)"
            raise ParseError(rel, 1, f"{what} '{name}': the file binds {wrote}; {hint}")
    body: list[ast.stmt] = []
    for stmt in tree.body:
        body.append(stmt)
        for name in _stmt_targets(stmt):
            if name in sizes:
                try:
                    value = _literal(sizes[name])
                except ValueError as err:
                    raise ParseError(rel, getattr(stmt, "lineno", 1), f"{what} '{name}': {err}") from err
                new = ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=value)
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


def load_program(path: Path, sizes: Mapping[str, Any] | None = None, root: Path | None = None, *,
                 values: Mapping[str, Any] | None = None, shapes: Mapping[str, Sequence[Any]] | None = None,
                 module: str | None = None, init: Sequence[Any] | None = None) -> TorchProgram:
    """Execute the file (with ``sizes`` and the pinned ``values`` overriding module-level
    constants) and return the program; ``shapes`` / ``init`` / ``module`` describe a plain
    module (module docstring). Errors raise ``ParseError`` naming the file and line."""
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
    both = sorted(set(sizes or {}) & set(values or {}))
    if both:
        raise ParseError(rel, 1, f"{', '.join(both)} given both as size and as pinned value; give it in one place")
    tree = override_sizes(tree, dict(values or {}), rel, "pinned value")
    tree = override_sizes(tree, dict(sizes or {}), rel)
    name = "kt_torch_" + re.sub(r"\W", "_", path.stem)
    namespace: dict[str, object] = {"__name__": name, "__file__": str(path), "__builtins__": __builtins__}
    try:
        code = compile(tree, str(path), "exec")
        exec(code, namespace)  # noqa: S102 - running the user's model file is the point
    except SystemExit as err:  # a file ending in sys.exit() must not end the run
        raise ParseError(rel, _error_line(path, err), f"executing the file called sys.exit({err.code!r})") from None
    except Exception as err:
        raise ParseError(rel, _error_line(path, err), f"executing the file failed: {type(err).__name__}: {err}") \
            from err
    model_cls = _model_class(namespace, module, rel)
    if init is not None:
        init_inputs = [_evaluate(a, namespace, rel, f"init[{i}]") if isinstance(a, str) else a
                       for i, a in enumerate(init)]
    elif "get_init_inputs" in namespace:
        try:
            init_inputs = list(namespace["get_init_inputs"]())  # type: ignore[operator]
        except SystemExit as err:
            raise ParseError(rel, _error_line(path, err), f"get_init_inputs() called sys.exit({err.code!r})") \
                from None
        except Exception as err:
            raise ParseError(rel, _error_line(path, err), f"get_init_inputs() failed: {type(err).__name__}: "
                                                          f"{err}") from err
    else:
        init_inputs = []
    input_shapes = None
    if shapes or "get_inputs" not in namespace:
        input_shapes = _input_shapes(model_cls, namespace, dict(shapes or {}), rel)
    return TorchProgram(path, namespace, model_cls, init_inputs, dict(sizes or {}), dict(values or {}),
                        input_shapes, module, tuple(init) if init is not None else None,
                        {k: list(v) for k, v in (shapes or {}).items()})


def _model_class(namespace: Mapping[str, object], module: str | None, rel: str) -> type:
    """The class to translate: ``module`` if given, else ``Model``, else the file's only nn.Module subclass."""
    def is_module(obj: object) -> bool:
        return isinstance(obj, type) and issubclass(obj, torch.nn.Module)

    if module is not None:
        if module not in namespace:
            raise ParseError(rel, 1, f"defines no class '{module}' (module: in workflows.yaml)")
        if not is_module(namespace[module]):
            raise ParseError(rel, 1, f"'{module}' is not a torch.nn.Module subclass")
        return namespace[module]  # type: ignore[return-value]
    if "Model" in namespace:
        if not is_module(namespace["Model"]):
            raise ParseError(rel, 1, "'Model' is not a torch.nn.Module subclass")
        return namespace["Model"]  # type: ignore[return-value]
    own = [n for n, obj in namespace.items()
           if is_module(obj) and getattr(obj, "__module__", None) == namespace.get("__name__")]
    if len(own) == 1:
        return namespace[own[0]]  # type: ignore[return-value]
    found = f"it defines {', '.join(own)}" if own else "it defines none"
    raise ParseError(rel, 1, "no 'Model' class and not exactly one nn.Module subclass "
                             f"({found}): name the class with module: in workflows.yaml")


def _evaluate(expr: str, namespace: Mapping[str, object], rel: str, what: str) -> Any:
    try:
        return eval(compile(expr, f"<{what}>", "eval"), dict(namespace))  # noqa: S307 - the workflow's own expression
    except Exception as err:
        raise ParseError(rel, 1, f"{what} = {expr!r}: {type(err).__name__}: {err}") from err


def _input_shapes(model_cls: type, namespace: Mapping[str, object], shapes: dict[str, Sequence[Any]],
                  rel: str) -> dict[str, tuple[int, ...]]:
    """The forward's tensor inputs (in its parameter order) from the workflow's ``shapes``."""
    try:
        params = list(inspect.signature(model_cls.forward).parameters.values())[1:]  # type: ignore[attr-defined]
    except (TypeError, ValueError) as err:
        raise ParseError(rel, 1, f"cannot read the signature of {model_cls.__name__}.forward: {err}") from err
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not shapes:
        raise ParseError(rel, 1, "defines no get_inputs(): give the forward's inputs under shapes: in "
                                 f"workflows.yaml (forward({', '.join(names)}), e.g. {{{names[0] if names else 'x'}: "
                                 "[batch_size, dim]}})")
    unknown = sorted(set(shapes) - set(names))
    if unknown:
        raise ParseError(rel, 1, f"shapes: {', '.join(unknown)} is not a parameter of "
                                 f"{model_cls.__name__}.forward({', '.join(names)})")
    out: dict[str, tuple[int, ...]] = {}
    for p in params:
        if p.name not in names:
            continue
        if p.name not in shapes:
            if p.default is inspect.Parameter.empty:
                raise ParseError(rel, 1, f"shapes: the forward's input '{p.name}' has no shape")
            break  # later inputs take their defaults
        dims = []
        for k, e in enumerate(shapes[p.name]):
            v = _evaluate(e, namespace, rel, f"shapes.{p.name}[{k}]") if isinstance(e, str) else e
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ParseError(rel, 1, f"shapes.{p.name}[{k}] = {e!r} is {v!r}, not an extent")
            dims.append(int(v))
        out[p.name] = tuple(dims)
    return out


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
