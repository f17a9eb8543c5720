"""Hand-built IR kernels in the shape the PyTorch frontend produces (no frontend
needed): RIGHT-layout arrays bound to forward inputs, parameters and outputs,
i32 dim scalars, fused parallel nests (outer dims first, last dim innermost),
serial inner loops over a row for reductions and normalisations, ``Extern``
matmul and convolution statements, and local intermediate arrays.

Each maker returns the kernel and a reference ``ref(*inputs) -> outputs`` in
torch, so a test can feed the same tensors to both."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from translate import ir
from translate.ir import DType, Intent, Layout, LoopKind

F32, F16, I32 = DType.F32, DType.F16, DType.I32
P, S = LoopKind.PARALLEL, LoopKind.SERIAL
R = Layout.RIGHT


def v(name: str, dtype: DType = I32) -> ir.Var:
    return ir.Var(name, dtype)


def f(value: float, dtype: DType = F32) -> ir.Const:
    return ir.Const(float(value), dtype)


def i(value: int) -> ir.Const:
    return ir.Const(value, I32)


def bop(op: str, lhs: ir.Expr, rhs: ir.Expr) -> ir.BinOp:
    dt = DType.BOOL if op in ("lt", "le", "gt", "ge", "eq", "ne") else lhs.dtype
    return ir.BinOp(op, lhs, rhs, dt)


def add(a: ir.Expr, b: ir.Expr) -> ir.BinOp:
    return bop("add", a, b)


def mul(a: ir.Expr, b: ir.Expr) -> ir.BinOp:
    return bop("mul", a, b)


def sub(a: ir.Expr, b: ir.Expr) -> ir.BinOp:
    return bop("sub", a, b)


def div(a: ir.Expr, b: ir.Expr) -> ir.BinOp:
    return bop("div", a, b)


def fn(name: str, *args: ir.Expr) -> ir.Call:
    return ir.Call(name, tuple(args), args[0].dtype)


def ld(array: str, *index: ir.Expr, dtype: DType = F32) -> ir.Load:
    return ir.Load(array, tuple(index), dtype)


def st(array: str, index: tuple[ir.Expr, ...], value: ir.Expr) -> ir.Assign:
    return ir.Assign(ir.Load(array, index, value.dtype), value)


def let(name: str, value: ir.Expr) -> ir.Assign:
    return ir.Assign(v(name, value.dtype), value)


def loop(var: str, stop: ir.Expr, body: list[ir.Stmt], kind: LoopKind = P,
         reductions: tuple[ir.Reduction, ...] = ()) -> ir.Loop:
    return ir.Loop(var, i(0), stop, i(1), tuple(body), kind, reductions, line=3)


def sigmoid(x: ir.Expr) -> ir.Expr:
    one = f(1.0, x.dtype)
    return div(one, add(one, fn("exp", ir.UnOp("neg", x, x.dtype))))


def tin(name: str, shape: tuple[ir.Expr, ...], k: int, dtype: DType = F32) -> ir.Array:
    return ir.Array(name, dtype, shape, R, Intent.IN, binding=f"input:{k}")


def tparam(name: str, shape: tuple[ir.Expr, ...], key: str) -> ir.Array:
    return ir.Array(name, F32, shape, R, Intent.IN, binding=f"param:{key}")


def tout(name: str, shape: tuple[ir.Expr, ...], k: int = 0, dtype: DType = F32) -> ir.Array:
    return ir.Array(name, dtype, shape, R, Intent.OUT, binding=f"output:{k}")


def tlocal(name: str, shape: tuple[ir.Expr, ...], dtype: DType = F32) -> ir.Array:
    return ir.Array(name, dtype, shape, R, Intent.INOUT)


def dim(name: str, k: int, axis: int) -> ir.Scalar:
    return ir.Scalar(name, I32, binding=f"dim:{k}:{axis}")


def kernel(name: str, params: tuple[ir.Decl, ...], body: tuple[ir.Stmt, ...],
           locals_: tuple[ir.Decl, ...] = ()) -> ir.Kernel:
    return ir.Kernel(name, params, locals_, body, ir.Origin(f"models/{name}.py", 10))


@dataclass(frozen=True)
class Case:
    """A kernel, the sizes of its dims, how to make its inputs and the torch reference."""

    kernel: ir.Kernel
    sizes: dict[str, int]
    inputs: Callable[..., dict[str, object]]  # (torch, generator, sizes) -> {array name: tensor}
    ref: Callable[..., dict[str, object]]  # (torch, inputs) -> {output name: tensor}
    tol: float = 1e-4


M, N, K, B = v("m"), v("n"), v("k"), v("b")


def silu_bias() -> Case:
    """out = x * sigmoid(x) + b, b broadcast over rows."""
    x = ld("x", v("i"), v("j"))
    body = loop("i", M, [loop("j", N, [st("out", (v("i"), v("j")), add(mul(x, sigmoid(x)), ld("bias", v("j"))))])])
    k = kernel("silu_bias", (tin("x", (M, N), 0), tparam("bias", (N,), "bias"), tout("out", (M, N)),
                             dim("m", 0, 0), dim("n", 0, 1)), (body,), (ir.Scalar("i", I32), ir.Scalar("j", I32)))
    return Case(k, {"m": 37, "n": 300},
                lambda t, g, s: {"x": t.randn(s["m"], s["n"], generator=g), "bias": t.randn(s["n"], generator=g)},
                lambda t, a: {"out": a["x"] * t.sigmoid(a["x"]) + a["bias"]})


def softmax() -> Case:
    """Row softmax: max, sum of exp, normalise (three serial loops over the row)."""
    ii, jj = v("i"), v("j")
    x = ld("x", ii, jj)
    mx, s = v("mx", F32), v("s", F32)
    e = fn("exp", sub(x, mx))
    row = [
        let("mx", f(float("-inf"))),
        loop("j", N, [let("mx", fn("max", mx, x))], S),
        let("s", f(0.0)),
        loop("j", N, [let("s", add(s, e))], S),
        loop("j", N, [st("out", (ii, jj), div(e, s))], S),
    ]
    k = kernel("softmax", (tin("x", (M, N), 0), tout("out", (M, N)), dim("m", 0, 0), dim("n", 0, 1)),
               (loop("i", M, row),),
               (ir.Scalar("i", I32), ir.Scalar("j", I32), ir.Scalar("mx", F32), ir.Scalar("s", F32)))
    return Case(k, {"m": 19, "n": 333}, lambda t, g, sz: {"x": 3 * t.randn(sz["m"], sz["n"], generator=g)},
                lambda t, a: {"out": t.softmax(a["x"], dim=-1)})


def layernorm() -> Case:
    """LayerNorm over the last dim with weight and bias (eps 1e-5)."""
    ii, jj = v("i"), v("j")
    x = ld("x", ii, jj)
    s, var, mean, rstd, d = v("s", F32), v("var", F32), v("mean", F32), v("rstd", F32), v("d", F32)
    nf = ir.Cast(F32, N)
    row = [
        let("s", f(0.0)),
        loop("j", N, [let("s", add(s, x))], S),
        let("mean", div(s, nf)),
        let("var", f(0.0)),
        loop("j", N, [let("d", sub(x, mean)), let("var", add(var, mul(d, d)))], S),
        let("rstd", div(f(1.0), fn("sqrt", add(div(var, nf), f(1e-5))))),
        loop("j", N, [st("out", (ii, jj), add(mul(mul(sub(x, mean), rstd), ld("w", jj)), ld("bias", jj)))], S),
    ]
    locals_ = tuple(ir.Scalar(n, F32) for n in ("s", "var", "mean", "rstd", "d"))
    k = kernel("layernorm", (tin("x", (M, N), 0), tparam("w", (N,), "weight"), tparam("bias", (N,), "bias"),
                             tout("out", (M, N)), dim("m", 0, 0), dim("n", 0, 1)),
               (loop("i", M, row),), (ir.Scalar("i", I32), ir.Scalar("j", I32), *locals_))

    def ref(t: object, a: dict[str, object]) -> dict[str, object]:
        return {"out": t.nn.functional.layer_norm(a["x"], (a["x"].shape[-1],), a["w"], a["bias"], 1e-5)}

    return Case(k, {"m": 13, "n": 700},
                lambda t, g, sz: {"x": t.randn(sz["m"], sz["n"], generator=g) + 2,
                                  "w": t.randn(sz["n"], generator=g), "bias": t.randn(sz["n"], generator=g)}, ref)


def linear_relu() -> Case:
    """relu(x @ w.T + bias): Extern matmul (trans_b) then an elementwise tail in place."""
    ii, jj = v("i"), v("j")
    mm = ir.Extern("matmul", ("x", "w"), ("out",), (("trans_a", False), ("trans_b", True)), line=5)
    tail = loop("i", M, [loop("j", N, [
        st("out", (ii, jj), fn("max", add(ld("out", ii, jj), ld("bias", jj)), f(0.0)))])])
    k = kernel("linear_relu", (tin("x", (M, K), 0), tparam("w", (N, K), "weight"), tparam("bias", (N,), "bias"),
                               tout("out", (M, N)), dim("m", 0, 0), dim("k", 0, 1), dim("n", 1, 0)),
               (mm, tail), (ir.Scalar("i", I32), ir.Scalar("j", I32)))
    return Case(k, {"m": 70, "k": 45, "n": 90},
                lambda t, g, s: {"x": t.randn(s["m"], s["k"], generator=g), "w": t.randn(s["n"], s["k"], generator=g),
                                 "bias": t.randn(s["n"], generator=g)},
                lambda t, a: {"out": t.relu(a["x"] @ a["w"].T + a["bias"])})


def _batched_matmul(name: str, trans_b: bool) -> Case:
    """out[b] = a[b] @ c[b] (c^T when ``trans_b``: c stored (B, N, K), read along k), no tail."""
    mm = ir.Extern("matmul", ("a", "c"), ("out",), (("trans_a", False), ("trans_b", trans_b)), line=5)
    c_dims = (N, K) if trans_b else (K, N)
    k = kernel(name, (tin("a", (B, M, K), 0), tin("c", (B, *c_dims), 1), tout("out", (B, M, N)),
                      dim("b", 0, 0), dim("m", 0, 1), dim("k", 0, 2), dim("n", 1, 1 if trans_b else 2)), (mm,))

    def inputs(t: Any, g: Any, s: dict[str, int]) -> dict[str, object]:
        c_shape = (s["n"], s["k"]) if trans_b else (s["k"], s["n"])
        return {"a": t.randn(s["b"], s["m"], s["k"], generator=g), "c": t.randn(s["b"], *c_shape, generator=g)}

    return Case(k, {"b": 3, "m": 33, "k": 40, "n": 65}, inputs,
                lambda t, a: {"out": t.bmm(a["a"], a["c"].transpose(1, 2) if trans_b else a["c"])})


def bmm() -> Case:
    """Batched matmul out[b] = a[b] @ c[b], no tail."""
    return _batched_matmul("bmm", False)


def bmm_nt() -> Case:
    """Batched out[b] = a[b] @ c[b]^T: c read along k (fp32: copied to K x N rows for the Triton tiles)."""
    return _batched_matmul("bmm_nt", True)


def conv_relu_bias() -> Case:
    """relu(conv2d(x, w, padding=1)) + bias[c] (bias broadcast over the channel)."""
    n, ci, co, h, wd = v("n"), v("ci"), v("co"), v("h"), v("wd")
    three = i(3)
    conv = ir.Extern("conv2d", ("x", "w"), ("y",), (("dilation", (1, 1)), ("groups", 1), ("padding", (1, 1)),
                                                     ("stride", (1, 1))), line=6)
    idx = (v("p"), v("q"), v("r"), v("t"))
    tail = loop("p", n, [loop("q", co, [loop("r", h, [loop("t", wd, [
        st("out", idx, add(fn("max", ld("y", *idx), f(0.0)), ld("bias", v("q"))))])])])])
    k = kernel("conv_relu_bias",
               (tin("x", (n, ci, h, wd), 0), tparam("w", (co, ci, three, three), "conv.weight"),
                tparam("bias", (co,), "bias"), tout("out", (n, co, h, wd)),
                dim("n", 0, 0), dim("ci", 0, 1), dim("co", 1, 0), dim("h", 0, 2), dim("wd", 0, 3)),
               (conv, tail), (tlocal("y", (n, co, h, wd)), *(ir.Scalar(x, I32) for x in "pqrt")))
    return Case(k, {"n": 2, "ci": 3, "co": 4, "h": 9, "wd": 11},
                lambda t, g, s: {"x": t.randn(s["n"], s["ci"], s["h"], s["wd"], generator=g),
                                 "w": t.randn(s["co"], s["ci"], 3, 3, generator=g),
                                 "bias": t.randn(s["co"], generator=g)},
                lambda t, a: {"out": t.relu(t.nn.functional.conv2d(a["x"], a["w"], padding=1))
                              + a["bias"][None, :, None, None]})


def local_between() -> Case:
    """t = exp(x) into a local array, then out[i, j] = 2 t[i, j] + t[i, n-1-j] (reads across the row)."""
    ii, jj = v("i"), v("j")
    first = loop("i", M, [loop("j", N, [st("t", (ii, jj), fn("exp", ld("x", ii, jj)))])])
    mirror = sub(sub(N, i(1)), jj)
    second = loop("i", M, [loop("j", N, [
        st("out", (ii, jj), add(mul(f(2.0), ld("t", ii, jj)), ld("t", ii, mirror)))])])
    k = kernel("local_between", (tin("x", (M, N), 0), tout("out", (M, N)), dim("m", 0, 0), dim("n", 0, 1)),
               (first, second), (tlocal("t", (M, N)), ir.Scalar("i", I32), ir.Scalar("j", I32)))
    return Case(k, {"m": 21, "n": 50}, lambda t, g, s: {"x": t.randn(s["m"], s["n"], generator=g)},
                lambda t, a: {"out": 2 * a["x"].exp() + a["x"].exp().flip(-1)})


def matmul_local_tail() -> Case:
    """h = x @ w (a local), out = tanh(h) * 0.5 + erf(h): the tail reads the local, fused."""
    ii, jj = v("i"), v("j")
    mm = ir.Extern("matmul", ("x", "w"), ("h",), (("trans_a", False), ("trans_b", False)), line=5)
    hv = ld("h", ii, jj)
    tail = loop("i", M, [loop("j", N, [st("out", (ii, jj), add(mul(fn("tanh", hv), f(0.5)), fn("erf", hv)))])])
    k = kernel("matmul_local_tail", (tin("x", (M, K), 0), tparam("w", (K, N), "w"), tout("out", (M, N)),
                                     dim("m", 0, 0), dim("k", 0, 1), dim("n", 1, 1)),
               (mm, tail), (tlocal("h", (M, N)), ir.Scalar("i", I32), ir.Scalar("j", I32)))
    return Case(k, {"m": 40, "k": 20, "n": 24},
                lambda t, g, s: {"x": 0.3 * t.randn(s["m"], s["k"], generator=g),
                                 "w": 0.3 * t.randn(s["k"], s["n"], generator=g)},
                lambda t, a: {"out": t.tanh(a["x"] @ a["w"]) * 0.5 + t.erf(a["x"] @ a["w"])})


def half_silu() -> Case:
    """f16 in and out: out = x * sigmoid(x), arithmetic typed f16 in the IR."""
    ii = v("i")
    x = ld("x", ii, dtype=F16)
    k = kernel("half_silu", (tin("x", (N,), 0, F16), tout("out", (N,), 0, F16), dim("n", 0, 0)),
               (loop("i", N, [st("out", (ii,), mul(x, sigmoid(x)))]),), (ir.Scalar("i", I32),))
    return Case(k, {"n": 1000}, lambda t, g, s: {"x": t.randn(s["n"], generator=g).half()},
                lambda t, a: {"out": (a["x"].float() * t.sigmoid(a["x"].float())).half()}, tol=2e-3)


ALL = (silu_bias, softmax, layernorm, linear_relu, bmm, bmm_nt, conv_relu_bias, local_between, matmul_local_tail,
       half_silu)
