"""Scratch rows recomputed where they are read (``Schedule.recompute``).

NPB MG's residual (and its smoother and restriction) fill a row of a scratch array from a grid
in one inner loop and read it at neighbouring elements in the next::

    do i1 = 1, n1                                  ! parallel
       u1(i1) = u(i1, i2-1, i3) + u(i1, i2+1, i3) + ...
    end do
    do i1 = 2, n1 - 1                              ! parallel
       r(i1, i2, i3) = v(i1, i2, i3) - ... - a(2) * (u1(i1-1) + u1(i1+1)) ...
    end do

Each read ``u1(i1-1)`` is the first loop's value at ``i1-1``: the grid sum written there. With
those sums in place of the reads the scratch array and its loop are gone; the nest becomes one
parallel nest over every point (a plain stencil, more loads, all of them of the same grid rows,
no barrier and no scratch memory). Conditions, so that each value is the one the scratch held:

* the first loop only sets scratch elements (and index temporaries, ``i1 = 2*j1 - d1``), each
  array at ``c*v + w`` along its first dimension (``v`` the loop variable) and at fixed
  positions along the rest; its values read no scratch array, no array the enclosing loops
  write and no scalar the loops set;
* the second loop reads each element at ``c*v' + w + c*k`` (the element the first loop's
  iteration ``v' + k`` set) at the same further positions, every such iteration inside the
  first loop's range; the scratch arrays are used nowhere else;
* both loops step by one, and the values are small (``LOADS``: loads after the rewrite).
"""

from __future__ import annotations

from dataclasses import replace

from translate import ir
from translate.ir import Const, DType, Expr, Load, Var
from translate.irquery import arrays_written, loop_vars, scalar_writes
from translate.loopfacts import access_count, affine_in, index_temps, names_read, with_temps
from translate.simplify import add, simplify, sub

LOADS = 40  # array loads in the second loop after the rewrite, at most


def recompute(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with every scratch row that can be recomputed where it is read gone."""
    scratch = {d.name for d in kernel.locals if isinstance(d, ir.Array)}
    if not scratch:
        return kernel
    done: set[str] = set()
    body = tuple(_stmt(s, kernel, scratch, done, s) for s in kernel.body)
    if not done:
        return kernel
    return replace(kernel, body=body, locals=tuple(d for d in kernel.locals if d.name not in done))


def _stmt(s: ir.Stmt, kernel: ir.Kernel, scratch: set[str], done: set[str], top: ir.Stmt) -> ir.Stmt:
    if isinstance(s, ir.If):
        return replace(s, then=tuple(_stmt(x, kernel, scratch, done, top) for x in s.then),
                       orelse=tuple(_stmt(x, kernel, scratch, done, top) for x in s.orelse))
    if not isinstance(s, ir.Loop):
        return s
    body = tuple(_stmt(x, kernel, scratch, done, top) for x in s.body)
    *before, first, second = body if len(body) >= 2 else (None, None)
    if isinstance(first, ir.Loop) and isinstance(second, ir.Loop) and \
            all(isinstance(x, ir.Assign) and isinstance(x.target, Var) for x in before):
        made = _rewrite(first, second, kernel, scratch, top)
        if made is not None:
            done |= made[1]
            return replace(s, body=(*before, made[0]))
    return replace(s, body=body)


def _rewrite(first: ir.Loop, second: ir.Loop, kernel: ir.Kernel, scratch: set[str],
             top: ir.Stmt) -> tuple[ir.Loop, set[str]] | None:
    """``second`` reading the values ``first`` would have put in its scratch arrays, and those
    arrays; None where the conditions do not hold."""
    one = Const(1, DType.I32)
    if first.step != one or second.step != one:
        return None
    temps = index_temps(first.body, first.var)
    sets = with_temps(tuple(x for x in first.body if not (isinstance(x, ir.Assign) and isinstance(x.target, Var)
                                                          and x.target.name in temps)), temps)
    if not sets or not all(isinstance(x, ir.Assign) and isinstance(x.target, Load) for x in sets):
        return None
    names = {x.target.array for x in sets}  # type: ignore[union-attr]
    if not names <= scratch or len(names) != len(sets) or any(
            access_count(kernel.body, n) != access_count((first, second), n) for n in names):
        return None
    # what a value reads keeps its value from the first loop to the second
    changed = (scalar_writes(first) | scalar_writes(second)) - set(temps)
    captured = loop_vars(second) - {first.var}
    written = arrays_written(top)
    rows: dict[str, tuple[Const, Expr, tuple[Expr, ...], Expr]] = {}  # name: coefficient, offset, further, value
    for x in sets:
        assert isinstance(x, ir.Assign) and isinstance(x.target, Load)
        value, index = x.value, x.target.index
        reads = names_read(value) - {first.var}
        if {n.array for n in ir.walk(value) if isinstance(n, Load)} & (names | written) or reads & (changed | captured):
            return None
        found = affine_in(index[0], first.var, {first.var})
        if found is None or not isinstance(found[0], Const) or not found[0].value or \
                any(first.var in names_read(i) for i in index[1:]):
            return None
        rows[x.target.array] = (found[0], found[1], index[1:], value)
    read_temps = index_temps(second.body, second.var)
    values: dict[Expr, Expr] = {}
    for load in {n for s in second.body for n in ir.walk(s) if isinstance(n, Load) and n.array in names}:
        value = _value_at(load, rows[load.array], first, second, read_temps)
        if value is None:
            return None
        values[load] = value
    body = tuple(ir.replace_exprs(s, values) for s in second.body)
    if sum(1 for s in body for n in ir.walk(s) if isinstance(n, Load)) > LOADS:
        return None
    return replace(second, body=body), names  # type: ignore[arg-type]


def _value_at(load: Load, row: tuple[Const, Expr, tuple[Expr, ...], Expr], first: ir.Loop, second: ir.Loop,
              temps: dict[str, Expr]) -> Expr | None:
    """The value the first loop stored where ``load`` (in the second) reads, or None."""
    coef, offset, further, value = row
    index = tuple(simplify(ir.substitute(i, temps)) for i in load.index)  # type: ignore[misc]
    found = affine_in(index[0], second.var, {second.var})
    if found is None or found[0] != coef or index[1:] != tuple(simplify(i) for i in further):
        return None
    gap = simplify(sub(found[1], offset))
    if not isinstance(gap, Const) or not isinstance(gap.value, int) or gap.value % int(coef.value):
        return None
    shift = Const(gap.value // int(coef.value), DType.I32)
    # every iteration of the second loop reads an element of the first loop's range
    below = simplify(sub(add(second.start, shift), first.start))
    above = simplify(sub(first.stop, add(second.stop, shift)))
    if not all(isinstance(e, Const) and isinstance(e.value, int) and e.value >= 0 for e in (below, above)):
        return None
    return simplify(ir.substitute(value, {first.var: simplify(add(Var(second.var, DType.I32), shift))}))  # type: ignore[arg-type]
