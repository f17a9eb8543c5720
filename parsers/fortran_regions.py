"""Data regions of a migrated program: where its arrays stay in device memory.

In every routine of the program (the main program, subroutines, functions), each outermost DO
loop whose body calls a translated routine becomes a data region: ``call kt_data_begin()``
before it, ``call kt_data_end()`` after it (the ``kt_data`` runtime,
:mod:`targets.data_runtime`; regions nest, the outermost one open is the one that counts). In a
main program with two or more statements calling translations, one region runs instead from the
first of them to the last (the host code between gets its updates as inside a loop), so the
arrays stay on the device between the calls too; where that span cannot be one (the reasons
below), the loops get theirs.
Inside, the arrays passed to translations (and the module, COMMON and program variables the
translations take) are *mapped*; host code that reads a mapped array gets
``call kt_update_host(a)`` before it, host code that may write one ``call kt_update_device(a)``
after it, and only for that array; a statement that sets one element of a mapped array and reads
nothing of it (a probe reset, ``u(1, 1) = 2.0``) copies only that element to the device after
it (``kt_update_device_part``). A host DO loop that calls no translation is one piece of host
code: its copies go around the whole loop, not around each statement in it.

A subroutine of the program that is not translated but calls translations (a driver such as a
V-cycle or a time step) is *transparent* where that is safe: a region stays open across calls
of it, and its own host code gets the updates (which do nothing where its arrays are not
mapped). It is not where it can STOP, passes a local array or an array section to a
translation (the array would outlive its routine in the region's table), allocates mapped
arrays, or where its host code could not get updates safely. A call of any other routine that
reaches a translation suspends the region around it (``kt_data_suspend``, ``kt_data_resume``:
data written back before, placed again after). A call of a routine that reaches no translation
counts as host code touching the mapped arrays it can reach: the arguments it touches (one it
never mentions, as a synchronisation stub's, costs nothing) and the globals it or its callees name.

A loop that jumps out only to a CONTINUE right after it (a convergence test) ends its region
there. A loop gets no region, with the reason, where moving the copies would be unsafe: a
statement needing an update carries a label (a jump to it would skip the update), the loop can
leave early otherwise (GO TO elsewhere, RETURN, STOP), mapped arrays are allocated or
deallocated in it, a translation is passed an array section (the compiler may pass a
temporary) or a component of a derived type (arrays are followed by name), or a DO WHILE
condition reads a mapped array.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from fparser.two import Fortran2003 as F
from fparser.two.utils import walk

from parsers.fortran_calltree import CALLS, ProcedureFacts, actual_arguments, passed_name
from parsers.fortran_migrate import format_statement
from parsers.fortran_touch import (
    ENDS,
    HEADERS,
    host_reach,
    names_outside,
    scalars_written,
    touch,
    touches_unnamed,
)
from parsers.fortran_units import PROCEDURES, SourceFile, contained, head, make_parser, read, top_units, unit_name

Translated = Mapping[str, frozenset[int]]  # a routine: the positions of its array arguments
DO_CONSTRUCTS = (F.Block_Nonlabel_Do_Construct, F.Block_Label_Do_Construct)
LEAVES = (F.Goto_Stmt, F.Computed_Goto_Stmt, F.Return_Stmt, F.Stop_Stmt, F.Arithmetic_If_Stmt)
SIZE_NAMES = ("size", "storage_size", "c_size_t")  # what a sized update names besides the array
Edit = tuple[int, int, int, list[str]]  # replace lines first..last by statements indented as line anchor


class NoRegion(Exception):
    """A loop that cannot be a data region (or a routine that cannot be transparent), and why."""


@dataclass(frozen=True)
class RegionPlan:
    """The program-wide facts region placement works from: the translated routines, the
    transparent ones (each with the positions of its array dummies), every array name a
    translation or a transparent routine is passed anywhere (and the globals translations take),
    the routines calling translations that are not transparent, with why, and the positions of
    the scalar dummies each translation may write."""

    facts: ProcedureFacts
    translated: Translated
    transparent: Translated
    mapped: frozenset[str]
    opaque: Mapping[str, str]
    scalars_out: Translated = field(default_factory=dict)

    @cached_property
    def passes(self) -> Translated:
        """The routines that take arrays into the region: translated and transparent ones."""
        return {**self.translated, **self.transparent}

    def busy(self, node: object) -> bool:
        """Whether ``node`` calls a translated or a transparent routine."""
        return any(str(c.items[0]).lower() in self.passes for c in walk(node, CALLS))

    def reaches(self, routine: str) -> bool:
        """Whether a routine of the program that is neither translated nor transparent leads to a translation."""
        return routine not in self.transparent and bool(self.facts.reach(routine)[1] & self.translated.keys())

    def mapped_in(self, routine: str) -> set[str]:
        """The names that may be mapped where ``routine`` uses them (arrays there)."""
        out = {n for n in self.mapped if self.facts.is_array(routine, n) is not False}
        r = self.facts.routines.get(routine)
        if routine in self.transparent and r is not None:
            out |= {r.dummies[k] for k in self.transparent[routine]}
        return out


def plan_regions(facts: ProcedureFacts, translated: Translated, globals_: Iterable[str],
                 scalars_out: Translated | None = None) -> RegionPlan:
    """Which routines are transparent (the largest set where each one is safe given the rest).
    ``scalars_out``: the positions of the scalar dummies each translation may write."""
    opaque: dict[str, str] = {}
    candidates = [n for n, r in facts.routines.items() if r.kind == "subroutine" and n not in translated
                  and facts.reach(n)[1] & translated.keys()]
    for n in candidates:
        if facts.recursive(n):
            opaque[n] = "it is recursive"
        elif facts.routines[n].stops:
            opaque[n] = "it can STOP (the device's data would not be written back)"
    while True:
        transparent = {n: frozenset(k for k, d in enumerate(facts.routines[n].dummies)
                                    if facts.routines[n].arrays.get(d)) for n in candidates if n not in opaque}
        plan = RegionPlan(facts, translated, transparent, _mapped(facts, {**translated, **transparent}, globals_),
                          opaque, scalars_out or {})
        found = {n: why for n in transparent if (why := _opaque(plan, n))}
        if not found:
            return plan
        opaque.update(found)


def _mapped(facts: ProcedureFacts, passes: Translated, globals_: Iterable[str]) -> frozenset[str]:
    out = set(globals_)
    for r in facts.routines.values():
        for call in walk(r.node, CALLS):
            positions = passes.get(str(call.items[0]).lower(), frozenset())
            out |= {n for k, a in enumerate(actual_arguments(call)) if k in positions and (n := passed_name(a))}
    return frozenset(out)


def _opaque(plan: RegionPlan, name: str) -> str | None:
    """Why routine ``name`` cannot be transparent, or None."""
    r = plan.facts.routines[name]
    passes = plan.passes
    for call in walk(r.node, CALLS):
        callee = str(call.items[0]).lower()
        for k, arg in enumerate(actual_arguments(call)):
            if k not in passes.get(callee, ()):
                continue
            n = passed_name(arg)
            if _section(arg):
                return f"it passes an array section ({arg}) to {callee}"
            if _component(arg):
                return f"it passes a component of a derived type ({arg}) to {callee}"
            if n is not None and r.local(n):
                return f"it passes its local array {n} to {callee}"
    mapped = plan.mapped_in(name)
    for stmt in walk(r.node, (F.Allocate_Stmt, F.Deallocate_Stmt)):
        if {str(n).lower() for n in walk(stmt, F.Name)} & mapped:
            return f"it allocates or deallocates mapped arrays ({stmt})"
    try:
        _updates_in(_body(r.node), plan, name, mapped)
    except NoRegion as why:
        return str(why)
    return None


@dataclass
class Placed:
    """A file with its data regions: the text, each region's loop (``file:line``), the update
    calls made, and the loops left without a region with why."""

    text: str
    regions: list[str] = field(default_factory=list)
    updates: int = 0
    refused: list[str] = field(default_factory=list)


def place_regions(path: Path, root: Path, text: str, plan: RegionPlan, fixed: bool | None = None,
                  parsed: tuple[SourceFile, object] | None = None) -> Placed:
    """``text`` (a file of the program, its routines already migrated) with its data regions
    and updates placed as ``plan`` says. ``parsed``: ``text`` as :func:`read` gave it already."""
    f, tree = parsed or read(path, root, make_parser(), [], {}, text=text, fixed=fixed)
    lines = list(f.lines)
    out = Placed(text)
    edits: list[Edit] = []
    for unit in _host_units(tree):
        name = unit_name(unit)
        body = _body(unit)
        if body is None or name in plan.translated:
            continue
        mapped = plan.mapped_in(name)
        mine: list[Edit] = []
        span = _program_span(unit, body, plan)
        if span is not None:
            where = f.where(_first(span.children))
            try:
                begin, end = _region(span.children, None, plan, mapped)  # the last call's updates go before the end
                if (later := _read_after(span.after, plan, name, mapped)) is not None:
                    end = (*end[:3], [*(_update("host", n, _sized(plan, name, n)) for n in sorted(later)),
                                      "call kt_data_end_unread()"])
                mine += [begin, *_updates_in(span, plan, name, mapped), end]
                out.regions.append(where)
            except NoRegion as why:
                out.refused.append(f"{where}: no data region from the program's first call of a translation "
                                   f"to its last: {why}")
                span = None
        for loop, after in [] if span is not None else _outermost_loops(body, plan):
            where = f.where(_first(loop))
            try:
                new = _region(loop, after, plan, mapped)
                if name not in plan.transparent:
                    new += _updates_in(loop, plan, name, mapped, skip=_header(loop))
            except NoRegion as why:
                out.refused.append(f"{where}: no data region: {why}")
                continue
            mine += new
            out.regions.append(where)
        if name in plan.transparent:
            mine += _updates_in(body, plan, name, mapped)
        if mine:
            at = head(unit).item.span[1]
            edits += [*mine, (at + 1, at, at + 1, ["use kt_data"])]
    out.updates = sum(1 for *_, stmts in edits for s in stmts if "kt_update" in s)
    if not edits:
        return out
    merged: dict[tuple[int, int], tuple[int, list[str]]] = {}
    for first, last, anchor, stmts in edits:
        merged.setdefault((first, last), (anchor, []))[1].extend(stmts)
    for (first, last), (anchor, stmts) in sorted(merged.items(), reverse=True):
        indent = _indent(lines[anchor - 1]) if anchor - 1 < len(lines) else "  "
        lines[first - 1:last] = [line for s in stmts for line in format_statement(s, f.fixed, indent)]
    out.text = "\n".join(lines) + "\n"
    return out


class _Span:
    """Statements of a main program in a row, as one node (``children``), and the program's
    statements after them (``after``)."""

    def __init__(self, stmts: list[object], after: list[object]) -> None:
        self.children = stmts
        self.after = after


def _program_span(unit: object, body: object | None, plan: RegionPlan) -> _Span | None:
    """A main program's statements from its first that calls a translation (or a routine a region
    stays open through) to its last, where two or more do: one region over them keeps the arrays
    on the device between the calls, not only inside each loop (NPB MG's timed section: a
    residual, a norm, the iteration loop and a norm). None where fewer do, or a jump from the rest
    of the program lands inside."""
    if not isinstance(unit, F.Main_Program) or body is None:
        return None
    kids = [c for c in body.children if c is not None and not isinstance(c, (str, F.Comment))]  # type: ignore[attr-defined]
    busy = [k for k, c in enumerate(kids) if plan.busy(c)]
    if len(busy) < 2:
        return None
    stmts = kids[busy[0]:busy[-1] + 1]
    inside = {str(c.item.label) for c in walk(stmts) if getattr(getattr(c, "item", None), "label", None)}
    rest = kids[:busy[0]] + kids[busy[-1] + 1:]
    if inside & {str(label) for stmt in walk(rest, LEAVES) for label in walk(stmt, F.Label)}:
        return None
    return _Span(stmts, kids[busy[-1] + 1:])


def _read_after(after: list[object], plan: RegionPlan, routine: str, mapped: set[str]) -> set[str] | None:
    """The mapped arrays a main program's statements after its region may read (output of a few
    elements, a verification, a report): only those are copied back at its end. None where the
    statements can jump elsewhere (back before the region) or call host code not followed."""
    if _jumps_out(after)[0]:
        return None
    statements = _statements(_Span(after, []))
    if any(_suspends(s, plan) or touches_unnamed(s, plan, routine) for s in statements):
        return None
    return {n for s in statements for n in touch(s, plan, mapped)[0]}


def _host_units(tree: object) -> list[object]:
    """The main programs and routines of a file, those inside modules and programs included."""
    out: list[object] = []
    todo = list(top_units(tree))
    while todo:
        u = todo.pop(0)
        if isinstance(u, (F.Main_Program, *PROCEDURES)):
            out.append(u)
        todo += contained(u)
    return out


def _body(unit: object) -> object | None:
    return next((c for c in unit.children if isinstance(c, F.Execution_Part)), None)  # type: ignore[attr-defined]


def _outermost_loops(node: object, plan: RegionPlan) -> list[tuple[object, object | None]]:
    """The outermost DO loops in ``node`` calling translations, each with the statement after it."""
    out: list[tuple[object, object | None]] = []
    kids = [c for c in getattr(node, "children", ()) or () if c is not None and not isinstance(c, (str, F.Comment))]
    for k, c in enumerate(kids):
        if isinstance(c, DO_CONSTRUCTS):
            if plan.busy(c):
                out.append((c, kids[k + 1] if k + 1 < len(kids) else None))
        elif getattr(c, "item", None) is None:
            out += _outermost_loops(c, plan)  # inside IF, SELECT, ... constructs
    return out


def _jumps_out(node: object) -> tuple[set[str], bool]:
    """The labels outside ``node`` that its jumps go to, and whether it can RETURN or STOP."""
    inside = {str(c.item.label) for c in walk(node) if getattr(getattr(c, "item", None), "label", None)}
    targets: set[str] = set()
    ends = False
    for stmt in walk(node, LEAVES):
        if isinstance(stmt, (F.Return_Stmt, F.Stop_Stmt)):
            ends = True
        else:
            targets |= {str(label) for label in walk(stmt, F.Label)} - inside
    return targets, ends


def _first(node: object) -> int:
    return min(s[0] for c in walk(node) if (s := getattr(getattr(c, "item", None), "span", None)))


def _last(node: object) -> int:
    return max(s[1] for c in walk(node) if (s := getattr(getattr(c, "item", None), "span", None)))


def _region(loop: object, after: object | None, plan: RegionPlan, mapped: set[str]) -> list[Edit]:
    """The edits that open and close a region around ``loop`` (``after``: the statement after it,
    where the region ends instead when the loop jumps there, as a convergence test jumps to a
    CONTINUE after the loop); :class:`NoRegion` where it cannot be one."""
    targets, ends = _jumps_out(loop)
    last = _last(loop)
    if targets and isinstance(after, F.Continue_Stmt) and targets == {str(after.item.label)}:
        last = after.item.span[1]
    elif targets or ends:
        raise NoRegion("it can leave early (GO TO, RETURN or STOP)")
    for call in walk(loop, CALLS):
        callee = str(call.items[0]).lower()
        for k, arg in enumerate(actual_arguments(call)):
            if k in plan.translated.get(callee, ()) and _section(arg):
                raise NoRegion(f"a translation is passed an array section ({arg}): the compiler may pass a copy")
            if k in plan.passes.get(callee, ()) and _component(arg):
                raise NoRegion(f"{callee} is passed a component of a derived type ({arg}): host code touching it "
                               "is not followed")
    for stmt in walk(loop, (F.Allocate_Stmt, F.Deallocate_Stmt)):
        if {str(n).lower() for n in walk(stmt, F.Name)} & mapped:
            raise NoRegion(f"mapped arrays are allocated or deallocated in it ({stmt})")
    first = _first(loop)
    return [(first, first - 1, first, ["call kt_data_begin()"]), (last + 1, last, first, ["call kt_data_end()"])]


def _section(arg: object) -> bool:
    """Whether an actual argument is an array section (the compiler may pass a copy)."""
    return passed_name(arg) is None and bool(walk(arg, F.Subscript_Triplet))


def _component(arg: object) -> bool:
    """Whether an actual argument is a component of a derived type (``chunk%field%u``): the
    placement follows arrays by name, so host code touching it would be missed."""
    return isinstance(arg, F.Data_Ref) or (passed_name(arg) is None and bool(walk(arg, F.Data_Ref)))


def _header(construct: object) -> object:
    """The statement opening a construct (fparser puts the comments before it inside)."""
    return next(c for c in construct.children if not isinstance(c, F.Comment))  # type: ignore[attr-defined]


def _pieces(node: object, plan: RegionPlan, routine: str) -> list[object]:
    """The host code in ``node``, in order: statements, and DO loops that call no translation
    (and cannot leave early) as one piece each."""
    out: list[object] = []
    for c in getattr(node, "children", ()) or ():
        if c is None or isinstance(c, (str, F.Comment)):
            continue
        if isinstance(c, DO_CONSTRUCTS) and not plan.busy(c) and not _suspends(c, plan) and \
                _jumps_out(c) == (set(), False) and not any(touches_unnamed(x, plan, routine) for x in _statements(c)):
            out.append(c)
        elif getattr(c, "item", None) is not None:
            out.append(c)
        else:
            out += _pieces(c, plan, routine)
    return out


def _suspends(node: object, plan: RegionPlan) -> bool:
    """Whether ``node`` calls host code that reaches a translation by a path the region cannot
    follow (a routine that is not transparent, or a transparent one given an array section)."""
    for call in walk(node, CALLS):
        callee = str(call.items[0]).lower()
        if callee in plan.translated:
            continue
        if plan.reaches(callee):
            return True
        if callee in plan.transparent and any(_section(a) or _component(a) for a in actual_arguments(call)):
            return True
    return False


def _updates_in(node: object, plan: RegionPlan, routine: str, mapped: set[str], skip: object = None) -> list[Edit]:
    edits: list[Edit] = []
    for piece in _pieces(node, plan, routine):
        if piece is not skip:
            edits += _updates(piece, plan, routine, mapped, node)
    return edits


def _updates(piece: object, plan: RegionPlan, routine: str, mapped: set[str], scope: object) -> list[Edit]:
    """The update calls around one piece of host code."""
    if isinstance(piece, ENDS):
        return []
    construct = isinstance(piece, DO_CONSTRUCTS)
    if not construct and (_suspends(piece, plan) or touches_unnamed(piece, plan, routine)):
        return _suspended_around(piece)
    touched: set[str] = set()
    written: set[str] = set()
    for stmt in _statements(piece) if construct else [piece]:
        t, w = touch(stmt, plan, mapped)
        touched |= t
        written |= w
    if not touched:
        return []
    stmt = _header(piece) if construct else piece
    if isinstance(stmt, (F.Nonlabel_Do_Stmt, F.Label_Do_Stmt)) and "while" in str(stmt).lower() and not construct:
        raise NoRegion(f"a DO WHILE condition reads mapped arrays ({stmt})")
    label = getattr(getattr(stmt, "item", None), "label", None)
    if label:
        raise NoRegion(f"statement {label} needs an update and carries a label a jump could skip it by")
    first, last = (_first(piece), _last(piece)) if construct else stmt.item.span
    if isinstance(stmt, HEADERS) and not construct:  # before the construct it opens: the condition is read there
        first = _first(_parent_construct(stmt, scope))
    hidden = any(plan.facts.visible(routine, n) for n in SIZE_NAMES)  # a variable hides them (NPB EP's size)

    def update(side: str, name: str) -> str:
        return _update(side, name, _sized(plan, routine, name))

    element = None if construct or hidden else _element_write(piece, plan, routine, mapped)
    after = [update("device", n) for n in sorted(written - {element})]
    if element is not None:  # one element set on the host: nothing copied before, that element after
        touched.discard(element)
        after.append(f"call kt_update_device_part({piece.items[0]}, storage_size({element}, kind=c_size_t) / 8)")
    if not construct and not hidden:  # elements a translation's scalar arguments write back on the host
        after += [f"call kt_update_device_part({a}, storage_size({passed_name(a)}, kind=c_size_t) / 8)"
                  for a in scalars_written(piece, plan, mapped)]
    return [e for e in ((first, first - 1, first, [update("host", n) for n in sorted(touched)]),
                        (last + 1, last, first, after)) if e[3]]


def _element_write(stmt: object, plan: RegionPlan, routine: str, mapped: set[str]) -> str | None:
    """The mapped array of which an assignment sets one element and reads nothing (``u(1, 1) =
    2.0``: subscripts of literals and scalar variables only), or None. The host needs none of
    that array's other values, so the device keeps them: only the element is copied after."""
    if not isinstance(stmt, F.Assignment_Stmt) or not isinstance(stmt.items[0], F.Part_Ref):
        return None
    name = str(stmt.items[0].items[0]).lower()
    subscripts = stmt.items[0].items[1]
    if name not in mapped or walk(subscripts, (F.Subscript_Triplet, F.Part_Ref)):
        return None
    facts = plan.facts.routines.get(routine)
    declared = {**plan.facts.module_arrays, **(facts.arrays if facts is not None else {})}
    arrays = {n for n, is_array in declared.items() if is_array}
    used = {str(n).lower() for n in walk(subscripts, F.Name)}
    read = {str(n).lower() for n in walk(stmt.items[2], F.Name)}
    if used & (arrays | mapped) or name in read or name in host_reach(names_outside(stmt, plan), plan):
        return None
    return name


def _sized(plan: RegionPlan, routine: str, name: str) -> bool:
    """Whether an update of array ``name`` in ``routine`` can give its size: not an assumed-size
    array, nor where a variable hides the intrinsics (NPB EP's ``size``)."""
    assumed = plan.facts.routines[routine].assumed if routine in plan.facts.routines else frozenset()
    return not any(plan.facts.visible(routine, n) for n in SIZE_NAMES) and name not in assumed


def _update(side: str, name: str, sized: bool) -> str:
    """The update of array ``name``: all its bytes (parts of it passed to translations one by one
    are entries of their own), or where its size cannot be written (an assumed-size array, a
    variable named like the intrinsics) the entry holding its start."""
    if sized:
        return f"call kt_update_{side}_range({name}, size({name}, kind=c_size_t) * storage_size({name}) / 8)"
    return f"call kt_update_{side}({name})"


def _statements(node: object) -> list[object]:
    """The statements in a construct, in order (construct headers and action statements)."""
    out = []
    for c in getattr(node, "children", ()) or ():
        if c is None or isinstance(c, (str, F.Comment)):
            continue
        if getattr(c, "item", None) is not None:
            out.append(c)
        else:
            out += _statements(c)
    return out


def _suspended_around(stmt: object) -> list[Edit]:
    """A call of host code reaching a translation by a path not followed: the region is
    suspended around it (data written back before, placed again after)."""
    if getattr(getattr(stmt, "item", None), "label", None):
        raise NoRegion(f"statement {stmt.item.label} calls host code that reaches a translation and carries a label")
    first, last = stmt.item.span
    return [(first, first - 1, first, ["call kt_data_suspend()"]), (last + 1, last, first, ["call kt_data_resume()"])]


def _parent_construct(stmt: object, scope: object) -> object:
    """The construct ``stmt`` opens."""
    for c in walk(scope.children if isinstance(scope, _Span) else scope):
        kids = [k for k in getattr(c, "children", None) or () if not isinstance(k, F.Comment)]
        if getattr(c, "item", None) is None and kids and kids[0] is stmt:
            return c
    return stmt


def _indent(line: str) -> str:
    return line[:len(line) - len(line.lstrip())] if line.strip() else "  "
