"""Triton target: hand-built kernels rendered, imported and run under Triton's
interpreter on CPU tensors, compared with numpy."""

from __future__ import annotations

import os
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from targets.base import Unsupported, get_renderer  # noqa: E402
from targets.defaults import TRITON  # noqa: E402
from tests import kt_hand_kernels as hk  # noqa: E402
from tests.kt_modules import triton_module  # noqa: E402
from translate import ir  # noqa: E402
from translate.ir import DType, Intent, Layout, LoopKind  # noqa: E402
from translate.schedule import Schedule  # noqa: E402

F64, I32, CHAR = DType.F64, DType.I32, DType.CHAR
ON_GPU = os.environ.get("TRITON_INTERPRET") != "1"
DEV = "cuda" if ON_GPU else "cpu"

# ------------------------------------------------------------------ IR helpers


def c(v: Any, dt: DType | None = None) -> ir.Const:
    if dt is None:
        dt = CHAR if isinstance(v, str) else DType.BOOL if isinstance(v, bool) else I32 if isinstance(v, int) else F64
    return ir.Const(v, dt)


def v(name: str, dt: DType = I32) -> ir.Var:
    return ir.Var(name, dt)


def b(op: str, lhs: ir.Expr, rhs: ir.Expr, dt: DType | None = None) -> ir.BinOp:
    if dt is None:
        dt = DType.BOOL if op in ("lt", "le", "gt", "ge", "eq", "ne", "and", "or") else lhs.dtype
    return ir.BinOp(op, lhs, rhs, dt)


def ld(a: str, *idx: ir.Expr, dt: DType = F64) -> ir.Load:
    return ir.Load(a, tuple(idx), dt)


def call(fn: str, *args: ir.Expr, dt: DType = F64) -> ir.Call:
    return ir.Call(fn, tuple(args), dt)


def loop(var: str, start: ir.Expr | int, stop: ir.Expr | int, body: tuple[ir.Stmt, ...], step: ir.Expr | int = 1,
         par: bool = True, red: tuple[ir.Reduction, ...] = ()) -> ir.Loop:
    def e(x: ir.Expr | int) -> ir.Expr:
        return c(x) if isinstance(x, int) else x

    return ir.Loop(var, e(start), e(stop), e(step), body, LoopKind.PARALLEL if par else LoopKind.SERIAL, red,
                   line=10)


def arr(name: str, *shape: ir.Expr | int, dt: DType = F64, intent: Intent = Intent.IN,
        layout: Layout = Layout.LEFT) -> ir.Array:
    return ir.Array(name, dt, tuple(c(s) if isinstance(s, int) else s for s in shape), layout, intent)


def sc(name: str, dt: DType = I32, intent: Intent = Intent.IN) -> ir.Scalar:
    return ir.Scalar(name, dt, intent)


def kern(name: str, params: tuple[ir.Decl, ...], body: tuple[ir.Stmt, ...], locals_: tuple[ir.Decl, ...] = (),
         result: DType | None = None) -> ir.Kernel:
    return ir.Kernel(name, params, locals_, body, ir.Origin(f"src/{name}.f", 1), result)


def load_module(kernel: ir.Kernel, tmp_path: Path, schedule: Schedule | None = None) -> tuple[ModuleType, str]:
    rendered = get_renderer("triton", schedule).render(kernel, schedule)
    assert rendered.entry == f"triton/{kernel.name}_triton.py" and rendered.symbol == kernel.name
    return triton_module(rendered, tmp_path, f"kt_{kernel.name}_{abs(hash(tmp_path))}"), rendered.source


def t(a: np.ndarray) -> Any:
    return torch.from_numpy(np.array(a, copy=True)).to(DEV)  # a copy: numpy references stay intact


def nan_like(n: int, dtype: Any = np.float64) -> Any:
    return t(np.full(n, np.nan, dtype=dtype))


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


# ------------------------------------------------------------------- kernels


def axpy_kernel(dt: DType = F64) -> ir.Kernel:
    n, incx, incy, da = v("n"), v("incx"), v("incy"), v("da", dt)
    ext = lambda inc: b("add", c(1), b("mul", b("sub", n, c(1)), call("abs", inc, dt=I32)))  # noqa: E731
    ix, iy, i = v("ix"), v("iy"), v("i")
    unit = loop("i", 0, n, (ir.Assign(ld("dy", i, dt=dt), b("add", ld("dy", i, dt=dt),
                                                              b("mul", da, ld("dx", i, dt=dt)))),))
    strided = loop("i", 0, n, (ir.Assign(
        ld("dy", b("add", iy, b("mul", i, incy)), dt=dt),
        b("add", ld("dy", b("add", iy, b("mul", i, incy)), dt=dt),
          b("mul", da, ld("dx", b("add", ix, b("mul", i, incx)), dt=dt)))),))
    neg_start = lambda inc: b("mul", b("add", ir.UnOp("neg", n, I32), c(1)), inc)  # noqa: E731
    body = (
        ir.If(b("le", n, c(0)), (ir.Return(),)),
        ir.If(b("eq", da, c(0.0, dt)), (ir.Return(),)),
        ir.If(b("and", b("eq", incx, c(1)), b("eq", incy, c(1))), (unit,), (
            ir.Assign(ix, c(0)), ir.Assign(iy, c(0)),
            ir.If(b("lt", incx, c(0)), (ir.Assign(ix, neg_start(incx)),)),
            ir.If(b("lt", incy, c(0)), (ir.Assign(iy, neg_start(incy)),)),
            strided)),
    )
    params = (sc("n"), sc("da", dt), arr("dx", ext(incx), dt=dt), sc("incx"),
              arr("dy", ext(incy), dt=dt, intent=Intent.INOUT), sc("incy"))
    return kern("daxpy" if dt is F64 else "saxpy", params, body, (sc("ix"), sc("iy")))


def np_axpy(n: int, da: float, x: np.ndarray, incx: int, y: np.ndarray, incy: int) -> np.ndarray:
    y = y.copy()
    if n <= 0 or da == 0:
        return y
    ix = 0 if incx >= 0 else (-n + 1) * incx
    iy = 0 if incy >= 0 else (-n + 1) * incy
    for i in range(n):
        y[iy + i * incy] += da * x[ix + i * incx]
    return y


@pytest.mark.parametrize("incx,incy", [(1, 1), (2, -3), (-1, 2)])
def test_daxpy_strides_and_quick_return(tmp_path: Path, incx: int, incy: int) -> None:
    mod, src = load_module(axpy_kernel(), tmp_path)
    assert "def daxpy(n: int, da: float, dx: torch.Tensor, incx: int, dy: torch.Tensor, incy: int, *, " \
           "block: int = 256) -> dict[str, object]:" in src
    assert "@triton.jit" in src and "def daxpy_loop1(" in src and "def daxpy_loop2(" in src
    # fp64 scalars are annotated parameters (a plain Python float would arrive as fp32): no device copy
    assert "da: tl.float64" in src and "float(da)" in src and "torch.tensor(" not in src
    r = rng(1)
    for n in (1000, 37):
        x = r.standard_normal(1 + (n - 1) * abs(incx))
        y = r.standard_normal(1 + (n - 1) * abs(incy))
        da = float(r.standard_normal())
        ty = t(y)
        assert mod.daxpy(n, da, t(x), incx, ty, incy, block=64) == {}
        np.testing.assert_allclose(ty.cpu().numpy(), np_axpy(n, da, x, incx, y, incy), rtol=1e-14, atol=1e-14)
    ty = t(y)
    mod.daxpy(0, 2.0, t(x), incx, ty, incy)  # quick return: nothing written
    mod.daxpy(n, 0.0, t(x), incx, ty, incy)
    np.testing.assert_array_equal(ty.cpu().numpy(), y)


def test_saxpy_f32(tmp_path: Path) -> None:
    mod, src = load_module(axpy_kernel(DType.F32), tmp_path)
    assert "fargs" not in src  # f32 scalars travel as Python floats (fp32 in Triton)
    r = rng(2)
    n = 500
    x, y = r.standard_normal(n).astype(np.float32), r.standard_normal(n).astype(np.float32)
    ty = t(y)
    mod.saxpy(n, 1.5, t(x), 1, ty, 1)
    assert ty.dtype == torch.float32
    np.testing.assert_allclose(ty.cpu().numpy(), y + np.float32(1.5) * x, rtol=1e-6, atol=1e-6)  # GPU: FMA


def reduction_kernel(name: str, op: str, init: float, contrib: ir.Expr, local: str) -> ir.Kernel:
    n = v("n")
    acc = v(local, F64)
    update = b(op, acc, contrib) if op in ("add", "mul") else call(op, acc, contrib)
    body = (
        ir.Assign(acc, c(init)), ir.Assign(v(name, F64), c(0.0)),
        ir.If(b("le", n, c(0)), (ir.Return(),)),
        loop("i", 0, n, (ir.Assign(acc, update),), red=(ir.Reduction(local, op, F64),)),
        ir.Assign(v(name, F64), acc),
    )
    params = (sc("n"), arr("dx", v("n")), arr("dy", v("n")))
    return kern(name, params, body, (sc(local, F64), sc(name, F64)), result=F64)


def test_ddot_function_result(tmp_path: Path) -> None:
    i = v("i")
    k = reduction_kernel("ddot", "add", 0.0, b("mul", ld("dx", i), ld("dy", i)), "dtemp")
    mod, src = load_module(k, tmp_path)
    assert "tl.sum(dtemp, axis=0)" in src and "dtemp_part" in src
    r = rng(3)
    for n in (1, 255, 256, 1000):
        x, y = r.standard_normal(n), r.standard_normal(n)
        out = mod.ddot(n, t(x), t(y), block=128)
        assert set(out) == {"result"}
        assert float(out["result"]) == pytest.approx(float(x @ y), rel=1e-12, abs=1e-12)
    assert mod.ddot(0, t(x), t(y)) == {"result": 0.0}


def test_stencil_2d_halo_left(tmp_path: Path) -> None:
    n, m, i, j = v("n"), v("m"), v("i"), v("j")
    shape = (b("add", n, c(2)), b("add", m, c(2)))
    a = lambda di, dj: ld("a", b("add", i, c(di)), b("add", j, c(dj)))  # noqa: E731
    body = (loop("j", 1, b("add", m, c(1)), (loop("i", 1, b("add", n, c(1)), (ir.Assign(
        ld("bb", i, j), b("mul", c(0.25), b("add", b("add", a(-1, 0), a(1, 0)), b("add", a(0, -1), a(0, 1))))),
    ),),)),)
    params = (sc("n"), sc("m"), ir.Array("a", F64, shape, Layout.LEFT, Intent.IN, (c(0), c(0))),
              ir.Array("bb", F64, shape, Layout.LEFT, Intent.INOUT, (c(0), c(0))))
    mod, src = load_module(kern("stencil", params, body), tmp_path)
    # the first (contiguous) index walks the lanes, split per lane in int32 (the program's start once, in int64)
    assert "i = 1 + ((kt_lane0 % i_trip).to(tl.int64))  # fastest" in src
    assert "kt_lane0 = (kt_first % i_trip).to(tl.int32) + tl.arange(0, BLOCK)" in src
    r = rng(5)
    for nn, mm in ((30, 20), (7, 41)):
        A = r.standard_normal((nn + 2, mm + 2))
        B = np.full((nn + 2, mm + 2), -7.0)
        tb = t(B.ravel(order="F"))
        mod.stencil(nn, mm, t(A.ravel(order="F")), tb, block=32)
        want = B.copy()
        want[1:-1, 1:-1] = 0.25 * ((A[:-2, 1:-1] + A[2:, 1:-1]) + (A[1:-1, :-2] + A[1:-1, 2:]))
        np.testing.assert_allclose(tb.cpu().numpy().reshape((nn + 2, mm + 2), order="F"), want, rtol=1e-14)


def fsum_kernel() -> ir.Kernel:
    """field_summary_like's shape (tests of its walk below and in test_triton_compile)."""
    nx, ny, j, k, kv, jv = v("nx"), v("ny"), v("j"), v("k"), v("kv"), v("jv")
    s, cm, mass, ke, ie, lo = v("s", F64), v("cm", F64), v("mass", F64), v("ke", F64), v("ie", F64), v("lo", F64)
    reds = (ir.Reduction("mass", "add", F64), ir.Reduction("ke", "add", F64), ir.Reduction("ie", "add", F64),
            ir.Reduction("lo", "min", F64))
    sq = lambda a: b("mul", ld(a, jv, kv), ld(a, jv, kv))  # noqa: E731
    corner = loop("kv", k, b("add", k, c(2)), (loop("jv", j, b("add", j, c(2)), (
        ir.Assign(s, b("add", s, b("mul", c(0.25), b("add", sq("xv"), sq("yv"))))),), red=(reds[0],)),),
        red=(reds[0],))
    body = (
        ir.Assign(mass, c(0.0)), ir.Assign(ke, c(0.0)), ir.Assign(ie, c(0.0)), ir.Assign(lo, c(1e300)),
        loop("k", 0, ny, (loop("j", 0, nx, (
            ir.Assign(s, c(0.0)), corner,
            ir.Assign(cm, b("mul", b("mul", ld("vlm", j, k), ld("den", j, k)), v("first", F64))),
            ir.Assign(mass, b("add", mass, cm)),
            ir.Assign(ke, b("add", ke, b("mul", b("mul", cm, v("run", F64)), s))),
            ir.Assign(ie, b("add", ie, b("div", cm, ld("den", j, k)))),
            ir.Assign(lo, call("min", lo, b("div", cm, ld("den", j, k)))),
        ), red=reds),), red=reds),
    )
    nodes = (b("add", nx, c(1)), b("add", ny, c(1)))
    params = (sc("nx"), sc("ny"), sc("first", F64), sc("run", F64), arr("vlm", nx, ny), arr("den", nx, ny),
              arr("xv", *nodes), arr("yv", *nodes), sc("mass", F64, Intent.OUT), sc("ke", F64, Intent.OUT),
              sc("ie", F64, Intent.OUT), sc("lo", F64, Intent.OUT))
    locals_ = (sc("s", F64), sc("cm", F64), sc("kv"), sc("jv"))
    return kern("fsum", params, body, locals_)


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize(("run_length", "late"), [(0, False), (1, False), (5, False), (0, True), (5, True)])
def test_2d_walk_with_reductions_and_unrolled_corners(tmp_path: Path, run_length: int, late: bool) -> None:
    """field_summary_like's shape: sums over the cells of a 2-D grid, one of them over the squared
    velocities at the cell's 2 x 2 corners (inner loops over kv, jv). Walked by rows (the default, runs
    of 16; and runs of 5 over 7 and 20 rows) the corner loops are written out and their reads of the
    node rows k and k+1 come from register queues, one partial per program; a point per lane
    (``run_length=1``) keeps the loops. Scalars named like the walk's locals (``first``, ``run``) keep their values.
    ``Schedule.masks_after_walk``: scalars are assigned without guards, the last run of a column walks only the rows
    there are, and the lanes past the fast loop (whose zero loads make ``cm / den`` NaN) leave the sums after
    the walk."""
    mod, src = load_module(fsum_kernel(), tmp_path, Schedule(run_length=run_length, masks_after_walk=late))
    if run_length == 1:
        assert "tl.static_range(2)" in src and "PLANES" not in src
        assert "if first + PLANES" not in src  # late masks change walks only
    else:
        assert "for run in range(PLANES):" in src and "tl.static_range" not in src
        assert f"PLANES={run_length or 16})" in src and "lanes = block * 2" in src  # Triton's 4 warps
        walk = src[src.index("for run in range(PLANES):"):src.index("def fsum(")]
        assert walk.count("tl.load(xv + ") == 2 * (1 + late) and walk.count("tl.load(yv + ") == 2 * (1 + late)
        assert "kt_xv_kp1, = kt_xv_kp1" not in src and "kt_xv_k0 = kt_xv_kp1" in src
        assert "first_" in src and "run_" in src
        assert ("if first + PLANES <= k_trip:" in src) == late and ("in_plane = mask\n" in src) == late
        assert ("mass = tl.where(mask, mass, 0.0)" in src) == late
        assert ('lo = tl.where(mask, lo, float("inf"))' in src) == late
        assert ("for run in range(0, (k_trip - first).to(tl.int32)):" in src) == late
        assert ("mass = (mass + cm)" in walk) == late
        assert bool(re.search(r"^\s*(s|cm|mass|ke|ie|lo) = tl\.where\(in_plane", walk, re.M)) != late
    r = rng(11)
    for n1, n2 in ((37, 7), (9, 20), (40, 32)):
        vlm, den = r.random((n1, n2)), r.random((n1, n2)) + 0.5
        xv, yv = r.standard_normal((n1 + 1, n2 + 1)), r.standard_normal((n1 + 1, n2 + 1))
        arrays = [t(x.ravel(order="F")) for x in (vlm, den, xv, yv)]
        got = mod.fsum(n1, n2, 1.5, 0.5, *arrays, 0.0, 0.0, 0.0, 0.0, block=16)
        node = xv * xv + yv * yv
        vs = 0.25 * (node[:-1, :-1] + node[1:, :-1] + node[:-1, 1:] + node[1:, 1:])
        cell = vlm * den * 1.5
        assert float(got["mass"]) == pytest.approx(float(cell.sum()), rel=1e-12)
        assert float(got["ke"]) == pytest.approx(float((cell * 0.5 * vs).sum()), rel=1e-12)
        assert float(got["ie"]) == pytest.approx(float((cell / den).sum()), rel=1e-12)
        assert float(got["lo"]) == pytest.approx(float((cell / den).min()), rel=1e-15)


@pytest.mark.parametrize("run_length", [0, 1, 3])
def test_collapsed_3d_mixed_layouts(tmp_path: Path, run_length: int) -> None:
    """A 3-D nest as a flat lane index (``run_length=1``) and walked by planes (``targets.planes``:
    the default 2-row tiles walking 8 planes, more than the 7 there are, and runs of 3, the last cut short)."""
    n1, n2, n3, i, j, k = v("n1"), v("n2"), v("n3"), v("i"), v("j"), v("k")
    body = (loop("k", 0, n3, (loop("j", 0, n2, (loop("i", 0, n1, (ir.Assign(
        ld("cc", i, j, k), b("add", b("mul", v("alpha", F64), ld("a", i, j, k)), ld("bt", k, j, i))),),),),),),),)
    params = (sc("n1"), sc("n2"), sc("n3"), sc("alpha", F64), arr("a", n1, n2, n3),
              arr("bt", n3, n2, n1, layout=Layout.RIGHT), arr("cc", n1, n2, n3, intent=Intent.OUT))
    sch = Schedule(block_rows=2 if run_length else 0, run_length=run_length)
    mod, src = load_module(kern("axpb3", params, body), tmp_path, sch)
    if run_length == 1:  # every access in memory order, bt's too (its RIGHT layout reversed): translate.flat
        assert "k_trip" in src and "j_trip" in src and "kt_q" not in src
        assert "tl.load(bt + offs," in src and "tl.store(cc + offs," in src
        assert f"lanes = block * {TRITON.flat_width}" in src  # addressed by its flat offsets alone: wider programs
    else:
        assert "for run in range(PLANES):" in src and "in_plane = mask & (zero_lanes + k_k < k_trip)" in src
        assert f"PLANES={run_length or 8})" in src and "rows = min(2, block)" in src
    r = rng(6)
    a1, a2, a3 = 5, 6, 7
    A = r.standard_normal((a1, a2, a3))
    BT = r.standard_normal((a3, a2, a1))
    tc = nan_like(a1 * a2 * a3)
    mod.axpb3(a1, a2, a3, 0.1, t(A.ravel(order="F")), t(BT.ravel(order="C")), tc, block=16)
    want = 0.1 * A + BT.transpose(2, 1, 0)
    got = tc.cpu().numpy().reshape((a1, a2, a3), order="F")
    np.testing.assert_allclose(got, want, rtol=1e-15, atol=1e-15)  # the GPU contracts a*x+b into an FMA


@pytest.mark.parametrize("extent", ["n2", "m2"])
def test_flat_index_only_where_offsets_follow_it(tmp_path: Path, extent: str) -> None:
    """translate.flat: ``c(i, j) = a(j, i) + b(i, j)`` addresses c at the flat lane index; a (read
    transposed) and b (declared (m1, m2), its leading extent not the loop's, when ``extent`` is m2)
    keep the loop variables rebuilt from it; the results are those of the source either way."""
    n1, n2, i, j = v("n1"), v("n2"), v("i"), v("j")
    body = (loop("j", 0, n2, (loop("i", 0, n1, (ir.Assign(
        ld("c", i, j), b("add", ld("a", j, i), ld("b", i, j))),),),),),)
    b_shape = (n1, n2) if extent == "n2" else (v("m1"), v("m2"))
    params = (sc("n1"), sc("n2"), sc("m1"), sc("m2"), arr("a", n2, n1), arr("b", *b_shape),
              arr("c", n1, n2, intent=Intent.OUT))
    mod, src = load_module(kern("addt", params, body), tmp_path, Schedule(run_length=1))
    assert "tl.store(c + offs," in src and "kt_q0 = kt_first // i_trip" in src
    assert "tl.load(a + j + n2 * (i)," in src and "lanes = block" not in src  # i and j rebuilt: one block
    assert ("tl.load(b + offs," in src) == (extent == "n2")
    r = rng(7)
    a1, a2 = 5, 6
    m1, m2 = (a1, a2) if extent == "n2" else (a1 + 2, a2 + 3)
    A, B = r.standard_normal((a2, a1)), r.standard_normal((m1, m2))
    tc = nan_like(a1 * a2)
    mod.addt(a1, a2, m1, m2, t(A.ravel(order="F")), t(B.ravel(order="F")), tc, block=16)
    want = A.T + B[:a1, :a2]
    np.testing.assert_allclose(tc.cpu().numpy().reshape((a1, a2), order="F"), want, rtol=1e-15, atol=1e-15)


def lap7_kernel() -> ir.Kernel:
    """A 7-point Laplacian over a 3-D grid with a halo of one."""
    n1, n2, n3, i, j, k = v("n1"), v("n2"), v("n3"), v("i"), v("j"), v("k")
    u = lambda di, dj, dk: ld("u", b("add", i, c(di)), b("add", j, c(dj)), b("add", k, c(dk)))  # noqa: E731
    around = b("add", b("add", b("add", u(0, 1, 1), u(2, 1, 1)), b("add", u(1, 0, 1), u(1, 2, 1))),
               b("add", u(1, 1, 0), u(1, 1, 2)))
    body = (loop("k", 0, n3, (loop("j", 0, n2, (loop("i", 0, n1, (ir.Assign(
        ld("w", i, j, k), b("sub", around, b("mul", c(6.0), u(1, 1, 1)))),),),),),),),)
    two = lambda x: b("add", x, c(2))  # noqa: E731
    params = (sc("n1"), sc("n2"), sc("n3"), arr("u", two(n1), two(n2), two(n3)),
              arr("w", n1, n2, n3, intent=Intent.OUT))
    return kern("lap7", params, body)


@pytest.mark.parametrize(("queued", "late"), [(True, False), (False, False), (True, True)])
def test_3d_stencil_walk_with_and_without_its_plane_queue(tmp_path: Path, queued: bool, late: bool) -> None:
    """A 7-point stencil walked by planes: u's centre column at k-1, k, k+1 from a register queue
    (one new load per plane, the default; ``Schedule.register_queues`` False loads every plane); runs of 3 planes over 7
    and 8 planes (the last run cut short), interpreter numbers against numpy. ``Schedule.masks_after_walk``: whole
    runs and the last one (only the planes there are) written apart, stores under the lane mask."""
    sch = Schedule(run_length=3, register_queues=queued, masks_after_walk=late)
    mod, src = load_module(lap7_kernel(), tmp_path, sch)
    assert ("kt_u_km0" not in src) and (("kt_u_k0, kt_u_kp1 = kt_u_kp1, kt_u_kp2" in src) == queued)
    walk = src[src.index("for run in range(PLANES):"):src.index("def lap7(")]
    # the queue: one of the three centre loads; late masks: the loop twice
    assert walk.count("tl.load(u + ") == (5 if queued else 7) * (1 + late)
    assert walk.count("mask=in_plane)") == 1 + late and ("if first + PLANES <= k_trip:" in src) == late
    if queued:
        assert "live = mask & (zero_lanes + first < k_trip)" in src and "mask=live" in src
    r = rng(8)
    for a1, a2, a3 in ((5, 4, 7), (9, 3, 8)):
        U = r.standard_normal((a1 + 2, a2 + 2, a3 + 2))
        tw = nan_like(a1 * a2 * a3)
        mod.lap7(a1, a2, a3, t(U.ravel(order="F")), tw, block=16)
        want = (U[:-2, 1:-1, 1:-1] + U[2:, 1:-1, 1:-1] + U[1:-1, :-2, 1:-1] + U[1:-1, 2:, 1:-1]
                + U[1:-1, 1:-1, :-2] + U[1:-1, 1:-1, 2:] - 6.0 * U[1:-1, 1:-1, 1:-1])
        got = tw.cpu().numpy().reshape((a1, a2, a3), order="F")
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


def test_serial_recurrence_and_negative_step(tmp_path: Path) -> None:
    n, i, s = v("n"), v("i"), v("s", F64)
    fwd = loop("i", 1, n, (
        ir.Assign(ld("x", i), b("add", b("mul", ld("x", b("sub", i, c(1))), v("cc", F64)), ld("y", i))),
        ir.Assign(s, b("add", s, ld("x", i))),
    ), par=False)
    back = loop("i", b("sub", n, c(2)), c(-1), (
        ir.Assign(ld("x", i), b("sub", ld("x", i), b("mul", c(0.5), ld("x", b("add", i, c(1)))))),
    ), step=-1, par=False)
    body = (ir.Assign(s, c(0.0)), fwd, back, ir.Assign(v("rec", F64), s))
    params = (sc("n"), sc("cc", F64), arr("x", n, intent=Intent.INOUT), arr("y", n))
    mod, src = load_module(kern("rec", params, body, (sc("s", F64), sc("rec", F64)), result=F64), tmp_path)
    assert "rec_serial1[(1,)]" in src and "s_out" in src and "for i_k in range(0, " in src
    r = rng(7)
    nn, cc = 50, 0.9
    x, y = r.standard_normal(nn), r.standard_normal(nn)
    want, acc = x.copy(), 0.0
    for k in range(1, nn):
        want[k] = want[k - 1] * cc + y[k]
        acc += want[k]
    for k in range(nn - 2, -1, -1):
        want[k] -= 0.5 * want[k + 1]
    tx = t(x)
    out = mod.rec(nn, cc, tx, t(y))
    np.testing.assert_allclose(tx.cpu().numpy(), want, rtol=1e-13)
    assert float(out["result"]) == pytest.approx(acc, rel=1e-13)


def test_parallel_negative_and_strided_steps(tmp_path: Path) -> None:
    n, i = v("n"), v("i")
    rev = loop("i", b("sub", n, c(1)), c(-1), (ir.Assign(ld("y", i), ld("x", b("sub", b("sub", n, c(1)), i))),),
               step=-1)
    odd = loop("i", 1, n, (ir.Assign(ld("z", i), b("mul", c(2.0), ld("x", i))),), step=2)
    params = (sc("n"), arr("x", n), arr("y", n, intent=Intent.OUT), arr("z", n, intent=Intent.INOUT))
    mod, src = load_module(kern("steps", params, (rev, odd)), tmp_path)
    assert "_trip(" in src
    r = rng(8)
    nn = 301
    x = r.standard_normal(nn)
    ty, z = nan_like(nn), np.zeros(nn)
    tz = t(z)
    mod.steps(nn, t(x), ty, tz, block=32)
    np.testing.assert_array_equal(ty.cpu().numpy(), x[::-1])
    z[1::2] = 2 * x[1::2]
    np.testing.assert_array_equal(tz.cpu().numpy(), z)


def dgemv_kernel() -> ir.Kernel:
    m, n, i, j, lda = v("m"), v("n"), v("i"), v("j"), v("lda")
    tr, temp, alpha, beta = v("trans", CHAR), v("temp", F64), v("alpha", F64), v("beta", F64)
    acc = lambda k: ir.Assign(temp, b("add", temp, b("mul", ld("a", i, j), ld("x", k))))  # noqa: E731
    nkern = loop("i", 0, m, (ir.Assign(temp, c(0.0)), loop("j", 0, n, (acc(j),), par=False),
                             ir.Assign(ld("y", i), b("add", b("mul", beta, ld("y", i)), b("mul", alpha, temp)))))
    tkern = loop("j", 0, n, (ir.Assign(temp, c(0.0)), loop("i", 0, m, (acc(i),), par=False),
                             ir.Assign(ld("y", j), b("add", b("mul", beta, ld("y", j)), b("mul", alpha, temp)))))
    bad = b("and", ir.UnOp("not", call("lsame", tr, c("N"), dt=DType.BOOL), DType.BOOL),
            ir.UnOp("not", call("lsame", tr, c("T"), dt=DType.BOOL), DType.BOOL))
    body = (
        ir.Assign(v("info"), c(0)),
        ir.If(bad, (ir.Assign(v("info"), c(1)),)),
        ir.If(b("ne", v("info"), c(0)), (ir.ErrorCall("xerbla", (c("DGEMV"), v("info"))), ir.Return())),
        ir.If(b("or", b("eq", m, c(0)), b("eq", n, c(0))), (ir.Return(),)),
        ir.If(call("lsame", tr, c("N"), dt=DType.BOOL), (nkern,), (tkern,)),
    )
    leny = ir.Select(call("lsame", tr, c("N"), dt=DType.BOOL), m, n, I32)
    lenx = ir.Select(call("lsame", tr, c("N"), dt=DType.BOOL), n, m, I32)
    params = (sc("trans", CHAR), sc("m"), sc("n"), sc("alpha", F64), arr("a", lda, n), sc("lda"),
              arr("x", lenx), sc("beta", F64), arr("y", leny, intent=Intent.INOUT))
    return kern("dgemv", params, body, (sc("info"), sc("temp", F64)))


def test_dgemv_host_if_on_char_flag(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    mod, src = load_module(dgemv_kernel(), tmp_path)
    assert "if (trans.upper() == 'N'):" in src and "return {}\n        return" not in src
    r = rng(9)
    mm, nn, lda = 13, 9, 16
    A = r.standard_normal((lda, nn))
    for trans in ("N", "t", "n", "T"):
        lenx, leny = (nn, mm) if trans in "Nn" else (mm, nn)
        x, y = r.standard_normal(lenx), r.standard_normal(leny)
        ty = t(y)
        mod.dgemv(trans, mm, nn, 0.7, t(A.ravel(order="F")), lda, t(x), -0.3, ty, block=8)
        op = A[:mm, :] if trans in "Nn" else A[:mm, :].T
        np.testing.assert_allclose(ty.cpu().numpy(), 0.7 * (op @ x) - 0.3 * y, rtol=1e-13, atol=1e-13)
    ty = t(y)
    assert mod.dgemv("X", mm, nn, 0.7, t(A.ravel(order="F")), lda, t(x), -0.3, ty) == {}
    assert "On entry to DGEMV parameter number 1 had an illegal value" in capfd.readouterr().err
    np.testing.assert_array_equal(ty.cpu().numpy(), y)


def test_if_inside_nest_predication(tmp_path: Path) -> None:
    n, i, x, tv = v("n"), v("i"), ld("x", v("i")), v("tv", F64)
    body = (loop("i", 0, n, (
        ir.Assign(tv, c(0.0)),
        ir.If(b("gt", x, c(0.0)), (ir.Assign(tv, call("sqrt", x)), ir.Assign(ld("y", i), tv)), (
            ir.If(b("lt", x, c(-1.0)), (ir.Assign(ld("y", i), b("mul", c(-2.0), x)),), (
                ir.Assign(tv, c(5.0)),)),)),
        ir.Assign(ld("z", i), tv),
    )),)
    params = (sc("n"), arr("x", n), arr("y", n, intent=Intent.INOUT), arr("z", n, intent=Intent.OUT))
    mod, src = load_module(kern("branchy", params, body), tmp_path)
    assert "tl.where(" in src and "mask & ~cond" in src
    r = rng(10)
    nn = 333
    xx = r.standard_normal(nn) * 2
    y0 = r.standard_normal(nn)
    ty, tz = t(y0), nan_like(nn)
    mod.branchy(nn, t(xx), ty, tz, block=64)
    want_y = np.where(xx > 0, np.sqrt(np.abs(xx)), np.where(xx < -1, -2 * xx, y0))
    want_z = np.where(xx > 0, np.sqrt(np.abs(xx)), np.where(xx < -1, 0.0, 5.0))
    np.testing.assert_allclose(ty.cpu().numpy(), want_y, rtol=1e-15)
    np.testing.assert_allclose(tz.cpu().numpy(), want_z, rtol=1e-15)


def test_scalar_condition_inside_nest(tmp_path: Path) -> None:
    n, i, beta = v("n"), v("i"), v("beta", F64)
    body = (loop("i", 0, n, (ir.If(b("eq", beta, c(0.0)), (ir.Assign(ld("y", i), c(0.0)),),
                                   (ir.Assign(ld("y", i), b("mul", beta, ld("y", i))),)),)),)
    mod, _ = load_module(kern("dscal0", (sc("n"), sc("beta", F64), arr("y", n, intent=Intent.INOUT)), body), tmp_path)
    ty = nan_like(100)
    mod.dscal0(100, 0.0, ty, block=32)  # BLAS semantics: beta = 0 overwrites NaN
    np.testing.assert_array_equal(ty.cpu().numpy(), np.zeros(100))
    y = rng(12).standard_normal(100)
    ty = t(y)
    mod.dscal0(100, 0.1, ty, block=32)
    np.testing.assert_array_equal(ty.cpu().numpy(), 0.1 * y)


FUNCS = {  # name: (IR builder of x, numpy)
    "tan": (lambda x: call("tan", x), np.tan), "atan": (lambda x: call("atan", x), np.arctan),
    "atan2": (lambda x: call("atan2", x, b("sub", c(0.5), x)), lambda x: np.arctan2(x, 0.5 - x)),
    "asin": (lambda x: call("asin", b("mul", c(0.3), x)), lambda x: np.arcsin(0.3 * x)),
    "acos": (lambda x: call("acos", b("mul", c(0.3), x)), lambda x: np.arccos(0.3 * x)),
    "sinh": (lambda x: call("sinh", x), np.sinh), "cosh": (lambda x: call("cosh", x), np.cosh),
    "tanh": (lambda x: call("tanh", x), np.tanh),
    "log10": (lambda x: call("log10", call("abs", x)), lambda x: np.log10(np.abs(x))),
    "pow": (lambda x: b("pow", call("abs", x), c(1.7)), lambda x: np.abs(x) ** 1.7),
    "pow3": (lambda x: b("pow", x, c(3)), lambda x: x**3),
    "powvar": (lambda x: b("pow", b("sub", x, c(3.0)), ir.Cast(F64, ld("k", v("i"), dt=I32))),
               lambda x: np.nan),  # reference below: it needs k
    "sign": (lambda x: call("sign", c(2.5), x), lambda x: np.where(x >= 0, 2.5, -2.5)),
    "exp": (lambda x: call("exp", x), np.exp), "fmod": (lambda x: b("mod", b("mul", c(7.0), x), c(2.0)),
                                                        lambda x: np.fmod(7 * x, 2.0)),
    "minmax": (lambda x: call("max", call("min", x, c(0.5)), c(-0.25)), lambda x: np.clip(x, -0.25, 0.5)),
}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy under the interpreter: masked-off lanes divide by 0
def test_intrinsics_and_integer_semantics(tmp_path: Path) -> None:
    n, i = v("n"), v("i")
    x, k = ld("x", i), ld("k", i, dt=I32)
    stmts: list[ir.Stmt] = [ir.Assign(ld("y", i, c(f)), fn(x)) for f, (fn, _) in enumerate(FUNCS.values())]
    ints = [b("div", k, v("q")), b("mod", k, v("q")), call("nint", b("mul", c(3.0), x), dt=I32),
            call("floor", x, dt=I32)]
    stmts += [ir.Assign(ld("iy", i, c(f)), e) for f, e in enumerate(ints)]
    body = (ir.Assign(v("h"), b("mod", v("p"), v("q"))), ir.Assign(v("h2"), b("div", v("p"), v("q"))),
            loop("i", 0, n, tuple(stmts)))
    params = (sc("n"), sc("p"), sc("q"), arr("x", n), arr("k", n, dt=I32),
              arr("y", n, len(FUNCS), intent=Intent.OUT), arr("iy", n, len(ints), dt=I32, intent=Intent.OUT),
              sc("h", intent=Intent.OUT), sc("h2", intent=Intent.OUT))
    mod, src = load_module(kern("intr", params, body), tmp_path)
    assert "libdevice" not in src
    r = rng(11)
    nn = 200
    xx = r.uniform(-2.0, 2.0, nn)
    kk = r.integers(-20, 20, nn).astype(np.int32)
    ty, tiy = nan_like(nn * len(FUNCS)), t(np.full(nn * len(ints), -99, np.int32))
    out = mod.intr(nn, -7, 3, t(xx), t(kk), ty, tiy, 0, 0)
    assert out == {"h": -1, "h2": -2}  # C semantics on the host: mod(-7, 3) = -1, -7 / 3 = -2
    got = ty.cpu().numpy().reshape((nn, len(FUNCS)), order="F")
    for f, (name, (_, ref)) in enumerate(FUNCS.items()):
        want = (xx - 3.0) ** kk.astype(np.float64) if name == "powvar" else ref(xx)
        np.testing.assert_allclose(got[:, f], want, rtol=2e-14, atol=1e-15, err_msg=name)
    gi = tiy.cpu().numpy().reshape((nn, len(ints)), order="F")
    np.testing.assert_array_equal(gi[:, 0], np.trunc(kk / 3).astype(np.int32))  # toward zero
    np.testing.assert_array_equal(gi[:, 1], np.fmod(kk, 3))  # sign of the dividend
    np.testing.assert_array_equal(gi[:, 2], (np.sign(3 * xx) * np.floor(np.abs(3 * xx) + 0.5)).astype(np.int32))
    np.testing.assert_array_equal(gi[:, 3], np.floor(xx).astype(np.int32))


def test_unknown_node_is_unsupported() -> None:
    n, i = v("n"), v("i")
    body = (loop("i", 0, n, (ir.Assign(ld("y", i), ir.Call("gamma", (ld("y", i),), F64)),)),)
    k = kern("bad", (sc("n"), arr("y", n, intent=Intent.INOUT)), body)
    with pytest.raises(Unsupported) as err:
        get_renderer("triton").render(k)
    assert err.value.target == "triton" and "gamma" in err.value.reason


def test_inner_loop_with_lane_dependent_stop_only(tmp_path: Path) -> None:
    # triangular update: parallel j, inner i in [0, j]: the trip count varies per lane but i
    # itself does not, so x(i) is a lane-invariant address that must be broadcast for the mask
    pytest.importorskip("fparser")  # the GPU machine runs these tests without the Fortran frontend
    from parsers.fortran import parse_source
    from translate.analysis import analyze

    src = ("subroutine tri(n, x, y, a, lda)\n  integer n, lda\n  real(8) x(n), y(n), a(lda, n)\n"
           "  integer i, j\n  do j = 1, n\n    do i = 1, j\n      a(i, j) = a(i, j) + x(i) * y(j)\n"
           "    end do\n  end do\nend\n")
    k = analyze(parse_source(src, "tri.f90", fixed_form=False).kernels[0])
    assert [lp.kind for s in k.body for lp in ir.walk(s) if isinstance(lp, ir.Loop)] == [LoopKind.PARALLEL] * 2
    mod, src_text = load_module(k, tmp_path)
    assert "x + i + zero_lanes" in src_text
    r = rng(12)
    nn, lda = 37, 40
    x, y, a = r.standard_normal(nn), r.standard_normal(nn), r.standard_normal((lda, nn))
    ta = t(a.ravel(order="F"))
    mod.tri(nn, t(x), t(y), ta, lda, block=16)
    want = a.copy()
    for j in range(nn):
        want[: j + 1, j] += x[: j + 1] * y[j]
    np.testing.assert_allclose(ta.cpu().numpy().reshape((lda, nn), order="F"), want, rtol=1e-14)


def test_triton_warps_written_only_where_they_differ_from_tritons_default() -> None:
    plain = get_renderer("triton").render(hk.daxpy()).source
    assert "num_warps" not in plain  # elementwise: Triton's 4
    eight = Schedule(warps=8)
    assert "BLOCK=block, num_warps=8)" in get_renderer("triton", eight).render(hk.daxpy(), eight).source
    four = Schedule(warps=4)
    assert get_renderer("triton", four).render(hk.daxpy(), four).source == plain  # the same code: the search skips it
    i = v("i")
    swap = kern("swap2", (sc("n"), arr("x", v("n"), intent=Intent.INOUT), arr("y", v("n"), intent=Intent.INOUT)),
                (loop("i", 0, v("n"), (ir.Assign(v("tmp", F64), ld("x", i)), ir.Assign(ld("x", i), ld("y", i)),
                                       ir.Assign(ld("y", i), v("tmp", F64)))),), (sc("tmp", F64), sc("i")))
    two = get_renderer("triton").render(swap).source  # stores to two arrays: 8 warps
    assert "BLOCK=block, num_warps=8)" in two
    assert "num_warps" not in get_renderer("triton", four).render(swap, four).source
    j = v("j")
    swap2d = kern("swap2d", (sc("n"), arr("x", v("n"), v("n"), intent=Intent.INOUT),
                             arr("y", v("n"), v("n"), intent=Intent.INOUT)),
                  (loop("j", 0, v("n"), (loop("i", 0, v("n"), (
                      ir.Assign(v("tmp", F64), ld("x", i, j)), ir.Assign(ld("x", i, j), ld("y", i, j)),
                      ir.Assign(ld("y", i, j), v("tmp", F64)))),)),), (sc("tmp", F64), sc("i"), sc("j")))
    src2d = get_renderer("triton").render(swap2d).source
    # a flat 2-D nest: 4 warps (ideal_gas_like ran slower with 8)
    assert "tl.store(x + offs," in src2d and "num_warps" not in src2d


def test_fp64_scalar_stored_as_is_keeps_its_precision(tmp_path: Path) -> None:
    """``x(i) = dx`` and ``x(i) = dx + 1``: the interpreter rounds a bare fp64 parameter to fp32
    unless the kernel makes it an fp64 value first (CloverLeaf's initialise_chunk_kernel)."""
    n, i, dx = v("n"), v("i"), v("dx", F64)
    body = (loop("i", 0, n, (ir.Assign(ld("x", i), dx), ir.Assign(ld("y", i), b("add", dx, c(1.0))))),)
    arrays = tuple(ir.Array(a, F64, (n,), Layout.LEFT, Intent.OUT) for a in ("x", "y"))
    k = kern("fill", (sc("n"), sc("dx", F64), *arrays), body)
    mod, _ = load_module(k, tmp_path)
    x, y = nan_like(5), nan_like(5)
    value = 0.74089129587672586  # not a float32
    mod.fill(5, value, x, y)
    assert x.cpu().numpy().tolist() == [value] * 5 and y.cpu().numpy().tolist() == [value + 1.0] * 5
