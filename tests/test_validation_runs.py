"""Validation with real builds: the gfortran/f2py reference, hand-written
candidates through the Kokkos (g++), CUDA (nvcc, compile only without a GPU)
and Triton (interpreter) paths, right and deliberately wrong."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from targets.base import TARGETS
from tests.validation_kernels import ALL, DATA, DAXPY, DDOT, FORTRAN, MATVEC, SCALE, STENCIL, VSQRT
from validation import builds, golden, runners, toolchains
from validation.inputs import is_poison, make_case
from validation.region import ReferenceSpec, RegionValidation, ValidationPlan, other_deltas, validate_region

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (toolchains.gfortran().available and toolchains.f2py().available),
                       reason="needs gfortran and numpy.f2py (meson, ninja)"),
]
CAND = DATA / "cand"
HAS_KOKKOS = toolchains.find_kokkos() is not None and shutil.which("g++") is not None
needs_kokkos = pytest.mark.skipif(not HAS_KOKKOS, reason="needs g++ and Kokkos")
GRID = {"n": 7, "m": 5, "lda": 10, "ldb": 8}


def dirs(variant: str, *targets: str) -> dict[str, Path]:
    return {t: CAND / variant / t for t in targets}


def region(kernel, ref, cache, target_dirs, sizes, values=None, **kw) -> RegionValidation:  # noqa: ANN001
    kw.setdefault("trials", 2)
    generators = kw.pop("generators", None) or {}
    golden_root = kw.pop("golden_root", None)
    plan = ValidationPlan(sizes, values, generators, reference=ReferenceSpec([FORTRAN], ref), **kw)
    return validate_region(kernel, target_dirs, plan, cache_dir=cache, workdir=cache / "work",
                           golden_root=golden_root)


# ---------------------------------------------------------------- reference


def _ref_run(ref, kernel, sizes, values, cache, seed=3):  # noqa: ANN001, ANN202
    case = make_case(kernel, sizes, values, {}, seed)
    r = runners.run_reference(ref, kernel, case, cache / "work")
    assert r.ok, r.reason + r.log
    return case, r.outputs


def test_reference_daxpy_negative_stride(ref, cache) -> None:  # noqa: ANN001
    case, out = _ref_run(ref, DAXPY, {"n": 9}, {"incx": -2}, cache)
    da, dx, dy = case.scalars["da"], case.arrays["dx"], case.arrays["dy"]
    np.testing.assert_allclose(out["dy"], dy + da * dx[::-2], rtol=1e-15)
    assert ref.ok and runners.build_reference([FORTRAN], ALL, cache / "work", cache_dir=cache).cached


def test_reference_function_result_and_2d_lower_bounds(ref, cache) -> None:  # noqa: ANN001
    case, out = _ref_run(ref, DDOT, {"n": 50}, {}, cache)
    assert float(out["result"]) == pytest.approx(float(case.arrays["dx"] @ case.arrays["dy"]), rel=1e-13)
    case, out = _ref_run(ref, STENCIL, GRID, {}, cache)
    a, b = case.arrays["a"], out["b"]
    n, m = GRID["n"], GRID["m"]
    want = 0.25 * (a[0:n, 1:m + 1] + a[2:n + 2, 1:m + 1] + a[1:n + 1, 0:m] + a[1:n + 1, 2:m + 2]) - a[1:n + 1, 1:m + 1]
    np.testing.assert_allclose(b[:n], want, rtol=1e-14)
    assert is_poison(b[n:]).all()  # rows n+1..ldb never written


def test_reference_common_block_and_character_flag(ref, cache) -> None:  # noqa: ANN001
    case, out = _ref_run(ref, SCALE, {"n": 6}, {"alpha": 2.5}, cache)
    np.testing.assert_array_equal(out["x"], 2.5 * case.arrays["x"])
    assert float(out["total"]) == pytest.approx(2.5 * case.arrays["x"].sum(), rel=1e-14)
    for trans in ("N", "t"):
        case, out = _ref_run(ref, MATVEC, {"m": 4, "n": 3, "lda": 6}, {"trans": trans}, cache)
        a, x = case.arrays["a"][:4, :3], case.arrays["x"]
        want = a @ x[:3] if trans == "N" else a.T @ x[:4]
        np.testing.assert_allclose(out["y"][:len(want)], want, rtol=1e-14)
    case, out = _ref_run(ref, MATVEC, {"m": 4, "n": 3, "lda": 6}, {"trans": "X"}, cache)
    assert is_poison(out["y"]).all()  # illegal flag: XERBLA stub, y untouched


# --------------------------------------------------------------- candidates


@needs_kokkos
def test_good_candidates_validate_and_golden_round_trip(ref, cache, tmp_path) -> None:  # noqa: ANN001
    res = region(DAXPY, ref, cache, dirs("good", "kokkos", "triton", "cuda"), {"n": 50}, {"incx": [1, -2]},
                 golden_root=tmp_path / "out" / "golden")
    assert res.reference_ok and len(res.cases) == 10  # (2 trials + sorted inputs + 2 other sizes) x 2 strides
    assert {c["sizes"]["n"] for c in res.cases} == {50, *(50 + d for d in other_deltas(1234))}
    for t in ("kokkos", "triton"):
        tv = res.targets[t]
        assert tv.status == "validated", tv.reason
        assert tv.trials == 10 and tv.max_rel_err < 1e-13 and len(tv.comparisons) == 10
    assert res.targets["cuda"].status == ("validated" if toolchains.has_gpu() else "compiled")
    # golden files: inputs + reference outputs + signature, enough without gfortran
    gdir = tmp_path / "out" / "golden" / "daxpy"
    assert res.golden_dir == gdir and golden.cases(gdir) == [f"case{k}" for k in range(10)]
    meta = json.loads((gdir / "case5.json").read_text())
    assert meta["values"] == {"incx": -2} and meta["seed"] == res.cases[5]["seed"]
    assert [p["shape"] for p in meta["signature"]["params"] if p["kind"] == "array"] == [[99], [50]]
    with np.load(gdir / "case5.npz") as z:
        assert {"s:n", "s:incx", "a:dx", "a:dy", "r:dy"} <= set(z.files)
    comps = golden.validate_against_golden("triton", CAND / "good" / "triton", gdir, cache_dir=cache)
    assert len(comps) == 10 and all(c.ok for c in comps) and max(c.max_rel_err for c in comps) < 1e-13
    bad = golden.validate_against_golden("kokkos", CAND / "offbyone" / "kokkos", gdir, cache_dir=cache)
    assert not any(c.ok for c in bad) and bad[0].reason.startswith("case0: dy(50): candidate")
    # the GPU-machine command, here on CPU: exit 0, then 1 once a target is wrong
    out = tmp_path / "out"
    shutil.copytree(CAND / "good" / "kokkos", out / "kokkos")
    assert golden.main([str(out), "--targets", "kokkos"]) == 0
    shutil.copy(CAND / "offbyone" / "kokkos" / "daxpy_kokkos.cpp", out / "kokkos")
    assert golden.main([str(out), "--targets", "kokkos,cuda"]) == 1


@needs_kokkos
def test_reduction_common_and_flags_validate(ref, cache) -> None:  # noqa: ANN001
    res = region(DDOT, ref, cache, dirs("good", "kokkos", "triton"), {"n": 300}, {"incy": [1, -3]})
    for t in ("kokkos", "triton"):
        assert res.targets[t].status == "validated", res.targets[t].reason
        assert res.targets[t].max_rel_err < 1e-12
    res = region(SCALE, ref, cache, dirs("good", "kokkos"), {"n": 40})
    assert res.status("kokkos") == "validated", res.targets["kokkos"].reason
    assert set(res.targets["kokkos"].comparisons[0].per_output) == {"x", "total"}
    res = region(MATVEC, ref, cache, dirs("good", "kokkos"), {"m": 9, "n": 6, "lda": 11}, {"trans": ["N", "T"]})
    assert res.status("kokkos") == "validated" and res.targets["kokkos"].trials == 10


@needs_kokkos
def test_stencil_good_missed_and_all_zero(ref, cache) -> None:  # noqa: ANN001
    good = region(STENCIL, ref, cache, {"kokkos": CAND / "good" / "kokkos", "triton": CAND / "good" / "triton"}, GRID)
    assert good.status("kokkos") == "validated" and good.status("triton") == "validated", good.targets
    assert good.targets["triton"].max_abs_err < 1e-14
    missed = region(STENCIL, ref, cache, dirs("missed", "kokkos"), GRID)
    tv = missed.targets["kokkos"]
    assert tv.status == "failed"
    assert "b(7, 1) left unwritten (still poisoned) in the candidate" in tv.reason and "trial 1" in tv.reason
    zero = region(STENCIL, ref, cache, dirs("zero", "kokkos"), GRID)
    assert zero.status("kokkos") == "failed" and "'b' is all-zero in the candidate" in zero.targets["kokkos"].reason


@needs_kokkos
def test_off_by_one_and_wrong_stride_sign(ref, cache) -> None:  # noqa: ANN001
    res = region(DAXPY, ref, cache, dirs("offbyone", "kokkos"), {"n": 50})
    tv = res.targets["kokkos"]
    assert tv.status == "failed" and tv.trials == 0
    assert "dy(50): candidate" in tv.reason and "1 of 50 elements beyond" in tv.reason
    res = region(DAXPY, ref, cache, dirs("stride", "triton"), {"n": 50}, {"incx": [1, -2]})
    tv = res.targets["triton"]
    assert tv.status == "failed" and tv.trials == 5  # right for incx=1, wrong from the first incx=-2 trial
    assert "incx=-2" in tv.reason and "dy(1): candidate" in tv.reason


def test_race_in_triton_reduction_fails(ref, cache) -> None:  # noqa: ANN001
    res = region(DDOT, ref, cache, dirs("race", "triton"), {"n": 300})
    tv = res.targets["triton"]
    assert tv.status == "failed"
    assert "ddot (function result): candidate" in tv.reason and "with reductions" in tv.reason


@needs_kokkos
def test_crash_and_hang_fail_only_their_target(ref, cache) -> None:  # noqa: ANN001
    res = region(DAXPY, ref, cache, {"kokkos": CAND / "crash" / "kokkos", "triton": CAND / "good" / "triton"},
                 {"n": 20}, trials=1)
    assert res.status("kokkos") == "failed"
    assert "candidate crashed with signal SIGSEGV" in res.targets["kokkos"].reason
    assert res.status("triton") == "validated"
    # an endless loop is stopped by its CPU-time limit, at the workflow size and again on the retry
    # at smaller sizes; a timeout is inconclusive, never validated
    res = region(DAXPY, ref, cache, dirs("hang", "kokkos"), {"n": 20}, trials=1, timeout=1)
    tv = res.targets["kokkos"]
    assert tv.status == "inconclusive" and tv.trials == 0
    assert tv.reason.startswith("kokkos trial 1 (workflow size, seed 1234, n=20): candidate timed out: "
                                "it used more than its limit of 1 s of CPU time")
    assert "; retried at smaller sizes: kokkos trial 1 (workflow size, retried smaller after a timeout, seed 1234, " \
           "n=10): candidate timed out" in tv.reason


# DAXPY that first burns {burn} seconds of CPU time; {update} is the element update. A kernel may
# not read a clock (validation.symbols), so it burns by counting at {rate} iterations per CPU
# second, measured by CALIBRATE (a program of the test's own, not a candidate)
SLOW_DAXPY = """extern "C" void kt_daxpy(int n, double da, double* dx, int incx, double* dy, int incy) {{
  volatile double sink = 0;
  const long burn = (long)(({burn}) * {rate});
  for (long k = 0; k < burn; ++k) sink = sink + 1;
  if (n <= 0 || da == 0.0) return;
  const long ix0 = incx < 0 ? (long)(-n + 1) * incx : 0, iy0 = incy < 0 ? (long)(-n + 1) * incy : 0;
  for (int i = 0; i < n; ++i) dy[iy0 + (long)i * incy] {update};
}}
"""
CALIBRATE = """#include <cstdio>
#include <ctime>
int main() {
  volatile double sink = 0;
  const long n = 300000000;
  const std::clock_t t0 = std::clock();
  for (long k = 0; k < n; ++k) sink = sink + 1;
  std::printf("%.6g\\n", n / ((double)(std::clock() - t0) / CLOCKS_PER_SEC));
}
"""
# a seed whose second other size is the workflow size + 10: its trials, halved on a retry, stay at
# n <= 15, where the slow kernels below finish in time
SLOW_SEED = next(s for s in range(1, 100_000) if other_deltas(s)[1] == 10)


def _burn_rate(tmp_path: Path) -> float:
    (tmp_path / "calibrate.cpp").write_text(CALIBRATE)
    subprocess.run(["g++", "-O2", str(tmp_path / "calibrate.cpp"), "-o", str(tmp_path / "calibrate")], check=True)
    return float(subprocess.run([str(tmp_path / "calibrate")], capture_output=True, text=True, check=True).stdout)


RIGHT, WRONG = "+= da * dx[ix0 + (long)i * incx]", "+= da"
CUBIC, ABOVE_15 = "2.5e-4 * n * n * n", "n > 15 ? 60.0 : 0.0"  # 2 s at n=20, 0.25 s at n=10; a minute above 15


@needs_kokkos
def test_a_timed_out_trial_is_retried_at_smaller_sizes(ref, cache, tmp_path) -> None:  # noqa: ANN001
    rate = _burn_rate(tmp_path)

    def cand(name: str, burn: str, update: str) -> dict[str, Path]:
        (tmp_path / name).mkdir()
        (tmp_path / name / "daxpy_kokkos.cpp").write_text(SLOW_DAXPY.format(burn=burn, update=update, rate=rate))
        return {"kokkos": tmp_path / name}

    slow = cand("slow", CUBIC, RIGHT)
    # right but slow: n=20 runs out of its 1 s; retried at n=10 and the other sizes halved (n <= 15), it
    # matches, taking a time that explains the timeout at n=20
    res = region(DAXPY, ref, cache, slow, {"n": 20}, trials=1, timeout=1, seed=SLOW_SEED)
    tv = res.targets["kokkos"]
    assert tv.status == "validated" and tv.trials == 4 and len(tv.comparisons) == 4, tv.reason
    assert tv.reason.startswith(f"kokkos trial 1 (workflow size, seed {SLOW_SEED}, n=20): candidate timed out: "
                                "it used more than its limit of 1 s of CPU time")
    assert tv.reason.endswith("; validated on the retry at smaller sizes")
    # a wrong kernel fails on the retry: a timeout never stands in for a match
    res = region(DAXPY, ref, cache, cand("wrong", CUBIC, WRONG), {"n": 20}, trials=1, timeout=1, seed=SLOW_SEED)
    tv = res.targets["kokkos"]
    assert tv.status == "failed" and tv.trials == 0
    assert tv.reason.startswith(f"kokkos trial 1 (workflow size, retried smaller after a timeout, seed {SLOW_SEED}, "
                                "n=10): dy(")
    # a kernel that never finishes above n=15 matches at once when retried smaller: not validated
    res = region(DAXPY, ref, cache, cand("stuck", ABOVE_15, RIGHT), {"n": 20}, trials=1, timeout=1, seed=SLOW_SEED)
    tv = res.targets["kokkos"]
    assert tv.status == "inconclusive", tv.reason
    assert tv.reason.endswith("the size does not explain the timeout (does it never finish above some size?)")
    # n pinned by values: nothing to shrink, so no retry, and still inconclusive
    res = region(DAXPY, ref, cache, slow, {}, {"n": 20}, trials=1, timeout=1, seed=SLOW_SEED)
    tv = res.targets["kokkos"]
    assert tv.status == "inconclusive" and tv.trials == 0
    assert tv.reason.endswith("; no retry at smaller sizes: no size of the trial can shrink")


@needs_kokkos
def test_reference_nan_is_inconclusive_until_a_generator_is_given(ref, cache) -> None:  # noqa: ANN001
    res = region(VSQRT, ref, cache, dirs("good", "kokkos"), {"n": 30}, trials=1)
    tv = res.targets["kokkos"]
    assert tv.status == "inconclusive" and "the reference produced nan" in tv.reason
    assert "inputs: {x: positive}" in tv.reason
    res = region(VSQRT, ref, cache, dirs("good", "kokkos"), {"n": 30}, trials=1, generators={"x": "positive"})
    assert res.status("kokkos") == "validated"


def test_missing_size_and_missing_candidate(ref, cache) -> None:  # noqa: ANN001
    res = region(STENCIL, ref, cache, dirs("good", "kokkos"), {"n": 7, "m": 5, "ldb": 8})
    assert not res.reference_ok and res.status("kokkos") == "failed"
    assert "no size given for 'lda' (kernel stencil, tests/validation_data/kernels.f:41" in res.reason
    res = region(SCALE, ref, cache, dirs("good", "triton"), {"n": 4})
    assert res.status("triton") == "unsupported" and "no scale_triton.py" in res.targets["triton"].reason


def test_cuda_compiles_with_nvcc(cache) -> None:  # noqa: ANN001
    if not shutil.which("nvcc"):
        pytest.skip("needs nvcc")
    b = builds.build_candidate("cuda", CAND / "good" / "cuda", DAXPY, cache)
    assert b.ok and b.artifact is not None and b.artifact.stat().st_size > 0, b.reason + b.log


@needs_kokkos
def test_candidates_are_built_with_the_cmakelists_users_get(cache) -> None:  # noqa: ANN001
    """One recipe: the project validation configured and built for a candidate is the target's
    emitted CMakeLists for that source, as ``Renderer.build_files`` writes it for users."""
    b = builds.build_candidate("kokkos", CAND / "good" / "kokkos", DAXPY, cache)
    assert b.ok and b.artifact is not None, b.reason + b.log
    used = (b.artifact.parent / "src" / "CMakeLists.txt").read_text()
    assert used == TARGETS["kokkos"].cmake("daxpy", ["daxpy_kokkos.cpp"])
    assert (b.artifact.parent / "src" / "daxpy_kokkos.cpp").read_text() == \
        (CAND / "good" / "kokkos" / "daxpy_kokkos.cpp").read_text()


def test_build_failure_is_a_result(ref, cache, tmp_path) -> None:  # noqa: ANN001
    (tmp_path / "daxpy_kokkos.cpp").write_text("extern \"C\" void kt_daxpy( { syntax error\n")
    res = region(DAXPY, ref, cache, {"kokkos": tmp_path}, {"n": 5}, trials=1)
    reason = res.targets["kokkos"].reason
    assert res.status("kokkos") == "failed" and "kokkos build failed" in reason
    assert f"{tmp_path / 'daxpy_kokkos.cpp'}:1:" in reason  # the compiler's message names the user's file
    bad = tmp_path / "bad.f"
    bad.write_text("      SUBROUTINE BROKEN(N)\n      INTEGER N\n      N = = 1\n      END\n")
    build = runners.build_reference([bad], [], tmp_path, cache_dir=cache)
    assert not build.ok and "gfortran bad.f failed" in build.reason
