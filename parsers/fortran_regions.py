"""Data regions of a migrated program: where its arrays stay in device memory.

For each main program, every outermost DO loop whose body calls a translated routine becomes
a data region: ``call kt_data_begin()`` before it, ``call kt_data_end()`` after it (the
``kt_data`` runtime, :mod:`targets.data_runtime`). Inside, the arrays passed to translations
(and the module, COMMON and program variables the translations take) are *mapped*; host code
that reads a mapped array gets ``call kt_update_host(a)`` before it, host code that may write
one ``call kt_update_device(a)`` after it, and only for that array. A call of a routine of the
program that is not translated counts as host code touching every mapped array it can reach
(its arguments and the globals it or its callees name); one that reaches a translated routine
itself closes the region around the call (``kt_data_end`` before, ``kt_data_begin`` after).

A loop gets no region, with the reason, where moving the copies would be unsafe: a statement
needing an update carries a label (a jump to it would skip the update), the loop can leave
early (GO TO, RETURN, STOP), mapped arrays are allocated or deallocated in it, a translation
is passed an array section (the compiler may pass a temporary), or a DO WHILE condition reads
a mapped array.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from fparser.two import Fortran2003 as F
from fparser.two.utils import walk

from parsers.fortran_migrate import format_statement
from parsers.fortran_units import SourceFile, contained, head, make_parser, read, top_units, unit_name

Translated = Mapping[str, frozenset[int]]  # a translated routine: the positions of its array arguments
DO_CONSTRUCTS = (F.Block_Nonlabel_Do_Construct, F.Block_Label_Do_Construct)
LEAVES = (F.Goto_Stmt, F.Computed_Goto_Stmt, F.Return_Stmt, F.Stop_Stmt, F.Arithmetic_If_Stmt)
HEADERS = (F.Nonlabel_Do_Stmt, F.Label_Do_Stmt, F.If_Then_Stmt, F.Else_If_Stmt, F.Select_Case_Stmt,
           F.Case_Stmt, F.Where_Construct_Stmt, F.Masked_Elsewhere_Stmt)


@dataclass(frozen=True)
class ProcedureFacts:
    """What the host side needs to know of the program's routines: the names each one's body
    mentions and the routines it calls (both lower case)."""

    names: Mapping[str, frozenset[str]]
    calls: Mapping[str, frozenset[str]]

    def reach(self, routine: str) -> tuple[set[str], set[str]]:
        """Every name ``routine`` and its callees mention, and every routine they call."""
        names: set[str] = set()
        seen: set[str] = set()
        todo = [routine]
        while todo:
            r = todo.pop()
            if r in seen:
                continue
            seen.add(r)
            names |= self.names.get(r, frozenset())
            todo += [c for c in self.calls.get(r, ()) if c in self.names]
        return names, seen


def procedure_facts(units: Iterable[object]) -> ProcedureFacts:
    names: dict[str, frozenset[str]] = {}
    calls: dict[str, frozenset[str]] = {}
    for unit in units:
        for proc in _procedures(unit):
            n = unit_name(proc)
            names[n] = frozenset(str(x).lower() for x in walk(proc, F.Name))
            called = {str(c.items[0]).lower() for c in walk(proc, F.Call_Stmt)}
            called |= {str(r.items[0]).lower() for r in walk(proc, (F.Part_Ref, F.Function_Reference))}
            calls[n] = frozenset(called)
    return ProcedureFacts(names, calls)


def _procedures(unit: object) -> list[object]:
    if isinstance(unit, (F.Subroutine_Subprogram, F.Function_Subprogram)):
        return [unit, *(p for c in contained(unit) for p in _procedures(c))]
    return [p for c in contained(unit) for p in _procedures(c)]


@dataclass
class Placed:
    """A file with its data regions: the text, each region's loop (``file:line``), the update
    calls made, and the loops left without a region with why."""

    text: str
    regions: list[str] = field(default_factory=list)
    updates: int = 0
    refused: list[str] = field(default_factory=list)


class NoRegion(Exception):
    """A loop that cannot be a data region, and why."""


def place_regions(path: Path, root: Path, text: str, translated: Translated, globals_: set[str],
                  facts: ProcedureFacts, fixed: bool | None = None,
                  parsed: tuple[SourceFile, object] | None = None) -> Placed:
    """``text`` (a file of the program, its routines already migrated) with a data region
    around each outermost loop of a main program that calls a translated routine
    (``translated``: each one's name and the positions of its array arguments); ``globals_``:
    the module, COMMON and program arrays the translations take. ``parsed``: ``text`` as
    :func:`read` gave it already."""
    f, tree = parsed or read(path, root, make_parser(), [], {}, text=text, fixed=fixed)
    lines = list(f.lines)
    out = Placed(text)
    edits: list[tuple[int, int, list[str]]] = []
    for program in (u for u in top_units(tree) if isinstance(u, F.Main_Program)):
        body = next((c for c in program.children if isinstance(c, F.Execution_Part)), None)
        if body is None:
            continue
        found = False
        for loop in _outermost_loops(body, translated):
            where = f.where(_first(loop))
            try:
                new = _region(loop, translated, globals_, facts, f.fixed, lines)
            except NoRegion as why:
                out.refused.append(f"{where}: no data region: {why}")
                continue
            edits += new
            out.regions.append(where)
            out.updates += sum(1 for _, _, stmts in new for s in stmts if "kt_update" in s)
            found = True
        if found:
            at = head(program).item.span[1]
            indent = _indent(lines[at]) if at < len(lines) else "  "
            edits.append((at + 1, at, format_statement("use kt_data", f.fixed, indent)))
    if not edits:
        return out
    for first, last, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        lines[first - 1:last] = new
    out.text = "\n".join(lines) + "\n"
    return out


def _outermost_loops(node: object, translated: Translated) -> list[object]:
    out = []
    for c in getattr(node, "children", ()) or ():
        if isinstance(c, DO_CONSTRUCTS):
            if _calls(c, translated):
                out.append(c)
        elif c is not None and not isinstance(c, str) and getattr(c, "item", None) is None:
            out += _outermost_loops(c, translated)  # inside IF, SELECT, ... constructs
    return out


def _calls(node: object, routines: Translated) -> bool:
    return any(str(c.items[0]).lower() in routines for c in walk(node, F.Call_Stmt)) or \
        any(str(r.items[0]).lower() in routines for r in walk(node, (F.Part_Ref, F.Function_Reference)))


def _first(node: object) -> int:
    return min(s[0] for c in walk(node) if (s := getattr(getattr(c, "item", None), "span", None)))


def _last(node: object) -> int:
    return max(s[1] for c in walk(node) if (s := getattr(getattr(c, "item", None), "span", None)))


def _region(loop: object, translated: Translated, globals_: set[str], facts: ProcedureFacts, fixed: bool,
            lines: list[str]) -> list[tuple[int, int, list[str]]]:
    """The edits that make ``loop`` a data region; :class:`NoRegion` where it cannot be one."""
    if any(isinstance(s, LEAVES) for s in walk(loop)):
        raise NoRegion("the loop can leave early (GO TO, RETURN or STOP)")
    mapped = set(globals_)
    for call in _translated_calls(loop, translated):
        arrays = translated[str(call.items[0]).lower()]
        for k, arg in enumerate(getattr(call.items[1], "items", ()) or ()):
            if k not in arrays:
                continue
            if isinstance(arg, F.Name):
                mapped.add(str(arg).lower())
            elif any(isinstance(t, F.Subscript_Triplet) for t in walk(arg)):
                raise NoRegion(f"a translation is passed an array section ({arg}): the compiler may pass a copy")
    for stmt in walk(loop, (F.Allocate_Stmt, F.Deallocate_Stmt)):
        if {str(n).lower() for n in walk(stmt, F.Name)} & mapped:
            raise NoRegion(f"mapped arrays are allocated or deallocated in it ({stmt})")
    indent = _indent(lines[_first(loop) - 1])
    edits = [(_first(loop), _first(loop) - 1, format_statement("call kt_data_begin()", fixed, indent)),
             (_last(loop) + 1, _last(loop), format_statement("call kt_data_end()", fixed, indent))]
    for stmt in _statements(loop):
        if stmt is _header(loop):
            continue
        edits += _updates(stmt, translated, mapped, facts, fixed, lines, loop)
    return edits


def _translated_calls(node: object, translated: Translated) -> list[object]:
    return [c for c in walk(node, (F.Call_Stmt, F.Part_Ref, F.Function_Reference))
            if str(c.items[0]).lower() in translated]


def _header(construct: object) -> object:
    return construct.children[0]


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


def _updates(stmt: object, translated: Translated, mapped: set[str], facts: ProcedureFacts, fixed: bool,
             lines: list[str], loop: object) -> list[tuple[int, int, list[str]]]:
    """The update calls around one host statement of a region."""
    if isinstance(stmt, (F.End_Do_Stmt, F.End_If_Stmt, F.Else_Stmt, F.End_Select_Stmt, F.Continue_Stmt,
                         F.Cycle_Stmt, F.Exit_Stmt)):
        return []
    written: set[str] = set()
    if isinstance(stmt, F.Call_Stmt) and str(stmt.items[0]).lower() in translated:
        return []
    names = _names_outside(stmt, translated)
    touched = names & mapped
    for routine in names & facts.names.keys():  # a routine of the program, not translated
        reached, callees = facts.reach(routine)
        if callees & translated.keys():
            return _closed_around(stmt, fixed, lines)
        touched |= reached & mapped
        written |= reached & mapped
    if not touched:
        return []
    if isinstance(stmt, (F.Nonlabel_Do_Stmt, F.Label_Do_Stmt)) and "while" in str(stmt).lower():
        raise NoRegion(f"a DO WHILE condition reads mapped arrays ({stmt})")
    label = getattr(stmt, "item", None) and stmt.item.label
    if label:
        raise NoRegion(f"statement {label} needs an update and carries a label a jump could skip it by")
    if isinstance(stmt, HEADERS):
        written = set()
    elif isinstance(stmt, F.Assignment_Stmt):
        written |= {str(n).lower() for n in walk(stmt.items[0], F.Name)} & mapped
    else:  # READ, a call, an IF holding one: whatever it names may be written
        written |= touched
    indent = _indent(lines[stmt.item.span[0] - 1])
    before = [line for n in sorted(touched) for line in format_statement(f"call kt_update_host({n})", fixed, indent)]
    after = [line for n in sorted(written) for line in format_statement(f"call kt_update_device({n})", fixed, indent)]
    first, last = stmt.item.span
    if isinstance(stmt, HEADERS):  # before the construct it opens: the condition is read there
        first = _first(_parent_construct(stmt, loop))
    return [e for e in ((first, first - 1, before), (last + 1, last, after)) if e[2]]


def _closed_around(stmt: object, fixed: bool, lines: list[str]) -> list[tuple[int, int, list[str]]]:
    """A call of a routine that reaches a translation from host code not analysed: the region
    is closed around it (data written back before, placed again after)."""
    if getattr(stmt, "item", None) and stmt.item.label:
        raise NoRegion(f"statement {stmt.item.label} calls host code that reaches a translation and carries a label")
    first, last = stmt.item.span
    indent = _indent(lines[first - 1])
    return [(first, first - 1, format_statement("call kt_data_end()", fixed, indent)),
            (last + 1, last, format_statement("call kt_data_begin()", fixed, indent))]


def _parent_construct(stmt: object, loop: object) -> object:
    for c in walk(loop):
        if getattr(c, "children", None) and c.children and c.children[0] is stmt:
            return c
    return stmt


def _names_outside(node: object, translated: Translated) -> set[str]:
    """The names a statement mentions, leaving out the arguments of translated routines it
    calls (those are the translations' business)."""
    if isinstance(node, (F.Call_Stmt, F.Part_Ref, F.Function_Reference)) and \
            str(node.items[0]).lower() in translated:
        return set()
    if isinstance(node, F.Name):
        return {str(node).lower()}
    out: set[str] = set()
    for c in getattr(node, "children", None) or getattr(node, "items", ()) or ():
        if c is not None and not isinstance(c, str):
            out |= _names_outside(c, translated)
    return out


def _indent(line: str) -> str:
    return line[:len(line) - len(line.lstrip())] if line.strip() else "  "

