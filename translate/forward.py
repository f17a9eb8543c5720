"""Array elements kept in scalars across a long straight-line run of assignments (scalar
replacement), for targets whose compiler cannot tell the arrays apart.

NPB BT's block solvers are runs of a hundred assignments to and from small work arrays
(``lhs(1, 2, aa) = lhs(1, 2, aa) * pivot`` ... ``lhs(2, 2, aa) = lhs(2, 2, aa) - coeff *
lhs(1, 2, aa)``). A CUDA kernel's ``__restrict__`` pointers promise the compiler that a store to
one array leaves the others alone, so it keeps each element in a register once loaded or stored;
Kokkos Views make no such promise (MemoryTraits<Restrict> does not reach the compiler through a
lambda's captures), so every element is loaded again after each store to any View. Here the
translation does what the compiler cannot: inside a parallel loop, along a run of at least
``MIN_RUN`` assignments, the first load of an element of an array the loop writes goes into a
scalar and later loads of it read the scalar; a store goes through a scalar that later loads
read. A store to an element forgets every element of that array it may be (indices not provably
different); an assignment to a scalar forgets the elements indexed by it. Arrays are distinct
(Fortran's dummy arguments and the translation's own arrays never overlap), which is what lets a
store keep the other arrays' elements.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from translate import ir
from translate.ir import Load, Var
from translate.irquery import arrays_written, fresh_name, scalar_reads
from translate.simplify import simplify, sub

MIN_RUN = 8


def forwarded(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with the runs of assignments inside its parallel loops rewritten (module
    docstring); its new scalars added to its locals."""
    written = arrays_written(kernel.body)
    taken = {d.name for d in kernel.params + kernel.locals}
    temps: list[ir.Scalar] = []

    def temp(array: str, dtype: ir.DType) -> str:
        name = fresh_name(f"{array}_val", taken)
        taken.add(name)
        temps.append(ir.Scalar(name, dtype))
        return name

    def block(stmts: tuple[ir.Stmt, ...], parallel: bool) -> tuple[ir.Stmt, ...]:
        out: list[ir.Stmt] = []
        run: list[ir.Assign] = []
        for s in stmts:
            if isinstance(s, ir.Assign):
                run.append(s)
                continue
            out.extend(_run(run, written, temp) if parallel else run)
            run = []
            if isinstance(s, ir.Loop):
                out.append(replace(s, body=block(s.body, parallel or s.kind is ir.LoopKind.PARALLEL)))
            elif isinstance(s, ir.If):
                out.append(replace(s, then=block(s.then, parallel), orelse=block(s.orelse, parallel)))
            elif isinstance(s, ir.While):
                out.append(replace(s, body=block(s.body, parallel)))
            else:
                out.append(s)
        out.extend(_run(run, written, temp) if parallel else run)
        return tuple(out)

    body = block(kernel.body, False)
    if not temps:
        return kernel
    return replace(kernel, body=body, locals=kernel.locals + tuple(temps))


def _run(run: list[ir.Assign], written: set[str], temp: Callable[[str, ir.DType], str]) -> list[ir.Stmt]:
    """One run of assignments with element values carried in scalars (``temp(array, dtype)``
    names a new one, after the array it holds an element of)."""
    if len(run) < MIN_RUN:
        return list(run)
    known: dict[Load, str] = {}
    ours: set[str] = set()
    out: list[ir.Stmt] = []

    def cached(e: object) -> object:
        if isinstance(e, Load) and e.array in written and not _indirect(e):
            key = _key(e)
            if key not in known:
                t = temp(e.array, e.dtype)
                ours.add(t)
                out.append(ir.Assign(Var(t, e.dtype), key))
                known[key] = t
            return Var(known[key], e.dtype)
        if not ir._is_node(e):
            return e
        return ir._rebuilt(e, cached)

    for s in run:
        value = cached(s.value)
        if isinstance(s.target, Var):
            out.append(ir.Assign(s.target, value))  # type: ignore[arg-type]
            for key in [k for k in known if s.target.name in {n for i in k.index for n in scalar_reads(i)}]:
                del known[key]
            continue
        target = s.target
        for key in [k for k in known if k.array == target.array and not _apart(k, target)]:
            del known[key]
        if _indirect(target):
            out.append(ir.Assign(target, value))  # type: ignore[arg-type]
            continue
        key = _key(target)
        if isinstance(value, Var) and value.name in ours and value.dtype == target.dtype:
            t = value.name
        else:
            t = temp(target.array, target.dtype)
            ours.add(t)
            out.append(ir.Assign(Var(t, target.dtype), value))  # type: ignore[arg-type]
        out.append(ir.Assign(key, Var(t, target.dtype)))
        known[key] = t
    return out


def _key(e: Load) -> Load:
    return Load(e.array, tuple(simplify(i) for i in e.index), e.dtype)


def _indirect(e: Load) -> bool:
    """An index read from an array: not followed."""
    return any(isinstance(n, Load) for i in e.index for n in ir.walk(i))


def _apart(a: Load, b: Load) -> bool:
    """Whether the two accesses of one array are provably different elements: in some dimension
    their indices differ by a nonzero constant."""
    for x, y in zip(a.index, b.index, strict=False):
        d = simplify(sub(x, y))
        if isinstance(d, ir.Const) and d.value != 0:
            return True
    return False
