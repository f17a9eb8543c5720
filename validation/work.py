"""Whether a trial makes the region do any work: a validation whose trials run every loop
zero times (``sizes: {n: 0}``) compares nothing the translation computes, and must not
report it validated."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from translate import ir
from translate.privatize import trip_count
from validation.costs import case_env
from validation.inputs import Case


def _outer_loops(body: tuple[ir.Stmt, ...]) -> Iterator[ir.Loop | ir.While]:
    """The loops not inside another loop (inside IFs too)."""
    for s in body:
        if isinstance(s, (ir.Loop, ir.While)):
            yield s
        elif isinstance(s, ir.If):
            yield from _outer_loops(s.then)
            yield from _outer_loops(s.orelse)


def _trips(loop: ir.Loop, env: Mapping[str, Any]) -> int | None:
    """How many times a loop runs at ``env`` (None when that depends on more than scalars)."""
    trip = trip_count(loop)
    try:
        return None if trip is None else int(ir.evaluate(trip, env))
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None


def _only_loops(body: tuple[ir.Stmt, ...]) -> bool:
    """Loops, early RETURNs, assignments to scalars (set-up: ``S = 0`` before a sum) and IFs
    holding only those: no array written, nothing called outside the loops."""
    return all(isinstance(s, (ir.Loop, ir.While, ir.Return)) or (isinstance(s, ir.Assign) and
                                                                isinstance(s.target, ir.Var))
               or (isinstance(s, ir.If) and _only_loops(s.then) and _only_loops(s.orelse)) for s in body)


def idle(kernel: ir.Kernel, case: Case) -> bool:
    """Whether the region does no work on ``case``: it has loops, every outermost one runs zero
    times, and outside them it only sets scalars (no array written, nothing called)."""
    env = case_env(case)
    loops = list(_outer_loops(kernel.body))
    if not loops or any(isinstance(lp, ir.While) for lp in loops):
        return False
    if not _only_loops(kernel.body):
        return False  # host code outside the loops (assignments, calls) may be the work
    return all(_trips(lp, env) == 0 for lp in loops if isinstance(lp, ir.Loop))
