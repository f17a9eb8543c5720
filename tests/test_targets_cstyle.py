"""Kokkos and CUDA renderers: generated text, real builds, and numbers.

Kokkos is built against Debian's Kokkos (Serial backend) and called through
its ``kt_`` shim with ctypes, checked against numpy. CUDA is built with nvcc
(object code on this machine); the same numeric cases run on a GPU where one
is present (``gpu`` marker)."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from targets.base import TARGETS, Unsupported, available, get_renderer
from targets.cstyle import CStyleRenderer
from targets.cuda_helpers import FIT_WIDTH
from targets.fortran_interface import fortran_interface
from tests import kt_hand_kernels as hk
from tests.gpu import has_gpu
from tests.kt_apart import call_apart, run_apart
from tests.kt_builds import project_library
from translate import ir
from translate.schedule import Schedule

D = ctypes.c_double
I = ctypes.c_int  # noqa: E741
HAVE_KOKKOS = Path("/usr/include/trilinos/Kokkos_Core.hpp").exists() and shutil.which("g++") is not None
HAVE_NVCC = shutil.which("nvcc") is not None


def ptr(a: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(a.ctypes.data)


def _build(target: str, tmp: Path, schedule: Schedule | None = None,
           makes: tuple[Callable[[], ir.Kernel], ...] = hk.ALL) -> dict[str, Path]:
    """Every kernel of ``makes`` rendered and built into one library with the target's CMakeLists."""
    renderer = get_renderer(target, schedule)
    lib = project_library(target, [renderer.render(make(), schedule) for make in makes], tmp)
    return {make().name: lib for make in makes}


@pytest.fixture(scope="module")
def kokkos_libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if not HAVE_KOKKOS:
        pytest.skip("Kokkos headers or g++ not found")
    return _build("kokkos", tmp_path_factory.mktemp("kokkos"))


@pytest.fixture(scope="module")
def kokkos_libs_tiled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The 2-D and 3-D nests in MDRange tiles of 64 x 4 (x 1) iterations (``Schedule.block_rows``)."""
    if not HAVE_KOKKOS:
        pytest.skip("Kokkos headers or g++ not found")
    return _build("kokkos", tmp_path_factory.mktemp("kokkos_tiled"), Schedule(block_rows=4), (hk.stencil, hk.axpy3d))


@pytest.fixture(scope="module")
def cuda_libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if not HAVE_NVCC:
        pytest.skip("nvcc not found")
    return _build("cuda", tmp_path_factory.mktemp("cuda"))


@pytest.fixture(scope="module")
def cuda_libs_2d(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The 3-D nests with 32 x 8 thread blocks (``Schedule.block_rows``) walking runs of 3
    planes per thread (``Schedule.run_length``; runs cut short at the end) with register queues (a
    3-D walk loads every plane by default), the 2-D one runs of 3 rows."""
    if not HAVE_NVCC:
        pytest.skip("nvcc not found")
    return _build("cuda", tmp_path_factory.mktemp("cuda2d"), Schedule(block_rows=8, run_length=3, register_queues=True),
                  (hk.stencil, hk.axpy3d, hk.lap3d))


# ------------------------------------------------------------ numeric cases


def case_daxpy(lib: ctypes.CDLL) -> None:
    rng = np.random.default_rng(1)
    f = lib.kt_daxpy
    f.argtypes = [I, D, ctypes.c_void_p, I, ctypes.c_void_p, I]
    n = 1000
    x, y = rng.normal(size=n), rng.normal(size=n)
    y0 = y.copy()
    f(n, 2.5, ptr(x), 1, ptr(y), 1)
    np.testing.assert_allclose(y, y0 + 2.5 * x, rtol=1e-13, atol=1e-14)  # nvcc contracts to FMA
    # strided: incx = 2, incy = -1 (reference BLAS walks y backwards)
    x2 = rng.normal(size=1 + (n - 1) * 2)
    y2 = rng.normal(size=n)
    want = y2.copy()
    want[::-1] += 0.5 * x2[::2]
    f(n, 0.5, ptr(x2), 2, ptr(y2), -1)
    np.testing.assert_allclose(y2, want, rtol=1e-13, atol=1e-14)
    # quick return: n <= 0 and da == 0 leave y alone
    y3 = y0.copy()
    f(0, 2.0, ptr(x), 1, ptr(y3), 1)
    f(n, 0.0, ptr(x), 1, ptr(y3), 1)
    np.testing.assert_array_equal(y3, y0)


def case_ddot(lib: ctypes.CDLL) -> None:
    rng = np.random.default_rng(2)
    f = lib.kt_ddot
    f.argtypes = [I, ctypes.c_void_p, ctypes.c_void_p]
    f.restype = D
    for n in (1, 1000, 100_003):
        x, y = rng.normal(size=n), rng.normal(size=n)
        assert f(n, ptr(x), ptr(y)) == pytest.approx(float(x @ y), rel=1e-12, abs=1e-12)
    assert f(0, ptr(x), ptr(y)) == 0.0


def case_stencil(lib: ctypes.CDLL, n: int = 37, m: int = 23) -> None:
    rng = np.random.default_rng(3)
    a = np.asfortranarray(rng.normal(size=(n + 2, m + 2)))
    b = np.asfortranarray(np.full((n + 2, m + 2), -7.0))
    lib.kt_stencil.argtypes = [I, I, ctypes.c_void_p, ctypes.c_void_p]
    lib.kt_stencil(n, m, ptr(a), ptr(b))
    want = np.full_like(b, -7.0)
    want[1:-1, 1:-1] = 0.25 * (a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:])
    np.testing.assert_allclose(b, want, rtol=1e-14)


def case_axpy3d(lib: ctypes.CDLL) -> None:
    rng = np.random.default_rng(4)
    nx, ny, nz = 13, 7, 5
    u = np.asfortranarray(rng.normal(size=(nx, ny, nz)))
    z = np.asfortranarray(rng.normal(size=(nx, ny, nz)))
    w = np.asfortranarray(np.full((nx, ny, nz), np.nan))
    umax = D(np.nan)
    lib.kt_axpy3d.argtypes = [I, I, I, D, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(D)]
    lib.kt_axpy3d(nx, ny, nz, 1.5, ptr(u), ptr(z), ptr(w), ctypes.byref(umax))
    np.testing.assert_allclose(w, 1.5 * u + z, rtol=1e-14)
    assert umax.value == np.abs(u).max()


def case_lap3d(lib: ctypes.CDLL, nx: int = 21, ny: int = 9, nz: int = 11) -> None:
    """11 planes by default: runs of 4, 8 (and of 3) cut short at the end."""
    rng = np.random.default_rng(9)
    u = np.asfortranarray(rng.normal(size=(nx + 2, ny + 2, nz + 2)))
    lu = np.asfortranarray(np.full((nx + 2, ny + 2, nz + 2), -7.0))
    lib.kt_lap3d.argtypes = [I, I, I, ctypes.c_void_p, ctypes.c_void_p]
    lib.kt_lap3d(nx, ny, nz, ptr(u), ptr(lu))
    want = np.full_like(lu, -7.0)
    c = (slice(1, -1),) * 3
    want[c] = (-6.0 * u[c] + u[:-2, 1:-1, 1:-1] + u[2:, 1:-1, 1:-1] + u[1:-1, :-2, 1:-1] + u[1:-1, 2:, 1:-1]
               + u[1:-1, 1:-1, :-2] + u[1:-1, 1:-1, 2:])
    np.testing.assert_allclose(lu, want, rtol=1e-13, atol=1e-13)


def case_recur(lib: ctypes.CDLL) -> None:
    rng = np.random.default_rng(5)
    n = 50
    x, y = rng.normal(size=n), rng.normal(size=n)
    want = x.copy()
    for i in range(1, n):
        want[i] = 0.9 * want[i - 1] + y[i]
    total = D(np.nan)
    lib.kt_recur.argtypes = [I, D, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(D)]
    lib.kt_recur(n, 0.9, ptr(x), ptr(y), ctypes.byref(total))
    np.testing.assert_allclose(x, want, rtol=1e-13)
    assert total.value == pytest.approx(want.sum(), rel=1e-12)


def case_reverse(lib: ctypes.CDLL) -> None:
    n = 11
    x = np.arange(n, dtype=float) + 1
    y = np.full(n, np.nan)
    z = np.full(n, -1.0)
    lib.kt_reverse.argtypes = [I, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.kt_reverse(n, ptr(x), ptr(y), ptr(z))
    np.testing.assert_array_equal(y, x[::-1])
    want = np.full(n, -1.0)
    want[::2] = 2 * x[::2]
    np.testing.assert_array_equal(z, want)


def case_dgemv(lib: ctypes.CDLL) -> None:
    rng = np.random.default_rng(6)
    f = lib.kt_dgemv
    f.argtypes = [ctypes.c_char, I, I, D, ctypes.c_void_p, I, ctypes.c_void_p, ctypes.c_void_p]
    # columns shorter than a warp, and columns several warps long (the CUDA 'T' form: a warp per column)
    for m, n, lda in ((30, 20, 33), (100, 45, 101)):
        a = np.asfortranarray(rng.normal(size=(lda, n)))
        for trans in (b"N", b"n", b"T", b"t"):
            x, y = rng.normal(size=max(m, n)), rng.normal(size=max(m, n))
            want = y.copy()
            if trans in (b"N", b"n"):
                want[:m] += 0.7 * a[:m, :n] @ x[:n]
            else:
                want[:n] += 0.7 * a[:m, :n].T @ x[:m]
            f(trans, m, n, 0.7, ptr(a), lda, ptr(x), ptr(y))
            np.testing.assert_allclose(y, want, rtol=1e-12, atol=1e-12)
    y0 = y.copy()
    f(b"X", m, n, 0.7, ptr(a), lda, ptr(x), ptr(y))  # illegal TRANS: message, y untouched
    np.testing.assert_array_equal(y, y0)


CASES: dict[str, Callable[[ctypes.CDLL], None]] = {
    "daxpy": case_daxpy, "ddot": case_ddot, "stencil": case_stencil, "axpy3d": case_axpy3d,
    "recur": case_recur, "reverse": case_reverse, "dgemv": case_dgemv, "lap3d": case_lap3d,
}


def run_case(name: str, lib: str) -> None:
    CASES[name](ctypes.CDLL(lib))


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_kokkos_numbers(kokkos_libs: dict[str, Path], name: str) -> None:
    run_apart(run_case, name, str(kokkos_libs[name]))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["stencil", "axpy3d"])
def test_kokkos_tiles_numbers(kokkos_libs_tiled: dict[str, Path], name: str) -> None:
    run_apart(run_case, name, str(kokkos_libs_tiled[name]))


def test_kokkos_tiles_text() -> None:
    tiled = Schedule(block_rows=8)
    src = get_renderer("kokkos", tiled).render(hk.axpy3d(), tiled).source
    assert "({0, 0, 0}, {i_trip, j_trip, k_trip}, {32, 8, 1})" in src  # parallel_for and parallel_reduce
    assert src.count("{32, 8, 1}") == 2
    default = get_renderer("kokkos").render(hk.axpy3d()).source
    # without block_rows: the GPU tile of targets.defaults on a GPU, Kokkos' own choice on the host
    assert "({0, 0, 0}, {i_trip, j_trip, k_trip}, {kt_tile_fast, kt_rows, kt_tile_rest})" in default
    assert "const int kt_rows = kt_tile_rows(1LL * i_trip * j_trip * k_trip);" in default
    assert "constexpr int kt_tile_fast = kt_on_device ? 32 : 0;" in default
    assert "constexpr int kt_tile_next = kt_on_device ? 8 : 0;" in default
    assert "kt_tile_fast" not in get_renderer("kokkos").render(hk.daxpy()).source  # a RangePolicy: no tile


@pytest.mark.slow
def test_kokkos_error_message(kokkos_libs: dict[str, Path]) -> None:
    a, x, y = np.zeros((2, 2), order="F"), np.zeros(2), np.ones(2)
    done = call_apart(kokkos_libs["dgemv"], "kt_dgemv", b"Q", 2, 2, 1.0, a, 2, x, y)
    assert "On entry to DGEMV parameter number 1 had an illegal value" in done.stderr
    np.testing.assert_array_equal(y, 1.0)


@pytest.mark.slow
@pytest.mark.gpu
@pytest.mark.parametrize("name", list(CASES))
def test_cuda_numbers_on_gpu(cuda_libs: dict[str, Path], name: str) -> None:
    if not has_gpu():
        pytest.skip("no CUDA GPU")
    CASES[name](ctypes.CDLL(str(cuda_libs[name])))


@pytest.mark.slow
@pytest.mark.gpu
@pytest.mark.parametrize("name", ["stencil", "axpy3d", "lap3d"])
def test_cuda_2d_blocks_on_gpu(cuda_libs_2d: dict[str, Path], name: str) -> None:
    if not has_gpu():
        pytest.skip("no CUDA GPU")
    CASES[name](ctypes.CDLL(str(cuda_libs_2d[name])))


@pytest.mark.slow
@pytest.mark.gpu
def test_cuda_walks_past_65535_tiles_on_gpu(cuda_libs: dict[str, Path]) -> None:
    """More (rows, run of planes) tiles than a grid's y axis holds: the rest go on along z."""
    if not has_gpu():
        pytest.skip("no CUDA GPU")
    case_lap3d(ctypes.CDLL(str(cuda_libs["lap3d"])), 3, 1001, 1203)  # 251 row tiles x 301 runs of 4 planes
    case_stencil(ctypes.CDLL(str(cuda_libs["stencil"])), 3, 600_001)  # 75001 runs of 8 rows


@pytest.mark.slow
def test_cuda_builds(cuda_libs: dict[str, Path]) -> None:
    assert set(cuda_libs) == set(CASES)
    assert all(p.stat().st_size > 0 for p in cuda_libs.values())


# --------------------------------------------------------------- text checks


def test_registry_and_descriptors() -> None:
    assert {"kokkos", "cuda"} <= set(available())
    assert TARGETS["cuda"].needs_gpu_to_run and not TARGETS["kokkos"].needs_gpu_to_run
    assert TARGETS["kokkos"].compiled and not TARGETS["triton"].compiled
    assert TARGETS["kokkos"].symbol("DAXPY") == "kt_daxpy" and TARGETS["triton"].symbol("DAXPY") == "daxpy"
    with pytest.raises(KeyError):
        get_renderer("fortran77")


def test_cuda_row_kernel_text() -> None:
    """The 'T' form of dgemv (a dot product down each column) runs a warp per column, its
    lanes reading neighbouring elements; without row programs, a thread per column."""
    src = get_renderer("cuda").render(hk.dgemv()).source
    kernel = src[src.index("row kernel for the nest"):]
    kernel = kernel[:kernel.index("\n}\n")]
    assert "one warp per (j)" in kernel
    assert "for (int i = lane; i < m; i += 32)" in kernel
    assert "temp = KtSum()(temp_before, kt_warp_allreduce(temp, KtSum()));" in kernel
    assert "if (lane == 0) {\n            y[j] = y[j] + alpha * temp;" in kernel
    assert "__shfl_xor_sync" in src
    off = Schedule(row_programs=False)
    plain = get_renderer("cuda", off).render(hk.dgemv(), off).source
    assert "row kernel" not in plain and "kt_warp_allreduce" not in plain


def test_kokkos_team_per_row_text() -> None:
    """Kokkos runs the dgemv 'T' nest as one team per column: a nested parallel_reduce over
    TeamThreadRange, the store once per team; without row programs, the flat RangePolicy."""
    src = get_renderer("kokkos").render(hk.dgemv()).source
    assert "Kokkos::TeamPolicy<>(j_trip, Kokkos::AUTO)" in src
    assert "Kokkos::parallel_reduce(Kokkos::TeamThreadRange(team, 0, m), [&](const int i, double& temp) {" in src
    assert "}, Kokkos::Sum<double>(temp_part));" in src and "temp = temp + temp_part;" in src
    assert "Kokkos::single(Kokkos::PerTeam(team), [&]() {" in src
    off = Schedule(row_programs=False)
    assert "TeamPolicy" not in get_renderer("kokkos", off).render(hk.dgemv(), off).source


def test_cuda_2d_reduction_grid_is_capped() -> None:
    """A 2-D reduction ends every block with an atomic on the same address: the launch
    keeps to about 8192 blocks (the outer loop grid-strided), not one block per row."""
    from parsers.fortran import parse_source
    from translate.analysis import analyze

    src = """
subroutine total(n, m, a, s)
  integer, intent(in) :: n, m
  double precision, intent(in) :: a(n, m)
  double precision, intent(out) :: s
  integer :: i, j
  s = 0.0d0
  do j = 1, m
    do i = 1, n
      s = s + a(i, j)
    end do
  end do
end subroutine
"""
    (k,) = parse_source(src, "t.f90").kernels
    cu = get_renderer("cuda").render(analyze(k)).source
    assert "const unsigned gy = kt_fill(kt_grid(j_trip, by), gx);" in cu and "const dim3 grid(gx, gy);" in cu


def test_cuda_reductions_share_one_buffer() -> None:
    """The reductions of one nest (here a double sum and an int max) start from one copy of
    their identities and come back in one copy, one wait for the stream."""
    from parsers.fortran import parse_source
    from translate.analysis import analyze

    src = """
subroutine stats(n, a, s, k)
  integer, intent(in) :: n
  double precision, intent(in) :: a(n)
  double precision, intent(out) :: s
  integer, intent(out) :: k
  integer :: i
  s = 0.0d0
  k = 0
  do i = 1, n
    s = s + a(i)
    k = max(k, int(a(i)))
  end do
end subroutine
"""
    (kern,) = parse_source(src, "t.f90").kernels
    cu = get_renderer("cuda").render(analyze(kern)).source
    assert "unsigned long long kt_slots[2];" in cu
    launcher = cu[cu.index("cudaError_t stats_cuda("):cu.index("return cudaSuccess;")]
    assert launcher.count("cudaMemcpyAsync(") == 2 and launcher.count("cudaStreamSynchronize(stream)") == 1
    assert "reinterpret_cast<int*>(kt_acc + 0), k_identity, reinterpret_cast<double*>(kt_acc + 1), s_identity" in cu
    assert "std::memcpy(&k_part, &kt_slots[0], sizeof(int));" in cu and "k = kt_max(k, k_part);" in cu


def test_cuda_block_width_fits_the_fastest_loop(tmp_path: Path) -> None:
    """A 2-D or 3-D nest not walked by rows or planes gets blocks as wide as its fastest loop
    needs (kt_fit_width, chosen at launch); a schedule's block_rows or a plane walk keeps its shape."""
    point = Schedule(run_length=1)  # a 3-D nest, a thread per point
    src = get_renderer("cuda", point).render(hk.axpy3d(), point).source
    assert "const int bx = kt_fit_width(i_trip, 256);" in src and "const dim3 block(bx, by);" in src
    # rows of the block: one in a nest too small to give every SM a block of 256 (kt_small_nest)
    assert "const int by = kt_small_nest(1LL * i_trip * j_trip * k_trip) ? 1 : 256 / bx;" in src
    assert "kt_grid(i_trip, bx, INT_MAX), kt_grid(j_trip, by)" in src
    walked = get_renderer("cuda").render(hk.axpy3d()).source  # the first nest walks planes in 64 x 4
    assert "const dim3 block(64, 4);" in walked and walked.count("= kt_fit_width(") == 1  # the max nest fits
    rows = Schedule(block_rows=8, run_length=1)
    assert "kt_fit_width" not in get_renderer("cuda", rows).render(hk.axpy3d(), rows).source
    assert "kt_fit_width" not in get_renderer("cuda").render(hk.daxpy()).source  # 1-D
    if shutil.which("g++") is None:
        pytest.skip("g++ not found")
    helper = FIT_WIDTH
    probe = tmp_path / "fit.cpp"
    probe.write_text("#include <climits>\n#include <cstdio>\n" + helper + """
int main() {
    const int cases[][2] = {{1819, 256}, {10164, 256}, {13, 256}, {698, 256}, {559, 128}, {100000, 96}, {40, 96}};
    for (const auto& c : cases) printf("%d ", kt_fit_width(c[0], c[1]));
}
""")
    subprocess.run(["g++", "-O1", "-o", str(tmp_path / "fit"), str(probe)], check=True)
    out = subprocess.run([str(tmp_path / "fit")], check=True, capture_output=True, text=True).stdout.split()
    # 1819: 64 (37 idle lanes); 10164: 256 (76 idle of 10240 is under 1/32); 13: 32, the fewest idle;
    # 698: 64 (6 idle); 559: 64 (17 idle); a block that is not a multiple of 64 keeps its width
    assert out == ["64", "256", "32", "64", "64", "96", "96"]


def test_cuda_2d_block_text() -> None:
    """``block_rows`` shapes the blocks of 2-D and 3-D nests only; 1-D nests keep one row."""
    sch = Schedule(block=256, block_rows=8, run_length=1)
    src = get_renderer("cuda", sch).render(hk.axpy3d(), sch).source
    assert "const dim3 block(32, 8);" in src
    # the max over the 3-D nest in 32x8 blocks: warps by linear thread index, one thread combines
    assert "const int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);" in src
    assert "if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {" in src
    # a thread per point along x (no cap) unless the schedule asks for grid-stride loops
    assert "const dim3 grid(kt_grid(i_trip, 32, INT_MAX), kt_grid(j_trip, 8), kt_grid(k_trip, 1));" in src
    strided = replace(sch, grid_stride=True)
    assert "const dim3 grid(kt_grid(i_trip, 32), kt_grid(j_trip, 8), kt_grid(k_trip, 1));" in \
        get_renderer("cuda", strided).render(hk.axpy3d(), strided).source
    flat = get_renderer("cuda", sch).render(hk.daxpy(), sch).source
    assert "const dim3 block(256);" in flat
    assert sch.variant() == "as analysed, block 256 as 32x8, a point per thread"
    marching = Schedule(block=256, block_rows=8, run_length=4)
    src = get_renderer("cuda", marching).render(hk.axpy3d(), marching).source
    # no grid-stride loops: (rows, run) tiles over y and z, every thread one run of planes
    assert "const unsigned kt_rows = (j_trip + blockDim.y - 1) / blockDim.y;" in src
    assert "const int run = (int)(kt_tile / kt_rows);" in src
    assert "if (i >= i_trip || j >= j_trip || run * 4 >= k_trip) return;" in src
    assert "for (int k = run * 4; k < run_end; ++k) {" in src and "run += gridDim" not in src
    assert ("const dim3 grid(kt_tile_grid(kt_grid(i_trip, 32, INT_MAX), (unsigned long long)kt_grid(j_trip, 8, "
            "INT_MAX) * kt_grid((k_trip + 3) / 4, 1, INT_MAX)));") in src
    assert "inline dim3 kt_tile_grid(unsigned x, unsigned long long tiles) {" in src
    rows = get_renderer("cuda", marching).render(hk.stencil(), marching).source  # 2-D: runs of rows
    assert "const int run = blockIdx.y + gridDim.y * blockIdx.z;  // the block's run of 4 rows" in rows
    assert "if (i >= i_trip || run * 4 >= j_trip) return;" in rows
    assert "const dim3 block(256);" in rows and "kt_grid((j_trip + 3) / 4, 1, INT_MAX)" in rows
    assert "double kt_a_j0, kt_a_jp1;" in rows  # a(i+1, j), a(i+1, j+1), a(i+1, j+2) queued
    default_rows = get_renderer("cuda").render(hk.stencil()).source  # a 2-D stencil: runs of 8 rows by default
    assert "if (i >= i_trip || run * 8 >= j_trip) return;" in default_rows
    default = get_renderer("cuda").render(hk.axpy3d()).source  # 3-D nests walk planes unless told not to
    assert "const dim3 block(64, 4);" in default and "kt_grid((k_trip + 3) / 4, 1, INT_MAX)" in default


def test_cuda_register_queue_text() -> None:
    """A 3-D stencil walking planes with ``register_queues=True`` keeps u(i,j,k-1..k+1) in three registers:
    one load per plane; the in-plane neighbours are loads. By default a 3-D walk loads every
    plane, a 2-D walk keeps its queue (``-1``: neither)."""
    queued = Schedule(register_queues=True)
    src = get_renderer("cuda", queued).render(hk.lap3d(), queued).source
    assert "double kt_u_k0, kt_u_kp1;" in src
    assert "kt_u_k0 = u[i + 1 + u_n0 * (j + 1 + u_n1 * k)];" in src
    assert "const double kt_u_kp2 = u[i + 1 + u_n0 * (j + 1 + u_n1 * (k + 2))];" in src
    assert "kt_u_k0 = kt_u_kp1; kt_u_kp1 = kt_u_kp2;" in src
    assert src.count(" u[") == 3 + 4  # the queue's three loads and the four in-plane neighbours
    assert "-6.0 * kt_u_kp1 +" in src and "+ kt_u_k0 + kt_u_kp2;" in src
    loads = get_renderer("cuda").render(hk.lap3d()).source
    assert "kt_u_" not in loads and loads.count(" u[") == 7
    assert "double kt_a_j0, kt_a_jp1;" in get_renderer("cuda").render(hk.stencil()).source
    none = Schedule(register_queues=False)
    assert "kt_a_" not in get_renderer("cuda", none).render(hk.stencil(), none).source


def test_kokkos_text() -> None:
    src = get_renderer("kokkos").render(hk.stencil()).source
    assert "Kokkos::MDRangePolicy<Kokkos::Rank<2, Kokkos::Iterate::Left, Kokkos::Iterate::Left>>" in src
    assert "KOKKOS_LAMBDA(const int i, const int j)" in src  # contiguous i first
    assert "b(i + 1, j + 1) = 0.25 * (a(i, j + 1) + a(i + 2, j + 1) + a(i + 1, j) + a(i + 1, j + 2));" in src
    assert 'extern "C" void kt_stencil(int n, int m, const double* a, double* b)' in src
    assert "// stencil_loop1: parallel loop nest at blas.f:7" in src
    assert "Experimental" not in src
    dot = get_renderer("kokkos").render(hk.ddot()).source
    assert "Kokkos::parallel_reduce" in dot and "Kokkos::Sum<double>(dtemp_part)" in dot
    assert "dtemp = dtemp + dtemp_part;" in dot
    assert 'extern "C" double kt_ddot(int n, const double* dx, const double* dy)' in dot
    rev = get_renderer("kokkos").render(hk.reverse()).source
    assert "const int i = i_lo - k_i;" in rev and "const int i = i_lo + k_i * 2;" in rev
    # routines ending in RETURN: no return statement closing a void function, one closing a function
    axpy, ddot = hk.daxpy(), hk.ddot()
    ends = get_renderer("kokkos").render(replace(axpy, body=(*axpy.body, ir.Return()))).source
    api = ends[ends.index("void daxpy_kokkos("):ends.index("// C ABI shim")]
    assert api.rstrip().endswith("}") and not api.rstrip()[:-1].rstrip().endswith("return;")
    assert "return;\n    }" in api  # the quick return inside its if stays
    fn = get_renderer("kokkos").render(replace(ddot, body=(*ddot.body, ir.Return()))).source
    api = fn[fn.index("double ddot_kokkos("):fn.index("// C ABI shim")]
    assert "return ddot;\n    return ddot;" not in api and api.rstrip()[:-1].rstrip().endswith("return ddot;")


def test_cuda_text() -> None:
    r = get_renderer("cuda")
    src = r.render(hk.stencil()).source
    assert "const int i = blockIdx.x * blockDim.x + threadIdx.x;" in src
    assert "b[i + 1 + b_n0 * (j + 1)]" in src and "const int b_n0 = n + 2;" in src
    assert "cudaError_t stencil_cuda(int n, int m, const double* a, double* b, cudaStream_t stream)" in src
    dot = r.render(hk.ddot()).source
    assert "__shfl_down_sync" in dot and "atomicAdd" in dot and "kt_block_reduce(dtemp, KtSum()" in dot
    assert "KT_CUDA_CHECK(cudaMemcpy(" in dot and "cudaGetErrorString" in dot
    rec = r.render(hk.recur()).source
    assert "recur_serial1<<<1, 1, 0, stream>>>" in rec and "double t = *t_io;" in rec
    # a routine ending in RETURN: the launcher returns once at its end
    axpy = hk.daxpy()
    ends = r.render(replace(axpy, body=(*axpy.body, ir.Return()))).source
    assert ends.count("return cudaSuccess;\n}") == 2 and "return cudaSuccess;\n    return cudaSuccess;" not in ends


def test_cuda_cmake_and_kokkos_cmake() -> None:
    kk = get_renderer("kokkos")
    out = kk.build_files("blas1", [kk.render(hk.daxpy()), kk.render(hk.ddot())])
    text = out["kokkos/CMakeLists.txt"]
    assert "find_package(Kokkos REQUIRED)" in text and "Kokkos::kokkos" in text
    assert "add_library(blas1_kokkos\n" in text and "set(BUILD_SHARED_LIBS ON)" in text and "daxpy_kokkos.cpp" in text
    cu = get_renderer("cuda").build_files("blas1", [get_renderer("cuda").render(hk.ddot())])["cuda/CMakeLists.txt"]
    assert "LANGUAGES CXX CUDA" in cu and "CMAKE_CUDA_ARCHITECTURES 90" in cu


def test_expressions_minimal_parentheses() -> None:
    r = get_renderer("cuda")
    assert isinstance(r, CStyleRenderer)
    r.begin(hk.daxpy())
    a, b_, c_ = hk.v("a", ir.DType.F64), hk.v("b", ir.DType.F64), hk.v("c", ir.DType.F64)
    assert r.expr(hk.b("mul", hk.b("add", a, b_), c_)) == "(a + b) * c"
    assert r.expr(hk.b("add", a, hk.b("mul", b_, c_))) == "a + b * c"
    assert r.expr(hk.b("sub", a, hk.b("sub", b_, c_))) == "a - (b - c)"
    assert r.expr(hk.b("sub", hk.b("sub", a, b_), c_)) == "a - b - c"
    assert r.expr(hk.b("add", a, hk.b("add", b_, c_))) == "a + (b + c)"  # float order kept
    assert r.expr(hk.b("sub", a, ir.Const(-1.0, ir.DType.F64))) == "a - (-1.0)"
    assert r.expr(ir.UnOp("neg", hk.b("add", a, b_), ir.DType.F64)) == "-(a + b)"
    assert r.expr(hk.b("pow", a, hk.c(2), ir.DType.F64)) == "a * a"
    assert r.expr(hk.b("pow", hk.b("add", a, b_), hk.c(5), ir.DType.F64)) == "pow(a + b, 5.0)"
    assert r.expr(hk.b("pow", hk.v("k"), hk.v("e"))) == "kt_ipow(k, e)"
    assert r.expr(hk.b("mod", hk.v("k"), hk.c(3))) == "k % 3"
    assert r.expr(hk.b("mod", a, b_)) == "fmod(a, b)"
    assert r.expr(ir.Call("sign", (a, b_), ir.DType.F64)) == "copysign(fabs(a), b)"
    assert r.expr(ir.Call("sign", (hk.v("k"), hk.v("e")), ir.DType.I32)) == "kt_sign(k, e)"
    assert r.expr(ir.Call("nint", (a,), ir.DType.I32)) == "(int)lround(a)"
    assert r.expr(ir.Call("abs", (hk.v("k"),), ir.DType.I32)) == "abs(k)"
    assert r.expr(ir.Call("abs", (ir.Var("f", ir.DType.F32),), ir.DType.F32)) == "fabsf(f)"
    assert r.expr(ir.Call("max", (a, b_, c_), ir.DType.F64)) == "fmax(fmax(a, b), c)"
    assert r.expr(ir.Call("lsame", (hk.v("t", ir.DType.CHAR), hk.c("n")), ir.DType.BOOL)) == "kt_lsame(t, 'n')"
    assert r.expr(ir.Cast(ir.DType.F64, hk.b("add", hk.v("k"), hk.c(1)))) == "(double)(k + 1)"
    assert r.expr(ir.Select(hk.b("lt", a, b_), a, b_, ir.DType.F64)) == "a < b ? a : b"
    assert r.expr(ir.Const(1.5, ir.DType.F32)) == "1.5f"


def test_unsupported_is_structured() -> None:
    x = hk.v("x", ir.DType.F64)
    body = (ir.Assign(x, ir.Call("bessel_j0", (x,), ir.DType.F64)),)
    bad = ir.Kernel("bad", (ir.Scalar("x", ir.DType.F64, ir.Intent.INOUT),), (), body, hk.origin(1))
    with pytest.raises(Unsupported) as err:
        get_renderer("kokkos").render(bad)
    assert err.value.target == "kokkos" and err.value.node_type == "Call"
    assert "bessel_j0" in err.value.to_dict()["reason"]


def test_schedule_levels_render() -> None:
    for level in (1, 2):
        for target in ("kokkos", "cuda"):
            src = get_renderer(target, Schedule(level=level)).render(hk.axpy3d()).source
            assert "MDRangePolicy" not in src
    serial = get_renderer("kokkos", Schedule(level=2)).render(hk.ddot()).source
    assert "parallel_reduce" not in serial and "ddot_serial1" in serial


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("gfortran") is None, reason="gfortran not found")
@pytest.mark.parametrize("make", hk.ALL, ids=lambda f: f.__name__)
def test_fortran_interface_compiles(make: Callable[[], ir.Kernel], tmp_path: Path) -> None:
    k = make()
    src = tmp_path / f"{k.name}_interface.f90"
    src.write_text(fortran_interface(k))
    res = subprocess.run(["gfortran", "-c", src.name], cwd=tmp_path, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    text = src.read_text()
    assert f'bind(C, name="kt_{k.name}")' in text and "use iso_c_binding" in text


def test_cuda_reduction_loop_unrolled_text() -> None:
    """A 1-D reduction's grid-stride loop takes four iterations at a time without bounds
    checks, then the rest one at a time; 2-D reductions keep one loop per axis."""
    src = get_renderer("cuda").render(hk.ddot()).source
    assert "for (; i_first + 3LL * stride < i_trip; i_first += 4 * stride) {" in src
    assert "const int i = i_first + 3 * stride;" in src and "for (; i_first < i_trip; i_first += stride) {" in src
    assert "i_first" not in get_renderer("cuda").render(hk.axpy3d()).source


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_NVCC, reason="nvcc not found")
def test_cuda_register_queue_of_an_upper_case_array_compiles(tmp_path: Path) -> None:
    # C sources keep their case (``A[i][j]``): the queue's registers are declared and read
    # under one spelling
    k = hk.stencil()
    k = replace(k, params=tuple(replace(p, name="A") if p.name == "a" else p for p in k.params),
                body=tuple(ir.rename_array(s, "a", "A") for s in k.body))  # type: ignore[misc]
    sched = Schedule(block_rows=8, run_length=3, register_queues=True)
    src = get_renderer("cuda", sched).render(k, sched).source
    assert "kt_a_" in src and "kt_A_" not in src
    project_library("cuda", [get_renderer("cuda", sched).render(k, sched)], tmp_path)
