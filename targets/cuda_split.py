"""Split serial loops of the CUDA target: a one-dimensional parallel nest whose
body is one serial loop that accumulates into one element per thread

    do i = 1, m            ! parallel: a thread per i
      do j = 1, n          ! serial in each thread (after the loop interchange)
        temp = alpha*x(j)
        y(i) = y(i) + temp*a(i, j)

has only ``m`` threads of work; when ``m`` is short of what fills the GPU
(DGEMV 'N' with a few thousand rows) each thread runs a long serial loop on a
mostly idle device. Here the serial loop is cut into ``blockIdx.y`` chunks:
each thread sums its chunk's contributions into a register and adds that to
the element with one ``atomicAdd``. The launcher picks the number of chunks at
run time (enough threads to fill the device, at least 32 iterations a chunk;
one chunk when the parallel loop is long). The additions are reassociated,
which validation's floating-point tolerance covers.

Used when ``Schedule.split_serial`` is on (the default; the search tries it off)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from targets.base import CodeBuffer
from targets.cstyle import cname
from translate import ir
from translate.ir import DType
from translate.irquery import scalar_reads
from translate.schedule import DeviceNest

if TYPE_CHECKING:
    from targets.cuda import CudaRenderer

# threads to aim for (an H200 holds 132 x 2048 resident) and the least serial iterations per chunk
_FILL_THREADS = 262144
_MIN_CHUNK = 32
_ATOMIC = (DType.F32, DType.F64, DType.I32)


@dataclass(frozen=True)
class Split:
    loop: ir.Loop  # the serial loop
    store: ir.Assign  # A(idx) = A(idx) + addend
    addend: ir.Expr


def split_nest(r: CudaRenderer, nest: DeviceNest) -> Split | None:
    """The split form of ``nest`` under the renderer's schedule, or None."""
    if not r.schedule.split_serial or nest.reductions or len(nest.loops) != 1 or len(nest.body) != 1:
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
    decl = r.decl_of(target.array)
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


def split_kernel(r: CudaRenderer, buf: CodeBuffer, nest: DeviceNest, split: Split) -> None:
    par, lp = nest.loops[0], split.loop
    target = split.store.target
    assert isinstance(target, ir.Load)
    t = r.ctype(r.array(target.array).dtype)
    pv, sv = r.var(par.var), r.var(lp.var)
    params = [f"const {r.ctype(r.dtype_of(s))} {r.var(s)}" for s in nest.scalars_in]
    params += [f"const int {pv}_trip", f"const int {sv}_chunk"]
    params += [r.ptr(a, nest.body) for a in nest.arrays]
    buf.line(f"// {nest.name}: parallel loop nest at {r.where(nest.line)}; index {par.var} on threadIdx.x, the serial")
    buf.line(f"// {lp.var} loop cut into chunks over blockIdx.y, each chunk's sum added with one atomicAdd")
    with buf.block(r.signature(f"__global__ void {nest.name}", params)):
        buf.lines(r.extents(nest.arrays))
        k = pv if r.direct(par) else f"k_{pv}"
        if not r.direct(par):
            buf.line(f"const int {pv}_lo = {r.expr(par.start)};")
        buf.line(f"const int {sv}_trip = {r.trip(lp)};")
        buf.line(f"const int first = blockIdx.y * {sv}_chunk;")
        buf.line(f"const int last = {sv}_trip - first < {sv}_chunk ? {sv}_trip : first + {sv}_chunk;")
        with buf.block(f"for (int {k} = blockIdx.x * blockDim.x + threadIdx.x; {k} < {pv}_trip; "
                       f"{k} += gridDim.x * blockDim.x)"):
            if not r.direct(par):
                buf.line(f"const {r.ctype(r.dtype_of(par.var))} {pv} = {r.offset(par, k)};")
            buf.line(f"{t} part = 0;")
            for p in sorted(s.target.name for s in lp.body if isinstance(s.target, ir.Var)):
                buf.line(f"{r.ctype(r.dtype_of(p, DType.F64))} {r.var(p)};")
            if lp.line:
                buf.line(f"// {r.where(lp.line)}")
            kj = sv if r.direct(lp) else f"k_{sv}"
            with buf.block(f"for (int {kj} = first; {kj} < last; ++{kj})"):
                if not r.direct(lp):
                    buf.line(f"const {r.ctype(r.dtype_of(lp.var))} {sv} = "
                             f"{r.expr(lp.start)} + {kj} * ({r.expr(lp.step)});")
                for s in lp.body:
                    if s is split.store:
                        buf.line(f"part += {r.expr(split.addend)};")
                    else:
                        r.stmt(buf, s)
            buf.line(f"atomicAdd(&{r.expr(target)}, part);")


def launch_split(r: CudaRenderer, buf: CodeBuffer, nest: DeviceNest, split: Split) -> None:
    bs = r.block_size()
    par, lp = nest.loops[0], split.loop
    pv, sv = r.var(par.var), r.var(lp.var)
    with buf.block("", opener="{"):
        buf.line(f"// {nest.name} ({r.where(nest.line)}): the serial {lp.var} loop split when {par.var} is short")
        buf.line(f"const int {pv}_trip = {r.trip(par)};")
        buf.line(f"const int {sv}_trip = {r.trip(lp)};")
        with buf.block(f"if ({pv}_trip > 0 && {sv}_trip > 0)"):
            buf.line(f"long long chunks = {_FILL_THREADS}LL / {pv}_trip;")
            buf.line(f"if (chunks > {sv}_trip / {_MIN_CHUNK}) chunks = {sv}_trip / {_MIN_CHUNK};")
            buf.line(f"if (chunks > {r.MAX_GRID}) chunks = {r.MAX_GRID};")
            buf.line("if (chunks < 1) chunks = 1;")
            buf.line(f"const int {sv}_chunk = (int)(({sv}_trip + chunks - 1) / chunks);")
            buf.line(f"const unsigned chunks_y = (unsigned)(({sv}_trip + {sv}_chunk - 1) / {sv}_chunk);")
            buf.line(f"const dim3 grid(kt_grid({pv}_trip, {bs}), chunks_y);")
            args = [r.var(s) for s in nest.scalars_in] + [f"{pv}_trip", f"{sv}_chunk"] + [cname(a) for a in nest.arrays]
            buf.line(f"{nest.name}<<<grid, {bs}, 0, stream>>>({', '.join(args)});")
            buf.line("KT_CUDA_CHECK(cudaGetLastError());")
