"""What a Python/Triton answer is allowed to be, read from its syntax tree (not its spelling).

The text rules of :mod:`validation.anticheat` see names; an answer can spell them so that no
rule sees them (``getattr(builtins, 'ex' + 'ec')``, ``vars(builtins)['__imp' + 'ort__']``,
``import a, numpy``, a line continuation). This check parses the answer and accepts only:

- imports of ``ALLOWED_MODULES`` (torch, triton, triton.language and its libdevice, math,
  typing), at any place in the file;
- outside ``@triton.jit`` functions (the launcher): of torch, only the allocation, view
  and type names of ``TORCH_ALLOWED``; of triton, ``TRITON_ALLOWED``; tensor methods of
  ``LAUNCHER_METHODS`` (allocate, reshape, copy back, read a scalar): the computation
  belongs in ``@triton.jit`` functions;
- ``triton.language`` (``tl``), its libdevice and math anywhere, resolved attribute by
  attribute: a chain that reaches a module outside them (``tl.core.builtins``) is refused;
- never: the builtins that reach other code or the interpreter (``REFUSED_NAMES``: exec,
  eval, getattr, vars, open, __import__, ...), any dunder attribute (``x.__class__``),
  classes (a context manager whose ``__exit__`` swallows errors), ``with``, ``try``,
  ``global``/``nonlocal``, async code, assignment to a module's attribute (monkey-patching),
  decorators other than triton's.

``audit(text)`` returns (line, reason) for each refusal; empty means the answer passes.
"""

from __future__ import annotations

import ast
import importlib
import types
from typing import Any

ALLOWED_MODULES = ("torch", "triton", "triton.language", "triton.language.extra", "triton.language.extra.libdevice",
                   "triton.language.extra.cuda", "triton.language.extra.cuda.libdevice", "math", "typing",
                   "__future__")
ALLOWED = "allowed: torch, triton, triton.language and its libdevice, math, typing"
# modules whose every attribute an answer may use (resolved: no chain may leave them)
OPEN_MODULES = ("triton.language", "math", "typing", "__future__")
TORCH_ALLOWED = frozenset(
    f"torch.{n}" for n in (
        "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
        "arange", "as_strided", "float16", "float32", "float64", "bfloat16", "int8", "int16", "int32", "int64",
        "uint8", "bool", "device", "dtype", "Tensor", "Size", "finfo", "iinfo", "cuda.current_device",
        "cuda.is_available"))
TRITON_ALLOWED = frozenset(f"triton.{n}" for n in ("jit", "cdiv", "next_power_of_2", "Config", "autotune",
                                                   "heuristics", "language"))
LAUNCHER_METHODS = frozenset({
    # tensors: views, allocation, copies back, scalars out
    "view", "reshape", "contiguous", "stride", "size", "numel", "dim", "element_size", "data_ptr", "is_contiguous",
    "to", "copy_", "zero_", "fill_", "item", "flatten", "unsqueeze", "squeeze", "permute", "transpose", "t",
    "narrow", "as_strided", "clone", "float", "double", "int", "long", "cpu", "cuda", "new_empty", "new_zeros",
    "new_full", "expand", "unbind", "select", "tolist",
    # containers and text
    "get", "items", "keys", "values", "append", "extend", "update", "setdefault", "format", "join", "startswith",
    "endswith", "lower", "upper", "strip", "split",
})
DECORATORS = frozenset({"triton.jit", "triton.autotune", "triton.heuristics"})
REFUSED_NAMES = frozenset({
    "__import__", "exec", "eval", "compile", "getattr", "setattr", "delattr", "hasattr", "globals", "locals", "vars",
    "open", "input", "breakpoint", "__builtins__", "builtins", "type", "memoryview", "exit", "quit", "help", "dir",
    "object", "super", "classmethod", "staticmethod", "property", "id", "__loader__", "__spec__", "__file__",
    "__name__", "__dict__", "bytearray",
})
REFUSED_NODES: dict[type, str] = {
    ast.ClassDef: "a class (answers are functions: a class can define __exit__, __del__ or operators)",
    ast.With: "a with statement (a context manager can swallow errors)",
    ast.AsyncWith: "async code", ast.AsyncFunctionDef: "async code", ast.AsyncFor: "async code",
    ast.Await: "async code",
    ast.Try: "try/except (a fallback)", ast.Global: "global state", ast.Nonlocal: "state kept between calls",
    ast.Yield: "a generator", ast.YieldFrom: "a generator",
}
if hasattr(ast, "TryStar"):
    REFUSED_NODES[ast.TryStar] = "try/except (a fallback)"


def _chain(node: ast.AST) -> list[str] | None:
    """``a.b.c`` -> ["a", "b", "c"] (None when the root is not a plain name)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def _jit_ranges(tree: ast.Module) -> list[tuple[int, int]]:
    ranges = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any(
                ".".join(_chain(d.func if isinstance(d, ast.Call) else d) or []) == "triton.jit"
                for d in node.decorator_list):
            ranges.append((node.lineno, node.end_lineno or node.lineno))
    return ranges


def _open_chain_ok(module: str, rest: list[str]) -> str:
    """Why an attribute chain under an open module leaves it ("" when it does not)."""
    try:
        obj: Any = importlib.import_module(module)
    except ImportError:
        return "" if len(rest) <= 1 else f"cannot check {module}.{'.'.join(rest)} here"
    for k, part in enumerate(rest):
        obj = getattr(obj, part, None)
        if obj is None:
            return ""
        if isinstance(obj, types.ModuleType) and not obj.__name__.startswith(OPEN_MODULES):
            return f"{module}.{'.'.join(rest[:k + 1])} is the module {obj.__name__}"
    return ""


class _Audit(ast.NodeVisitor):
    def __init__(self, jit: list[tuple[int, int]]) -> None:
        self.jit = jit
        self.aliases: dict[str, str] = {}  # local name -> module it names
        self.found: list[tuple[int, str]] = []

    def refuse(self, node: ast.AST, reason: str) -> None:
        self.found.append((getattr(node, "lineno", 0), reason))

    def in_jit(self, node: ast.AST) -> bool:
        line = getattr(node, "lineno", 0)
        return any(a <= line <= b for a, b in self.jit)

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            if a.name not in ALLOWED_MODULES:
                self.refuse(node, f"import of {a.name} ({ALLOWED})")
            self.aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level or module not in ALLOWED_MODULES:
            self.refuse(node, f"import from {'.' * node.level}{module} ({ALLOWED})")
            return
        for a in node.names:
            full = f"{module}.{a.name}"
            if a.name == "*":
                self.refuse(node, f"from {module} import *")
            elif full in ALLOWED_MODULES:
                self.aliases[a.asname or a.name] = full
            elif module not in OPEN_MODULES and full not in TORCH_ALLOWED | TRITON_ALLOWED:
                self.refuse(node, f"import of {full}")

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in REFUSED_NAMES:
            self.refuse(node, f"{node.id} (reaches other code or the interpreter)")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        chain = _chain(node)
        for attr in (chain or [node.attr])[1:] if chain else [node.attr]:
            if attr.startswith("__") and attr.endswith("__"):
                self.refuse(node, f"the attribute {attr}")
        if chain and chain[0] in self.aliases:
            self.check_module_chain(node, chain)
            return  # the chain is judged whole
        self.generic_visit(node)

    def check_module_chain(self, node: ast.AST, chain: list[str]) -> None:
        module = self.aliases[chain[0]]
        full = ".".join([module, *chain[1:]])
        if module.startswith(OPEN_MODULES) or module.startswith("triton.language"):
            why = _open_chain_ok(module, chain[1:])
            if why:
                self.refuse(node, why)
        elif module == "torch":
            if self.in_jit(node) or full not in TORCH_ALLOWED:
                self.refuse(node, f"{full} (the launcher may only allocate tensors and name dtypes and devices; "
                                  "the computation belongs in @triton.jit functions)")
        elif module == "triton":
            if full not in TRITON_ALLOWED and not full.startswith("triton.language."):
                self.refuse(node, f"{full} (of triton: jit, cdiv, next_power_of_2, Config, autotune, heuristics)")
            elif full.startswith("triton.language."):
                why = _open_chain_ok("triton.language", chain[2:])
                if why:
                    self.refuse(node, why)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and not self.in_jit(node):
            chain = _chain(func)
            if (chain is None or chain[0] not in self.aliases) and func.attr not in LAUNCHER_METHODS:
                self.refuse(node, f".{func.attr}() outside @triton.jit functions (the launcher may allocate, "
                                  "view, copy and read back; the computation belongs in @triton.jit functions)")
        self.generic_visit(node)

    def visit_arg(self, node: ast.arg) -> None:
        if node.annotation is not None:
            self.check_annotation(node.annotation)

    def check_annotation(self, node: ast.expr) -> None:
        """Annotations run when the function is defined: names and subscripts only."""
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call):
                self.refuse(sub, "a call in an annotation")
            elif isinstance(sub, ast.Attribute):
                self.visit_Attribute(sub)
            elif isinstance(sub, ast.Name) and sub.id in REFUSED_NAMES - {"object", "type"}:
                self.refuse(sub, f"{sub.id} (reaches other code or the interpreter)")

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if node.returns is not None:
            self.check_annotation(node.returns)
        for d in node.decorator_list:
            name = ".".join(_chain(d.func if isinstance(d, ast.Call) else d) or ["?"])
            module = self.aliases.get(name.split(".")[0], name.split(".")[0])
            if ".".join([module, *name.split(".")[1:]]) not in DECORATORS:
                self.refuse(d, f"the decorator {name} (only triton's)")
            self.visit(d)
        self.visit(node.args)
        for stmt in node.body:
            self.visit(stmt)

    def visit_Assign(self, node: ast.Assign) -> None:
        self.check_targets(node.targets)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.check_targets([node.target])
        self.generic_visit(node)

    def check_targets(self, targets: list[ast.expr]) -> None:
        for t in targets:
            for sub in ast.walk(t):
                chain = _chain(sub) if isinstance(sub, ast.Attribute) else None
                if chain and chain[0] in self.aliases:
                    self.refuse(sub, f"assignment to {'.'.join(chain)} (patching a module)")

    def generic_visit(self, node: ast.AST) -> None:
        why = REFUSED_NODES.get(type(node))
        if why:
            self.refuse(node, why)
        super().generic_visit(node)


def audit(text: str) -> list[tuple[int, str]]:
    """(line, reason) of everything the answer may not do; a file that does not parse is refused."""
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        return [(exc.lineno or 0, f"the file does not parse: {exc.msg}")]
    a = _Audit(_jit_ranges(tree))
    a.visit(tree)
    return sorted(set(a.found))
