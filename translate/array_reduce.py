"""Array reductions of a source's parallel loop made scalar reductions.

NPB's norms sum into a small array, one element per component, under
``!$omp parallel do ... reduction(+: rms)``::

    do k ...; do j ...; do i ...              rms_1 = rms(1); ...; rms_5 = rms(5)
      do m = 1, 5                      ->     do k ...; do j ...; do i ...
        add = u(m, i, j, k) - ...                add = u(1, i, j, k) - ...
        rms(m) = rms(m) + add * add              rms_1 = rms_1 + add * add
      end do                                     ...  (m = 2 .. 5 alike)
                                              rms(1) = rms_1; ...; rms(5) = rms_5

As one array, every iteration updates the same elements and the loop is serial. The inner loops
that index the array have a constant trip: unrolled, each update is of one constant element,
and each element becomes a scalar the loop reduces like any other (read from the array before
the loop, written back after it). The directive's clause is the source's word that the
iterations combine by that operator; the rewrite is made only where, after it, every use of each
new scalar in the loop is an update by that operator (``loopfacts.reduction_op``), and the array
has a constant shape of at most ``MAX_ELEMENTS`` elements.
"""

from __future__ import annotations

from dataclasses import replace
from math import prod

from translate import ir
from translate.ir import Const, DType, Load, Var
from translate.irquery import fresh_name
from translate.loopfacts import constant_of, directive_clauses, reduction_op
from translate.simplify import simplify, simplify_stmt

MAX_ELEMENTS = 32


def scalarized(loop: ir.Loop, arrays: dict[str, ir.Array],
               taken: set[str]) -> tuple[list[ir.Stmt], ir.Loop, list[ir.Stmt], list[ir.Scalar]] | None:
    """The statements before the loop, the loop, those after it and the new scalars, where the
    loop's directive reduces arrays the rewrite can take (module docstring); else None."""
    reds = [(n, op) for n, op in directive_clauses(loop.directive or "")[0] if n in arrays]
    if not reds:
        return None
    body = loop.body
    before: list[ir.Stmt] = []
    after: list[ir.Stmt] = []
    scalars: list[ir.Scalar] = []
    for name, op in reds:
        a = arrays[name]
        extents = [constant_of(e) for e in a.shape]
        if any(x is None or x <= 0 for x in extents) or prod(extents) > MAX_ELEMENTS:  # type: ignore[misc]
            return None
        gone: set[str] = set()
        unrolled = _unrolled(body, name, gone)
        if unrolled is None or any(_read_free(unrolled, v) for v in gone):
            return None  # a variable of an unrolled loop read after it: its value would be lost
        body = unrolled
        elements = sorted({tuple(c.value for c in n.index) for s in body for n in ir.walk(s)  # type: ignore[union-attr]
                           if isinstance(n, Load) and n.array == name})
        if any(not all(0 <= i < x for i, x in zip(e, extents, strict=True)) for e in elements):  # type: ignore[operator]
            return None  # an index outside the array: left as it is
        named: dict[tuple[int, ...], str] = {}
        for e in elements:
            s = fresh_name(f"{name}_{'_'.join(str(i + 1) for i in e)}", taken)
            taken.add(s)
            named[e] = s
            scalars.append(ir.Scalar(s, a.dtype))
        body = tuple(_scalar_elements(st, name, named, a.dtype) for st in body)  # type: ignore[misc]
        if not named:
            continue
        if any(reduction_op(body, s) != op for s in named.values()):
            return None
        for e, s in named.items():
            at = tuple(Const(i, DType.I32) for i in e)
            before.append(ir.Assign(Var(s, a.dtype), Load(name, at, a.dtype)))
            after.append(ir.Assign(Load(name, at, a.dtype), Var(s, a.dtype)))
    if not scalars:
        return None
    return before, replace(loop, body=body), after, scalars


def _unrolled(body: tuple[ir.Stmt, ...], name: str, gone: set[str]) -> tuple[ir.Stmt, ...] | None:
    """``body`` with every loop whose variable indexes ``name`` unrolled (constant bounds and
    step, at most ``MAX_ELEMENTS`` iterations; their variables added to ``gone``), so every
    index of ``name`` is constant; None where that cannot be done."""
    out: list[ir.Stmt] = []
    for s in body:
        touches = any(isinstance(n, Load) and n.array == name for n in ir.walk(s))
        if not touches:
            out.append(s)
            continue
        if isinstance(s, ir.Loop):
            indexes = any(s.var in {v.name for i in n.index for v in ir.walk(i) if isinstance(v, Var)}
                          for n in ir.walk(s) if isinstance(n, Load) and n.array == name)
            if not indexes:
                inner = _unrolled(s.body, name, gone)
                if inner is None:
                    return None
                out.append(replace(s, body=inner))
                continue
            values = _values(s)
            if values is None:
                return None
            gone.add(s.var)
            for v in values:
                copy = tuple(simplify_stmt(ir.substitute(st, {s.var: Const(v, DType.I32)}))  # type: ignore[arg-type]
                             for st in s.body)
                inner = _unrolled(copy, name, gone)
                if inner is None:
                    return None
                out.extend(inner)
            continue
        if isinstance(s, ir.Assign):
            loads = [n for n in ir.walk(s) if isinstance(n, Load) and n.array == name]
            if not all(all(isinstance(simplify(i), Const) for i in n.index) for n in loads):
                return None
            out.append(ir.Assign(simplify(s.target) if isinstance(s.target, Load) else s.target,  # type: ignore[arg-type]
                                 s.value))
            continue
        return None  # an If or another statement around the updates: left alone
    return tuple(out)


def _read_free(body: tuple[ir.Stmt, ...], var: str) -> bool:
    """Whether ``body`` reads ``var`` outside every loop over it."""
    for s in body:
        if isinstance(s, ir.Loop):
            if any(isinstance(v, Var) and v.name == var for e in (s.start, s.stop, s.step) for v in ir.walk(e)):
                return True
            if s.var != var and _read_free(s.body, var):
                return True
        elif any(isinstance(v, Var) and v.name == var for v in ir.walk(s)):
            return True
    return False


def _values(loop: ir.Loop) -> list[int] | None:
    start, stop, step = constant_of(loop.start), constant_of(loop.stop), constant_of(loop.step)
    if start is None or stop is None or not step:
        return None
    values = list(range(start, stop, step))  # the IR's stop is exclusive
    return values if len(values) <= MAX_ELEMENTS else None


def _scalar_elements(node: object, name: str, named: dict[tuple[int, ...], str], dtype: DType) -> object:
    if isinstance(node, Load) and node.array == name:
        return Var(named[tuple(simplify(i).value for i in node.index)], dtype)  # type: ignore[union-attr]
    if not ir._is_node(node):
        return node
    return ir._rebuilt(node, lambda child: _scalar_elements(child, name, named, dtype))
