"""Library operations (``ir.Extern``) in the Triton target.

* ``matmul``: a generated tiled kernel, ``tl.dot`` over BLOCK_M x BLOCK_N x
  BLOCK_K tiles with masked edges, grouped program order for L2 reuse, the
  batch on program axis 1, transposed operands read through strides (no
  copies; except an fp32 B whose k is contiguous, copied into a K x N row-major
  buffer first: 0.44x of cuBLAS read in place, 0.83x after the copy). fp32
  and fp64 operands use ``input_precision="ieee"`` (true products, no TF32),
  f16/bf16 operands accumulate in fp32. When the nest right after it is a
  pure elementwise tail over exactly its output (``epilogue_ok``), that nest
  is rendered into the kernel's store: the epilogue.
  With ``Schedule.matmul_library`` (the workflows' default) the product is
  instead a library call, ``torch.matmul`` into the output (cuBLAS on a GPU),
  where the operands share one dtype; its tail then runs as its own kernel.
* convolutions: a library call through torch (cuDNN on a GPU), marked in the
  generated code and in ``Rendered.notes``.
"""

from __future__ import annotations

from targets.triton_expr import TL_DTYPE, TORCH_DTYPE, HostExpr, UnsupportedExpr, fold, py_name
from targets.triton_kernels import Lines, _Emitter
from translate import contraction, ir
from translate.irquery import arrays_written
from translate.partition import DeviceExtern, DeviceNest

CONV_KWARGS = ("stride", "padding", "dilation", "groups", "output_padding")
LIBRARY_NOTE = "library call: cuDNN through torch"
MATMUL_LIBRARY_NOTE = "library call: cuBLAS through torch"


def _names(index: tuple[ir.Expr, ...]) -> tuple[str, ...] | None:
    out = []
    for e in index:
        e = fold(e)
        if isinstance(e, ir.Cast):
            e = e.expr
        if not isinstance(e, ir.Var):
            return None
        out.append(e.name)
    return tuple(out)


def _same(a: ir.Expr, b: ir.Expr) -> bool:
    return ir.expr_str(fold(a)) == ir.expr_str(fold(b))


def matmul_dims(kernel: ir.Kernel, op: ir.Extern) -> tuple[ir.Array, ir.Array, ir.Array]:
    """The (a, b, out) declarations of a matmul, checked."""
    if len(op.inputs) != 2 or len(op.outputs) != 1:
        raise UnsupportedExpr(op, "matmul takes two inputs and one output")
    decls = [kernel.param(n) for n in (*op.inputs, *op.outputs)]
    if not all(isinstance(d, ir.Array) for d in decls):
        raise UnsupportedExpr(op, "matmul operands must be arrays")
    a, b, c = decls
    assert isinstance(a, ir.Array) and isinstance(b, ir.Array) and isinstance(c, ir.Array)
    if c.rank < 2 or a.rank < 2 or b.rank < 2:
        raise UnsupportedExpr(op, "matmul operands need at least two dimensions")
    for d in (a, b, c):
        if d.rank > 2 and d.layout is not ir.Layout.RIGHT:
            raise UnsupportedExpr(op, f"batched matmul operand {d.name} must be row-major (RIGHT)")
        if d.rank not in (2, c.rank):
            raise UnsupportedExpr(op, f"matmul operand {d.name} has rank {d.rank}, the output {c.rank}")
    return a, b, c


def epilogue_ok(kernel: ir.Kernel, ext: DeviceExtern, nest: DeviceNest) -> bool:
    """Whether ``nest`` is a pure elementwise tail over exactly the matmul's output:
    its loops run [0, extent) over every output dim in order, its body is
    assignments only, it reads the output only at the element being computed,
    every store is to that element (of any array), and it reads no array it writes."""
    op = ext.op
    if op.op != "matmul" or nest.reductions:
        return False
    try:
        _, _, c = matmul_dims(kernel, op)
    except (UnsupportedExpr, KeyError):
        return False
    if len(nest.loops) != c.rank or c.rank > 3:
        return False
    for lp, extent in zip(nest.loops, c.shape, strict=True):
        if not (_same(lp.start, ir.Const(0, ir.DType.I32)) and _same(lp.step, ir.Const(1, ir.DType.I32))
                and _same(lp.stop, extent)):
            return False
    ident = tuple(lp.var for lp in nest.loops)
    written = set()
    for s in nest.body:
        if not isinstance(s, ir.Assign):
            return False
        if isinstance(s.target, ir.Load):
            if _names(s.target.index) != ident:
                return False
            written.add(s.target.array)
    for s in nest.body:
        for n in ir.walk(s.value):
            if isinstance(n, ir.Load):
                if n.array == c.name and _names(n.index) != ident:
                    return False
                if n.array != c.name and n.array in written:
                    return False
    return True


def output_needed(kernel: ir.Kernel, c: ir.Array, nest: DeviceNest) -> bool:
    """Whether the matmul's output must still be stored when its tail is fused."""
    if any(c.name in arrays_written(s) for s in nest.body):
        return False  # the tail stores it
    if c in kernel.params:
        return True
    loads = sum(1 for s in kernel.body for n in ir.walk(s)
                if (isinstance(n, ir.Load) and n.array == c.name)
                or (isinstance(n, ir.Extern) and c.name in n.inputs))
    inside = sum(1 for s in nest.body for n in ir.walk(s) if isinstance(n, ir.Load) and n.array == c.name)
    return loads > inside


class MatmulEmitter(_Emitter):
    """One matmul Extern (and optionally its fused tail) as a tiled Triton kernel."""

    def __init__(self, kernel: ir.Kernel, ext: DeviceExtern, host: HostExpr, tail: DeviceNest | None) -> None:
        super().__init__(kernel)
        self.ext = ext
        self.host = host
        self.tail = tail

    def emit(self) -> tuple[str, list[str]]:
        op, tail = self.ext.op, self.tail
        a, b, c = matmul_dims(self.kernel, op)
        ta, tb = bool(op.attr("trans_a", False)), bool(op.attr("trans_b", False))
        dtype = a.dtype if a.dtype == b.dtype else ir.DType.F32
        if not dtype.is_float:
            raise UnsupportedExpr(op, f"matmul of {a.dtype.value} x {b.dtype.value}")
        name = self.ext.name
        store_c = tail is None or output_needed(self.kernel, c, tail)
        if tail is not None:  # the output is read through the accumulator; passed only if the tail stores it
            self.add_arrays(tuple(x for x in tail.arrays
                                  if x != c.name or any(c.name in arrays_written(s) for s in tail.body)))
            self.add_scalars(tail.scalars_in)
        mm = ["kt_a", "kt_b", *(["kt_c"] if store_c else []), "kt_m", "kt_n", "kt_k", "kt_sab", "kt_sam",
              "kt_sak", "kt_sbb", "kt_sbk", "kt_sbn"]
        extra = ["BLOCK_M: tl.constexpr", "BLOCK_N: tl.constexpr", "BLOCK_K: tl.constexpr", "GROUP_M: tl.constexpr"]
        out = Lines()
        out("@triton.jit")
        out(f"def {name}({', '.join(mm + self.params + extra)}):")
        out.level = 1
        what = f"{'batched ' if c.rank > 2 else ''}matmul {a.name}{'^T' if ta else ''} @ {b.name}{'^T' if tb else ''}"
        origin = f"{self.kernel.origin.path}:{op.line}" if op.line else str(self.kernel.origin)
        fused = f"; epilogue: the nest {tail.name} fused into the store" if tail is not None else ""
        out(f'"""{what} -> {c.name} ({origin}): tl.dot tiles, fp32 accumulation{fused}."""')
        for p in self.prologue:
            out(p)
        out("pid = tl.program_id(0)")
        out("pid_b = tl.program_id(1).to(tl.int64)")
        out("num_m = tl.cdiv(kt_m, BLOCK_M)")
        out("num_n = tl.cdiv(kt_n, BLOCK_N)")
        out("group = GROUP_M * num_n  # grouped order: consecutive programs share A rows in L2")
        out("first_m = (pid // group) * GROUP_M")
        out("rows_in_group = tl.minimum(num_m - first_m, GROUP_M)")
        out("pid_m = first_m + (pid % group) % rows_in_group")
        out("pid_n = (pid % group) // rows_in_group")
        out("offs_m = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)")
        out("offs_n = pid_n.to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)")
        out("offs_k = tl.arange(0, BLOCK_K)")
        out("a_ptrs = kt_a + pid_b * kt_sab + offs_m[:, None] * kt_sam + offs_k[None, :] * kt_sak")
        out("b_ptrs = kt_b + pid_b * kt_sbb + offs_k[:, None] * kt_sbk + offs_n[None, :] * kt_sbn")
        acc_t = "tl.float64" if dtype is ir.DType.F64 else "tl.float32"
        out(f"acc = tl.zeros([BLOCK_M, BLOCK_N], {acc_t})")
        with out.block("for k0 in range(0, kt_k, BLOCK_K):"):
            out("k_left = kt_k - k0")
            out("a_t = tl.load(a_ptrs, mask=(offs_m[:, None] < kt_m) & (offs_k[None, :] < k_left), other=0.0)")
            out("b_t = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < kt_n), other=0.0)")
            if dtype is ir.DType.F64:
                out('acc = tl.dot(a_t, b_t, acc, input_precision="ieee", out_dtype=tl.float64)  # fp64 products')
            elif dtype is ir.DType.F32 and a.dtype == b.dtype:
                out('acc = tl.dot(a_t, b_t, acc, input_precision="ieee")  # true fp32 products (no TF32)')
            else:
                if a.dtype != b.dtype:
                    out("a_t = a_t.to(tl.float32)")
                    out("b_t = b_t.to(tl.float32)")
                    out('acc = tl.dot(a_t, b_t, acc, input_precision="ieee")')
                else:
                    out("acc = tl.dot(a_t, b_t, acc)  # f16/bf16 products, fp32 accumulation")
            out("a_ptrs += BLOCK_K * kt_sak")
            out("b_ptrs += BLOCK_K * kt_sbk")
        out("c_mask = (offs_m[:, None] < kt_m) & (offs_n[None, :] < kt_n)")
        if c.layout is ir.Layout.LEFT:
            out("c_off = offs_m[:, None] + offs_n[None, :] * kt_m  # column-major output")
        else:
            out("c_off = pid_b * kt_m * kt_n + offs_m[:, None] * kt_n + offs_n[None, :]")
        if store_c:
            out("tl.store(kt_c + c_off, acc, mask=c_mask)")
        if tail is not None:
            self.epilogue(out, c, tail)
        return out.text(), self.launch_lines(a, b, c, ta, tb, dtype, tail)

    def epilogue(self, out: Lines, c: ir.Array, tail: DeviceNest) -> None:
        out(f"# epilogue: {tail.name}, applied to the accumulator tile")
        names = [py_name(lp.var) for lp in tail.loops]
        out(f"{names[-1]} = offs_n[None, :]")
        out(f"{names[-2]} = offs_m[:, None]")
        if len(names) == 3:
            out(f"{names[0]} = pid_b")
        acc = ir.Var("kt_acc", c.dtype)
        if c.dtype in (ir.DType.F16, ir.DType.BF16):  # the unfused code would round through the output
            out(f"kt_acc = acc.to({TL_DTYPE[c.dtype]}).to(tl.float32)")
        else:
            out("kt_acc = acc")
        out("zero_lanes = tl.zeros([BLOCK_M, BLOCK_N], tl.int64)  # broadcasts lane-invariant addresses")
        self.dev.vector = {lp.var for lp in tail.loops} | {"kt_acc"} | set(tail.private)
        self.dev.mask = "c_mask"
        ident = tuple(lp.var for lp in tail.loops)

        def through_acc(e: ir.Expr) -> ir.Expr:
            if isinstance(e, ir.Load) and e.array == c.name and _names(e.index) == ident:
                return acc
            if isinstance(e, ir.Load):
                return e
            if isinstance(e, ir.BinOp):
                return ir.BinOp(e.op, through_acc(e.lhs), through_acc(e.rhs), e.dtype)
            if isinstance(e, ir.UnOp):
                return ir.UnOp(e.op, through_acc(e.operand), e.dtype)
            if isinstance(e, ir.Call):
                return ir.Call(e.fn, tuple(through_acc(x) for x in e.args), e.dtype)
            if isinstance(e, ir.Select):
                return ir.Select(through_acc(e.cond), through_acc(e.if_true), through_acc(e.if_false), e.dtype)
            if isinstance(e, ir.Cast):
                return ir.Cast(e.dtype, through_acc(e.expr))
            return e

        for s in tail.body:
            assert isinstance(s, ir.Assign)
            value = through_acc(s.value)
            if isinstance(s.target, ir.Var):
                dt = self.var_dtype(s.target.name)
                out(f"{py_name(s.target.name)} = {self.value(value, dt, '[BLOCK_M, BLOCK_N]')}")
            else:
                decl = self.kernel.param(s.target.array)
                text = self.value(value, decl.dtype, "[BLOCK_M, BLOCK_N]")
                out(f"tl.store({self.dev.pointer(s.target.array, s.target.index)}, {text}, mask=c_mask)")

    def launch_lines(self, a: ir.Array, b: ir.Array, c: ir.Array, ta: bool, tb: bool, dtype: ir.DType,
                     tail: DeviceNest | None) -> list[str]:
        h = self.host
        ext = self.ext
        m, n = f"({h(c.shape[-2])})", f"({h(c.shape[-1])})"
        k = f"({h(contraction.inner_extent(ext.op, a))})"
        batch = " * ".join(f"({h(s)})" for s in c.shape[:-2]) or "1"

        def strides(d: ir.Array, trans: bool) -> tuple[str, str, str]:
            rows, cols = f"({h(d.shape[-2])})", f"({h(d.shape[-1])})"
            if d.layout is ir.Layout.LEFT:
                r, cc = "1", rows
            else:
                r, cc = cols, "1"
            if trans:
                r, cc = cc, r
            return (f"{rows} * {cols}" if d.rank > 2 else "0"), r, cc

        sab, sam, sak = strides(a, ta)
        sbb, sbk, sbn = strides(b, tb)  # b is K x N: its "row" index is k
        fused = f", epilogue {tail.name} fused" if tail is not None else ""
        lines = [f"# {ext.name}: matmul {a.name}{'^T' if ta else ''} @ {b.name}{'^T' if tb else ''} -> {c.name} "
                 f"(generated tiled Triton kernel{fused})",
                 f"mm_m, mm_n, mm_k, mm_batch = {m}, {n}, {k}, {batch}",
                 "if mm_m > 0 and mm_n > 0 and mm_batch > 0:"]
        if dtype is ir.DType.F64:
            cfg = "64, 64, 16, 4, 4, 3"
        elif dtype is ir.DType.F32:
            cfg = "128, 128, 32, 8, 8, 3"  # fastest ieee tiles found (benchmarks/probes/triton_fp32_matmul.py)
        else:
            cfg = "128, 128, 64, 8, 8, 3"
        lines += [f"    bm, bn, bk, group_m, warps, stages = {cfg}",
                  "    grid = (triton.cdiv(mm_m, bm) * triton.cdiv(mm_n, bn), mm_batch)"]
        b_arg = py_name(b.name)
        if dtype is ir.DType.F32 and a.dtype == b.dtype and sbk == "1" and sbn != "1":
            # fp32 ieee tl.dot reading b along k stays far behind cuBLAS in every tile shape tried; b copied
            # into a K x N row-major buffer first, the copy included, comes much closer
            # (benchmarks/probes/triton_fp32_matmul.py, docs/measurements/tuning-evidence.md)
            lines += [f"    # {b_arg} is read along k: copied into a K x N row-major buffer first (faster fp32 tiles)",
                      f"    kt_{b_arg}_rows = torch.empty((mm_batch, mm_k, mm_n), dtype={b_arg}.dtype, "
                      f"device={b_arg}.device)",
                      f"    kt_{b_arg}_rows.copy_(torch.as_strided({b_arg}, (mm_batch, mm_k, mm_n), "
                      f"({sbb}, {sbk}, {sbn})))"]
            b_arg = f"kt_{b_arg}_rows"
            sbb, sbk, sbn = ("mm_k * mm_n" if b.rank > 2 else "0"), "mm_n", "1"
        store_c = tail is None or output_needed(self.kernel, c, tail)
        args = [py_name(a.name), b_arg, *([py_name(c.name)] if store_c else []), "mm_m", "mm_n", "mm_k",
                sab, sam, sak, sbb, sbk, sbn, *self.launch_args]
        lines.append(f"    {ext.name}[grid]({', '.join(args)}, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=group_m,")
        lines.append("        num_warps=warps, num_stages=stages)")
        return lines


def conv_lines(kernel: ir.Kernel, ext: DeviceExtern, host: HostExpr) -> list[str]:
    """A convolution as a library call through torch (cuDNN on a GPU)."""
    op = ext.op
    if len(op.inputs) not in (2, 3) or len(op.outputs) != 1:
        raise UnsupportedExpr(op, f"{op.op} takes (x, weight[, bias]) and one output")
    unknown = [k for k, _ in op.attrs if k not in CONV_KWARGS]
    if unknown:
        raise UnsupportedExpr(op, f"{op.op}: unknown attributes {', '.join(unknown)}")
    decls = [kernel.param(nm) for nm in (*op.inputs, *op.outputs)]
    views = []
    for d in decls:
        if not isinstance(d, ir.Array) or d.layout is not ir.Layout.RIGHT:
            raise UnsupportedExpr(op, f"{op.op} operand {d.name} must be a row-major array")
        views.append(f"{py_name(d.name)}.view({', '.join(host(s) for s in d.shape)})" if d.rank > 1
                     else py_name(d.name))
    x, w = views[0], views[1]
    bias = views[2] if len(op.inputs) == 3 else "None"
    kwargs = ", ".join(f"{k}={v!r}" for k, v in op.attrs)
    out = decls[-1]
    origin = f"{kernel.origin.path}:{op.line}" if op.line else str(kernel.origin)
    return [f"# {ext.name}: {op.op} at {origin} -- {LIBRARY_NOTE} (torch.nn.functional.{op.op}), "
            "not a generated kernel",
            f"{py_name(out.name)}.copy_(torch.nn.functional.{op.op}({x}, {w}, {bias}"
            f"{', ' + kwargs if kwargs else ''}).to({TORCH_DTYPE[out.dtype]}).reshape(-1))"]


def _matrix_view(d: ir.Array, host: HostExpr, trans: bool) -> str:
    """The logical matrix (or batch of matrices) of operand ``d`` as a torch view of
    its flat tensor: column-major storage is the transpose of a row-major view."""
    dims = [host(x) for x in d.shape]
    if d.layout is ir.Layout.LEFT:
        text = f"{py_name(d.name)}.view({dims[1]}, {dims[0]}).mT"
    else:
        text = f"{py_name(d.name)}.view({', '.join(dims)})"
    return f"{text}.mT" if trans else text


def library_matmul_ok(kernel: ir.Kernel, op: ir.Extern) -> bool:
    """Whether the matmul can be one ``torch.matmul`` call into its output."""
    try:
        a, b, c = matmul_dims(kernel, op)
    except (UnsupportedExpr, KeyError):
        return False
    return a.dtype == b.dtype == c.dtype and c.dtype.is_float


def library_matmul_lines(kernel: ir.Kernel, ext: DeviceExtern, host: HostExpr) -> list[str]:
    """A matmul as ``torch.matmul`` with ``out=`` the output's storage (cuBLAS on a GPU).
    A column-major output is written as its transpose: C^T = B^T A^T."""
    op = ext.op
    a, b, c = matmul_dims(kernel, op)
    ta, tb = bool(op.attr("trans_a", False)), bool(op.attr("trans_b", False))
    av, bv = _matrix_view(a, host, ta), _matrix_view(b, host, tb)
    dims = [host(x) for x in c.shape]
    if isinstance(op.attr("k"), ir.Expr):  # operands larger than the product (leading dimensions)
        k = host(contraction.inner_extent(op, a))
        av, bv = f"{av}[..., :{dims[-2]}, :{k}]", f"{bv}[..., :{k}, :{dims[-1]}]"
    if c.layout is ir.Layout.LEFT:
        call = f"torch.matmul({bv}.mT, {av}.mT, out={py_name(c.name)}.view({dims[1]}, {dims[0]}))"
    else:
        call = f"torch.matmul({av}, {bv}, out={py_name(c.name)}.view({', '.join(dims)}))"
    origin = f"{kernel.origin.path}:{op.line}" if op.line else str(kernel.origin)
    what = f"{a.name}{'^T' if ta else ''} @ {b.name}{'^T' if tb else ''} -> {c.name}"
    return [f"# {ext.name}: matmul {what} at {origin} -- {MATMUL_LIBRARY_NOTE} (torch.matmul), "
            "not a generated kernel",
            f"if {py_name(c.name)}.numel() > 0:",
            f"    {call}"]
