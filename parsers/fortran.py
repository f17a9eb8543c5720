"""Fortran frontend: source files -> ``ir.Module`` (one per file) through fparser2.

Each SUBROUTINE/FUNCTION (also inside MODULEs and main PROGRAMs) becomes one
``ir.Kernel``; a routine using a construct the frontend cannot lower becomes an
``ir.Opaque`` with the reason and file:line, and the rest goes on. Modules are
resolved across files in the order of their USEs (cycles reported); a module that
is not in the sources only costs the routines that need a name from it. A main
program is host code: an Opaque that names its contained procedures. Malformed
source raises ``ParseError`` naming the file and line.

IR conventions of this frontend:

* names are lower case; loops follow ir.py (0-based, source variable shifted);
* a FUNCTION's value is the local Scalar named like the function and
  ``Kernel.result`` its dtype (a ``RESULT(r)`` variable is renamed to it);
* COMMON and module variables a routine uses are extra params after the dummy
  arguments, with ``binding`` "common:/blk/" (blank COMMON: "common://"),
  "module:name" or, for the variables of the main program a procedure is contained
  in, "program:name";
* CHARACTER*1 flags are ``DType.CHAR`` scalars; ``LSAME(a, 'N')`` is
  ``Call("lsame")``; ``CALL XERBLA(...)`` is ``ErrorCall("xerbla", ...)``;
* small project routines called are inlined, their locals renamed ``<callee><k>_<name>``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from fparser.two import Fortran2003 as F
from fparser.two.utils import walk

from parsers import fortran_jumps as jumps
from parsers.base import ParseError, Unsupported
from parsers.fortran_assemble import assemble
from parsers.fortran_effects import output_only
from parsers.fortran_expr import ExprLowerer
from parsers.fortran_scope import Defaults, Scope, UseAssoc, declare, predeclare_types, set_constant, type_spec
from parsers.fortran_stmts import StmtLowerer
from parsers.fortran_units import (
    FIXED_SUFFIXES,
    FREE_SUFFIXES,
    INTRINSIC_MODULES,
    SourceFile,
    contained,
    first_line,
    head,
    last_line,
    make_parser,
    read,
    spec_part,
    top_units,
    unit_name,
    used_modules,
)
from translate import ir
from translate.ir import Const, DType, Var
from translate.simplify import simplify_body

__all__ = ["FIXED_SUFFIXES", "FREE_SUFFIXES", "parse_files", "parse_source"]


@dataclass
class _Routine:
    node: object
    file: SourceFile
    host: Scope | None  # the module or main program it is contained in


@dataclass
class _Project:
    """Every unit of the workflow's files: module scopes (built in USE order), routines by
    name, and the routines lowered so far (a call lowers its callee first, to inline it)."""

    defaults: Defaults = field(default_factory=Defaults)
    routines: dict[str, _Routine] = field(default_factory=dict)
    modules: dict[str, Scope] = field(default_factory=dict)
    broken_modules: dict[str, str] = field(default_factory=dict)  # module -> why it has no scope
    done: dict[str, ir.Kernel | ir.Opaque] = field(default_factory=dict)
    active: set[str] = field(default_factory=set)
    effects: dict[str, bool] = field(default_factory=dict)  # routine -> output only

    def module_of(self, name: str) -> str:
        """Where a routine lives: its module, "program:NAME" inside a main program, "" otherwise."""
        r = self.routines.get(name)
        if r is None or r.host is None:
            return ""
        return r.host.module_name or ""

    def output_only(self, name: str) -> bool:
        """Whether the routine's only effect is output (parsers/fortran_effects.py)."""
        if name not in self.effects:
            r = self.routines.get(name)
            self.effects[name] = False  # while it is being decided (recursion)
            if r is not None:
                self.effects[name] = output_only(r.node, _declarations(r, self), self.resolve, self.output_only)
        return self.effects[name]

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
                errors: list[ParseError] | None = None, flags: tuple[str, ...] = ()) -> list[ir.Module]:
    """One ``ir.Module`` per file (``Module.path`` relative to ``root``). Modules are
    resolved across the files in any order; calls between the files are resolved (and
    small callees inlined). A malformed file raises ``ParseError``; pass ``errors`` to
    collect those instead and go on. ``flags``: the compiler flags the project is built
    with (``-fdefault-real-8`` and the like change the default types)."""
    parser = make_parser()
    parsed: list[tuple[SourceFile, object]] = []
    for path in paths:
        try:
            parsed.append(read(Path(path), Path(root), parser, list(include or []), dict(defines or {})))
        except ParseError as err:
            if errors is None:
                raise
            errors.append(err)
    project = _collect(parsed, Defaults.from_flags(flags))
    return [ir.Module(tuple(_lowered(tree, f, project)), "fortran", f.rel) for f, tree in parsed]


def parse_source(text: str, path: str = "source.f90", fixed_form: bool | None = None,
                 include: list[Path] | None = None, defines: dict[str, str] | None = None) -> ir.Module:
    """Parse one source text (for tests); ``path`` names it in messages."""
    f, tree = read(Path(path), Path("."), make_parser(), list(include or []), dict(defines or {}), text=text,
                   fixed=fixed_form)
    f.rel = path
    project = _collect([(f, tree)])
    return ir.Module(tuple(_lowered(tree, f, project)), "fortran", path)


def _lowered(tree: object, f: SourceFile, project: _Project) -> list[ir.Kernel | ir.Opaque]:
    """The file's routines in source order; a main program is host code, kept as an Opaque
    that names its contained procedures (they are routines of their own). A unit that did not
    parse is an Opaque with the syntax error."""
    placed: list[tuple[int, list[ir.Kernel | ir.Opaque]]] = []
    for bad in f.bad:
        path, line = f.origin(bad.first)
        placed.append((bad.first, [ir.Opaque(bad.name, "\n".join(f.lines[bad.first - 1:bad.last]),
                                             f"{bad.kind.upper()} {bad.name} does not parse: {bad.reason}",
                                             ir.Origin(path, line))]))
    for unit in top_units(tree):
        out: list[ir.Kernel | ir.Opaque] = []
        if isinstance(unit, F.Module):
            out += [k for p in contained(unit) if (k := project.resolve(unit_name(p))) is not None]
        elif isinstance(unit, F.Main_Program):
            name = unit_name(unit)
            inner = [unit_name(p) for p in contained(unit)]
            note = f"; its contained procedures ({', '.join(inner)}) are routines of their own" if inner else ""
            out.append(_opaque(name, unit, f, f"PROGRAM {name} at {f.where(first_line(unit))} is a main program:"
                               f" it stays host code{note}", None))
            out += [k for n in inner if (k := project.resolve(n)) is not None]
        elif (k := project.resolve(unit_name(unit))) is not None:
            out.append(k)
        placed.append((first_line(unit), out))
    return [k for _, ks in sorted(placed, key=lambda p: p[0]) for k in ks]


# ------------------------------------------------------------- the project


def _collect(parsed: list[tuple[SourceFile, object]], defaults: Defaults | None = None) -> _Project:
    """Module scopes in the order of their USEs (whatever the file order), then every routine."""
    project = _Project(defaults or Defaults())
    for f, _ in parsed:
        for bad in f.bad:
            if bad.kind == "module":
                project.broken_modules.setdefault(bad.name, f"module {bad.name} does not parse: {bad.reason}")
    defs: dict[str, tuple[object, SourceFile]] = {}
    for f, tree in parsed:
        for unit in top_units(tree):
            if isinstance(unit, F.Module):
                defs.setdefault(unit_name(unit), (unit, f))
    state: dict[str, str] = {}  # module -> "visiting" | "done"

    def build(name: str, chain: tuple[str, ...]) -> None:
        if state.get(name) == "done":
            return
        if state.get(name) == "visiting":
            cycle = " -> ".join([*chain[chain.index(name):], name])
            for m in chain[chain.index(name):]:
                project.broken_modules.setdefault(m, f"modules USE each other in a cycle: {cycle}")
            return
        state[name] = "visiting"
        unit, f = defs[name]
        for dep in used_modules(spec_part(unit)):
            if dep in defs:
                build(dep, (*chain, name))
        state[name] = "done"
        if name not in project.broken_modules:
            project.modules[name] = _host_scope(unit, f, project, f"module:{name}", module_name=name)

    for name in defs:
        build(name, ())
    hosts = list(project.modules.values())
    for f, tree in parsed:
        for unit in top_units(tree):
            if isinstance(unit, F.Module):
                host = project.modules.get(unit_name(unit))
                for p in contained(unit):
                    _add_routine(project, p, f, host)
            elif isinstance(unit, F.Main_Program):
                name = unit_name(unit)
                scope = _host_scope(unit, f, project, f"program:{name}", module_name=f"program:{name}")
                hosts.append(scope)
                for p in contained(unit):
                    _add_routine(project, p, f, scope)
            else:
                _add_routine(project, unit, f, None)
    _allocated_shapes(project, hosts)
    _never_assigned(parsed, hosts)
    return project


def _never_assigned(parsed: list[tuple[SourceFile, object]], hosts: list[Scope]) -> None:
    """Initialised PRIVATE module variables that nothing in the sources assigns, passes to a routine
    or reads into are constants (``INTEGER, PRIVATE :: CONDUCTIVITY = 1``): only their module can
    change them. (A public one may be set by code outside the workflow's sources.)"""
    changed: set[str] = set()
    for _, tree in parsed:
        for node in walk(tree, (F.Assignment_Stmt, F.Actual_Arg_Spec_List, F.Loop_Control, F.Read_Stmt)):
            if isinstance(node, F.Assignment_Stmt):
                target = node.items[0]
                changed.add(str(target.items[0] if isinstance(target, F.Part_Ref) else target).lower())
            elif isinstance(node, F.Actual_Arg_Spec_List):
                changed.update(str(a).lower() for a in node.items if isinstance(a, F.Name))
            else:
                changed.update(str(n).lower() for n in walk(node, F.Name))
    for scope in hosts:
        ex = ExprLowerer(scope, lambda line, path=scope.path: f"{path}:{line}")
        for sym in scope.syms.values():
            if sym.init is not None and sym.private and sym.name not in changed:
                try:
                    set_constant(sym, sym.init, scope, ex)
                    sym.binding = None
                except Unsupported:
                    continue


def _allocated_shapes(project: _Project, hosts: list[Scope]) -> None:
    """Allocatable module (and main program) arrays take the bounds of the one ALLOCATE of
    them in the sources, where those are written in constants and variables of their module:
    ``allocate(state(1-hs:nx+hs, nz))``. Others keep extents the caller passes."""
    found: dict[str, list[tuple[object, _Routine]]] = {}
    for r in project.routines.values():
        for alloc in walk(r.node, F.Allocation):
            found.setdefault(str(alloc.items[0]).lower(), []).append((alloc, r))
    scopes: dict[int, Scope] = {}
    for scope in hosts:
        for sym in scope.syms.values():
            if not (sym.deferred and sym.dims is not None and sym.binding is not None):
                continue
            specs = found.get(sym.name, [])
            if len({str(a.items[1]) for a, _ in specs}) != 1:
                continue
            alloc, r = specs[0]
            bounds = getattr(alloc.items[1], "items", ())
            if len(bounds) != len(sym.dims):
                continue
            if id(r) not in scopes:
                scopes[id(r)] = _declarations(r, project)
            ex = ExprLowerer(scopes[id(r)], r.file.where)
            try:
                dims = [(ex.spec_expr(lo) if lo is not None else Const(1, DType.I32), ex.spec_expr(hi))
                        for lo, hi in (b.items for b in bounds)]
            except Unsupported:
                continue
            if any(isinstance(v, Var) and (s := scope.lookup(v.name)) is not None and s.binding is None
                   for d in dims for e in d for v in ir.walk(e)):
                continue  # written in the allocating routine's own variables
            sym.dims, sym.deferred = dims, False  # type: ignore[assignment]


def _declarations(r: _Routine, project: _Project) -> Scope:
    """The scope of a routine's specification part alone (what its ALLOCATE bounds may name);
    declarations that cannot be lowered are skipped."""
    scope = Scope(r.file.rel, parent=r.host, defaults=project.defaults)
    ex = ExprLowerer(scope, r.file.where)
    part = spec_part(r.node)
    stmts = list(part.children) if part is not None else []  # type: ignore[attr-defined]
    for stmt in stmts:
        try:
            if isinstance(stmt, F.Use_Stmt):
                _use(stmt, scope, project)
        except Unsupported:
            continue
    predeclare_types(stmts, scope, ex)
    for stmt in stmts:
        try:
            if not isinstance(stmt, F.Use_Stmt):
                declare(stmt, scope, ex)
        except Unsupported:
            continue
    return scope


def _add_routine(project: _Project, unit: object, f: SourceFile, host: Scope | None) -> None:
    project.routines.setdefault(unit_name(unit), _Routine(unit, f, host))


def _host_scope(unit: object, f: SourceFile, project: _Project, binding: str,
                module_name: str | None = None) -> Scope:
    """The scope of a module's or main program's specification part: its variables are
    the globals of the procedures it contains (``binding`` says where they live). A
    declaration that cannot be lowered is remembered: only a routine using it fails."""
    scope = Scope(f.rel, module_name=module_name, defaults=project.defaults)
    ex = ExprLowerer(scope, f.where)
    part = spec_part(unit)
    for stmt in (part.children if part is not None else ()):  # type: ignore[attr-defined]
        ex.line = getattr(getattr(stmt, "item", None), "span", (ex.line,))[0]
        try:
            if isinstance(stmt, F.Use_Stmt):
                _use(stmt, scope, project)
            else:
                declare(stmt, scope, ex, module=True)
        except Unsupported as err:
            for n in _declared_names(stmt):
                scope.broken.setdefault(n, err.reason)
    for sym in scope.syms.values():
        if sym.const is None and sym.binding is None and not sym.external:
            sym.binding = binding
    return scope


def _declared_names(stmt: object) -> list[str]:
    """The names a specification statement declares (for remembering a failed one)."""
    if isinstance(stmt, F.Type_Declaration_Stmt):
        return [str(e.items[0]).lower() for e in stmt.items[2].items]
    if isinstance(stmt, F.Derived_Type_Def):
        return [str(n).lower() for n in walk(stmt.children[0], F.Type_Name)]
    return [str(n).lower() for n in walk(stmt, F.Name)][:1] if isinstance(stmt, (F.Dimension_Stmt,)) else []


def _use(stmt: object, scope: Scope, project: _Project) -> None:
    """A USE statement: the module's scope with its ONLY list and renames; a module that is
    not in the sources is remembered (names from it are then never typed implicitly)."""
    mod = str(stmt.items[2]).lower()  # type: ignore[attr-defined]
    if mod in project.broken_modules:
        raise Unsupported(f"USE {mod}: {project.broken_modules[mod]}")
    if mod not in project.modules:
        if mod not in INTRINSIC_MODULES and mod not in scope.unknown_uses:
            scope.unknown_uses.append(mod)
        return
    only: dict[str, str] | None = None
    renames: dict[str, str] = {}
    items = stmt.items[4]  # type: ignore[attr-defined]
    has_only = "ONLY" in str(stmt.items[3] or "").upper()  # type: ignore[attr-defined]
    for item in (getattr(items, "items", ()) if items is not None else ()):
        if isinstance(item, F.Rename):
            local, remote = str(item.items[1]).lower(), str(item.items[2]).lower()
        else:
            local = remote = str(item).lower()
        if has_only:
            only = only or {}
            only[local] = remote
        else:
            renames[local] = remote
    if has_only and only is None:
        only = {}
    scope.used.append(UseAssoc(project.modules[mod], only, renames))


# ----------------------------------------------------------------- lowering


def _opaque(name: str, unit: object, f: SourceFile, reason: str, signature: ir.Kernel | None) -> ir.Opaque:
    first = first_line(unit)
    src = "\n".join(f.lines[first - 1:last_line(unit)])
    path, line = f.origin(first)
    return ir.Opaque(name, src, reason, ir.Origin(path, line), signature)


def _lower_routine(r: _Routine, project: _Project) -> ir.Kernel | ir.Opaque:
    unit, f = r.node, r.file
    name = unit_name(unit)
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
    hd = head(unit)
    scope = Scope(f.rel, parent=r.host, defaults=project.defaults)
    ex = ExprLowerer(scope, f.where, line=hd.item.span[0])
    args = [str(a).lower() for a in walk(hd, F.Dummy_Arg_List) for a in a.items]
    result_name: str | None = None
    result_type: tuple[DType, int | None] | None = None
    if isinstance(hd, F.Function_Stmt):
        prefix, _, _, suffix = hd.items
        result_name = name
        if suffix is not None:
            result_name = next((str(n).lower() for n in walk(suffix, F.Name)), name)
        if prefix is not None:
            for p in walk(prefix):
                if isinstance(p, F.Intrinsic_Type_Spec):
                    result_type = type_spec(p, ex)
    sl = StmtLowerer(ex, f.lines, lambda line: f.origin(line)[1], project.resolve, project.module_of,
                     project.output_only)
    exec_nodes: list[object] = []
    for part in unit.children[1:]:  # type: ignore[attr-defined]
        if isinstance(part, F.Specification_Part):
            for stmt in part.children:
                if isinstance(stmt, F.Use_Stmt):
                    _use(stmt, scope, project)
            predeclare_types(list(part.children), scope, ex)
            for stmt in part.children:
                ex.line = getattr(getattr(stmt, "item", None), "span", (ex.line,))[0]
                if not isinstance(stmt, F.Use_Stmt):
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
        return _conservative_intents(assemble(name, args, result_name, (), scope, ex, sl, f, hd), declared)
    body = jumps.routine_body(sl, exec_nodes)
    if result_name is not None and result_name != name:
        body = tuple(ir.substitute(s, {result_name: Var(name, scope.type_of(result_name))})  # type: ignore[misc]
                     for s in body)
    body = simplify_body(body)
    return assemble(name, args, result_name, body, scope, ex, sl, f, hd)
