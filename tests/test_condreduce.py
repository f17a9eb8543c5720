"""Max and min reductions written as ``IF (E .GT. V) V = E``: the analysis reads them as
reductions only where the loop is then parallel, and the Kokkos translation returns the
Fortran reference's result on data with NaNs (a NaN element skipped, a NaN starting value kept)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from tests import kt_hand_kernels as hk
from tests.kt_dataset_runs import NEEDS_REFERENCE_AND_KOKKOS, on_target, reference_and_kokkos, same
from translate import ir
from translate.analysis import analyze

CONDMAX = """      SUBROUTINE CONDMAX(N, DX, RMAX, RMIN)
      INTEGER N
      DOUBLE PRECISION DX(N), RMAX, RMIN
      INTEGER I
      RMAX = DABS(DX(1))
      RMIN = DX(1)
      DO 10 I = 2, N
         IF (DABS(DX(I)).GT.RMAX) RMAX = DABS(DX(I))
         IF (RMIN .GE. DX(I)) RMIN = DX(I)
   10 CONTINUE
      END
"""


def condmax_ir() -> ir.Kernel:
    """CONDMAX as the Fortran frontend lowers it, built by hand: the GPU machine has no fparser."""
    F64 = ir.DType.F64
    n, i, rmax, rmin = hk.v("n"), hk.v("i"), hk.v("rmax", F64), hk.v("rmin", F64)
    x = hk.ld("dx", i)
    ax = ir.Call("abs", (x,), F64)
    lp = hk.loop("i", hk.c(1), n, [ir.If(hk.b("gt", ax, rmax), (hk.asg(rmax, ax),)),
                                   ir.If(hk.b("ge", rmin, x), (hk.asg(rmin, x),))], kind=hk.S, line=7)
    body = (hk.asg(rmax, ir.Call("abs", (hk.ld("dx", hk.c(0)),), F64)), hk.asg(rmin, hk.ld("dx", hk.c(0))), lp)
    params = (ir.Scalar("n", ir.DType.I32), ir.Array("dx", F64, (n,), lower=(hk.c(1),)),
              ir.Scalar("rmax", F64, ir.Intent.OUT), ir.Scalar("rmin", F64, ir.Intent.OUT))
    return ir.Kernel("condmax", params, (), body, ir.Origin("condmax.f", 1))


def test_the_hand_built_kernel_is_the_frontends() -> None:
    parse_source = pytest.importorskip("parsers.fortran").parse_source
    assert parse_source(CONDMAX, "condmax.f", fixed_form=True).kernels[0] == condmax_ir()


def _analysed(text: str, name: str = "s.f") -> ir.Kernel:
    parse_source = pytest.importorskip("parsers.fortran").parse_source
    return analyze(parse_source(text, name, fixed_form=False).kernels[0])


def _loops(k: ir.Kernel) -> list[ir.Loop]:
    return [n for s in k.body for n in ir.walk(s) if isinstance(n, ir.Loop)]


def test_if_updates_are_max_and_min_reductions() -> None:
    (lp,) = _loops(analyze(condmax_ir()))
    assert lp.kind is ir.LoopKind.PARALLEL
    assert {(r.var, r.op) for r in lp.reductions} == {("rmax", "max"), ("rmin", "min")}
    assert "the IF updating rmax is read as rmax = MAX(rmax, ...)" in lp.reason
    assert "the IF updating rmin is read as rmin = MIN(rmin, ...)" in lp.reason
    assert not any(isinstance(s, ir.If) for s in lp.body)


@pytest.mark.parametrize("cond", ["x(i) > m", "m < x(i)", "x(i) >= m"])
def test_each_form_of_the_max_test(cond: str) -> None:
    src = (f"subroutine f(n, x, m)\n  integer n, i\n  real(8) x(n), m\n  do i = 1, n\n"
           f"    if ({cond}) m = x(i)\n  end do\nend\n")
    (lp,) = _loops(_analysed(src))
    assert lp.kind is ir.LoopKind.PARALLEL and [(r.var, r.op) for r in lp.reductions] == [("m", "max")]


@pytest.mark.parametrize("body", [
    "if (x(i) > m) then\n      m = x(i)\n      k = k + 1\n    end if",  # counts the updates too
    "if (x(i) > m) m = x(i) + m",  # the new value reads the old
    "if (x(i) > m) m = x(i + 1)",  # stores another value than it tested
    "if (x(i) > m) m = x(i)\n    x(i) = m",  # the running value used in the loop
])
def test_other_conditional_updates_stay_serial_and_as_written(body: str) -> None:
    src = (f"subroutine f(n, x, m, k)\n  integer n, i, k\n  real(8) x(n + 1), m\n  do i = 1, n\n"
           f"    {body}\n  end do\nend\n")
    (lp,) = _loops(_analysed(src))
    assert lp.kind is ir.LoopKind.SERIAL
    assert isinstance(lp.body[0], ir.If) and "read as" not in lp.reason


@pytest.mark.slow
@NEEDS_REFERENCE_AND_KOKKOS
def test_kokkos_matches_the_reference_on_nans(tmp_path: Path) -> None:
    nan = math.nan
    datasets = {
        "nan inside": [1.0, -3.0, nan, 7.5, -9.0, 2.0],
        "nan first": [nan, 4.0, -8.0, 1.0],
        "nan last": [0.5, -2.0, 6.0, nan],
        "no nan": [3.0, -1.0, 4.0, -1.5, 9.0, -2.6],
    }
    for what, _, want, got in reference_and_kokkos(tmp_path, "condmax.f", CONDMAX, analyze(condmax_ir()), datasets):
        for out in ("rmax", "rmin"):
            assert same(want[out], got[out]), (what, out, want[out], got[out])
        if what == "nan first":
            assert math.isnan(got["rmax"])
        if what == "nan inside":
            assert got["rmax"] == 9.0 and got["rmin"] == -9.0


def _if_semantics(values: Sequence[float]) -> dict[str, float]:
    """CONDMAX run in order, as the source says."""
    rmax, rmin = abs(values[0]), values[0]
    for x in values[1:]:
        if abs(x) > rmax:
            rmax = abs(x)
        if rmin >= x:
            rmin = x
    return {"rmax": rmax, "rmin": rmin}


@pytest.mark.parametrize("target", [pytest.param("cuda", marks=pytest.mark.gpu), "triton"])
def test_cuda_and_triton_match_the_source_on_nans(tmp_path: Path, target: str) -> None:
    """The same data through CUDA and Triton (no Fortran on a GPU machine: the source's result
    is computed in order here), with enough elements that every block holds a NaN; Triton runs
    compiled where there is a GPU and in its interpreter where not."""
    rng = np.random.default_rng(5)
    many = rng.standard_normal(1 << 20)
    many[1::1000] = math.nan  # not the first: that is its own case
    datasets = {"nan inside": [1.0, -3.0, math.nan, 7.5, -9.0, 2.0], "nan first": [math.nan, *many[1:]],
                "nans everywhere": list(many)}
    for what, values, got in on_target(tmp_path, target, analyze(condmax_ir()), datasets):
        for out, w in _if_semantics(values).items():
            assert same(w, got[out]), (target, what, out, w, got[out])
