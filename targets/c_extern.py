"""Library operations (``ir.Extern``) in the C-style targets.

* CUDA ``matmul``: a generated shared-memory tiled kernel in the same file
  (``kt_matmul_tiled``: 32x32 tiles, float accumulation for f32/f16/bf16,
  double for f64, the batch on ``blockIdx.z``, transposed operands read
  through strides, no copies, no library to link). cuBLAS would be faster on
  large fp32 GEMMs; this keeps the translation self-contained.
* Kokkos ``matmul``: an ``MDRangePolicy`` over (batch, m, n) with the K loop
  per element, accumulation in float (double for f64).
* Convolutions: ``Unsupported`` (they need a library: cuDNN), so the report
  says why; the Triton target calls cuDNN through torch.
"""

from __future__ import annotations

from targets.base import CodeBuffer, Unsupported
from targets.cstyle import CStyleRenderer, cname
from translate import ir
from translate.ir import DType
from translate.schedule import DeviceExtern

CUDA_MATMUL = """// C[z] = op(A[z]) @ op(B[z]) for one batch index z = blockIdx.z: 32x32 shared-memory tiles,
// accumulation in Acc; strides (elements) carry transposes and broadcast batches (stride 0)
template <typename T, typename Acc, int TILE>
__global__ void kt_matmul_tiled(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c,
                                const int m, const int n, const int k,
                                const long long sab, const long long sam, const long long sak,
                                const long long sbb, const long long sbk, const long long sbn) {
    __shared__ Acc as[TILE][TILE + 1];
    __shared__ Acc bs[TILE][TILE + 1];
    const long long z = blockIdx.z;
    const int row = blockIdx.y * TILE + threadIdx.y;
    const int col = blockIdx.x * TILE + threadIdx.x;
    a += z * sab;
    b += z * sbb;
    Acc acc = Acc(0);
    for (int k0 = 0; k0 < k; k0 += TILE) {
        const int ka = k0 + threadIdx.x;
        const int kb = k0 + threadIdx.y;
        as[threadIdx.y][threadIdx.x] = (row < m && ka < k) ? static_cast<Acc>(a[row * sam + ka * sak]) : Acc(0);
        bs[threadIdx.y][threadIdx.x] = (kb < k && col < n) ? static_cast<Acc>(b[kb * sbk + col * sbn]) : Acc(0);
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < TILE; ++kk) {
            acc += as[threadIdx.y][kk] * bs[kk][threadIdx.x];
        }
        __syncthreads();
    }
    if (row < m && col < n) {
        c[z * m * n + (long long)row * n + col] = static_cast<T>(acc);
    }
}"""


def conv_unsupported(r: CStyleRenderer, seg: DeviceExtern) -> Unsupported:
    return r.unsupported(seg.op, f"{seg.op.op} (convolution) needs a library (cuDNN); {r.name} renders no "
                                 "direct convolution yet -- the Triton target calls cuDNN through torch")


def matmul_decls(r: CStyleRenderer, op: ir.Extern) -> tuple[ir.Array, ir.Array, ir.Array]:
    if len(op.inputs) != 2 or len(op.outputs) != 1:
        raise r.unsupported(op, "matmul takes two inputs and one output")
    a, b, c = (r.array(n) for n in (*op.inputs, *op.outputs))
    for d in (a, b, c):
        if d.rank < 2 or d.rank not in (2, c.rank) or (d.rank > 2 and d.layout is not ir.Layout.RIGHT):
            raise r.unsupported(op, f"matmul operand {d.name}: rank {d.rank} {d.layout.value} "
                                    f"(output rank {c.rank})")
    if c.rank > 3:
        raise r.unsupported(op, "matmul with more than one batch dimension")
    return a, b, c


def _strides(r: CStyleRenderer, d: ir.Array, trans: bool) -> tuple[str, str, str]:
    rows, cols = f"(long long)({r.expr(d.shape[-2])})", f"(long long)({r.expr(d.shape[-1])})"
    row_s, col_s = ("1", rows) if d.layout is ir.Layout.LEFT else (cols, "1")
    if trans:
        row_s, col_s = col_s, row_s
    return (f"{rows} * {cols}" if d.rank > 2 else "0"), row_s, col_s


def cuda_launch_matmul(r: CStyleRenderer, buf: CodeBuffer, seg: DeviceExtern) -> None:
    op = seg.op
    a, b, c = matmul_decls(r, op)
    if c.layout is not ir.Layout.RIGHT:
        raise r.unsupported(op, "matmul output must be row-major (RIGHT)")
    ta, tb = bool(op.attr("trans_a", False)), bool(op.attr("trans_b", False))
    if a.dtype != b.dtype or b.dtype != c.dtype or not c.dtype.is_float:
        raise r.unsupported(op, "matmul operands of different or non-float types")
    acc = "double" if c.dtype is DType.F64 else "float"
    sab, sam, sak = _strides(r, a, ta)
    sbb, sbk, sbn = _strides(r, b, tb)
    with buf.block("", opener="{"):
        buf.line(f"// {seg.name}: matmul {a.name}{'^T' if ta else ''} @ {b.name}{'^T' if tb else ''} -> {c.name} "
                 f"({r.where(op.line)}), generated tiled kernel")
        buf.line(f"const int mm_m = {r.expr(c.shape[-2])};")
        buf.line(f"const int mm_n = {r.expr(c.shape[-1])};")
        buf.line(f"const int mm_k = {r.expr(a.shape[-2] if ta else a.shape[-1])};")
        buf.line(f"const int mm_batch = {r.expr(c.shape[0]) if c.rank == 3 else '1'};")
        with buf.block("if (mm_m > 0 && mm_n > 0 && mm_batch > 0)"):
            buf.line("const dim3 block(32, 32);")
            buf.line("const dim3 grid((mm_n + 31) / 32, (mm_m + 31) / 32, mm_batch);")
            args = [cname(a.name), cname(b.name), cname(c.name), "mm_m", "mm_n", "mm_k", sab, sam, sak, sbb, sbk, sbn]
            buf.line(f"kt_matmul_tiled<{r.ctype(c.dtype)}, {acc}, 32><<<grid, block, 0, stream>>>(")
            buf.line(f"    {', '.join(args)});")
            buf.line("KT_CUDA_CHECK(cudaGetLastError());")


def kokkos_matmul_function(r: CStyleRenderer, buf: CodeBuffer, seg: DeviceExtern,
                           view_type: object) -> list[str]:
    """The matmul as a function ``seg.name(a, b, c)``; returns the argument names."""
    op = seg.op
    a, b, c = matmul_decls(r, op)
    ta, tb = bool(op.attr("trans_a", False)), bool(op.attr("trans_b", False))
    acc = "double" if c.dtype is DType.F64 else "float"
    params = [f"{view_type(a, const=True)} {cname(a.name)}", f"{view_type(b, const=True)} {cname(b.name)}",
              f"{view_type(c)} {cname(c.name)}"]

    def ix(d: ir.Array, first: str, second: str, trans: bool) -> str:
        pair = (second, first) if trans else (first, second)
        return ", ".join((("z",) if d.rank == 3 else ()) + pair)

    buf.line(f"// {seg.name}: matmul {a.name}{'^T' if ta else ''} @ {b.name}{'^T' if tb else ''} -> {c.name} "
             f"({r.where(op.line)}): MDRange over (batch, m, n), the k loop per element")
    with buf.block(r.signature(f"void {seg.name}", params)):
        rc = c.rank
        buf.line(f"const int mm_m = (int){cname(c.name)}.extent({rc - 2});")
        buf.line(f"const int mm_n = (int){cname(c.name)}.extent({rc - 1});")
        buf.line(f"const int mm_k = (int){cname(a.name)}.extent({a.rank - 2 if ta else a.rank - 1});")
        buf.line(f"const int mm_batch = {'(int)' + cname(c.name) + '.extent(0)' if rc == 3 else '1'};")
        rank = "Kokkos::Rank<3, Kokkos::Iterate::Right, Kokkos::Iterate::Right>"
        buf.line(f'Kokkos::parallel_for("{seg.name}", Kokkos::MDRangePolicy<{rank}>({{0, 0, 0}}, '
                 "{mm_batch, mm_m, mm_n}),")
        with buf.indent(), buf.block("KOKKOS_LAMBDA(const int z, const int i, const int j)", closer="});"):
            if rc == 2:
                buf.line("(void)z;")
            buf.line(f"{acc} acc = 0;")
            with buf.block("for (int kk = 0; kk < mm_k; ++kk)"):
                buf.line(f"acc += static_cast<{acc}>({cname(a.name)}({ix(a, 'i', 'kk', ta)})) * "
                         f"static_cast<{acc}>({cname(b.name)}({ix(b, 'kk', 'j', tb)}));")
            buf.line(f"{cname(c.name)}({ix(c, 'i', 'j', False)}) = acc;")
    return [cname(a.name), cname(b.name), cname(c.name)]
