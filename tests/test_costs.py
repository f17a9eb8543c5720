"""Roofline work counts (validation/costs.py): bytes and flops of one case."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from parsers.fortran import parse_files, parse_source
from tests import torch_hand_kernels as th
from translate import ir
from validation.costs import EXACT_ITERATIONS, Work, case_env, intensity, work
from validation.inputs import make_case

SAMPLES = Path(__file__).parent / "fortran_samples"
F64 = 8


def blas(name: str) -> ir.Kernel:
    (k,) = parse_files([SAMPLES / "blas" / f"{name}.f"], SAMPLES)[0].kernels
    assert isinstance(k, ir.Kernel)
    return k


def fortran(src: str) -> ir.Kernel:
    (k,) = parse_source(src, "t.f90", fixed_form=False).kernels
    assert isinstance(k, ir.Kernel), getattr(k, "reason", k)
    return k


def test_daxpy_unrolled_and_strided() -> None:
    k = blas("daxpy")
    n = 1003  # the unrolled path: mod(n, 4) clean-up iterations, then steps of 4
    case = make_case(k, {"n": n}, {"da": 2.0}, {}, seed=0)
    assert work(k, case_env(case)) == Work(3 * n * F64, 2 * n, False)
    # x(*) with incx = 2 spans 1 + (n-1)*2 elements; the strided loop threads ix, iy
    assert work(k, {"n": n, "da": 2.0, "incx": 2, "incy": 1}) == Work((2 * n - 1 + 2 * n) * F64, 2 * n, False)


@pytest.mark.parametrize(("env", "flops"), [({"n": 0, "da": 2.0}, 0), ({"n": 10, "da": 0.0}, 0)])
def test_daxpy_early_returns(env: dict[str, float], flops: int) -> None:
    assert work(blas("daxpy"), {**env, "incx": 1, "incy": 1}).flops == flops


@pytest.mark.parametrize(("trans", "flops"), [
    ("N", 30 + 20 * (1 + 2 * 30)),  # y = beta*y over m; per column temp = alpha*x(j), then 2m
    ("T", 20 + 20 * (2 * 30 + 2)),  # y = beta*y over n; per column a dot of length m, then y += alpha*temp
])
def test_dgemv_follows_the_argument_branches(trans: str, flops: int) -> None:
    m, n, lda = 30, 20, 32
    env = {"trans": trans, "m": m, "n": n, "lda": lda, "alpha": 1.5, "beta": 0.5, "incx": 1, "incy": 1}
    # a(lda, n) read; x and y are sized for either transpose: max(m, n) elements
    assert work(blas("dgemv"), env) == Work((lda * n + m + 2 * m) * F64, flops, False)


TRIANGLE = """
subroutine tri(n, a, x, y)
  integer n
  real(8) a(n, n), x(n), y(n)
  integer i, j
  do j = 1, n
    do i = 1, j - 1
      y(i) = y(i) + a(i, j) * x(j)
    end do
  end do
end
"""


def test_triangular_exact_then_simpson_estimate() -> None:
    k = fortran(TRIANGLE)
    assert work(k, {"n": 100}) == Work((100 * 100 + 3 * 100) * F64, 100 * 99, False)
    n = 5000  # more outer iterations than EXACT_ITERATIONS: sampled at j = 0, 2499, 4999
    assert n > EXACT_ITERATIONS
    w = work(k, {"n": n})
    assert w.estimate and w.flops == round(n * (0 + 4 * 2 * 2499 + 2 * 4999) / 6)
    assert abs(w.flops - n * (n - 1)) / (n * (n - 1)) < 1e-3


def test_three_deep_triangle_is_exact() -> None:
    k = fortran("""
subroutine tet(n, x)
  integer n
  real(8) x(n)
  integer i, j, l
  do l = 1, n
    do j = 1, l
      do i = 1, j
        x(i) = x(i) * 2.0d0
      end do
    end do
  end do
end
""")
    n = 20
    assert work(k, {"n": n}) == Work(2 * n * F64, math.comb(n + 2, 3), False)


def test_intent_out_reads_and_write_only_arrays() -> None:
    k = fortran("""
subroutine sq(n, x, s, y)
  integer, intent(in) :: n
  real(8), intent(in) :: x(n)
  real(8), intent(out) :: s(n)
  real(8) y(n)
  integer i
  do i = 1, n
    s(i) = 0.0d0
    s(i) = s(i) + x(i) * x(i)
    y(i) = sqrt(x(i)) - 1.0d0
  end do
end
""")
    # x read; s written (its reads follow the kernel's own writes); y written only
    assert work(k, {"n": 50}) == Work(3 * 50 * F64, 50 * (2 + 2), False)


def test_data_dependent_branch_is_an_upper_bound() -> None:
    src = """
subroutine br(n, x, y)
  integer n
  real(8) x(n), y(n)
  integer i
  do i = 1, n
    if (x(i) > 0.0d0) then
      y(i) = x(i) * 2.0d0 + 1.0d0
    else
      y(i) = {other}
    end if
  end do
end
"""
    uneven = work(fortran(src.format(other="0.0d0")), {"n": 10})
    assert uneven == Work(2 * 10 * F64, 2 * 10, True)
    even = work(fortran(src.format(other="-x(i) * 3.0d0 - 1.0d0")), {"n": 10})
    assert even == Work(2 * 10 * F64, 2 * 10, False)


def test_matmul_extern_and_tail() -> None:
    case = th.linear_relu()  # out = relu(x @ w^T + bias), m=70 k=45 n=90
    m, k, n = 70, 45, 90
    w = work(case.kernel, case.sizes)
    # x, w, bias read; out written (f32); the tail's read of out follows the matmul's write
    assert w == Work((m * k + n * k + n + m * n) * 4, 2 * m * n * k + 2 * m * n, False)
    assert intensity(w) == pytest.approx(w.flops / w.bytes)


def test_batched_matmul() -> None:
    case = th.bmm()
    b, m, k, n = 3, 33, 40, 65
    assert work(case.kernel, case.sizes) == Work((b * m * k + b * k * n + b * m * n) * 4, 2 * b * m * n * k, False)


def test_conv_extern_skips_local_arrays() -> None:
    case = th.conv_relu_bias()  # y = conv2d(x, w) into a local, out = max(y, 0) + bias
    n, ci, co, h, wd = 2, 3, 4, 9, 11
    out = n * co * h * wd
    flops = 2 * out * ci * 3 * 3 + 2 * out
    assert work(case.kernel, case.sizes) == Work((n * ci * h * wd + co * ci * 9 + co + out) * 4, flops, False)


def test_size_falls_back_to_the_array_then_fails() -> None:
    i = ir.Var("i", ir.DType.I32)
    body = ir.Loop("i", ir.Const(0, ir.DType.I32), ir.Var("n", ir.DType.I32), ir.Const(1, ir.DType.I32), (
        ir.Assign(ir.Load("y", (i,), ir.DType.BF16),
                  ir.Call("exp", (ir.Load("x", (i,), ir.DType.F32),), ir.DType.F32)),))
    k = ir.Kernel("f", (ir.Scalar("n", ir.DType.I32), ir.Array("x", ir.DType.F32, (ir.Var("nx", ir.DType.I32),)),
                        ir.Array("y", ir.DType.BF16, (ir.Var("n", ir.DType.I32),), intent=ir.Intent.OUT)),
                  (), (body,), ir.Origin("f.py", 1))
    assert work(k, {"n": 4, "x": np.zeros(7, dtype=np.float32)}) == Work(7 * 4 + 4 * 2, 4, False)
    with pytest.raises(ValueError, match="cannot size array 'x'"):
        work(k, {"n": 4})


def test_intensity_edges() -> None:
    assert intensity(Work(80, 20, False)) == 0.25
    assert intensity(Work(0, 0, False)) == 0.0
    assert intensity(Work(0, 5, False)) == math.inf


GAS = """
subroutine gas(n, d, e, p, c)
  integer n
  double precision d(n), e(n), p(n), c(n)
  integer j
  do j = 1, n
    p(j) = 0.4d0 * d(j) * e(j)
    c(j) = sqrt(p(j) / d(j))
  end do
end subroutine
"""


def test_an_element_read_right_after_its_store_is_not_read_from_memory() -> None:
    n = 100
    # p has no intent (inout), but every read of it follows its store: d, e read; p, c written
    assert work(fortran(GAS), {"n": n}).bytes == 4 * n * F64
    # a read before the store is a read (y = y + ...): p counted twice
    before = GAS.replace("p(j) = 0.4d0 * d(j) * e(j)", "p(j) = p(j) + 0.4d0 * d(j) * e(j)")
    assert work(fortran(before), {"n": n}).bytes == 5 * n * F64
    # the index moved between the store and the read: another element, read from memory
    moved = (GAS.replace("integer j\n", "integer j, k\n").replace("do j = 1, n", "do j = 1, n - 1")
             .replace("p(j) = 0.4d0", "k = j\n    p(k) = 0.4d0")
             .replace("c(j) = sqrt(p(j) / d(j))", "k = k + 1\n    c(j) = sqrt(p(k) / d(j))"))
    assert "p(k) / d(j)" in moved
    assert work(fortran(moved), {"n": n}).bytes == 5 * n * F64
