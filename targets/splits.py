"""Serial loops worth splitting: a one-dimensional parallel nest whose body is
one serial loop that accumulates into one element per thread

    do i = 1, m            ! parallel: a thread per i
      do j = 1, n          ! serial in each thread (after the loop interchange)
        temp = alpha*x(j)
        y(i) = y(i) + temp*a(i, j)

has only ``m`` threads of work; when ``m`` is short of what fills the GPU
(DGEMV 'N' with a few thousand rows) each thread runs a long serial loop on a
mostly idle device. The GPU targets cut the serial loop into chunks along a
second grid axis: each thread sums its chunk's contributions and adds that to
the element atomically (``targets.cuda_split``, ``targets.triton_kernels``).
The launcher picks the number of chunks at run time (``chunks``). The additions
are reassociated, which validation's floating-point tolerance covers.

Used when ``Schedule.split_serial`` is on (the default; the search tries it off)."""

from __future__ import annotations

from dataclasses import dataclass

from translate import ir
from translate.ir import DType
from translate.irquery import scalar_reads
from translate.partition import DeviceNest
from translate.schedule import Schedule

# threads to aim for (a GPU of 132 multiprocessors holds 132 x 2048 resident) and the least serial
# iterations per chunk
FILL_THREADS = 262144
MIN_CHUNK = 32
_ATOMIC = (DType.F32, DType.F64, DType.I32)


@dataclass(frozen=True)
class Split:
    loop: ir.Loop  # the serial loop
    store: ir.Assign  # A(idx) = A(idx) + addend
    addend: ir.Expr


def split_nest(nest: DeviceNest, kernel: ir.Kernel, schedule: Schedule) -> Split | None:
    """The split form of ``nest`` under ``schedule``, or None."""
    if not schedule.split_serial or nest.reductions or len(nest.loops) != 1 or len(nest.body) != 1:
        return None
    lp = nest.body[0]
    if not isinstance(lp, ir.Loop) or not all(isinstance(s, ir.Assign) for s in lp.body):
        return None
    stores = [s for s in lp.body if isinstance(s, ir.Assign) and isinstance(s.target, ir.Load)]
    if len(stores) != 1:
        return None
    store = stores[0]
    target = store.target
    assert isinstance(target, ir.Load)
    v = store.value
    if not (isinstance(v, ir.BinOp) and v.op == "add" and target in (v.lhs, v.rhs)):
        return None
    addend = v.rhs if v.lhs == target else v.lhs
    try:
        decl = kernel.param(target.array)
    except KeyError:
        return None
    if not isinstance(decl, ir.Array) or decl.dtype not in _ATOMIC:
        return None
    # the array is touched nowhere else, and the element is fixed for the whole serial loop
    touches = [n for s in lp.body for n in ir.walk(s) if isinstance(n, ir.Load) and n.array == target.array]
    if any(n != target for n in touches) or any(n.array == target.array for n in ir.walk(addend)
                                                if isinstance(n, ir.Load)):
        return None
    assigned = {s.target.name for s in lp.body if isinstance(s.target, ir.Var)}
    index_reads = set().union(*(scalar_reads(e) for e in target.index)) if target.index else set()
    if index_reads & (assigned | {lp.var}):
        return None
    # the loop's scalars are temporaries of one iteration: assigned before they are read, private
    seen: set[str] = set()
    for s in lp.body:
        if (scalar_reads(s.value) & assigned) - seen:
            return None
        if isinstance(s.target, ir.Var):
            seen.add(s.target.name)
    if not assigned <= set(nest.private) or (scalar_reads(lp.start) | scalar_reads(lp.stop)
                                             | scalar_reads(lp.step)) & assigned:
        return None
    return Split(lp, store, addend)
