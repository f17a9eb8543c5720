"""The first index of a maximum or minimum (IDAMAX) as one parallel reduction of a (value,
iteration) pair (translate.argreduce): which scans become one, and the translations against
gfortran (Kokkos) and against the scan run in order (CUDA on a GPU, Triton compiled there or
interpreted here) on ties, NaNs, a NaN start, nothing exceeding the start, the largest finite
values, signed zeros and a loop counting down."""

from __future__ import annotations

import math
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from targets.base import get_renderer
from targets.cstyle import CStyleRenderer
from tests import kt_hand_kernels as hk
from tests.kt_dataset_runs import NEEDS_REFERENCE_AND_KOKKOS, on_target, reference_and_kokkos, same
from translate import argreduce, ir
from translate.analysis import analyze
from translate.schedule import Schedule

# a first max of |x| (IDAMAX, the assignments in its order), a first min counting down,
# both returning the index and the value
SCANS = """      SUBROUTINE SCANS(N, DX, IMAX, DMAX, IMIN, DMIN)
      INTEGER N, IMAX, IMIN
      DOUBLE PRECISION DX(N), DMAX, DMIN
      INTEGER I
      IMAX = 1
      DMAX = DABS(DX(1))
      DO 10 I = 2, N
         IF (DABS(DX(I)).GT.DMAX) THEN
            IMAX = I
            DMAX = DABS(DX(I))
         END IF
   10 CONTINUE
      IMIN = N
      DMIN = DX(N)
      DO 20 I = N - 1, 1, -1
         IF (DMIN .GT. DX(I)) THEN
            DMIN = DX(I)
            IMIN = I
         END IF
   20 CONTINUE
      END
"""


def _scans_in_order(x: Sequence[float]) -> dict[str, float]:
    n = len(x)
    imax, dmax = 1, abs(x[0])
    for i in range(2, n + 1):
        if abs(x[i - 1]) > dmax:
            imax, dmax = i, abs(x[i - 1])
    imin, dmin = n, x[n - 1]
    for i in range(n - 1, 0, -1):
        if dmin > x[i - 1]:
            dmin, imin = x[i - 1], i
    return {"imax": imax, "dmax": dmax, "imin": imin, "dmin": dmin}


def scans_ir() -> ir.Kernel:
    """SCANS as the Fortran frontend lowers it, built by hand: the GPU machine has no fparser."""
    F64, OUT = ir.DType.F64, ir.Intent.OUT
    n, i = hk.v("n"), hk.v("i")
    imax, dmax, imin, dmin = hk.v("imax"), hk.v("dmax", F64), hk.v("imin"), hk.v("dmin", F64)
    x = hk.ld("dx", i)
    ax = ir.Call("abs", (x,), F64)
    first_max = hk.loop("i", hk.c(1), n, [ir.If(hk.b("gt", ax, dmax), (hk.asg(imax, hk.b("add", i, hk.c(1))),
                                                                       hk.asg(dmax, ax)))], kind=hk.S, line=7)
    first_min = hk.loop("i", hk.b("sub", n, hk.c(2)), hk.c(-1), [
        ir.If(hk.b("gt", dmin, x), (hk.asg(dmin, x), hk.asg(imin, hk.b("add", i, hk.c(1)))))], kind=hk.S, step=-1,
        line=15)
    body = (hk.asg(imax, hk.c(1)), hk.asg(dmax, ir.Call("abs", (hk.ld("dx", hk.c(0)),), F64)), first_max,
            hk.asg(imin, n), hk.asg(dmin, hk.ld("dx", hk.b("sub", n, hk.c(1)))), first_min)
    params = (ir.Scalar("n", ir.DType.I32), ir.Array("dx", F64, (n,), lower=(hk.c(1),)),
              ir.Scalar("imax", ir.DType.I32, OUT), ir.Scalar("dmax", F64, OUT),
              ir.Scalar("imin", ir.DType.I32, OUT), ir.Scalar("dmin", F64, OUT))
    return ir.Kernel("scans", params, (), body, ir.Origin("scans.f", 1))


def _kernel() -> ir.Kernel:
    return analyze(scans_ir())


def test_the_hand_built_kernel_is_the_frontends() -> None:
    parse_source = pytest.importorskip("parsers.fortran").parse_source
    assert parse_source(SCANS, "scans.f", fixed_form=True).kernels[0] == scans_ir()


def _loops(k: ir.Kernel) -> list[ir.Loop]:
    return [n for s in k.body for n in ir.walk(s) if isinstance(n, ir.Loop)]


def test_first_max_and_min_scans_become_pair_reductions() -> None:
    k = _kernel()
    loops = _loops(k)
    assert [lp.kind for lp in loops] == [ir.LoopKind.PARALLEL] * 2
    # counting down, the first among equal values is the largest i
    assert [[(r.var, r.op, r.loc, r.loc_first) for r in lp.reductions] for lp in loops] == [
        [("dmax_best", "maxloc", "i_first", "min")], [("dmin_best", "minloc", "i_first2", "max")]]
    assert "the first maximum of dmax and its first iteration (for imax) are one reduction" in loops[0].reason
    assert "the first minimum of dmin" in loops[1].reason
    assert {d.name for d in k.locals} >= {"dmax_best", "i_first", "dmin_best", "i_first2"}


@pytest.mark.parametrize("body", [
    "if (abs(x(i)) >= m) then\n      m = abs(x(i))\n      k = i\n    end if",  # ties take the last: not split
    "if (2 * x(i) > m) then\n      m = 2 * x(i)\n      k = i\n    end if",  # arithmetic in the value
    "if (x(i) > m) then\n      m = x(i)\n      k = k + i\n    end if",  # the index reads itself
    "if (x(i) > m) then\n      m = x(i)\n      k = i\n      x(i) = 0\n    end if",  # a third statement
])
def test_other_scans_stay_serial(body: str) -> None:
    parse_source = pytest.importorskip("parsers.fortran").parse_source
    src = (f"subroutine f(n, x, m, k)\n  integer n, i, k\n  real(8) x(n), m\n  do i = 1, n\n"
           f"    {body}\n  end do\nend\n")
    (lp,) = _loops(analyze(parse_source(src, "f.f90", fixed_form=False).kernels[0]))
    assert lp.kind is ir.LoopKind.SERIAL


def test_a_scan_inside_a_parallel_loop_stays_whole() -> None:
    """A first max per column: the column loop is parallel with each column's scan whole (split,
    every thread would read its column twice); inside a serial loop the scan is still a pair reduction."""
    parse_source = pytest.importorskip("parsers.fortran").parse_source
    scan = ("      do i = 2, m\n        if (abs(a(i, j)) > dmax) then\n          k = i\n"
            "          dmax = abs(a(i, j))\n        end if\n      end do\n")
    per_column = ("subroutine f(m, n, a, imax)\n  integer m, n, i, j, k, imax(n)\n  real(8) a(m, n), dmax\n"
                  "  do j = 1, n\n      dmax = abs(a(1, j))\n      k = 1\n" + scan + "      imax(j) = k\n"
                  "  end do\nend\n")
    k = analyze(parse_source(per_column, "f.f90", fixed_form=False).kernels[0])
    assert [lp.kind for lp in _loops(k)] == [ir.LoopKind.PARALLEL, ir.LoopKind.SERIAL]
    assert not any(d.name.endswith(("_best", "_first")) for d in k.locals)  # no temporaries left behind
    repeated = ("subroutine f(m, n, a, k, dmax)\n  integer m, n, i, j, k\n  real(8) a(m, n), dmax\n"
                "  do j = 1, n\n      dmax = abs(a(1, j)) + dmax\n      k = 1\n" + scan + "  end do\nend\n")
    k = analyze(parse_source(repeated, "f.f90", fixed_form=False).kernels[0])
    assert [lp.kind for lp in _loops(k)] == [ir.LoopKind.SERIAL, ir.LoopKind.PARALLEL]


NAN = math.nan
DATASETS = {
    "ties": [1.0, -7.0, 3.0, 7.0, -7.0, 0.5, 2.0, 0.5],  # |x| max 7 at 2, 4, 5; min -7 at 2 and 5
    "nan inside": [1.0, -3.0, NAN, 7.5, -9.0, 2.0, NAN, -9.0],
    "nan first": [NAN, 4.0, -8.0, 1.0, 8.0],
    "nan last": [0.5, -2.0, 6.0, -6.0, NAN],
    "nothing exceeds the start": [9.0, 1.0, -2.0, 9.0, 3.0, 10.0],  # min: DX(N) = 10 is not the smallest
    "all equal": [2.0] * 6,
    # the min starts at +inf: a start of DBL_MAX (Kokkos 3.4's Min identity) would miss DX(2)
    "largest finite": [1.7976931348623157e308, 1.7976931348623157e308, math.inf],
    "signed zeros": [-0.0, 0.0, 5.0, 9.0],  # dmin: 0.0 at 2 (counting down, -0.0 at 1 is not smaller)
    "one element": [-4.0],  # both loops run no iteration: the starts stand
    # dmin 0.0 in three lanes of one program (counting down, 700 comes first): the value of the chosen
    # lane, not the lanes' minimum, whose sign may be either
    "zeros in lanes": [-0.0 if i in (40, 300) else 0.0 if i == 700 else 5.0 for i in range(1000)],
    "negative zero in lanes": [0.0 if i in (40, 300) else -0.0 if i == 700 else 5.0 for i in range(1000)],
    # equal extremes one Triton tile (256) apart fall in one lane, which must keep its first
    "ties in one lane": [9.0 if i in (100, 356, 612) else -9.0 if i in (5000, 5256) else 1.0 for i in range(9000)],
}


def same_value(a: float, b: float) -> bool:
    """Equal with the same sign (0.0 and -0.0 differ), or both NaN."""
    return same(a, b) and math.copysign(1.0, a) == math.copysign(1.0, b)


@pytest.mark.slow
@NEEDS_REFERENCE_AND_KOKKOS
def test_kokkos_matches_the_reference(tmp_path: Path) -> None:
    for what, values, want, got in reference_and_kokkos(tmp_path, "scans.f", SCANS, _kernel(), DATASETS):
        in_order = _scans_in_order(values)
        for out in ("imax", "dmax", "imin", "dmin"):
            w, g = want[out], got[out]
            assert same_value(w, g) and same_value(in_order[out], w), (what, out, w, g, in_order[out])


@pytest.mark.parametrize("target", [pytest.param("cuda", marks=pytest.mark.gpu), "triton"])
def test_cuda_and_triton_match_the_scan_in_order(tmp_path: Path, target: str) -> None:
    """Also a million elements, where ties and NaNs fall in many blocks."""
    rng = np.random.default_rng(9)
    many = np.round(rng.standard_normal(1 << 20), 2)  # rounded: the extremes repeat
    many[3::777] = NAN
    for what, values, got in on_target(tmp_path, target, _kernel(), {**DATASETS, "a million": list(many)}):
        for out, w in _scans_in_order(values).items():
            assert same_value(w, got[out]), (target, what, out, w, got[out])


def test_triton_serial_fallback_copies_the_pending_start_in(tmp_path: Path) -> None:
    """At the serial schedule (level 2) each scan is a serial segment that copies its start in
    (``DMAX_BEST = DMAX``, a copy of a result still on the device): the start must be fetched
    before the launch, not passed as the host's stale value."""
    for what, values, got in on_target(tmp_path, "triton", _kernel(), DATASETS, Schedule(level=2)):
        for out, w in _scans_in_order(values).items():
            assert same_value(w, got[out]), (what, out, w, got[out])


@pytest.mark.slow
@NEEDS_REFERENCE_AND_KOKKOS
@pytest.mark.parametrize("decl", ["INTEGER", "REAL"])
def test_integer_and_single_precision_scans(tmp_path: Path, decl: str) -> None:
    """The pair's value in the array's own type (an int32 or fp32 max, an int32 iteration):
    Kokkos against gfortran, Triton (interpreted here) against the scan in order."""
    parse_source = pytest.importorskip("parsers.fortran").parse_source
    src = (f"      SUBROUTINE ISCAN(N, DX, IMAX, DMAX)\n      INTEGER N, IMAX, I\n      {decl} DX(N), DMAX\n"
           "      IMAX = 1\n      DMAX = DX(1)\n      DO 10 I = 2, N\n         IF (DX(I) .GT. DMAX) THEN\n"
           "            IMAX = I\n            DMAX = DX(I)\n         END IF\n   10 CONTINUE\n      END\n")
    kernel = analyze(parse_source(src, "iscan.f", fixed_form=True).kernels[0])
    (lp,) = _loops(kernel)
    assert lp.reductions[0].op == "maxloc" and lp.reductions[0].dtype.name == ("I32" if decl == "INTEGER" else "F32")
    data = {"ties": [1, -7, 3, 7, -7, 5, 7, 0], "first is the max": [9, 1, 9, 2], "descending": [5, 4, 3, 2, 1]}

    def in_order(x: Sequence[float]) -> dict[str, float]:
        imax, dmax = 1, x[0]
        for i in range(2, len(x) + 1):
            if x[i - 1] > dmax:
                imax, dmax = i, x[i - 1]
        return {"imax": imax, "dmax": dmax}

    (tmp_path / "k").mkdir()
    (tmp_path / "t").mkdir()
    for what, values, want, got in reference_and_kokkos(tmp_path / "k", "iscan.f", src, kernel, data):
        assert want == got == in_order(values), (what, want, got)
    for what, values, got in on_target(tmp_path / "t", "triton", kernel, data):
        assert got == in_order(values), (what, got)


def test_triton_joins_the_pair_with_its_start_on_the_device() -> None:
    """DMAX = |DX(1)| comes from a serial kernel launched after the pair kernel, and the pair's
    start is a copy of its tensor; the programs' pairs are joined with that start on the device, and
    the IF that then picks IMAX becomes selects there: the launcher never waits for the GPU. The
    branch that launches no pair kernel puts the start iteration in its tensor."""
    src = get_renderer("triton").render(_kernel()).source
    launcher = src[src.index("def scans("):]
    launch = launcher.index("scans_loop1[grid](")
    serial = launcher.index("scans_serial1[(1,)](", launch)
    join = launcher.index("kt_take = (dmax_best_top > dmax_best_out) | ((dmax_best_top == dmax_best_out) "
                          "& (i_first_top < i_first))")
    assert "dmax_best_out = dmax_out" in launcher[:launch]  # the copy of the start copies its tensor
    assert launch < serial < join
    assert ".item()" not in launcher and ".tolist()" not in launcher
    assert "imax_out = torch.where(kt_mask3, (i_first_out + 1), imax_out)" in launcher
    other = launcher.index("else:", join)  # the branch that launches no kernel
    assert launcher.index("i_first_out = torch.full((), i_first, dtype=torch.int32, device=dev)") > other


def test_a_lane_updates_its_pair_without_the_tie_test() -> None:
    """A Triton lane visits its iterations in order, so its update is ``T > M`` alone
    (``argreduce.in_order``); Kokkos and CUDA keep the full rule, and so does any other IF."""
    k = _kernel()
    loop = _loops(k)[0]
    (pair,) = loop.reductions
    update = loop.body[1]
    assert isinstance(update, ir.If) and update.cond.op == "or"
    plain = argreduce.in_order(loop.body, [pair])
    assert plain[0] == loop.body[0] and plain[1] == replace(update, cond=update.cond.lhs)
    assert update.cond.lhs.op == "gt" and update.cond.lhs.rhs == ir.Var(pair.var, pair.dtype)
    assert argreduce.in_order(loop.body, []) == loop.body  # not this loop's pair: unchanged
    other = replace(update, cond=replace(update.cond, rhs=replace(update.cond.rhs, op="or")))
    assert argreduce.in_order((other,), [pair]) == (other,)
    triton = get_renderer("triton").render(k).source
    assert "cond1 = (dmax_at_i > dmax_best)\n" in triton and "num_warps=8" in triton
    assert "(dmin_at_i == dmin_best)" not in triton and "(dmax_at_i == dmax_best)" not in triton
    for target in ("kokkos", "cuda"):
        assert "(dmax_at_i == dmax_best && i < i_first)" in get_renderer(target).render(k).source, target


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")
@pytest.mark.parametrize("op", ["maxloc", "minloc"])
@pytest.mark.parametrize("first", ["min", "max"])
def test_the_c_pair_join_compiled(tmp_path: Path, op: str, first: str) -> None:
    """The condition Kokkos's pair reducer joins with and its launcher combines with
    (``CStyleRenderer.pair_better``), compiled and run on every order of a few pairs: a better
    value wins, an equal one only with a first iteration; NaN never enters a pair."""
    r = ir.Reduction("m", op, ir.DType.F64, loc="k", loc_first=first)
    expr = CStyleRenderer.pair_better(r, "v", "l", "w", "n")
    pairs = [(1.0, 4), (2.0, 7), (2.0, 3), (-1.0, 0), (2.0, 5)]
    src = ("#include <cstdio>\nstatic bool better(double v, int l, double w, int n) { return " + expr + "; }\n"
           "int main() {\n  const double vs[] = {" + ", ".join(str(v) for v, _ in pairs) + "};\n"
           "  const int ls[] = {" + ", ".join(str(k) for _, k in pairs) + "};\n"
           f"  for (int a = 0; a < {len(pairs)}; ++a)\n    for (int b = 0; b < {len(pairs)}; ++b)\n"
           "      std::printf(\"%d\", better(vs[a], ls[a], vs[b], ls[b]) ? 1 : 0);\n}\n")
    (tmp_path / "join.cpp").write_text(src)
    subprocess.run(["g++", "-O1", str(tmp_path / "join.cpp"), "-o", str(tmp_path / "join")], check=True)
    got = subprocess.run([str(tmp_path / "join")], capture_output=True, text=True, check=True).stdout

    def better(a: tuple[float, int], b: tuple[float, int]) -> bool:
        above = a[0] > b[0] if op == "maxloc" else a[0] < b[0]
        earlier = a[1] < b[1] if first == "min" else a[1] > b[1]
        return above or (a[0] == b[0] and earlier)

    assert got == "".join("1" if better(a, b) else "0" for a in pairs for b in pairs)
