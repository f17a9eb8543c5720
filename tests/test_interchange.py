"""translate.interchange: a serial loop around one parallel loop becomes the parallel
loop outside (reference DGEMV 'N'), only when that is legal."""

from __future__ import annotations

import pytest

from translate import ir
from translate.analysis import analyze
from translate.schedule import Schedule, apply_schedule

pytest.importorskip("fparser")

from parsers.fortran import parse_source  # noqa: E402
from tests.kt_hand_kernels import GEMV_N  # noqa: E402


def kernel(src: str) -> ir.Kernel:
    (k,) = parse_source(src, "g.f90", fixed_form=False).kernels
    assert isinstance(k, ir.Kernel), getattr(k, "reason", k)
    return analyze(k)


def top_loop(k: ir.Kernel) -> ir.Loop:
    (lp,) = [s for s in k.body if isinstance(s, ir.Loop)]
    return lp


def test_gemv_n_runs_parallel_over_rows_with_the_column_loop_inside() -> None:
    k = kernel(GEMV_N)
    assert top_loop(k).swappable and "interchanged by the schedule" in top_loop(k).reason
    outer = top_loop(apply_schedule(k, Schedule()))
    assert outer.var == "i" and outer.kind is ir.LoopKind.PARALLEL and "temp" in outer.private
    (inner,) = outer.body
    assert isinstance(inner, ir.Loop) and inner.var == "j" and inner.kind is ir.LoopKind.SERIAL
    # the schedule can keep the source order
    assert top_loop(apply_schedule(k, Schedule(interchange=False))).var == "j"


@pytest.mark.parametrize(("why", "src"), [
    ("the written element moves with j", GEMV_N.replace("y(i) = y(i) + temp*a(i, j)", "y(i) = y(i) + temp*a(i, j)\n"
                                                        "      a2(i, j) = temp").replace(
        "double precision, intent(inout) :: y(m)", "double precision, intent(inout) :: y(m), a2(m, n)").replace(
        "subroutine gemvn(m, n, alpha, a, x, y)", "subroutine gemvn(m, n, alpha, a, x, y, a2)")),
    ("temp is used after the loop",
     GEMV_N.replace("  end do\nend subroutine", "  end do\n  y(1) = temp\nend subroutine")),
    ("the scalar work reads what the inner loop writes", GEMV_N.replace("temp = alpha*x(j)", "temp = alpha*y(j)")),
    ("y is read at another element",
     GEMV_N.replace("y(i) = y(i) + temp*a(i, j)", "y(i) = y(m + 1 - i) + temp*a(i, j)")),
])
def test_not_swappable(why: str, src: str) -> None:
    k = kernel(src)
    loops = [s for s in k.body if isinstance(s, ir.Loop)]
    assert not any(lp.swappable for lp in loops), why
    assert all(lp.var == "j" for lp in (s for s in apply_schedule(k, Schedule()).body if isinstance(s, ir.Loop)))
