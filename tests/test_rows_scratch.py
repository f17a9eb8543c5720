"""targets.rows with scratch rows: a parallel nest whose inner loops fill a row of a scratch
array and read it back at neighbouring elements (NPB MG's resid and psinv) runs one warp
(CUDA) or one team (Kokkos) per row, with a barrier between the inner loops; an inner loop
that is not parallel keeps the thread-per-row kernel."""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import pytest

from targets import rows
from targets.base import get_renderer
from tests.gpu import gpu_function
from tests.kt_apart import call_apart
from tests.kt_builds import kokkos_library
from translate import ir
from translate.analysis import analyze
from translate.partition import DeviceNest, device_segments, partition

pytest.importorskip("fparser")

from parsers.fortran import parse_source  # noqa: E402

HAVE_KOKKOS = Path("/usr/include/trilinos/Kokkos_Core.hpp").exists()

SMOOTH = """\
subroutine smooth(n1, n2, n3, u, r)
  integer, intent(in) :: n1, n2, n3
  double precision, intent(in) :: u(n1, n2, n3)
  double precision, intent(inout) :: r(n1, n2, n3)
  double precision :: u1(64), u2(64)
  integer :: i1, i2, i3
  do i3 = 2, n3 - 1
    do i2 = 2, n2 - 1
      do i1 = 1, n1
        u1(i1) = u(i1, i2 - 1, i3) + u(i1, i2 + 1, i3)
        u2(i1) = u(i1, i2, i3 - 1) + u(i1, i2, i3 + 1)
      end do
      do i1 = 2, n1 - 1
        {second}
      end do
    end do
  end do
end subroutine smooth
"""
NEIGHBOURS = "r(i1, i2, i3) = r(i1, i2, i3) + u1(i1 - 1) + u1(i1 + 1) + 0.5d0 * u2(i1)"
RECURRENCE = "u1(i1) = u1(i1 - 1) + u2(i1)\n        r(i1, i2, i3) = u1(i1)"


def _kernel(second: str) -> ir.Kernel:
    (raw,) = parse_source(SMOOTH.replace("{second}", second), "smooth.f90", fixed_form=False).kernels
    assert isinstance(raw, ir.Kernel), getattr(raw, "reason", raw)
    return analyze(raw)


def _nest(k: ir.Kernel) -> DeviceNest:
    (seg,) = [s for s in device_segments(partition(k)) if isinstance(s, DeviceNest)]
    return seg


def _want(u: np.ndarray, r: np.ndarray) -> np.ndarray:
    out = r.copy(order="F")
    n1, n2, n3 = u.shape
    for i3 in range(1, n3 - 1):
        for i2 in range(1, n2 - 1):
            u1 = u[:, i2 - 1, i3] + u[:, i2 + 1, i3]
            u2 = u[:, i2, i3 - 1] + u[:, i2, i3 + 1]
            out[1:n1 - 1, i2, i3] += u1[:n1 - 2] + u1[2:] + 0.5 * u2[1:n1 - 1]
    return out


def test_scratch_rows_run_a_row_per_warp_or_team_with_a_barrier_between_the_loops(tmp_path: Path) -> None:
    k = _kernel(NEIGHBOURS)
    seg = _nest(k)
    assert [lp.var for lp in seg.loops] == ["i3", "i2"]  # u1 and u2 copied per row
    assert rows.row_nest(seg, k, scratch=True) and rows.needs_barrier(seg)
    assert not rows.row_nest(seg, k)  # Triton's row programs keep the plain nest
    cuda, kokkos = (get_renderer(t).render(k) for t in ("cuda", "kokkos"))
    # a barrier between the loops and one before the warp or team takes its next row
    assert "one warp per (i3, i2)" in cuda.source and cuda.source.count("__syncwarp();") == 2
    assert "one team per (i3, i2)" in kokkos.source and kokkos.source.count("team.team_barrier();") == 2
    # the row's copies of u1 and u2 on chip (targets.row_scratch), none allocated in memory
    assert "__shared__ double u1_rows[8][64];" in cuda.source and "kt_buffer<double> u1" not in cuda.source
    assert "u1_row u1(team.team_scratch(0), 64);" in kokkos.source and '("u1"' not in kokkos.source
    rng = np.random.default_rng(11)
    shape = (37, 6, 5)  # a row longer than a warp, not a multiple of it
    u = np.asfortranarray(rng.standard_normal(shape))
    r0 = np.asfortranarray(rng.standard_normal(shape))
    want = _want(u, r0)
    argtypes = [ctypes.c_int] * 3 + [ctypes.c_void_p] * 2
    if HAVE_KOKKOS:
        got = r0.copy(order="F")
        call_apart(kokkos_library(kokkos, tmp_path / "kokkos"), "kt_smooth", *shape, u, got)
        np.testing.assert_allclose(got, want, rtol=1e-14)
    fn = gpu_function(cuda, tmp_path / "cuda", "kt_smooth")  # built with nvcc here; run where a GPU is
    fn.argtypes = argtypes
    got = r0.copy(order="F")
    fn(*shape, u.ctypes.data, got.ctypes.data)
    np.testing.assert_allclose(got, want, rtol=1e-14)


def test_an_inner_loop_carrying_a_recurrence_through_the_scratch_row_keeps_a_thread_per_row() -> None:
    k = _kernel(RECURRENCE)
    seg = _nest(k)
    assert [lp.var for lp in seg.loops] == ["i3", "i2"]
    (_, second) = rows.inner_loops(seg)
    assert second.kind is ir.LoopKind.SERIAL
    assert not rows.row_nest(seg, k, scratch=True)
    assert "__syncwarp" not in get_renderer("cuda").render(k).source


@pytest.mark.parametrize("declared", ["u1(n1), u2(n1)", "u1(4000), u2(4000)"])
def test_scratch_rows_of_unknown_or_large_size_stay_in_memory(declared: str) -> None:
    """One row's copy must have a constant size within ``row_scratch.ROW_BYTES`` to go on chip."""
    src = SMOOTH.replace("{second}", NEIGHBOURS).replace("u1(64), u2(64)", declared)
    (raw,) = parse_source(src, "smooth.f90", fixed_form=False).kernels
    assert isinstance(raw, ir.Kernel), getattr(raw, "reason", raw)
    k = analyze(raw)
    assert rows.row_nest(_nest(k), k, scratch=True)
    cuda, kokkos = (get_renderer(t).render(k).source for t in ("cuda", "kokkos"))
    assert "__shared__" not in cuda and "kt_buffer<double> u1_buf(" in cuda and "<<<grid, 256," in cuda
    assert "team_scratch" not in kokkos and '("u1"' in kokkos


RESTRICT = """\
subroutine restrict(m1k, m2k, m3k, r, m1j, m2j, m3j, s)
  integer, intent(in) :: m1k, m2k, m3k, m1j, m2j, m3j
  double precision, intent(in) :: r(m1k, m2k, m3k)
  double precision, intent(inout) :: s(m1j, m2j, m3j)
  double precision :: x1(64), y1(64), x2, y2
  integer :: i1, i2, i3, j1, j2, j3
  do j3 = 2, m3j - 1
    do j2 = 2, m2j - 1
      i3 = 2 * j3 - 1
      i2 = 2 * j2 - 1
      do j1 = 2, m1j
        i1 = 2 * j1 - 1
        x1(i1 - 1) = r(i1 - 1, i2 - 1, i3) + r(i1 - 1, i2 + 1, i3) + r(i1 - 1, i2, i3 - 1) + r(i1 - 1, i2, i3 + 1)
        y1(i1 - 1) = r(i1 - 1, i2 - 1, i3 - 1) + r(i1 - 1, i2 + 1, i3 + 1)
      end do
      do j1 = 2, m1j - 1
        i1 = 2 * j1 - 1
        x2 = r(i1, i2 - 1, i3) + r(i1, i2 + 1, i3)
        s(j1, j2, j3) = 0.5d0 * r(i1, i2, i3) + 0.25d0 * (x1(i1 - 1) + x1(i1 + 1) + x2) + 0.125d0 * y1(i1 + 1)
      end do
    end do
  end do
end subroutine restrict
"""


def _restricted(r: np.ndarray, s: np.ndarray) -> np.ndarray:
    """RESTRICT in numpy, 1-based indices shifted by one."""
    out = s.copy(order="F")
    m1j, m2j, m3j = s.shape
    for j3 in range(2, m3j):
        for j2 in range(2, m2j):
            i3, i2 = 2 * j3 - 1, 2 * j2 - 1
            x1, y1 = {}, {}
            for j1 in range(2, m1j + 1):
                i1 = 2 * j1 - 1
                x1[i1 - 1] = (r[i1 - 2, i2 - 2, i3 - 1] + r[i1 - 2, i2, i3 - 1] + r[i1 - 2, i2 - 1, i3 - 2]
                              + r[i1 - 2, i2 - 1, i3])
                y1[i1 - 1] = r[i1 - 2, i2 - 2, i3 - 2] + r[i1 - 2, i2, i3]
            for j1 in range(2, m1j):
                i1 = 2 * j1 - 1
                x2 = r[i1 - 1, i2 - 2, i3 - 1] + r[i1 - 1, i2, i3 - 1]
                out[j1 - 1, j2 - 1, j3 - 1] = (0.5 * r[i1 - 1, i2 - 1, i3 - 1] + 0.25 * (x1[i1 - 1] + x1[i1 + 1] + x2)
                                               + 0.125 * y1[i1 + 1])
    return out


def test_a_restriction_indexed_through_a_scalar_of_the_loop_runs_a_row_per_warp_or_team(tmp_path: Path) -> None:
    """NPB MG's rprj3: the inner loops index every array through ``i1 = 2*j1 - 1`` (rows.index_temps)
    and share the scratch rows x1, y1 (written at every second element)."""
    (raw,) = parse_source(RESTRICT, "restrict.f90", fixed_form=False).kernels
    assert isinstance(raw, ir.Kernel), getattr(raw, "reason", raw)
    k = analyze(raw)
    seg = _nest(k)
    assert rows.row_nest(seg, k, scratch=True)
    cuda, kokkos = (get_renderer(t).render(k) for t in ("cuda", "kokkos"))
    assert "one warp per (j3, j2)" in cuda.source and "__shared__ double x1_rows[8][64];" in cuda.source
    assert "one team per (j3, j2)" in kokkos.source and "x1_row x1(team.team_scratch(0), 64);" in kokkos.source
    rng = np.random.default_rng(5)
    r = np.asfortranarray(rng.standard_normal((2 * 30 + 1, 9, 7)))
    s0 = np.asfortranarray(rng.standard_normal((30, 5, 4)))  # x1(2*30 - 2) inside x1(64)
    want = _restricted(r, s0)
    if HAVE_KOKKOS:
        got = s0.copy(order="F")
        call_apart(kokkos_library(kokkos, tmp_path / "kokkos"), "kt_restrict", *r.shape, r, *s0.shape, got)
        np.testing.assert_allclose(got, want, rtol=1e-14)
    fn = gpu_function(cuda, tmp_path / "cuda", "kt_restrict")
    fn.argtypes = [ctypes.c_int] * 3 + [ctypes.c_void_p] + [ctypes.c_int] * 3 + [ctypes.c_void_p]
    got = s0.copy(order="F")
    fn(*r.shape, r.ctypes.data, *s0.shape, got.ctypes.data)
    np.testing.assert_allclose(got, want, rtol=1e-14)
