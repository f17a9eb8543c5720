"""Split serial loops of the CUDA target (``targets.splits``): the serial loop
cut into chunks over ``blockIdx.y``, each thread's chunk sum added to its
element with one ``atomicAdd``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from targets.base import CodeBuffer
from targets.cstyle import cname
from targets.splits import FILL_THREADS, MIN_CHUNK, Split
from translate import ir
from translate.ir import DType
from translate.partition import DeviceNest

if TYPE_CHECKING:
    from targets.cuda import CudaRenderer


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
        with buf.block(r.grid_loop(k, f"{pv}_trip")):
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
            buf.line(f"long long chunks = {FILL_THREADS}LL / {pv}_trip;")
            buf.line(f"if (chunks > {sv}_trip / {MIN_CHUNK}) chunks = {sv}_trip / {MIN_CHUNK};")
            buf.line(f"if (chunks > {r.MAX_GRID}) chunks = {r.MAX_GRID};")
            buf.line("if (chunks < 1) chunks = 1;")
            buf.line(f"const int {sv}_chunk = (int)(({sv}_trip + chunks - 1) / chunks);")
            buf.line(f"const unsigned chunks_y = (unsigned)(({sv}_trip + {sv}_chunk - 1) / {sv}_chunk);")
            buf.line(f"const dim3 grid(kt_grid({pv}_trip, {bs}), chunks_y);")
            args = [r.var(s) for s in nest.scalars_in] + [f"{pv}_trip", f"{sv}_chunk"] + [cname(a) for a in nest.arrays]
            buf.line(f"{nest.name}<<<grid, {bs}, 0, stream>>>({', '.join(args)});")
            buf.line("KT_CUDA_CHECK(cudaGetLastError());")
