"""Fortran frontend: source files -> ``ir.Module`` (one per file) through fparser2.

Each SUBROUTINE/FUNCTION (also inside MODULEs) becomes one ``ir.Kernel``; a routine
using a construct the frontend cannot lower becomes an ``ir.Opaque`` with the
reason and file:line, and the rest of the file goes on. Malformed source raises
``ParseError`` naming the file and line.

IR conventions of this frontend:

* names are lower case; loops follow ir.py (0-based, source variable shifted);
* a FUNCTION's value is the local Scalar named like the function and
  ``Kernel.result`` its dtype (a ``RESULT(r)`` variable is renamed to it);
* COMMON and module variables a routine uses are extra params after the dummy
  arguments, with ``binding`` "common:/blk/" (blank COMMON: "common://") or
  "module:name";
* CHARACTER*1 flags are ``DType.CHAR`` scalars; ``LSAME(a, 'N')`` is
  ``Call("lsame")``; ``CALL XERBLA(...)`` is ``ErrorCall("xerbla", ...)``;
* small project routines called are inlined, their locals renamed ``<callee><k>_<name>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from fparser.common.readfortran import FortranStringReader
from fparser.common.sourceinfo import FortranFormat
from fparser.two import Fortran2003 as F
from fparser.two.parser import ParserFactory
from fparser.two.utils import FortranSyntaxError, walk

from parsers.base import ParseError, Preprocessed, Unsupported, needs_cpp, run_cpp
from parsers.fortran_expr import ExprLowerer
from parsers.fortran_scope import Scope, declare, type_spec
from parsers.fortran_shapes import assumed_extent, infer_intents
from parsers.fortran_stmts import StmtLowerer
from translate import ir
from translate.ir import Const, DType, Var
from translate.simplify import simplify, simplify_body

FIXED_SUFFIXES = (".f", ".for", ".f77", ".ftn")
FREE_SUFFIXES = (".f90", ".f95", ".f03", ".f08")


@dataclass
class _File:
    rel: str
    pp: Preprocessed
    lines: list[str]
    root: Path

    def rel_of(self, name: str) -> str:
        p = Path(name)
        try:
            return str(p.resolve().relative_to(self.root.resolve()))
        except (ValueError, OSError):
            return self.rel if p.name == Path(self.rel).name else name

    def origin(self, line: int) -> tuple[str, int]:
        name, orig = self.pp.origin(line)
        return self.rel_of(name), orig

    def where(self, line: int) -> str:
        name, orig = self.origin(line)
        return f"{name}:{orig}"


@dataclass
class _Routine:
    node: object
    file: _File
    module: Scope | None


@dataclass
class _Project:
    routines: dict[str, _Routine] = field(default_factory=dict)
    modules: dict[str, Scope] = field(default_factory=dict)
    done: dict[str, ir.Kernel | ir.Opaque] = field(default_factory=dict)
    active: set[str] = field(default_factory=set)

    def resolve(self, name: str) -> ir.Kernel | ir.Opaque | None:
        if name in self.done:
            return self.done[name]
        r = self.routines.get(name)
        if r is None:
            return None
        if name in self.active:
            return ir.Opaque(name, "", f"{name} is recursive", ir.Origin(r.file.rel, 0))
        self.active.add(name)
        try:
            result = _lower_routine(r, self)
        finally:
            self.active.discard(name)
        self.done[name] = result
        return result


def parse_files(paths: list[Path], root: Path, include: list[Path] | None = None,
                defines: dict[str, str] | None = None,
                errors: list[ParseError] | None = None) -> list[ir.Module]:
    """One ``ir.Module`` per file (``Module.path`` relative to ``root``). Calls between
    the files are resolved (and small callees inlined). A malformed file raises
    ``ParseError``; pass ``errors`` to collect those instead and go on."""
    parser = ParserFactory().create(std="f2008")
    project = _Project()
    parsed: list[tuple[_File, object]] = []
    for path in paths:
        try:
            f, tree = _read(Path(path), Path(root), parser, list(include or []), dict(defines or {}))
        except ParseError as err:
            if errors is None:
                raise
            errors.append(err)
            continue
        parsed.append((f, tree))
        _collect(tree, f, project)
    modules: list[ir.Module] = []
    for f, tree in parsed:
        kernels: list[ir.Kernel | ir.Opaque] = []
        for unit in _units(tree):
            name = _unit_name(unit)
            if isinstance(unit, F.Main_Program):
                kernels.append(_opaque(name, unit, f, f"PROGRAM {name} at {f.where(_first_line(unit))} is a main"
                                       " program, not a routine"))
                continue
            result = project.resolve(name)
            if result is not None:
                kernels.append(result)
        modules.append(ir.Module(tuple(kernels), "fortran", f.rel))
    return modules


def parse_source(text: str, path: str = "source.f90", fixed_form: bool | None = None,
                 include: list[Path] | None = None, defines: dict[str, str] | None = None) -> ir.Module:
    """Parse one source text (for tests); ``path`` names it in messages."""
    parser = ParserFactory().create(std="f2008")
    project = _Project()
    f, tree = _read(Path(path), Path("."), parser, list(include or []), dict(defines or {}), text=text,
                    fixed=fixed_form)
    f.rel = path
    _collect(tree, f, project)
    kernels = [k for u in _units(tree) if (k := project.resolve(_unit_name(u))) is not None]
    return ir.Module(tuple(kernels), "fortran", path)


# ------------------------------------------------------------------ reading


def _read(path: Path, root: Path, parser: object, include: list[Path], defines: dict[str, str],
          text: str | None = None, fixed: bool | None = None) -> tuple[_File, object]:
    try:
        rel = str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        rel = str(path)
    if text is None:
        try:
            text = path.read_text(errors="replace")
        except OSError as err:
            raise ParseError(rel, 0, f"cannot read: {err}") from err
    if fixed is None:
        fixed = path.suffix.lower() in FIXED_SUFFIXES
    if needs_cpp(path, text):
        try:
            pp = run_cpp(path.resolve() if path.exists() else path, text, include, defines)
        except ParseError as err:
            raise ParseError(rel, err.line, err.message) from err
    else:
        pp = Preprocessed(text, tuple((str(path), i + 1) for i in range(text.count("\n") + 1)))
    f = _File(rel, pp, pp.text.splitlines(), root)
    reader = FortranStringReader(pp.text, ignore_comments=False)
    reader.set_format(FortranFormat(not fixed, False))
    try:
        tree = parser(reader)  # type: ignore[operator]
    except FortranSyntaxError as err:
        m = re.search(r"at line (\d+)", str(err))
        line = int(m.group(1)) if m else 0
        name, orig = f.origin(line) if line else (rel, 0)
        detail = str(err).split("\n", 1)[-1].strip().lstrip(">").strip()
        raise ParseError(name, orig, f"Fortran syntax error: {detail}") from err
    except Exception as err:  # fparser raises assorted internal errors on bad input
        raise ParseError(rel, 0, f"fparser could not parse the file: {err}") from err
    if tree is None:
        raise ParseError(rel, 0, "empty or unparsable file")
    return f, tree


def _units(tree: object) -> list[object]:
    out: list[object] = []
    for unit in getattr(tree, "children", []):
        if isinstance(unit, (F.Subroutine_Subprogram, F.Function_Subprogram, F.Main_Program)):
            out.append(unit)
        elif isinstance(unit, F.Module):
            for part in unit.children:
                if isinstance(part, F.Module_Subprogram_Part):
                    out.extend(c for c in part.children
                               if isinstance(c, (F.Subroutine_Subprogram, F.Function_Subprogram)))
    return out


def _head(unit: object) -> object:
    return next(c for c in unit.children if not isinstance(c, F.Comment))  # type: ignore[attr-defined]


def _unit_name(unit: object) -> str:
    head = _head(unit)
    names = [c for c in head.items if isinstance(c, F.Name)]
    return str(names[0]).lower() if names else "main"


def _first_line(unit: object) -> int:
    return _head(unit).item.span[0]  # type: ignore[attr-defined]


def _collect(tree: object, f: _File, project: _Project) -> None:
    for unit in getattr(tree, "children", []):
        if isinstance(unit, F.Module):
            scope = _module_scope(unit, f, project)
            project.modules[scope.module_name or ""] = scope
            for u in _units(_Wrap([unit])):
                project.routines[_unit_name(u)] = _Routine(u, f, scope)
        elif isinstance(unit, (F.Subroutine_Subprogram, F.Function_Subprogram)):
            project.routines[_unit_name(unit)] = _Routine(unit, f, None)


@dataclass
class _Wrap:
    children: list[object]


def _module_scope(unit: object, f: _File, project: _Project) -> Scope:
    name = _unit_name(unit)
    scope = Scope(f.rel, module_name=name)
    ex = ExprLowerer(scope, f.where)
    for part in unit.children:  # type: ignore[attr-defined]
        if isinstance(part, F.Specification_Part):
            for stmt in part.children:
                if isinstance(stmt, F.Use_Stmt):
                    _use(stmt, scope, project)
                    continue
                try:
                    declare(stmt, scope, ex, module=True)
                except Unsupported:
                    continue  # a routine that uses it will report
    for sym in scope.syms.values():
        if sym.const is None and sym.binding is None and not sym.external:
            sym.binding = f"module:{name}"
    return scope


def _use(stmt: object, scope: Scope, project: _Project) -> None:
    mod = next((str(n).lower() for n in walk(stmt, F.Name)), "")
    if mod in project.modules:
        scope.used.append(project.modules[mod])
    elif mod not in ("iso_fortran_env", "iso_c_binding"):
        raise Unsupported(f"USE of unknown module {mod}")


# ----------------------------------------------------------------- lowering


def _opaque(name: str, unit: object, f: _File, reason: str, signature: ir.Kernel | None) -> ir.Opaque:
    children = unit.children  # type: ignore[attr-defined]
    first = _first_line(unit)
    last = children[-1].item.span[1] if getattr(children[-1], "item", None) else first
    src = "\n".join(f.lines[first - 1:last])
    path, line = f.origin(first)
    return ir.Opaque(name, src, reason, ir.Origin(path, line), signature)


def _lower_routine(r: _Routine, project: _Project) -> ir.Kernel | ir.Opaque:
    unit, f = r.node, r.file
    name = _unit_name(unit)
    try:
        return _lower(unit, name, r, project)
    except Unsupported as err:
        try:
            signature: ir.Kernel | None = _lower(unit, name, r, project, signature_only=True)
        except Unsupported:
            signature = None
        return _opaque(name, unit, f, err.reason, signature)


def _conservative_intents(kernel: ir.Kernel, declared: set[str]) -> ir.Kernel:
    """A signature without a body: arrays without a declared intent may be written (inout)."""
    params = tuple(ir.replace(p, intent=ir.Intent.INOUT) if isinstance(p, ir.Array) and p.name not in declared
                   else p for p in kernel.params)
    return ir.replace(kernel, params=params)


def _lower(unit: object, name: str, r: _Routine, project: _Project, signature_only: bool = False) -> ir.Kernel:
    """The routine as a Kernel; ``signature_only``: its parameters, locals and result with an empty
    body (what an Opaque region's hand- or agent-written translation must implement)."""
    f = r.file
    head = _head(unit)
    scope = Scope(f.rel, parent=r.module)
    ex = ExprLowerer(scope, f.where, line=head.item.span[0])
    args = [str(a).lower() for a in walk(head, F.Dummy_Arg_List) for a in a.items]
    result_name: str | None = None
    result_type: tuple[DType, int | None] | None = None
    if isinstance(head, F.Function_Stmt):
        prefix, _, _, suffix = head.items
        result_name = name
        if suffix is not None:
            result_name = next((str(n).lower() for n in walk(suffix, F.Name)), name)
        if prefix is not None:
            for p in walk(prefix):
                if isinstance(p, F.Intrinsic_Type_Spec):
                    result_type = type_spec(p, ex)
    sl = StmtLowerer(ex, f.lines, lambda line: f.origin(line)[1], project.resolve)
    exec_nodes: list[object] = []
    for part in unit.children[1:]:  # type: ignore[attr-defined]
        if isinstance(part, F.Specification_Part):
            for stmt in part.children:
                ex.line = getattr(getattr(stmt, "item", None), "span", (ex.line,))[0]
                if isinstance(stmt, F.Use_Stmt):
                    _use(stmt, scope, project)
                else:
                    declare(stmt, scope, ex)
        elif isinstance(part, F.Execution_Part):
            exec_nodes = list(part.children)
        elif isinstance(part, F.Internal_Subprogram_Part):
            raise Unsupported(f"internal procedures (CONTAINS) in {name} at {f.where(ex.line)} cannot be lowered")
    for a in args:
        scope.get(a).is_arg = True
    if result_name is not None:
        sym = scope.get(result_name)
        if result_type is not None:
            sym.dtype = result_type[0]
    if signature_only:
        declared = {a for a in args if (sym := scope.lookup(a)) is not None and sym.intent is not None}
        return _conservative_intents(_assemble(name, args, result_name, (), scope, ex, sl, f, head), declared)
    body = sl.block(exec_nodes)
    if result_name is not None and result_name != name:
        body = tuple(ir.substitute(s, {result_name: Var(name, scope.type_of(result_name))})  # type: ignore[misc]
                     for s in body)
    body = simplify_body(body)
    return _assemble(name, args, result_name, body, scope, ex, sl, f, head)


def _assemble(name: str, args: list[str], result_name: str | None, body: tuple[ir.Stmt, ...], scope: Scope,
              ex: ExprLowerer, sl: StmtLowerer, f: _File, head: object) -> ir.Kernel:
    notes: list[str] = []
    declared: dict[str, ir.Intent] = {}
    params: list[ir.Decl] = []
    arg_set = set(args)
    for a in args:
        sym = scope.lookup(a)
        if sym is not None and sym.external:
            raise Unsupported(f"procedure argument {a} of {name} cannot be lowered")
        dtype = scope.type_of(a)
        if dtype == DType.CHAR and sym is not None and sym.char_len != 1:
            raise Unsupported(f"character string argument {a} of {name} at {f.where(ex.line)} cannot be lowered")
        if sym is not None and sym.intent is not None:
            declared[a] = sym.intent
        if sym is not None and sym.dims is not None:
            shape: list[ir.Expr] = []
            lower = tuple(lo for lo, _ in sym.dims)
            for lo, hi in sym.dims:
                if hi is None:
                    ext = assumed_extent(a, ex.accesses, body, arg_set, lo)
                    if ext is None:
                        notes.append(f"extent of assumed-size {a} unknown: give it in the workflow's shapes:")
                        ext = Const(0, DType.I32)
                    shape.append(ext)
                else:
                    shape.append(simplify(ir.BinOp("add", ir.BinOp("sub", hi, lo, DType.I32),
                                                    Const(1, DType.I32), DType.I32)))
            params.append(ir.Array(a, dtype, tuple(shape), ir.Layout.LEFT, ir.Intent.IN, lower))
        else:
            params.append(ir.Scalar(a, dtype))
    locals_: list[ir.Decl] = []
    for n in sorted(ex.used - arg_set):
        sym = scope.lookup(n)
        if sym is not None and sym.const is not None:
            continue
        if n == result_name or n == name:
            continue
        if sym is not None and sym.binding is not None:
            if not sym.binding.startswith("common:"):
                params.append(ir.replace(_decl(n, scope, sym.dims), binding=sym.binding))
            continue
        locals_.append(_decl(n, scope, sym.dims if sym is not None else None))
    for members in scope.commons.values():
        # a COMMON block is storage: every member, in block order, so a caller can lay it out
        if any(m in ex.used for m in members):
            for m in members:
                sym = scope.lookup(m)
                assert sym is not None and sym.binding is not None
                params.append(ir.replace(_decl(m, scope, sym.dims), binding=sym.binding))
    params = _with_intents(body, params, declared)
    locals_.extend(sl.extra_locals.values())
    result: DType | None = None
    if result_name is not None:
        result = scope.type_of(result_name)
        locals_.append(ir.Scalar(name, result))
    path, line = f.origin(head.item.span[0])  # type: ignore[attr-defined]
    return ir.Kernel(name, tuple(params), tuple(locals_), body, ir.Origin(path, line), result, tuple(notes))


def _decl(n: str, scope: Scope, dims: list[tuple[ir.Expr, ir.Expr | None]] | None) -> ir.Decl:
    dtype = scope.type_of(n)
    if dims is None:
        return ir.Scalar(n, dtype)
    if any(hi is None for _, hi in dims):
        raise Unsupported(f"assumed-size array {n} that is not an argument")
    shape = tuple(simplify(ir.BinOp("add", ir.BinOp("sub", hi, lo, DType.I32), Const(1, DType.I32), DType.I32))
                  for lo, hi in dims if hi is not None)
    return ir.Array(n, dtype, shape, ir.Layout.LEFT, ir.Intent.IN, tuple(lo for lo, _ in dims))


def _with_intents(body: tuple[ir.Stmt, ...], params: list[ir.Decl], declared: dict[str, ir.Intent]) -> list[ir.Decl]:
    inferred = infer_intents(body, params)
    return [ir.replace(p, intent=declared[p.name]) if p.name in declared else p for p in inferred]
