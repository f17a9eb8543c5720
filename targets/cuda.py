"""CUDA C++ target: ``cuda/NAME_cuda.cu`` with one ``__global__`` kernel per
parallel nest (grid-stride loops, the contiguous index on ``threadIdx.x``,
block reductions with warp shuffles and one atomic per block; a nest over rows
whose inner loops walk the row runs one warp per row, ``targets.cuda_rows``; a
short nest around a long accumulating serial loop splits that loop, ``targets.cuda_split``), single-thread
kernels for serial device code, a launcher ``NAME_cuda(..., cudaStream_t)``
taking device pointers, and the C ABI shim ``kt_NAME``."""

from __future__ import annotations

from collections.abc import Iterable
from types import MappingProxyType
from typing import ClassVar

from targets.base import CodeBuffer, Rendered, register, shim_symbol, with_fortran_interface
from targets.c_extern import conv_unsupported, cuda_launch_matmul
from targets.cstyle import CStyleRenderer, cname
from targets.cstyle_text import PRESENT_DECL
from targets.cuda_helpers import (
    BUFFER,
    CHECK,
    FIT_WIDTH,
    LOAD2_ORDERED,
    PAIR_REDUCE,
    REDUCE,
    SMALL_NEST,
    TILE_GRID,
)
from targets.cuda_host import HOST_COPY, launch_on_host, serial_function
from targets.cuda_mapping import CudaMapping, Shape, map_segments
from targets.cuda_matmul import cuda_matmul_source
from targets.cuda_planes import walk_planes
from targets.cuda_points import (
    paired_points,
    paired_rows,
    strided_points,
)
from targets.cuda_rows import WARP_REDUCE, has_reductions, launch_row, row_kernel
from targets.cuda_scan import INCLUDES, helper_text, launch_scan, scan_functor
from targets.cuda_split import launch_split, split_kernel
from targets.defaults import CUDA
from targets.kokkos import abi_params, shim_shapes
from targets.row_scratch import on_chip
from translate import ir
from translate.coverage import overwritten
from translate.ir import DType
from translate.partition import (
    DeviceExtern,
    DeviceNest,
    DeviceSerial,
    device_segments,
    fastest_first,
    host_scalars,
    walk_segments,
)
from translate.schedule import Schedule

_CUDA_TYPES = MappingProxyType({**CStyleRenderer.TYPES, DType.F16: "__half", DType.BF16: "__nv_bfloat16"})
_CUDA_ABI = MappingProxyType({**CStyleRenderer.ABI_TYPES, DType.F16: "__half", DType.BF16: "__nv_bfloat16"})
_WIDEN = {DType.F16: "__half2float", DType.BF16: "__bfloat162float"}
_NARROW = {DType.F16: "__float2half_rn", DType.BF16: "__float2bfloat16_rn"}

_OPS = {"add": "KtSum", "mul": "KtProd", "max": "KtMax", "min": "KtMin"}
_AXES = ("x", "y", "z")


def _slots(reductions: tuple[ir.Reduction, ...]) -> list[str]:
    """The 8-byte slots of a nest's reductions: a variable each, a pair also its loc and a count."""
    return [n for r in reductions for n in ((r.var, r.loc, f"{r.var} done") if r.loc else (r.var,))]



@register
class CudaRenderer(CStyleRenderer):
    name = "cuda"
    FUNC_QUAL: ClassVar[str] = "__host__ __device__ inline"
    MAX_GRID: ClassVar[int] = 65535
    TYPES = _CUDA_TYPES
    ABI_TYPES = _CUDA_ABI
    mappings: dict[str, CudaMapping]  # each device segment's shape, decided before printing (render)

    def widen(self, text: str, dtype: DType) -> str:
        return f"{_WIDEN[dtype]}({text})"

    def narrow(self, text: str, dtype: DType) -> str:
        return f"{_NARROW[dtype]}({text})"

    def launch_extern(self, buf: CodeBuffer, seg: DeviceExtern) -> None:
        if seg.op.op != "matmul":
            raise conv_unsupported(self, seg)
        cuda_launch_matmul(self, buf, seg)

    def count(self, shape: Iterable[ir.Expr]) -> str:
        """An array's element count from its extents (``kt_extent``: never negative)."""
        return " * ".join(f"kt_extent({self.expr(e)})" for e in shape) or "1"

    def host_return(self) -> str:
        return "return cudaSuccess;"

    def ptr(self, name: str, stmts: Iterable[ir.Stmt]) -> str:
        arr = self.array(name)
        written = any(isinstance(n, ir.Assign) and isinstance(n.target, ir.Load) and n.target.array == name
                      for s in stmts for n in ir.walk(s))
        return f"{'' if written else 'const '}{self.ctype(arr.dtype)}* __restrict__ {cname(name)}"

    def block_size(self) -> int:
        b = max(32, min(1024, self.schedule.block))
        return (b + 31) // 32 * 32

    # ----------------------------------------------------------------- render

    def render(self, kernel: ir.Kernel, schedule: Schedule | None = None) -> Rendered:
        scheduled, segs = self.segments(kernel, schedule)
        self.begin(scheduled)
        name = kernel.name.lower()
        ns = f"kt_{name}_detail"
        kernels = CodeBuffer(self.INDENT)
        reduces = warp_reduces = pairs = False
        scans: list[ir.Loop] = []
        devices = device_segments(segs)
        self.mappings = map_segments(self, devices)
        chip = on_chip(scheduled, segs, lambda n: self.mappings[n.name].shape is Shape.ROWS)
        self.kernel, segs, self.chip_rows = chip.kernel, chip.segments, chip.rows
        devices = device_segments(segs)
        for seg in devices:
            kernels.blank()
            m = self.mappings[seg.name]
            if isinstance(seg, DeviceNest) and m.shape is Shape.ROWS:
                warp_reduces |= has_reductions(seg)
                row_kernel(self, kernels, seg)
            elif isinstance(seg, DeviceNest) and m.split is not None:
                split_kernel(self, kernels, seg, m.split)
            elif isinstance(seg, DeviceNest):
                reduces |= bool(seg.reductions)
                pairs |= any(r.loc for r in seg.reductions)
                self.nest_kernel(kernels, seg)
            elif m.scan is not None:
                scans.append(m.scan)
                scan_functor(self, kernels, seg, m.scan)
            else:
                serial_function(self, kernels, seg)

        launcher = CodeBuffer(self.INDENT)
        params = self.launcher_params(kernel)
        launcher.line(f"// Launcher: device pointers, work enqueued on stream. "
                      f"Source: {kernel.name.upper()} ({kernel.origin}).")
        with launcher.block(self.signature(f"cudaError_t {name}_cuda", params)):
            launcher.line(f"using namespace {ns};")
            for local in host_scalars(scheduled, segs):
                if local == kernel.name and kernel.result is not None:
                    continue
                dt = self.dtype_of(local)
                launcher.line(f"{self.ctype(dt)} {self.var(local)} = {self.zero(dt)};")
            at = self.allocation_point(segs)
            self.host_segments(launcher, segs[:at])
            for arr in self.local_arrays():
                n, t = cname(arr.name), self.ctype(arr.dtype)
                count = self.count(arr.shape)
                launcher.line(f"kt_buffer<{t}> {n}_buf({count});  // local array")
                launcher.line(f"KT_CUDA_CHECK({n}_buf.status);")
                launcher.line(f"{t}* const {n} = {n}_buf.ptr;")
            self.host_segments(launcher, segs[at:])
            launcher.line("return cudaSuccess;")
        shim = self.shim(kernel, ns)

        out = CodeBuffer(self.INDENT)
        out.line(f"// {name}_cuda.cu: CUDA translation of {kernel.name.upper()} ({kernel.origin}).")
        out.line(f"// Generated by kernel-translate. Launcher: {name}_cuda(...); "
                 f"C ABI shim: {shim_symbol(kernel)}(...).")
        externs = [s for s in walk_segments(segs) if isinstance(s, DeviceExtern)]
        matmul = any(s.op.op == "matmul" for s in externs)
        out.lines(["#include <cuda_runtime.h>", "#include <cuda_fp16.h>", "#include <cuda_bf16.h>",
                   *(["#include <cuda_pipeline.h>", "#include <mma.h>  // the matmul: async copies, tensor cores"]
                     if matmul else []), *(INCLUDES if scans else []), "",
                   "#include <climits>", "#include <cmath>", "#include <cstdio>", "#include <cstdlib>",
                   "#include <cstring>", "#include <limits>", "#include <type_traits>"])
        out.blank()
        if self.host_decls:
            out.lines(["// routines of the program called from the host code (skipped where not linked)",
                       *sorted(self.host_decls)])
            out.blank()
        if any(isinstance(p, ir.Array) for p in kernel.params):
            out.splice(PRESENT_DECL)
            out.blank()
        out.splice(CHECK)
        out.blank()
        out.line(f"namespace {ns} {{")
        out.blank()
        out.line("// grid size along one axis, at most cap blocks (grid-stride loops cover the rest)")
        out.line(f"inline unsigned kt_grid(int trip, int block, int cap = {self.MAX_GRID}) {{ "
                 "const int g = (trip + block - 1) / block; return (unsigned)(g < cap ? g : cap); }")
        if "kt_fit_width" in self.helpers:
            out.splice(FIT_WIDTH)
        if "kt_small_nest" in self.helpers:
            out.splice(SMALL_NEST.replace("SHARE", str(CUDA.small_nest_share)))
        if "kt_tile_grid" in self.helpers:
            out.splice(TILE_GRID)
        if "kt_load2_ordered" in self.helpers:
            out.splice(LOAD2_ORDERED)
        if reduces:
            out.line("// blocks along a further axis of a reduction: up to 8192 in all (grid-stride loops do the rest)")
            out.line("inline unsigned kt_fill(unsigned blocks, unsigned have) { const unsigned want = 8192 / have; "
                     "return blocks < want ? blocks : (want > 0 ? want : 1); }")
        out.blank()
        out.line("// an element count from a shape expression (never negative)")
        out.line("inline size_t kt_extent(long long n) { return n > 0 ? (size_t)n : 0; }")
        helpers = self.helper_text()
        if helpers:
            out.blank()
            out.splice(helpers)
        if reduces or warp_reduces:
            out.blank()
            out.splice(REDUCE)
        if pairs:
            out.blank()
            out.splice(PAIR_REDUCE)
        if warp_reduces:
            out.blank()
            out.splice(WARP_REDUCE)
        if self.local_arrays():
            out.blank()
            out.splice(BUFFER)
        if any(isinstance(seg, DeviceSerial) and seg.on_host for seg in devices):
            out.blank()
            out.splice(HOST_COPY)
        if scan_helpers := helper_text(scans):
            out.blank()
            out.splice(scan_helpers)
        if matmul:
            out.blank()
            out.splice(cuda_matmul_source())
        out.splice(kernels)
        out.blank()
        out.line(f"}}  // namespace {ns}")
        out.blank()
        out.splice(launcher)
        out.blank()
        out.splice(shim)
        path = f"cuda/{name}_cuda.cu"
        files = with_fortran_interface({path: out.text()}, kernel)
        return Rendered(files=files, entry=path, symbol=shim_symbol(kernel), target=self.name)

    def launcher_params(self, kernel: ir.Kernel) -> list[str]:
        out = []
        for p in kernel.params:
            t = self.ctype(p.dtype)
            if isinstance(p, ir.Array):
                out.append(f"{'' if p.intent.writes else 'const '}{t}* {cname(p.name)}")
            elif p.intent.writes:
                out.append(f"{t}& {cname(p.name)}")
            else:
                out.append(f"{t} {cname(p.name)}")
        if kernel.result is not None:
            out.append(f"{self.ctype(kernel.result)}& {self.var(kernel.name)}")
        out.append("cudaStream_t stream")
        return out

    # --------------------------------------------------------------- kernels

    def nest_kernel(self, buf: CodeBuffer, seg: DeviceNest) -> None:
        order = [seg.loops[k] for k in fastest_first(seg, self.kernel)]
        params = [f"const {self.ctype(self.dtype_of(s))} {self.var(s)}" for s in seg.scalars_in]
        params += [f"const int {self.var(lp.var)}_trip" for lp in order]
        params += [self.ptr(a, seg.body) for a in seg.arrays]
        for r in seg.reductions:
            t = self.ctype(r.dtype)
            params += [f"{t}* __restrict__ {self.var(r.var)}_acc", f"const {t} {self.var(r.var)}_identity"]
            if r.loc:  # the pair's loc, each block's pair, the count of blocks done (kt_pair_finish)
                if len(order) != 1:
                    raise self.unsupported(r, f"a {r.op} pair reduction over {len(order)} loops")
                lt = self.ctype(r.loc_dtype)
                v, lv = self.var(r.var), self.var(r.loc)
                params += [f"{lt}* __restrict__ {lv}_acc", f"{t}* __restrict__ {v}_vals",
                           f"{lt}* __restrict__ {lv}_vals", f"unsigned* __restrict__ {v}_done"]
        buf.line(f"// {seg.name}: parallel loop nest at {self.where(seg.line)}; "
                 f"fastest index {order[0].var} on threadIdx.x")
        with buf.block(self.signature(f"__global__ void {seg.name}", params)):
            buf.lines(self.extents(seg.arrays))
            for r in seg.reductions:
                buf.line(f"{self.ctype(r.dtype)} {self.var(r.var)} = {self.var(r.var)}_identity;")
                if r.loc:
                    buf.line(f"{self.ctype(r.loc_dtype)} {self.var(r.loc)} = {self.loc_identity(r)};")
            k_names = {lp.var: f"k_{self.var(lp.var)}" for lp in order if not self.direct(lp)}
            for lp in order:
                if lp.var in k_names:
                    buf.line(f"const int {self.var(lp.var)}_lo = {self.expr(lp.start)};")
            m = self.mappings[seg.name]
            if m.shape is Shape.PLANES:
                walk_planes(self, buf, seg, order, k_names, m.planes)
                return
            if m.shape is Shape.REDUCTION:
                self.unrolled_reduction(buf, seg, k_names.get(order[0].var, self.var(order[0].var)), k_names)
            elif m.accesses is not None:
                paired_points(self, buf, seg, k_names, dict(m.accesses))
            elif m.shape is Shape.POINTS:
                strided_points(self, buf, seg, k_names, m.points)
            elif m.shape is Shape.ROW_PAIRS:
                paired_rows(self, buf, seg, order, k_names)
            else:
                depth = 0
                for axis, lp in reversed(list(zip(_AXES, order, strict=False))):
                    buf.line(self.grid_loop(k_names.get(lp.var, self.var(lp.var)), f"{self.var(lp.var)}_trip", axis)
                             + " {")
                    buf.level += 1
                    depth += 1
                buf.lines(self.loop_var_lines(seg, k_names))
                self.body_with_privates(buf, seg.body, seg.private)
                for _ in range(depth):
                    buf.level -= 1
                    buf.line("}")
            for r in seg.reductions:
                v = self.var(r.var)
                if r.loc:
                    lv = self.var(r.loc)
                    buf.line(f"kt_pair_finish({v}, {lv}, {self.pair_functor(r)}(), {v}_identity, "
                             f"{self.loc_identity(r)}, {v}_vals, {lv}_vals, {v}_done, {v}_acc, {lv}_acc);")
                    continue
                op = _OPS[r.op]
                buf.line(f"{v} = kt_block_reduce({v}, {op}(), {v}_identity);")
                with buf.block("if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0)"):
                    buf.line(f"kt_atomic_combine({v}_acc, {v}, {op}());")

    @staticmethod
    def grid_loop(k: str, trip: str, axis: str = "x") -> str:
        """The header of a grid-stride loop of ``k`` over ``[0, trip)`` along one grid axis."""
        return (f"for (int {k} = blockIdx.{axis} * blockDim.{axis} + threadIdx.{axis}; "
                f"{k} < {trip}; {k} += gridDim.{axis} * blockDim.{axis})")

    def unrolled_reduction(self, buf: CodeBuffer, seg: DeviceNest, k: str, k_names: dict[str, str]) -> None:
        """The grid-stride loop of a 1-D reduction, ``CudaDefaults.reduce_unroll`` iterations at a time
        without bounds checks so their loads overlap (one load in flight per thread held a
        re-rolled DASUM well below the copy bandwidth: vasum in benchmarks/region_bench.py), then
        the rest one at a time."""
        trip, u = f"{self.var(seg.loops[0].var)}_trip", CUDA.reduce_unroll
        buf.line("const int stride = gridDim.x * blockDim.x;")
        buf.line(f"int {k}_first = blockIdx.x * blockDim.x + threadIdx.x;")
        with buf.block(f"for (; {k}_first + {u - 1}LL * stride < {trip}; {k}_first += {u} * stride)"):
            for n in range(u):
                with buf.block("", opener="{"):
                    buf.line(f"const int {k} = {k}_first" + (f" + {n} * stride;" if n else ";"))
                    buf.lines(self.loop_var_lines(seg, k_names))
                    self.body_with_privates(buf, seg.body, seg.private)
        with buf.block(f"for (; {k}_first < {trip}; {k}_first += stride)"):
            buf.line(f"const int {k} = {k}_first;")
            buf.lines(self.loop_var_lines(seg, k_names))
            self.body_with_privates(buf, seg.body, seg.private)

    # -------------------------------------------------------------- launches

    def identity(self, r: ir.Reduction) -> str:
        if r.op == "add":
            return self.literal(0, r.dtype)
        if r.op == "mul":
            return self.literal(1, r.dtype)
        return self.extreme_identity(r)

    @staticmethod
    def pair_functor(r: ir.Reduction) -> str:
        """The ``KtPairBetter`` of ``r``: the pair join the kernels and the launcher share."""
        return f"KtPairBetter<{str(r.op == 'maxloc').lower()}, {str(r.loc_first == 'min').lower()}>"

    def launch_nest(self, buf: CodeBuffer, seg: DeviceNest) -> None:
        m = self.mappings[seg.name]
        if m.shape is Shape.ROWS:
            launch_row(self, buf, seg)
            return
        if m.split is not None:
            launch_split(self, buf, seg, m.split)
            return
        order = [seg.loops[k] for k in fastest_first(seg, self.kernel)]
        bs = self.block_size()
        with buf.block("", opener="{"):
            buf.line(f"// {seg.name} ({self.where(seg.line)})")
            trips = [f"{self.var(lp.var)}_trip" for lp in order]
            for lp, t in zip(order, trips, strict=True):
                buf.line(f"const int {t} = {self.trip(lp)};")
            with buf.block(f"if ({' && '.join(f'{t} > 0' for t in trips)})"):
                walk = m.walk
                rows = walk[0] if walk else max(1, self.schedule.block_rows)
                rows = rows if len(trips) > 1 and bs % rows == 0 else 1
                shape: list[int | str] = [bs // rows] + ([rows] if rows > 1 else [])
                pairs = m.shape is Shape.ROW_PAIRS
                small = f"kt_small_nest({' * '.join(['1LL', *trips])})"  # marked used where written
                if len(trips) > 1 and not walk and not pairs and not self.schedule.block_rows and bs % 64 == 0:
                    # the block's width fitted to the fastest loop (1819 iterations in 256-wide
                    # blocks leave 11% of the lanes idle, in 64 x 4 blocks 2%), the rest in rows;
                    # one row in a small nest (more blocks)
                    buf.line(f"const int bx = {self.use('kt_fit_width')}({trips[0]}, {bs});")
                    buf.line(f"const int by = {small} ? 1 : {bs} / bx;")
                    self.use("kt_small_nest")
                    shape = ["bx", "by"]
                elif pairs and not self.schedule.block_rows:  # a small nest's pairs in blocks of one warp
                    buf.line(f"const int bx = {small} ? 32 : {bs};")
                    self.use("kt_small_nest")
                    shape = ["bx"]
                dims = [f"kt_grid({t}, {n})" for t, n in zip(trips, shape + [1] * len(trips), strict=False)]
                if (points := m.points) > 1:  # every thread its points, no grid-stride
                    dims[0] = f"kt_grid(({trips[0]} + {points - 1}) / {points}, {shape[0]}, INT_MAX)"
                elif any(r.loc for r in seg.reductions):
                    # the last block joins every block's pair: few blocks (each strides the array),
                    # not a block per 256 elements
                    dims[0] = f"kt_grid({trips[0]}, {shape[0]}, {CUDA.pair_blocks})"
                elif not seg.reductions and not self.schedule.grid_stride:
                    # a thread per element along x: a capped grid's threads stride the array in
                    # far-apart runs, which was much slower for a misaligned in-place loop
                    # (docs/measurements/tuning-evidence.md, vscal)
                    dims[0] = f"kt_grid({trips[0]}, {shape[0]}, INT_MAX)"
                if walk:  # the rows' tiles times the runs over y and z, every thread one run
                    tiles = [f"kt_grid({t}, {n}, INT_MAX)" for t, n in zip(trips[1:-1], shape[1:], strict=False)]
                    tiles.append(f"kt_grid(({trips[-1]} + {walk[1] - 1}) / {walk[1]}, 1, INT_MAX)")
                    tiles[0] = "(unsigned long long)" + tiles[0]
                    dims = [f"{self.use('kt_tile_grid')}({dims[0]}, {' * '.join(tiles)})"]
                if pairs:
                    dims[-1] = f"kt_grid(({trips[-1]} + {CUDA.row_pairs - 1}) / {CUDA.row_pairs}, 1)"
                if seg.reductions and len(trips) > 1:
                    # every block ends in one atomic per reduction: about 8192 blocks in all, the outer
                    # loops strided, not one block per row (contention on the same addresses); by hand,
                    # field_summary_like ran slower with fewer blocks and no faster with more
                    # (docs/measurements/tuning-evidence.md)
                    buf.line(f"const unsigned gx = {dims[0]};")
                    have = "gx"
                    for k in range(1, len(trips)):
                        buf.line(f"const unsigned g{_AXES[k]} = kt_fill({dims[k]}, {have});")
                        have += f" * g{_AXES[k]}"
                    dims = ["gx"] + [f"g{_AXES[k]}" for k in range(1, len(trips))]
                buf.line(f"const dim3 block({', '.join(map(str, shape))});")
                buf.line(f"const dim3 grid({', '.join(dims)});")
                args = [self.var(s) for s in seg.scalars_in] + trips + [cname(a) for a in seg.arrays]
                if seg.reductions:
                    args += self.reduction_slots(buf, seg.reductions)
                buf.line(f"{seg.name}<<<grid, block, 0, stream>>>({', '.join(args)});")
                buf.line("KT_CUDA_CHECK(cudaGetLastError());")
                if seg.reductions:
                    self.reduction_results(buf, seg.reductions)

    def reduction_slots(self, buf: CodeBuffer, reductions: tuple[ir.Reduction, ...]) -> list[str]:
        """The accumulators of a nest's reductions in one device buffer of 8-byte slots, set to
        their identities with one copy (and read back with one: a copy and a wait per reduction
        each cost the host a round trip). Every scalar type of the IR fits a slot. Returns the
        kernel's arguments for them (slot pointer, identity per reduction)."""
        slots = _slots(reductions)
        pairs = len(slots) > len(reductions)
        buf.line(f"unsigned long long kt_slots[{len(slots)}]" + (
            "{};  // one 8-byte slot per reduction (a pair: value, loc, blocks done from 0)" if pairs
            else ";  // one 8-byte slot per reduction"))
        args = []
        for r in reductions:
            v, t, k = self.var(r.var), self.ctype(r.dtype), slots.index(r.var)
            buf.line(f"const {t} {v}_identity = {self.identity(r)};")
            buf.line(f"std::memcpy(&kt_slots[{k}], &{v}_identity, sizeof({t}));")
            args += [f"reinterpret_cast<{t}*>(kt_acc + {k})", f"{v}_identity"]
            if r.loc:
                lt = self.ctype(r.loc_dtype)
                buf.line(f"unsigned long long* {v}_pairs = nullptr;  // each block's pair: values, then locs")
                buf.line(f"KT_CUDA_CHECK(cudaMallocAsync(&{v}_pairs, 2 * grid.x * sizeof(unsigned long long), "
                         "stream));")
                args += [f"reinterpret_cast<{lt}*>(kt_acc + {k + 1})", f"reinterpret_cast<{t}*>({v}_pairs)",
                         f"reinterpret_cast<{lt}*>({v}_pairs + grid.x)",
                         f"reinterpret_cast<unsigned*>(kt_acc + {k + 2})"]
        buf.line("unsigned long long* kt_acc = nullptr;")
        buf.line("KT_CUDA_CHECK(cudaMallocAsync(&kt_acc, sizeof(kt_slots), stream));")
        buf.line("KT_CUDA_CHECK(cudaMemcpyAsync(kt_acc, kt_slots, sizeof(kt_slots), cudaMemcpyHostToDevice, stream));")
        return args

    def reduction_results(self, buf: CodeBuffer, reductions: tuple[ir.Reduction, ...]) -> None:
        """The slots back in one copy, each combined with the host value of its variable."""
        buf.line("KT_CUDA_CHECK(cudaMemcpyAsync(kt_slots, kt_acc, sizeof(kt_slots), cudaMemcpyDeviceToHost, stream));")
        buf.line("KT_CUDA_CHECK(cudaStreamSynchronize(stream));")
        buf.line("KT_CUDA_CHECK(cudaFreeAsync(kt_acc, stream));")
        slots = _slots(reductions)
        for r in reductions:
            v, t, k = self.var(r.var), self.ctype(r.dtype), slots.index(r.var)
            buf.line(f"{t} {v}_part;")
            buf.line(f"std::memcpy(&{v}_part, &kt_slots[{k}], sizeof({t}));")
            if r.loc:
                lv, lt = self.var(r.loc), self.ctype(r.loc_dtype)
                buf.line(f"KT_CUDA_CHECK(cudaFreeAsync({v}_pairs, stream));")
                buf.line(f"{lt} {lv}_part;")
                buf.line(f"std::memcpy(&{lv}_part, &kt_slots[{k + 1}], sizeof({lt}));")
            buf.line(self.combine(r))

    def combine(self, r: ir.Reduction) -> str:
        s, p = self.var(r.var), f"{self.var(r.var)}_part"
        if r.loc:
            ls = self.var(r.loc)
            return f"if ({self.pair_functor(r)}()({p}, {ls}_part, {s}, {ls})) {{ {s} = {p}; {ls} = {ls}_part; }}"
        if r.op in ("max", "min"):
            return f"{s} = {self.use('kt_' + r.op)}({s}, {p});"
        return f"{s} = {s} {'+' if r.op == 'add' else '*'} {p};"

    def launch_serial(self, buf: CodeBuffer, seg: DeviceSerial) -> None:
        if (loop := self.mappings[seg.name].scan) is not None:
            launch_scan(self, buf, seg, loop)
            return
        if seg.on_host:
            launch_on_host(self, buf, seg)
            return
        with buf.block("", opener="{"):
            buf.line(f"// {seg.name} ({self.where(seg.line)})")
            for s in seg.scalars_out:
                v, t = self.var(s), self.ctype(self.dtype_of(s, DType.F64))
                buf.line(f"{t}* {v}_io = nullptr;")
                buf.line(f"KT_CUDA_CHECK(cudaMallocAsync(&{v}_io, sizeof({t}), stream));")
                buf.line(f"KT_CUDA_CHECK(cudaMemcpyAsync({v}_io, &{v}, sizeof({t}), cudaMemcpyHostToDevice, stream));")
            args = [self.var(s) for s in seg.scalars_in] + [f"{self.var(s)}_io" for s in seg.scalars_out]
            args += [cname(a) for a in seg.arrays]
            buf.line(f"{seg.name}<<<1, 1, 0, stream>>>({', '.join(args)});")
            buf.line("KT_CUDA_CHECK(cudaGetLastError());")
            for s in seg.scalars_out:
                v, t = self.var(s), self.ctype(self.dtype_of(s, DType.F64))
                buf.line(f"KT_CUDA_CHECK(cudaMemcpyAsync(&{v}, {v}_io, sizeof({t}), cudaMemcpyDeviceToHost, stream));")
            if seg.scalars_out:
                buf.line("KT_CUDA_CHECK(cudaStreamSynchronize(stream));")
            for s in seg.scalars_out:
                buf.line(f"KT_CUDA_CHECK(cudaFreeAsync({self.var(s)}_io, stream));")

    # ------------------------------------------------------------------ shim

    def shim(self, kernel: ir.Kernel, ns: str) -> str:
        name = kernel.name.lower()
        b = CodeBuffer(self.INDENT)
        params = abi_params(self, kernel)
        res_t = self.ctype(kernel.result) if kernel.result is not None else None
        impl_params = params + ([f"{res_t}* kt_result"] if res_t else [])
        b.line(f"namespace {ns} {{")
        b.blank()
        b.line("// copies host arrays to the device, runs the launcher, copies out/inout arrays back; inside a")
        b.line("// migrated program's data region, uses the region's device buffers instead (no copies)")
        with b.block(self.signature("static cudaError_t shim_impl", impl_params)):
            arrays = [p for p in kernel.params if isinstance(p, ir.Array)]
            copies, entry = shim_shapes(kernel)
            for p in kernel.params:
                if p.name in copies:
                    b.line(f"const {self.ctype(p.dtype)} {cname(p.name)}_in = *{cname(p.name)};")
            whole = overwritten(kernel)  # set whole before any read: a region need not copy them in
            for p in arrays:
                n, t = cname(p.name), self.ctype(p.dtype)
                count = self.count(ir.substitute(s, entry) for s in p.shape)  # type: ignore[misc]
                b.line(f"const size_t {n}_bytes = {count} * sizeof({t});")
                writes = 2 if p.name in whole else 1 if p.intent.writes else 0
                b.line(f"{t}* {n}_d = static_cast<{t}*>(kt_present ? kt_present({n}, {n}_bytes, {writes}) : nullptr);")
                b.line(f"const bool {n}_kept = {n}_d != nullptr;")
                with b.block(f"if (!{n}_kept)"):
                    b.line(f"KT_CUDA_CHECK(cudaMalloc(&{n}_d, {n}_bytes > 0 ? {n}_bytes : sizeof({t})));")
                    b.line(f"KT_CUDA_CHECK(cudaMemcpy({n}_d, {n}, {n}_bytes, cudaMemcpyHostToDevice));")
            args = []
            for p in kernel.params:
                n = cname(p.name)
                if isinstance(p, ir.Array):
                    args.append(f"{n}_d")
                else:
                    args.append(self.shim_scalar_arg(p, b))
            if res_t:
                b.line(f"{res_t} kt_value = {self.zero(kernel.result)};")  # type: ignore[arg-type]
                args.append("kt_value")
            b.line("const cudaStream_t stream = 0;")
            if arrays:
                b.line("if (kt_call_begin) kt_call_begin();")
            b.line(f"KT_CUDA_CHECK({name}_cuda({', '.join(args + ['stream'])}));")
            b.line("KT_CUDA_CHECK(cudaStreamSynchronize(stream));")
            if arrays:
                b.line(f'if (kt_call_end) kt_call_end("{name}");')
            for p in arrays:
                n = cname(p.name)
                if p.intent.writes:
                    b.line(f"if (!{n}_kept) KT_CUDA_CHECK(cudaMemcpy({n}, {n}_d, {n}_bytes, cudaMemcpyDeviceToHost));")
            for p in kernel.params:
                if isinstance(p, ir.Scalar) and p.intent.writes and p.dtype is DType.BOOL:
                    b.line(f"*{cname(p.name)} = {cname(p.name)}_b ? 1 : 0;")
            for p in arrays:
                b.line(f"if (!{cname(p.name)}_kept) KT_CUDA_CHECK(cudaFree({cname(p.name)}_d));")
            if res_t:
                b.line("*kt_result = kt_value;")
            b.line("return cudaSuccess;")
        b.blank()
        b.line(f"}}  // namespace {ns}")
        b.blank()
        ret = self.ABI_TYPES[kernel.result] if kernel.result is not None else "void"
        b.line("// C ABI shim (CONVENTIONS.md): host arrays in and out; errors are printed with file:line.")
        with b.block(self.signature(f'extern "C" {ret} {shim_symbol(kernel)}', params)):
            names = [cname(p.name) for p in kernel.params]
            if res_t:
                b.line(f"{res_t} kt_result = {self.zero(kernel.result)};")  # type: ignore[arg-type]
                b.line(f"{ns}::shim_impl({', '.join([*names, '&kt_result'])});")
                b.line("return kt_result;")
            else:
                b.line(f"{ns}::shim_impl({', '.join(names)});")
        return b.text()
