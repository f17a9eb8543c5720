"""Library operations (``ir.Extern``) in the C-style targets.

* CUDA ``matmul``: the generated tiled kernels of ``targets.cuda_matmul`` in
  the same file (fp64 on tensor cores, register-tiled SIMT for the other float
  types, accumulation in float for f32/f16/bf16), every operand read through
  strides (transposes, column-major storage, leading dimensions), no copies, no
  library to link.
* Kokkos ``matmul``: an ``MDRangePolicy`` over (batch, m, n) with the K loop
  per element, accumulation in float (double for f64).
* Convolutions: ``Unsupported`` (they need a library: cuDNN), so the report
  says why; the Triton target calls cuDNN through torch.
"""

from __future__ import annotations

from targets.base import CodeBuffer, Unsupported
from targets.cstyle import CStyleRenderer, cname
from translate import contraction, ir
from translate.ir import DType
from translate.partition import DeviceExtern


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
    return a, b, c


def _strides(r: CStyleRenderer, d: ir.Array, trans: bool) -> tuple[str, str, str]:
    """Element strides (batch, row, column) of ``d``'s logical matrix (transposed if ``trans``)."""
    rows, cols = f"(long long)({r.expr(d.shape[-2])})", f"(long long)({r.expr(d.shape[-1])})"
    row_s, col_s = ("1", rows) if d.layout is ir.Layout.LEFT else (cols, "1")
    if trans:
        row_s, col_s = col_s, row_s
    return (f"{rows} * {cols}" if d.rank > 2 else "0"), row_s, col_s


def cuda_launch_matmul(r: CStyleRenderer, buf: CodeBuffer, seg: DeviceExtern) -> None:
    op = seg.op
    a, b, c = matmul_decls(r, op)
    ta, tb = bool(op.attr("trans_a", False)), bool(op.attr("trans_b", False))
    if a.dtype != b.dtype or b.dtype != c.dtype or not c.dtype.is_float:
        raise r.unsupported(op, "matmul operands of different or non-float types")
    acc = "double" if c.dtype is DType.F64 else "float"
    strides = [*_strides(r, a, ta), *_strides(r, b, tb), *_strides(r, c, False)]
    with buf.block("", opener="{"):
        buf.line(f"// {seg.name}: matmul {a.name}{'^T' if ta else ''} @ {b.name}{'^T' if tb else ''} -> {c.name} "
                 f"({r.where(op.line)}), generated tiled kernel")
        buf.line(f"const int mm_m = {r.expr(c.shape[-2])};")
        buf.line(f"const int mm_n = {r.expr(c.shape[-1])};")
        buf.line(f"const int mm_k = {r.expr(contraction.inner_extent(op, a))};")
        batch = " * ".join(f"({r.expr(e)})" for e in c.shape[:-2]) or "1"
        buf.line(f"const int mm_batch = {batch};  // the batch dims, flattened (row-major)")
        buf.line("// element strides: A (batch, m, k), B (batch, k, n), C (batch, m, n)")
        buf.line(f"const KtMatmulStrides mm_s{{{', '.join(strides)}}};")
        buf.line(f"KT_CUDA_CHECK((kt_matmul<{r.ctype(c.dtype)}, {acc}>({cname(a.name)}, {cname(b.name)}, "
                 f"{cname(c.name)}, mm_m, mm_n, mm_k, mm_batch, mm_s, stream)));")


def kokkos_matmul_function(r: CStyleRenderer, buf: CodeBuffer, seg: DeviceExtern,
                           view_type: object) -> list[str]:
    """The matmul as a function ``seg.name(a, b, c[, k])``; returns the call's arguments."""
    op = seg.op
    a, b, c = matmul_decls(r, op)
    ta, tb = bool(op.attr("trans_a", False)), bool(op.attr("trans_b", False))
    acc = "double" if c.dtype is DType.F64 else "float"
    params = [f"{view_type(a, const=True)} {cname(a.name)}", f"{view_type(b, const=True)} {cname(b.name)}",
              f"{view_type(c)} {cname(c.name)}"]
    k = op.attr("k")
    args = [cname(a.name), cname(b.name), cname(c.name)]
    if isinstance(k, ir.Expr):  # the operands are larger than the product (leading dimensions)
        params.append("const int mm_k")
        args.append(r.expr(k))

    nb = c.rank - 2  # batch dims: one flattened MDRange index z, split back inside

    def ix(d: ir.Array, first: str, second: str, trans: bool) -> str:
        pair = (second, first) if trans else (first, second)
        return ", ".join(tuple(f"z{k}" for k in range(nb) if d.rank > 2) + pair)

    buf.line(f"// {seg.name}: matmul {a.name}{'^T' if ta else ''} @ {b.name}{'^T' if tb else ''} -> {c.name} "
             f"({r.where(op.line)}): MDRange over (batch, m, n), the k loop per element")
    with buf.block(r.signature(f"void {seg.name}", params)):
        rc = c.rank
        buf.line(f"const int mm_m = (int){cname(c.name)}.extent({rc - 2});")
        buf.line(f"const int mm_n = (int){cname(c.name)}.extent({rc - 1});")
        if not isinstance(k, ir.Expr):
            buf.line(f"const int mm_k = (int){cname(a.name)}.extent({a.rank - 2 if ta else a.rank - 1});")
        batch = " * ".join(f"(int){cname(c.name)}.extent({k})" for k in range(nb)) or "1"
        buf.line(f"const int mm_batch = {batch};")
        rank = "Kokkos::Rank<3, Kokkos::Iterate::Right, Kokkos::Iterate::Right>"
        buf.line(f'Kokkos::parallel_for("{seg.name}", Kokkos::MDRangePolicy<{rank}>({{0, 0, 0}}, '
                 "{mm_batch, mm_m, mm_n}),")
        with buf.indent(), buf.block("KOKKOS_LAMBDA(const int z, const int i, const int j)", closer="});"):
            if rc == 2:
                buf.line("(void)z;")
            for k in range(nb):
                inner = " * ".join(f"(int){cname(c.name)}.extent({e})" for e in range(k + 1, nb))
                q = f"z / ({inner})" if inner else "z"
                buf.line(f"const int z{k} = {q}" + (f" % (int){cname(c.name)}.extent({k});" if k else ";"))
            buf.line(f"{acc} acc = 0;")
            with buf.block("for (int kk = 0; kk < mm_k; ++kk)"):
                buf.line(f"acc += static_cast<{acc}>({cname(a.name)}({ix(a, 'i', 'kk', ta)})) * "
                         f"static_cast<{acc}>({cname(b.name)}({ix(b, 'kk', 'j', tb)}));")
            buf.line(f"{cname(c.name)}({ix(c, 'i', 'j', False)}) = acc;")
    return args
