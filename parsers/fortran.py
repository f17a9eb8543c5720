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
from parsers.fortran_effects import output_only
from parsers.fortran_expr import ExprLowerer
from parsers.fortran_scope import Defaults, Scope, UseAssoc, declare, predeclare_types, set_constant, type_spec
from parsers.fortran_shapes import access_extents, assumed_extent, infer_intents
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
from translate.simplify import simplify, simplify_body

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
        return _conservative_intents(_assemble(name, args, result_name, (), scope, ex, sl, f, hd), declared)
    body = jumps.routine_body(sl, exec_nodes)
    if result_name is not None and result_name != name:
        body = tuple(ir.substitute(s, {result_name: Var(name, scope.type_of(result_name))})  # type: ignore[misc]
                     for s in body)
    body = simplify_body(body)
    return _assemble(name, args, result_name, body, scope, ex, sl, f, hd)


def _assemble(name: str, args: list[str], result_name: str | None, body: tuple[ir.Stmt, ...], scope: Scope,
              ex: ExprLowerer, sl: StmtLowerer, f: SourceFile, hd: object) -> ir.Kernel:
    notes: list[str] = list(sl.notes)
    declared: dict[str, ir.Intent] = {}
    params: list[ir.Decl] = []
    extents: list[tuple[str, int]] = []  # (array, dimension) whose extent the caller passes
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
        if sym is not None and sym.dims is not None and sym.deferred:
            params.append(_deferred(a, dtype, sym.dims, extents))
        elif sym is not None and sym.dims is not None:
            shape: list[ir.Expr] = []
            lower = tuple(lo for lo, _ in sym.dims)
            for lo, hi in sym.dims:
                if hi is None:
                    ext = assumed_extent(a, ex.accesses, body, arg_set, lo)
                    if ext is None:
                        # a name no parameter has: validation asks for it, the generated code does
                        # not build, until the workflow gives the array's shape
                        notes.append(f"extent of assumed-size {a} unknown: give it in the workflow's shapes:")
                        ext = Var(f"{a}_extent", DType.I32)
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
            if sym.private:
                raise Unsupported(f"{name} uses {n}, a PRIVATE variable of {sym.binding.split(':')[1]}: validation"
                                  " cannot set it from outside the module")
            if sym.dims is not None and sym.deferred:
                params.append(ir.replace(_deferred(n, scope.type_of(n), sym.dims, extents), binding=sym.binding))
            elif not sym.binding.startswith("common:"):
                decl = ir.replace(_decl(n, scope, sym.dims), binding=sym.binding)
                params.append(ir.replace(decl, allocatable=True) if sym.allocatable else decl)
            continue
        if sym is not None and sym.deferred:
            raise Unsupported(f"allocatable local array {n} of {name} is not allocated in {name}")
        locals_.append(_decl(n, scope, sym.dims if sym is not None else None))
    for members in scope.commons.values():
        # a COMMON block is storage: every member, in block order, so a caller can lay it out
        if any(m in ex.used for m in members):
            for m in members:
                sym = scope.lookup(m)
                assert sym is not None and sym.binding is not None
                params.append(ir.replace(_decl(m, scope, sym.dims), binding=sym.binding))
    params = [_complex_array(p, scope, name) for p in params]
    locals_ = [_complex_array(d, scope, name) for d in locals_]
    params = _with_intents(body, params, declared)
    params += _extent_params(body, params, extents)
    params += _shape_globals(params, scope, name)
    shared = sorted(p.name for p in params if p.binding is not None and p.name in sl.host_globals)
    if shared:
        raise Unsupported(f"{name} uses {', '.join(shared)}, which CALL {sl.host_globals[shared[0]].upper()} changes"
                          " on the host: the call cannot stay outside the translation")
    _no_host_results(name, body)
    if body and not any(p.intent.writes for p in params) and result_name is None:
        raise Unsupported(f"{name} computes no result (it writes no argument, COMMON or module variable): only"
                          " its output statements act, so it stays host code")
    locals_.extend(sl.extra_locals.values())
    result: DType | None = None
    if result_name is not None:
        result = scope.type_of(result_name)
        locals_.append(ir.Scalar(name, result))
    path, line = f.origin(hd.item.span[0])  # type: ignore[attr-defined]
    return ir.Kernel(name, tuple(params), tuple(locals_), body, ir.Origin(path, line), result, tuple(notes))


ANY_EXTENT = 24  # validation's extent of an array the routine walks to its end, when the workflow gives none


def _no_host_results(name: str, body: tuple[ir.Stmt, ...]) -> None:
    """A value a host call returns (``CALL WTIME(t)``) must not feed the routine's computation:
    the translation does not make that call wherever it runs, so it could not compute the same."""
    calls = [n for s in body for n in ir.walk(s) if isinstance(n, ir.HostCall)]
    returned = {w: c for c in calls for w in c.writes}
    if not returned:
        return
    for s in body:
        for n in ir.walk(s):
            if isinstance(n, ir.HostCall):
                continue
            exprs: list[object] = [n.value, *(n.target.index if isinstance(n.target, ir.Load) else ())] \
                if isinstance(n, ir.Assign) else [n.cond] if isinstance(n, ir.If) else \
                [n.start, n.stop, n.step] if isinstance(n, ir.Loop) else []
            used = {v.name for e in exprs for v in ir.walk(e) if isinstance(v, Var)} & returned.keys()
            if used:
                v = sorted(used)[0]
                raise Unsupported(f"{name} uses {v}, which CALL {returned[v].routine.upper()} sets: the translation"
                                  " does not make that call where it runs, so it stays host code")


def _complex_array(d: ir.Decl, scope: Scope, routine: str) -> ir.Decl:
    """A COMPLEX array as the real array of its parts: a leading dimension of extent 2
    (parsers/fortran_complex.py). COMPLEX scalars are refused here (locals are split into
    two reals before), as are COMPLEX arrays whose extents the caller passes."""
    sym = scope.lookup(d.name)
    if sym is None or not sym.complex:
        return d
    if isinstance(d, ir.Scalar):
        raise Unsupported(f"COMPLEX scalar {d.name} of {routine} (an argument or global) cannot be lowered")
    if any(isinstance(v, Var) and v.name.startswith(f"{d.name}_size") for e in d.shape for v in ir.walk(e)):
        raise Unsupported(f"COMPLEX assumed-shape or allocatable array {d.name} of {routine} cannot be lowered")
    return ir.replace(d, shape=(Const(2, DType.I32), *d.shape), lower=(Const(0, DType.I32), *d.lower), complex=True)


def _deferred(n: str, dtype: DType, dims: list[tuple[ir.Expr, ir.Expr | None]],
              extents: list[tuple[str, int]]) -> ir.Array:
    """An assumed-shape or allocatable array: its extents are parameters the caller passes
    (``<array>_size<k>``, bound "extent:<array>:<k>")."""
    shape = []
    for k in range(1, len(dims) + 1):
        extents.append((n, k))
        shape.append(Var(f"{n}_size{k}", DType.I32))
    return ir.Array(n, dtype, tuple(shape), ir.Layout.LEFT, ir.Intent.IN, tuple(lo for lo, _ in dims))


def _extent_params(body: tuple[ir.Stmt, ...], params: list[ir.Decl], extents: list[tuple[str, int]]) -> list[ir.Decl]:
    """The extent parameters of assumed-shape and allocatable arrays, each with the extent its
    accesses need as the value validation gives it by default."""
    own = {f"{a}_size{k}" for a, k in extents}
    names = {p.name for p in params} | own
    out: list[ir.Decl] = []
    inferred: dict[str, list[ir.Expr | None]] = {}
    for array, k in extents:
        rank = max(kk for a, kk in extents if a == array)
        if array not in inferred:
            inferred[array] = access_extents(body, array, rank, names)
        name = f"{array}_size{k}"
        default = inferred[array][k - 1]
        if default is not None and name in {v.name for v in ir.walk(default) if isinstance(v, Var)}:
            # the accesses reach as far as the extent itself (a loop to SIZE(x, k)): any extent runs
            default = Const(ANY_EXTENT, DType.I32)
        out.append(ir.Scalar(name, DType.I32, ir.Intent.IN, f"extent:{array}:{k}", default))
    return out


def _shape_globals(params: list[ir.Decl], scope: Scope, name: str) -> list[ir.Decl]:
    """Module variables the shapes of global arrays are written in (``u(nx, nz)``, its extents from
    the ALLOCATE of the program) that the routine does not use itself: parameters too."""
    have = {p.name for p in params}
    out: list[ir.Decl] = []
    for p in list(params):
        if not isinstance(p, ir.Array):
            continue
        for e in (*p.shape, *p.lower):
            for n in sorted({v.name for v in ir.walk(e) if isinstance(v, Var)} - have):
                if n == f"{p.name}_extent" and scope.lookup(n) is None:
                    continue  # an assumed-size extent the workflow has to give
                sym = scope.lookup(n)
                if sym is None or sym.binding is None or sym.dims is not None:
                    raise Unsupported(f"the shape of {p.name} in {name} depends on '{n}', which {name} cannot see")
                out.append(ir.Scalar(n, scope.type_of(n), ir.Intent.IN, sym.binding))
                have.add(n)
    return out


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
