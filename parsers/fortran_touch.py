"""What one host statement of a migrated program touches of the arrays a data region maps
(:mod:`parsers.fortran_regions` places the updates around it): the names it mentions outside
the arrays it passes to translations, the mapped arrays it may read or write, the host routines
it reaches, and the elements it passes where a translation writes a scalar argument."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fparser.two import Fortran2003 as F
from fparser.two.utils import walk

from parsers.fortran_calltree import CALLS, actual_arguments, passed_name

if TYPE_CHECKING:
    from parsers.fortran_regions import RegionPlan

HEADERS = (F.Nonlabel_Do_Stmt, F.Label_Do_Stmt, F.If_Then_Stmt, F.Else_If_Stmt, F.Select_Case_Stmt,
           F.Case_Stmt, F.Where_Construct_Stmt, F.Masked_Elsewhere_Stmt)
ENDS = (F.End_Do_Stmt, F.End_If_Stmt, F.Else_Stmt, F.End_Select_Stmt, F.Continue_Stmt, F.Cycle_Stmt, F.Exit_Stmt)


def callees_business(stmt: object, plan: RegionPlan) -> bool:
    """Whether ``stmt`` needs no updates of its own: an end of a construct, or a call of a
    translated or transparent routine (which follow their arrays themselves)."""
    return isinstance(stmt, ENDS) or (isinstance(stmt, F.Call_Stmt) and str(stmt.items[0]).lower() in plan.passes)


def host_reach(names: set[str], plan: RegionPlan) -> frozenset[str]:
    """The names not their own that the host routines among ``names`` (a statement's), and their
    callees, mention (the globals they may touch)."""
    out: frozenset[str] = frozenset()
    for callee in names & plan.facts.routines.keys():
        out |= plan.facts.reach(callee)[0]
    return out


def touches_unnamed(stmt: object, plan: RegionPlan, routine: str) -> bool:
    """Whether ``stmt`` calls host code touching mapped arrays that cannot be named here (module
    variables this routine does not USE): their updates cannot go around the call."""
    return not callees_business(stmt, plan) and \
        any(not plan.facts.visible(routine, n) for n in host_reach(names_outside(stmt, plan), plan) & plan.mapped)


def touch(stmt: object, plan: RegionPlan, mapped: set[str]) -> tuple[set[str], set[str]]:
    """The mapped arrays one statement may read or write, and those it may write."""
    if isinstance(stmt, F.Call_Stmt) and str(stmt.items[0]).lower() in plan.passes:
        return names_outside(stmt, plan) & mapped, set()  # subscripts, elements passed as scalars
    if callees_business(stmt, plan):
        return set(), set()
    names = names_outside(stmt, plan)
    reached = host_reach(names, plan) & mapped  # host code of the program reaching no translation
    touched = (names & mapped) | reached
    if isinstance(stmt, (*HEADERS, F.Print_Stmt)) or external_write(stmt):  # a condition, an output list: read
        return touched, set(reached)
    if isinstance(stmt, F.Assignment_Stmt):
        return touched, reached | ({str(n).lower() for n in walk(stmt.items[0], F.Name)} & mapped)
    return touched, touched  # READ, a call, an IF holding one: whatever it names may be written


def external_write(stmt: object) -> bool:
    """A WRITE to ``*`` or a unit number only reads (an internal WRITE writes its CHARACTER variable)."""
    specs = stmt.items[0].items if isinstance(stmt, F.Write_Stmt) and stmt.items[0] is not None else ()
    unit = next((str(c.items[1]) for c in specs if isinstance(c, F.Io_Control_Spec) and c.items[0] in (None, "UNIT")),
                "")
    return unit == "*" or unit.isdigit()


def scalars_written(stmt: object, plan: RegionPlan, mapped: set[str]) -> list[object]:
    """The elements of mapped arrays a call passes where the translation takes a scalar it may
    write: the shim writes the result into the host's element, which the device's copy of the
    array then lacks (only that element is copied: the call's own work on the rest of the array
    is on the device)."""
    if not isinstance(stmt, F.Call_Stmt):
        return []
    out = plan.scalars_out.get(str(stmt.items[0]).lower(), frozenset())
    return [a for k, a in enumerate(actual_arguments(stmt))
            if k in out and isinstance(a, F.Part_Ref) and passed_name(a) in mapped]


def names_outside(node: object, plan: RegionPlan) -> set[str]:
    """The names a statement mentions, leaving out the arrays it passes to translated and
    transparent routines where they take arrays (those are the callee's business; subscripts,
    expressions and an element passed where the callee takes a scalar, NPB MG's ``m1(k)`` set on
    the device by ``setup``, are read here)."""
    if isinstance(node, CALLS) and str(node.items[0]).lower() in plan.passes:
        positions = plan.passes[str(node.items[0]).lower()]
        out: set[str] = set()
        for k, arg in enumerate(actual_arguments(node)):
            if k in positions and isinstance(arg, F.Part_Ref) and passed_name(arg) is not None:
                out |= names_outside(arg.items[1], plan)
            elif k not in positions or passed_name(arg) is None:
                out |= names_outside(arg, plan)
        return out
    callee = plan.facts.routines.get(str(node.items[0]).lower()) if isinstance(node, CALLS) else None
    if callee is not None:  # host code: the arrays it is passed but never touches are left out
        out = set()
        for k, arg in enumerate(actual_arguments(node)):
            if not callee.ignores(k) or passed_name(arg) is None:
                out |= names_outside(arg, plan)
            elif isinstance(arg, F.Part_Ref):
                out |= names_outside(arg.items[1], plan)
        return out | {callee.name}
    if isinstance(node, F.Name):
        return {str(node).lower()}
    out = set()
    for c in getattr(node, "children", None) or getattr(node, "items", ()) or ():
        if c is not None and not isinstance(c, str):
            out |= names_outside(c, plan)
    return out
