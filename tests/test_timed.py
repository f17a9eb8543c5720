"""Timing that the timed code cannot touch (validation.timed, optimize_steps.time_untrusted):
the clock is the parent's, so a candidate that patches its own clock or median, or prints the
worker's replies itself, changes nothing; inputs are fresh per call and every timed call's
results are checked, so a result cache fails."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from graph.optimize_steps import TimingMismatch, time_untrusted
from tests.validation_kernels import DAXPY
from validation import timed, toolchains
from validation.inputs import make_case

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (toolchains.gfortran().available and toolchains.f2py().available),
                       reason="needs gfortran and numpy.f2py (meson, ninja)"),
]
GOOD = Path(__file__).parent / "validation_data" / "cand" / "good"
needs_kokkos = pytest.mark.skipif(toolchains.find_kokkos() is None, reason="needs Kokkos")


def _cases(n: int = 3000, count: int = 4) -> list:
    return [make_case(DAXPY, {"n": n}, {"incx": 1, "incy": 1}, {}, 100 + k) for k in range(count)]


# a Triton launcher that sleeps 20 ms per call and tries every way to look faster from inside
DECEIVER = (GOOD / "triton" / "daxpy_triton.py").read_text().replace(
    "def daxpy(n, da, dx, incx, dy, incy):",
    '''import statistics
import sys
import time

statistics.median = lambda xs: 0.0
time.perf_counter = lambda: 0.0


def daxpy(n, da, dx, incx, dy, incy):
    print("done 0\\\\ndone 1\\\\ndone 2\\\\ndone 3\\\\nsaved")
    sys.stdout.write("pong\\\\n")
    sys.stdout.flush()
    time.sleep(0.02)''')


def test_the_clock_is_the_parents(ref, cache, tmp_path: Path) -> None:  # noqa: ANN001
    (tmp_path / "triton").mkdir()
    (tmp_path / "triton" / "daxpy_triton.py").write_text(DECEIVER)
    job = {"mode": "triton", "lib": str(tmp_path / "triton" / "daxpy_triton.py"), "entry": "daxpy", "device": "cpu"}
    got = timed.time_calls(job, DAXPY, _cases(), cache / "t", sandboxed=True)
    assert len(got.seconds) == 3 and got.median_s >= 0.02, got


@needs_kokkos
def test_honest_code_is_timed_and_checked(ref, cache, tmp_path: Path) -> None:  # noqa: ANN001
    shutil.copytree(GOOD / "kokkos", tmp_path / "kokkos")
    seconds = time_untrusted("kokkos", tmp_path / "kokkos", DAXPY, _cases(), ref, cache, cache / "t")
    assert 0 < seconds < 1


# computes the first call right, then hands back the first call's result (a result cache)
CACHING = """#include <cstring>
namespace { double kept[100000]; int calls = 0; }
extern "C" void kt_daxpy(int n, double da, double* dx, int incx, double* dy, int incy) {
  if (calls++ > 0) { std::memcpy(dy, kept, sizeof(double) * n); return; }
  for (int i = 0; i < n; ++i) dy[i] += da * dx[i];
  std::memcpy(kept, dy, sizeof(double) * n);
}
"""


@needs_kokkos
def test_a_result_cache_fails_on_fresh_inputs(ref, cache, tmp_path: Path) -> None:  # noqa: ANN001
    (tmp_path / "kokkos").mkdir()
    (tmp_path / "kokkos" / "daxpy_kokkos.cpp").write_text(CACHING)
    with pytest.raises(TimingMismatch, match="timed call 1 on fresh inputs gave other results than the reference"):
        time_untrusted("kokkos", tmp_path / "kokkos", DAXPY, _cases(), ref, cache, cache / "t")
