"""Moving the array-reading scalar work of a host loop's body into the device
nests it launches, so that the loop itself can stay on the host
(``schedule.HostLoop``) instead of becoming one single-thread device kernel.

Two moves, both per iteration of the host loop:

* sinking: a scalar assignment that reads arrays (``TEMP = ALPHA*X(JX)``)
  followed, across scalar assignments only, by a parallel nest is recomputed
  by every thread of that nest (prepended to its body, the scalar private);
* guarding: an ``If`` whose condition reads arrays (or a scalar sunk into
  it: ``TEMP = X(J); IF (TEMP.NE.ZERO)``), with no ``else``, whose
  ``then`` branch is scalar assignments and one parallel nest (reference
  BLAS's ``IF (X(JX).NE.ZERO) THEN; TEMP = ...; DO I ...``), becomes that nest
  with its body ``If(cond, assignments + body)``: every thread evaluates the
  condition and the assignments and does nothing when it is false.

Both are legal only when the moved code computes in every thread what it
computed once before the nest, and nothing else sees it: the nest writes no
array and no scalar the moved code reads (its threads would race with the
reads), the assigned scalars are read nowhere else in the loop (nor after it,
nor across iterations) and the nest does not assign them, and a moved
assignment reads no scalar a statement it is moved past assigns. Statements
before the ``If`` in the loop body run (on the host or as earlier launches)
before the guarded nest, as in the source, so arrays they write are seen.
"""

from __future__ import annotations

from translate import ir
from translate.irquery import (
    arrays_touched,
    arrays_written,
    has_exit,
    header_arrays,
    loop_vars,
    many,
    scalar_reads,
    scalar_writes,
)


def sinkable_shape(s: ir.Stmt) -> bool:
    """A scalar assignment."""
    return isinstance(s, ir.Assign) and isinstance(s.target, ir.Var)


def launchable_nest(s: ir.Stmt) -> bool:
    """A parallel loop the host can launch as it stands."""
    return isinstance(s, ir.Loop) and s.kind is ir.LoopKind.PARALLEL and not header_arrays(s) and not has_exit(s)


def guard_parts(s: ir.Stmt) -> tuple[tuple[ir.Assign, ...], ir.Loop] | None:
    """(the scalar assignments, the nest) of an ``If`` of the guardable shape:
    no ``else``, a ``then`` branch of scalar assignments followed by one
    parallel nest without reductions. (The partition guards such an ``If``
    when its condition reads arrays, or reads a scalar sunk into it.)"""
    if not isinstance(s, ir.If) or s.orelse or not s.then:
        return None
    *assigns, nest = s.then
    if not all(sinkable_shape(a) for a in assigns) or not launchable_nest(nest):
        return None
    assert isinstance(nest, ir.Loop)
    if nest.reductions:  # a guarded reduction into a host scalar: left to the serial path
        return None
    return tuple(a for a in assigns if isinstance(a, ir.Assign)), nest


def guardable(body: tuple[ir.Stmt, ...], k: int, after: frozenset[str], always_live: set[str]) -> bool:
    """Whether ``body[k]``, in the body of a host loop, can become its nest with
    a guarded body. ``after``: scalars that may be read after the loop;
    ``always_live``: scalars the routine returns."""
    parts = guard_parts(body[k])
    if parts is None:
        return False
    s = body[k]
    assert isinstance(s, ir.If)
    assigns, nest = parts
    branch = {a.target.name for a in assigns if isinstance(a.target, ir.Var)}
    inner = scalar_writes(nest) | loop_vars(nest)  # private to each thread of the nest
    nest_arrays = arrays_written(nest)
    if arrays_touched(s.cond) & nest_arrays or scalar_reads(s.cond) & (inner | branch):
        return False
    defined: set[str] = set()
    for a in assigns:
        reads = scalar_reads(a.value)
        if reads & inner or arrays_touched(a.value) & nest_arrays:
            return False
        if reads & (branch - defined):  # the host value or the previous iteration's
            return False
        defined.add(a.target.name)  # type: ignore[union-attr]
    others = body[:k] + body[k + 1:]
    outside = many(others, scalar_reads) | after | always_live
    return not (branch & outside or branch & inner)


def sink_target(body: tuple[ir.Stmt, ...], k: int, after: frozenset[str], always_live: set[str]) -> int | None:
    """Index of the parallel loop, or of the guardable ``If``, that the
    array-reading scalar assignment ``body[k]`` can be sunk into, or None."""
    s = body[k]
    if not (isinstance(s, ir.Assign) and isinstance(s.target, ir.Var)):
        return None
    run_end = k
    while run_end < len(body) and sinkable_shape(body[run_end]):
        run_end += 1
    if run_end >= len(body):
        return None
    target = body[run_end]
    if not launchable_nest(target) and not guardable(body, run_end, after, always_live):
        return None
    var = s.target.name
    reads = scalar_reads(s.value)
    others = [t for j, t in enumerate(body) if j not in (k, run_end)]
    if var in reads:  # a recurrence across iterations: the private would start undefined
        return None
    if reads & many(body[k + 1:run_end], scalar_writes):
        return None
    if var in many(others, scalar_reads) or var in after or var in always_live:
        return None
    if var in scalar_writes(target) or var in loop_vars(target):
        return None
    if arrays_touched(s.value) & arrays_written(target):
        return None
    if reads & (scalar_writes(target) | loop_vars(target)):
        return None
    return run_end
