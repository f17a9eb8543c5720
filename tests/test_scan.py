"""Linear recurrences (translate.scan) and their parallel scans (Triton: targets.triton_scan; CUDA:
cub::DeviceScan, targets.cuda_scan): which loops are recognised, and the values against numpy (a
prefix sum) and the loop run in order (affine maps) across many programs, more programs than the
Triton carry kernel scans at a time, and loops counting down. The CUDA cases compile here and run
where there is a GPU."""

from __future__ import annotations

import ctypes
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from targets.base import get_renderer
from targets.triton_scan import CARRY_BLOCK, SCAN_TILES
from tests.gpu import cuda_library, has_gpu
from tests.kt_apart import call_apart
from tests.kt_builds import kokkos_library
from tests.test_targets_cstyle import HAVE_KOKKOS
from tests.test_targets_triton import F64, b, c, kern, ld, load_module, loop, rng, sc, t, v
from translate import ir, scan
from translate.ir import DType
from translate.partition import partition
from translate.schedule import Schedule, apply_schedule


def recurrence(value: ir.Expr, start: int = 1, stop: ir.Expr | None = None, step: int = 1,
               extra: tuple[ir.Decl, ...] = ()) -> ir.Kernel:
    n = v("n")
    body = (loop("i", start, n if stop is None else stop, (ir.Assign(ld("x", v("i")), value),), step=step,
                 par=False),)
    params = (sc("n"), ir.Array("y", F64, (n,)), ir.Array("x", F64, (n,), intent=ir.Intent.INOUT), *extra)
    return kern("rec", params, body)


TARGETS = ["triton", pytest.param("cuda", marks=pytest.mark.gpu)]
SOURCE = {"triton": "rec_scan1_carries", "cuda": "cub::DeviceScan::InclusiveScan"}  # the scan's mark in the source


@pytest.fixture(scope="module")
def builds() -> dict[str, Path]:
    """The CUDA builds of this module's tests by their source (several sizes share one)."""
    return {}


def run(target: str, k: ir.Kernel, tmp_path: Path, builds: dict[str, Path], *args: np.ndarray | float | int
        ) -> list[np.ndarray]:
    """``k`` rendered for ``target`` and called with ``args`` (its parameters in order; Triton in
    blocks of 16 lanes, many programs); the arrays after the call, in order."""
    if target == "triton":
        mod, src = load_module(k, tmp_path)
        tensors = [t(a) if isinstance(a, np.ndarray) else a for a in args]
        getattr(mod, k.name)(*tensors, block=16)
        arrays = [a.cpu().numpy() for a in tensors if not isinstance(a, (int, float))]
    else:
        rendered = get_renderer("cuda").render(k)
        src = rendered.source
        if src not in builds:  # built here too (nvcc needs no GPU), then skipped without one
            if shutil.which("nvcc") is None:
                pytest.skip("nvcc not found")
            builds[src] = cuda_library(rendered, tmp_path)
        if not has_gpu():
            pytest.skip("no CUDA GPU")
        f = getattr(ctypes.CDLL(str(builds[src])), f"kt_{k.name}")
        f.argtypes = [ctypes.c_void_p if isinstance(a, np.ndarray) else ctypes.c_int if isinstance(a, int)
                      else ctypes.c_double for a in args]
        arrays = [np.array(a, copy=True) for a in args if isinstance(a, np.ndarray)]
        it = iter(arrays)
        f(*[next(it).ctypes.data if isinstance(a, np.ndarray) else a for a in args])
    assert SOURCE[target] in src
    return arrays


def marked(k: ir.Kernel) -> bool:
    return any(isinstance(s, ir.Loop) and s.scan for s in apply_schedule(k, Schedule()).body)


def test_which_loops_are_sum_recurrences() -> None:
    i = v("i")
    prev, here, y = ld("x", b("sub", i, c(1))), ld("x", i), ld("y", i)
    assert marked(recurrence(b("add", prev, y)))  # X(I) = X(I-1) + Y(I)
    assert marked(recurrence(b("add", y, prev)))  # X(I) = Y(I) + X(I-1)
    assert marked(recurrence(b("sub", prev, b("mul", c(2.0), y))))  # X(I) = X(I-1) - 2*Y(I)
    # counting down: X(I) = X(I+1) + Y(I)
    assert marked(recurrence(b("add", ld("x", b("add", i, c(1))), y), start=5, stop=c(-1), step=-1))
    assert marked(recurrence(b("add", b("mul", y, prev), y)))  # X(I) = Y(I)*X(I-1) + Y(I): affine
    assert marked(recurrence(b("sub", y, prev)))  # Y(I) - X(I-1): a = -1
    assert marked(recurrence(b("mul", prev, y)))  # a product: b = 0
    assert not marked(recurrence(b("add", ld("x", b("sub", i, c(2))), y)))  # two back
    assert not marked(recurrence(b("add", prev, here)))  # the term reads the array
    assert not marked(recurrence(b("mul", prev, prev)))  # the previous element twice: not affine
    assert marked(recurrence(b("div", y, prev, F64)))  # Y(I) / X(I-1): a ratio of affine terms
    assert marked(recurrence(b("div", b("add", prev, y), c(3.0), F64)))  # (X(I-1) + Y(I)) / 3: affine
    assert not marked(recurrence(b("div", y, b("mul", prev, prev), F64)))  # the previous element squared
    # counting up, reading the next element: not the previous iteration's
    assert not marked(recurrence(b("add", ld("x", b("add", i, c(1))), y)))
    # at schedule level 2 everything runs in order
    assert not any(isinstance(s, ir.Loop) and s.scan for s in apply_schedule(recurrence(b("add", prev, y)),
                                                                              Schedule(level=2)).body)


def test_a_recurrence_is_a_segment_of_its_own() -> None:
    """X(1) = Y(1) before the loop stays a serial kernel; the loop is ``rec_scan1``, and the targets
    without a prefix sum render it in order."""
    i = v("i")
    k = recurrence(b("add", ld("x", b("sub", i, c(1))), ld("y", i)))
    k = kern("rec", k.params, (ir.Assign(ld("x", c(0)), ld("y", c(0))), *k.body))
    names = [getattr(s, "name", "") for s in partition(apply_schedule(k, Schedule()))]
    assert names == ["rec_serial1", "rec_scan1"]
    cuda = get_renderer("cuda").render(k).source  # a prefix sum with CUB, its terms from rec_scan1_terms
    assert "struct rec_scan1_terms" in cuda and "cuda::std::plus<double>{}" in cuda and "for (" not in cuda
    assert "scan1_totals" in get_renderer("triton").render(k).source
    kokkos = get_renderer("kokkos").render(k).source  # a prefix sum: Kokkos::parallel_scan
    assert 'Kokkos::parallel_scan("rec_scan1"' in kokkos and "x(i) = x(0) + kt_partial;" in kokkos
    affine = recurrence(b("add", b("mul", ld("y", i), ld("x", b("sub", i, c(1)))), ld("y", i)))
    assert "parallel_scan" not in get_renderer("kokkos").render(affine).source  # affine maps: in order
    assert "KtAffineThen<double>{}" in get_renderer("cuda").render(affine).source
    assert "rec_scan1" not in get_renderer("cuda", Schedule(level=2)).render(affine).source  # in order
    n = v("n")
    h = DType.F16
    step = ir.Assign(ld("x", i, dt=h), b("add", ld("x", b("sub", i, c(1)), dt=h), ld("y", i, dt=h)))
    half = kern("rec", (sc("n"), ir.Array("y", h, (n,)), ir.Array("x", h, (n,), intent=ir.Intent.INOUT)),
                (loop("i", 1, n, (step,), par=False),))
    assert marked(half)
    assert "cub::" not in get_renderer("cuda").render(half).source  # half precision: CUDA runs it in order


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", [1, 2, 200, SCAN_TILES * 16 * (CARRY_BLOCK + 3) + 5])
def test_the_prefix_sum_matches_cumsum(tmp_path: Path, builds: dict[str, Path], target: str, n: int) -> None:
    """X(1) given, X(I) = X(I-1) + 0.5*Y(I) + Z: numpy's cumsum on every size, the last one with more
    programs than the Triton carry kernel takes at once."""
    i = v("i")
    value = b("add", ld("x", b("sub", i, c(1))), b("add", b("mul", c(0.5), ld("y", i)), v("z", F64)))
    k = recurrence(value, extra=(sc("z", F64),))
    y = rng(7).standard_normal(n)
    x = np.zeros(n)
    x[0] = 1.25
    _, got = run(target, k, tmp_path, builds, n, y, x, 0.75)
    want = np.concatenate([[1.25], 1.25 + np.cumsum(0.5 * y[1:] + 0.75)])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("target", TARGETS)
def test_the_prefix_sum_counting_down(tmp_path: Path, builds: dict[str, Path], target: str) -> None:
    """DO I = N-1, 1, -1: X(I) = X(I+1) + Y(I) from X(N) given."""
    i, n = v("i"), v("n")
    k = recurrence(b("add", ld("x", b("add", i, c(1))), ld("y", i)), start=0, stop=c(-1), step=-1)
    k = kern("rec", k.params, (ir.Loop("i", b("sub", n, c(2)), c(-1), c(-1), k.body[0].body, line=10),))
    m = 3000
    y = rng(8).standard_normal(m)
    x = np.zeros(m)
    x[-1] = -2.0
    _, got = run(target, k, tmp_path, builds, m, y, x)
    want = np.concatenate([(-2.0 + np.cumsum(y[:-1][::-1]))[::-1], [-2.0]])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def affine_loop(n: int, x0: float, a: np.ndarray, d: np.ndarray, down: bool) -> np.ndarray:
    """X(I) = D(I) - A(I)*X(I -/+ 1) run in order from X(1) (or X(N) counting down)."""
    x = np.zeros(n)
    order = range(n - 2, -1, -1) if down else range(1, n)
    x[n - 1 if down else 0] = x0
    for k in order:
        x[k] = d[k] - a[k] * x[k + 1 if down else k - 1]
    return x


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(("n", "down"), [(2, False), (300, False), (SCAN_TILES * 16 * (CARRY_BLOCK + 3) + 5, False),
                                         (3000, True)])
def test_an_affine_recurrence_matches_the_loop(tmp_path: Path, builds: dict[str, Path], target: str, n: int,
                                               down: bool) -> None:
    """X(I) = D(I) - A(I)*X(I-1) (tridag's back substitution counting down: X(I+1)), |A| < 1: the loop
    run in order, on both directions and with more programs than the carry kernel takes at once."""
    i, nn = v("i"), v("n")
    prev = ld("x", b("add", i, c(1)) if down else b("sub", i, c(1)))
    value = b("sub", ld("d", i), b("mul", ld("a", i), prev))
    body = (ir.Loop("i", b("sub", nn, c(2)) if down else c(1), c(-1) if down else nn, c(-1 if down else 1),
                    (ir.Assign(ld("x", i), value),), line=10),)
    params = (sc("n"), ir.Array("a", F64, (nn,)), ir.Array("d", F64, (nn,)),
              ir.Array("x", F64, (nn,), intent=ir.Intent.INOUT))
    g = rng(9)
    a, d = g.uniform(-0.9, 0.9, n), g.standard_normal(n)
    x = np.zeros(n)
    x[n - 1 if down else 0] = 0.5
    *_, got = run(target, kern("rec", params, body), tmp_path, builds, n, a, d, x)
    np.testing.assert_allclose(got, affine_loop(n, 0.5, a, d, down), rtol=1e-10, atol=1e-12)


@pytest.mark.skipif(not HAVE_KOKKOS, reason="Kokkos headers or g++ not found")
def test_kokkos_parallel_scan_matches_cumsum(tmp_path: Path) -> None:
    """X(1) = Y(1), then X(I) = X(I-1) + Y(I) compiled with Kokkos (parallel_scan, Serial here)."""
    i = v("i")
    k = recurrence(b("add", ld("x", b("sub", i, c(1))), ld("y", i)))
    k = kern("rec", k.params, (ir.Assign(ld("x", c(0)), ld("y", c(0))), *k.body))
    rendered = get_renderer("kokkos").render(k)
    assert "Kokkos::parallel_scan" in rendered.source
    y = rng(10).standard_normal(5000)
    x = np.zeros_like(y)
    call_apart(kokkos_library(rendered, tmp_path), "kt_rec", len(y), y, x)
    np.testing.assert_allclose(x, np.cumsum(y), rtol=1e-12, atol=1e-12)


def forward_sweep(tail: tuple[ir.Stmt, ...] = (), dp_value: ir.Expr | None = None) -> ir.Kernel:
    """The Thomas algorithm's forward sweep from CP(1), DP(1) given: DENOM = B(I) - A(I)*CP(I-1),
    CP(I) = C(I)/DENOM, DP(I) = (D(I) - A(I)*DP(I-1))/DENOM; ``tail`` after the loop."""
    i, n = v("i"), v("n")
    prev = b("sub", i, c(1))
    denom = v("denom", F64)
    body = (ir.Assign(denom, b("sub", ld("b", i), b("mul", ld("a", i), ld("cp", prev)))),
            ir.Assign(ld("cp", i), b("div", ld("c", i), denom, F64)),
            ir.Assign(ld("dp", i), dp_value or b("div", b("sub", ld("d", i), b("mul", ld("a", i), ld("dp", prev))),
                                                 denom, F64)))
    params = (sc("n"), *(ir.Array(a, F64, (n,)) for a in "abcd"),
              *(ir.Array(a, F64, (n,), intent=ir.Intent.INOUT) for a in ("cp", "dp")), sc("last", F64, ir.Intent.OUT))
    return kern("rec", params, (ir.Loop("i", c(1), n, c(1), body, line=10), *tail),
                locals_=(ir.Scalar("denom", F64),))


def test_a_loop_of_two_recurrences_splits_into_two_scans() -> None:
    """The forward sweep: a ratio scan for CP, then an affine scan for DP (its coefficients divide by
    the inlined DENOM, reading CP's previous element); not split where DENOM is read after the
    loop, where DP reads CP ahead, or where the two read each other."""
    i = v("i")
    names = [getattr(s, "name", "") for s in partition(apply_schedule(forward_sweep(), Schedule()))]
    assert names == ["rec_scan1", "rec_scan2"]
    loops = [s for s in apply_schedule(forward_sweep(), Schedule()).body if isinstance(s, ir.Loop)]
    assert [scan.kind(lp) for lp in loops] == ["ratio", "affine"]
    assert not marked(forward_sweep(tail=(ir.Assign(v("last", F64), v("denom", F64)),)))  # DENOM read after
    ahead = b("sub", ld("d", i), b("mul", ld("cp", b("add", i, c(1))), ld("dp", b("sub", i, c(1)))))
    assert not marked(forward_sweep(dp_value=ahead))  # DP reads CP(I+1), not yet final in the loop
    k = forward_sweep()
    loop = k.body[0]
    assert isinstance(loop, ir.Loop)
    crossed = (loop.body[0], ir.Assign(ld("cp", i), b("div", ld("dp", b("sub", i, c(1))), v("denom", F64), F64)),
               loop.body[2])
    assert not marked(kern("rec", k.params, (replace(loop, body=crossed),), k.locals))  # each reads the other
    single = (replace(loop.body[0], target=ir.Var("denom", DType.F32)), *loop.body[1:])  # REAL DENOM: rounds
    assert not marked(kern("rec", k.params, (replace(loop, body=single),), (ir.Scalar("denom", DType.F32),)))


def sweep_in_order(a: np.ndarray, bb: np.ndarray, cc: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = len(a)
    cp, dp = np.zeros(n), np.zeros(n)
    cp[0], dp[0] = cc[0] / bb[0], d[0] / bb[0]
    for k in range(1, n):
        denom = bb[k] - a[k] * cp[k - 1]
        cp[k], dp[k] = cc[k] / denom, (d[k] - a[k] * dp[k - 1]) / denom
    return cp, dp


# Triton's carries over more programs than it scans at once are the affine test's (the same code for
# every map; three minutes in the interpreter for this one)
@pytest.mark.parametrize(("target", "n"), [("triton", 2), ("triton", 300),
                                           *(pytest.param("cuda", n, marks=pytest.mark.gpu)
                                             for n in (2, 300, SCAN_TILES * 16 * (CARRY_BLOCK + 3) + 5))])
def test_the_forward_sweep_matches_the_loop(tmp_path: Path, builds: dict[str, Path], target: str, n: int) -> None:
    """CP and DP of a diagonally dominant system against the loop in order, on several programs (the
    ratio scan's 2x2 products are scaled, so they neither overflow nor lose the ratio)."""
    g = rng(11)
    a, cc = g.uniform(-1, 1, n), g.uniform(-1, 1, n)
    bb, d = 2.5 + g.uniform(0, 1, n), g.standard_normal(n)
    want_cp, want_dp = sweep_in_order(a, bb, cc, d)
    cp, dp = np.zeros(n), np.zeros(n)
    cp[0], dp[0] = want_cp[0], want_dp[0]
    *_, got_cp, got_dp = run(target, forward_sweep(), tmp_path, builds, n, a, bb, cc, d, cp, dp, 0.0)
    np.testing.assert_allclose(got_cp, want_cp, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got_dp, want_dp, rtol=1e-11, atol=1e-13)
