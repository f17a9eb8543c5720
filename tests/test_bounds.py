"""translate.bounds: loop bounds read from a read-only array (NPB's ``grid_points(3)``) become
scalars read once, so the nest is a parallel kernel with a host-side trip count; elements that
may change or lie outside the array stay where they are."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from targets.base import get_renderer
from tests.kt_apart import call_apart
from tests.kt_builds import kokkos_library
from tests.kt_modules import triton_module
from translate import ir
from translate.analysis import analyze
from translate.partition import DeviceNest, DeviceSerial, device_segments, partition
from translate.schedule import Schedule

pytest.importorskip("fparser")

from parsers.fortran import parse_source  # noqa: E402

HAVE_KOKKOS = Path("/usr/include/trilinos/Kokkos_Core.hpp").exists()

SRC = """\
subroutine sweep(grid, u, n)
  integer, intent(in) :: n
  integer, intent(in) :: grid(3)
  double precision, intent(inout) :: u(n, n)
  integer :: i, j
  do j = 1, grid(2) - 1
    do i = 1, grid(1) - 1
      u(i, j) = 2.0d0 * u(i, j)
    end do
  end do
end subroutine sweep
"""


def _kernel(src: str) -> ir.Kernel:
    (k,) = parse_source(src, "sweep.f90", fixed_form=False).kernels
    assert isinstance(k, ir.Kernel), getattr(k, "reason", k)
    return analyze(k)


def test_bounds_from_a_read_only_array_become_scalars_and_the_nest_runs_in_parallel() -> None:
    k = _kernel(SRC)
    assert {d.name for d in k.locals} >= {"grid_1", "grid_2"}
    first = k.body[:2]
    assert all(isinstance(s, ir.Assign) and isinstance(s.value, ir.Load) for s in first)
    segs = device_segments(partition(k))
    assert [type(s) for s in segs] == [DeviceSerial, DeviceNest]  # the two reads, then the nest
    nest = segs[1]
    assert isinstance(nest, DeviceNest) and {"grid_1", "grid_2"} <= set(nest.scalars_in)


@pytest.mark.parametrize(("change", "hoisted"), [
    (("  integer :: i, j\n", "  integer :: i, j\n  grid(3) = 4\n"), set()),  # written: it may change
    (("grid(2) - 1", "grid(n) - 1"), {"grid_1"}),  # a subscript that is not a constant
    (("grid(2) - 1", "grid(4) - 1"), {"grid_1"}),  # outside the array
])
def test_elements_that_may_change_or_lie_outside_stay_in_the_bounds(change: tuple[str, str], hoisted: set[str]) -> None:
    k = _kernel(SRC.replace(*change).replace("intent(in) :: grid(3)", "intent(inout) :: grid(3)"))
    assert {d.name for d in k.locals if d.name.startswith("grid_")} == hoisted
    outer = next(n for s in k.body for n in ir.walk(s) if isinstance(n, ir.Loop) and n.var == "j")
    assert any(isinstance(x, ir.Load) for x in ir.walk(outer.stop))


SCRATCH = """\
subroutine rows(grid, u)
  integer, intent(in) :: grid(2)
  double precision, intent(inout) :: u(8, 6)
  double precision :: w(8)
  integer :: i, j
!$omp parallel do private(i, w)
  do j = 1, grid(2)
    do i = 1, grid(1) + 1
      w(i) = 2.0d0 * u(i, j)
    end do
    do i = 1, grid(1)
      u(i, j) = w(i) + w(i + 1)
    end do
  end do
end subroutine rows
"""


def _rows_want(u: np.ndarray, g1: int, g2: int) -> np.ndarray:
    want = u.copy(order="F")
    for j in range(g2):
        w = 2.0 * u[:g1 + 1, j]
        want[:g1, j] = w[:-1] + w[1:]
    return want


def test_a_scratch_array_per_iteration_of_a_loop_bounded_by_an_entry_read_runs_on_every_target(
        tmp_path: Path) -> None:
    # NPB BT's x/y/z_solve: the loop's bound is read from grid_points at entry, so the copies'
    # count is known only after that read; each target allocates the copies after it
    (raw,) = parse_source(SCRATCH, "rows.f90", fixed_form=False).kernels
    assert isinstance(raw, ir.Kernel)
    k = analyze(raw)
    (j,) = [n for s in k.body for n in ir.walk(s) if isinstance(n, ir.Loop) and n.var == "j"]
    assert j.kind is ir.LoopKind.PARALLEL and "w: one copy per iteration" in j.reason, j.reason
    rng = np.random.default_rng(4)
    u = np.asfortranarray(rng.standard_normal((8, 6)))
    grid = np.array([7, 5], dtype=np.int32)
    want = _rows_want(u, 7, 5)
    rendered = {t: get_renderer(t).render(k) for t in ("kokkos", "cuda", "triton")}
    # as a row kernel each row's copy of w is on chip (targets.row_scratch); a thread per row
    # allocates the copies, after the entry reads, not before
    whole = {t: get_renderer(t, Schedule(row_programs=False)).render(k) for t in ("kokkos", "cuda")}
    for t in ("kokkos", "cuda"):
        assert "// local array" not in rendered[t].source, t
        text = whole[t].source
        assert text.index("grid_2 =") < text.index("// local array"), t
    if HAVE_KOKKOS:
        for name, r in (("chip", rendered["kokkos"]), ("whole", whole["kokkos"])):
            got = u.copy(order="F")
            call_apart(kokkos_library(r, tmp_path / name), "kt_rows", grid, got)
            np.testing.assert_allclose(got, want, rtol=1e-15)
    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    dev = "cpu" if os.environ.get("TRITON_INTERPRET") == "1" else "cuda"
    mod = triton_module(rendered["triton"], tmp_path / "triton", f"kt_rows_{abs(hash(tmp_path))}")
    tu = torch.from_numpy(u.ravel(order="F").copy()).to(dev)
    mod.rows_(torch.from_numpy(grid.copy()).to(dev), tu)  # the launcher's Python name
    np.testing.assert_allclose(tu.cpu().numpy().reshape((8, 6), order="F"), want, rtol=1e-15)


def test_a_bound_set_again_later_keeps_the_loop_serial() -> None:
    src = SCRATCH.replace("  integer :: i, j\n", "  integer :: i, j, m\n").replace(
        "  do j = 1, grid(2)\n", "  m = grid(2)\n  if (u(1, 1) > 0d0) m = m - 1\n  do j = 1, m\n")
    (raw,) = parse_source(src, "rows.f90", fixed_form=False).kernels
    (j,) = [n for s in analyze(raw).body for n in ir.walk(s) if isinstance(n, ir.Loop) and n.var == "j"]
    assert j.kind is not ir.LoopKind.PARALLEL or "one copy per iteration" not in j.reason


BLOCKS = """\
subroutine planes(grid, u)
  integer, intent(in) :: grid(3)
  double precision, intent(inout) :: u(8, 6, 5)
  double precision :: w(0:8)
  integer :: i, j, k
!$omp parallel do collapse(2) private(i, w)
  do k = 1, grid(3)
    do j = 1, grid(2)
      w(0) = 1.0d0
      do i = 1, grid(1)
        w(i) = 2.0d0 * u(i, j, k)
      end do
      do i = 1, grid(1)
        u(i, j, k) = w(i - 1) + w(i)
      end do
      u(8, j, k) = w(grid(1))
    end do
  end do
end subroutine planes
"""


def test_copies_of_a_scratch_array_filled_in_pieces_go_out_to_both_collapsed_loops(tmp_path: Path) -> None:
    # NPB BT's lhs: its first element set alone, the rest by a loop, inside loops bounded by entry
    # reads; the copies of the inner loop are taken out to the outer one, each j proven filled
    (raw,) = parse_source(BLOCKS, "planes.f90", fixed_form=False).kernels
    assert isinstance(raw, ir.Kernel)
    k = analyze(raw)
    nest = {n.var: n for s in k.body for n in ir.walk(s) if isinstance(n, ir.Loop) and n.var in ("j", "k")}
    assert all(lp.kind is ir.LoopKind.PARALLEL for lp in nest.values()), [lp.reason for lp in nest.values()]
    rng = np.random.default_rng(6)
    u = np.asfortranarray(rng.standard_normal((8, 6, 5)))
    g = (7, 5, 4)
    want = u.copy(order="F")
    for kk in range(g[2]):
        for jj in range(g[1]):
            w = np.concatenate([[1.0], 2.0 * u[:g[0], jj, kk]])
            want[:g[0], jj, kk] = w[:-1] + w[1:]
            want[7, jj, kk] = w[g[0]]  # one element read after the loops, in every j alike
    grid = np.array(g, dtype=np.int32)
    if HAVE_KOKKOS:
        got = u.copy(order="F")
        call_apart(kokkos_library(get_renderer("kokkos").render(k), tmp_path / "kokkos"), "kt_planes", grid, got)
        np.testing.assert_allclose(got, want, rtol=1e-15)
    # the first element left unset: the reads of w(0) are not covered; the loops are parallel only
    # on the source's word (its PRIVATE w), and serial without the directive
    unset = BLOCKS.replace("      w(0) = 1.0d0\n", "")
    for src, kind in ((unset, ir.LoopKind.PARALLEL), (unset.replace("!$omp parallel do collapse(2) private(i, w)\n",
                                                                     ""), ir.LoopKind.SERIAL)):
        (raw,) = parse_source(src, "planes.f90", fixed_form=False).kernels
        both = [n for s in analyze(raw).body for n in ir.walk(s) if isinstance(n, ir.Loop) and n.var in ("j", "k")]
        assert [lp.kind for lp in both] == [kind] * 2, [lp.reason for lp in both]
        assert ("w: one copy per iteration, as the source's" in both[0].reason) == (kind is ir.LoopKind.PARALLEL)


EDGES = """\
subroutine edges(grid, u, w, f, n)
  integer, intent(in) :: n
  integer, intent(in) :: grid(2)
  double precision, intent(in) :: u(n, n)
  double precision, intent(inout) :: w(n), f(n, n)
  integer :: i, j, m
  do i = 2, grid(1)
    do j = 1, grid(2)
      f(i, j) = f(i, j) + f(i - 1, j)
    end do
  end do
  do j = 1, grid(2)
    do i = 1, grid(1)
      w(i) = 2.0d0 * u(i, j)
    end do
    do m = 1, 2
      i = 1
      f(i, j) = f(i, j) - m * w(i + 1)
    end do
    do i = 2, grid(1) - 1
      f(i, j) = f(i, j) - w(i)
    end do
    do m = 1, 2
      i = grid(1)
      f(i, j) = f(i, j) - m * w(i - 1)
    end do
  end do
end subroutine edges
"""


def test_a_loop_variable_a_serial_segment_sets_outside_its_loops_is_declared(tmp_path: Path) -> None:
    # NPB BT's exact_rhs: ``i = 1`` and the edge update, inside a loop over m, run as a serial
    # segment inside a host loop over j, after a host loop over i; the host code must declare i for it
    (raw,) = parse_source(EDGES, "edges.f90", fixed_form=False).kernels
    assert isinstance(raw, ir.Kernel)
    k = analyze(raw)
    rng = np.random.default_rng(8)
    n, g = 9, (7, 5)
    u = np.asfortranarray(rng.standard_normal((n, n)))
    f0 = np.asfortranarray(rng.standard_normal((n, n)))
    want, w = f0.copy(order="F"), np.zeros(n)
    for i in range(1, g[0]):
        want[i, :g[1]] += want[i - 1, :g[1]]
    for j in range(g[1]):
        w[:g[0]] = 2.0 * u[:g[0], j]
        want[0, j] -= 3.0 * w[1]
        want[1:g[0] - 1, j] -= w[1:g[0] - 1]
        want[g[0] - 1, j] -= 3.0 * w[g[0] - 2]
    rendered = {t: get_renderer(t).render(k) for t in ("kokkos", "cuda")}
    for t, text in rendered.items():
        assert "int i = 0;" in text.source, t
    if HAVE_KOKKOS:
        got, gw = f0.copy(order="F"), np.zeros(n)
        grid = np.array(g, dtype=np.int32)
        call_apart(kokkos_library(rendered["kokkos"], tmp_path / "kokkos"), "kt_edges", grid, u, gw, got, n)
        np.testing.assert_allclose(got, want, rtol=1e-15)
