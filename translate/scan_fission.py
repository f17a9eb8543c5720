"""Loops carrying several recurrences, split into one loop each (for ``translate.scan``).

The Thomas algorithm's forward sweep carries two::

    DENOM = B(I) - A(I)*CP(I-1)
    CP(I) = C(I)/DENOM
    DP(I) = (D(I) - A(I)*DP(I-1))/DENOM

Inlining the scalar temporaries, ``CP``'s statement reads no other array the loop writes, and
``DP``'s reads ``CP`` only at the previous element, which is final when it is read: the loop is the
same as one loop storing ``CP``, then one storing ``DP``. Each of those may then be a scan. Split: a
serial loop counting by 1 or -1 with no reductions whose body is assignments, scalar temporaries
(assigned once, before their uses, referenced nowhere else in the routine) then stores to distinct
arrays at subscripts that move with the loop by the step, where the stores can be ordered so that
each value reads the stored arrays only at the previous elements of itself and of the stores before
it. The temporaries are inlined (their expressions are then evaluated once per loop that uses them)."""

from __future__ import annotations

from dataclasses import replace

from translate import ir
from translate.irquery import count_refs
from translate.simplify import const_int, linearize, simplify


def moves_by_step(loop: ir.Loop, store: ir.Load, prev: ir.Load) -> bool:
    """Whether the store's subscript is ``i + c`` and the read's is the store's minus the step."""
    step = const_int(loop.step)
    if len(store.index) != 1 or len(prev.index) != 1:
        return False
    here, there = linearize(store.index[0]), linearize(simplify(prev.index[0]))
    if here is None or there is None or step is None:
        return False
    (terms, const), (prev_terms, prev_const) = here, there
    own = [k for k in terms if isinstance(k, ir.Var) and k.name == loop.var]
    if len(own) != 1 or terms[own[0]] != 1:
        return False
    return terms == prev_terms and prev_const == const - step


def split(loop: ir.Loop, kernel: ir.Kernel) -> tuple[ir.Loop, ...] | None:
    """``loop`` as one loop per stored array, in an order that keeps its results; None where it
    cannot be split so (see the module's description) or stores one array."""
    if loop.kind is not ir.LoopKind.SERIAL or loop.reductions or const_int(loop.step) not in (1, -1):
        return None
    stores = _inlined_stores(loop, kernel)
    if stores is None or len(stores) < 2 or len({s.target.array for s in stores}) != len(stores):
        return None
    written = {s.target.array: s.target for s in stores}
    ordered: list[ir.Assign] = []
    while len(ordered) < len(stores):
        done = {s.target.array for s in ordered}
        ready = [s for s in stores if s not in ordered and _reads_ok(loop, s, written, done)]
        if not ready:
            return None
        ordered.append(ready[0])
    return tuple(replace(loop, body=(s,)) for s in ordered)


def _inlined_stores(loop: ir.Loop, kernel: ir.Kernel) -> list[ir.Assign] | None:
    """The body's stores with its scalar temporaries inlined; None where the body is not that."""
    temps: dict[str, ir.Expr] = {}
    params = {p.name for p in kernel.params}
    stores: list[ir.Assign] = []
    for s in loop.body:
        if not isinstance(s, ir.Assign):
            return None
        value = ir.substitute(s.value, temps) if temps else s.value
        if isinstance(s.target, ir.Var):
            name = s.target.name
            if stores or name in temps or name == loop.var or name in params:
                return None  # temporaries come first, each assigned once, none a parameter
            if sum(count_refs(t, name) for t in kernel.body) != count_refs(loop, name):
                return None  # referenced outside the loop
            # the value as the temporary holds it (a REAL temporary of a DOUBLE expression rounds)
            temps[name] = value if value.dtype == s.target.dtype else ir.Cast(s.target.dtype, value)
            continue
        target = ir.substitute(s.target, temps) if temps else s.target
        assert isinstance(target, ir.Load)
        stores.append(ir.Assign(target, value))
    if any(isinstance(n, ir.Var) and n.name in temps for s in stores for n in ir.walk(s)):
        return None  # a temporary read before it is assigned
    return stores


def _reads_ok(loop: ir.Loop, s: ir.Assign, written: dict[str, ir.Load], done: set[str]) -> bool:
    """Whether ``s``'s value reads the stored arrays only at the previous elements of its own
    array and of those in ``done``, and its subscript reads none of them."""
    assert isinstance(s.target, ir.Load)
    own = s.target.array
    if any(isinstance(n, ir.Load) and n.array in written for i in s.target.index for n in ir.walk(i)):
        return False
    for n in ir.walk(s.value):
        if isinstance(n, ir.Load) and n.array in written:
            if n.array != own and n.array not in done:
                return False
            if not moves_by_step(loop, written[n.array], n):
                return False
    return True
