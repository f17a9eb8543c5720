"""translate.bounds: loop bounds read from a read-only array (NPB's ``grid_points(3)``) become
scalars read once, so the nest is a parallel kernel with a host-side trip count; elements that
may change or lie outside the array stay where they are."""

from __future__ import annotations

import pytest

from translate import ir
from translate.analysis import analyze
from translate.partition import DeviceNest, DeviceSerial, device_segments, partition

pytest.importorskip("fparser")

from parsers.fortran import parse_source  # noqa: E402

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
