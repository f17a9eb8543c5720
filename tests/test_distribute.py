"""translate.distribute: an outermost parallel loop whose body is parallel loops becomes one loop
per inner loop (one 2-D nest each), checked by running both forms with Kokkos Serial where the
loops share an array; loops sharing a local scratch array stay whole."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from targets.base import get_renderer
from tests.kt_apart import call_apart
from tests.kt_builds import kokkos_library
from translate import ir
from translate.analysis import analyze
from translate.distribute import distribute
from translate.partition import DeviceNest, device_segments, partition
from translate.schedule import Schedule

pytest.importorskip("fparser")

from parsers.fortran import parse_source  # noqa: E402

HAVE_KOKKOS = Path("/usr/include/trilinos/Kokkos_Core.hpp").exists()

# NPB MG's comm3 (periodic boundaries of each plane): the second loop reads edge elements the
# first one wrote (u(1, n2 - 1, i3) and u(n1, n2 - 1, i3))
EDGES = """\
subroutine edges(n1, n2, n3, u)
  integer, intent(in) :: n1, n2, n3
  double precision, intent(inout) :: u(n1, n2, n3)
  integer :: i1, i2, i3
  do i3 = 2, n3 - 1
    do i2 = 2, n2 - 1
      u(1, i2, i3) = u(n1 - 1, i2, i3)
      u(n1, i2, i3) = u(2, i2, i3)
    end do
    do i1 = 1, n1
      u(i1, 1, i3) = u(i1, n2 - 1, i3)
      u(i1, n2, i3) = u(i1, 2, i3)
    end do
  end do
end subroutine edges
"""


def _kernel(src: str) -> ir.Kernel:
    (raw,) = parse_source(src, "d.f90", fixed_form=False).kernels
    assert isinstance(raw, ir.Kernel), getattr(raw, "reason", raw)
    return analyze(raw)


def _nests(k: ir.Kernel) -> list[DeviceNest]:
    return [s for s in device_segments(partition(k)) if isinstance(s, DeviceNest)]


def _edges(u: np.ndarray) -> np.ndarray:
    out = u.copy(order="F")
    for i3 in range(1, u.shape[2] - 1):
        out[0, 1:-1, i3] = out[-2, 1:-1, i3]
        out[-1, 1:-1, i3] = out[1, 1:-1, i3]
        out[:, 0, i3] = out[:, -2, i3]
        out[:, -1, i3] = out[:, 1, i3]
    return out


def test_a_plane_loop_over_two_edge_loops_becomes_two_2d_nests_with_the_same_result(tmp_path: Path) -> None:
    k = _kernel(EDGES)
    assert [len(n.loops) for n in _nests(k)] == [1]
    split = distribute(k)
    assert [[lp.var for lp in n.loops] for n in _nests(split)] == [["i3", "i2"], ["i3", "i1"]]
    u = np.asfortranarray(np.random.default_rng(3).standard_normal((9, 7, 6)))
    want = _edges(u)
    for schedule in (Schedule(), Schedule(distribute=False)):
        src = get_renderer("kokkos").render(k, schedule).source
        assert src.count("Kokkos::parallel_for(") == (2 if schedule.distribute else 1)
        if HAVE_KOKKOS:
            got = u.copy(order="F")
            lib = kokkos_library(get_renderer("kokkos").render(k, schedule), tmp_path / str(schedule.distribute))
            call_apart(lib, "kt_edges", *u.shape, got)
            np.testing.assert_array_equal(got, want)


def test_inner_loops_sharing_a_scratch_row_stay_in_one_nest() -> None:
    """A local scratch row one inner loop fills and the next reads is a row kernel's business."""
    body = ("    do i1 = 1, n1\n      w(i1) = u(i1, 2, i3)\n    end do\n    do i1 = 2, n1 - 1\n"
            "      u(i1, 1, i3) = w(i1 - 1) + w(i1 + 1)\n    end do\n")
    src = ("subroutine keep(n1, n2, n3, u)\n  integer, intent(in) :: n1, n2, n3\n"
           "  double precision, intent(inout) :: u(n1, n2, n3)\n  double precision :: w(64)\n"
           f"  integer :: i1, i3\n  do i3 = 1, n3\n{body}  end do\nend subroutine keep\n")
    k = _kernel(src)
    (outer,) = [s for s in k.body if isinstance(s, ir.Loop)]
    assert outer.kind is ir.LoopKind.PARALLEL  # w given one copy per i3
    assert all(isinstance(p, ir.Loop) and p.kind is ir.LoopKind.PARALLEL for p in outer.body)
    assert distribute(k) == k
