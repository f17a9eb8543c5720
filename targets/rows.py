"""Row computations, recognised independently of the target: a parallel nest
whose body walks the contiguous dimension of a row with inner loops (softmax,
layer norm, RMS norm, row sums, a matrix-vector product with the matrix read
along its columns). The Triton target runs one program per row
(``targets.triton_rows``), the CUDA target one warp per row (``targets.cuda_rows``).

Pattern (``DeviceNest`` body, the parallel loops already collapsed):

* statements are scalar assignments, element stores and inner loops with a
  unit step whose bounds read no array;
* an inner loop holds only assignments: reductions ``s = s OP e`` /
  ``s = max(s, e)`` / ``min`` into a scalar read nowhere else in the loop,
  first-max/min updates (``ArgUpdate``), temporaries ``t = e`` assigned before
  use and read only in that loop, and stores whose index holds the loop variable
  in the contiguous position only;
* the loop variable indexes only the contiguous dimension of every array it
  touches, and at least one access uses it; an outer loop of a perfect chain
  indexes the next dimension out, or any position of an access the innermost
  variable does not touch (a broadcast along the row: per-channel weights of a
  row that spans channels);
* no array is both written and read in the nest (a row's store is not
  guaranteed visible to its other lanes' later loads), except one element per
  row read and written outside the inner loops (``y(j) = y(j) + alpha*temp``),
  and, for a target that puts a barrier between the inner loops (CUDA),
  arrays touched only by inner loops that are parallel by the analysis (a
  scratch row one loop fills and the next reads: NPB MG's resid, psinv, interp).
"""

from __future__ import annotations

from dataclasses import dataclass

from targets.triton_expr import fold
from translate import ir
from translate.irquery import first_best_condition, scalar_reads
from translate.loopfacts import index_temps
from translate.partition import DeviceNest

COMBINE_OPS = ("add", "max", "min")


def reduction(s: ir.Assign) -> tuple[str, ir.Expr] | None:
    """(op, contribution) when ``s`` is ``v = v OP e`` / ``v = max(v, e)``."""
    if not isinstance(s.target, ir.Var):
        return None
    name = s.target.name
    val = s.value

    def is_self(e: ir.Expr) -> bool:
        return isinstance(e, ir.Var) and e.name == name

    if isinstance(val, ir.BinOp) and val.op == "add":
        pair = (val.lhs, val.rhs) if is_self(val.lhs) else (val.rhs, val.lhs) if is_self(val.rhs) else None
        if pair and name not in scalar_reads(pair[1]):
            return "add", pair[1]
    if isinstance(val, ir.Call) and val.fn in ("max", "min") and len(val.args) == 2:
        a, b = val.args
        other = b if is_self(a) else a if is_self(b) else None
        if other is not None and name not in scalar_reads(other):
            return val.fn, other
    return None


def _accesses(node: object) -> list[tuple[str, tuple[ir.Expr, ...]]]:
    out = []
    for n in ir.walk(node):
        if isinstance(n, ir.Load):
            out.append((n.array, n.index))
    return out


def _contiguous_pos(kernel: ir.Kernel, array: str) -> int:
    decl = kernel.param(array)
    if isinstance(decl, ir.Array) and decl.layout is ir.Layout.LEFT:
        return 0
    return -1


def loop_chain(lp: ir.Loop) -> list[ir.Loop]:
    """``lp`` and the loops perfectly nested in it (each body exactly one loop)."""
    chain = [lp]
    while len(chain[-1].body) == 1 and isinstance(chain[-1].body[0], ir.Loop):
        chain.append(chain[-1].body[0])
    return chain


def _slot(kernel: ir.Kernel, array: str, rank: int, depth: int, count: int) -> int:
    """The index position the loop at ``depth`` of a ``count``-deep chain may use:
    the innermost loop the contiguous dimension, the one around it the next, ..."""
    from_contiguous = count - 1 - depth
    return from_contiguous if _contiguous_pos(kernel, array) == 0 else rank - 1 - from_contiguous


@dataclass(frozen=True)
class ArgUpdate:
    """``if take(v, best): best = v; where = index``: a first max/min and its index."""

    best: ir.Var
    where: ir.Var
    value: ir.Expr
    index: ir.Expr
    better: str  # "gt" (max) or "lt" (min)
    nan: bool  # NaN wins and stays (float values)


def arg_update(s: ir.Stmt) -> ArgUpdate | None:
    if not isinstance(s, ir.If) or s.orelse or len(s.then) != 2:
        return None
    a, b = s.then
    if not (isinstance(a, ir.Assign) and isinstance(b, ir.Assign) and isinstance(a.target, ir.Var)
            and isinstance(b.target, ir.Var) and a.target.name != b.target.name):
        return None
    names = {a.target.name, b.target.name}
    if (scalar_reads(a.value) | scalar_reads(b.value)) & names:
        return None
    for better in ("gt", "lt"):
        for nan in (True, False):
            if nan and not a.target.dtype.is_float:
                continue
            if ir.expr_str(fold(s.cond)) == ir.expr_str(fold(first_best_condition(a.value, a.target, better, nan))):
                return ArgUpdate(a.target, b.target, a.value, b.value, better, nan)
    return None


def _inner_ok(kernel: ir.Kernel, lp: ir.Loop, body: tuple[ir.Stmt, ...]) -> bool:
    chain = loop_chain(lp)
    names = [c.var for c in chain]
    for c in chain:
        if fold(c.step) != ir.Const(1, c.step.dtype):
            return False
        if any(isinstance(n, ir.Load) for e in (c.start, c.stop) for n in ir.walk(e)):
            return False
        if (scalar_reads(c.start) | scalar_reads(c.stop)) & set(names):
            return False  # not rectangular
    inner = chain[-1]
    j = names[-1]
    used = False
    temps = index_temps(inner.body, j)
    for array, index in _accesses(ir.substitute(inner, temps)):
        if not index:
            continue
        pos = _contiguous_pos(kernel, array) % len(index)
        if not any(j in scalar_reads(e) for e in index):
            continue  # a broadcast along the row (a group norm's weight by channel): few elements a chunk
        for k, e in enumerate(index):
            for depth, v in enumerate(names):
                if v in scalar_reads(e) and k != _slot(kernel, array, len(index), depth, len(names)):
                    return False
        used |= j in scalar_reads(index[pos])
    if not used:
        return False
    assigned: set[str] = set()
    reductions: set[str] = set()
    for s in inner.body:
        upd = arg_update(s)
        if upd is not None:
            if {upd.best.name, upd.where.name} & (assigned | reductions):
                return False
            reductions |= {upd.best.name, upd.where.name}
            continue
        if not isinstance(s, ir.Assign):
            return False
        if isinstance(s.target, ir.Load):
            reads = set().union(*(scalar_reads(ir.substitute(e, temps)) for e in s.target.index))
            if not set(names) <= reads:  # every lane stores its own element
                return False
            continue
        name = s.target.name
        red = reduction(s)
        if red is not None and red[0] in COMBINE_OPS and name not in assigned:
            reductions.add(name)
        elif name not in scalar_reads(s.value) and name not in reductions:
            assigned.add(name)
        else:
            return False
    # a reduction variable is read nowhere else in the loop; a temporary nowhere outside it
    for s in inner.body:
        reads = scalar_reads(s)
        upd = arg_update(s)
        if upd is not None:
            own = {upd.best.name, upd.where.name}
            reads = scalar_reads(upd.value) | scalar_reads(upd.index)
        else:
            own = {s.target.name} if isinstance(s, ir.Assign) and isinstance(s.target, ir.Var) else set()
        if (reads - own) & reductions:
            return False
    outside = [s for s in body if s is not lp]
    return not any((assigned & scalar_reads(s)) - _set_first(s) for s in outside)


def _set_first(st: ir.Stmt) -> set[str]:
    """The scalars an inner loop sets in each iteration before it reads them (temporaries of its
    own that share a name with another loop's: NPB MG's rprj3 sets ``i1`` in both)."""
    if not isinstance(st, ir.Loop):
        return set()
    chain = loop_chain(st)
    bounds = set().union(*(scalar_reads(e) for c in chain for e in (c.start, c.stop, c.step)))
    out: set[str] = set()
    read: set[str] = set()
    for s in chain[-1].body:
        if isinstance(s, ir.Assign) and isinstance(s.target, ir.Var) and s.target.name not in read:
            if s.target.name not in scalar_reads(s.value):
                out.add(s.target.name)
        read |= scalar_reads(s)
    return out - bounds


def row_nest(nest: DeviceNest, kernel: ir.Kernel, scratch: bool = False) -> bool:
    """Whether ``nest`` is a row computation the row program renders (module docstring). With
    ``scratch`` (a target that puts a barrier between the inner loops: ``needs_barrier``), an
    array may also be written and read in the inner loops where every access stays in the row's
    own elements (``row_owned``: NPB MG's scratch rows u1/u2 and psinv's u)."""
    if nest.reductions:
        return False
    if not inner_loops(nest):
        return False
    for s in nest.body:
        if isinstance(s, ir.Loop):
            if not _inner_ok(kernel, s, nest.body):
                return False
        elif not isinstance(s, ir.Assign):
            return False
    return all(_one_element(nest, a) or (scratch and row_owned(nest, kernel, a)) for a in _written_and_read(nest))


def needs_barrier(nest: DeviceNest) -> bool:
    """Whether the inner loops of a row nest share arrays (``row_owned``): each must then finish
    before the next starts (a lane reads elements other lanes wrote)."""
    return any(not _one_element(nest, a) for a in _written_and_read(nest))


def _written_and_read(nest: DeviceNest) -> set[str]:
    """The arrays the nest both stores into and reads."""
    written = {s.target.array for st in nest.body for s in ir.walk(st)
               if isinstance(s, ir.Assign) and isinstance(s.target, ir.Load)}
    read = set()
    for st in nest.body:
        for s in ir.walk(st):
            if isinstance(s, ir.Assign):
                value_loads = [n.array for n in ir.walk(s.value) if isinstance(n, ir.Load)]
                index_loads = [n.array for e in (s.target.index if isinstance(s.target, ir.Load) else ())
                               for n in ir.walk(e) if isinstance(n, ir.Load)]
                read |= set(value_loads) | set(index_loads)
    return written & read


def row_owned(nest: DeviceNest, kernel: ir.Kernel, array: str) -> bool:
    """Whether the lanes of a row may share ``array`` with a barrier between the inner loops: it
    is touched only inside inner loops, each of them parallel by the analysis (no two of its
    iterations meet in it), and the nest's own loops are parallel, so no two rows meet in it
    either (NPB MG's scratch rows are copies per row, psinv's u one row per iteration)."""
    for st in nest.body:
        touched = any(isinstance(n, ir.Load) and n.array == array for n in ir.walk(st))  # stores too
        if not touched:
            continue
        if not isinstance(st, ir.Loop) or any(c.kind is not ir.LoopKind.PARALLEL for c in loop_chain(st)):
            return False
    return all(lp.kind is ir.LoopKind.PARALLEL for lp in nest.loops)


def _one_element(nest: DeviceNest, array: str) -> bool:
    """Whether every access to ``array`` is one element per row, in the statements
    outside the inner loops (``y(j) = y(j) + alpha*temp``): the row's own
    read-modify-write, which no other lane or row sees."""
    indexes = set()
    for st in nest.body:
        loads = [n for n in ir.walk(st) if isinstance(n, ir.Load) and n.array == array]  # stores too
        if loads and isinstance(st, ir.Loop):
            return False
        indexes |= {n.index for n in loads}
    return len(indexes) == 1 and not any(n.array == array for e in next(iter(indexes)) for n in ir.walk(e)
                                         if isinstance(n, ir.Load))


def inner_loops(nest: DeviceNest) -> list[ir.Loop]:
    """The row nest's inner loops (its body's loop statements)."""
    return [s for s in nest.body if isinstance(s, ir.Loop)]


def accumulators(lp: ir.Loop) -> dict[str, str]:
    """Reduction scalars of an inner loop (or perfect chain) and their operators, in order."""
    out: dict[str, str] = {}
    for s in loop_chain(lp)[-1].body:
        red = reduction(s) if isinstance(s, ir.Assign) else None
        if red is not None and isinstance(s.target, ir.Var):
            out.setdefault(s.target.name, red[0])
    return out
