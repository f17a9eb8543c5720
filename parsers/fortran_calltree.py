"""What the data regions of a migrated program need to know of its routines: the names each
one mentions, the routines it calls and with what arguments, its dummy arguments, and which
names it declares as arrays, in COMMON or SAVE (a local array of a routine lives only while
the routine runs, so it must never stay in a region's present table after it returns).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property

from fparser.two import Fortran2003 as F
from fparser.two.utils import walk

from parsers.fortran_units import PROCEDURES, contained, head, spec_part, unit_name

CALLS = (F.Call_Stmt, F.Part_Ref, F.Function_Reference)


@dataclass(frozen=True)
class Routine:
    """One routine (or main program) of the program: ``node`` is its parse tree as read first;
    ``arrays``: the names its specification part declares, each with whether it is an array."""

    name: str
    kind: str  # program | subroutine | function
    node: object
    names: frozenset[str]
    calls: frozenset[str]
    dummies: tuple[str, ...] = ()
    arrays: Mapping[str, bool] = field(default_factory=dict)
    common: frozenset[str] = frozenset()
    saved: frozenset[str] | None = None  # None: everything (a bare SAVE)
    stops: bool = False
    host: str | None = None  # the routine or program it is contained in
    used: frozenset[str] = frozenset()  # the names its statements mention (not its declarations)
    assumed: frozenset[str] = frozenset()  # its assumed-size arrays (``a(*)``, ``a(n, *)``): no size known
    uses: tuple[tuple[str, frozenset[str] | None], ...] = ()  # the modules it USEs, with their ONLY lists
    module: str | None = None  # the module it is a procedure of

    @property
    def outside(self) -> frozenset[str]:
        """The names it mentions that are not its own: module, COMMON and host variables."""
        own = {n for n in self.arrays if n not in self.common} | set(self.dummies)
        return frozenset(self.names - own)

    def ignores(self, position: int) -> bool:
        """Whether the routine never touches its dummy argument at ``position``."""
        return position < len(self.dummies) and self.dummies[position] not in self.used

    def local(self, name: str) -> bool:
        """Whether ``name`` is a local variable that lives only while the routine runs."""
        return (self.kind != "program" and name in self.arrays and name not in self.dummies
                and name not in self.common and self.saved is not None and name not in self.saved)


@dataclass(frozen=True)
class ProcedureFacts:
    """Every routine of the program by its (lower-case) name, and the arrays and scalars the
    modules declare."""

    routines: Mapping[str, Routine]
    module_arrays: Mapping[str, bool]
    module_names: Mapping[str, frozenset[str]] = field(default_factory=dict)  # each module's names, its USEs' too

    def _chain(self, routine: str) -> Iterator[Routine]:
        """``routine`` and the routines or program it is contained in, innermost first."""
        r = self.routines.get(routine)
        while r is not None:
            yield r
            r = self.routines.get(r.host) if r.host else None

    def visible(self, routine: str, name: str) -> bool:
        """Whether ``name`` can be named in ``routine``: its own, its host's, or a module's it USEs."""
        for r in self._chain(routine):
            if name in r.arrays or name in r.common or name in self.module_names.get(r.module or "", ()):
                return True
            if any((only is None or name in only) and name in self.module_names.get(m, ()) for m, only in r.uses):
                return True
        return False

    @cached_property
    def _reached(self) -> dict[str, tuple[frozenset[str], frozenset[str]]]:
        return {}  # filled by reach: each routine's call tree is walked once

    def reach(self, routine: str) -> tuple[frozenset[str], frozenset[str]]:
        """Every name not their own that ``routine`` and its callees mention, and every routine they call."""
        if routine not in self._reached:
            names: set[str] = set()
            seen: set[str] = set()
            todo = [routine]
            while todo:
                r = todo.pop()
                if r in seen or r not in self.routines:
                    continue
                seen.add(r)
                names |= self.routines[r].outside
                todo += self.routines[r].calls
            self._reached[routine] = (frozenset(names), frozenset(seen))
        return self._reached[routine]

    def recursive(self, routine: str) -> bool:
        return any(routine in self.reach(c)[1] for c in self.routines[routine].calls if c in self.routines)

    def is_array(self, routine: str, name: str) -> bool | None:
        """Whether ``name`` is an array where ``routine`` uses it (its own declarations, its
        host's, then the modules'); None where nothing declares it."""
        for r in self._chain(routine):
            if name in r.arrays:
                return r.arrays[name]
        return self.module_arrays.get(name)


def procedure_facts(units: Iterable[object]) -> ProcedureFacts:
    routines: dict[str, Routine] = {}
    modules: dict[str, bool] = {}
    declared: dict[str, set[str]] = {}
    used: dict[str, list[str]] = {}
    for unit in units:
        if isinstance(unit, F.Module):
            names = _declarations(spec_part(unit))[0]
            for name, array in names.items():
                modules[name] = modules.get(name, False) or array
            declared[unit_name(unit)] = set(names) | {unit_name(c) for c in contained(unit)}
            used[unit_name(unit)] = [m for m, _ in _uses(spec_part(unit))]
        _routines(unit, None, routines)
    return ProcedureFacts(routines, modules, {m: frozenset(_scope(m, declared, used, set())) for m in declared})


def _scope(module: str, declared: Mapping[str, set[str]], used: Mapping[str, list[str]], seen: set[str]) -> set[str]:
    """The names a module makes visible: its own and those of the modules it USEs."""
    if module in seen:
        return set()
    seen.add(module)
    out = set(declared.get(module, ()))
    for m in used.get(module, ()):
        out |= _scope(m, declared, used, seen)
    return out


def _uses(spec: object | None) -> list[tuple[str, frozenset[str] | None]]:
    """The modules a specification part USEs, each with the local names its ONLY list gives."""
    out: list[tuple[str, frozenset[str] | None]] = []
    for stmt in getattr(spec, "children", ()) or ():
        if isinstance(stmt, F.Use_Stmt):
            only = stmt.items[4]
            names = None if only is None else frozenset(
                str(o.items[1] if isinstance(o, F.Rename) else o).lower() for o in getattr(only, "items", ()))
            out.append((str(stmt.items[2]).lower(), names))
    return out


def _routines(unit: object, host: str | None, out: dict[str, Routine], module: str | None = None) -> None:
    if isinstance(unit, F.Module):
        module = unit_name(unit)
    if isinstance(unit, (F.Main_Program, *PROCEDURES)):
        name = unit_name(unit)
        kind = ("program" if isinstance(unit, F.Main_Program)
                else "subroutine" if isinstance(unit, F.Subroutine_Subprogram) else "function")
        arrays, common, saved = _declarations(spec_part(unit))
        assumed = frozenset(str(e.items[0]).lower() for e in walk(spec_part(unit) or (), F.Entity_Decl)
                            if walk(e.items[1] or (), F.Assumed_Size_Spec))
        dummies = getattr(head(unit), "items", ())[2] if kind != "program" else None
        called = {str(c.items[0]).lower() for c in walk(unit, CALLS)}
        statements = [c for c in unit.children if not isinstance(c, F.Specification_Part) and c is not head(unit)]
        out[name] = Routine(name, kind, unit, frozenset(str(x).lower() for x in walk(unit, F.Name)),
                            frozenset(called), tuple(str(d).lower() for d in getattr(dummies, "items", ()) or ()),
                            arrays, common, saved, any(isinstance(s, F.Stop_Stmt) for s in walk(unit)), host,
                            frozenset(str(x).lower() for x in walk(statements, F.Name)), assumed,
                            tuple(_uses(spec_part(unit))), module)
        host = name
    for c in contained(unit):
        _routines(c, host, out, module)


def _declarations(spec: object | None) -> tuple[dict[str, bool], frozenset[str], frozenset[str] | None]:
    """The names a specification part declares (with whether each is an array), those in
    COMMON, and those SAVEd (None for a bare SAVE)."""
    arrays: dict[str, bool] = {}
    common: set[str] = set()
    saved: set[str] | None = set()
    if spec is None:
        return arrays, frozenset(), frozenset()

    def declare(name: object, array: bool) -> None:
        n = str(name).lower()
        arrays[n] = arrays.get(n, False) or array

    for stmt in walk(spec, (F.Type_Declaration_Stmt, F.Dimension_Stmt, F.Common_Stmt, F.Save_Stmt)):
        if isinstance(stmt, F.Type_Declaration_Stmt):
            dimensioned = any(isinstance(a, F.Dimension_Attr_Spec) for a in walk(stmt.items[1] or ()))
            for e in walk(stmt.items[2], F.Entity_Decl):
                declare(e.items[0], dimensioned or e.items[1] is not None)
        elif isinstance(stmt, F.Dimension_Stmt):
            for name, _ in stmt.items[0]:
                declare(name, True)
        elif isinstance(stmt, F.Common_Stmt):
            for _, objects in stmt.items[0]:
                for o in getattr(objects, "items", ()) or ():
                    name = o.items[0] if isinstance(o, F.Common_Block_Object) else o
                    declare(name, isinstance(o, F.Common_Block_Object))
                    common.add(str(name).lower())
        elif saved is not None:
            listed = stmt.items[1] if len(stmt.items) > 1 else None
            if listed is None:
                saved = None
            else:
                saved |= {str(n).lower() for n in walk(listed, F.Name)}
    return arrays, frozenset(common), None if saved is None else frozenset(saved)


def actual_arguments(call: object) -> list[object]:
    """The actual arguments of a CALL or a function reference, in order."""
    args = call.items[1] if len(call.items) > 1 else None  # type: ignore[attr-defined]
    return list(getattr(args, "items", ()) or ())


def passed_name(arg: object) -> str | None:
    """The array an actual argument passes by address (``a`` or an element ``a(i, j)``);
    None for an expression, and for a section (``a(1:n)``, which the compiler may copy)."""
    if isinstance(arg, F.Name):
        return str(arg).lower()
    if isinstance(arg, F.Part_Ref) and not any(isinstance(t, F.Subscript_Triplet) for t in walk(arg)):
        return str(arg.items[0]).lower()
    return None
