"""``Schedule.shared_subscript_first``: a 1-D subscript's shared part added to the array's pointer first
(``targets.triton_expr.split_terms``), rendered and run in Triton's interpreter against numpy
on strided loops with positive and negative increments."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from targets.base import get_renderer  # noqa: E402
from targets.triton_expr import split_terms  # noqa: E402
from tests.kt_modules import triton_module  # noqa: E402
from translate import ir  # noqa: E402
from translate.analysis import analyze  # noqa: E402
from translate.schedule import Schedule  # noqa: E402

I32 = ir.DType.I32
STRIDED = """      SUBROUTINE STRIDE(N, DA, DX, INCX, DY, INCY, LX, LY, DOT)
      INTEGER N, INCX, INCY, LX, LY, I, IX, IY
      DOUBLE PRECISION DA, DX(LX), DY(LY), DOT
      IX = 1
      IY = 1
      IF (INCX .LT. 0) IX = (-N + 1)*INCX + 1
      IF (INCY .LT. 0) IY = (-N + 1)*INCY + 1
      DOT = 0.0D0
      DO 10 I = 1, N
         DOT = DOT + DX(IX)*DY(IY)
         DY(IY) = DY(IY) + DA*DX(IX)
         IX = IX + INCX
         IY = IY + INCY
   10 CONTINUE
      END
"""


def _v(name: str) -> ir.Var:
    return ir.Var(name, I32)


def _b(op: str, a: ir.Expr, b: ir.Expr) -> ir.BinOp:
    return ir.BinOp(op, a, b, I32)


def test_split_terms() -> None:
    lanes = lambda e: any(isinstance(n, ir.Var) and n.name == "i" for n in ir.walk(e))  # noqa: E731
    one = ir.Const(1, I32)
    e = _b("sub", _b("add", _v("ix"), _b("mul", _b("sub", _v("i"), one), _v("incx"))), one)
    assert split_terms(e, lanes) == (_b("sub", _v("ix"), one), _b("mul", _b("sub", _v("i"), one), _v("incx")))
    # a negative term alone is negated; with a positive one it is subtracted from it
    assert split_terms(_b("sub", _v("i"), _v("k")), lanes) == (ir.UnOp("neg", _v("k"), I32), _v("i"))
    assert split_terms(_b("sub", _b("sub", _v("k"), _v("i")), _v("m")), lanes) == (
        _b("sub", _v("k"), _v("m")), ir.UnOp("neg", _v("i"), I32))
    assert split_terms(_v("k"), lanes) == (_v("k"), None)
    assert split_terms(_b("mul", _v("i"), _v("k")), lanes) == (None, _b("mul", _v("i"), _v("k")))


def _kernel() -> ir.Kernel:
    parse_source = pytest.importorskip("parsers.fortran").parse_source
    return analyze(parse_source(STRIDED, "stride.f", fixed_form=True).kernels[0])


def test_the_shared_part_goes_to_the_pointer_first() -> None:
    k = _kernel()
    assert all(lp.kind is ir.LoopKind.PARALLEL for s in k.body for lp in ir.walk(s) if isinstance(lp, ir.Loop))
    first = get_renderer("triton").render(k, Schedule(shared_subscript_first=True)).source
    plain = get_renderer("triton").render(k, Schedule()).source
    assert "tl.load((dx + (ix - 1)) + (i * incx)" in first and "tl.store((dy + (iy - 1)) + (i * incy)" in first
    assert "(dx + (ix - 1))" not in plain and "tl.load(dx + ((ix + (i * incx)) - 1)" in plain


@pytest.mark.parametrize("incx, incy", [(1, 1), (2, -1), (-3, 2), (-1, -1)])
def test_strided_loops_match_numpy(tmp_path: Path, incx: int, incy: int) -> None:
    n = 1500  # several programs of 256 lanes
    lx, ly = 1 + (n - 1) * abs(incx), 1 + (n - 1) * abs(incy)
    rng = np.random.default_rng(3)
    x, y, da = rng.standard_normal(lx), rng.standard_normal(ly), 0.75
    xs = x[::incx] if incx > 0 else x[::incx][:n]  # the elements in the loop's order
    ys_at = np.arange(0, ly, incy) if incy > 0 else np.arange(ly - 1, -1, incy)
    want_y = y.copy()
    want_y[ys_at] += da * xs
    want_dot = float(np.dot(xs, y[ys_at]))
    schedule = Schedule(shared_subscript_first=True)
    mod = triton_module(get_renderer("triton", schedule).render(_kernel(), schedule), tmp_path,
                        f"kt_stride_{abs(hash(tmp_path))}")
    dy = torch.from_numpy(y.copy())
    got = mod.stride(n, da, torch.from_numpy(x.copy()), incx, dy, incy, lx, ly, 0.0)
    np.testing.assert_array_equal(dy.numpy(), want_y)
    assert float(got["dot"]) == pytest.approx(want_dot, rel=1e-12)
