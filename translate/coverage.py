"""Arrays a routine sets whole before it reads any element of them (``overwritten``).

Such an array's values on entry are never used, so a migrated program's data region need not
copy it to the device when the call is the first to use it there (OpenACC's ``create``): NPB
MG's ``zero3(u, ...)`` and ``zran3(v, ...)`` (which starts by zeroing its grid) are the first
calls to take their grids. The test is strict: the first statement of the routine that touches
the array is a nest whose loops each run over one whole dimension (from its first element, step
one, to its extent as the routine declares it) and whose body, plain assignments, stores every
element and reads none; nothing before it can return, and the extents keep their values on entry.
"""

from __future__ import annotations

from translate import ir
from translate.irquery import arrays_touched, loop_vars, scalar_reads, scalar_writes
from translate.loopfacts import access_count
from translate.simplify import simplify


def overwritten(kernel: ir.Kernel) -> frozenset[str]:
    """The array parameters ``kernel`` sets whole before reading any of their elements."""
    return frozenset(p.name for p in kernel.params if isinstance(p, ir.Array) and p.intent.writes
                     and _set_first(kernel, p))


def _set_first(kernel: ir.Kernel, array: ir.Array) -> bool:
    changed: set[str] = set()
    for s in kernel.body:
        if array.name in arrays_touched(s):
            return isinstance(s, ir.Loop) and _fills(s, array, changed)
        if any(isinstance(n, (ir.Return, ir.ErrorCall)) for n in ir.walk(s)):
            return False
        changed |= scalar_writes(s) | loop_vars(s)
    return False


def _fills(loop: ir.Loop, array: ir.Array, changed: set[str]) -> bool:
    """Whether the nest ``loop`` stores every element of ``array`` and reads none."""
    loops = [loop]
    while len(loops[-1].body) == 1 and isinstance(loops[-1].body[0], ir.Loop):
        loops.append(loops[-1].body[0])
    body = loops[-1].body
    if not all(isinstance(s, ir.Assign) for s in body):
        return False
    stores = [s.target for s in body if isinstance(s, ir.Assign) and isinstance(s.target, ir.Load)
              and s.target.array == array.name]
    # one store, and no access but its own target
    if len(stores) != 1 or access_count(body, array.name) != 1 or len(loops) != array.rank:
        return False
    by_var = {lp.var: lp for lp in loops}
    index = stores[0].index
    if len({i.name for i in index if isinstance(i, ir.Var)} & by_var.keys()) != array.rank:
        return False
    zero, one = ir.Const(0, ir.DType.I32), ir.Const(1, ir.DType.I32)
    for i, extent in zip(index, array.shape, strict=True):
        lp = by_var[i.name]  # type: ignore[attr-defined]
        if lp.start != zero or lp.step != one or simplify(lp.stop) != simplify(extent) or \
                scalar_reads(extent) & changed:
            return False
    return True
