"""Kokkos nests with several reductions: one ``parallel_reduce`` over a generated
``<nest>_values`` struct and its custom reducer (Kokkos 3.4 has no variadic
reducers). Text checks, then real builds against Debian's Kokkos (Serial)
called through the ``kt_`` shim with ctypes and checked against numpy."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from targets.base import get_renderer
from tests import kt_hand_kernels as hk
from tests.kt_apart import run_apart
from tests.kt_builds import project_library
from tests.test_targets_cstyle import HAVE_KOKKOS, ptr
from translate import ir
from translate.ir import DType, Intent
from translate.schedule import Schedule

F64, I32 = DType.F64, DType.I32
D, I = ctypes.c_double, ctypes.c_int  # noqa: E741


def stats() -> ir.Kernel:
    """One parallel loop, four reductions of three operations and two types:
    s += x(i); mx = max(mx, x(i)); mn = min(mn, x(i)); npos += (x(i) > 0 ? 1 : 0)."""
    n, i = hk.v("n"), hk.v("i")
    s, mx, mn, npos = hk.v("s", F64), hk.v("mx", F64), hk.v("mn", F64), hk.v("npos")
    xi = hk.ld("x", i)
    body = [
        hk.asg(s, hk.b("add", s, xi)),
        hk.asg(mx, ir.Call("max", (mx, xi), F64)),
        hk.asg(mn, ir.Call("min", (mn, xi), F64)),
        hk.asg(npos, hk.b("add", npos, ir.Select(hk.b("gt", xi, hk.c(0.0)), hk.c(1), hk.c(0), I32))),
    ]
    reds = (ir.Reduction("s", "add", F64), ir.Reduction("mx", "max", F64), ir.Reduction("mn", "min", F64),
            ir.Reduction("npos", "add", I32))
    return ir.Kernel(
        "stats",
        (ir.Scalar("n", I32), ir.Array("x", F64, (n,)), ir.Scalar("s", F64, Intent.INOUT),
         ir.Scalar("mx", F64, Intent.INOUT), ir.Scalar("mn", F64, Intent.INOUT),
         ir.Scalar("npos", I32, Intent.INOUT)),
        (ir.Scalar("i", I32),),
        (hk.loop("i", hk.c(0), n, body, reductions=reds, line=4),), hk.origin(1),
    )


def sums2d() -> ir.Kernel:
    """A 2-D collapsed nest (columns 1..m-1 of a, all rows) with two sums:
    tot += a(i,j); sq += a(i,j)**2."""
    n, m, i, j = hk.v("n"), hk.v("m"), hk.v("i"), hk.v("j")
    tot, sq = hk.v("tot", F64), hk.v("sq", F64)
    aij = hk.ld("a", i, j)
    body = [hk.asg(tot, hk.b("add", tot, aij)), hk.asg(sq, hk.b("add", sq, hk.b("mul", aij, aij)))]
    reds = (ir.Reduction("tot", "add", F64), ir.Reduction("sq", "add", F64))
    inner = hk.loop("i", hk.c(0), n, body, reductions=reds, line=6)
    return ir.Kernel(
        "sums2d",
        (ir.Scalar("n", I32), ir.Scalar("m", I32), ir.Array("a", F64, (n, m)),
         ir.Scalar("tot", F64, Intent.INOUT), ir.Scalar("sq", F64, Intent.INOUT)),
        (ir.Scalar("i", I32), ir.Scalar("j", I32)),
        (hk.loop("j", hk.c(1), m, [inner], reductions=reds, line=5),), hk.origin(3),
    )


KERNELS = (stats, sums2d)
LEVELS = (0, 1)  # as analysed; outermost loop parallel only (still one nest with all reductions)


# --------------------------------------------------------------- text checks


def test_multireduce_text() -> None:
    src = get_renderer("kokkos").render(stats()).source
    assert "struct stats_loop1_values {" in src and "struct stats_loop1_reducer {" in src
    assert "    double v0;  // s (add)" in src and "    int v3;  // npos (add)" in src
    assert "using reducer = stats_loop1_reducer;" in src and "using value_type = stats_loop1_values;" in src
    assert "void join(value_type& dest, const value_type& src) const {" in src
    assert "#if KOKKOS_VERSION < 30700" in src  # volatile join for Kokkos 3 only
    assert "if (src.v1 > dest.v1) dest.v1 = src.v1;" in src and "if (src.v2 < dest.v2) dest.v2 = src.v2;" in src
    assert "val.v1 = Kokkos::reduction_identity<double>::max();" in src
    assert "val.v3 = Kokkos::reduction_identity<int>::sum();" in src
    assert "KOKKOS_LAMBDA(const int i, stats_loop1_values& kt_acc)" in src
    assert "double& mx = kt_acc.v1;" in src and "int& npos = kt_acc.v3;" in src
    assert "stats_loop1_reducer(kt_part));" in src
    assert "s = s + kt_part.v0;" in src and "mx = kt_max(mx, kt_part.v1);" in src
    assert "npos = npos + kt_part.v3;" in src
    assert src.count("Kokkos::parallel_reduce") == 1 and "Experimental" not in src
    two = get_renderer("kokkos").render(sums2d()).source
    assert "MDRangePolicy<Kokkos::Rank<2" in two and "sums2d_loop1_reducer(kt_part)" in two
    # one reduction keeps the built-in reducer
    dot = get_renderer("kokkos").render(hk.ddot()).source
    assert "Kokkos::Sum<double>(dtemp_part)" in dot and "_reducer" not in dot


# ------------------------------------------------------------- numeric cases


@pytest.fixture(scope="module")
def libs(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int], Path]:
    if not HAVE_KOKKOS:
        pytest.skip("Kokkos headers or g++ not found")
    tmp = tmp_path_factory.mktemp("kokkos_multireduce")
    out = {}
    for level in LEVELS:  # one project per schedule level: the kernels' names repeat across levels
        renderer = get_renderer("kokkos", Schedule(level=level))
        lib = project_library("kokkos", [renderer.render(make()) for make in KERNELS], tmp / f"L{level}")
        out.update({(make().name, level): lib for make in KERNELS})
    return out


def case_stats(lib: ctypes.CDLL) -> None:
    f = lib.kt_stats
    f.argtypes = [I, ctypes.c_void_p, ctypes.POINTER(D), ctypes.POINTER(D), ctypes.POINTER(D), ctypes.POINTER(I)]
    rng = np.random.default_rng(11)
    for n in (1, 7, 1000, 100_003):
        x = rng.normal(size=n)
        s, mx, mn, npos = D(0.0), D(-np.inf), D(np.inf), I(0)
        f(n, ptr(x), ctypes.byref(s), ctypes.byref(mx), ctypes.byref(mn), ctypes.byref(npos))
        assert s.value == pytest.approx(float(x.sum()), rel=1e-12, abs=1e-12)
        assert mx.value == x.max() and mn.value == x.min()
        assert npos.value == int((x > 0).sum())
    # each result combines with the value it had before the loop
    x = rng.uniform(-1.0, 1.0, size=500)
    s, mx, mn, npos = D(2.5), D(10.0), D(-0.25), I(40)
    f(x.size, ptr(x), ctypes.byref(s), ctypes.byref(mx), ctypes.byref(mn), ctypes.byref(npos))
    assert s.value == pytest.approx(2.5 + float(x.sum()), rel=1e-12)
    assert mx.value == 10.0 and mn.value == min(-0.25, x.min())
    assert npos.value == 40 + int((x > 0).sum())
    # an empty loop leaves them alone
    f(0, ptr(x), ctypes.byref(s), ctypes.byref(mx), ctypes.byref(mn), ctypes.byref(npos))
    assert mx.value == 10.0 and npos.value == 40 + int((x > 0).sum())


def case_sums2d(lib: ctypes.CDLL) -> None:
    f = lib.kt_sums2d
    f.argtypes = [I, I, ctypes.c_void_p, ctypes.POINTER(D), ctypes.POINTER(D)]
    rng = np.random.default_rng(12)
    for n, m in ((1, 2), (37, 23), (300, 211)):
        a = np.asfortranarray(rng.normal(size=(n, m)))
        tot, sq = D(1.0), D(-3.0)
        f(n, m, ptr(a), ctypes.byref(tot), ctypes.byref(sq))
        inner = a[:, 1:]
        assert tot.value == pytest.approx(1.0 + float(inner.sum()), rel=1e-12, abs=1e-12)
        assert sq.value == pytest.approx(-3.0 + float((inner * inner).sum()), rel=1e-12, abs=1e-12)


CASES: dict[str, Callable[[ctypes.CDLL], None]] = {"stats": case_stats, "sums2d": case_sums2d}


@pytest.mark.slow
@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("name", list(CASES))
def test_kokkos_multireduce_numbers(libs: dict[tuple[str, int], Path], name: str, level: int) -> None:
    run_apart(run_case, name, str(libs[(name, level)]))


def run_case(name: str, lib: str) -> None:
    CASES[name](ctypes.CDLL(lib))
