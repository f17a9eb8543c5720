"""targets.cuda_points: 1-D CUDA nests running several iterations per thread, a block apart,
with the loads each iteration makes before it writes issued first."""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import pytest

from targets.base import get_renderer
from targets.cuda_points import hoisted_loads, with_registers
from tests import kt_hand_kernels as hk
from tests.gpu import gpu_function
from translate import ir
from translate.partition import DeviceNest
from translate.schedule import Schedule

F64 = ir.DType.F64
i, n = hk.v("i"), hk.v("n")


def seg(*body: ir.Stmt, private: tuple[str, ...] = ()) -> DeviceNest:
    return DeviceNest("k_loop1", (hk.loop("i", hk.c(0), n, list(body)),), body, (), ("n", "s"), ("x", "y", "idx"),
                      private, 1)


def test_loads_before_the_first_write_of_their_array_are_hoisted() -> None:
    swap = seg(hk.asg(hk.v("t", F64), hk.ld("x", i)), hk.asg(hk.ld("x", i), hk.ld("y", i)),
               hk.asg(hk.ld("y", i), hk.v("t", F64)), private=("t",))
    assert hoisted_loads(swap) == [hk.ld("x", i), hk.ld("y", i)]
    # x(i) read again after x(i) is written: the second read is not the hoisted value
    again = seg(hk.asg(hk.ld("x", i), hk.b("add", hk.ld("x", i), hk.ld("y", i))),
                hk.asg(hk.ld("y", i), hk.ld("x", i)))
    assert hoisted_loads(again) == [hk.ld("x", i), hk.ld("y", i)]
    regs = {hk.ld("x", i): hk.v("x_0", F64), hk.ld("y", i): hk.v("y_0", F64)}
    first, second = with_registers(again.body, regs)
    assert first == hk.asg(hk.ld("x", i), hk.b("add", hk.v("x_0", F64), hk.v("y_0", F64)))  # the store stays a store
    assert second == hk.asg(hk.ld("y", i), hk.ld("x", i))  # x was written: read from memory


def test_loads_that_cannot_move_stay() -> None:
    gathered = seg(hk.asg(hk.ld("y", i), hk.ld("x", hk.ld("idx", i, dtype=ir.DType.I32))))
    assert hoisted_loads(gathered) == [hk.ld("idx", i, dtype=ir.DType.I32)]  # a loaded subscript: not x
    private = seg(hk.asg(hk.v("p"), hk.b("add", i, hk.c(1))), hk.asg(hk.ld("y", i), hk.ld("x", hk.v("p"))),
                  private=("p",))
    assert hoisted_loads(private) == []  # a subscript of a private scalar
    guarded = seg(ir.If(hk.b("gt", n, hk.c(0)), (hk.asg(hk.ld("y", i), hk.c(0.0)),)),
                  hk.asg(hk.ld("y", i), hk.ld("x", i)))
    assert hoisted_loads(guarded) == []  # only the leading plain assignments


def test_cuda_1d_nests_run_two_iterations_per_thread_by_default() -> None:
    scalar = Schedule(vectors=False)  # daxpy's unit-stride loop would otherwise run as double2 pairs
    src = get_renderer("cuda", scalar).render(hk.daxpy(), scalar).source
    assert "const int i_first = blockIdx.x * (2 * blockDim.x) + threadIdx.x;" in src
    assert "if (i_first + 1LL * blockDim.x < i_trip) {" in src
    assert "const double dy_1 = dy[i_1];" in src and "const double dx_1 = dx[i_1];" in src
    assert "dy[i] = dy_1 + da * dx_1;" in src
    assert "for (int i = i_first; i < i_trip; i += blockDim.x) {" in src  # the rest, bounds checked
    assert "kt_grid((i_trip + 1) / 2, 256, INT_MAX)" in src
    four = Schedule(run_length=4)  # pairs only at two per thread
    assert "if (i_first + 3LL * blockDim.x < i_trip) {" in get_renderer("cuda", four).render(hk.daxpy(), four).source
    one = Schedule(run_length=1)
    flat = get_renderer("cuda", one).render(hk.daxpy(), one).source
    assert "i_first" not in flat and "kt_grid(i_trip, 256, INT_MAX)" in flat
    assert "blockDim.x) + threadIdx.x" not in get_renderer("cuda").render(hk.ddot()).source  # reductions: their own


def test_a_nest_whose_body_holds_loops_runs_one_iteration_per_thread_by_default() -> None:
    """A column per thread, each a serial loop (matmul_nn's epilogue): two columns per thread would
    halve the threads of a nest only n long; an explicit ``run_length`` still applies."""
    m, j = hk.v("m"), hk.v("j")
    at = hk.ld("c", hk.b("add", hk.v("r"), hk.b("mul", m, j)))
    column = hk.loop("r", hk.c(0), m, [hk.asg(at, hk.b("mul", hk.c(2.0, F64), at))], kind=hk.S)
    k = ir.Kernel("cols", (ir.Scalar("m", ir.DType.I32), ir.Scalar("n", ir.DType.I32),
                           ir.Array("c", F64, (hk.b("mul", m, n),), intent=ir.Intent.INOUT)),
                  (ir.Scalar("j", ir.DType.I32), ir.Scalar("r", ir.DType.I32)),
                  (hk.loop("j", hk.c(0), n, [column], line=3),), hk.origin(1))
    assert "j_first" not in get_renderer("cuda").render(k).source
    two = Schedule(run_length=2)
    assert "const int j_first = blockIdx.x * (2 * blockDim.x) + threadIdx.x;" in \
        get_renderer("cuda", two).render(k, two).source



def _shifted() -> ir.Kernel:
    """do i = lo, n - s: y(i + s) = a * x(i) + y(i + s), in 0-based IR (built by hand: the GPU
    machine has no Fortran parser)."""
    lo, s, a = hk.v("lo"), hk.v("s"), hk.v("a", F64)
    ys = hk.ld("y", hk.b("add", i, s))
    body = [hk.asg(ys, hk.b("add", hk.b("mul", a, hk.ld("x", i)), ys))]
    return ir.Kernel(
        "shifted",
        (ir.Scalar("n", ir.DType.I32), ir.Scalar("lo", ir.DType.I32), ir.Scalar("s", ir.DType.I32), ir.Scalar("a", F64),
         ir.Array("x", F64, (n,)), ir.Array("y", F64, (n,), intent=ir.Intent.INOUT)),
        (ir.Scalar("i", ir.DType.I32),),
        (hk.loop("i", hk.b("sub", lo, hk.c(1)), hk.b("sub", n, s), body, line=7),), hk.origin(1))


def test_unit_stride_fp64_loops_run_pairs_of_iterations_as_double2() -> None:
    src = get_renderer("cuda").render(_shifted()).source
    assert "const double2 x_v = *reinterpret_cast<const double2*>(&x[i_0]);" in src
    assert "const double2 y_v = *reinterpret_cast<const double2*>(&y[i_0 + s]);" in src
    assert "*reinterpret_cast<double2*>(&y[i_0 + s]) = make_double2(y_out0, y_out1);" in src
    assert "y_out1 = a * x_v.y + y_v.y;" in src
    # the alignment of every array at the first iteration decides: pairs, or one at a time
    assert "kt_odd == ((reinterpret_cast<unsigned long long>(&y[i_lo + s]) >> 3) & 1u)" in src
    assert "if (kt_head == 1 && blockIdx.x == 0 && threadIdx.x == 0) {" in src
    assert "kt_grid((i_trip + 1) / 2, 256, INT_MAX)" in src
    off = Schedule(vectors=False)
    assert "double2" not in get_renderer("cuda", off).render(_shifted(), off).source
    stencil = get_renderer("cuda").render(hk.stencil()).source
    assert "double2" not in stencil  # 2-D
    heat = """
subroutine heat(n, r, u, un)
  integer, intent(in) :: n
  double precision, intent(in) :: r, u(n)
  double precision, intent(out) :: un(n)
  integer :: i
  do i = 2, n - 1
    un(i) = u(i) + r * (u(i - 1) - 2.0d0 * u(i) + u(i + 1))
  end do
end subroutine
"""
    from parsers.fortran import parse_source
    from translate.analysis import analyze

    (k,) = parse_source(heat, "heat.f90").kernels
    assert "double2" not in get_renderer("cuda").render(analyze(k)).source  # u read at three subscripts
    for decl, body in (("double precision", "x(i) = 2.0d0 * x(i)\n    y(i) = x(i)"),  # x read after its write
                       ("real", "y(i) = 2.0 * x(i)")):  # fp32
        src = f"""
subroutine other(n, x, y)
  integer, intent(in) :: n
  {decl}, intent(inout) :: x(n), y(n)
  integer :: i
  do i = 1, n
    {body}
  end do
end subroutine
"""
        (k,) = parse_source(src, "other.f90").kernels
        out = get_renderer("cuda").render(analyze(k)).source
        assert "double2" not in out and "blockIdx.x * (2 * blockDim.x)" in out  # two a block apart instead


@pytest.mark.slow
@pytest.mark.gpu
def test_double2_pairs_on_gpu(tmp_path: Path) -> None:
    """Every alignment case on the GPU: pairs from the first iteration, pairs after a first
    iteration run alone (start 8 bytes past 16), arrays of different alignment (one at a time),
    odd and even trip counts; elements outside the loop untouched."""
    f = gpu_function(get_renderer("cuda").render(_shifted()), tmp_path, "kt_shifted")
    i32, f64 = ctypes.c_int, ctypes.c_double
    f.argtypes = [i32, i32, i32, f64, ctypes.c_void_p, ctypes.c_void_p]
    rng = np.random.default_rng(11)
    for n in (1000, 1001, 2, 1):
        for lo, sh in ((1, 0), (2, 0), (1, 1), (2, 2), (3, 1)):
            x, y = rng.normal(size=n), rng.normal(size=n)
            want = y.copy()
            for k in range(lo - 1, n - sh):
                want[k + sh] = 1.5 * x[k] + want[k + sh]
            f(n, lo, sh, 1.5, ctypes.c_void_p(x.ctypes.data), ctypes.c_void_p(y.ctypes.data))
            np.testing.assert_allclose(y, want, rtol=1e-15, atol=1e-15, err_msg=f"n={n} lo={lo} s={sh}")


def _swap() -> ir.Kernel:
    """do i = lo, n: t = x(i); x(i) = y(i); y(i) = t, in 0-based IR (built by hand: the GPU machine
    has no Fortran parser)."""
    lo, t = hk.v("lo"), hk.v("t", F64)
    body = (hk.asg(t, hk.ld("x", i)), hk.asg(hk.ld("x", i), hk.ld("y", i)), hk.asg(hk.ld("y", i), t))
    nest = ir.Loop("i", hk.b("sub", lo, hk.c(1)), n, hk.c(1), body, ir.LoopKind.PARALLEL, private=("t",), line=7)
    return ir.Kernel(
        "swapr",
        (ir.Scalar("n", ir.DType.I32), ir.Scalar("lo", ir.DType.I32),
         ir.Array("x", F64, (n,), intent=ir.Intent.INOUT), ir.Array("y", F64, (n,), intent=ir.Intent.INOUT)),
        (ir.Scalar("i", ir.DType.I32), ir.Scalar("t", F64)),
        (nest,), hk.origin(1))


def test_pairs_storing_two_arrays_load_them_in_store_order() -> None:
    src = get_renderer("cuda").render(_swap()).source
    load_x = "const double2 x_v = kt_load2_ordered(&x[i_0]);"
    load_y = "const double2 y_v = kt_load2_ordered(&y[i_0]);"
    store_x = "*reinterpret_cast<double2*>(&x[i_0]) = make_double2(x_out0, x_out1);"
    store_y = "*reinterpret_cast<double2*>(&y[i_0]) = make_double2(y_out0, y_out1);"
    assert src.index(load_x) < src.index(load_y) < src.index(store_x) < src.index(store_y)
    assert src.count("__device__ __forceinline__ double2 kt_load2_ordered(const double* p) {") == 1
    assert "ld.volatile.global.v2.f64" in src
    # one array stored: the compiler orders the loads
    assert "kt_load2_ordered" not in get_renderer("cuda").render(_shifted()).source


@pytest.mark.slow
@pytest.mark.gpu
def test_ordered_pairs_swap_on_gpu(tmp_path: Path) -> None:
    """The swap through ordered double2 loads: pairs from the first iteration or after one run
    alone, odd and even trip counts, the elements before the loop untouched."""
    f = gpu_function(get_renderer("cuda").render(_swap()), tmp_path, "kt_swapr")
    f.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    rng = np.random.default_rng(12)
    for n in (1000, 1001, 2, 1):
        for lo in (1, 2, 3):
            x, y = rng.normal(size=n), rng.normal(size=n)
            wx, wy = x.copy(), y.copy()
            wx[lo - 1:], wy[lo - 1:] = y[lo - 1:], x[lo - 1:]
            f(n, lo, ctypes.c_void_p(x.ctypes.data), ctypes.c_void_p(y.ctypes.data))
            np.testing.assert_array_equal(x, wx, err_msg=f"n={n} lo={lo}")
            np.testing.assert_array_equal(y, wy, err_msg=f"n={n} lo={lo}")


def _rank1() -> ir.Kernel:
    """do j = jlo, n: do i = 1, m: a(i, j) = a(i, j) + alpha * x(i) * y(j), 0-based, built by hand."""
    m, jlo, alpha, j = hk.v("m"), hk.v("jlo"), hk.v("alpha", F64), hk.v("j")
    aij = hk.ld("a", i, j)
    inner = hk.loop("i", hk.c(0), m, [hk.asg(aij, hk.b("add", aij, hk.b("mul", hk.b("mul", alpha, hk.ld("x", i)),
                                                                        hk.ld("y", j))))])
    return ir.Kernel(
        "rank1",
        (ir.Scalar("m", ir.DType.I32), ir.Scalar("n", ir.DType.I32), ir.Scalar("jlo", ir.DType.I32),
         ir.Scalar("alpha", F64), ir.Array("x", F64, (m,)), ir.Array("y", F64, (n,)),
         ir.Array("a", F64, (m, n), intent=ir.Intent.INOUT)),
        (ir.Scalar("i", ir.DType.I32), ir.Scalar("j", ir.DType.I32)),
        (hk.loop("j", hk.b("sub", jlo, hk.c(1)), n, [inner], line=5),), hk.origin(1))


PAIRS = Schedule()  # two rows per thread by default


def test_2d_nests_run_two_neighbouring_rows_per_thread() -> None:
    src = get_renderer("cuda", PAIRS).render(_rank1(), PAIRS).source
    assert "for (int k_j_first = 2 * blockIdx.y; k_j_first < j_trip; k_j_first += 2 * gridDim.y) {" in src
    assert "const double a_1 = a[i + a_n0 * j_1];" in src and "const double y_1 = y[j_1];" in src
    assert "a[i + a_n0 * j] = a_1 + alpha * x_1 * y_1;" in src
    # blocks of one warp where the nest is too small to give every SM a block of 256 (kt_small_nest)
    assert "const int bx = kt_small_nest(1LL * i_trip * j_trip) ? 32 : 256;" in src
    assert "const dim3 block(bx);" in src and "kt_grid(i_trip, bx, INT_MAX), kt_grid((j_trip + 1) / 2, 1)" in src
    assert "return iterations * 8 < resident;" in src
    for one in (Schedule(row_pairs=False), Schedule(run_length=1)):  # a point per thread, the block fitted
        flat = get_renderer("cuda", one).render(_rank1(), one).source
        assert "k_j_first" not in flat and "kt_fit_width(i_trip, 256)" in flat


@pytest.mark.slow
@pytest.mark.gpu
def test_row_pairs_on_gpu(tmp_path: Path) -> None:
    """Odd and even row counts (the last row alone), a first row past 1, one row, on the GPU."""
    f = gpu_function(get_renderer("cuda", PAIRS).render(_rank1(), PAIRS), tmp_path, "kt_rank1")
    i32, f64 = ctypes.c_int, ctypes.c_double
    f.argtypes = [i32, i32, i32, f64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    rng = np.random.default_rng(12)
    for m, n, jlo in ((37, 10, 1), (37, 11, 1), (300, 9, 3), (5, 1, 1)):
        x, y = rng.normal(size=m), rng.normal(size=n)
        a = np.asfortranarray(rng.normal(size=(m, n)))
        want = a.copy()
        want[:, jlo - 1:] += 0.5 * np.outer(x, y[jlo - 1:])
        f(m, n, jlo, 0.5, *(ctypes.c_void_p(arr.ctypes.data) for arr in (x, y, a)))
        np.testing.assert_allclose(a, want, rtol=1e-14, atol=1e-14, err_msg=f"m={m} n={n} jlo={jlo}")
