"""Row kernels of the CUDA target: a nest that ``targets.rows.row_nest`` accepts
(one row per iteration of its parallel loops, inner loops along the row's
contiguous dimension) runs ONE WARP per row. The lanes stride the inner loops,
so neighbouring lanes read neighbouring elements (a thread per row would read
``blockDim.x`` rows a whole row apart); reductions into private scalars are
combined with warp shuffles after each inner loop, every lane then holding the
row's value; stores outside the inner loops are made by lane 0 only. Inner loops
that share a row's elements (a scratch row one fills and the next reads, NPB MG's
resid) are separated by ``__syncwarp()``.

Used when ``Schedule.row_programs`` is on (the default; the search tries it
off). First-max/min updates (``ArgUpdate``) and narrow-float reduction scalars
keep the thread-per-row kernel."""

from __future__ import annotations

from math import prod
from typing import TYPE_CHECKING

from targets.base import CodeBuffer
from targets.cstyle import cname
from targets.row_scratch import row_size
from targets.rows import (
    accumulators,
    arg_update,
    inner_loops,
    loop_chain,
    needs_barrier,
    row_nest,
)
from translate import ir
from translate.ir import DType
from translate.partition import DeviceNest

if TYPE_CHECKING:
    from targets.cuda import CudaRenderer

WARP_REDUCE = """// warp-wide reduction: every lane ends with op over the 32 lanes' values
template <typename T, typename Op>
__device__ T kt_warp_allreduce(T v, Op op) {
    for (int offset = 16; offset > 0; offset /= 2) {
        v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
    }
    return v;
}"""

SHARED_BYTES = 48 * 1024  # static shared memory of a block, without opting in to more
_SHUFFLED = (DType.F32, DType.F64, DType.I32, DType.I64)
_OPS = {"add": "KtSum", "max": "KtMax", "min": "KtMin"}


def warp_row_nest(r: CudaRenderer, nest: DeviceNest) -> bool:
    """Whether ``nest`` runs as a warp-per-row kernel under the renderer's schedule."""
    if not r.schedule.row_programs or not row_nest(nest, r.kernel, scratch=True):
        return False
    for lp in inner_loops(nest):
        if any(arg_update(s) is not None for s in loop_chain(lp)[-1].body):
            return False
        if any(r.dtype_of(v, DType.F64) not in _SHUFFLED for v in accumulators(lp)):
            return False
    return True


def has_reductions(nest: DeviceNest) -> bool:
    return any(accumulators(lp) for lp in inner_loops(nest))


def warps_per_block(r: CudaRenderer, nest: DeviceNest) -> int:
    """Rows a block runs at once: the schedule's block size, fewer where the warps' scratch rows
    on chip would pass the 48 KiB of static shared memory a block may hold."""
    per = r.block_size() // 32
    row = sum(row_size(a) for a in r.chip_rows.get(nest.name, ()))
    return max(1, min(per, SHARED_BYTES // row)) if row else per


def row_kernel(r: CudaRenderer, buf: CodeBuffer, nest: DeviceNest) -> None:
    """The ``__global__`` kernel: a grid-stride loop over rows, one warp each."""
    params = [f"const {r.ctype(r.dtype_of(s))} {r.var(s)}" for s in nest.scalars_in]
    params += [f"const int {r.var(lp.var)}_trip" for lp in nest.loops]
    params += [r.ptr(a, nest.body) for a in nest.arrays]
    loops = ", ".join(lp.var for lp in nest.loops)
    buf.line(f"// {nest.name}: row kernel for the nest at {r.where(nest.line)}: one warp per ({loops}), its lanes")
    buf.line("// stride the inner loops along the contiguous dimension; reductions through warp shuffles")
    with buf.block(r.signature(f"__global__ void {nest.name}", params)):
        buf.lines(r.extents(nest.arrays))
        chip = r.chip_rows.get(nest.name, ())
        if chip:
            names = ", ".join(a.name for a in chip)
            buf.line(f"// {names}: the warp's scratch rows (one row's copy each), in shared memory")
            buf.lines(r.extents(a.name for a in chip))
            warps = warps_per_block(r, nest)
            for a in chip:
                n = cname(a.name)
                buf.line(f"__shared__ {r.ctype(a.dtype)} {n}_rows[{warps}][{prod(int(e.value) for e in a.shape)}];")
                buf.line(f"{r.ctype(a.dtype)}* const {n} = {n}_rows[threadIdx.x / 32];")
        for lp in nest.loops:
            if not r.direct(lp):
                buf.line(f"const int {r.var(lp.var)}_lo = {r.expr(lp.start)};")
        trips = " * ".join(f"(long long){r.var(lp.var)}_trip" for lp in nest.loops)
        buf.line(f"const long long rows = {trips};")
        buf.line("const int lane = threadIdx.x % 32;")
        buf.line("const long long warps = (long long)gridDim.x * (blockDim.x / 32);")
        with buf.block("for (long long row = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32; row < rows; "
                       "row += warps)"):
            buf.lines(r.index_lines(nest.loops, "row", "long long"))
            inner_vars = {c.var for lp in inner_loops(nest) for c in loop_chain(lp)}
            first_assign = r.row_privates(buf, nest.body, [p for p in nest.private if p not in inner_vars])
            barrier, looped = needs_barrier(nest), False
            for s in nest.body:
                if id(s) in first_assign:
                    r.declare_on_assign.add(first_assign[id(s)])
                if isinstance(s, ir.Loop):
                    if barrier and looped:
                        buf.line("__syncwarp();  // the loops share the row's elements: the last one done first")
                    _row_loop(r, buf, s)
                    looped = True
                elif isinstance(s, ir.Assign) and isinstance(s.target, ir.Load):
                    with buf.block("if (lane == 0)"):
                        r.stmt(buf, s)
                else:
                    r.stmt(buf, s)
            if chip:
                buf.line("__syncwarp();  // the warp's next row refills its scratch rows")


def _row_loop(r: CudaRenderer, buf: CodeBuffer, lp: ir.Loop) -> None:
    """One inner loop (or a perfect chain of them, flattened) strided over the lanes."""
    chain = loop_chain(lp)
    inner = chain[-1]
    accs = accumulators(lp)
    if lp.line:
        buf.line(f"// {r.where(lp.line)}")
    for v in accs:
        t = r.ctype(r.dtype_of(v, DType.F64))
        buf.line(f"const {t} {r.var(v)}_before = {r.var(v)};")
        buf.line(f"{r.var(v)} = {_identity(r, v, accs[v])};")
    if len(chain) == 1:
        name, t = r.var(inner.var), r.ctype(r.dtype_of(inner.var))
        start = "lane" if inner.start == ir.Const(0, inner.start.dtype) else f"{r.expr(inner.start)} + lane"
        header = f"for ({t} {name} = {start}; {name} < {r.expr(inner.stop)}; {name} += 32)"
        with buf.block(header):
            r.stmts(buf, inner.body)
    else:
        with buf.block("", opener="{"):
            buf.lines(r.chain_bounds_lines(chain))
            total = " * ".join(f"(long long){r.var(c.var)}_trip" for c in chain)
            with buf.block(f"for (long long flat = lane; flat < {total}; flat += 32)"):
                buf.lines(r.index_lines(chain, "flat", "long long"))
                r.stmts(buf, inner.body)
    for v, op in accs.items():
        name, functor = r.var(v), _OPS[op]
        buf.line(f"{name} = {functor}()({name}_before, kt_warp_allreduce({name}, {functor}()));")


_LIMITS = {DType.I32: ("INT_MIN", "INT_MAX"), DType.I64: ("LLONG_MIN", "LLONG_MAX")}


def _identity(r: CudaRenderer, name: str, op: str) -> str:
    """The operator's identity as device code (``std::numeric_limits`` is host-only there)."""
    dt = r.dtype_of(name, DType.F64)
    if op == "add":
        return r.literal(0, dt)
    if dt.is_float:
        return f"({r.ctype(dt)})({'-' if op == 'max' else ''}INFINITY)"
    return _LIMITS[dt][0 if op == "max" else 1]


def launch_row(r: CudaRenderer, buf: CodeBuffer, nest: DeviceNest) -> None:
    """The launch: ``block_size / 32`` rows per block, a grid-stride loop for the rest."""
    per = warps_per_block(r, nest)
    with buf.block("", opener="{"):
        buf.line(f"// {nest.name} ({r.where(nest.line)}): one warp per row")
        trips = [f"{r.var(lp.var)}_trip" for lp in nest.loops]
        for lp, t in zip(nest.loops, trips, strict=True):
            buf.line(f"const int {t} = {r.trip(lp)};")
        with buf.block(f"if ({' && '.join(f'{t} > 0' for t in trips)})"):
            rows = " * ".join(f"(long long){t}" for t in trips)
            buf.line(f"const long long blocks = ({rows} + {per - 1}) / {per};")
            buf.line(f"const dim3 grid((unsigned)(blocks < {r.MAX_GRID} ? blocks : {r.MAX_GRID}));")
            args = [r.var(s) for s in nest.scalars_in] + trips + [cname(a) for a in nest.arrays]
            buf.line(f"{nest.name}<<<grid, {per * 32}, 0, stream>>>({', '.join(args)});")
            buf.line("KT_CUDA_CHECK(cudaGetLastError());")
